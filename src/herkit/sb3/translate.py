"""What the SB3 adapter reads from SB3's arguments and VecEnv, in herkit's terms, and what
it gives back in SB3's.

:class:`herkit.sb3.HerReplayBuffer` takes SB3's spellings: a ``GoalSelectionStrategy`` or
a name (:func:`strategy_name`), the action space whose dtype SB3 stores in its own way
(:func:`action_dtype`), and the training VecEnv, whose first env declares whether episodes
end on success (:func:`declared_ending_of`) and scores samples (:func:`reward_function`).
It hands SB3 a herkit :class:`~herkit.buffer.batch.Batch` as SB3's samples
(:func:`sb3_samples`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from herkit.buffer.batch import Array, Batch
from herkit.buffer.checks import check_int
from herkit.buffer.ending import Ending, declared_ending
from herkit.buffer.goal_env import GOAL_KEYS
from herkit.buffer.settings import STRATEGY_NAMES, Strategy

__all__ = [
    "action_dtype",
    "check_arguments",
    "check_n_steps",
    "declared_ending_of",
    "host_array",
    "reward_function",
    "same_observations",
    "sb3_samples",
    "strategy_name",
    "warn_if_not_the_algorithms",
]


def strategy_name(strategy: Any) -> str:
    """herkit's strategy name for a string or an SB3 ``GoalSelectionStrategy``."""
    name = getattr(strategy, "name", strategy)
    try:
        return Strategy.parse(str(name).lower()).value
    except ValueError:
        known = ", ".join(repr(name) for name in STRATEGY_NAMES)
        raise ValueError(
            f"goal_selection_strategy must be one of {known} or an SB3 GoalSelectionStrategy, "
            f"got {strategy!r}"
        ) from None


def action_dtype(action_space: spaces.Space) -> np.dtype:
    """SB3's storage dtype for actions: float64 becomes float32, others stay."""
    dtype = np.dtype(action_space.dtype or np.float32)
    return np.dtype(np.float32) if dtype == np.float64 else np.dtype(dtype)


def check_arguments(
    buffer_size: Any, observation_space: Any, n_envs: int, optimize_memory_usage: bool
) -> None:
    """ValueError, naming the argument, for SB3 arguments the adapter cannot take."""
    if optimize_memory_usage:
        raise ValueError(
            "optimize_memory_usage=True is not supported by herkit.sb3.HerReplayBuffer "
            "(nor by SB3's HerReplayBuffer): pass optimize_memory_usage=False"
        )
    keys = set(getattr(observation_space, "spaces", {}))
    if not keys >= set(GOAL_KEYS):
        raise ValueError(
            f"observation_space must be a Dict with the keys {GOAL_KEYS} (and any others), "
            f"got {sorted(keys) if keys else observation_space}"
        )
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int | np.integer):
        raise ValueError(f"buffer_size must be an int, got {buffer_size!r}")
    if not 1 <= n_envs <= buffer_size:
        raise ValueError(f"n_envs must be in [1, buffer_size={buffer_size}], got {n_envs}")


def check_n_steps(n_steps: Any, gamma: Any) -> None:
    """ValueError, naming the argument, for ``n_steps`` and ``gamma`` that SB3's
    algorithms cannot use: n-step returns need the algorithm's ``gamma`` and an SB3 whose
    samples carry ``discounts`` (2.7 and later)."""
    check_int("n_steps", n_steps, 1)
    if n_steps > 1 and gamma is None:
        raise ValueError(
            f"n_steps={n_steps} needs gamma, the algorithm's discount: "
            f'replay_buffer_kwargs={{"n_steps": {n_steps}, "gamma": <the model\'s gamma>}}'
        )
    if n_steps > 1 and "discounts" not in DictReplayBufferSamples._fields:
        raise ValueError(
            "n_steps > 1 needs stable-baselines3 >= 2.7 (its samples carry the discounts "
            "of n-step returns)"
        )


def warn_if_not_the_algorithms(gamma: float | None, depth: int = 8) -> None:
    """Warn where the SB3 algorithm that builds this buffer (found among the callers, as
    its ``_setup_model`` does) discounts with another ``gamma`` than the n-step returns."""
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    frame = sys._getframe(1)
    for _ in range(depth):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return
        algorithm = frame.f_locals.get("self")
        if isinstance(algorithm, OffPolicyAlgorithm):
            if gamma != algorithm.gamma:
                warnings.warn(
                    f"herkit.sb3.HerReplayBuffer: n-step returns discounted with "
                    f"gamma={gamma}, but {type(algorithm).__name__} discounts with "
                    f"gamma={algorithm.gamma}: pass replay_buffer_kwargs={{..., "
                    f'"gamma": {algorithm.gamma}}}',
                    UserWarning,
                    stacklevel=3,
                )
            return


