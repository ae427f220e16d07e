"""An env's ``compute_reward`` in torch, for replay buffers that keep their data on a device.

:func:`torch_reward_of` finds it: herkit's envs define ``compute_reward_torch``, and the
Fetch tasks of gymnasium-robotics get :class:`GoalDistanceReward` from their
``distance_threshold`` and ``reward_type``. Distances are computed in float64, as the
numpy rewards are, so both give the same reward for every pair of goals. An env with
neither gives None, and a buffer on a device then computes rewards with the numpy
``compute_reward`` on host copies (correct, with one round trip per batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from herkit.buffer.goal_env import first_env

__all__ = ["GoalDistanceReward", "torch_reward_of"]


class GoalDistanceReward:
    """``-(distance > threshold)`` (sparse) or ``-distance`` (dense), distance the
    Euclidean norm over the last axis; ``inclusive`` counts ``distance == threshold`` as
    too far (herkit's envs) rather than reached (gymnasium-robotics)."""

    def __init__(self, threshold: float, sparse: bool = True, inclusive: bool = False) -> None:
        self.threshold = float(threshold)
        self.sparse = bool(sparse)
        self.inclusive = bool(inclusive)

    def __call__(
        self, achieved: torch.Tensor, desired: torch.Tensor, info: Mapping[str, Any] | None = None
    ) -> torch.Tensor:
        """Rewards of a batch of goal pairs, float32 on the goals' device."""
        distance = torch.linalg.vector_norm(achieved.double() - desired.double(), dim=-1)
        if not self.sparse:
            return -distance.float()
        far = distance >= self.threshold if self.inclusive else distance > self.threshold
        return -far.float()


def torch_reward_of(env: Any) -> Any:
    """The torch form of ``env``'s reward (of the first env of a vector env), or None."""
    env = first_env(env)
    unwrapped = getattr(env, "unwrapped", env)
    method = getattr(unwrapped, "compute_reward_torch", None)
    if callable(method):
        return method
    module = type(unwrapped).__module__
    reward_type = getattr(unwrapped, "reward_type", None)
    threshold = getattr(unwrapped, "distance_threshold", None)
    if module.startswith("gymnasium_robotics.envs.fetch") and threshold is not None:
        if reward_type in ("sparse", "dense"):
            return GoalDistanceReward(threshold, sparse=reward_type == "sparse")
    return None
