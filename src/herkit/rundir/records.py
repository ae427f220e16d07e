"""What a training run records beside ``progress.csv``: every training episode
(``episodes.csv``) and its gradient updates in intervals (``updates.csv``).

``RUN/episodes.csv`` has one row per training episode, written as it ends:
``env_steps`` (the run's env steps over all ranks after the step that ended it), ``rank``
(0 without torchrun), ``env`` (the env's index within its rank), ``return`` (the sum of
the env's step rewards, as the env gave them), ``length`` (steps), ``success`` (1 or 0 by
the run's success signal at the last step; empty where the env has none) and
``final_distance`` (the Euclidean norm of ``achieved_goal - desired_goal`` of the last
observation, flattened; empty where the goals are not numeric arrays). Rows are ordered
by ``env_steps``, then rank, then env.

``RUN/updates.csv`` has one row per ``log_updates_every`` gradient updates (when the
update count is a multiple of it): ``updates``, ``env_steps``, the interval's mean of
each metric the agent's ``update()`` returns (``critic_loss``, ``actor_loss``, ``q_mean``,
``target_q_mean``, ``td_abs_mean``, SAC's ``alpha`` and ``entropy``...), ``q_min`` and
``q_max`` (over the interval's batches) and ``q_low``, ``q_high``: the range TD targets are
clipped to (empty where unbounded). Rank 0's updates, as in ``progress.csv``.

Rows are kept in memory and appended at each evaluation and checkpoint (the last one ends
the run), where every rank is at the same iteration: rank 0 writes every rank's episodes.
A resumed run drops the rows after its checkpoint (see
:class:`herkit.rundir.logs.RecordFile`): the episodes in progress at a checkpoint are never
recorded, as the envs restart on resume; the interval of updates in progress at a
checkpoint is kept in it (:meth:`UpdateTracker.state_dict`), so its row is the one the
run would have written without the stop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from herkit.rundir.logs import RecordFile
from herkit.rundir.paths import RunPaths
from herkit.runtime.distributed import Context

__all__ = [
    "EPISODE_COLUMNS",
    "EpisodeTracker",
    "Means",
    "RunRecords",
    "UpdateTracker",
    "final_distances",
]

EPISODE_COLUMNS = ("env_steps", "rank", "env", "return", "length", "success", "final_distance")


class EpisodeTracker:
    """The return and length of each env's episode so far, and the rows of those ended."""

    def __init__(self, n_envs: int, rank: int = 0) -> None:
        self.rank = rank
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.rows: list[dict[str, Any]] = []

    def step(
        self,
        env_steps: int,
        reward: np.ndarray,
        done: np.ndarray,
        success: np.ndarray | None,
        next_obs: Mapping[str, Any],
    ) -> None:
        """Add one vector step; ``done`` marks the envs whose episode ended with it."""
        self.returns += reward
        self.lengths += 1
        if not done.any():
            return
        ended = np.flatnonzero(done)
        returns, lengths = self.returns[ended].tolist(), self.lengths[ended].tolist()
        won = [None] * len(ended) if success is None else (success[ended] > 0).astype(int).tolist()
        distance = final_distances(next_obs, ended)
        distances = [None] * len(ended) if distance is None else distance.tolist()
        for row in zip(ended.tolist(), returns, lengths, won, distances, strict=True):
            self.rows.append(dict(zip(EPISODE_COLUMNS, (env_steps, self.rank, *row), strict=True)))
        self.returns[ended] = 0.0
        self.lengths[ended] = 0

    def abandon(self) -> None:
        """Forget the episodes in progress (cut short by an env restart: not recorded)."""
        self.returns[:] = 0.0
        self.lengths[:] = 0

    def take(self) -> list[dict[str, Any]]:
        """The rows since the last call."""
        rows, self.rows = self.rows, []
        return rows


def final_distances(obs: Mapping[str, Any], envs: np.ndarray) -> np.ndarray | None:
    """``|achieved_goal - desired_goal|`` (flattened, Euclidean) of ``envs`` in a vector
    observation; None where the goals are not numeric arrays."""
    try:
        achieved = np.asarray(obs["achieved_goal"])[envs]
        desired = np.asarray(obs["desired_goal"])[envs]
    except (KeyError, IndexError, TypeError):
        return None
    if not all(
        np.issubdtype(goal.dtype, np.number) or goal.dtype == bool for goal in (achieved, desired)
    ):
        return None
    difference = achieved.astype(np.float64) - desired.astype(np.float64)
    return np.asarray(np.linalg.norm(difference.reshape(len(envs), -1), axis=1))


