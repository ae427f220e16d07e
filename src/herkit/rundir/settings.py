"""A run's settings read back from its directory: :func:`load_run_config`."""

from __future__ import annotations

import json
from pathlib import Path

from herkit.config.train import TrainConfig, config_from_dict
from herkit.rundir.paths import RunPaths

__all__ = ["load_run_config"]


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
        return config_from_dict(values)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path} is not a valid herkit config ({error})") from None
