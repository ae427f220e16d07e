"""``herkit train``'s command line: :func:`train_command` reads it into a run's
:class:`~herkit.config.train.TrainConfig`, new or resumed. The flags are a view of
TrainConfig with a block of settings per registered agent (:func:`parse_flags`), read over
the env's preset; the flags typed are handed to :func:`herkit.config.resolve.resolve` as its
top layer (:func:`typed_settings`), the lower layers of the env, device and recipe read once
per command (:class:`~herkit.config.resolve.LayerStack`). OGBench's ``--agent.KEY`` flags
are read as herkit's (:func:`split_agent_flags`, :func:`ogbench_flags`; the names are
:mod:`herkit.config.ogbench_names`'), and ``--algo`` naming no registered agent is refused
in one line that says how an agent is registered (:func:`check_algo`)."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import re
import sys
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from herkit.flags import auto_flags, given_algo, parse, unwrap_help, with_suggestions

if TYPE_CHECKING:
    from herkit.config.resolve import LayerStack, Resolution
    from herkit.config.train import TrainConfig

__all__ = [
    "AgentFlag",
    "algo_help",
    "check_algo",
    "ogbench_flags",
    "parse_flags",
    "parse_train",
    "read_ogbench_names",
    "setting_flags",
    "split_agent_flags",
    "train_command",
    "typed_settings",
]


AgentFlag = tuple[str, str, list[str]]
"""An OGBench user's ``--agent.KEY`` flag: as typed, its key (``_`` for ``-``) and its
value's texts (none for a bool flag given alone)."""


def split_agent_flags(args: list[str]) -> tuple[list[str], list[AgentFlag]]:
    """``args`` without OGBench's ``--agent`` flags, and those flags: ``--agent.KEY=VALUE``
    or ``--agent.KEY VALUE`` (sizes also ``--agent.KEY 512 512``; a bool alone, True, and
    ``--noagent.KEY`` or ``--agent.no_KEY``, False), read by
    :func:`herkit.config.ogbench_names.ogbench_settings` for the run's agent. OGBench's agent
    file, ``--agent=agents/gcivl.py`` (or ``--agent.agent_name=gcivl``), is ``--algo
    gcivl``; a ValueError where it names another agent than ``--algo``."""
    from herkit.config.ogbench_names import key_kind

    rest: list[str] = []
    found: list[AgentFlag] = []
    named: list[tuple[str, str]] = []  # the agent files given: as typed, the agent's name
    i = 0
    while i < len(args):
        arg, start = args[i], i
        i += 1
        if arg == "--agent" or arg.startswith("--agent="):
            text = arg.partition("=")[2]
            if not text and i < len(args) and not args[i].startswith("-"):
                text, i = args[i], i + 1
            if not text:
                raise ValueError(
                    "--agent expects OGBench's agent file, e.g. --agent=agents/gcivl.py"
                )
            named.append((" ".join(args[start:i]), text.rpartition("/")[2].removesuffix(".py")))
            continue
        if not arg.startswith(("--agent.", "--noagent.")):
            rest.append(arg)
            continue
        flag, equals, value = arg.partition("=")
        key = flag.partition(".")[2].replace("-", "_")
        negated = flag.startswith("--noagent.")
        if not negated and key.startswith("no_") and key_kind(key) is None:
            if key_kind(key[3:]) == "bool":  # --agent.no-KEY: KEY False
                negated, key = True, key[3:]
        kind = key_kind(key)
        if negated:
            texts = ["False"]
        elif equals:
            texts = [value]
        elif kind == "bool":
            texts = []
            if i < len(args) and args[i].lower() in ("true", "false", "1", "0", "yes", "no"):
                texts, i = [args[i]], i + 1
        elif kind == "ints":
            texts = []
            while i < len(args) and re.fullmatch(r"[\[(]?[\d,\s]+[\])]?", args[i]):
                texts.append(args[i])
                i += 1
        else:
            texts = []
            if i < len(args) and not args[i].startswith("--"):
                texts, i = [args[i]], i + 1
        if not texts and kind != "bool" and not negated:
            raise ValueError(f"{flag} expects a value: {flag}=VALUE")
        typed = " ".join(args[start:i])
        if key == "agent_name":
            named.append((typed, texts[0]))
            continue
        found.append((typed, key, texts))
    algo = given_algo(rest)
    for typed, name in named:
        if (algo or name) != name:
            raise ValueError(
                f"{typed} names OGBench's {name}, but the run's agent is {algo} (--algo): give one"
            )
        algo = name
    found[:0] = [(typed, "agent_name", [name]) for typed, name in named]  # said first
    if algo is not None and given_algo(rest) is None:
        rest += ["--algo", algo]
    return rest, found


