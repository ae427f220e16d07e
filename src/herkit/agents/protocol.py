"""The :class:`Agent` protocol: what the training loop, evaluation and a loaded policy ask
of a goal-conditioned off-policy agent. An agent takes a :class:`herkit.Batch` and never
sees the replay buffer; :class:`herkit.agents.base.GoalAgent` implements this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from herkit.buffer.batch import Batch
from herkit.runtime.distributed import Context

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """What a trainer needs from a goal-conditioned off-policy agent."""

    device: torch.device
    """Device of the networks and of the tensors of an update."""
    priorities: torch.Tensor
    """``|TD error|`` per sample of the last :meth:`update` (for prioritized replay), on
    :attr:`device`."""

    def act(
        self, observation: np.ndarray, goal: np.ndarray, deterministic: bool = False
    ) -> np.ndarray:
        """Actions for ``(n, obs_dim)`` observations and ``(n, goal_dim)`` goals."""
        ...

    def update_normalizer(self, observation: np.ndarray, goal: np.ndarray) -> None:
        """Feed observations and goals to the running normalisers."""
        ...

    def update_goal_normalizer(self, goal: Any) -> None:
        """Feed goals alone (e.g. relabelled ones; an array or a tensor) to the goal
        normaliser."""
        ...

    def update(self, batch: Batch, count_goals: bool = False) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch`` and the target-network update (``count_goals``:
        the batch's goals fed to the goal normaliser first); returns its metrics as device
        tensors, with nothing read to the host."""
        ...

    @property
    def update_mode(self) -> str:
        """How updates run (eager, compiled, captured, compiled-captured)."""
        ...

    def attach_sampler(self, draw: Any, batch_size: int, reprioritize: Any = None) -> None:
        """Let :meth:`update_drawn` draw its batches on the device with ``draw`` (and set
        the priorities of what it drew with ``reprioritize``)."""
        ...

    def update_drawn(
        self, flags: dict[str, Any], count_goals: bool = False
    ) -> dict[str, torch.Tensor]:
        """:meth:`update` on a batch drawn within the update by the attached sampler."""
        ...

    def log_updates(self, keep: bool = True) -> None:
        """Keep every update's metrics on the device for :meth:`update_metrics`."""
        ...

    def update_metrics(self) -> list[dict[str, float]]:
        """The metrics of every update since the last call, read in one transfer."""
        ...

    @property
    def return_bounds(self) -> tuple[float, float]:
        """The range TD targets are clipped to (infinite where they are not)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume, loadable with ``torch.load(weights_only=True)``."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`."""
        ...

    def join(self, context: Context, exploration_seed: int) -> None:
        """Train data-parallel with the other ranks of ``context``."""
        ...

    def set_terminal_on_success(self, ends: bool | None) -> None:
        """Whether the env ends episodes on success (sets the reward scale)."""
        ...

    def parameters_agree(self) -> bool:
        """Whether every rank holds the same parameters."""
        ...
