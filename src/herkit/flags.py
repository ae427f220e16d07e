"""Reading ``herkit`` command-line flags with tyro, in herkit's words: usage errors as
one-line ValueErrors (:func:`parse`), a flag's help its field's docstring unwrapped
(:func:`unwrap_help`), an unknown flag answered with the flag herkit has for it
(:func:`with_suggestions`, among the flags the parser takes: :func:`train_flags`), bare
flags for settings that may be left to the env (:func:`auto_flags`), and OGBench's
``--agent.KEY`` flags read as herkit's (:func:`split_agent_flags`, :func:`ogbench_flags`;
the names are :mod:`herkit.config.ogbench_names`').

``herkit train``'s flags are read here too (:func:`train_command`): a view of
:class:`~herkit.config.train.TrainConfig` with a block of settings per registered agent
(:func:`parse_flags`), read over the env's preset, the flags typed handed to
:func:`herkit.config.resolve.resolve` as its top layer (:func:`typed_settings`); the lower
layers of the env, device and recipe are read once per command
(:class:`~herkit.config.resolve.LayerStack`). ``--algo`` naming no registered agent is
refused in one line that says how an agent is registered (:func:`check_algo`)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import functools
import inspect
import io
import itertools
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

if TYPE_CHECKING:
    from herkit.config.resolve import LayerStack, Resolution
    from herkit.config.train import TrainConfig

__all__ = [
    "ANSWERS",
    "AUTO_FLAGS",
    "SYNONYMS",
    "SYNONYM_WORDS",
    "VALUE_ERRORS",
    "AgentFlag",
    "algo_help",
    "auto_flags",
    "check_algo",
    "field_help",
    "given_algo",
    "ogbench_flags",
    "parse",
    "parse_flags",
    "parse_train",
    "plain",
    "read_ogbench_names",
    "setting_flags",
    "speaking",
    "split_agent_flags",
    "suggestion",
    "train_command",
    "train_flags",
    "typed_settings",
    "unwrap_help",
    "with_suggestions",
]


_REPLACED: list[Any] = []
"""The stderr that each :func:`parse` in progress holds back (innermost last)."""


def parse(
    parser: Callable[..., Any], target: Any, args: list[str], prog: str, **kwargs: Any
) -> Any:
    """``parser(target, args=args, prog=prog)`` (tyro) whose usage errors (an unknown flag,
    a bad value) raise one-line ValueErrors instead of printing a box and exiting. tyro's
    own output to stderr is held back meanwhile; a command that tyro runs speaks through
    :func:`speaking`."""
    captured = io.StringIO()
    _REPLACED.append(sys.stderr)
    try:
        with contextlib.redirect_stderr(captured):
            return parser(target, args=args, prog=prog, **kwargs)
    except SystemExit as exit:
        if exit.code in (0, None):
            raise
        message = _flag_named(_one_line(captured.getvalue()), args)
        raise ValueError(f"{message} (see {prog} --help)") from None
    finally:
        _REPLACED.pop()


def speaking(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with its own stderr: the one :func:`parse` held back while tyro parsed
    its flags (tyro calls a subcommand's function as it parses), so that what the command
    says (progress, warnings) is seen."""

    @functools.wraps(command)
    def spoken(*args: Any, **kwargs: Any) -> Any:
        with contextlib.redirect_stderr(_REPLACED[-1] if _REPLACED else sys.stderr):
            return command(*args, **kwargs)

    return spoken


VALUE_ERRORS = (
    (r"invalid literal for int\(\) with base 10: (.+)$", "expects a whole number, got {0}"),
    (r"could not convert string to float: (.+)$", "expects a number, got {0}"),
    (
        r"input length (\d+) did not match expected argument count (\d+) of `(?:\[bold\])?"
        r"(.*?)(?:\[/bold\])?`",
        "expects {1} values ({2}), got {0}",
    ),
)
"""How herkit words tyro's refusals of a flag's value (a pattern of tyro's text, and what
herkit says of the flag instead), so that every error is herkit's one-line form."""


def _flag_named(message: str, args: list[str]) -> str:
    """A refusal in herkit's words: a flag's value that tyro could not read (``Error parsing
    --steps: invalid literal ...``: ``--steps expects a whole number, got 'abc'``), or a
    setting's refusal (``Error parsing CLASS: field must ...``) with the flag that set it
    in place of the class and field names (``--ddpg.batch-size must ...``); tyro's help
    text of the flag is left to ``--help``."""
    message = message.split("; Argument helptext:")[0]
    flagged = re.match(r"Error parsing (--[\w.-]+): (.*)$", message, re.S)
    if flagged is not None:
        flag, why = flagged.groups()
        for pattern, words in VALUE_ERRORS:
            found = re.search(pattern, why, re.S)
            if found is not None:
                return f"{flag} {words.format(*found.groups())}"
        return f"{flag}: {why}"
    worded = re.match(r"Error parsing \S+: (--.*)$", message, re.S)  # worded for the flag
    if worded is not None:
        return worded.group(1)
    found = re.match(r"Error parsing (\S+): (\w+)(.*)$", message, re.S)
    if found is None:
        return message
    block, field, rest = found.groups()
    name = field.replace("_", "-")
    given = [arg.split("=")[0] for arg in args if arg.startswith("--")]
    nested = f"--{block}.{name}"
    flag = nested if nested in given else f"--{name}"
    return f"{flag}{rest}"