def setting_flags(path: str, value: Any) -> list[str]:
    """The ``herkit train`` flags that set the setting ``path`` (``algo``, ``steps``,
    ``her.k``, ``gcivl.lr``: the HER settings' flags have no prefix) to ``value``: a bool as
    ``--X`` or ``--no-X``, sizes one by one."""
    block, _, name = path.rpartition(".")
    prefix = "" if block in ("", "her") else f"{block}."
    name = name.replace("_", "-")
    if isinstance(value, bool):
        return [f"--{prefix}{name}" if value else f"--{prefix}no-{name}"]
    if isinstance(value, tuple):
        return [f"--{prefix}{name}", *(str(item) for item in value)]
    return [f"--{prefix}{name}", str(value)]


def ogbench_flags(
    found: list[AgentFlag], algo: str, goals: Mapping[str, Any], args: list[str]
) -> tuple[list[str], str]:
    """herkit's flags for OGBench's ``--agent.KEY`` flags ``found`` (by
    :func:`split_agent_flags`) in a run of ``algo`` whose goal mixes are otherwise ``goals``,
    and one line that says how each was read; a ValueError where one is refused, or where
    ``args`` (the other flags) set the same setting."""
    from herkit.config.ogbench_names import ogbench_settings

    flags: list[str] = []
    said = []
    given = {arg.split("=")[0] for arg in args if arg.startswith("--")}
    for read in ogbench_settings(found, algo, goals):
        if not read.settings:
            said.append(f"{read.typed} {read.why}")
        for path, value in read.settings.items():
            setting = setting_flags(path, value)
            twins = (
                {setting[0], setting_flags(path, not value)[0]}
                if isinstance(value, bool)
                else {setting[0]}
            )
            if twins & given:
                raise ValueError(
                    f"{read.typed} and {sorted(twins & given)[0]} both set {path}: give one"
                )
            flags += setting
            said.append(f"{read.typed} as {' '.join(setting)}")
    return flags, "herkit: OGBench's names read as herkit's: " + "; ".join(said)


# --- herkit train's flags --------------------------------------------------------------


def train_command(args: list[str]) -> tuple[TrainConfig, bool]:
    """What ``herkit train ARGS`` trains, read and checked: the run's settings and whether it
    resumes. A new run's are resolved (:func:`herkit.config.resolve.resolve`) from the flags
    typed over the lower layers of its env, device and recipe, read once; ``--resume DIR``'s
    are the saved run's with the flags a resume may change
    (:data:`~herkit.config.learning.RESUME_MAY_CHANGE`) over them. ``--help`` prints the
    flags over the env's preset (of the algorithm the run would have) and exits."""
    from herkit.buffer.datasets import read_ahead
    from herkit.config.resolve import LayerStack, preset_config
    from herkit.config.train import TrainConfig

    args, named = split_agent_flags(auto_flags(args))  # OGBench's --agent.KEY: read below
    # First pass for the env id (and --resume), so that --help shows that env's preset.
    without_help = [arg for arg in args if arg not in ("-h", "--help")]
    try:
        first = parse_train(without_help)
    except ValueError:  # report the error against the preset of the env named, if any
        ids = [arg for arg in args if not arg.startswith("-") and ("/" in arg or "-v" in arg)]
        parse_train(args, default=preset_config(ids[0] if ids else TrainConfig.env_id))
        raise
    layers = None if first.resume is not None else LayerStack.of(first)
    if named:  # OGBench's names of the run's agent's settings, as herkit's flags
        args = read_ogbench_names(args, named, first, layers)
        without_help = [arg for arg in args if arg not in ("-h", "--help")]
    if layers is None:
        config = _resumed_config(args, first.resume)
        config.check_data()
        return config, True
    recorded = None  # the dataset read ahead, its shapes checked against the env's
    if first.dataset is not None and without_help == args:
        recorded = read_ahead(first.dataset)  # a bad file is said at once
    config = _new_run_config(args, first, layers, len(without_help) < len(args), recorded)
    config.check_data()  # an algorithm without its data, or data without an algorithm for it
    return config, False


