"""Goal-conditioned agents, one module each: its settings, its registry entry, its
networks and its losses, read top to bottom in one file.

Online: DQN (:mod:`~herkit.agents.dqn`), DDPG and TD3 (:mod:`~herkit.agents.ddpg_td3`),
SAC (:mod:`~herkit.agents.sac`). Offline, on a recorded dataset: OGBench's GCBC, GCIVL,
GCIQL, CRL, QRL and HIQL (:mod:`~herkit.agents.gcbc` ... :mod:`~herkit.agents.hiql`) and
GC-TD3+BC (:mod:`~herkit.agents.gctd3bc`), on the shared
:class:`~herkit.agents.offline.OfflineAgent`.

Agents consume a :class:`herkit.Batch` (HER relabelling is the sampler's job) and never see
the buffer. :func:`make_agent` builds one from an algorithm name, its config and the
environment's sizes::

    agent = make_agent("td3", DDPGConfig.td3(), obs_dim, goal_dim, env.action_space, (-1, 0))
    action = agent.act(obs, goal, deterministic=False)
    agent.update_normalizer(obs, goal)
    metrics = agent.update(buffer.sample(256))

**Adding an agent** is one module under ``herkit/agents/`` and its line in :data:`AGENTS`
(docs/architecture.md, "Adding an agent"). The module begins with its settings and its
:func:`~herkit.agents.registry.register` call, which import no torch, and imports torch
after them. Importing this package reads that part of every module of :data:`AGENTS`, so
that ``herkit train --help`` knows every agent without torch; the rest of a module runs
when a name it defines there is first used (its agent class, when a run builds it).
"""

from __future__ import annotations
import __future__

import ast
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from herkit.agents.base import Agent, BoxAgent, GoalAgent
    from herkit.agents.making import make_agent
    from herkit.agents.normalizer import Normalizer
    from herkit.agents.offline import OfflineAgent

__all__ = [
    "AGENTS",
    "Agent",
    "BoxAgent",
    "GoalAgent",
    "Normalizer",
    "OfflineAgent",
    "make_agent",
]

AGENTS = (
    "herkit.agents.dqn",
    "herkit.agents.ddpg_td3",
    "herkit.agents.sac",
    "herkit.agents.gcbc",
    "herkit.agents.gcivl",
    "herkit.agents.gciql",
    "herkit.agents.crl",
    "herkit.agents.qrl",
    "herkit.agents.hiql",
    "herkit.agents.gctd3bc",
)
"""The modules whose agents ``herkit train --algo`` knows, one line each, in the order of
``--algo``'s choices. Each registers its agents when this package is imported."""


def _is_torch_import(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] == "torch" for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] == (
        "torch"
    )


def read_settings(name: str) -> ModuleType:
    """Run the part of agent module ``name`` before its first top-level ``import torch`` (or
    ``from torch ...``): its settings and its registry entry. The module is in
    ``sys.modules`` from then on, and runs the rest of its code the first time a name it
    does not yet hold is asked of it. A module imported already is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.origin is None:
        raise ModuleNotFoundError(f"agent module {name!r} (herkit.agents.AGENTS) not found")
    source = spec.loader.get_source(name)  # type: ignore[attr-defined]
    tree = ast.parse(source, spec.origin)
    cut = next(
        (i for i, statement in enumerate(tree.body) if _is_torch_import(statement)),
        len(tree.body),
    )
    flags = 0
    for statement in tree.body[:cut]:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for alias in statement.names:
                flags |= getattr(__future__, alias.name).compiler_flag
    head = compile(ast.Module(tree.body[:cut], []), spec.origin, "exec")
    rest = compile(ast.Module(tree.body[cut:], []), spec.origin, "exec", flags, dont_inherit=True)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    package, _, short = name.rpartition(".")
    if package in sys.modules:
        setattr(sys.modules[package], short, module)
    try:
        exec(head, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise

    def rest_of_module(attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        del module.__dict__["__getattr__"]
        try:
            exec(rest, module.__dict__)
        except BaseException:
            module.__dict__["__getattr__"] = rest_of_module  # e.g. torch missing: say so again
            raise
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__dict__["__getattr__"] = rest_of_module
    return module


for _module in AGENTS:
    read_settings(_module)


def __getattr__(name: str) -> Any:
    """The package's names that need torch (:func:`make_agent`, the base classes), imported
    on first use."""
    from herkit.agents.base import Agent, BoxAgent, GoalAgent
    from herkit.agents.making import make_agent
    from herkit.agents.normalizer import Normalizer
    from herkit.agents.offline import OfflineAgent

    found: dict[str, Any] = {
        "Agent": Agent,
        "BoxAgent": BoxAgent,
        "GoalAgent": GoalAgent,
        "Normalizer": Normalizer,
        "OfflineAgent": OfflineAgent,
        "make_agent": make_agent,
    }
    if name not in found:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found[name]
