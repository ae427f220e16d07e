"""OGBench's names for herkit's settings: what ``herkit train`` does with an OGBench user's
``--agent.KEY=VALUE`` (the keys of the ``get_config()`` of OGBench's six agents,
``impls/agents/{gcbc,gcivl,gciql,crl,qrl,hiql}.py`` at commit 1d41409).

Each key is read for the run's agent (:data:`NAMES`, one :class:`OGBenchName` per key and
group of agents): as herkit's setting where one means the same (``alpha``: ``--gcivl.alpha``),
converted where the meaning differs (``tau``: ``polyak = 1 - tau``; the goal-mix
probabilities ``value_p_*`` and ``actor_p_*``: the triples ``--value-goals`` and
``--actor-goals``), left out where herkit already does what the value says
(``const_std=True``) or the agent leaves it unused, and otherwise refused in one line that
says what herkit has instead, or that it has no equivalent (``encoder``, ``p_aug``). A key
that is no OGBench name but a field of the run's agent's settings is that setting
(``--agent.hidden``: ``--gcivl.hidden``).

:func:`ogbench_settings` reads the keys given into settings by path (``gcivl.alpha``,
``her.value_goals``: the paths of :func:`herkit.config.resolve.setting_values`), which
:mod:`herkit.flags.train` turns into flags; :func:`ogbench_table` is the table of
docs/guide-offline.md, made from :data:`NAMES`.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from herkit.agents.registry import agent_entries, agent_entry

__all__ = [
    "NAMES",
    "OGBENCH_AGENTS",
    "OGBENCH_CONFIGS",
    "Kind",
    "OGBenchName",
    "Read",
    "field_kind",
    "key_kind",
    "ogbench_settings",
    "ogbench_table",
    "parse_value",
]

OGBENCH_AGENTS = ("gcbc", "gcivl", "gciql", "crl", "qrl", "hiql")
"""OGBench's agents, by the names herkit registers them under (``--algo``)."""

_SIZES = (512, 512, 512)
ONE_HIDDEN = "`--ALGO.hidden` (one size for the actor and the value networks alike)"
"""What herkit has for OGBench's separate actor and value network sizes."""
_GOALS = {  # the dataset keys every agent's get_config() has, with GCIVL's values
    "value_p_curgoal": 0.2,
    "value_p_trajgoal": 0.5,
    "value_p_randomgoal": 0.3,
    "value_geom_sample": True,
    "actor_p_curgoal": 0.0,
    "actor_p_trajgoal": 1.0,
    "actor_p_randomgoal": 0.0,
    "actor_geom_sample": False,
    "gc_negative": True,
    "p_aug": 0.0,
    "frame_stack": None,
}
_COMMON = {"lr": 3e-4, "batch_size": 1024, "actor_hidden_dims": _SIZES}
_ACTOR = {"const_std": True, "discrete": False, "encoder": None}

