"""A 2-D point that must reach a goal position: a fast, dependency-free stand-in for FetchReach.

The point lives in ``[-1, 1]^2``; an action in ``Box(-1, 1, (2,))`` is a velocity, scaled by
``0.1`` per step, and the position is clipped to the box. Start and goal are uniform in the
box (the goal is redrawn while the episode would start solved). Success is a distance below
``distance_threshold`` (default ``0.05``). As in the Fetch tasks the episode does not
terminate on success: it is only truncated, after 50 steps by the registered
``herkit/PointReach-v0`` (the class itself never truncates).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs.core import GoalEnv, GoalObs, goal_observation_space

__all__ = ["PointReachEnv"]

SPEED = 0.1
"""Distance moved per step by a full action (``|action| = 1`` on an axis)."""


class PointReachEnv(GoalEnv[NDArray[np.float32]]):
    """Point-mass reaching in ``[-1, 1]^2`` with a sparse reward.

    - observation: ``(x, y, vx, vy)`` float32, where ``(vx, vy)`` is the displacement of the
      last step (``0.1 * action``, less where the box stopped it; zero after reset);
    - achieved_goal: the position ``(x, y)``; desired_goal: the goal position;
    - action: ``Box(-1, 1, (2,))`` velocity (out-of-range actions are clipped);
    - reward ``0`` when ``||position - goal|| < distance_threshold``, else ``-1``;
      ``info["is_success"]`` says the same. Never terminated (Fetch-style).
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    metadata = {"render_modes": ["ansi"], "render_fps": 10}  # noqa: RUF012

    def __init__(self, distance_threshold: float = 0.05, render_mode: str | None = None) -> None:
        """Build the env; success is a distance to the goal below ``distance_threshold``."""
        if not np.isfinite(distance_threshold) or distance_threshold <= 0:
            raise ValueError(f"distance_threshold must be > 0, got {distance_threshold!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.distance_threshold = float(distance_threshold)
        self.render_mode = render_mode
        position = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        observation = gym.spaces.Box(
            np.array([-1.0, -1.0, -SPEED, -SPEED], dtype=np.float32),
            np.array([1.0, 1.0, SPEED, SPEED], dtype=np.float32),
            dtype=np.float32,
        )
        self.observation_space = goal_observation_space(observation, position)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._position = np.zeros(2)
        self._velocity = np.zeros(2)
        self._goal = np.zeros(2, dtype=np.float32)

    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """``0`` where the goals are closer than ``distance_threshold``, else ``-1`` (batched)."""
        achieved = np.asarray(achieved_goal, dtype=np.float64)
        desired = np.asarray(desired_goal, dtype=np.float64)
        distance = np.linalg.norm(achieved - desired, axis=-1)
        return -(distance >= self.distance_threshold).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[GoalObs, dict[str, Any]]:
        """Draw a uniform start position and a uniform goal not already reached."""
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-1.0, 1.0, 2)
        self._velocity = np.zeros(2)
        while True:
            self._goal = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
            if not self.is_success(self._position.astype(np.float32), self._goal):
                break
        obs = self._obs()
        return obs, self._outcome(obs)[1]

    def step(
        self, action: NDArray[np.float32]
    ) -> tuple[GoalObs, float, bool, bool, dict[str, Any]]:
        """Move by ``0.1 * clip(action, -1, 1)``, staying in the box."""
        velocity = SPEED * np.clip(np.asarray(action, dtype=np.float64).reshape(2), -1.0, 1.0)
        previous = self._position
        self._position = np.clip(previous + velocity, -1.0, 1.0)
        self._velocity = np.clip(self._position - previous, -SPEED, SPEED)
        obs = self._obs()
        reward, info = self._outcome(obs)
        return obs, reward, False, False, info

    def render(self) -> str | None:
        """Position, goal and distance as text when ``render_mode="ansi"``."""
        if self.render_mode != "ansi":
            return None
        x, y = self._position
        gx, gy = self._goal
        distance = float(np.linalg.norm(self._position - self._goal))
        return f"point ({x:+.3f}, {y:+.3f})  goal ({gx:+.3f}, {gy:+.3f})  distance {distance:.3f}\n"

    def _obs(self) -> GoalObs:
        """A fresh observation dict."""
        position = self._position.astype(np.float32)
        return {
            "observation": np.concatenate([position, self._velocity.astype(np.float32)]),
            "achieved_goal": position,
            "desired_goal": self._goal.copy(),
        }
