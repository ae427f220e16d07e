"""The data every buffer of the buffer benchmark is filled with: FetchPush's shapes.

Observation 25, goals 3 (achieved and desired), action 4, all float32; Fetch's sparse
reward :func:`fetch_reward`; and :class:`Episodes`, :data:`POOL_EPISODES` random episodes
generated once and cycled through by every ``add`` loop, with
:meth:`Episodes.herkit_steps` giving them as ``HerReplayBuffer.add`` argument tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

OBSERVATION_DIM = 25
"""FetchPush's ``observation`` size."""
GOAL_DIM = 3
"""FetchPush's goal size (achieved and desired)."""
ACTION_DIM = 4
"""FetchPush's action size."""
DISTANCE_THRESHOLD = 0.05
"""Fetch's success distance."""
MANY_ENVS = 16
"""Envs stepping together in the vectorised add measurement."""
POOL_EPISODES = 20
"""Episodes of random data generated once and cycled through by every ``add`` loop."""


def fetch_reward(achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any = None) -> Any:
    """Fetch's sparse reward, vectorised: 0 within ``DISTANCE_THRESHOLD``, else -1."""
    distance = np.linalg.norm(achieved_goal - desired_goal, axis=-1)
    return -(distance > DISTANCE_THRESHOLD).astype(np.float32)


@dataclass(frozen=True)
class Episodes:
    """Random FetchPush-shaped episodes, ``[episode, step, env, ...]``: the data every
    buffer of the benchmark is filled with."""

    observation: np.ndarray  # (POOL_EPISODES, length + 1, n_envs, 25)
    achieved_goal: np.ndarray  # (POOL_EPISODES, length + 1, n_envs, 3)
    desired_goal: np.ndarray  # (POOL_EPISODES, n_envs, 3): one goal per episode and env
    action: np.ndarray  # (POOL_EPISODES, length, n_envs, 4)

    @classmethod
    def generate(cls, length: int, n_envs: int, rng: np.random.Generator) -> Episodes:
        """:data:`POOL_EPISODES` episodes of ``length`` steps for ``n_envs`` envs, from ``rng``."""
        shape = (POOL_EPISODES, length + 1, n_envs)

        def uniform(*dims: int, high: float = 1.0) -> np.ndarray:
            return rng.uniform(-high, high, size=dims).astype(np.float32)

        # Goals in a 10 cm cube, so that Fetch's 5 cm reward is sometimes 0, sometimes -1.
        return cls(
            observation=uniform(*shape, OBSERVATION_DIM),
            achieved_goal=uniform(*shape, GOAL_DIM, high=0.05),
            desired_goal=uniform(POOL_EPISODES, n_envs, GOAL_DIM, high=0.05),
            action=uniform(POOL_EPISODES, length, n_envs, ACTION_DIM),
        )

    @property
    def length(self) -> int:
        """Steps per episode."""
        return self.action.shape[1]

    def herkit_steps(self) -> list[tuple[Any, ...]]:
        """Argument tuples of ``HerReplayBuffer.add``, one per step, episode after episode."""
        n_envs = self.action.shape[2]
        running, ended = np.zeros(n_envs, dtype=bool), np.ones(n_envs, dtype=bool)
        steps: list[tuple[Any, ...]] = []
        for e in range(POOL_EPISODES):
            goal = self.desired_goal[e]
            obs = [
                {
                    "observation": self.observation[e, t],
                    "achieved_goal": self.achieved_goal[e, t],
                    "desired_goal": goal,
                }
                for t in range(self.length + 1)
            ]
            last = self.length - 1
            steps += [
                (obs[t], self.action[e, t], obs[t + 1], running, ended if t == last else running)
                for t in range(self.length)
            ]
        return steps