OGBENCH_CONFIGS: Mapping[str, Mapping[str, Any]] = types.MappingProxyType(
    {
        "gcbc": {
            "agent_name": "gcbc", **_COMMON, "discount": 0.99, **_ACTOR,
            "dataset_class": "GCDataset",
            **_GOALS, "value_p_curgoal": 0.0, "value_p_trajgoal": 1.0, "value_p_randomgoal": 0.0,
            "value_geom_sample": False,
        },
        "gcivl": {
            "agent_name": "gcivl", **_COMMON, "value_hidden_dims": _SIZES, "layer_norm": True,
            "discount": 0.99, "tau": 0.005, "expectile": 0.9, "alpha": 10.0, **_ACTOR,
            "dataset_class": "GCDataset", **_GOALS,
        },
        "gciql": {
            "agent_name": "gciql", **_COMMON, "value_hidden_dims": _SIZES, "layer_norm": True,
            "discount": 0.99, "tau": 0.005, "expectile": 0.9, "actor_loss": "ddpgbc",
            "alpha": 0.3, **_ACTOR, "dataset_class": "GCDataset", **_GOALS,
        },
        "crl": {
            "agent_name": "crl", **_COMMON, "value_hidden_dims": _SIZES, "latent_dim": 512,
            "layer_norm": True, "discount": 0.99, "actor_loss": "ddpgbc", "alpha": 0.1,
            **_ACTOR, "dataset_class": "GCDataset",
            **_GOALS, "value_p_curgoal": 0.0, "value_p_trajgoal": 1.0, "value_p_randomgoal": 0.0,
            "gc_negative": False,
        },
        "qrl": {
            "agent_name": "qrl", **_COMMON, "value_hidden_dims": _SIZES,
            "quasimetric_type": "iqe", "latent_dim": 512, "layer_norm": True, "discount": 0.99,
            "eps": 0.05, "actor_loss": "ddpgbc", "alpha": 0.003, **_ACTOR,
            "dataset_class": "GCDataset",
            **_GOALS, "value_p_curgoal": 0.0, "value_p_trajgoal": 0.0, "value_p_randomgoal": 1.0,
            "gc_negative": False,
        },
        "hiql": {
            "agent_name": "hiql", **_COMMON, "value_hidden_dims": _SIZES, "layer_norm": True,
            "discount": 0.99, "tau": 0.005, "expectile": 0.7, "low_alpha": 3.0,
            "high_alpha": 3.0, "subgoal_steps": 25, "rep_dim": 10, "low_actor_rep_grad": False,
            **_ACTOR, "dataset_class": "HGCDataset", **_GOALS,
        },
    }
)  # fmt: skip
"""The keys and defaults of each OGBench agent's ``get_config()`` (commit 1d41409; an
``ml_collections`` placeholder as None), as ``--agent.KEY`` names them."""

Kind = Literal["bool", "int", "float", "ints", "str"]
"""How a value is written: a bool, a whole number, a number, whole numbers (``(512,
512)``), a word (``None`` for none)."""

_NOTHING: Any = type("Nothing", (), {"__repr__": lambda self: "<nothing>"})()
"""No :attr:`OGBenchName.only` value."""


_REST = "OGBench's random share is the rest, 1 - cur - traj"


def _tau(tau: float) -> float:
    """herkit's ``polyak`` of OGBench's ``tau``."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"must be a number in [0, 1] (polyak = 1 - tau), got {tau!r}")
    return round(1.0 - tau, 12)


def _law(geometric: bool) -> str:
    """herkit's ``--value-future`` of OGBench's ``value_geom_sample``."""
    return "geometric" if geometric else "uniform"


@dataclass(frozen=True)
class OGBenchName:
    """How ``--agent.KEY=VALUE`` is read for some of OGBench's agents (exactly one of
    :attr:`setting`, :attr:`only`, :attr:`unused` and :attr:`instead` says what it does)."""

    key: str
    """OGBench's name (a key of ``get_config()``)."""
    agents: tuple[str, ...]
    """The agents this reading is for (each has the key in its ``get_config()``)."""
    kind: Kind
    """How the value is written."""
    setting: str = ""
    """herkit's setting it sets: ``ALGO.FIELD`` (a field of the run's agent's settings),
    ``her.FIELD`` (a HER setting), ``her.value_goals[I]`` (share I of a goal mix), or
    ``algo``; empty where it sets none."""
    meaning: str = ""
    """How herkit's setting differs from OGBench's, where it does (the docs' table)."""
    convert: Callable[[Any], Any] | None = None
    """OGBench's value to herkit's (None: the same); a ValueError says what was expected."""
    only: Any = _NOTHING
    """The one value herkit has: given so, nothing is set (herkit does so already);
    given otherwise, refused."""
    unused: bool = False
    """Unused by the agent in OGBench and in herkit: any value is left out."""
    instead: str = ""
    """Not read: what to give instead, or why herkit has no equivalent (``ALGO``: the
    run's agent)."""

    def herkit_words(self, algo: str) -> str:
        """What herkit has for this key, for the agent ``algo`` (a column of the docs' table)."""
        if self.setting == "algo":
            return "`--algo`"
        if self.setting.startswith("her.") and "[" in self.setting:
            name, part = self.setting[4:].rstrip("]").split("[")
            share = ("current", "future", "random")[int(part)]
            return f"`--{name.replace('_', '-')}` ({share} share)"
        if self.setting.startswith("her."):
            return f"`--{self.setting[4:].replace('_', '-')}`"
        if self.setting:
            field = self.setting.split(".")[1].replace("_", "-")
            return f"`--{algo}.{field}`"
        if self.only is not _NOTHING:
            return f"none: always `{self.key}={self.only}`"
        if self.unused:
            return "none: unused (as in OGBench)"
        return self.instead.replace("ALGO", algo)


