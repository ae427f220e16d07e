"""The ways a run fails, and the exit codes of ``herkit``: :data:`EXIT_CODES`, the
exceptions that carry a failure (:class:`RunFailed`, :class:`Diverged`,
:class:`DistributedError`, :class:`Interrupted`) and the checks that raise
:class:`Diverged` where a NaN or an infinity enters (metrics, actions, weights). How a
training run stops on one is :mod:`herkit.training.stopping`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "EXIT_CODES",
    "DistributedError",
    "Diverged",
    "Interrupted",
    "RunFailed",
    "check_finite_action",
    "check_finite_metrics",
    "nonfinite_tensors",
]

EXIT_CODES = {
    "done": 0,
    "error": 1,  # an error herkit did not foresee (in herkit or the env's code), a dead rank
    "bad input": 2,  # a setting, file or env id refused before training starts; a missing extra
    "env failed": 3,  # an env raised, returned NaN/inf, or its worker died or hung
    "diverged": 4,  # a loss, parameter or action became NaN or infinite
    "write failed": 5,  # disk full, permission denied, a path that vanished
    "interrupted": 130,  # Ctrl-C or SIGTERM: checkpoint written, --resume continues
}
"""The exit codes of ``herkit train``, by what ended the run."""


class Interrupted(Exception):
    """Training was stopped by SIGINT or SIGTERM after a checkpoint ``at`` a point of the run
    (e.g. ``"1,234 env steps"``, ``"500 gradient steps"``)."""

    def __init__(self, run_dir: Path, at: str) -> None:
        super().__init__(f"interrupted at {at}")
        self.run_dir = run_dir
        self.at = at


class DistributedError(RuntimeError):
    """A collective operation failed: another rank died or the connection broke."""


class Diverged(RuntimeError):
    """Training produced a NaN or an infinity: in a loss, a parameter or an action."""


class RunFailed(Exception):
    """A run stopped by a failure: ``str(self)`` is the closing line (after ``herkit:
    error:``), :attr:`exit_code` the command's exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_finite_metrics(metrics: dict[str, float], update: int) -> None:
    """Raise :class:`Diverged` if a metric of gradient update number ``update`` (its
    losses, Q values) is NaN or infinite."""
    for name, value in metrics.items():
        if not math.isfinite(value):
            raise Diverged(f"training diverged: {name} of update {update:,} is {value}")


def check_finite_action(action: np.ndarray, update: int) -> None:
    """Raise :class:`Diverged` if the policy's ``action`` holds a NaN or an infinity."""
    array = np.asarray(action)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise Diverged(
            f"training diverged: the policy gave non-finite actions after update {update:,}"
        )


def nonfinite_tensors(state: Any, prefix: str = "") -> list[str]:
    """The names of the floating-point tensors in a nested ``state_dict`` that hold a NaN
    or an infinity."""
    import torch

    if isinstance(state, torch.Tensor):
        bad = state.is_floating_point() and not bool(torch.isfinite(state).all())
        return [prefix or "tensor"] if bad else []
    if isinstance(state, dict):
        items = list(state.items())
    elif isinstance(state, list | tuple):
        items = list(enumerate(state))
    else:
        return []
    names = []
    for key, value in items:
        names += nonfinite_tensors(value, f"{prefix}.{key}" if prefix else str(key))
    return names
