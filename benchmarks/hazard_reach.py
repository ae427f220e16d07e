"""HazardReach: herkit's PointReach with a hazard in the middle, for the SB3 comparison.

A test env for the rules of relabelled samples, written as a user's reward wrapper: entering
the disc of radius 0.3 at the centre is a crash (-5 outside ``compute_reward``, the episode
ends), and so is reaching the goal; the env declares neither. ``hazard_reach:HazardReach-v0``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs.point_reach import PointReachEnv

__all__ = ["HAZARD_RADIUS", "PENALTY", "HazardReach"]

HAZARD_RADIUS = 0.3
"""Radius of the hazard disc around the arena's centre."""
PENALTY = -5.0
"""Added to the step reward of a crash (outside compute_reward)."""


class HazardReach(gym.Wrapper):  # type: ignore[type-arg]
    """PointReach with a hazard disc at the centre (see the module docstring)."""

    terminates_on_success = None
    """Declares nothing, though its episodes do end on success."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(PointReachEnv(**kwargs))

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """PointReach's sparse reward (the hazard's penalty is not part of it)."""
        return self.env.unwrapped.compute_reward(achieved_goal, desired_goal, info)

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """A start and a goal outside the hazard (redrawn until both are)."""
        obs, info = self.env.reset(**kwargs)
        inner = self.env.unwrapped
        while _inside(obs["achieved_goal"]) or _inside(obs["desired_goal"]):
            inner._position = inner.np_random.uniform(-1.0, 1.0, 2)
            inner._goal = inner.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
            obs = inner._obs()
            info = inner._outcome(obs)[1]
        return obs, info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """PointReach's step; a crash (penalised) or the goal ends the episode."""
        obs, reward, _, truncated, info = self.env.step(action)  # PointReach never ends
        crashed = _inside(obs["achieved_goal"])
        info = {**info, "crashed": float(crashed)}
        if crashed:
            reward += PENALTY
        return obs, reward, bool(crashed or info["is_success"]), truncated, info


def _inside(point: Any) -> bool:
    return bool(np.linalg.norm(np.asarray(point, dtype=np.float64)) < HAZARD_RADIUS)


gym.register("HazardReach-v0", entry_point=HazardReach, max_episode_steps=50)