NAMES: tuple[OGBenchName, ...] = (
    OGBenchName("agent_name", OGBENCH_AGENTS, "str", "algo"),
    OGBenchName("lr", OGBENCH_AGENTS, "float", "ALGO.lr"),
    OGBenchName("batch_size", OGBENCH_AGENTS, "int", "ALGO.batch_size"),
    OGBenchName(
        "actor_hidden_dims",
        ("gcbc",),
        "ints",
        "ALGO.hidden",
        meaning="written as sizes: 512 512 512",
    ),
    OGBenchName(
        "actor_hidden_dims",
        ("gcivl", "gciql", "crl", "qrl", "hiql"),
        "ints",
        instead=ONE_HIDDEN,
    ),
    OGBenchName(
        "value_hidden_dims",
        ("gcivl", "gciql", "crl", "qrl", "hiql"),
        "ints",
        instead=ONE_HIDDEN,
    ),
    OGBenchName(
        "layer_norm",
        ("gcivl", "gciql", "crl", "qrl", "hiql"),
        "bool",
        "ALGO.critic_layer_norm",
        meaning="`--ALGO.no-critic-layer-norm` for False",
    ),
    OGBenchName(
        "discount",
        OGBENCH_AGENTS,
        "float",
        "ALGO.gamma",
    ),
    OGBenchName(
        "tau",
        ("gcivl", "gciql", "hiql"),
        "float",
        "ALGO.polyak",
        meaning="polyak = 1 - tau: the share of itself a target keeps per update",
        convert=_tau,
    ),
    OGBenchName("expectile", ("gcivl", "gciql", "hiql"), "float", "ALGO.expectile"),
    OGBenchName("alpha", ("gcivl", "gciql", "crl", "qrl"), "float", "ALGO.alpha"),
    OGBenchName("actor_loss", ("gciql", "crl", "qrl"), "str", only="ddpgbc"),
    OGBenchName("latent_dim", ("crl", "qrl"), "int", "ALGO.latent_dim"),
    OGBenchName("quasimetric_type", ("qrl",), "str", "ALGO.quasimetric"),
    OGBenchName("eps", ("qrl",), "float", "ALGO.eps"),
    OGBenchName("low_alpha", ("hiql",), "float", "ALGO.low_alpha"),
    OGBenchName("high_alpha", ("hiql",), "float", "ALGO.high_alpha"),
    OGBenchName("subgoal_steps", ("hiql",), "int", "ALGO.subgoal_steps"),
    OGBenchName("rep_dim", ("hiql",), "int", "ALGO.rep_dim"),
    OGBenchName("low_actor_rep_grad", ("hiql",), "bool", "ALGO.low_actor_rep_grad"),
    OGBenchName("const_std", OGBENCH_AGENTS, "bool", only=True),
    OGBenchName("discrete", OGBENCH_AGENTS, "bool", only=False),
    OGBenchName(
        "encoder",
        OGBENCH_AGENTS,
        "str",
        only=None,
        meaning="herkit's agents read states: OGBench's visual encoders have no equivalent",
    ),
    OGBenchName("dataset_class", ("gcbc", "gcivl", "gciql", "crl", "qrl"), "str", only="GCDataset"),
    OGBenchName("dataset_class", ("hiql",), "str", only="HGCDataset"),
    *(
        OGBenchName(
            f"value_p_{share}goal",
            ("gcivl", "gciql", "crl", "qrl", "hiql"),
            "float",
            f"her.value_goals[{part}]",
            meaning=f"`--value-goals CUR TRAJ RANDOM` sets the three shares at once; {_REST}",
        )
        for part, share in enumerate(("cur", "traj", "random"))
    ),
    *(
        OGBenchName(f"value_p_{share}goal", ("gcbc",), "float", unused=True)
        for share in ("cur", "traj", "random")
    ),
    OGBenchName(
        "value_geom_sample",
        ("gcivl", "gciql", "crl", "qrl", "hiql"),
        "bool",
        "her.value_future",
        meaning="`geometric` for True, `uniform` for False",
        convert=_law,
    ),
    OGBenchName("value_geom_sample", ("gcbc",), "bool", unused=True),
    *(
        OGBenchName(
            f"actor_p_{share}goal",
            OGBENCH_AGENTS,
            "float",
            f"her.actor_goals[{part}]",
            meaning=f"`--actor-goals CUR TRAJ RANDOM` sets the three shares at once; {_REST}",
        )
        for part, share in enumerate(("cur", "traj", "random"))
    ),
    OGBenchName("actor_geom_sample", ("hiql",), "bool", "ALGO.actor_geom_sample"),
    OGBenchName("actor_geom_sample", ("gcbc", "gcivl", "gciql", "crl", "qrl"), "bool", only=False),
    OGBenchName(
        "gc_negative",
        ("gcivl", "gciql", "hiql"),
        "bool",
        "her.gc_negative",
        meaning="`--no-gc-negative` for False",
    ),
    OGBenchName("gc_negative", ("gcbc", "crl", "qrl"), "bool", unused=True),
    OGBenchName(
        "p_aug",
        OGBENCH_AGENTS,
        "float",
        only=0.0,
        meaning="herkit's agents read states: image augmentation has no equivalent",
    ),
    OGBenchName(
        "frame_stack",
        OGBENCH_AGENTS,
        "int",
        only=None,
        meaning="herkit's agents read states: stacked frames have no equivalent",
    ),
)
"""How herkit reads each key of OGBench's agents' configs, per agent (one entry per key and
group of agents that read it alike)."""


