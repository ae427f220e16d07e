"""Every seed of a training run, from its ``--seed`` and the process's rank: :class:`RunSeeds`.

The training envs, the evaluation envs and the video env draw from disjoint seeds, so an
evaluation never replays a training episode; each rank of a torchrun run has its own;
and a full reset of the training envs after a resume or an env restart starts episodes
the run has not seen.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunSeeds"]


@dataclass(frozen=True)
class RunSeeds:
    """The seeds of the process of ``rank`` in a run seeded with ``seed``."""

    seed: int
    rank: int = 0

    @property
    def offset(self) -> int:
        """This rank's offset to the training and evaluation envs' seeds."""
        return 1_000 * self.rank

    @property
    def learner(self) -> int:
        """The seed of this rank's buffer, exploration and torch generator."""
        return self.seed + 100_003 * self.rank

    @property
    def training_offset(self) -> int:
        """The training envs' offset to ``seed`` (their action space is seeded with the sum)."""
        return self.offset

    @property
    def evaluation_offset(self) -> int:
        """The evaluation envs' offset to ``seed``."""
        return 10_000 + self.offset

    @property
    def video_offset(self) -> int:
        """The video env's offset to ``seed`` (rank 0 records)."""
        return 20_000

    def training_reset(self, resets: int, env_restarts: int) -> int:
        """The seed of a full reset of the training envs: new after each resume and restart."""
        return self.seed + self.training_offset + 7919 * resets + 104_729 * env_restarts

    def evaluation(self, env_steps: int) -> int:
        """The reset seed of the evaluation at ``env_steps``."""
        return self.seed + self.evaluation_offset + env_steps

    def video(self, env_steps: int) -> int:
        """The reset seed of the video recorded at ``env_steps``."""
        return self.seed + self.video_offset + env_steps