def declared_ending_of(env: VecEnv | None) -> Ending:
    """What the first env of a VecEnv (in this process or a worker's) declares of its
    episodes ending on success (:func:`herkit.buffer.ending.declared_ending`); unknown where
    it says nothing or there is no env."""
    if env is None:
        return Ending(None)

    def read(name: str) -> Any:
        return env.get_attr(name, indices=[0])[0] if env.has_attr(name) else None

    return declared_ending(read, "the env")


def reward_function(env: VecEnv | None) -> Any:
    """The first env's ``compute_reward``: called directly in a DummyVecEnv, else through
    ``env_method`` (one round trip to the worker per batch)."""
    if env is None:
        raise ValueError(
            "HerReplayBuffer has no env to compute rewards with: after unpickling, call "
            "set_env(env) (SB3's load_replay_buffer does)"
        )
    inner: Any = env
    while isinstance(getattr(inner, "venv", None), VecEnv):
        inner = inner.venv
    if isinstance(inner, DummyVecEnv):
        return inner.envs[0].unwrapped.compute_reward  # type: ignore[attr-defined]

    def remote(achieved: np.ndarray, desired: np.ndarray, info: Any) -> Any:
        return env.env_method("compute_reward", achieved, desired, info, indices=[0])[0]

    return remote


def same_observations(
    obs: Mapping[str, Any], last: Mapping[str, np.ndarray] | None, n_envs: int
) -> np.ndarray:
    """Per env: is ``obs`` the observation ``last`` (its goal keys; False where None)?"""
    if last is None:
        return np.zeros(n_envs, dtype=bool)
    same = np.ones(n_envs, dtype=bool)
    for key, value in last.items():
        given = np.asarray(obs[key]).reshape(value.shape)
        same &= (given == value).reshape(n_envs, -1).all(axis=1)
    return same


def host_array(value: Array | None) -> np.ndarray:
    """A field of a batch from the host buffer SB3 samples from: a numpy array."""
    if not isinstance(value, np.ndarray):
        raise ValueError(f"SB3's samples come from a host buffer: numpy arrays, got {type(value)}")
    return value


def sb3_samples(
    batch: Batch,
    normalize_obs: Callable[[dict[str, np.ndarray]], Any],
    normalize_reward: Callable[[np.ndarray], Any],
    to_torch: Callable[[np.ndarray], Any],
) -> DictReplayBufferSamples:
    """``batch`` as SB3's ``DictReplayBufferSamples``, through the buffer's normalisers and
    ``to_torch``: observation dicts of the GoalEnv's three keys (the sample's goal as
    ``desired_goal`` of both) and any extra keys, rewards ``(B, 1)``, ``dones`` from the
    sample's terminal flag and, for n-step samples, the ``discounts`` that SB3's algorithms
    bootstrap with in place of ``gamma``."""
    raw = {
        "observation": host_array(batch.observation),
        "achieved_goal": host_array(batch.achieved_goal),
        "desired_goal": host_array(batch.goal),
        **{key: host_array(value) for key, value in (batch.extras or {}).items()},
    }
    raw_next = {
        "observation": host_array(batch.next_observation),
        "achieved_goal": host_array(batch.next_achieved_goal),
        "desired_goal": host_array(batch.goal),
        **{key: host_array(value) for key, value in (batch.next_extras or {}).items()},
    }
    observations, next_observations = normalize_obs(raw), normalize_obs(raw_next)
    reward = normalize_reward(host_array(batch.reward).reshape(-1, 1))
    discounts = (
        {} if batch.discount is None else {"discounts": host_array(batch.discount).reshape(-1, 1)}
    )
    return DictReplayBufferSamples(
        observations={key: to_torch(value) for key, value in observations.items()},
        actions=to_torch(host_array(batch.action)),
        next_observations={key: to_torch(value) for key, value in next_observations.items()},
        dones=to_torch(host_array(batch.terminated).reshape(-1, 1)),
        rewards=to_torch(np.asarray(reward, dtype=np.float32)),
        **{key: to_torch(value) for key, value in discounts.items()},
    )
