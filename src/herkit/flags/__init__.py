"""Reading ``herkit`` command-line flags with tyro, in herkit's words: usage errors as
one-line ValueErrors (:func:`parse`), a flag's help its field's docstring unwrapped
(:func:`unwrap_help`), an unknown flag answered with the flag herkit has for it
(:func:`with_suggestions`, among the flags the parser takes: :func:`train_flags`), and bare
flags for settings that may be left to the env (:func:`auto_flags`). ``herkit train``'s
command line, OGBench's ``--agent.KEY`` flags among them, is read in
:mod:`herkit.flags.train`."""

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
from typing import Annotated, Any

__all__ = [
    "ANSWERS",
    "AUTO_FLAGS",
    "SYNONYMS",
    "SYNONYM_WORDS",
    "VALUE_ERRORS",
    "auto_flags",
    "field_help",
    "given_algo",
    "parse",
    "plain",
    "speaking",
    "suggestion",
    "train_flags",
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
