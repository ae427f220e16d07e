"""When a run evaluates, records a video, checkpoints, goes online and stops: :class:`Schedule`.

A run has up to two phases, each with its own clock (:func:`~herkit.training.state.clock`):
with a dataset, ``offline_steps`` gradient steps on it alone, counted in gradient steps; then
``steps`` env steps, counted in env steps. After each step (a gradient step of the first
phase, an env step stored of the second) the loop asks what is due (:meth:`Schedule.due`):
an evaluation at each multiple of ``eval_every`` steps of the clock, a checkpoint at each
multiple of ``checkpoint_every``, both at the end of each phase, and a checkpoint alone when a
signal asks the run to stop; a video (where the run records them) at each multiple of
``video_every``, and at the last step. Where a step moves the clock past a multiple (a loop
iteration stores ``n_envs`` env steps), what is due there is done once, and the next is due
at the next multiple above the step reached: the steps at which each is due are a function of
the step alone, never of the run's history. The next steps at which each is due are counters
of :class:`~herkit.training.state.LoopState`, saved in every checkpoint, so a resumed run keeps
the same schedule; they start again at the second phase (:meth:`Schedule.go_online`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from herkit.config.train import TrainConfig
from herkit.runtime.console import StopOnSignal
from herkit.runtime.distributed import Context
from herkit.training.state import LoopState, clock

__all__ = ["Due", "Schedule", "first_state"]


def first_state(config: TrainConfig) -> LoopState:
    """The counters of a new run with ``config``."""
    return LoopState(
        phase="offline" if config.offline_steps else "online",
        next_eval=config.eval_every,
        next_checkpoint=config.checkpoint_every,
        next_video=config.video_every,
    )


@dataclass(frozen=True)
class Due:
    """What is due after a step."""

    interrupted: bool = False
    """A signal asked the run to stop: a checkpoint, and nothing else."""
    last: bool = False
    """The run ends after this (its steps are done, it was interrupted, or it reached its
    target)."""
    evaluate: bool = False
    checkpoint: bool = False
    video: bool = False
    """The step reached a multiple of ``video_every`` (the next one after the last video)."""

    @property
    def anything(self) -> bool:
        """Whether anything is due."""
        return self.last or self.evaluate or self.checkpoint


class Schedule:
    """The schedule of a run with ``config``, whose counters are ``state``."""

    def __init__(self, config: TrainConfig, state: LoopState, context: Context) -> None:
        self.steps = config.steps
        self.offline_steps = config.offline_steps
        self.eval_every = config.eval_every
        self.checkpoint_every = config.checkpoint_every
        self.video_every = config.video_every
        self.state = state
        self.context = context
        self.steps_per_iteration = config.n_envs * context.world_size

    def planned(self) -> int:
        """Where the run will be once the updates owed have run (they run before anything
        due is done): its clock, and the gradient steps owed while it trains on a dataset."""
        owed = math.ceil(self.state.owed_updates) if self.state.phase == "offline" else 0
        return clock(self.state) + owed

    @property
    def offline_done(self) -> bool:
        """Whether the run's gradient steps on its dataset alone are done (or it has none)."""
        return self.state.phase != "offline" or self.planned() >= self.offline_steps

    def due(self, stop: StopOnSignal) -> Due:
        """What is due now (after a step)."""
        state = self.state
        now = self.planned()
        # a signal asks to stop: with torchrun asked every 16 iterations, so ranks stop alike
        interrupted = False
        if not self.context.active or (state.env_steps // self.steps_per_iteration) % 16 == 0:
            interrupted = not self.context.all_true(not stop.requested)
        if state.phase == "offline":
            phase_over = now >= self.offline_steps
            last = interrupted or (phase_over and not self.steps)
        else:
            phase_over = last = interrupted or state.env_steps >= self.steps
        return Due(
            interrupted=interrupted,
            last=last,
            evaluate=not interrupted and (phase_over or now >= state.next_eval),
            checkpoint=last or phase_over or now >= state.next_checkpoint,
            video=now >= state.next_video,
        )

    def go_online(self) -> None:
        """The dataset's gradient steps are done: the clock counts env steps from here, and
        the next evaluation, checkpoint and video are due at the next multiples of their
        intervals above the env steps so far."""
        state = self.state
        state.phase = "online"
        state.next_eval = self._next(self.eval_every)
        state.next_checkpoint = self._next(self.checkpoint_every)
        state.next_video = self._next(self.video_every)

    def evaluated(self, due: Due, target_reached: bool) -> Due:
        """What is due after the evaluation ``due`` asked for (the run ends once its
        target is reached); the next evaluation is due at the next multiple of
        ``eval_every`` above the step reached."""
        self.state.next_eval = self._next(self.eval_every)
        return replace(due, last=True, checkpoint=True) if target_reached else due

    def video_due(self, due: Due) -> bool:
        """Whether a video is due (at each multiple of ``video_every``, and at the end)."""
        return not due.interrupted and (due.last or due.video)

    def recorded(self) -> None:
        """A video was recorded now: the next is due at the next multiple of
        ``video_every`` above the step reached."""
        self.state.next_video = self._next(self.video_every)

    def checkpointed(self, due: Due) -> None:
        """A checkpoint was written: the next is due at the next multiple of
        ``checkpoint_every`` above the step reached (an interrupted run's checkpoint moves
        nothing: the next regular one stays where it was)."""
        if not due.interrupted:
            self.state.next_checkpoint = self._next(self.checkpoint_every)

    def _next(self, every: int) -> int:
        """The first multiple of ``every`` above the step reached (the step itself for
        ``every`` 0: nothing is scheduled, as with no videos)."""
        now = self.planned()
        return (now // every + 1) * every if every > 0 else now
