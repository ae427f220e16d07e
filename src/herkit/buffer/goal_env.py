"""What a buffer reads from a GoalEnv: the reward function's signature, shapes and dtypes,
and whether the env says that its episodes end on success.

The buffer never holds an env: it is given the env's reward function, never the env,
and calls it on whole batches. :meth:`HerReplayBuffer.from_env
<herkit.buffer.her.HerReplayBuffer.from_env>` takes from it, once, the constructor
arguments of :func:`settings_of`, the env's ``compute_reward`` (:func:`compute_reward_of`)
and its declared ending on success (:func:`env_ending`, which ``herkit train``'s
conventions probe reads too), and forgets the env.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from herkit.buffer.ending import Ending, declared_ending
from herkit.buffer.per_sample import per_sample

__all__ = [
    "GOAL_KEYS",
    "RewardFn",
    "TorchRewardFn",
    "compute_reward_of",
    "env_ending",
    "first_env",
    "fresh_copy",
    "settings_of",
    "wrapper_attr",
]

RewardFn = Callable[[np.ndarray, np.ndarray, Mapping[str, np.ndarray]], Any]
"""``reward_fn(achieved_goal, desired_goal, info) -> rewards``, batched on axis 0."""
TorchRewardFn = Callable[[Any, Any, Mapping[str, Any]], Any]
"""The same in torch: tensors on the buffer's device in, a ``(B,)`` tensor out."""

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")
"""The keys of a GoalEnv's observation dict (others are ``extra_keys``)."""


def settings_of(env: Any) -> dict[str, Any]:
    """The buffer's shapes, dtypes, ``n_envs`` and ``extra_keys`` for a GoalEnv or a
    gymnasium vector env of them (``n_envs``: a vector env's ``num_envs``, else 1;
    ``extra_keys``: the observation keys beyond the three, with their shapes and dtypes);
    ValueError if the observation space is not a GoalEnv's Dict."""
    space = getattr(env, "single_observation_space", env.observation_space)
    action_space = getattr(env, "single_action_space", env.action_space)
    if not all(key in getattr(space, "spaces", {}) for key in GOAL_KEYS):
        raise ValueError(
            "env must be a GoalEnv: its observation space must be a Dict with keys "
            f"{GOAL_KEYS}, got {space}"
        )
    composite = [key for key in GOAL_KEYS[1:] if getattr(space[key], "shape", None) is None]
    if composite:
        raise ValueError(
            f"env's {' and '.join(composite)} spaces are {type(space[composite[0]]).__name__} "
            "spaces (named sub-goals), which the buffer cannot store: wrap the env first, "
            "env = herkit.envs.FlatGoals(env), which flattens them into Box goals and gives "
            "compute_reward its dicts back (herkit train does this itself)"
        )
    return {
        "observation_shape": space["observation"].shape,
        "goal_shape": space["desired_goal"].shape,
        "action_shape": action_space.shape,
        "observation_dtype": space["observation"].dtype,
        "goal_dtype": space["desired_goal"].dtype,
        "action_dtype": action_space.dtype,
        "n_envs": getattr(env, "num_envs", 1),
        "extra_keys": {
            key: (sub.shape, sub.dtype) for key, sub in space.spaces.items() if key not in GOAL_KEYS
        },
    }


def first_env(env: Any) -> Any:
    """``env``, or the first env of a vector env (made anew from its ``env_fns`` where the
    vector env keeps its envs in other processes)."""
    if hasattr(env, "envs"):
        return env.envs[0]
    if hasattr(env, "env_fns"):
        return env.env_fns[0]()
    return env


def fresh_copy(env: Any) -> tuple[Any, str]:
    """A new env like ``env`` to try random steps on (the caller closes it), and how it was
    made: a vector env's first env made anew from its ``env_fns``, else ``gym.make`` of
    the env's spec (wrappers included, where gymnasium can make them again). Never
    ``env`` itself: (None, why) where no copy can be made."""
    if hasattr(env, "env_fns"):
        return env.env_fns[0](), "a fresh copy from the vector env's env_fns"
    spec = getattr(env, "spec", None)
    if spec is None:
        return None, "the env has no spec to make a fresh copy from"
    import gymnasium as gym

    try:
        return gym.make(spec), f"a fresh copy made from its spec ({spec.id})"
    except Exception as error:  # a wrapper or entry point that its spec cannot make again
        return None, f"its spec cannot make a fresh copy ({type(error).__name__}: {error})"


def env_ending(env: Any) -> Ending:
    """What a GoalEnv (or the first env of a vector env) declares of its episodes ending on
    success (:func:`herkit.buffer.ending.declared_ending`), read through its wrappers (a
    wrapper that changes how episodes end says so above the env it wraps); unknown where it
    says nothing."""
    first = first_env(env)
    return declared_ending(lambda name: wrapper_attr(first, name), type(first.unwrapped).__name__)


def wrapper_attr(env: Any, name: str) -> Any:
    """Attribute ``name`` of ``env`` read through its wrappers (the outermost that has it,
    else the env itself), or None where none has it."""
    read = getattr(env, "get_wrapper_attr", None)
    try:
        return read(name) if read else getattr(env, name, None)
    except AttributeError:
        return None


def compute_reward_of(env: Any) -> RewardFn:
    """The ``compute_reward`` of a GoalEnv, or of the first env of a vector env: that of
    its outermost wrapper that has one (e.g. :class:`herkit.envs.FlatGoals`), else of the
    env itself; called once per sample where it takes one goal at a time
    (:func:`~herkit.buffer.per_sample.per_sample`)."""
    env = first_env(env)
    compute_reward = wrapper_attr(env, "compute_reward")
    compute_reward = compute_reward or getattr(env.unwrapped, "compute_reward", None)
    if compute_reward is None:
        raise ValueError("env must be a GoalEnv with a compute_reward method, or pass reward_fn")
    return per_sample(compute_reward, f"{type(env.unwrapped).__name__}.compute_reward")