def _new_run_config(
    args: list[str], first: TrainConfig, layers: LayerStack, shown: bool, recorded: Any
) -> TrainConfig:
    """The settings of the new run of ``args`` (``first``: read over TrainConfig's
    defaults): the flags typed, read over the preset they would change (a GPU preset with
    ``--device cuda``, a recipe's settings over it with ``--recipe``), as the top layer of
    the run's settings over ``layers``; ``shown``: ``--help``, of the algorithm the run would
    have. The ``recorded`` dataset read ahead (or None) is checked against the env's
    spaces, before torch loads."""
    from herkit.buffer.datasets import goal_size_for
    from herkit.config.resolve import resolve

    algo = first.algo if given_algo(args) is not None else layers.algo()
    if shown and given_algo(args) is None:  # the env's choice where the preset's does not fit
        with contextlib.suppress(ValueError):
            on_device = {"device": first.device}
            algo = resolve(first.env_id, first.recipe, on_device, layers=layers).config.algo
    parsed, flags = parse_flags(args, default=layers.config(algo), layers=layers)
    resolution = _resolved(parsed.env_id, flags, layers)
    config: TrainConfig = resolution.config
    if recorded is not None:  # its shapes against the env's, before torch loads
        found = resolution.probe
        assert found is not None and config.dataset is not None  # probed; read ahead
        spaces = (found.observation_space, found.action_space)
        goal_size_for(recorded, config.dataset, config.env_id, *spaces)
    blocks = {path.split(".")[0] for path in flags if "." in path}
    others = sorted(blocks - {"her", config.algo})
    if others:  # the flags of an agent that does not train would be lost
        flags_named = ", ".join(f"--{name}.*" for name in others)
        raise ValueError(
            f"{flags_named} set the settings of --algo {' or '.join(others)}, but this run "
            f"trains {config.algo} (--{config.algo}.*): give --algo {others[0]} to train it"
        )
    return config


def _resumed_config(args: list[str], run_dir: str) -> TrainConfig:
    """The settings of the run in ``run_dir`` that ``args`` (``--resume RUN_DIR ...``)
    continue: its saved settings with the flags typed over them
    (:func:`herkit.config.resolve.resolve` of the saved config); ValueError where a flag
    changes a setting a resume cannot change."""
    from herkit.config.learning import RESUME_MAY_CHANGE
    from herkit.config.resolve import LayerStack, resolve
    from herkit.config.train import TrainConfig
    from herkit.envs.imports import prepare_run_env
    from herkit.rundir.settings import load_run_config, saved_env_import

    saved = dataclasses.replace(load_run_config(run_dir), out=run_dir)
    prepare_run_env(saved.env_id, saved_env_import(run_dir))  # from anywhere
    parsed, flags = parse_flags(args, default=saved, layers=LayerStack.of(saved))
    changed = [
        saved.algo if field.name == "agent" else field.name
        for field in dataclasses.fields(TrainConfig)
        if field.name not in ("resume", "her", *RESUME_MAY_CHANGE)
        and getattr(parsed, field.name) != getattr(saved, field.name)
        and not (field.name == "agent" and parsed.algo != saved.algo)  # said by algo
    ]
    changed += [
        name for name, value in parsed.her.values().items() if value != getattr(saved.her, name)
    ]
    if changed:
        raise ValueError(
            f"--resume continues a run with its saved settings; {', '.join(changed)} "
            f"cannot change (only {', '.join(RESUME_MAY_CHANGE)} can)"
        )
    return dataclasses.replace(resolve(saved, flags=flags, probe=False).config, resume=None)


def read_ogbench_names(
    args: list[str], named: list[Any], first: Any, layers: LayerStack | None = None
) -> list[str]:
    """``args`` with herkit's flags for OGBench's ``--agent.KEY`` flags ``named``
    (:func:`split_agent_flags`), read for the run's agent: the saved run's with
    ``--resume``, else ``--algo``'s or the env's preset's (``first``: the other flags read
    over TrainConfig's defaults; ``layers``: the lower layers of its env, device and recipe,
    read here where not given); how they were read is said on stderr."""
    from herkit.config.resolve import LayerStack
    from herkit.rundir.settings import load_run_config

    if first.resume is not None:
        run = load_run_config(first.resume)
    else:
        layers = layers or LayerStack.of(first)
        run = layers.config(first.algo if given_algo(args) else layers.algo())
    settings = run.her_settings()
    goals = {"value_goals": settings.value_goals, "actor_goals": settings.actor_goals}
    flags, said = ogbench_flags(named, run.algo, goals, args)
    print(said, file=sys.stderr)
    return [*args, *flags]


