"""What an env of a vector env can do wrong, said in one line: :class:`EnvFailure`.

An env fails when it raises (in ``reset``, ``step`` or while it is made), when it returns
non-finite numbers (NaN or inf) in an observation or a reward, or when the worker process
that steps it dies or stops answering. :class:`herkit.envs.workers.WorkerVectorEnv` turns
each of these into an :class:`EnvFailure` that names the env, its worker and what went
wrong, and carries the env's own traceback; the training loop then rebuilds the env
(``--env-restarts``) or stops the run with that line.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from herkit.buffer.inputs import all_finite, nonfinite_rows

__all__ = ["EnvFailure", "Failed", "exit_reason", "first_nonfinite", "raised"]


@dataclass(frozen=True)
class Failed:
    """One failure of one or more envs of a vector env (as a worker reports it).

    Attributes:
        envs: the indices of the failed envs in their vector env.
        what: what they did, as a clause: ``"raised RuntimeError('boom')"``.
        during: ``"step"``, ``"reset"`` or ``"start"`` (while being made).
        details: the env's traceback, where it raised.
        worker: the worker process that stepped them (None: in the trainer's process).
        process_lost: the worker itself died or hung: all its envs are gone.
    """

    envs: tuple[int, ...]
    what: str
    during: str
    details: str = ""
    worker: int | None = None
    process_lost: bool = False

    def describe(self, label: str) -> str:
        """One clause naming the envs: ``env 2 (worker 0) raised RuntimeError('boom') in
        step``."""
        where = "" if self.worker is None else f" (worker {self.worker})"
        if self.process_lost:
            return f"{label} worker {self.worker} ({_span(label, self.envs)}) {self.what}"
        return f"{_span(label, self.envs)}{where} {self.what} in {self.during}"


class EnvFailure(RuntimeError):
    """Envs of a vector env failed (see the module docstring); ``failures`` lists each
    failure, the first one names the error. The vector env must be restarted
    (:meth:`~herkit.envs.workers.WorkerVectorEnv.restart`) or closed after it."""

    def __init__(self, label: str, failures: Sequence[Failed]) -> None:
        self.label = label
        self.failures = tuple(failures)
        first = self.failures[0].describe(label)
        more = len(self.failures) - 1
        super().__init__(first + (f" (and {more} more failure{'s' * (more > 1)})" if more else ""))

    @property
    def envs(self) -> tuple[int, ...]:
        """Every env that failed, in order."""
        return tuple(sorted({i for failure in self.failures for i in failure.envs}))

    @property
    def details(self) -> str:
        """The envs' tracebacks (or what is known of a lost worker), one after another."""
        parts = [
            f"{failure.describe(self.label)}:\n{failure.details or '(no traceback)'}"
            for failure in self.failures
        ]
        return "\n".join(parts)


def raised(error: BaseException) -> str:
    """``"raised RuntimeError('boom')"``, cut to a readable length."""
    text = repr(error)
    return "raised " + (text if len(text) <= 200 else text[:197] + "...")


def exit_reason(exitcode: int | None) -> str:
    """Why a worker process ended, from its exit code: ``"died (exit code -9: killed by
    SIGKILL, as the out-of-memory killer does)"``."""
    if exitcode is None:
        return "died"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        why = f"killed by {name}"
        if exitcode == -signal.SIGKILL:
            why += ", as the out-of-memory killer does"
        return f"died (exit code {exitcode}: {why})"
    return f"died (exit code {exitcode})"


def first_nonfinite(
    obs: Mapping[str, np.ndarray], rewards: np.ndarray | None, rows: np.ndarray
) -> tuple[int, str, int] | None:
    """The first env of ``rows`` (the envs whose values these are, in order) that returned a
    NaN or an infinity, as ``(env, field, how many values)``; None when all are finite.
    Only float fields are looked at (an extra key of integers or text cannot be NaN)."""
    columns = [(f"obs[{key!r}]", obs[key]) for key in obs if obs[key].dtype.kind == "f"]
    if rewards is not None:
        columns.append(("reward", rewards))
    if all_finite([values for _, values in columns]):
        return None
    found: list[tuple[int, str, int]] = []
    for name, values in columns:
        counts = nonfinite_rows(values)
        if counts is not None:
            row = int(np.flatnonzero(counts)[0])
            found.append((int(rows[row]), name, int(counts[row])))
    return min(found, key=lambda item: item[0]) if found else None


def _span(label: str, envs: tuple[int, ...]) -> str:
    if len(envs) == 1:
        return f"{label} {envs[0]}"
    if envs == tuple(range(envs[0], envs[-1] + 1)):
        return f"{label}s {envs[0]}-{envs[-1]}"
    return f"{label}s {', '.join(map(str, envs))}"
