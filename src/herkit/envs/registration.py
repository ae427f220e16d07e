"""Registering herkit's goal envs with gymnasium, and making any goal env by id."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import io
import warnings
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import find_highest_version, parse_env_id

from herkit.envs.core import GOAL_KEYS

__all__ = ["FETCH_IDS", "HERKIT_IDS", "is_goal_env", "make_goal_env", "register_envs"]

_SPECS: dict[str, dict[str, Any]] = {
    # BitFlip and GridWorld count their episode length themselves (it depends on n_bits and
    # size), so gym.make("herkit/BitFlip-v0", n_bits=40) gives 40-step episodes.
    "herkit/BitFlip-v0": {
        "entry_point": "herkit.envs.bitflip:BitFlipEnv",
        "kwargs": {"n_bits": 15},
    },
    "herkit/PointReach-v0": {
        "entry_point": "herkit.envs.point_reach:PointReachEnv",
        "max_episode_steps": 50,
    },
    "herkit/GridWorld-v0": {
        "entry_point": "herkit.envs.grid_world:GridWorldEnv",
        "kwargs": {"size": 8},
    },
    "herkit/MountainCarGoal-v0": {
        "entry_point": "herkit.envs.mountain_car_goal:MountainCarGoalEnv",
        "max_episode_steps": 200,
    },
}

HERKIT_IDS: tuple[str, ...] = tuple(_SPECS)
"""The ids that :func:`register_envs` registers."""

FETCH_IDS: tuple[str, ...] = (
    "FetchReach-v4",
    "FetchPush-v4",
    "FetchPickAndPlace-v4",
    "FetchSlide-v4",
)
"""The gymnasium-robotics Fetch tasks, registered on demand by :func:`make_goal_env`."""

_ROBOTICS_HINT = "pip install 'herkit[robotics]'"


def register_envs() -> None:
    """Register herkit's envs with gymnasium; calling it again does nothing."""
    for env_id, spec in _SPECS.items():
        if env_id not in gym.registry:
            gym.register(env_id, **spec)


def is_goal_env(env: Any) -> bool:
    """Whether ``env`` follows the GoalEnv API.

    That is a ``Dict`` observation space (``single_observation_space`` for a vector env)
    with the keys ``observation``, ``achieved_goal`` and ``desired_goal``, and a callable
    ``compute_reward`` on ``env.unwrapped`` (on its first sub-env for a sync vector env).
    """
    space = getattr(env, "single_observation_space", getattr(env, "observation_space", None))
    if not isinstance(space, gym.spaces.Dict) or not all(key in space.spaces for key in GOAL_KEYS):
        return False
    envs = getattr(env, "envs", None)
    target = envs[0] if envs else env
    return callable(getattr(getattr(target, "unwrapped", target), "compute_reward", None))


def make_goal_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, checked to be a goal env.

    ``env_id`` is a herkit id (``herkit/BitFlip-v0``...), any registered gymnasium id, or
    ``module:Id`` (``module`` is imported first, as :func:`gymnasium.make` does). The Fetch
    ids (:data:`FETCH_IDS` and their variants such as ``FetchReachDense-v4``) register
    gymnasium-robotics on first use.

    Raises:
        ValueError: ``env_id`` is unknown, its module cannot be imported, gymnasium-robotics
            is missing for a Fetch id, or the env is not a goal env (e.g. ``CartPole-v1``).
    """
    register_envs()
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(
                f"cannot make {env_id!r}: importing module {module!r} failed ({error})"
            ) from error
    if name not in gym.registry and name.startswith("Fetch"):
        _register_robotics(env_id)
    _check_known(env_id, name)
    env = gym.make(name, **kwargs)
    if not is_goal_env(env):
        env.close()
        raise ValueError(
            f"{env_id!r} is not a goal env: it needs a Dict observation space with the keys "
            f"{GOAL_KEYS} and a compute_reward method (got observation space "
            f"{env.observation_space}); herkit's goal envs are {', '.join(HERKIT_IDS)}"
        )
    return env


def _register_robotics(env_id: str) -> None:
    """Register gymnasium-robotics' envs, or say how to install it."""
    try:
        # Its import warns on stderr about Adroit envs' rewards, which Fetch does not use.
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import gymnasium_robotics
    except ImportError as error:
        raise ValueError(
            f"{env_id!r} needs gymnasium-robotics (and mujoco); install it with {_ROBOTICS_HINT}"
        ) from error
    gym.register_envs(gymnasium_robotics)


def _check_known(env_id: str, name: str) -> None:
    """Raise ValueError unless ``name`` is registered (or names a registered env family)."""
    if name in gym.registry:
        return
    try:
        namespace, base, version = parse_env_id(name)
    except gym.error.Error:
        namespace, base, version = None, name, 0
    if version is None and find_highest_version(namespace, base) is not None:
        return  # gym.make picks the latest version (with a warning)
    close = difflib.get_close_matches(name, list(gym.registry), n=3, cutoff=0.8)
    suggestion = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(
        f"unknown env id {env_id!r}{suggestion}; herkit's goal envs are "
        f"{', '.join(HERKIT_IDS)}; Fetch tasks ({', '.join(FETCH_IDS)}) need {_ROBOTICS_HINT}"
    )
