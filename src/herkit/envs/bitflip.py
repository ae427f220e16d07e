"""Bit flipping (Andrychowicz et al. 2017, "Hindsight Experience Replay", section 3.1).

The state is ``n_bits`` bits, the goal another ``n_bits`` bits, both drawn uniformly at
random each episode (the goal is redrawn while it equals the start, so no episode starts
solved). An action flips bits; the reward is ``0`` when the state equals the goal and ``-1``
otherwise, so without hindsight relabelling a random agent almost never sees a success
for ``n_bits`` above about 15.

``render_mode="rgb_array"`` draws the bits as a row of squares (filled for a 1) with the goal
bits as a second row under them; a state square is outlined green where its bit matches the
goal and red where it does not.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs import drawing
from herkit.envs.core import DrawnGoalEnv, GoalObs, goal_observation_space

__all__ = ["BitFlipEnv"]

MARGIN = 16
"""Pixels of background around the two rows of squares in an ``rgb_array`` frame."""
MAX_WIDTH = 1024
"""Frames are at most this wide, unless ``n_bits`` needs more than 4 pixels per bit."""
BACKGROUND: drawing.Color = drawing.LIGHT_GREY
"""Frame background."""
STATE_ON: drawing.Color = (30, 30, 30)
"""Fill of a state square whose bit is 1 (a 0 is white)."""
GOAL_ON: drawing.Color = drawing.GREY
"""Fill of a goal square whose bit is 1 (a 0 is white)."""
MATCH: drawing.Color = drawing.GREEN
"""Outline of a state square whose bit matches the goal."""
MISMATCH: drawing.Color = drawing.RED
"""Outline of a state square whose bit differs from the goal."""


class BitFlipEnv(DrawnGoalEnv[Any]):
    """The bit-flipping goal env, with a discrete or a continuous action space.

    - observation, achieved_goal: the current bits, desired_goal: the goal bits, all
      float32 arrays of 0s and 1s in ``Box(0, 1, (n_bits,))``;
    - ``continuous=False``: ``Discrete(n_bits)``, action ``i`` flips bit ``i``;
    - ``continuous=True``: ``Box(-1, 1, (n_bits,))``, every bit ``i`` with
      ``action[i] > 0`` flips (as in stable-baselines3's ``BitFlippingEnv``), so that
      DDPG/TD3/SAC can be used;
    - reward ``0`` when every bit matches the goal, else ``-1``; ``terminated`` on success;
    - ``truncated`` after ``max_steps`` steps (default ``n_bits``, the paper's episode
      length), counted inside the env because it depends on ``n_bits``;
    - ``render_mode``: ``"ansi"`` (text) or ``"rgb_array"`` (frames ``32 + 32 * n_bits``
      wide, 112 high, for up to 31 bits; wider rows get narrower squares, up to 1024 pixels
      wide in all, and both sides are multiples of 16).
    """

    # A plain class attribute, as gymnasium reads it from the class (ClassVar clashes with Env).
    terminates_on_success = True
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        n_bits: int = 15,
        continuous: bool = False,
        max_steps: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Build the env; ``max_steps`` defaults to ``n_bits``."""
        if isinstance(n_bits, bool) or not isinstance(n_bits, (int, np.integer)) or n_bits < 1:
            raise ValueError(f"n_bits must be a positive int, got {n_bits!r}")
        if max_steps is None:
            max_steps = int(n_bits)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        self._set_render_mode(render_mode)
        self.n_bits = int(n_bits)
        self.continuous = bool(continuous)
        self.max_steps = int(max_steps)
        bits = gym.spaces.Box(0.0, 1.0, (self.n_bits,), np.float32)
        self.observation_space = goal_observation_space(bits, bits)
        self.action_space: gym.spaces.Space[Any]
        if self.continuous:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (self.n_bits,), np.float32)
        else:
            self.action_space = gym.spaces.Discrete(self.n_bits)
        self._state = np.zeros(self.n_bits, dtype=np.float32)
        self._goal = np.ones(self.n_bits, dtype=np.float32)
        self._steps = 0

    @property
    def task_words(self) -> str:
        """The task in a few words, for a run's first line: ``15 bits`` (and the episode
        length where it is not one step a bit)."""
        steps = "" if self.max_steps == self.n_bits else f", {self.max_steps} steps an episode"
        return f"{self.n_bits} bits{steps}"

    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """``0`` where all bits of the goals match, ``-1`` elsewhere (batched on leading axes)."""
        achieved = np.asarray(achieved_goal)
        desired = np.asarray(desired_goal)
        return -np.any(achieved != desired, axis=-1).astype(np.float32)

    def compute_reward_torch(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """:meth:`compute_reward` for torch tensors (on any device)."""
        return -(achieved_goal != desired_goal).any(dim=-1).float()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[GoalObs, dict[str, Any]]:
        """Draw random start bits and random goal bits (different from the start)."""
        super().reset(seed=seed)
        self._state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        self._goal = self._state
        while np.array_equal(self._goal, self._state):
            self._goal = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        self._steps = 0
        obs = self._obs()
        return obs, self._outcome(obs)[1]

    def step(self, action: Any) -> tuple[GoalObs, float, bool, bool, dict[str, Any]]:
        """Flip the bit(s) that ``action`` selects."""
        if self.continuous:
            flip = np.asarray(action, dtype=np.float32).reshape(self.n_bits) > 0
        else:
            index = int(action)
            if not 0 <= index < self.n_bits:
                raise ValueError(f"action must be in [0, {self.n_bits}), got {action!r}")
            flip = np.zeros(self.n_bits, dtype=bool)
            flip[index] = True
        self._state = np.where(flip, 1.0 - self._state, self._state).astype(np.float32)
        self._steps += 1
        obs = self._obs()
        reward, info = self._outcome(obs)
        return obs, reward, bool(info["is_success"]), self._steps >= self.max_steps, info

    def _render_text(self) -> str:
        """The state bits, then the goal bits, as two lines of 0s and 1s."""
        state = "".join(str(int(bit)) for bit in self._state)
        goal = "".join(str(int(bit)) for bit in self._goal)
        return f"state {state}\ngoal  {goal}\n"

    def _cell(self) -> int:
        """Pixels per bit in an ``rgb_array`` frame: 32, less for many bits (at least 4)."""
        return max(4, min(32, (MAX_WIDTH - 2 * MARGIN) // self.n_bits))

    def _frame_shape(self) -> tuple[int, int]:
        """``(height, width)`` of an ``rgb_array`` frame, both multiples of 16."""
        cell = self._cell()
        width = drawing.round_up(self.n_bits * cell + 2 * MARGIN)
        height = drawing.round_up(2 * cell + cell // 2 + 2 * MARGIN)
        return height, width

    def _square(self, row: int, index: int) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` of bit ``index``'s square in row 0 (state) or 1 (goal)."""
        cell = self._cell()
        height, width = self._frame_shape()
        left = (width - self.n_bits * cell) // 2
        top = (height - (2 * cell + cell // 2)) // 2 + row * (cell + cell // 2)
        pad = max(1, cell // 8)
        x0 = left + index * cell
        return x0 + pad, top + pad, x0 + cell - pad, top + cell - pad

    def _render_frame(self) -> drawing.Frame:
        """The ``rgb_array`` frame: the state bits as a row of squares (dark for a 1, white
        for a 0), each outlined green where it matches the goal bit and red where not, above
        a row of the goal bits (grey for a 1)."""
        frame = drawing.blank(*self._frame_shape(), color=BACKGROUND)
        border = max(1, self._cell() // 10)
        for index in range(self.n_bits):
            state, goal = bool(self._state[index]), bool(self._goal[index])
            x0, y0, x1, y1 = self._square(0, index)
            drawing.fill_rect(frame, x0, y0, x1, y1, STATE_ON if state else drawing.WHITE)
            outline = MATCH if state == goal else MISMATCH
            drawing.draw_rect(frame, x0, y0, x1, y1, outline, border)
            x0, y0, x1, y1 = self._square(1, index)
            drawing.fill_rect(frame, x0, y0, x1, y1, GOAL_ON if goal else drawing.WHITE)
            drawing.draw_rect(frame, x0, y0, x1, y1, drawing.DARK_GREY, 1)
        return frame

    def _obs(self) -> GoalObs:
        """A fresh observation dict (copies, so callers may keep or modify it)."""
        return {
            "observation": self._state.copy(),
            "achieved_goal": self._state.copy(),
            "desired_goal": self._goal.copy(),
        }
