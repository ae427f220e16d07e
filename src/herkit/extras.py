"""Which extra of herkit brings a missing module, read from herkit's own package metadata.

``pip install herkit`` is the buffer, the facades and the goal envs on numpy and gymnasium;
the rest comes in extras (``pyproject.toml``, the one list of them): ``train`` (torch and
the command line), ``report`` (figures), ``video``, ``robotics``, ``sb3``, ``offline``
(OGBench's envs), ``all``.
:func:`needs_extra` turns the ``ModuleNotFoundError`` of a missing one into the line that
says what to install.
"""

from __future__ import annotations

import importlib.metadata
import re

__all__ = ["extra_of", "needs_extra"]

_DISTRIBUTION_OF = {"PIL": "pillow"}
"""Modules whose distribution is not named after them (otherwise ``_`` reads as ``-``)."""


def extra_of(module: str) -> str | None:
    """The first extra of herkit (``all`` aside) that installs the top-level ``module``,
    by herkit's metadata; None when none does or herkit's metadata is not installed."""
    root = module.split(".")[0]
    wanted = _canonical(_DISTRIBUTION_OF.get(root, root))
    try:
        requirements = importlib.metadata.requires("herkit") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        name = re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0]
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if extra and extra.group(1) != "all" and _canonical(name) == wanted:
            return extra.group(1)
    return None


def needs_extra(error: ModuleNotFoundError, what: str) -> str:
    """One line for ``what`` (e.g. ``herkit train``) failing on the missing module of
    ``error``: the extra to install, or the module where no extra of herkit brings it."""
    module = (error.name or str(error)).split(".")[0]
    extra = extra_of(module)
    if extra is None:
        return f"{what} needs the Python package {module!r}, which is not installed"
    return f"{what} needs {module}, from herkit's {extra} extra: pip install 'herkit[{extra}]'"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
