"""How the ``herkit`` command reads its arguments: tyro's parsers with one-line errors,
field docstrings as ``--help`` text, suggestions for mistyped or foreign flag names
(``--learning-rate`` -> ``--dqn.lr``), flags that moved elsewhere, and bare
``--terminal-on-success``. :mod:`herkit.cli` defines the commands themselves.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import inspect
import io
import itertools
import re
import textwrap
import types
from collections.abc import Callable
from typing import Any

__all__ = [
    "SYNONYMS",
    "auto_flags",
    "field_help",
    "parse",
    "plain",
    "unwrap_help",
    "with_suggestions",
]


def parse(
    parser: Callable[..., Any], target: Any, args: list[str], prog: str, **kwargs: Any
) -> Any:
    """``parser(target, args=args, prog=prog)`` (tyro) whose usage errors (an unknown flag,
    a bad value) raise one-line ValueErrors instead of printing a box and exiting."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return parser(target, args=args, prog=prog, **kwargs)
    except SystemExit as exit:
        if exit.code in (0, None):
            raise
        message = _flag_named(_one_line(captured.getvalue()), args)
        raise ValueError(f"{message} (see {prog} --help)") from None


def _flag_named(message: str, args: list[str]) -> str:
    """A setting's refusal (tyro's ``Error parsing CLASS: field must ...``) with the flag
    that set it in place of the class and field names: ``--ddpg.batch-size must ...``."""
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
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        except (OSError, TypeError):
            continue
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
    return docs


def plain(text: str) -> str:
    """A docstring's reStructuredText as plain help text, as Sphinx shows it: ``code`` as
    code, a role such as :class:`herkit.buffer.HerSettings` as its target (with ``~``, the
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
    """``message`` of an unrecognised flag, with the flag herkit has for it when tyro
    suggested none (another library's name for it, or a near spelling)."""
    if not message.startswith("Unrecognized options:") or "Perhaps you meant" in message:
        return message
    known = _train_flags()
    hints = []
    for arg in args:
        flag = arg.split("=")[0]
        if not flag.startswith("--") or flag in known:
            continue
        prefix, _, last = flag[2:].rpartition(".")
        synonym = SYNONYMS.get(last)
        guess = f"--{prefix + '.' if prefix else ''}{synonym}" if synonym else None
        if guess not in known:
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            guess = close[0] if close else None
        if guess is not None:
            hints.append(f"{flag}: did you mean {guess}?")
    if not hints:
        return message
    body, see, _ = message.partition(" (see ")
    return f"{body}; {'; '.join(hints)}" + (f" (see {_}" if see else "")


def _train_flags() -> list[str]:
    """Every ``herkit train`` flag, ``--k`` to ``--sac.target-entropy``."""
    from herkit.config.train import TrainConfig

    flags = []
    for field in dataclasses.fields(TrainConfig):
        if dataclasses.is_dataclass(field.default):
            flags += [
                f"--{field.name}.{sub.name.replace('_', '-')}"
                for sub in dataclasses.fields(field.default)
            ]
        else:
            flags.append(f"--{field.name.replace('_', '-')}")
    return flags


def _one_line(box: str) -> str:
    """The message of one of tyro's error boxes, as one line."""
    sections: list[list[str]] = [[]]
    for raw in box.splitlines():
        line = raw.strip().strip("│").strip()
        if raw.strip()[:1] in ("╭", "╰") or line.startswith("For full helptext"):
            continue
        if line and set(line) == {"─"}:
            sections.append([])
        elif line:
            sections[-1].append(" ".join(line.split()))
    return "; ".join(" ".join(section) for section in sections if section) or box.strip()


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
