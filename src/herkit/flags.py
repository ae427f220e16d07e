"""Reading ``herkit`` command-line flags with tyro, in herkit's words: usage errors as
one-line ValueErrors (:func:`parse`), a flag's help its field's docstring unwrapped
(:func:`unwrap_help`), an unknown flag answered with the flag herkit has for it
(:func:`with_suggestions`), and bare flags for settings that may be left to the env
(:func:`auto_flags`)."""

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
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "AUTO_FLAGS",
    "SYNONYMS",
    "VALUE_ERRORS",
    "auto_flags",
    "field_help",
    "given_algo",
    "parse",
    "plain",
    "speaking",
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
    "learning_rate": "lr",
    "batch": "batch-size",
    "discount": "gamma",
    "tau": "polyak",
    "n-sampled-goal": "k",
    "goal-selection-strategy": "strategy",
    "total-timesteps": "steps",
    "timesteps": "steps",
    "env": "env-id",
    "num-envs": "n-envs",
}
"""Other libraries' names for herkit's flags (the last part of a flag's name)."""


def with_suggestions(message: str, args: list[str]) -> str:
    """``message`` of an unrecognised flag in one line, with the flag herkit has for it
    (another library's name for it, or a near spelling) in place of tyro's suggestions,
    which quote every similar flag's whole help text."""
    if not message.startswith("Unrecognized options:"):
        return message
    body, see, tail = message.rpartition(" (see ")
    if not see:
        body, tail = message, ""
    body = body.split("; Perhaps you meant")[0]
    message = body + (f" (see {tail}" if see else "")
    known = train_flags()
    listed = body.removeprefix("Unrecognized options:").split("; ")[0].split(", ")
    unknown = {option.strip() for option in listed}
    hints = []
    for arg in args:
        flag = arg.split("=")[0]
        if not flag.startswith("--") or flag in known or flag not in unknown:
            continue
        prefix, _, last = flag[2:].rpartition(".")
        synonym = SYNONYMS.get(last)
        guess = f"--{prefix + '.' if prefix else ''}{synonym}" if synonym else None
        if synonym and not prefix and guess not in known:  # an agent's setting: --ALGO.lr
            algo = given_algo(args)
            guess = f"--{algo}.{synonym}" if algo else f"--ALGO.{synonym} (ALGO: your --algo)"
            if algo and guess not in known:
                guess = None
            else:
                hints.append(f"{flag}: did you mean {guess}?")
                continue
        if guess not in known:
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            guess = close[0] if close else None
        if guess is not None:
            hints.append(f"{flag}: did you mean {guess}?")
    if not hints:
        return message
    body, see, _ = message.partition(" (see ")
    return f"{body}; {'; '.join(hints)}" + (f" (see {_}" if see else "")


def given_algo(args: list[str]) -> str | None:
    """The ``--algo`` of ``args`` (``--algo X`` or ``--algo=X``), None where not given."""
    for i, arg in enumerate(args):
        if arg.startswith("--algo="):
            return arg.split("=", 1)[1]
        if arg == "--algo" and i + 1 < len(args):
            return args[i + 1]
    return None


def train_flags() -> list[str]:
    """Every ``herkit train`` flag, ``--k`` to ``--sac.target-entropy`` (an agent's settings
    ``--ALGO.FIELD`` for each registered agent)."""
    from herkit.config.registry import agent_entries
    from herkit.config.train import TrainConfig

    flags = []
    for field in dataclasses.fields(TrainConfig):
        if dataclasses.is_dataclass(field.default):
            flags += [
                f"--{field.name}.{sub.name.replace('_', '-')}"
                for sub in dataclasses.fields(field.default)
            ]
        elif field.name != "agent":
            flags.append(f"--{field.name.replace('_', '-')}")
    for entry in agent_entries():
        flags += [
            f"--{entry.name}.{sub.name.replace('_', '-')}"
            for sub in dataclasses.fields(entry.config)
        ]
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
