"""Variants of a goal task that the HER paper trains on: one goal for every episode, and a
shaped reward in place of the sparse one.

- :class:`FixedGoal` (the paper's single-goal experiment, its Figure 5): every episode has
  the same goal, the one a reset of the env with ``goal_seed`` draws; the rest of the
  episode (the start, an object's place) is drawn as before.
- :class:`ShapedReward` (its Figure 6): ``r = lam * |g - ag|^p - |g - ag'|^p``, where ``ag``
  and ``ag'`` are the achieved goals before and after the step (on Fetch's push, slide and
  pick-and-place, the object's position) and ``g`` the goal. Its ``compute_reward`` reads
  the earlier achieved goal from the info fields ``previous_achieved_goal_0``, ``_1``, ...
  (one number each, as a replay buffer stores info fields), which the wrapper adds to each
  step's info and names in ``reward_info_keys``, so that a buffer that stores them
  relabels with them (``herkit train`` stores the fields an env names there). Success is
  the env's own.

``herkit train --fixed-goal`` and ``--shaped-reward LAM P`` apply them
(:func:`herkit.training.build.make_run_env`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from herkit.buffer.goal_env import wrapper_attr

__all__ = ["GOAL_ATTRIBUTES", "FixedGoal", "ShapedReward", "reward_info_keys"]

GOAL_ATTRIBUTES = ("goal", "_goal")
"""Where envs keep the goal of the episode, in the order :class:`FixedGoal` looks:
gymnasium-robotics' Fetch and maze envs, then herkit's own envs."""

PREVIOUS_KEY = "previous_achieved_goal"


def reward_info_keys(env: gym.Env[Any, Any]) -> tuple[str, ...]:
    """The info fields ``env``'s ``compute_reward`` reads, as the outermost wrapper that
    says so names them (``reward_info_keys``); () where none does."""
    return tuple(wrapper_attr(env, "reward_info_keys") or ())


def _goal_attribute(env: gym.Env[Any, Any], goal: np.ndarray) -> str:
    """The attribute of ``env.unwrapped`` that holds a goal like ``goal``; ValueError else."""
    inner = env.unwrapped
    for name in GOAL_ATTRIBUTES:
        value = getattr(inner, name, None)
        if isinstance(value, np.ndarray) and value.shape == goal.shape:
            return name
    raise ValueError(
        f"fixed_goal: {type(inner).__name__} keeps its goal in none of the attributes "
        f"{GOAL_ATTRIBUTES} (an array of the goal's shape {goal.shape}), so it cannot be set"
    )


class FixedGoal(
    gym.Wrapper[dict[str, Any], Any, dict[str, Any], Any], gym.utils.RecordConstructorArgs
):
    """``env`` with one goal for every episode: the goal of ``env.reset(seed=goal_seed)``,
    drawn once here, so that every copy made with the same ``goal_seed`` (training and
    evaluation envs alike) has the same goal. Each reset draws the rest as the env does and
    then sets the goal where the env keeps it (:data:`GOAL_ATTRIBUTES`), so that its
    rewards, successes and rendering use it.

    Raises:
        ValueError: the env keeps its goal where it cannot be set.
    """

    def __init__(self, env: gym.Env[Any, Any], goal_seed: int = 0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, goal_seed=goal_seed)
        gym.Wrapper.__init__(self, env)
        observation, _ = env.reset(seed=goal_seed)
        self.goal = np.array(observation["desired_goal"], copy=True)
        """The goal of every episode."""
        self._attribute = _goal_attribute(env, self.goal)

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset ``env`` and give the episode the fixed goal."""
        observation, info = self.env.reset(**kwargs)
        setattr(self.env.unwrapped, self._attribute, self.goal.copy())
        return {**observation, "desired_goal": self.goal.copy()}, info


class ShapedReward(
    gym.Wrapper[dict[str, Any], Any, dict[str, Any], Any], gym.utils.RecordConstructorArgs
):
    """``env`` rewarded ``lam * |g - ag|^p - |g - ag'|^p`` (see the module docstring).

    Raises:
        ValueError: ``p`` is not positive or a value is not finite.
    """

    def __init__(self, env: gym.Env[Any, Any], lam: float, p: float) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, lam=lam, p=p)
        gym.Wrapper.__init__(self, env)
        if not (np.isfinite(lam) and np.isfinite(p) and p > 0):
            raise ValueError(f"shaped_reward: (lam, p) must be finite with p > 0, got ({lam}, {p})")
        self.lam, self.p = float(lam), float(p)
        size = int(np.prod(env.observation_space["achieved_goal"].shape))  # type: ignore[index]
        self.reward_info_keys = tuple(f"{PREVIOUS_KEY}_{i}" for i in range(size)) if lam else ()
        """The info fields ``compute_reward`` reads: the earlier achieved goal, one number a
        field (none for ``lam == 0``)."""
        self._achieved: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset ``env``, remembering the achieved goal the first step starts from."""
        observation, info = self.env.reset(**kwargs)
        self._achieved = np.array(observation["achieved_goal"], copy=True)
        return observation, info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Step ``env``; the reward is the shaped one, ``info`` gains the earlier achieved
        goal."""
        if self._achieved is None:
            raise gym.error.ResetNeeded("ShapedReward: call reset() before step()")
        observation, _, terminated, truncated, info = self.env.step(action)
        info = {**info, **dict(zip(self.reward_info_keys, self._achieved.ravel(), strict=False))}
        self._achieved = np.array(observation["achieved_goal"], copy=True)
        reward = self.compute_reward(
            observation["achieved_goal"], observation["desired_goal"], info
        )
        return observation, float(reward), terminated, truncated, info

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """The shaped reward of goals ``desired_goal`` for steps that ended at
        ``achieved_goal`` and began where the info fields ``reward_info_keys`` say (one
        step, or a batch with a dict of batched info fields)."""
        desired = np.asarray(desired_goal, dtype=np.float64)
        after = np.linalg.norm(desired - np.asarray(achieved_goal, np.float64), axis=-1)
        reward = -(after**self.p)
        if self.lam:
            missing = [key for key in self.reward_info_keys if key not in (info or {})]
            if missing:
                raise ValueError(
                    f"ShapedReward.compute_reward needs the info fields {missing} (store them: "
                    f"--info-keys {' '.join(self.reward_info_keys)})"
                )
            previous = np.stack(
                [np.asarray(info[key], np.float64) for key in self.reward_info_keys], axis=-1
            )
            before = np.linalg.norm(desired - previous.reshape(desired.shape), axis=-1)
            reward = reward + self.lam * before**self.p
        return reward.astype(np.float32)
