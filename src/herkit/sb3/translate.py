"""What the SB3 adapter reads from SB3's arguments and VecEnv, in herkit's terms.

:class:`herkit.sb3.HerReplayBuffer` takes SB3's spellings: a ``GoalSelectionStrategy`` or
a name (:func:`strategy_name`), the action space whose dtype SB3 stores in its own way
(:func:`action_dtype`), and the training VecEnv, whose first env declares whether episodes
end on success (:func:`declared_terminal`) and scores samples (:func:`reward_function`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from herkit.buffer.strategies import Strategy

__all__ = ["action_dtype", "declared_terminal", "reward_function", "strategy_name"]


def strategy_name(strategy: Any) -> str:
    """herkit's strategy name for a string or an SB3 ``GoalSelectionStrategy``."""
    name = getattr(strategy, "name", strategy)
    try:
        return Strategy.parse(str(name).lower()).value
    except ValueError:
        raise ValueError(
            "goal_selection_strategy must be 'future', 'final', 'episode', 'random' or an SB3 "
            f"GoalSelectionStrategy, got {strategy!r}"
        ) from None


def action_dtype(action_space: spaces.Space) -> np.dtype:
    """SB3's storage dtype for actions: float64 becomes float32, others stay."""
    dtype = np.dtype(action_space.dtype or np.float32)
    return np.dtype(np.float32) if dtype == np.float64 else np.dtype(dtype)


def declared_terminal(env: VecEnv | None) -> bool:
    """The env's ``terminates_on_success`` declaration (False when it makes none)."""
    if env is None:
        return False
    if not env.has_attr("terminates_on_success"):
        return False
    return bool(env.get_attr("terminates_on_success", indices=[0])[0])


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
