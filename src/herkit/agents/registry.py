"""The agents' registry: one :class:`AgentEntry` per algorithm, written beside the agent.

An entry says everything herkit needs to know of an agent before it builds one: its name
(``--algo NAME``, its flags ``--NAME.FIELD``, its block in config.json), its settings class
and default settings, whether it learns online or from a dataset (``offline``), the goal
mixes of an offline agent's batches (its value goals, none for an agent without a value
function, and its actor goals; OGBench's by default) and the buffer settings its settings
decide (``buffer``: HIQL's subgoals), its settings and goal mixes per env family or
dataset (``presets``: OGBench's ``impls/hyperparameters.sh`` for OGBench's agents, each
value once and its lines cited) and its one-line help. The agent class itself is named as
``"module:Class"`` and imported only when a run builds the agent, so that the command line
reads the entries without importing torch.

Everything that lists agents is built from here: :data:`~herkit.agents.settings.Algo`,
:data:`~herkit.agents.settings.ALGOS`, :data:`~herkit.agents.settings.OFFLINE_ALGOS`,
:func:`~herkit.agents.settings.config_class`, ``herkit train --algo``'s choices and help,
:class:`~herkit.config.train.TrainConfig`'s agent settings, the docs' lists and the tests'
parametrisations. Adding an agent is one file that calls :func:`register` and one line that
imports it (docs/architecture.md, "Adding an agent").

The built-in agents are the modules of :data:`herkit.agents.AGENTS`, each registering
itself where its settings are written; importing :mod:`herkit.agents` (any module of it,
this one included) registers them all without torch. This module imports no agent.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from herkit.buffer.rules import OGBENCH_ACTOR_GOALS, OGBENCH_VALUE_GOALS

__all__ = [
    "GOAL_MIXES",
    "AgentEntry",
    "agent_entries",
    "agent_entry",
    "algo_names",
    "register",
    "unregistered",
]

Settings = Any
"""An agent's settings: an :class:`~herkit.agents.settings.OffPolicyConfig` (named here as
``Any``: the settings classes' module registers its agents from this one)."""

Mix = tuple[float, float, float]
"""Goal-mix weights: the current state's goal, a future one of its episode, a random one."""

GOAL_MIXES = ("value_goals", "actor_goals")
"""The names an entry's :attr:`AgentEntry.presets` may give besides its settings' fields:
an offline agent's goal mixes on those envs (the run's ``her.value_goals`` and
``her.actor_goals``, ``--value-goals`` and ``--actor-goals``)."""


