"""A goal env whose every observation says where it came from, for tests of the loop.

``ledger:Ledger-v0`` (this module on ``sys.path``, as pytest puts it). The observation
after step t of episode ``ep`` of an env is ``(ident, ep, t + 1, action)``: ``ident`` is
the seed of the env's first reset, and ``action`` the action it was just given (0 after a
reset), so every stored transition can be traced to the env, episode and step it came
from, and its action to the one the env received. Episode ``ep`` lasts
:func:`episode_length` steps and ends terminated when ``(ident + ep)`` is even, truncated
otherwise. The achieved goal is ``(ident, ep, t)``; the desired goal ``(ident, ep, -1)``
is never reached, so ``compute_reward`` (0 for equal goals, else -1) rewards only
relabelled goals.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs import GoalEnv


def episode_length(ident: int, episode: int) -> int:
    """Steps of episode ``episode`` of the env first seeded with ``ident`` (3 to 8)."""
    return 3 + (ident * 7 + episode * 5) % 6


def ends_terminated(ident: int, episode: int) -> bool:
    """Whether that episode ends terminated (else truncated)."""
    return (ident + episode) % 2 == 0


class LedgerEnv(GoalEnv):
    """See the module docstring."""

    def __init__(self) -> None:
        box = gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(-1e6, 1e6, (4,), np.float32),
                "achieved_goal": box,
                "desired_goal": box,
            }
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.ident = -1
        self.episode = -1
        self.t = 0

    def _obs(self, action: float) -> dict[str, np.ndarray]:
        return {
            "observation": np.array([self.ident, self.episode, self.t, action], np.float32),
            "achieved_goal": np.array([self.ident, self.episode, self.t], np.float32),
            "desired_goal": np.array([self.ident, self.episode, -1], np.float32),
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None and self.ident < 0:
            self.ident = seed
        self.episode += 1
        self.t = 0
        return self._obs(0.0), {"is_success": 0.0}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self.t += 1
        done = self.t >= episode_length(self.ident, self.episode)
        terminated = done and ends_terminated(self.ident, self.episode)
        obs = self._obs(float(np.asarray(action).reshape(-1)[0]))
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], {}))
        return obs, reward, terminated, done and not terminated, {"is_success": 0.0}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """0 where the goals are equal, else -1."""
        equal = np.all(np.asarray(achieved_goal) == np.asarray(desired_goal), axis=-1)
        return equal.astype(np.float32) - 1.0


gym.register("Ledger-v0", entry_point=LedgerEnv)