def field_help(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass and its dataclass bases, one paragraph per
    blank-line-separated block, with the source's line breaks and indentation removed."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs |= _own_field_help(klass)
    return docs


@functools.cache  # a class's source is read by parsing its module: once per class
def _own_field_help(klass: type) -> Mapping[str, str]:
    """The attribute docstrings written in the class body of ``klass`` (see :func:`field_help`)."""
    docs: dict[str, str] = {}
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
    except (OSError, TypeError):
        return types.MappingProxyType(docs)
    statements = getattr(body, "body", [])
    for field, doc in itertools.pairwise(statements):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(doc.value.value))
            text = "\n\n".join(" ".join(p.split()) for p in paragraphs)
            docs[field.target.id] = plain(text)
    return types.MappingProxyType(docs)


def plain(text: str) -> str:
    """A docstring's reStructuredText as plain help text, as Sphinx shows it: ``code`` as
    code, a role such as :class:`herkit.buffer.settings.HerSettings` as its target (with ``~``, the
    target's last name)."""
    text = re.sub(r":\w+:`~(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    text = re.sub(r":\w+:`([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``", r"\1", text)


def unwrap_help(cls: type) -> None:
    """Hand tyro each field's docstring unwrapped (as field metadata ``help``, which tyro
    reads first): it keeps a docstring's indented source line breaks, so ``--help`` would
    show them as ragged breaks. Recurses into fields whose default is a dataclass."""
    docs = field_help(cls)
    for field in dataclasses.fields(cls):
        if field.name in docs and "help" not in field.metadata:
            field.metadata = types.MappingProxyType({**field.metadata, "help": docs[field.name]})
        if dataclasses.is_dataclass(field.default):
            unwrap_help(type(field.default))


SYNONYMS = {
    "learning-rate": "lr",
    "batch": "batch-size",
    "discount": "gamma",
    "tau": "polyak",
    "n-sampled-goal": "k",
    "goal-selection-strategy": "strategy",
    "total-timesteps": "steps",
    "timesteps": "steps",
    "num-envs": "n-envs",
    "train-steps": "offline-steps",
    "eval-interval": "eval-every",
    "save-interval": "checkpoint-every",
    "log-interval": "log-updates-every",
}
"""Other libraries' names for herkit's flags (the last part of a flag's name, ``-`` for
``_``): Stable-Baselines3's, OGBench's (its ``main.py``'s; its agents' ``--agent.KEY`` are
:mod:`herkit.config.ogbench_names`'), the usual words."""

SYNONYM_WORDS = {"tau": "polyak = 1 - tau"}
"""What a synonym's answer adds where herkit's flag means something else."""

ANSWERS = {
    "env": "the env id is herkit train's first argument: herkit train ENV_ID",
    "env-id": "the env id is herkit train's first argument: herkit train ENV_ID",
    "env-name": "the env id is herkit train's first argument: herkit train ENV_ID",
}
"""Names answered in words where herkit has no flag for them."""


def with_suggestions(message: str, args: list[str], algo: str) -> str:
    """``message`` of an unrecognised flag in one line, with the flag herkit has for it
    (another library's name for it, or a near spelling; an agent's setting of ``algo``, the
    run's agent) in place of tyro's suggestions, which quote every similar flag's whole
    help text. Every flag suggested is one of :func:`train_flags`."""
    if not message.startswith("Unrecognized options:"):
        return message
    body, see, tail = message.rpartition(" (see ")
    if not see:
        body, tail = message, ""
    body = body.split("; Perhaps you meant")[0]
    message = body + (f" (see {tail}" if see else "")
    known = train_flags(algo)
    listed = body.removeprefix("Unrecognized options:").split("; ")[0].split(", ")
    unknown = {option.strip() for option in listed}
    hints = []
    for arg in args:
        flag = arg.split("=")[0]
        if not flag.startswith("--") or flag in known or flag not in unknown:
            continue
        hint = suggestion(flag, algo, known)
        if hint is not None:
            hints.append(f"{flag}: {hint}")
    if not hints:
        return message
    body, see, _ = message.partition(" (see ")
    return f"{body}; {'; '.join(hints)}" + (f" (see {_}" if see else "")


def suggestion(flag: str, algo: str, known: list[str]) -> str | None:
    """What herkit has for the unknown ``flag`` in a run of ``algo`` (``did you mean
    --gcivl.lr?``), among the ``known`` flags (:func:`train_flags` of ``algo``); None where
    nothing comes near. The run's agent's settings are looked at first, then the other
    flags of ``herkit train`` (for ``--her.X``, config.json's name of a HER setting, the
    other way round)."""
    prefix, _, last = flag[2:].rpartition(".")
    name = last.replace("_", "-")
    if name in ANSWERS and not prefix:
        return ANSWERS[name]
    blocks = ["", algo] if prefix == "her" else [algo, ""]
    herkit = SYNONYMS.get(name, name)
    words = f" ({SYNONYM_WORDS[name]})" if name in SYNONYM_WORDS else ""
    for block in blocks:
        guess = f"--{block}.{herkit}" if block else f"--{herkit}"
        if guess in known:
            return f"did you mean {guess}{words}?"
    best, score = None, 0.75
    for block in blocks:
        typed = f"--{block}.{name}" if block else f"--{name}"
        pool = [known_flag for known_flag in known if _block(known_flag) == block]
        for close in difflib.get_close_matches(typed, pool, n=1, cutoff=score):
            ratio = difflib.SequenceMatcher(None, typed, close).ratio()
            if best is None or ratio > score:
                best, score = close, ratio
    return None if best is None else f"did you mean {best}?"


def _block(flag: str) -> str:
    """The agent a flag belongs to (``--gcivl.lr``: ``gcivl``), "" for the others."""
    return flag[2:].rpartition(".")[0]


def given_algo(args: list[str]) -> str | None:
    """The ``--algo`` of ``args`` (``--algo X`` or ``--algo=X``), None where not given."""
    for i, arg in enumerate(args):
        if arg.startswith("--algo="):
            return arg.split("=", 1)[1]
        if arg == "--algo" and i + 1 < len(args):
            return args[i + 1]
    return None


def train_flags(algo: str | None = None) -> list[str]:
    """Every flag the ``herkit train`` parser takes, ``--algo`` to ``--sac.target-entropy``
    (``--no-X`` beside each boolean ``--X``; the HER settings' without a prefix; the
    settings of each registered agent as ``--ALGO.FIELD``, of ``algo`` alone where given),
    read from the config dataclasses as tyro reads them (a suppressed or positional field
    is no flag)."""
    from herkit.agents.registry import agent_entries
    from herkit.config.train import TrainConfig

    flags = [*_field_flags(TrainConfig, ""), *(f"--{name}" for name in AUTO_FLAGS)]
    flags += [f"--no-{name}" for name in AUTO_FLAGS]
    for entry in agent_entries():
        if algo is None or entry.name == algo:
            flags += _field_flags(entry.config, f"{entry.name}.")
    return list(dict.fromkeys(flags))


def _field_flags(cls: type, prefix: str) -> list[str]:
    """The flags of the dataclass ``cls``'s fields, each named ``--PREFIXFIELD``."""
    import tyro

    hints = typing.get_type_hints(cls, include_extras=True)
    flags = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        markers = typing.get_args(hint)[1:] if typing.get_origin(hint) is Annotated else ()
        if any(marker in (tyro.conf.Suppress, tyro.conf.Positional) for marker in markers):
            continue
        name = field.name.replace("_", "-")
        if dataclasses.is_dataclass(field.default):
            omitted = any(marker is tyro.conf.OmitArgPrefixes for marker in markers)
            flags += _field_flags(type(field.default), prefix if omitted else f"{prefix}{name}.")
        elif hint is bool or (markers and typing.get_args(hint)[0] is bool):
            flags += [f"--{prefix}{name}", f"--{prefix}no-{name}"]
        else:
            flags.append(f"--{prefix}{name}")
    return flags


def _one_line(box: str) -> str:
    """The message of one of tyro's error boxes, as one line (drawn with a frame on a
    terminal; off one, its title stands on a line of its own above dashes: left out)."""
    sections: list[list[str]] = [[]]
    for raw in box.splitlines():
        line = raw.strip().strip("│").strip()
        if raw.strip()[:1] in ("╭", "╰") or line.startswith("For full helptext"):
            continue
        if line and set(line) <= {"─", "-"}:
            sections.append([])
        elif line:
            sections[-1].append(" ".join(line.split()))
    texts = [" ".join(section) for section in sections if section]
    framed = any(raw.strip()[:1] == "╭" for raw in box.splitlines())
    if not framed and len(texts) > 1:  # the unframed title
        texts = texts[1:]
    return "; ".join(texts) or box.strip()


AUTO_FLAGS = ("terminal-on-success",)
"""Settings that are True, False or None (from the env), also given as bare flags."""


def auto_flags(args: list[str]) -> list[str]:
    """For :data:`AUTO_FLAGS`: ``--X`` alone means ``--X True``, ``--no-X`` ``--X False``."""
    out: list[str] = []
    for i, arg in enumerate(args):
        name = arg[2:] if arg.startswith("--") else ""
        if name.startswith("no-") and name[3:] in AUTO_FLAGS:
            out += [f"--{name[3:]}", "False"]
        elif name in AUTO_FLAGS and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out += [arg, "True"]
        else:
            out.append(arg)
    return out


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
