"""How a training run ends when something goes wrong, and the exit codes of ``herkit``.

A run never hangs and never fails silently: whatever stops it (an env that raises or
returns NaN, a worker process that dies or hangs, a diverging learner, a disk that fills
up, a bug), :func:`stop_run` keeps the last good state (a checkpoint at the last whole
step where that is safe, else the last periodic one, never one with non-finite weights),
writes the full traceback to ``RUN/error.log``, and raises :class:`RunFailed` whose text is
the one closing line the command prints, with the exit code for its kind of failure
(:data:`EXIT_CODES`).
"""

from __future__ import annotations

import math
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from herkit.envs.failures import EnvFailure
from herkit.files import append_text

if TYPE_CHECKING:
    from herkit.phases import TrainingRun

__all__ = [
    "EXIT_CODES",
    "DistributedError",
    "Diverged",
    "Interrupted",
    "RunFailed",
    "check_finite_action",
    "check_finite_metrics",
    "nonfinite_tensors",
    "stop_run",
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
    """Training was stopped by SIGINT or SIGTERM after a checkpoint at ``env_steps``."""

    def __init__(self, run_dir: Path, env_steps: int) -> None:
        super().__init__(f"interrupted at {env_steps} env steps")
        self.run_dir = run_dir
        self.env_steps = env_steps


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
        raise Diverged(f"training diverged: the policy gave non-finite actions after update "
                       f"{update:,}")  # fmt: skip


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


def stop_run(run: TrainingRun, error: BaseException) -> RunFailed:
    """End ``run`` after ``error``: keep the last good state, write ``RUN/error.log`` and
    ``summary.json``, and return the :class:`RunFailed` to raise."""
    state, run_dir = run.state, run.run_dir
    what, kind = _what_happened(error)
    notes: list[str] = []
    single = run.context.world_size == 1
    if (
        isinstance(error, EnvFailure)
        and single
        and state.env_steps > 0
        and run.last_checkpoint != state.env_steps
    ):
        try:  # nothing of the failed step was stored: the last whole step is safe to keep
            run.checkpoint()
        except BaseException as also:
            notes.append(f"writing a checkpoint at env step {state.env_steps:,} also failed:\n"
                         + "".join(traceback.format_exception(also)))  # fmt: skip
    kept = _kept(run.last_checkpoint)
    log = run.error_log
    text = _error_log(error, what, state.env_steps, notes)
    if run.last_checkpoint is None:  # the run directory goes: a run with nothing to resume
        sys.stderr.write(text)
        where = "traceback above"
    else:
        try:
            append_text(log, text)
            where = f"traceback in {log}"
        except OSError:
            sys.stderr.write(text)
            where = "traceback above (the run directory cannot be written)"
    if run.context.is_main and run.last_checkpoint is not None:
        try:
            run.write_summary(error=what, exit_code=EXIT_CODES[kind])
        except OSError:
            pass  # the closing line and error.log say it
    resume = f"continue with: herkit train --resume {run_dir}"
    if kind == "write failed":
        resume = "free space or fix the path, then " + resume
    elif kind == "diverged":
        resume = f"{resume} (from that checkpoint), or train anew with other learning settings"
    if run.last_checkpoint is None:
        resume = "nothing to resume: fix the cause and start again"
    step = f"at env step {state.env_steps:,}"
    return RunFailed(f"{what} {step}; {kept}; {where}; {resume}", EXIT_CODES[kind])


def _what_happened(error: BaseException) -> tuple[str, str]:
    if isinstance(error, EnvFailure):
        return str(error), "env failed"
    if isinstance(error, Diverged):
        return str(error), "diverged"
    if isinstance(error, OSError):
        path = error.filename or "a file of the run"
        return f"cannot write {path}: {error.strerror or error}", "write failed"
    return f"the run raised {error!r}", "error"


def _kept(last_checkpoint: int | None) -> str:
    if last_checkpoint is None:
        return "no checkpoint yet"
    return f"checkpoint at env step {last_checkpoint:,} kept"


def _error_log(error: BaseException, what: str, env_steps: int, notes: list[str]) -> str:
    parts = [f"herkit: {what} at env step {env_steps:,}\n"]
    if isinstance(error, EnvFailure):
        parts.append(f"\nThe env's traceback:\n{error.details}\n")
    parts.append("\nWhere herkit saw it:\n" + "".join(traceback.format_exception(error)))
    parts += [f"\n{note}" for note in notes]
    return "".join(parts)
