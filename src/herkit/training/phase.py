"""The run's phase and its clock, and what is due at it: :class:`Phase`.

A run has up to two phases. With a dataset, ``offline_steps`` gradient steps on it alone,
counted in gradient steps; then ``steps`` env steps in the env (the dataset kept in the
buffer), counted in env steps; a run without a dataset steps its envs from the start.
:class:`Phase` is the one reader and writer of which phase a run is in
(``LoopState.phase``, saved in every checkpoint): the loop, the run, its outputs, its
learner, its start and its stop ask it for

- the clock: the step of the phase (:attr:`Phase.step`), its unit, its length, the run's
  position in words, the column that progress.csv and TensorBoard follow;
- what is due at that clock (:meth:`Phase.due`): after each step (a gradient step of the
  first phase, an env step stored of the second) an evaluation at each multiple of
  ``eval_every`` steps of the clock, a checkpoint at each multiple of ``checkpoint_every``,
  both at the end of each phase, and a checkpoint alone when a signal asks the run to
  stop; a video (where the run records them) at each multiple of ``video_every``, and at
  the last step. Where a step moves the clock past a multiple (a loop iteration stores
  ``n_envs`` env steps), what is due there is done once, and the next is due at the next
  multiple above the step reached: the steps at which each is due are a function of the
  step alone, never of the run's history. The next steps at which each is due are counters
  of :class:`~herkit.training.state.LoopState`, saved in every checkpoint, so a resumed run
  keeps the same schedule;
- the move from the first phase to the second (:meth:`Phase.go_online`): the clock counts
  env steps from there, and what is due starts again at the multiples above them;
- the key of an evaluation's or a video's episodes (:meth:`Phase.episode_key`): the run's
  seed, the envs' offset, the phase and its clock, so that each evaluation plays episodes
  of its own (as OGBench's do: the mean of the last three is over three times the
  episodes) and a resumed run plays the episodes the whole run plays at that step;
- whether updates wait for a warm-up (:attr:`Phase.warmup_steps`): none after gradient
  steps on a dataset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from herkit.config.train import TrainConfig
from herkit.runtime.console import StopOnSignal
from herkit.runtime.distributed import Context
from herkit.training.state import LoopState

__all__ = ["Due", "Phase", "check_steps_left", "first_state", "saved_state"]

OFFLINE, ONLINE = "offline", "online"
"""The values of ``LoopState.phase``: gradient steps on a dataset alone, then env steps."""


def first_state(config: TrainConfig) -> LoopState:
    """The counters of a new run with ``config``: offline first where it has gradient steps
    on a dataset to make."""
    return LoopState(
        phase=OFFLINE if config.offline_steps else ONLINE,
        next_eval=config.eval_every,
        next_checkpoint=config.checkpoint_every,
        next_video=config.video_every,
    )


def saved_state(loop: dict[str, Any], config: TrainConfig) -> LoopState:
    """The counters a checkpoint saved (``loop``), for a run with ``config``: a checkpoint
    written before runs had phases is offline where its run trained on a dataset and made
    no env step."""
    if "phase" not in loop:
        loop = loop | {"phase": OFFLINE if config.dataset and not loop["env_steps"] else ONLINE}
    return LoopState(**loop)


def check_steps_left(run_dir: Path, loop: dict[str, Any], config: TrainConfig) -> None:
    """ValueError unless the run in ``run_dir``, whose checkpoint saved the counters
    ``loop``, has steps left with ``config``: gradient steps on its dataset before
    ``config.offline_steps``, or env steps before ``config.steps``."""
    state = saved_state(loop, config)
    if state.phase == OFFLINE:
        if state.updates < config.offline_steps or config.steps:
            return
        raise ValueError(
            f"run {str(run_dir)!r} has already trained {state.updates:,} gradient steps on its "
            f"dataset (--offline-steps {config.offline_steps}): pass a larger --offline-steps "
            "to extend it, or --steps N to go on for N env steps in the env"
        )
    if state.env_steps >= config.steps:
        raise ValueError(
            f"run {str(run_dir)!r} has already trained {state.env_steps} env steps (--steps "
            f"{config.steps}): pass a larger --steps to extend it"
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


class Phase:
    """The phase of a run with ``config`` whose counters are ``state``: its clock, what is
    due at it, and the move online (see the module's docstring)."""

    def __init__(self, config: TrainConfig, state: LoopState, context: Context) -> None:
        if state.phase not in (OFFLINE, ONLINE):
            raise ValueError(f"state.phase must be {OFFLINE!r} or {ONLINE!r}, got {state.phase!r}")
        self.steps = config.steps
        self.offline_steps = config.offline_steps
        self.eval_every = config.eval_every
        self.checkpoint_every = config.checkpoint_every
        self.video_every = config.video_every
        self.seed = config.seed
        self.config_warmup_steps = config.warmup_steps
        self.state = state
        self.context = context
        self.steps_per_iteration = config.n_envs * context.world_size

    # --- the clock

    @property
    def offline(self) -> bool:
        """Whether the run trains on its dataset alone (no env stepped yet)."""
        return self.state.phase == OFFLINE

    @property
    def step(self) -> int:
        """The phase's clock: gradient steps made while the run trains on its dataset
        alone, else env steps."""
        return self.state.updates if self.offline else self.state.env_steps

    @property
    def length(self) -> int:
        """Where the phase's clock ends: ``offline_steps`` gradient steps, or ``steps`` env
        steps."""
        return self.offline_steps if self.offline else self.steps

    @property
    def unit(self) -> str:
        """What the clock counts, in words: ``gradient steps`` or ``env steps``."""
        return "gradient steps" if self.offline else "env steps"

    @property
    def step_key(self) -> str:
        """The column of progress.csv the clock is (TensorBoard's step): ``updates`` or
        ``env_steps``."""
        return "updates" if self.offline else "env_steps"

    @property
    def tensorboard_step(self) -> int:
        """TensorBoard's step now, one axis for the whole run: gradient steps while the run
        trains on its dataset alone, then those gradient steps plus the env steps made
        (an online point at step ``G + E`` is ``E`` env steps after ``G`` gradient steps on
        the dataset; ``E`` alone for a run without a dataset phase). It rises over both
        phases, so that a resume drops only the points logged after its checkpoint."""
        return self.state.updates if self.offline else self.state.updates_offline + self.step

    @property
    def budget_flag(self) -> str:
        """The flag that sets the phase's length: ``--offline-steps`` or ``--steps``."""
        return "--offline-steps" if self.offline else "--steps"

    @property
    def position(self) -> str:
        """Where the run is, in words: ``gradient step 500`` or ``env step 1,234``."""
        return f"{self.unit.removesuffix('s')} {self.step:,}"

    @property
    def steps_done(self) -> str:
        """How far the run has come, in words: ``500 gradient steps`` or ``1,234 env
        steps``."""
        return f"{self.step:,} {self.unit}"

    def logged_in_phase(self, row: Mapping[str, str]) -> bool:
        """Whether the progress.csv ``row`` was logged in the phase the run is in: at 0 env
        steps while it trains on its dataset alone, after its first env step once online."""
        return (float(row["env_steps"]) == 0) == self.offline

    def planned(self) -> int:
        """Where the run will be once the updates owed have run (they run before anything
        due is done): its clock, and the gradient steps owed while it trains on a dataset."""
        owed = math.ceil(self.state.owed_updates) if self.offline else 0
        return self.step + owed

    @property
    def offline_done(self) -> bool:
        """Whether the run's gradient steps on its dataset alone are done (or it has none)."""
        return not self.offline or self.planned() >= self.offline_steps

    # --- seeds and warm-up

    def episode_key(self, offset: int) -> tuple[int, int, int, int]:
        """The key of an evaluation or a video now, played on envs at ``offset`` to the
        run's seed (:class:`~herkit.training.parts.RunSeeds`): the run's seed, that offset,
        the phase (0 on the dataset alone, 1 online) and its clock. Its episodes' reset seeds
        are :func:`~herkit.training.evaluation.episode_seeds` of it: a function of where the
        run is, so that a resumed run plays the episodes the whole run plays there."""
        return (self.seed, offset, int(not self.offline), self.step)

    @property
    def warmup_steps(self) -> int:
        """The env steps stored before updates start: ``warmup_steps``, none for a run that
        trains on a dataset first (it has learned already)."""
        return 0 if self.offline_steps else self.config_warmup_steps

    # --- what is due

    def due(self, stop: StopOnSignal) -> Due:
        """What is due now (after a step)."""
        state = self.state
        now = self.planned()
        # a signal asks to stop: with torchrun asked every 16 iterations, so ranks stop alike
        interrupted = False
        if not self.context.active or (state.env_steps // self.steps_per_iteration) % 16 == 0:
            interrupted = not self.context.all_true(not stop.requested)
        if self.offline:
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
        """The dataset's gradient steps are done: the clock counts env steps from here (and
        TensorBoard's on from the gradient steps made), and the next evaluation, checkpoint
        and video are due at the next multiples of their intervals above the env steps so
        far."""
        state = self.state
        state.phase = ONLINE
        state.updates_offline = state.updates
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
