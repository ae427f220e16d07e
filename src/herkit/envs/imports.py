"""Where a run's env comes from, so that it can be made again from anywhere.

A run's ``config.json`` keeps, under ``env_import``, what :func:`env_import_record` found
when it trained: for a ``module:Id`` env the module and the folder it was imported from (a
``sys.path`` entry); for an id that the training code registered itself (``gym.register``
in a script), the script. :func:`prepare_run_env` reads it back before a run's env is
made elsewhere (``herkit eval``, ``herkit train --resume``, ``load_policy``): it puts the
recorded folder on ``sys.path`` where the module is not found otherwise, and where the env
still cannot be made it raises one line that says how to name it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["ENV_HINT", "env_import_record", "prepare_run_env"]

ENV_HINT = (
    "name it with --env MODULE:ID (herkit eval) or env_id='MODULE:ID' (load_policy), "
    "where importing MODULE registers ID"
)
"""How to name a run's env where its own cannot be made: the end of the advice."""

_OWN_PACKAGES = ("herkit", "gymnasium", "gymnasium_robotics", "ogbench", "shimmy", "ale_py")
"""Packages whose ids are registered on import by herkit or gymnasium: an id of theirs is
not the training code's own."""


def env_import_record(env_id: str) -> dict[str, Any] | None:
    """How to import the env ``env_id`` again, as found in this process (which has made it).

    ``{"module": M, "path": DIR}`` for ``M:Id`` (``DIR`` the ``sys.path`` entry that ``M``
    was imported from; None where ``M`` has no file); ``{"script": FILE}`` for an id
    registered by the Python script that runs (not by herkit, gymnasium or an installed
    package of envs); None for the rest.
    """
    module, _, name = env_id.rpartition(":")
    if module:
        return {"module": module, "path": _import_root(module)}
    script = _script_of(name)
    return None if script is None else {"script": script}


def prepare_run_env(env_id: str, record: Any, given: bool = False) -> None:
    """Make ``env_id`` (a run's, with its ``env_import`` ``record``) possible to make here.

    For ``module:Id``: the module is imported, from the recorded folder (the module's, or
    else the training script's) where it is not found otherwise. An id that is not
    registered here and was the training code's own is refused. ``given``: the id came
    from the user (``--env``), not from the run.

    Raises:
        ValueError: one line: the module cannot be imported, or the id is not registered
            here, and how to name the env instead.
    """
    record = record if isinstance(record, dict) else {}
    module, _, name = env_id.rpartition(":")
    if module:
        path = record.get("path") if record.get("module") == module else None
        if path is None and isinstance(record.get("script"), str):
            path = os.path.dirname(record["script"])  # the training script's folder
        _import_module(env_id, module, path, given)
        return
    if given or name in gym.registry:
        return
    script = record.get("script")
    if script is None:
        return  # herkit's, gymnasium's or a robotics id: make_goal_env says what is missing
    raise ValueError(
        f"env {env_id!r} is not registered here: the script that trained the run registered "
        f"it ({script}); {ENV_HINT}"
    )


def _import_module(env_id: str, module: str, path: Any, given: bool) -> None:
    """Import ``module`` (of ``env_id``), adding ``path`` to ``sys.path`` where it is not
    found otherwise; a one-line ValueError where it cannot be imported."""
    top = module.split(".")[0]
    if (
        isinstance(path, str)
        and _find(top) is None
        and Path(path).is_dir()
        and path not in sys.path
    ):
        sys.path.append(path)
    try:
        importlib.import_module(module)
    except ImportError as error:
        where = (
            f"not found here nor in {path}: run from the folder that holds it or put that "
            "folder on PYTHONPATH"
        )
        if not isinstance(path, str):
            where = "run from the folder that holds it or put that folder on PYTHONPATH"
        if not given:
            where += f", or {ENV_HINT}"
        raise ValueError(
            f"cannot make {env_id!r}: importing module {module!r} failed ({error}); {where}"
        ) from None


def _find(name: str) -> Any:
    """The module spec of the top-level module ``name``, None where it is not found."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _import_root(module: str) -> str | None:
    """The ``sys.path`` entry that the imported ``module`` was found in, None where it has
    no file (a namespace package, a module not imported)."""
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if not isinstance(file, str):
        return None
    root = Path(os.path.abspath(file)).parent
    levels = module.count(".") + (Path(file).stem == "__init__")
    for _ in range(levels):
        root = root.parent
    return str(root)


def _script_of(name: str) -> str | None:
    """The script that runs, where the id ``name`` is registered with an entry point that
    is not of herkit, gymnasium or an installed package of envs (the script registered it
    itself, or imported the module that did); None otherwise."""
    spec = gym.registry.get(name)
    if spec is None:
        return None
    entry = spec.entry_point
    source = entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "")
    if (source or "").split(".")[0] in _OWN_PACKAGES:
        return None
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    spec_name = getattr(getattr(main, "__spec__", None), "name", "") or ""
    if (
        not isinstance(file, str)
        or spec_name.split(".")[0] in ("herkit", "torch")
        or Path(file).stem == "herkit"
    ):
        return None  # herkit's command line (or torchrun's): the id is not a script's
    return os.path.abspath(file)
