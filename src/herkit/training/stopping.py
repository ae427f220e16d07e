"""How a training run stops when something goes wrong: :func:`stop_run`.

A run never hangs and never fails silently: whatever stops it (an env that raises or
returns NaN, a worker process that dies or hangs, a diverging learner, a disk that fills
up, a bug), :func:`stop_run` keeps the last good state (a checkpoint at the last whole
step where that is safe, else the last periodic one, never one with non-finite weights),
writes the full traceback to ``RUN/error.log``, and returns the
:class:`~herkit.runtime.failures.RunFailed` to raise, whose text is the one closing line
the command prints, with the exit code for its kind of failure
(:data:`~herkit.runtime.failures.EXIT_CODES`).
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import TYPE_CHECKING

from herkit.envs.failures import EnvFailure
from herkit.runtime.failures import EXIT_CODES, Diverged, RunFailed
from herkit.runtime.files import append_text

if TYPE_CHECKING:
    from herkit.training.run import TrainingRun

__all__ = ["stop_run"]


def stop_run(run: TrainingRun, error: BaseException) -> RunFailed:
    """End ``run`` after ``error``: keep the last good state, write ``RUN/error.log`` and
    ``summary.json``, and return the :class:`RunFailed` to raise."""
    state, run_dir, context, phase = run.state, run.run_dir, run.parts.context, run.phase
    if isinstance(error, EnvFailure):
        what, kind = str(error), "env failed"
    elif isinstance(error, Diverged):
        what, kind = str(error), "diverged"
    elif isinstance(error, OSError):
        what = f"cannot write {error.filename or 'a file of the run'}: {error.strerror or error}"
        kind = "write failed"
    else:
        what, kind = f"the run raised {error!r}", "error"
    notes: list[str] = []
    single = context.world_size == 1
    if (
        isinstance(error, EnvFailure)
        and single
        and state.env_steps > 0
        and run.last_checkpoint != phase.position
    ):
        try:  # nothing of the failed step was stored: the last whole step is safe to keep
            run.checkpoint()
        except BaseException as also:
            notes.append(
                f"writing a checkpoint at {phase.position} also failed:\n"
                + "".join(traceback.format_exception(also))
            )
    last = run.last_checkpoint
    kept = "no checkpoint yet" if last is None else f"checkpoint at {last} kept"
    log = run.outputs.error_log
    text = f"herkit: {what} at {phase.position}\n"
    if isinstance(error, EnvFailure):
        text += f"\nThe env's traceback:\n{error.details}\n"
    text += "\nWhere herkit saw it:\n" + "".join(traceback.format_exception(error))
    text += "".join(f"\n{note}" for note in notes)
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
    if context.is_main and run.last_checkpoint is not None:
        with contextlib.suppress(OSError):  # the closing line and error.log say it
            run.outputs.write_summary(error=what, exit_code=EXIT_CODES[kind])
    resume = f"continue with: herkit train --resume {run_dir}"
    if kind == "write failed":
        resume = "free space or fix the path, then " + resume
    elif kind == "diverged":
        resume = f"{resume} (from that checkpoint), or train anew with other learning settings"
    if run.last_checkpoint is None:
        resume = "nothing to resume: fix the cause and start again"
    step = f"at {phase.position}"
    return RunFailed(f"{what} {step}; {kept}; {where}; {resume}", EXIT_CODES[kind])
