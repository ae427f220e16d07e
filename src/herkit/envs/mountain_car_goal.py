"""Goal-conditioned mountain car: the classic dynamics, with a target position as the goal.

Dynamics and constants are gymnasium's ``MountainCar-v0`` (force ``0.001``, gravity
``0.0025``, positions ``[-1.2, 0.6]``, speeds ``[-0.07, 0.07]``, ``Discrete(3)`` actions
push left, do nothing, push right; start position uniform in ``[-0.6, -0.4]`` at rest). The
goal is a position drawn uniformly from ``[goal_low, goal_high]`` (default ``[-1.1, 0.5]``:
from near the left wall to the original flag) each episode, redrawn while the car would
start on it; ``goal_low == goal_high`` gives one fixed goal (``0.5``: the flag of
gymnasium's MountainCar, the single goal of the classic task). Success is
``|position - goal| < distance_threshold`` (default ``0.05``):
the success window is ``0.1`` wide and a step moves the car at most ``0.07``, so the car
cannot jump over a goal it drives through. The episode terminates on success and is
truncated after 200 steps by the registered ``herkit/MountainCarGoal-v0``.

``render_mode="rgb_array"`` draws the hill (gymnasium's ``sin(3 x) * 0.45 + 0.55``), the
success window around the goal in green on the hill, a flag at the goal and the car.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs import drawing
from herkit.envs.core import DrawnGoalEnv, GoalObs, goal_observation_space

__all__ = ["START_HIGH", "START_LOW", "MountainCarGoalEnv", "hill_height"]

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

START_LOW = -0.6
"""Lowest start position (the car starts at rest, uniform in ``[START_LOW, START_HIGH]``)."""
START_HIGH = -0.4
"""Highest start position."""

FRAME_WIDTH = 384
"""Width of an ``rgb_array`` frame."""
FRAME_HEIGHT = 256
"""Height of an ``rgb_array`` frame."""
MARGIN = 16
"""Pixels left of ``MIN_POSITION`` and right of ``MAX_POSITION`` (and below height 0)."""
SCALE = (FRAME_WIDTH - 2 * MARGIN) / (MAX_POSITION - MIN_POSITION)
"""Pixels per unit, the same on both axes (so slopes look as steep as they are)."""
SKY: drawing.Color = drawing.WHITE
"""Colour above the hill."""
GROUND: drawing.Color = (225, 205, 165)
"""Colour under the hill."""
HILL_COLOR: drawing.Color = drawing.DARK_GREY
"""Colour of the hill's surface line."""
WINDOW_COLOR: drawing.Color = drawing.GREEN
"""Colour of the hill within ``distance_threshold`` of the goal."""
FLAG_COLOR: drawing.Color = (235, 200, 20)
"""Colour of the goal's flag."""
CAR_COLOR: drawing.Color = drawing.BLUE
"""Colour of the car's body."""
WHEEL_COLOR: drawing.Color = drawing.BLACK
"""Colour of the car's wheels."""


def hill_height(position: ArrayLike) -> NDArray[np.float64]:
    """Height of the track at ``position``, as in gymnasium: ``sin(3 x) * 0.45 + 0.55``."""
    return np.sin(3.0 * np.asarray(position, dtype=np.float64)) * 0.45 + 0.55