class Means:
    """Running means of named values (one update's metrics after another), interval by
    interval: :meth:`add` each, :meth:`take` the means and start again."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, values: Mapping[str, float]) -> None:
        """Add one set of values."""
        sums, counts = self.sums, self.counts
        for key, value in values.items():
            if key in sums:
                sums[key] += value
                counts[key] += 1
            else:
                sums[key], counts[key] = value, 1

    def take(self) -> dict[str, float]:
        """The mean of each name since the last call."""
        means = {key: self.sums[key] / self.counts[key] for key in self.sums}
        self.sums, self.counts = {}, {}
        return means

    def state_dict(self) -> dict[str, Any]:
        """The sums and counts of the interval so far (a checkpoint keeps them)."""
        return {"sums": dict(self.sums), "counts": dict(self.counts)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on with the interval of :meth:`state_dict`."""
        self.sums, self.counts = dict(state["sums"]), dict(state["counts"])


class UpdateTracker:
    """Means of the update metrics over intervals of ``every`` updates, one row each."""

    def __init__(self, every: int, bounds: Callable[[], tuple[float, float]]) -> None:
        self.every = every
        self.bounds = bounds
        self.rows: list[dict[str, Any]] = []
        self._start()

    def _start(self) -> None:
        self.means = Means()
        self.q_min, self.q_max = np.inf, -np.inf

    def add(self, metrics: Mapping[str, float], updates: int, env_steps: int) -> None:
        """One update's metrics; ``updates`` counts it. A row at every ``every``-th."""
        self.means.add(metrics)
        if "q_min" in metrics:
            self.q_min = min(self.q_min, metrics["q_min"])
            self.q_max = max(self.q_max, metrics["q_max"])
        if updates % self.every == 0:
            low, high = self.bounds()
            row: dict[str, Any] = {"updates": updates, "env_steps": env_steps}
            means = self.means.take()
            row |= {key: means[key] for key in means if key not in ("q_min", "q_max")}
            row |= {"q_min": self.q_min, "q_max": self.q_max, "q_low": low, "q_high": high}
            self.rows.append(row)
            self._start()

    def take(self) -> list[dict[str, Any]]:
        """The rows since the last call."""
        rows, self.rows = self.rows, []
        return rows

    def state_dict(self) -> dict[str, Any]:
        """The interval in progress: its means so far and its Q range (rows written at a
        checkpoint are not part of it)."""
        return {"means": self.means.state_dict(), "q_min": self.q_min, "q_max": self.q_max}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on with the interval of :meth:`state_dict`."""
        self.means.load_state_dict(state["means"])
        self.q_min, self.q_max = float(state["q_min"]), float(state["q_max"])


class RunRecords:
    """A run's episode and update records and their files (written by rank 0).

    ``resumed_at`` (a resumed run): the checkpoint's ``(env_steps, updates)``; the files'
    rows after it are dropped.
    """

    def __init__(
        self,
        run_dir: Path,
        n_envs: int,
        log_updates_every: int,
        context: Context,
        bounds: Callable[[], tuple[float, float]],
        resumed_at: tuple[int, int] | None = None,
    ) -> None:
        self.context = context
        self.episodes = EpisodeTracker(n_envs, context.rank)
        self.updates = UpdateTracker(log_updates_every, bounds)
        self.files: tuple[RecordFile, RecordFile] | None = None
        if context.is_main:
            steps, updates = resumed_at if resumed_at is not None else (None, None)
            self.files = (
                RecordFile(RunPaths(run_dir).episodes, "env_steps", EPISODE_COLUMNS, steps),
                RecordFile(RunPaths(run_dir).updates, "updates", resume_after=updates),
            )

    def updated(self, metrics: Mapping[str, float], updates: int, env_steps: int) -> None:
        """One gradient update's metrics (kept on rank 0 only)."""
        if self.files is not None:
            self.updates.add(metrics, updates, env_steps)

    def write(self) -> None:
        """Append the rows so far; every rank calls it at the same iteration."""
        gathered = self.context.gather_objects(self.episodes.take())
        if self.files is not None:
            episodes = sorted(
                (row for rows in gathered for row in rows), key=lambda row: row["env_steps"]
            )
            self.files[0].append(episodes)
            self.files[1].append(self.updates.take())
