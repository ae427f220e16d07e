"""Shared by the tests that train: a preset config made quiet and small."""

from __future__ import annotations

from typing import Any

from herkit.config.train import TrainConfig, config_from_dict, preset_config


def quiet(**changes: Any) -> TrainConfig:
    """A preset config with no progress bar or TensorBoard, for tests; in float32, as
    ``precision="auto"`` chooses by timing updates on a CPU with bf16, so that two runs
    of a seed could differ."""
    env_id = changes.pop("env_id", "herkit/BitFlip-v0")
    quiet = {"progress": False, "tensorboard": False, "precision": "fp32"}
    values = preset_config(env_id).to_dict() | quiet
    for key, value in changes.items():  # agent settings are merged, not replaced
        values[key] = values[key] | value if isinstance(value, dict) else value
    return config_from_dict(values)