class MountainCarGoalEnv(DrawnGoalEnv[np.int64]):
    """Mountain car that must reach a goal position drawn each episode.

    - observation: ``(position, velocity)`` float32;
    - achieved_goal: ``[position]``; desired_goal: ``[goal position]`` (float32, shape 1);
    - action: ``Discrete(3)``: 0 push left, 1 no push, 2 push right;
    - reward ``0`` when ``|position - goal| < distance_threshold``, else ``-1``;
      ``terminated`` on success;
    - ``render_mode``: ``"ansi"`` (text) or ``"rgb_array"`` (frames 384 wide, 256 high).
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    terminates_on_success = True
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 30}  # noqa: RUF012

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
        if not MIN_POSITION <= goal_low <= goal_high <= MAX_POSITION:
            raise ValueError(
                f"need {MIN_POSITION} <= goal_low <= goal_high <= {MAX_POSITION}, "
                f"got goal_low={goal_low!r}, goal_high={goal_high!r}"
            )
        near_start = (START_LOW - distance_threshold, START_HIGH + distance_threshold)
        if near_start[0] <= goal_low and goal_high <= near_start[1]:
            raise ValueError(
                f"goal_low={goal_low!r}, goal_high={goal_high!r}: every goal would be within "
                f"distance_threshold={distance_threshold!r} of some start position in "
                f"[{START_LOW}, {START_HIGH}]; widen the range or move it away from the start"
            )
        self._set_render_mode(render_mode)
        self.distance_threshold = float(distance_threshold)
        self.goal_low = float(goal_low)
        self.goal_high = float(goal_high)
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

    def compute_reward_torch(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """:meth:`compute_reward` for torch tensors (on any device)."""
        distance = (achieved_goal.double() - desired_goal.double()).abs()[..., 0]
        return -(distance >= self.distance_threshold).float()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[GoalObs, dict[str, Any]]:
        """Start at rest in ``[-0.6, -0.4]`` with a goal the car is not already at."""
        super().reset(seed=seed)
        self._position = float(self.np_random.uniform(START_LOW, START_HIGH))
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

    def _render_text(self) -> str:
        """The position, velocity and goal, on one line."""
        return (
            f"position {self._position:+.3f}  velocity {self._velocity:+.4f}  "
            f"goal {float(self._goal[0]):+.3f}\n"
        )

    @staticmethod
    def _pixel(position: ArrayLike, height: ArrayLike) -> tuple[Any, Any]:
        """Pixel coordinates ``(x, y)`` (column, row) of track positions and heights."""
        x = MARGIN + (np.asarray(position, dtype=np.float64) - MIN_POSITION) * SCALE
        y = FRAME_HEIGHT - 1 - MARGIN - np.asarray(height, dtype=np.float64) * SCALE
        return x, y

    def _render_frame(self) -> drawing.Frame:
        """The ``rgb_array`` frame: the hill (ground under it), the stretch of hill within
        ``distance_threshold`` of the goal in green, a yellow flag at the goal and the car
        (blue, tilted with the slope)."""
        frame = drawing.blank(FRAME_HEIGHT, FRAME_WIDTH, SKY)
        # Ground: every pixel below the hill, column by column.
        cols = np.arange(MARGIN, FRAME_WIDTH - MARGIN)
        surface = self._pixel(0.0, hill_height(MIN_POSITION + (cols - MARGIN) / SCALE))[1]
        below = np.arange(FRAME_HEIGHT)[:, None] >= surface[None, :]
        frame[:, MARGIN : FRAME_WIDTH - MARGIN][below] = GROUND
        track = np.linspace(MIN_POSITION, MAX_POSITION, 4 * (FRAME_WIDTH - 2 * MARGIN))
        drawing.draw_polyline(frame, *self._pixel(track, hill_height(track)), HILL_COLOR, 2)
        # The success window on the hill, and the flag at the goal.
        goal = float(self._goal[0])
        low = max(goal - self.distance_threshold, MIN_POSITION)
        high = min(goal + self.distance_threshold, MAX_POSITION)
        window = np.linspace(low, high, 64)
        drawing.draw_polyline(frame, *self._pixel(window, hill_height(window)), WINDOW_COLOR, 4)
        flag_x, flag_y = self._pixel(goal, hill_height(goal))
        top = flag_y - 36.0
        drawing.draw_line(frame, flag_x, flag_y, flag_x, top, HILL_COLOR, 2)
        drawing.fill_polygon(
            frame, [flag_x, flag_x, flag_x + 22.0], [top, top + 12.0, top + 6.0], FLAG_COLOR
        )
        self._draw_car(frame)
        return frame

    def _draw_car(self, frame: drawing.Frame) -> None:
        """Draw the car on the hill at its position, tilted with the slope."""
        width, height, clearance = 26.0, 13.0, 6.0
        angle = math.atan(1.35 * math.cos(3.0 * self._position))  # slope of hill_height
        cos, sin = math.cos(angle), math.sin(angle)
        base_x, base_y = self._pixel(self._position, hill_height(self._position))

        def place(u: ArrayLike, v: ArrayLike) -> tuple[Any, Any]:
            """Pixel coordinates of car-frame points (``u`` along the slope, ``v`` up)."""
            u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
            return base_x + u * cos - v * sin, base_y - (u * sin + v * cos)

        corners_u = [-width / 2, width / 2, width / 2, -width / 2]
        corners_v = [clearance, clearance, clearance + height, clearance + height]
        drawing.fill_polygon(frame, *place(corners_u, corners_v), CAR_COLOR)
        for u in (-width / 4, width / 4):
            wheel_x, wheel_y = place(u, clearance)
            drawing.fill_circle(frame, float(wheel_x), float(wheel_y), height / 2.5, WHEEL_COLOR)

    def _obs(self) -> GoalObs:
        """A fresh observation dict."""
        return {
            "observation": np.array([self._position, self._velocity], dtype=np.float32),
            "achieved_goal": np.array([self._position], dtype=np.float32),
            "desired_goal": self._goal.copy(),
        }
