"""``--env-restarts N``: a failed env is rebuilt and training goes on, at most N times a run.

An env that raised, returned NaN or inf, or whose worker process died or hung
(:class:`~herkit.envs.failures.EnvFailure`) is rebuilt. For the training envs, nothing of
the failed step is stored (the buffer stores one step of every env at a time, so the step
is dropped for all of them), every episode in progress ends there as truncated (timeouts
bootstrap, so what was stored stays correct), and all envs start new episodes. A failed
evaluation or video is played again on rebuilt envs. Each restart says one line and counts
in ``summary.json`` (``env_restarts``, kept across ``--resume``); past N the failure stops
the run (:func:`herkit.runtime.failures.stop_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from herkit.envs.failures import EnvFailure
from herkit.envs.workers import WorkerVectorEnv
from herkit.runtime.console import say
from herkit.runtime.files import append_text

if TYPE_CHECKING:
    from herkit.training.run import TrainingRun

__all__ = ["restart_training_envs", "with_restarts"]

_T = TypeVar("_T")


def restart_training_envs(run: TrainingRun, failure: EnvFailure) -> dict[str, np.ndarray]:
    """Rebuild the failed training envs, end every episode in progress, and reset all
    envs; returns the observations to act on. Raises the failure when no restart is
    left."""
    _count(run, failure)
    run.buffer.end_episodes()
    run.records.episodes.abandon()

    def rebuild(failed: EnvFailure) -> dict[str, np.ndarray]:
        run.envs.restart(failed.envs)
        obs, _ = run.envs.reset(seed=run.reset_seed())
        return obs

    return _retry(run, failure, rebuild)


def with_restarts(run: TrainingRun, envs: WorkerVectorEnv, play: Callable[[], _T]) -> _T:
    """``play()`` (an evaluation on ``envs``), played again on rebuilt envs after a
    failure, as long as restarts are left."""
    while True:
        try:
            return play()
        except EnvFailure as failure:
            _count(run, failure)
            _retry(run, failure, lambda failed: envs.restart(failed.envs))


def _retry(run: TrainingRun, failure: EnvFailure, rebuild: Callable[[EnvFailure], _T]) -> _T:
    """``rebuild(failure)``: the envs of ``failure`` rebuilt, again (for the new failure)
    each time that fails, while restarts are left."""
    while True:
        try:
            return rebuild(failure)
        except EnvFailure as again:
            failure = again
            _count(run, failure)


def _count(run: TrainingRun, failure: EnvFailure) -> None:
    """Take one restart for ``failure`` and say so, or raise it when none is left."""
    state, allowed = run.state, run.config.env_restarts
    if state.env_restarts >= allowed:
        raise failure
    state.env_restarts += 1
    log = run.error_log
    header = f"env restart {state.env_restarts} of {allowed} at env step {state.env_steps:,}"
    try:
        append_text(log, f"herkit: {header}: {failure}\n{failure.details}\n")
        where = f"traceback in {log}"
    except OSError as error:
        where = f"its traceback could not be written to {log}: {error.strerror}"
    say(f"{failure} at env step {state.env_steps:,}: rebuilt it (env restart "
        f"{state.env_restarts} of {allowed}; {where})")  # fmt: skip
