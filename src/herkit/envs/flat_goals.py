"""A goal env whose goals are dicts (or tuples), seen with flat ``Box`` goals.

``FlatGoals(env)`` turns the ``achieved_goal`` and ``desired_goal`` entries of ``env``'s
observations into flat vectors (:mod:`herkit.envs.goal_spaces`), so that a replay buffer
can store them and networks read them, and gives the wrapped env a vectorised
``compute_reward(achieved_goal, desired_goal, info)`` on flat goals: it unflattens them
to ``env``'s own dicts and calls ``env``'s ``compute_reward`` on them, on the whole batch
(a dict of batched arrays) where it takes one, else once per goal with a warning of the
cost (:class:`herkit.buffer.per_sample.PerSampleReward`). :func:`herkit.envs.make_goal_env`
(what ``herkit train`` uses) applies it where a goal space is a ``Dict`` or a ``Tuple``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from herkit.buffer.goal_env import GOAL_KEYS
from herkit.buffer.per_sample import PerSampleReward, row, vectorised
from herkit.envs.goal_spaces import (
    check_goal_space,
    flat_dtype,
    flat_goal_space,
    flatten_goal,
    is_composite,
    structure_of,
    unflatten_goals,
)

__all__ = ["FlatGoals", "has_composite_goals"]


def has_composite_goals(space: Any) -> bool:
    """Whether a goal env's observation ``space`` has a ``Dict`` or ``Tuple`` goal."""
    parts = getattr(space, "spaces", {})
    return any(key in parts and is_composite(parts[key]) for key in GOAL_KEYS[1:])


class FlatGoals(
    gym.ObservationWrapper[dict[str, Any], Any, dict[str, Any]], gym.utils.RecordConstructorArgs
):
    """``env`` with flat ``Box`` goals and a vectorised ``compute_reward`` on them (see the
    module docstring). Other observation entries pass unchanged; both goal spaces must
    have the same structure (relabelling uses achieved goals as desired ones).

    Raises:
        ValueError: ``env`` is not a goal env, a goal part cannot be flattened, or the two
            goal spaces differ in structure.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict) or not all(k in space.spaces for k in GOAL_KEYS):
            raise ValueError(
                f"FlatGoals(env): env must be a goal env with a Dict observation space with the "
                f"keys {GOAL_KEYS}, got {space}"
            )
        self.goal_spaces = {key: space[key] for key in GOAL_KEYS[1:]}
        """The env's own ``achieved_goal`` and ``desired_goal`` spaces."""
        for key, goal in self.goal_spaces.items():
            check_goal_space(goal, f"observation_space[{key!r}]")
        achieved, desired = self.goal_spaces.values()
        if structure_of(achieved) != structure_of(desired):
            raise ValueError(
                "FlatGoals(env): env's achieved_goal and desired_goal spaces must have the same "
                f"parts, got {achieved} and {desired}"
            )
        self.dtype = np.promote_types(flat_dtype(achieved), flat_dtype(desired))
        """The flat goals' dtype."""
        flat = {key: flat_goal_space(space[key], self.dtype) for key in self.goal_spaces}
        self.observation_space = spaces.Dict(space.spaces | flat)
        own = env.get_wrapper_attr("compute_reward")
        self.env_reward = PerSampleReward(own, f"{type(env.unwrapped).__name__}.compute_reward")
        """The env's own ``compute_reward`` on batches of its dicts (one call per goal where
        it takes one goal at a time)."""

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """``observation`` with its goals flattened."""
        flat = dict(observation)
        for key, goal_space in self.goal_spaces.items():
            flat[key] = flatten_goal(goal_space, observation[key], self.dtype)
        return flat

    def unflatten_goal(self, flat: Any, key: str = "desired_goal") -> Any:
        """The env's own goal (a dict) of one flat goal ``(flatdim,)``, or the batched
        dict of flat goals ``(B, flatdim)``; ``key`` names the goal space to read it in."""
        flat = np.asarray(flat)
        goals = unflatten_goals(self.goal_spaces[key], flat.reshape(-1, flat.shape[-1]))
        return row(goals, 0) if flat.ndim == 1 else goals

    @vectorised
    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """The env's ``compute_reward`` of flat goals: one reward for one goal pair, else
        float64 rewards shaped as the leading axes of the goals."""
        achieved, desired = np.asarray(achieved_goal), np.asarray(desired_goal)
        if achieved.ndim == 1 and desired.ndim == 1:
            reward = self.env_reward.function(
                self.unflatten_goal(achieved, "achieved_goal"), self.unflatten_goal(desired), info
            )
            return np.float64(np.asarray(reward).item())
        achieved, desired = np.broadcast_arrays(achieved, desired)
        lead = achieved.shape[:-1]
        rewards = self.env_reward(
            self.unflatten_goal(achieved.reshape(-1, achieved.shape[-1]), "achieved_goal"),
            self.unflatten_goal(desired.reshape(-1, desired.shape[-1])),
            info,
        )
        return np.asarray(rewards, dtype=np.float64).reshape(lead)
