"""A run's settings read back from its directory: :func:`load_run_config`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from herkit.config.train import TrainConfig, config_from_dict
from herkit.rundir.paths import RunPaths

__all__ = ["load_run_config", "saved_env_import"]


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The TrainConfig a run was started with (from ``RUN/config.json``).

    Raises ValueError naming the file when it is missing, not JSON, or not a config.
    """
    RunPaths(run_dir).check()
    path = RunPaths(run_dir).config
    try:
        values = json.loads(path.read_text())
        if not isinstance(values, dict):
            raise ValueError(f"expected a JSON object, got {type(values).__name__}")
        values.pop("conventions", None)
        values.pop("machine", None)
        values.pop("provenance", None)
        values.pop("env_import", None)
        return config_from_dict(values)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path} is not a valid herkit config ({error})") from None


def saved_env_import(run_dir: str | Path) -> dict[str, Any] | None:
    """How the run imported its env (``env_import`` of its ``config.json``, see
    :mod:`herkit.envs.imports`); None where it has none or the file cannot be read."""
    try:
        saved = json.loads(RunPaths(run_dir).config.read_text()).get("env_import")
    except (OSError, ValueError, AttributeError):
        return None
    return saved if isinstance(saved, dict) else None