def _name(key: str, algo: str) -> OGBenchName | None:
    """The reading of ``--agent.KEY`` for the agent ``algo`` (None where its OGBench config
    has no such key, or ``algo`` is not one of OGBench's agents)."""
    for name in NAMES:
        if name.key == key and algo in name.agents:
            return name
    return None


def key_kind(key: str) -> Kind | None:
    """How the value of ``--agent.KEY`` is written: an OGBench key's kind, else the kind of
    a registered agent's setting of that name; None where neither has the name."""
    for name in NAMES:
        if name.key == key:
            return name.kind
    for entry in agent_entries():
        fields = {field.name for field in dataclasses.fields(entry.config)}
        if key in fields:
            return field_kind(entry.config, key)
    return None


def field_kind(config: type, key: str) -> Kind:
    """The :data:`Kind` of the field ``key`` of the settings class ``config``."""
    hint = typing.get_type_hints(config)[key]
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    first = next(arg for arg in typing.get_args(hint) if arg is not type(None)) if union else hint
    if first is bool:
        return "bool"
    if first is int:
        return "int"
    if first is float:
        return "float"
    if typing.get_origin(first) is tuple:
        return "ints"
    return "str"


def parse_value(texts: list[str], kind: Kind, flag: str) -> Any:
    """The value written as ``texts`` (one text, several for sizes given one by one, none for
    a bool flag given alone), as OGBench's flags write it (``True``, ``0.3``, ``(512,
    512)``, ``None``); a ValueError says what ``flag`` expects."""
    text = " ".join(texts).strip().strip("'\"")
    if kind == "bool":
        words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
        if not texts:
            return True
        if text.lower() not in words:
            raise ValueError(f"{flag} expects True or False, got {text!r}")
        return words[text.lower()]
    if text.lower() == "none" and kind != "ints":
        return None
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{flag} expects a whole number, got {text!r}") from None
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{flag} expects a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{flag} expects a finite number, got {text!r}")
        return value
    if kind == "ints":
        try:
            sizes = ast.literal_eval(text) if text[:1] in "([" else text.split()
            values = tuple(int(size) for size in ([sizes] if isinstance(sizes, int) else sizes))
        except (ValueError, SyntaxError, TypeError):
            values = ()
        if not values:
            raise ValueError(f"{flag} expects whole numbers, such as (512, 512, 512), got {text!r}")
        return values
    return text


