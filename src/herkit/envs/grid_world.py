"""A goal-conditioned grid world: walk to a random goal cell of a ``size x size`` grid.

Cells are given as ``(row, col) / (size - 1)``, normalised coordinates in ``[0, 1]^2``, for
the observation and both goals: a small MLP (DQN) generalises over these across goals far
better than over one-hot cells, and relabelled goals are plain achieved positions.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs.core import GoalEnv, GoalObs, goal_observation_space

__all__ = ["GridWorldEnv"]

MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
"""``(d_row, d_col)`` of the actions 0 up, 1 down, 2 left, 3 right."""


class GridWorldEnv(GoalEnv[np.int64]):
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
      the env because it depends on ``size``.
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    terminates_on_success = True
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self, size: int = 8, max_steps: int | None = None, render_mode: str | None = None
    ) -> None:
        """Build the env; ``max_steps`` defaults to ``4 * size``."""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
            raise ValueError(f"size must be an int >= 2, got {size!r}")
        if max_steps is None:
            max_steps = 4 * int(size)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.size = int(size)
        self.max_steps = int(max_steps)
        self.render_mode = render_mode
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

    def render(self) -> str | None:
        """The grid as text (``A`` agent, ``G`` goal) when ``render_mode="ansi"``."""
        if self.render_mode != "ansi":
            return None
        rows = [["."] * self.size for _ in range(self.size)]
        rows[int(self._goal[0])][int(self._goal[1])] = "G"
        rows[int(self._agent[0])][int(self._agent[1])] = "A"
        return "".join(" ".join(row) + "\n" for row in rows)

    def _obs(self) -> GoalObs:
        """A fresh observation dict of normalised cell coordinates."""
        scale = np.float32(self.size - 1)
        agent = self._agent.astype(np.float32) / scale
        return {
            "observation": agent,
            "achieved_goal": agent.copy(),
            "desired_goal": self._goal.astype(np.float32) / scale,
        }
