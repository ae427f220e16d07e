"""A 2-D point that must reach a goal position: a fast, dependency-free stand-in for FetchReach.

The point lives in ``[-1, 1]^2``; an action in ``Box(-1, 1, (2,))`` is a velocity, scaled by
``0.1`` per step, and the position is clipped to the box. Start and goal are uniform in the
box (the goal is redrawn while the episode would start solved). Success is a distance below
``distance_threshold`` (default ``0.05``). As in the Fetch tasks the episode does not
terminate on success: it is only truncated, after 50 steps by the registered
``herkit/PointReach-v0`` (the class itself never truncates).

``render_mode="rgb_array"`` draws the arena (``y`` up), the goal as a circle of radius
``distance_threshold`` (green once reached, red before) and the point as a blue dot.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs import drawing
from herkit.envs.core import DrawnGoalEnv, GoalObs, goal_observation_space

__all__ = ["PointReachEnv"]

SPEED = 0.1
"""Distance moved per step by a full action (``|action| = 1`` on an axis)."""

FRAME_SIZE = 256
"""Height and width of an ``rgb_array`` frame."""
MARGIN = 16
"""Pixels between the frame's edge and the arena ``[-1, 1]^2``."""
BACKGROUND: drawing.Color = drawing.LIGHT_GREY
"""Colour outside the arena."""
POINT_COLOR: drawing.Color = drawing.BLUE
"""Colour of the point."""
POINT_RADIUS = 4
"""Radius of the point's dot, in pixels."""
GOAL_COLOR: drawing.Color = drawing.RED
"""Colour of the goal circle while the point is outside it."""
GOAL_FILL: drawing.Color = (250, 205, 205)
"""Colour inside the goal circle while the point is outside it."""
REACHED_COLOR: drawing.Color = drawing.GREEN
"""Colour of the goal circle once the point is inside it (success)."""
REACHED_FILL: drawing.Color = (200, 238, 205)
"""Colour inside the goal circle once the point is inside it."""


class PointReachEnv(DrawnGoalEnv[NDArray[np.float32]]):
    """Point-mass reaching in ``[-1, 1]^2`` with a sparse reward.

    - observation: ``(x, y, vx, vy)`` float32, where ``(vx, vy)`` is the displacement of the
      last step (``0.1 * action``, less where the box stopped it; zero after reset);
    - achieved_goal: the position ``(x, y)``; desired_goal: the goal position;
    - action: ``Box(-1, 1, (2,))`` velocity (out-of-range actions are clipped);
    - reward ``0`` when ``||position - goal|| < distance_threshold``, else ``-1``;
      ``info["is_success"]`` says the same. Never terminated (Fetch-style);
    - ``render_mode``: ``"ansi"`` (text) or ``"rgb_array"`` (256 x 256 frames).
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 10}  # noqa: RUF012

    def __init__(self, distance_threshold: float = 0.05, render_mode: str | None = None) -> None:
        """Build the env; success is a distance to the goal below ``distance_threshold``."""
        if not np.isfinite(distance_threshold) or distance_threshold <= 0:
            raise ValueError(f"distance_threshold must be > 0, got {distance_threshold!r}")
        self._set_render_mode(render_mode)
        self.distance_threshold = float(distance_threshold)
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

    def compute_reward_torch(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """:meth:`compute_reward` for torch tensors (on any device; float64 distances)."""
        from herkit.envs.torch_rewards import GoalDistanceReward

        return GoalDistanceReward(self.distance_threshold, inclusive=True)(
            achieved_goal, desired_goal
        )

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

    def _render_text(self) -> str:
        """The point, the goal and their distance, on one line."""
        x, y = self._position
        gx, gy = self._goal
        distance = float(np.linalg.norm(self._position - self._goal))
        return f"point ({x:+.3f}, {y:+.3f})  goal ({gx:+.3f}, {gy:+.3f})  distance {distance:.3f}\n"

    @staticmethod
    def _pixel(position: ArrayLike) -> tuple[float, float]:
        """Pixel coordinates ``(x, y)`` (column, row) of an arena position ``(x, y)``."""
        x, y = np.asarray(position, dtype=np.float64).reshape(2)
        scale = (FRAME_SIZE - 1 - 2 * MARGIN) / 2.0
        return MARGIN + (x + 1.0) * scale, MARGIN + (1.0 - y) * scale

    def _render_frame(self) -> drawing.Frame:
        """The ``rgb_array`` frame: the arena ``[-1, 1]^2`` (``x`` right, ``y`` up) in white,
        the goal as a circle of radius ``distance_threshold`` around a dot (red, green once
        reached; at least 2 pixels) and the point as a blue dot on top."""
        frame = drawing.blank(FRAME_SIZE, FRAME_SIZE, BACKGROUND)
        low, high = MARGIN, FRAME_SIZE - MARGIN
        drawing.fill_rect(frame, low, low, high, high, drawing.WHITE)
        drawing.draw_rect(frame, low - 2, low - 2, high + 2, high + 2, drawing.DARK_GREY, 2)
        reached = bool(self.is_success(self._position.astype(np.float32), self._goal))
        scale = (FRAME_SIZE - 1 - 2 * MARGIN) / 2.0
        radius = max(self.distance_threshold * scale, 2.0)
        goal_x, goal_y = self._pixel(self._goal)
        drawing.fill_circle(frame, goal_x, goal_y, radius, REACHED_FILL if reached else GOAL_FILL)
        color = REACHED_COLOR if reached else GOAL_COLOR
        drawing.draw_circle(frame, goal_x, goal_y, radius, color, 2)
        drawing.fill_circle(frame, goal_x, goal_y, 1.5, color)
        point_x, point_y = self._pixel(self._position)
        drawing.fill_circle(frame, point_x, point_y, POINT_RADIUS, POINT_COLOR)
        return frame

    def _obs(self) -> GoalObs:
        """A fresh observation dict."""
        position = self._position.astype(np.float32)
        return {
            "observation": np.concatenate([position, self._velocity.astype(np.float32)]),
            "achieved_goal": position,
            "desired_goal": self._goal.copy(),
        }