def parse_train(args: list[str], default: Any = None) -> Any:
    """``herkit train ARGS`` read into a TrainConfig (over ``default``, by default
    TrainConfig's own defaults)."""
    return parse_flags(args, default)[0]


def parse_flags(
    args: list[str], default: Any = None, layers: LayerStack | None = None
) -> tuple[Any, dict[str, Any]]:
    """``herkit train ARGS`` read over the config ``default``: the TrainConfig, and the
    settings the flags typed set, by path (``steps``, ``her.k``, ``ddpg.lr``: what
    :func:`herkit.config.resolve.resolve` takes as its top layer).

    The flags are those of a view of TrainConfig with a block of settings per registered
    agent, named after it (``--gcivl.expectile``) where TrainConfig has its one slot
    ``agent``: the default of ``default``'s algorithm's block is ``default``'s agent
    settings, of another's its settings for the env (``layers``': the lower layers of
    ``default``'s env, device and recipe, read here where not given). The config takes the
    block of the algorithm it trains. With ``--help``, the view shows that block alone."""
    import tyro

    from herkit.agents.registry import algo_names
    from herkit.config.resolve import LayerStack
    from herkit.config.train import TrainConfig

    check_algo(args)
    unwrap_help(TrainConfig)
    default = TrainConfig() if default is None else default
    layers = layers or LayerStack.of(default)
    shown = "-h" in args or "--help" in args
    blocks = {
        name: default.agent if name == default.algo else layers.agent(name)
        for name in ((default.algo,) if shown else algo_names())
    }
    view = _flags_view(blocks)
    values = {field.name: getattr(default, field.name) for field in dataclasses.fields(default)}
    kwargs: dict[str, Any] = {"default": view(**(values | blocks))}
    if shown:
        kwargs["description"] = _help_description(default)
    try:
        parsed = parse(tyro.cli, view, args, "herkit train", **kwargs)
    except ValueError as error:
        algo = given_algo(args) or default.algo  # the run's agent: its flags suggested
        raise ValueError(with_suggestions(str(error), args, algo)) from None
    config = TrainConfig(
        **{field.name: getattr(parsed, field.name) for field in dataclasses.fields(TrainConfig)}
    )
    return config, typed_settings(args, parsed, tuple(blocks))


def typed_settings(args: list[str], parsed: Any, blocks: tuple[str, ...]) -> dict[str, Any]:
    """The settings that the flags in ``args`` set, by path (``steps``, ``her.k``, ``ddpg.lr``;
    ``--no-overlap``: ``overlap``), with their values in ``parsed`` (the view of
    :func:`parse_flags`, whose agent ``blocks`` are these); the env id, ``--resume`` and
    ``--help`` are not settings of a new run."""
    from herkit.buffer.settings import HerSettings
    from herkit.config.train import TrainConfig

    top = {field.name for field in dataclasses.fields(TrainConfig)} - {"her", "agent", "env_id"}
    her = set(HerSettings.names()) - top
    typed: dict[str, Any] = {}
    for arg in args:
        if not arg.startswith("--"):
            continue
        block, _, name = arg[2:].partition("=")[0].replace("-", "_").rpartition(".")
        if block in blocks:
            holder, prefix = getattr(parsed, block), f"{block}."
        elif block:
            continue
        elif name in her or name.removeprefix("no_") in her:
            holder, prefix = parsed.her, "her."
        else:
            holder, prefix = parsed, ""
        names = {field.name for field in dataclasses.fields(holder)}
        if name not in names and name.startswith("no_"):
            name = name[3:]  # --no-X: the setting X
        if name in names and (holder is not parsed or name in top) and name != "resume":
            typed[prefix + name] = getattr(holder, name)
    return typed


