"""Goal-conditioned mountain car: the classic dynamics, with a target position as the goal.

Dynamics and constants are gymnasium's ``MountainCar-v0`` (force ``0.001``, gravity
``0.0025``, positions ``[-1.2, 0.6]``, speeds ``[-0.07, 0.07]``, ``Discrete(3)`` actions
push left, do nothing, push right; start position uniform in ``[-0.6, -0.4]`` at rest). The
goal is a position drawn uniformly from ``[goal_low, goal_high]`` (default ``[-1.1, 0.5]``:
from near the left wall to the original flag) each episode, redrawn while the car would
start on it. Success is ``|position - goal| < distance_threshold`` (default ``0.05``):
the success window is ``0.1`` wide and a step moves the car at most ``0.07``, so the car
cannot jump over a goal it drives through. The episode terminates on success and is
truncated after 200 steps by the registered ``herkit/MountainCarGoal-v0``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs.core import GoalEnv, GoalObs, goal_observation_space

__all__ = ["MountainCarGoalEnv"]

MIN_POSITION = -1.2
"""Left end of the track (a wall: the car stops there)."""
MAX_POSITION = 0.6
"""Right end of the track."""
MAX_SPEED = 0.07
"""Largest absolute velocity."""
FORCE = 0.001
"""Acceleration of a push."""
GRAVITY = 0.0025
"""Gravity coefficient of the ``cos(3 * position)`` slope."""


class MountainCarGoalEnv(GoalEnv[np.int64]):
    """Mountain car that must reach a goal position drawn each episode.

    - observation: ``(position, velocity)`` float32;
    - achieved_goal: ``[position]``; desired_goal: ``[goal position]`` (float32, shape 1);
    - action: ``Discrete(3)``: 0 push left, 1 no push, 2 push right;
    - reward ``0`` when ``|position - goal| < distance_threshold``, else ``-1``;
      ``terminated`` on success.
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    terminates_on_success = True
    metadata = {"render_modes": ["ansi"], "render_fps": 30}  # noqa: RUF012

    def __init__(
        self,
        distance_threshold: float = 0.05,
        goal_low: float = -1.1,
        goal_high: float = 0.5,
        render_mode: str | None = None,
    ) -> None:
        """Build the env; goals are uniform in ``[goal_low, goal_high]``."""
        if not np.isfinite(distance_threshold) or distance_threshold <= 0:
            raise ValueError(f"distance_threshold must be > 0, got {distance_threshold!r}")
        if not MIN_POSITION <= goal_low < goal_high <= MAX_POSITION:
            raise ValueError(
                f"need {MIN_POSITION} <= goal_low < goal_high <= {MAX_POSITION}, "
                f"got goal_low={goal_low!r}, goal_high={goal_high!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.distance_threshold = float(distance_threshold)
        self.goal_low = float(goal_low)
        self.goal_high = float(goal_high)
        self.render_mode = render_mode
        observation = gym.spaces.Box(
            np.array([MIN_POSITION, -MAX_SPEED], dtype=np.float32),
            np.array([MAX_POSITION, MAX_SPEED], dtype=np.float32),
            dtype=np.float32,
        )
        position = gym.spaces.Box(MIN_POSITION, MAX_POSITION, (1,), np.float32)
        self.observation_space = goal_observation_space(observation, position)
        self.action_space = gym.spaces.Discrete(3)
        self._position = -0.5
        self._velocity = 0.0
        self._goal = np.zeros(1, dtype=np.float32)

    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """``0`` where the positions are closer than ``distance_threshold``, else ``-1``."""
        achieved = np.asarray(achieved_goal, dtype=np.float64)
        desired = np.asarray(desired_goal, dtype=np.float64)
        distance = np.abs(achieved - desired)[..., 0]
        return -(distance >= self.distance_threshold).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[GoalObs, dict[str, Any]]:
        """Start at rest in ``[-0.6, -0.4]`` with a goal the car is not already at."""
        super().reset(seed=seed)
        self._position = float(self.np_random.uniform(-0.6, -0.4))
        self._velocity = 0.0
        start = np.array([self._position], dtype=np.float32)
        while True:
            goal = self.np_random.uniform(self.goal_low, self.goal_high)
            self._goal = np.array([goal], dtype=np.float32)
            if not self.is_success(start, self._goal):
                break
        obs = self._obs()
        return obs, self._outcome(obs)[1]

    def step(self, action: np.int64) -> tuple[GoalObs, float, bool, bool, dict[str, Any]]:
        """Apply gymnasium's MountainCar update for one push."""
        index = int(action)
        if not 0 <= index < 3:
            raise ValueError(f"action must be in [0, 3), got {action!r}")
        velocity = self._velocity + (index - 1) * FORCE - math.cos(3 * self._position) * GRAVITY
        velocity = min(max(velocity, -MAX_SPEED), MAX_SPEED)
        position = min(max(self._position + velocity, MIN_POSITION), MAX_POSITION)
        if position == MIN_POSITION and velocity < 0:
            velocity = 0.0
        self._position, self._velocity = position, velocity
        obs = self._obs()
        reward, info = self._outcome(obs)
        return obs, reward, bool(info["is_success"]), False, info

    def render(self) -> str | None:
        """Position, velocity and goal as text when ``render_mode="ansi"``."""
        if self.render_mode != "ansi":
            return None
        return (
            f"position {self._position:+.3f}  velocity {self._velocity:+.4f}  "
            f"goal {float(self._goal[0]):+.3f}\n"
        )

    def _obs(self) -> GoalObs:
        """A fresh observation dict."""
        return {
            "observation": np.array([self._position, self._velocity], dtype=np.float32),
            "achieved_goal": np.array([self._position], dtype=np.float32),
            "desired_goal": self._goal.copy(),
        }
