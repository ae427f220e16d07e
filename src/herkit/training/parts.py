"""What a training run is made of: :class:`RunParts`, the components that
:func:`herkit.training.startup.start_run` builds (settings, env conventions, the process's
place in a torchrun group, envs, agent, buffer, seeds) and the loop works with.

Every seed of a run comes from its ``--seed`` and the process's rank (:class:`RunSeeds`):
the training envs, the evaluation envs and the video env draw from disjoint seeds, so an
evaluation never replays a training episode; each rank of a torchrun run has its own; and a
full reset of the training envs after a resume or an env restart starts episodes the run
has not seen."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from herkit.agents import Agent
from herkit.buffer.conventions import GoalConventions, SuccessSignal
from herkit.buffer.her import HerReplayBuffer
from herkit.config.train import TrainConfig
from herkit.envs.workers import WorkerVectorEnv
from herkit.runtime.distributed import Context

__all__ = ["RunParts", "RunSeeds"]


@dataclass(frozen=True)
class RunSeeds:
    """The seeds of the process of ``rank`` in a run seeded with ``seed``."""

    seed: int
    rank: int = 0

    @property
    def learner(self) -> int:
        """The seed of this rank's buffer, exploration and torch generator."""
        return self.seed + 100_003 * self.rank

    @property
    def training_offset(self) -> int:
        """The training envs' offset to ``seed``, this rank's own (their action space is
        seeded with the sum; the evaluation envs' is 10,000 more)."""
        return 1_000 * self.rank

    @property
    def evaluation_offset(self) -> int:
        """The evaluation envs' offset to ``seed`` (an evaluation's reset seed:
        :meth:`~herkit.training.phase.Phase.episode_key`)."""
        return 10_000 + self.training_offset

    @property
    def video_offset(self) -> int:
        """The video env's offset to ``seed`` (rank 0 records; a video's reset seed:
        :meth:`~herkit.training.phase.Phase.episode_key`)."""
        return 20_000

    def training_reset(self, resets: int, env_restarts: int) -> int:
        """The seed of a full reset of the training envs: new after each resume and restart."""
        return self.seed + self.training_offset + 7919 * resets + 104_729 * env_restarts


@dataclass(kw_only=True)
class RunParts:
    """The components of a run in progress. ``config`` and ``conventions`` are the run's
    as it started; whether episodes end on success is the buffer's (decided there at the
    env's first success where it was unknown)."""

    config: TrainConfig
    conventions: GoalConventions
    context: Context
    run_dir: Path
    envs: WorkerVectorEnv
    """The training envs of this rank."""
    eval_envs: WorkerVectorEnv
    video_envs: WorkerVectorEnv | None
    """One env that renders frames (rank 0, with ``--video-every``)."""
    agent: Agent
    buffer: HerReplayBuffer
    machine: dict[str, Any]
    """What config.json says of the machine: cores, the core plan, timed update modes."""
    seeds: RunSeeds
    overlap: bool
    """Whether the envs step while the networks update."""
    tasks: list[dict[str, Any] | None] = field(default_factory=lambda: [None])
    """The env's evaluation tasks, as reset options (:func:`~herkit.training.evaluation.
    evaluation_tasks`); ``[None]``: the goals the env draws."""
    success_of: SuccessSignal = field(init=False)
    """Reads success from a step's info or observation, by the env's convention."""

    def __post_init__(self) -> None:
        self.success_of = SuccessSignal(
            self.conventions.success_key,
            self.buffer.reward_fn,
            self.conventions.success_reward,
            self.config.her.info_keys,
        )

    @property
    def steps_per_iteration(self) -> int:
        """Env steps of one iteration of the loop, over all ranks."""
        return self.config.n_envs * self.context.world_size

    def close_envs(self) -> None:
        """Close every env of the run."""
        for envs in (self.envs, self.eval_envs, self.video_envs):
            if envs is not None:
                envs.close()