@dataclass(frozen=True)
class Read:
    """What ``herkit train`` made of some ``--agent.KEY`` flags."""

    typed: str
    """The flags as typed (``--agent.alpha=0.3``; several for one goal mix)."""
    settings: Mapping[str, Any]
    """The settings they set, by path (``gciql.alpha``, ``her.value_goals``, ``algo``);
    empty where nothing is to set."""
    why: str = ""
    """Where nothing is set, what became of them (``left out (...)``: herkit does so
    already, or the agent leaves it unused; ``as --algo NAME``: the run's agent)."""


def ogbench_settings(
    given: list[tuple[str, str, list[str]]], algo: str, goals: Mapping[str, Any]
) -> list[Read]:
    """What ``--agent.KEY`` flags set for a run of the agent ``algo``: ``given`` holds each
    as typed, its key and its value's texts; ``goals`` are the run's goal mixes without
    them (``value_goals``, ``actor_goals``: the shares a mix given in part keeps). A key
    read neither as OGBench's nor as a setting of the agent raises a ValueError in one line
    that says what herkit has instead, or that it has no equivalent."""
    reads: list[Read] = []
    mixes: dict[str, dict[int, tuple[str, float]]] = {}
    fields = {field.name for field in dataclasses.fields(agent_entry(algo).config)}
    for typed, key, texts in given:
        flag = typed.split("=")[0].split()[0]
        name = _name(key, algo)
        if name is None and key in fields:  # herkit's own name for the agent's setting
            value = parse_value(texts, field_kind(agent_entry(algo).config, key), flag)
            reads.append(Read(typed, {f"{algo}.{key}": value}))
            continue
        if name is None:
            raise ValueError(_unknown(flag, key, algo, fields))
        if name.instead:
            raise ValueError(f"{flag}: herkit's is {name.herkit_words(algo).replace('`', '')}")
        value = parse_value(texts, name.kind, flag)
        if name.setting == "algo":
            if value != algo:
                raise ValueError(f"{flag} names {value}, but the run trains --algo {algo}")
            reads.append(Read(typed, {}, f"as --algo {algo}"))
        elif name.unused:
            reads.append(Read(typed, {}, f"left out (unused by {algo}, as in OGBench)"))
        elif name.only is not _NOTHING:
            if value != name.only:
                why = f"; {name.meaning}" if name.meaning else ""
                raise ValueError(
                    f"{flag}: herkit's {algo} has {key}={name.only} only, not {value!r}{why}"
                )
            reads.append(Read(typed, {}, f"left out (herkit's {algo} has {key}={name.only})"))
        elif "[" in name.setting:
            mix, part = name.setting[4:].rstrip("]").split("[")
            mixes.setdefault(mix, {})[int(part)] = (typed, float(value))
        else:
            if name.convert is not None:
                try:
                    value = name.convert(value)
                except ValueError as error:
                    raise ValueError(f"{flag} {error}") from None
            path = name.setting.replace("ALGO", algo)
            reads.append(Read(typed, {path: value}))
    for mix, shares in mixes.items():
        reads.append(_mix(mix, shares, goals[mix]))
    return reads


