"""A herkit :class:`~herkit.buffer.batch.Batch` as SB3's ``DictReplayBufferSamples``.

Observation dicts of the GoalEnv's three keys (the sample's goal as ``desired_goal`` of
both) and any extra keys, normalised by a VecNormalize env where one is given, rewards
``(B, 1)``, ``dones`` from the sample's terminal flag and, for n-step samples, the
``discounts`` that SB3's algorithms bootstrap with in place of ``gamma``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.type_aliases import DictReplayBufferSamples

from herkit.buffer.batch import Batch

__all__ = ["sb3_samples"]


def sb3_samples(
    batch: Batch,
    normalize_obs: Callable[[dict[str, np.ndarray]], Any],
    normalize_reward: Callable[[np.ndarray], Any],
    to_torch: Callable[[np.ndarray], Any],
) -> DictReplayBufferSamples:
    """``batch`` in SB3's form, through the buffer's normalisers and ``to_torch``."""
    raw = {
        "observation": batch.observation,
        "achieved_goal": batch.achieved_goal,
        "desired_goal": batch.goal,
        **(batch.extras or {}),
    }
    raw_next = {
        "observation": batch.next_observation,
        "achieved_goal": batch.next_achieved_goal,
        "desired_goal": batch.goal,
        **(batch.next_extras or {}),
    }
    observations, next_observations = normalize_obs(raw), normalize_obs(raw_next)
    reward = normalize_reward(batch.reward.reshape(-1, 1))
    discounts = {} if batch.discount is None else {"discounts": batch.discount.reshape(-1, 1)}
    return DictReplayBufferSamples(
        observations={key: to_torch(value) for key, value in observations.items()},
        actions=to_torch(batch.action),
        next_observations={key: to_torch(value) for key, value in next_observations.items()},
        dones=to_torch(batch.terminated.reshape(-1, 1)),
        rewards=to_torch(np.asarray(reward, dtype=np.float32)),
        **{key: to_torch(value) for key, value in discounts.items()},
    )
