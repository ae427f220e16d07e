"""The counters of a training run (:class:`LoopState`, saved in every checkpoint), the
learner's metrics between two rows of ``progress.csv`` (:class:`Metrics`), and what the
run's ``progress.csv`` rows and ``summary.json`` say of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from herkit.config.train import TrainConfig
from herkit.rundir.records import Means

__all__ = [
    "LAST_EVALUATIONS",
    "LoopState",
    "Metrics",
    "last_evaluations",
    "progress_row",
    "summary_of",
    "target_reached",
    "target_rule",
]


@dataclass
class LoopState:
    """Counters of a run; saved in every checkpoint."""

    phase: str = "online"
    """``offline`` while a run trains on its dataset alone (its clock: gradient steps),
    ``online`` once it steps envs (its clock: env steps); read and written by
    :class:`~herkit.training.phase.Phase` alone."""
    env_steps: int = 0
    updates: int = 0
    updates_offline: int = 0
    """Gradient steps made on the dataset alone before the run's first env step (0 for a
    run without a dataset phase); written by :class:`~herkit.training.phase.Phase`."""
    episodes: int = 0
    wall_s: float = 0.0
    eval_s: float = 0.0
    owed_updates: float = 0.0
    next_eval: int = 0
    next_checkpoint: int = 0
    next_video: int = 0
    success_rate: float = float("nan")
    solved_at_env_steps: int | None = None
    solved_at_updates: int | None = None
    solved_at_wall_s: float | None = None
    recent_success: list[float] = field(default_factory=list)
    """The success rates of the latest evaluations (as many as ``target_evaluations``)."""
    resets: int = 0
    env_restarts: int = 0


@dataclass
class Metrics:
    """Training losses and episode successes since the last row of progress.csv."""

    losses: Means = field(default_factory=Means)
    episode_successes: list[float] = field(default_factory=list)

    def take(self) -> dict[str, float]:
        """The means so far (and the training success rate); starts a new interval."""
        means = self.losses.take()
        if self.episode_successes:
            means["train_success_rate"] = float(np.mean(self.episode_successes))
        self.episode_successes = []
        return means

    def state_dict(self) -> dict[str, Any]:
        """The interval so far (a checkpoint keeps it: the next row after a resume is the
        one the run would have logged without the stop)."""
        return {
            "losses": self.losses.state_dict(),
            "episode_successes": list(self.episode_successes),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on with the interval of :meth:`state_dict`."""
        self.losses.load_state_dict(state["losses"])
        self.episode_successes = [float(x) for x in state["episode_successes"]]


def progress_row(state: LoopState, metrics: dict[str, float], episodes: int) -> dict[str, float]:
    """The row of ``progress.csv`` for an evaluation at ``state``."""
    return {
        "env_steps": state.env_steps,
        "updates": state.updates,
        "episodes": episodes,
        "wall_s": state.wall_s,
        "eval_s": state.eval_s,
        "sps": state.env_steps / max(state.wall_s, 1e-9),
        "ups": state.updates / max(state.wall_s, 1e-9),
        "success_rate": state.success_rate,
        **metrics,
    }


LAST_EVALUATIONS = 3
"""How many of a phase's last evaluations ``summary.json``'s ``success_rate_last3`` averages
(OGBench reports the mean of the last three)."""


def summary_of(
    config: TrainConfig,
    state: LoopState,
    world_size: int,
    evaluations: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """What ``summary.json`` says of a run at ``state`` (its figures rounded to what they
    are worth: a success rate of 20 episodes to 4 places): how it drew its goals (HER's
    strategy, or an offline agent's goal mixes), the last evaluation's success rate and the
    mean of the last :data:`LAST_EVALUATIONS` of ``evaluations`` (:func:`last_evaluations`:
    the progress.csv rows of the phase the run is in)."""
    goals = config.goal_mixes() if config.entry().offline else {"strategy": config.her_name()}
    summary: dict[str, Any] = {
        "env_id": config.env_id,
        "algo": config.algo,
        **goals,
        "seed": config.seed,
        "success_rate": round(state.success_rate, 4),
        **last_evaluations(evaluations),
        "env_steps": state.env_steps,
        "updates": state.updates,
        "wall_s": round(state.wall_s, 3),
        "world_size": world_size,
        "env_restarts": state.env_restarts,
    }
    if config.dataset is not None:
        summary |= {"dataset": config.dataset, "offline_steps": config.offline_steps}
    if config.target_success is not None:
        summary["target_rule"] = target_rule(config)
    if state.solved_at_env_steps is not None:
        summary["solved_at_env_steps"] = state.solved_at_env_steps
        if state.solved_at_updates is not None:
            summary["solved_at_updates"] = state.solved_at_updates
        summary["solved_at_wall_s"] = round(state.solved_at_wall_s or 0.0, 3)
    return summary


def last_evaluations(rows: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """``summary.json``'s figures of the evaluations ``rows`` (progress.csv rows, in order):
    ``success_rate_last3``, the mean success rate of the last :data:`LAST_EVALUATIONS` (of
    them all where there are fewer), and ``success_rate_last3_at``, the steps they were
    made at (the rows' ``updates`` while a run trains on its dataset alone, else
    ``env_steps``); on an env with evaluation tasks also ``success_rate_by_task`` (the last
    evaluation's, task 1 first) and ``success_rate_last3_by_task``. Nothing for no rows."""
    last = list(rows)[-LAST_EVALUATIONS:]
    if not last:
        return {}
    offline = all(float(row["env_steps"]) == 0 for row in last)
    clock = "updates" if offline else "env_steps"
    figures: dict[str, Any] = {
        "success_rate_last3": _mean(row["success_rate"] for row in last),
        "success_rate_last3_at": [int(float(row[clock])) for row in last],
    }
    tasks = sorted(
        (int(name.removeprefix("success_task_")), name)
        for name in last[-1]
        if name.startswith("success_task_")
    )
    if tasks:
        figures["success_rate_by_task"] = [round(float(last[-1][name]), 4) for _, name in tasks]
        figures["success_rate_last3_by_task"] = [
            _mean(row[name] for row in last if name in row) for _, name in tasks
        ]
    return figures


def _mean(cells: Any) -> float:
    """The mean of progress.csv cells (numbers as text), rounded to 4 places."""
    return round(float(np.mean([float(cell) for cell in cells])), 4)


def target_rule(config: TrainConfig) -> str:
    """When a run with ``--target-success`` stops, in words (``summary.json``)."""
    n = config.target_evaluations
    if n == 1:
        return f"the first evaluation with success >= {config.target_success:g}"
    return f"the mean success of {n} evaluations in a row >= {config.target_success:g}"


def target_reached(config: TrainConfig, state: LoopState) -> bool:
    """Whether the evaluation just made (``state.success_rate``) reaches the target: the
    mean of the latest ``target_evaluations`` evaluations, all made, at least the target."""
    if config.target_success is None:
        return False
    n = config.target_evaluations
    state.recent_success = [*state.recent_success, state.success_rate][-n:]
    mean = float(np.mean(state.recent_success))
    return len(state.recent_success) == n and mean >= config.target_success