def _resolved(env_id: str, flags: dict[str, Any], layers: LayerStack) -> Resolution:
    """The run's settings resolved from ``flags`` over ``layers``
    (:func:`herkit.config.resolve.resolve`), an env that fails in its probe said as one that
    fails as the run starts."""
    from herkit.config.resolve import resolve
    from herkit.envs.failures import EnvFailure
    from herkit.runtime.failures import EXIT_CODES, RunFailed

    try:
        return resolve(env_id, None, flags, layers=layers)
    except EnvFailure as failure:
        sys.stderr.write(failure.details + "\n")
        raise RunFailed(
            f"{failure} as the run started; traceback above; nothing was trained: fix the "
            "cause and start again",
            EXIT_CODES["env failed"],
        ) from failure


def check_algo(args: list[str]) -> None:
    """ValueError, in one line, where ``--algo NAME`` names no registered agent: the
    registered ones, a near name where there is one (``gcivi``: did you mean gcivl?; a
    name of another length by more than one character is no typo of it), and how an agent
    is registered (:func:`herkit.agents.registry.unregistered`)."""
    from herkit.agents.registry import algo_names, unregistered

    name = given_algo(args)
    names = algo_names()
    if name is None or name.startswith("-") or name in names:
        return
    near = [other for other in names if abs(len(other) - len(name)) <= 1]  # a typo's length
    close = difflib.get_close_matches(name, near, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ValueError(f"--{unregistered(name, hint)}")


def _flags_view(blocks: dict[str, Any]) -> type:
    """The dataclass ``herkit train`` parses: TrainConfig with ``--algo``'s choices the
    registered agents and, in place of the slot ``agent``, a block of settings per agent
    of ``blocks`` (their defaults)."""
    import tyro

    from herkit.agents.registry import agent_entry, algo_names
    from herkit.config.train import TrainConfig

    clash = set(algo_names()) & {field.name for field in dataclasses.fields(TrainConfig)}
    if clash:
        raise ValueError(f"agents named as settings of herkit train: {', '.join(sorted(clash))}")
    choices: Any = Literal[algo_names()]
    fields: list[Any] = [
        ("algo", choices, dataclasses.field(default="dqn", metadata={"help": algo_help()})),
        ("agent", Annotated[Any, tyro.conf.Suppress], dataclasses.field(default=None)),
    ]
    for name in blocks:
        entry = agent_entry(name)
        unwrap_help(entry.config)
        words = {"help": f"Settings of --algo {name}: {entry.help}."}
        fields.append((name, entry.config, dataclasses.field(default=None, metadata=words)))

    def __post_init__(self: Any) -> None:
        object.__setattr__(self, "agent", getattr(self, self.algo, None))
        TrainConfig.__post_init__(self)

    return dataclasses.make_dataclass(
        "TrainConfig",
        fields,
        bases=(TrainConfig,),
        frozen=True,
        namespace={"__post_init__": __post_init__},
    )


def algo_help() -> str:
    """``--algo``'s help: the registered agents, by kind."""
    from herkit.agents.registry import agent_entries

    kinds = {
        "discrete actions": [e.name for e in agent_entries() if e.discrete and not e.offline],
        "continuous actions": [e.name for e in agent_entries() if not (e.discrete or e.offline)],
        "offline agents: they train on --dataset": [e.name for e in agent_entries() if e.offline],
    }
    listed = "; ".join(f"{', '.join(names)} ({kind})" for kind, names in kinds.items() if names)
    return f"Agent: {listed}."


def _help_description(default: Any) -> str:
    """What ``herkit train --help`` says first for the config ``default`` (the env's
    preset): whose defaults it shows, and that other algorithms' flags are not shown."""
    from herkit.agents.registry import algo_names
    from herkit.config.presets import preset_values

    others = [algo for algo in algo_names() if algo != default.algo]
    whose = (
        f"{default.env_id}'s preset"
        if preset_values(default.env_id)
        else f"the defaults of an env without a preset, such as {default.env_id}"
    )
    if default.recipe is not None:
        whose += f" with the settings of --recipe {default.recipe} over it"
    return textwrap.fill(
        "Train a goal-conditioned agent with HER. The defaults shown are "
        f"{whose}, for --algo {default.algo}; herkit train ENV_ID --help shows another env's, "
        f"herkit train ENV_ID --algo ALGO --help another algorithm's flags "
        f"(--{'.*, --'.join(others)}.* are not shown here).",
        width=88,
    )