@dataclass(frozen=True)
class AgentEntry:
    """One agent, as ``herkit train --algo NAME`` knows it."""

    name: str
    """``--algo NAME``; the flags ``--NAME.FIELD``, the block ``NAME`` of config.json. A
    lowercase Python identifier."""
    config: type[Settings]
    """The settings class (a frozen dataclass, :class:`~herkit.agents.settings.OffPolicyConfig`
    or a subclass); entries may share one (ddpg and td3)."""
    agent: str | type
    """The agent class (a :class:`~herkit.agents.base.GoalAgent`), or ``"module:Class"``
    (imported when an agent is built: the config layer imports no agent module). A Box
    agent is built as ``Class(config, observation_dim, goal_dim, low, high, reward_range,
    device=, seed=)``, a discrete one (``discrete``) as :class:`~herkit.agents.dqn.DQNAgent`."""
    help: str
    """One line: what the agent is (``--algo``'s help and the title of its flags)."""
    offline: bool = False
    """Trained on a recorded dataset (``--dataset``, ``--offline-steps``); its batches carry
    a value goal and an actor goal per sample."""
    discrete: bool = False
    """Acts in a ``Discrete`` action space (else a 1-D ``Box``)."""
    default: Callable[[], Settings] | None = None
    """The default settings; None: ``config()``. (td3: ``DDPGConfig.td3``, DDPG's class with
    TD3's defaults.)"""
    value_goals: Mix | None = OGBENCH_VALUE_GOALS
    """An offline agent's value goals where ``--value-goals`` is not given (OGBench's by
    default); None: the buffer draws none (an agent without a value function, GCBC)."""
    actor_goals: Mix = OGBENCH_ACTOR_GOALS
    """An offline agent's actor goals where ``--actor-goals`` is not given."""
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Settings per env family or dataset: an env-id prefix (as the presets',
    :mod:`herkit.config.presets`), where ``*`` stands for any characters, -> the values that
    differ from the defaults there: fields of :attr:`config` and the goal mixes of
    :data:`GOAL_MIXES`. Every matching prefix counts, a longer one (more characters besides
    ``*``) over a shorter, so that each value is held once: GCIQL's
    ``{"pointmaze-": {"alpha": 0.003}, "pointmaze-giant-": {"gamma": 0.995},
    "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)}}``."""
    buffer: Callable[[Settings], Mapping[str, Any]] | None = None
    """An offline agent's buffer settings (:class:`~herkit.buffer.settings.HerSettings`
    fields, not flags) that its settings decide, e.g. HIQL's ``subgoal_steps``; None: none."""
    check: Callable[[Settings], None] | None = None
    """Raises ValueError where settings of :attr:`config`'s class do not suit this agent
    (td3: without ``twin_q``)."""
    retired: tuple[str, ...] = ()
    """Settings that older run directories' config.json hold for this agent and it has
    no more: dropped when they are read."""

    def default_config(self) -> Settings:
        """The agent's default settings."""
        return self.config() if self.default is None else self.default()

    def preset_values(self, env_id: str) -> dict[str, Any]:
        """The :attr:`presets` values for ``env_id`` (or a ``module:Id``'s id): those of every
        prefix it matches, a longer prefix's over a shorter's."""
        name = env_id.split(":")[-1]
        matches = [key for key in self.presets if fnmatch.fnmatchcase(name, key + "*")]
        values: dict[str, Any] = {}
        for key in sorted(matches, key=lambda key: len(key.replace("*", ""))):
            values |= self.presets[key]
        return values

    def preset_config(self, env_id: str) -> Settings:
        """The agent's settings for ``env_id``: its defaults with its :attr:`presets`'
        settings there (:meth:`preset_values`, goal mixes aside)."""
        values = self.preset_values(env_id)
        changes = {key: value for key, value in values.items() if key not in GOAL_MIXES}
        config = self.default_config()
        return dataclasses.replace(config, **changes) if changes else config

    def preset_goals(self, env_id: str) -> dict[str, Mix]:
        """The goal mixes (:data:`GOAL_MIXES`) that the agent's :attr:`presets` give for
        ``env_id``: ``{"actor_goals": (0.0, 0.5, 0.5)}`` on a stitch dataset, {} mostly."""
        values = self.preset_values(env_id)
        return {key: values[key] for key in GOAL_MIXES if key in values}

    def checked(self, config: Any) -> Settings:
        """``config`` if it is of this agent's settings class and suits it, else ValueError."""
        if not isinstance(config, self.config):
            raise ValueError(
                f"algo={self.name!r} needs a {self.config.__name__}, got {type(config).__name__}"
            )
        if self.check is not None:
            self.check(config)
        return config

    def read(self, values: Mapping[str, Any]) -> Settings:
        """The settings written as JSON (a config.json block): lists as tuples, the
        :attr:`retired` settings dropped."""
        fields: dict[str, Any] = {
            key: tuple(value) if isinstance(value, list) else value
            for key, value in values.items()
            if key not in self.retired
        }
        return self.checked(self.config(**fields))

    def agent_class(self) -> type[Any]:
        """The agent class: ``"module:Class"`` read from the module that registered the
        entry (which runs the rest of an agent module, torch included, the first time)."""
        if not isinstance(self.agent, str):
            return self.agent
        module, _, name = self.agent.partition(":")
        if module not in sys.modules:
            raise ValueError(
                f"agent {self.name!r}: its class {self.agent!r} is in a module not imported; "
                "name the module that registers the entry"
            )
        agent: type[Any] = getattr(sys.modules[module], name)
        return agent


_ENTRIES: dict[str, AgentEntry] = {}
"""The registered agents by name, in the order they were registered."""


def register(entry: AgentEntry) -> AgentEntry:
    """Add ``entry`` to the agents ``herkit train --algo`` knows; returns it. ValueError for
    a name that is no lowercase identifier or that another entry holds."""
    name = entry.name
    if not (isinstance(name, str) and name.isidentifier() and name == name.lower()):
        raise ValueError(f"an agent's name must be a lowercase identifier, got {name!r}")
    held = _ENTRIES.get(name)
    if held is not None and held != entry:
        raise ValueError(f"an agent named {name!r} is registered already ({held.agent})")
    if not isinstance(entry.help, str) or "\n" in entry.help.strip():
        raise ValueError(f"agent {name!r}: help must be one line, got {entry.help!r}")
    known = {item.name for item in dataclasses.fields(entry.config)}
    for key, values in entry.presets.items():
        unknown = sorted(set(values) - known - set(GOAL_MIXES))
        if unknown:
            raise ValueError(
                f"agent {name!r}: its presets for {key!r} name {', '.join(unknown)}, which are "
                f"neither {entry.config.__name__} fields nor goal mixes ({', '.join(GOAL_MIXES)})"
            )
        if not entry.offline and set(values) & set(GOAL_MIXES):
            raise ValueError(f"agent {name!r}: goal mixes in its presets need offline=True")
    _ENTRIES[name] = entry
    return entry


def agent_entry(name: str) -> AgentEntry:
    """The entry of the agent ``name``; ValueError naming the registered agents, and how
    to register one, for a name none holds."""
    if name not in _ENTRIES:
        raise ValueError(unregistered(name))
    return _ENTRIES[name]


HOW_TO_REGISTER = (
    "an agent is one module under herkit/agents/ that calls "
    "herkit.agents.registry.register(AgentEntry(...)), and its line in herkit/agents/__init__.py's "
    "AGENTS (docs/architecture.md, 'Adding an agent')"
)
"""How an agent is registered, in the words of an unknown name's error."""


def unregistered(name: object, hint: str = "") -> str:
    """The one-line error of an agent name that no entry holds: the names that are, and
    how to register one (``hint``: a near name, said after the name)."""
    return (
        f"algo must be a registered agent ({', '.join(_ENTRIES)}), got {name!r}{hint}; "
        f"{HOW_TO_REGISTER}"
    )


def agent_entries() -> tuple[AgentEntry, ...]:
    """Every registered agent's entry, in the order of registration."""
    return tuple(_ENTRIES.values())


def algo_names(offline: bool | None = None) -> tuple[str, ...]:
    """The registered agents' names (``offline``: only the offline or the online ones)."""
    return tuple(
        entry.name for entry in _ENTRIES.values() if offline is None or entry.offline == offline
    )