def _mix(mix: str, shares: dict[int, tuple[str, float]], base: tuple[float, ...]) -> Read:
    """The goal mix ``mix`` (``value_goals``, ``actor_goals``) that OGBench draws with the
    ``shares`` given (by part: the flag as typed and its value), the others ``base``'s:
    current and future shares as given, random goals for the rest (OGBench reads no
    ``*_p_randomgoal``; one given must be that rest)."""
    prefix = mix.split("_")[0]
    typed = " ".join(text for text, _ in shares.values())
    current = shares[0][1] if 0 in shares else base[0]
    future = shares[1][1] if 1 in shares else base[1]
    rest = round(1.0 - current - future, 12)
    words = f"{prefix}_p_curgoal {current:g} and {prefix}_p_trajgoal {future:g}"
    if min(current, future) < 0 or rest < 0:
        raise ValueError(
            f"{typed}: the shares must be >= 0, {words} at most 1 together (OGBench draws "
            "random goals for the rest)"
        )
    if 2 in shares and not math.isclose(shares[2][1], rest, abs_tol=1e-9):
        raise ValueError(
            f"{typed}: OGBench draws random goals for what {words} leave, {rest:g} here, "
            f"not {shares[2][1]:g}: give {prefix}_p_curgoal and {prefix}_p_trajgoal to match, or "
            f"--{mix.replace('_', '-')} CUR TRAJ RANDOM"
        )
    return Read(typed, {f"her.{mix}": (current, future, rest)})


def _unknown(flag: str, key: str, algo: str, fields: set[str]) -> str:
    """The answer to ``--agent.KEY`` that names no setting of ``algo``: whose OGBench
    setting it is, or the nearest name the agent takes."""
    owners = [agent for agent in OGBENCH_AGENTS if key in OGBENCH_CONFIGS[agent]]
    taken = sorted(fields | {name.key for name in NAMES if algo in name.agents})
    parts = [name for name in taken if key != name and key in name.split("_")]
    near = difflib.get_close_matches(key, taken, n=1, cutoff=0.75)
    close = list(dict.fromkeys([*near, *parts]))[:2]
    hint = f"; did you mean {' or '.join(f'--agent.{name}' for name in close)}?" if close else ""
    if owners and algo in OGBENCH_AGENTS:
        return f"{flag} is not a setting of OGBench's {algo} (it is {_spoken(owners)}'s){hint}"
    if owners:
        own = [name for name in NAMES if name.key == key and name.setting.startswith("ALGO.")]
        field = own[0].setting.split(".")[1] if own else None
        if field in fields:
            assert field is not None
            return f"{flag} is OGBench's name: {algo}'s is --{algo}.{field.replace('_', '-')}"
        return f"{flag} is a setting of OGBench's {_spoken(owners)}; {algo} has none{hint}"
    return f"{flag} is no setting of {algo} (OGBench's names or herkit's){hint}"


def _spoken(names: list[str]) -> str:
    """Names as a sentence lists them: ``a, b and c``."""
    return names[0] if len(names) < 2 else f"{', '.join(names[:-1])} and {names[-1]}"


def ogbench_table() -> str:
    """The table of docs/guide-offline.md: each key of OGBench's agents' configs, the agents
    whose config has it, herkit's flag (``ALGO``: the run's ``--algo``) and how it differs."""
    rows = [
        "| OGBench's `--agent.` | its agents | herkit's flag | where the meaning differs |",
        "|---|---|---|---|",
    ]
    for name in NAMES:
        algo = name.agents[0] if len(name.agents) == 1 else "ALGO"
        differs = "" if name.instead else name.meaning.replace("ALGO", algo)
        rows.append(
            f"| `{name.key}` | {', '.join(name.agents)} | {name.herkit_words(algo)} | {differs} |"
        )
    return "\n".join(rows) + "\n"
