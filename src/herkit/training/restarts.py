"""``--env-restarts N``: a failed env is rebuilt and training goes on, at most N times a run.

An env that raised, returned NaN or inf, or whose worker process died or hung
(:class:`~herkit.envs.failures.EnvFailure`) is rebuilt. For the training envs
(:meth:`herkit.training.collector.Collector.restart`), nothing of the failed step is
stored (the buffer stores one step of every env at a time, so the step is dropped for
all of them), every episode in progress ends there as truncated (timeouts bootstrap, so
what was stored stays correct), and all envs start new episodes. A failed evaluation or
video is played again on rebuilt envs (:meth:`EnvRestarts.replay`). Each restart says one
line and counts in ``summary.json`` (``env_restarts``, kept across ``--resume``); past N
the failure stops the run (:func:`herkit.training.stopping.stop_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from herkit.envs.failures import EnvFailure
from herkit.envs.workers import WorkerVectorEnv
from herkit.runtime.console import say
from herkit.runtime.files import append_text
from herkit.training.state import LoopState

__all__ = ["EnvRestarts"]

_T = TypeVar("_T")


class EnvRestarts:
    """The env restarts of a run: at most ``allowed``, counted in ``state.env_restarts``,
    each traceback appended to ``error_log``."""

    def __init__(self, allowed: int, state: LoopState, error_log: Path) -> None:
        self.allowed = allowed
        self.state = state
        self.error_log = error_log

    def replay(self, envs: WorkerVectorEnv, play: Callable[[], _T]) -> _T:
        """``play()`` (an evaluation on ``envs``), played again on rebuilt envs after a
        failure, as long as restarts are left."""
        while True:
            try:
                return play()
            except EnvFailure as failure:
                self.take(failure)
                self.retry(failure, lambda failed: envs.restart(failed.envs))

    def retry(self, failure: EnvFailure, rebuild: Callable[[EnvFailure], _T]) -> _T:
        """``rebuild(failure)``: the envs of ``failure`` rebuilt, again (for the new
        failure) each time that fails, while restarts are left."""
        while True:
            try:
                return rebuild(failure)
            except EnvFailure as again:
                failure = again
                self.take(failure)

    def take(self, failure: EnvFailure) -> None:
        """Take one restart for ``failure`` and say so, or raise it when none is left."""
        state, allowed, log = self.state, self.allowed, self.error_log
        if state.env_restarts >= allowed:
            raise failure
        state.env_restarts += 1
        header = f"env restart {state.env_restarts} of {allowed} at env step {state.env_steps:,}"
        try:
            append_text(log, f"herkit: {header}: {failure}\n{failure.details}\n")
            where = f"traceback in {log}"
        except OSError as error:
            where = f"its traceback could not be written to {log}: {error.strerror}"
        say(
            f"{failure} at env step {state.env_steps:,}: rebuilt it (env restart "
            f"{state.env_restarts} of {allowed}; {where})"
        )
