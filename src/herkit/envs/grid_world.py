"""A goal-conditioned grid world: walk to a random goal cell of a ``size x size`` grid.

Cells are given as ``(row, col) / (size - 1)``, normalised coordinates in ``[0, 1]^2``, for
the observation and both goals: a small MLP (DQN) generalises over these across goals far
better than over one-hot cells, and relabelled goals are plain achieved positions.

``render_mode="rgb_array"`` draws the grid inside its border wall, the goal cell in green and
the agent as a blue disc (row 0 at the top, column 0 on the left, as in the ``ansi`` text).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.buffer.checks import check_int
from herkit.envs import drawing
from herkit.envs.core import DrawnGoalEnv, GoalObs, goal_observation_space

__all__ = ["GridWorldEnv"]

MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
"""``(d_row, d_col)`` of the actions 0 up, 1 down, 2 left, 3 right."""

WALL = 8
"""Thickness in pixels of the border wall drawn around the grid in an ``rgb_array`` frame."""
WALL_COLOR: drawing.Color = drawing.DARK_GREY
"""Colour of the border wall."""
LINE_COLOR: drawing.Color = drawing.LIGHT_GREY
"""Colour of the lines between cells."""
GOAL_COLOR: drawing.Color = drawing.GREEN
"""Fill of the goal cell."""
AGENT_COLOR: drawing.Color = drawing.BLUE
"""Colour of the agent's disc."""


class GridWorldEnv(DrawnGoalEnv[np.int64]):
    """Walk a ``size x size`` grid to a goal cell; border walls block moves.

    - observation, achieved_goal: the agent's cell ``(row, col) / (size - 1)`` as float32;
      desired_goal: the goal cell, the same way. Start and goal are random and different;
    - action: ``Discrete(4)``: 0 up, 1 down, 2 left, 3 right (a move into the border wall
      leaves the agent where it is);
    - reward ``0`` when the agent is on the goal cell, else ``-1``; cells are compared with
      a tolerance of half a cell, so float round-off never matters; ``terminated`` on
      success;
    - ``truncated`` after ``max_steps`` steps (default ``4 * size``: twice the longest
      shortest path ``2 * (size - 1)``, slack for epsilon-greedy exploration), counted inside
      the env because it depends on ``size``;
    - ``render_mode``: ``"ansi"`` (text) or ``"rgb_array"`` (square frames, 256 pixels a side
      for ``size <= 60``: ``240 // size`` pixels per cell, at least 4, inside an 8-pixel
      wall, rounded up to a multiple of 16).
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    terminates_on_success = True
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self, size: int = 8, max_steps: int | None = None, render_mode: str | None = None
    ) -> None:
        """Build the env; ``max_steps`` defaults to ``4 * size``."""
        check_int("size", size, 2)
        if max_steps is None:
            max_steps = 4 * int(size)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        self._set_render_mode(render_mode)
        self.size = int(size)
        self.max_steps = int(max_steps)
        cell = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.observation_space = goal_observation_space(cell, cell)
        self.action_space = gym.spaces.Discrete(4)
        self._agent = np.zeros(2, dtype=np.int64)
        self._goal = np.ones(2, dtype=np.int64)
        self._steps = 0

    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """``0`` where both goals are the same cell, else ``-1`` (batched on leading axes)."""
        achieved = np.asarray(achieved_goal, dtype=np.float64)
        desired = np.asarray(desired_goal, dtype=np.float64)
        tolerance = 0.5 / (self.size - 1)
        apart = np.any(np.abs(achieved - desired) >= tolerance, axis=-1)
        return -apart.astype(np.float32)

    def compute_reward_torch(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """:meth:`compute_reward` for torch tensors (on any device)."""
        tolerance = 0.5 / (self.size - 1)
        gap = (achieved_goal.double() - desired_goal.double()).abs()
        return -(gap >= tolerance).any(dim=-1).float()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[GoalObs, dict[str, Any]]:
        """Put the agent and the goal on two different random cells."""
        super().reset(seed=seed)
        start, goal = self.np_random.choice(self.size * self.size, size=2, replace=False)
        self._agent = np.array(divmod(int(start), self.size), dtype=np.int64)
        self._goal = np.array(divmod(int(goal), self.size), dtype=np.int64)
        self._steps = 0
        obs = self._obs()
        return obs, self._outcome(obs)[1]

    def step(self, action: np.int64) -> tuple[GoalObs, float, bool, bool, dict[str, Any]]:
        """Move one cell up, down, left or right, unless a wall is in the way."""
        index = int(action)
        if not 0 <= index < 4:
            raise ValueError(f"action must be in [0, 4), got {action!r}")
        self._agent = np.clip(self._agent + MOVES[index], 0, self.size - 1)
        self._steps += 1
        obs = self._obs()
        reward, info = self._outcome(obs)
        return obs, reward, bool(info["is_success"]), self._steps >= self.max_steps, info

    def _render_text(self) -> str:
        """The grid as text: ``A`` for the agent and ``G`` for the goal."""
        rows = [["."] * self.size for _ in range(self.size)]
        rows[int(self._goal[0])][int(self._goal[1])] = "G"
        rows[int(self._agent[0])][int(self._agent[1])] = "A"
        return "".join(" ".join(row) + "\n" for row in rows)

    def _layout(self) -> tuple[int, int, int]:
        """``(cell, offset, side)``: pixels per cell, pixel of the grid's top-left corner
        (on both axes) and the frame's side (a multiple of 16)."""
        cell = max(4, 240 // self.size)
        side = drawing.round_up(self.size * cell + 2 * WALL)
        return cell, (side - self.size * cell) // 2, side

    def _cell_box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` of the cell ``(row, col)``, grid lines included."""
        cell, offset, _ = self._layout()
        x0, y0 = offset + col * cell, offset + row * cell
        return x0, y0, x0 + cell, y0 + cell

    def _render_frame(self) -> drawing.Frame:
        """The ``rgb_array`` frame: the grid (white cells, grey lines) inside a dark border
        wall, the goal cell in green and the agent as a blue disc."""
        cell, offset, side = self._layout()
        end = offset + self.size * cell
        frame = drawing.blank(side, side, WALL_COLOR)
        drawing.fill_rect(frame, offset, offset, end, end, drawing.WHITE)
        lines = offset + cell * np.arange(self.size + 1)
        lines = np.concatenate([lines, lines - 1])
        lines = lines[(lines >= offset) & (lines < end)]
        frame[lines, offset:end] = LINE_COLOR
        frame[offset:end, lines] = LINE_COLOR
        x0, y0, x1, y1 = self._cell_box(int(self._goal[0]), int(self._goal[1]))
        drawing.fill_rect(frame, x0 + 1, y0 + 1, x1 - 1, y1 - 1, GOAL_COLOR)
        x0, y0, x1, y1 = self._cell_box(int(self._agent[0]), int(self._agent[1]))
        radius = max(0.35 * cell, 1.0)
        drawing.fill_circle(frame, (x0 + x1 - 1) / 2, (y0 + y1 - 1) / 2, radius, AGENT_COLOR)
        return frame

    def _obs(self) -> GoalObs:
        """A fresh observation dict of normalised cell coordinates."""
        scale = np.float32(self.size - 1)
        agent = self._agent.astype(np.float32) / scale
        return {
            "observation": agent,
            "achieved_goal": agent.copy(),
            "desired_goal": self._goal.astype(np.float32) / scale,
        }
