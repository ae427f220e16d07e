"""Goal envs whose goals are dicts, or whose ``compute_reward`` takes one goal at a time.

``dict_goals:ColourReach-v0`` (this module on ``sys.path``, as pytest puts it): a point on
a plane moves towards a goal position, and its colour (0, 1 or 2, changed by the second
action) must match the goal's. Goals are ``{"position": Box(2), "colour": Discrete(3)}``
and ``compute_reward`` takes one such dict pair at a time (reward 0 where the position is
within 0.1 and the colour matches, else -1), as a hand-written env's often does.
``dict_goals:BatchedColourReach-v0`` is the same with a ``compute_reward`` that takes
dicts of batched arrays; ``dict_goals:OneAtATimeReach-v0`` has Box goals and a
``compute_reward`` that takes one goal pair at a time; ``dict_goals:BrokenReach-v0`` one
that fails on every goal.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

THRESHOLD = 0.1
"""How close the position must come to the goal's."""


class ColourReach(gym.Env[dict[str, Any], np.ndarray]):
    """See the module docstring; episodes last 20 steps (TimeLimit) and never end early."""

    def __init__(self) -> None:
        goal = spaces.Dict(
            {
                "position": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "colour": spaces.Discrete(3),
            }
        )
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(-1.0, 1.0, (3,), np.float32),
                "achieved_goal": goal,
                "desired_goal": goal,
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (3,), np.float32)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        """0 where ``achieved_goal`` reaches ``desired_goal`` (one dict each), else -1."""
        near = np.linalg.norm(achieved_goal["position"] - desired_goal["position"]) <= THRESHOLD
        same = int(achieved_goal["colour"]) == int(desired_goal["colour"])
        return 0.0 if near and same else -1.0

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        """A random position, colour and goal."""
        super().reset(seed=seed)
        self.position = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.colour = int(self.np_random.integers(3))
        self.goal = {
            "position": self.np_random.uniform(-1, 1, 2).astype(np.float32),
            "colour": np.int64(self.np_random.integers(3)),
        }
        return self._obs(), {}

    def step(self, action: np.ndarray) -> Any:
        """Move by a tenth of the first two actions; the third picks the colour."""
        action = np.clip(action, -1, 1)
        self.position = np.clip(self.position + 0.1 * action[:2], -1, 1).astype(np.float32)
        self.colour = min(int((action[2] + 1) * 1.5), 2)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], {}))
        return obs, reward, False, False, {"is_success": reward == 0.0}

    def _obs(self) -> dict[str, Any]:
        achieved = {"position": self.position.copy(), "colour": np.int64(self.colour)}
        return {
            "observation": np.append(self.position, self.colour / 2).astype(np.float32),
            "achieved_goal": achieved,
            "desired_goal": {
                "position": self.goal["position"].copy(),
                "colour": self.goal["colour"],
            },
        }


class BatchedColourReach(ColourReach):
    """:class:`ColourReach` with a ``compute_reward`` that takes dicts of batched arrays."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """0 where each achieved goal reaches its desired goal, else -1 (batched)."""
        delta = np.asarray(achieved_goal["position"]) - np.asarray(desired_goal["position"])
        near = np.linalg.norm(delta, axis=-1) <= THRESHOLD
        same = np.asarray(achieved_goal["colour"]) == np.asarray(desired_goal["colour"])
        return np.where(near & same, 0.0, -1.0)


def reach_reward(achieved_goal: Any, desired_goal: Any) -> float:
    """0 within :data:`THRESHOLD` of the goal, else -1, for one goal pair."""
    return 0.0 if float(np.linalg.norm(achieved_goal - desired_goal)) <= THRESHOLD else -1.0


class OneAtATimeReach(gym.Env[dict[str, Any], np.ndarray]):
    """A point on a plane reaching a goal; Box goals, ``compute_reward`` one pair at a time."""

    def __init__(self) -> None:
        box = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box}
        )
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        """0 within :data:`THRESHOLD` of the goal, else -1 (one goal pair only)."""
        return reach_reward(achieved_goal, desired_goal)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        """A random position and goal."""
        super().reset(seed=seed)
        self.position = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action: np.ndarray) -> Any:
        """Move by a tenth of the action."""
        self.position = np.clip(self.position + 0.1 * np.clip(action, -1, 1), -1, 1)
        self.position = self.position.astype(np.float32)
        reward = reach_reward(self.position, self.goal)
        return self._obs(), reward, False, False, {"is_success": reward == 0.0}

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "observation": self.position.copy(),
            "achieved_goal": self.position.copy(),
            "desired_goal": self.goal.copy(),
        }


class BrokenReach(OneAtATimeReach):
    """A ``compute_reward`` that fails on every goal, batched or not."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        """Always raises KeyError (it reads an info field that the env never gives)."""
        return -float(info["weight"])


for _cls in (ColourReach, BatchedColourReach, OneAtATimeReach, BrokenReach):
    if f"{_cls.__name__}-v0" not in gym.registry:
        gym.register(f"{_cls.__name__}-v0", f"dict_goals:{_cls.__name__}", max_episode_steps=20)
