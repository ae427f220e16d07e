"""Registering herkit's goal envs with gymnasium, and making any goal env by id."""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib
import inspect
import io
import os
import re
import sys
import warnings
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import find_highest_version, load_env_creator, parse_env_id

from herkit.buffer.goal_env import wrapper_attr
from herkit.envs.core import GOAL_KEYS
from herkit.envs.flat_goals import FlatGoals, has_composite_goals
from herkit.envs.offscreen import GL_INSTALL_HINT, choose_mujoco_gl
from herkit.envs.ogbench_maze import OGBENCH_MAZE_ID, make_ogbench_env

__all__ = [
    "FETCH_IDS",
    "HERKIT_IDS",
    "env_kwargs",
    "is_goal_env",
    "make_goal_env",
    "register_envs",
    "register_robotics_envs",
]


def env_kwargs(items: Iterable[str]) -> dict[str, Any]:
    """An env's keyword arguments given as ``KEY=VALUE`` items (``--env-kwargs``; a value
    read as a Python literal where it is one, else as text); ValueError for an item that is
    not ``KEY=VALUE``."""
    kwargs: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"env_kwargs items must look like KEY=VALUE, got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            kwargs[key] = text
    return kwargs


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
ROBOTICS_PREFIXES = ("Fetch", "PointMaze", "AntMaze", "HandManipulate", "HandReach")
"""Id prefixes of gymnasium-robotics' goal envs: these ids say how to install it."""
ROBOTICS_ID = re.compile(
    r"^(Fetch(Reach|Push|PickAndPlace|Slide)(Dense)?|(Point|Ant)Maze_\w+|HandManipulate\w+"
    r"|HandReach(Dense)?)-v\d+$"
)
"""The form of gymnasium-robotics' goal env ids: where it is not installed, an id of this
form needs it, and one of a robotics prefix but another form is a mistyped id."""


def register_envs() -> None:
    """Register herkit's envs with gymnasium; calling it again does nothing."""
    for env_id, spec in _SPECS.items():
        if env_id not in gym.registry:
            gym.register(env_id, **spec)


def is_goal_env(env: Any) -> bool:
    """Whether ``env`` follows the GoalEnv API.

    That is a ``Dict`` observation space (``single_observation_space`` for a vector env)
    with the keys ``observation``, ``achieved_goal`` and ``desired_goal``, and a callable
    ``compute_reward`` on ``env.unwrapped`` or one of its wrappers (e.g. OGBench's mazes in
    :class:`~herkit.envs.ogbench_maze.OGBenchGoalEnv`), on its first sub-env for a sync
    vector env.
    """
    space = getattr(env, "single_observation_space", getattr(env, "observation_space", None))
    if not isinstance(space, gym.spaces.Dict) or not all(key in space.spaces for key in GOAL_KEYS):
        return False
    envs = getattr(env, "envs", None)
    target = envs[0] if envs else env
    own = getattr(getattr(target, "unwrapped", target), "compute_reward", None)
    return callable(own) or callable(wrapper_attr(target, "compute_reward"))


def make_goal_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, checked to be a goal env.

    ``env_id`` is a herkit id (``herkit/BitFlip-v0``...), any registered gymnasium id, or
    ``module:Id`` (``module`` is imported first, as :func:`gymnasium.make` does). The Fetch
    ids (:data:`FETCH_IDS` and their variants such as ``FetchReachDense-v4``), PointMaze
    and the other gymnasium-robotics ids register gymnasium-robotics on first use. An env
    whose goals are ``Dict`` (or ``Tuple``) spaces comes wrapped in
    :class:`~herkit.envs.flat_goals.FlatGoals`: flat ``Box`` goals, and its own
    ``compute_reward`` called on its own dicts. OGBench's locomaze ids
    (``pointmaze-medium-navigate-v0``, ``antmaze-large-v0``...: :data:`OGBENCH_MAZE_ID`)
    come as :class:`~herkit.envs.ogbench_maze.OGBenchGoalEnv` (the ``offline`` extra; a
    ModuleNotFoundError naming it where ogbench is missing).

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
    if OGBENCH_MAZE_ID.match(name):
        return make_ogbench_env(name, **kwargs)
    if name not in gym.registry:
        _register_robotics(env_id, required=name.startswith(ROBOTICS_PREFIXES))
    if name not in gym.registry:  # unknown, unless it names a registered env family
        try:
            namespace, base, version = parse_env_id(name)
        except gym.error.Error:
            namespace, base, version = None, name, 0
        # of a family, gym.make picks the latest version (with a warning)
        if version is not None or find_highest_version(namespace, base) is None:
            robotics = register_robotics_envs()
            raise ValueError(_unknown_id(env_id, name, list(gym.registry), robotics))
    warned: list[warnings.WarningMessage] = []
    try:
        if "render_mode" in kwargs:  # frames asked for: gymnasium's warnings said once made
            with warnings.catch_warnings(record=True) as warned:
                env = gym.make(name, **kwargs)
        else:
            env = gym.make(name, **kwargs)
    except TypeError as error:  # the one-line error says more than gymnasium's warnings
        raise ValueError(_bad_kwargs_message(env_id, name, kwargs, error)) from None
    except gym.error.DependencyNotInstalled as error:  # e.g. FetchPush-v1 needs mujoco-py
        newest = _newest_versions(list(gym.registry)).get(_family(name), name)
        reason = str(error).split(" (HINT")[0].splitlines()[0].rstrip(".")
        instead = f" (its current version is {newest})" if newest != name else ""
        raise ValueError(f"cannot make {env_id!r}: {reason}{instead}") from None
    for warning in warned:
        warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    if not is_goal_env(env):
        env.close()
        raise ValueError(
            f"{env_id!r} is not a goal env: it needs a Dict observation space with the keys "
            f"{GOAL_KEYS} and a compute_reward method (got observation space "
            f"{env.observation_space}); herkit's goal envs are {', '.join(HERKIT_IDS)}"
        )
    if has_composite_goals(env.observation_space):  # goals that are dicts: flat for storage
        env = FlatGoals(env)
    return env


def _bad_kwargs_message(env_id: str, name: str, kwargs: dict[str, Any], error: TypeError) -> str:
    """What to say when ``gym.make(name, **kwargs)`` raised ``error``: the argument that the
    env does not take and the ones it does."""
    found = re.search(r"unexpected keyword argument '(\w+)'", str(error))
    if found is None:
        return f"cannot make {env_id!r} with env kwargs {kwargs}: {str(error).splitlines()[0]}"
    bad = found.group(1)
    if bad == "render_mode":  # asked for by --video or a render, never by the user's kwargs
        return (
            f"{env_id} cannot render: its constructor takes no render_mode argument, so no "
            "video or frame can be made of it (give it a render_mode='rgb_array' to allow one)"
        )
    accepted = _accepted_kwargs(name)
    close = difflib.get_close_matches(bad, accepted, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (
        f"env argument {bad!r} (--env-kwargs) is not accepted by {env_id}{hint}; "
        f"it takes: {', '.join(accepted)}"
    )


def _accepted_kwargs(name: str) -> list[str]:
    """The keyword arguments that ``gym.make(name, ...)`` accepts by name."""
    spec = gym.spec(name)
    names: list[str] = []
    with contextlib.suppress(Exception):  # an entry point that cannot be inspected
        entry: Any = spec.entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        for param in inspect.signature(creator).parameters.values():
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                names.append(param.name)
    return [n for n in names if n != "self"] + ["max_episode_steps", "disable_env_checker"]


def register_robotics_envs() -> bool:
    """Register gymnasium-robotics' envs (Fetch, PointMaze, ...) where it is installed;
    returns whether it is. Calling it again does nothing."""
    try:
        _register_robotics("", required=False)
    except Exception:  # a broken robotics install must not break `import herkit`
        return False
    return sys.modules.get("gymnasium_robotics") is not None


def _register_robotics(env_id: str, required: bool) -> None:
    """Register gymnasium-robotics' envs where it is installed; where it is not and
    ``required``, say how to install it."""
    if sys.modules.get("gymnasium_robotics") is not None:
        return  # imported: it registered its envs then
    choose_mujoco_gl()  # before MuJoCo is imported: it reads MUJOCO_GL once
    try:
        # Its import warns on stderr about Adroit envs' rewards, which Fetch does not use.
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import gymnasium_robotics
    except ImportError as error:
        if not required:
            return
        name = env_id.split(":")[-1]
        if not ROBOTICS_ID.match(name):  # a mistyped id: say so before what to install
            known = [*gym.registry, *FETCH_IDS]
            raise ValueError(_unknown_id(env_id, name, known, robotics=False)) from error
        raise ValueError(
            f"{env_id!r} needs gymnasium-robotics (and mujoco); install it with {_ROBOTICS_HINT}"
        ) from error
    except Exception as error:  # e.g. MuJoCo's OpenGL backend (MUJOCO_GL) failed to load
        if not required:
            raise
        gl = os.environ.get("MUJOCO_GL")
        hint = f"; MUJOCO_GL={gl} needs its OpenGL library: unset it, or {GL_INSTALL_HINT}"
        raise ValueError(
            f"{env_id!r}: importing gymnasium-robotics failed ({type(error).__name__}: "
            f"{error}){hint if gl else ''}"
        ) from None
    gym.register_envs(gymnasium_robotics)


def _unknown_id(env_id: str, name: str, known: list[str], robotics: bool) -> str:
    """That ``env_id`` is unknown, the newest version of the ``known`` ids it resembles,
    what herkit has, and the robotics extra to install unless ``robotics`` (installed)."""
    newest = _newest_versions(known)
    close = difflib.get_close_matches(_family(name), list(newest), n=3, cutoff=0.8)
    suggestion = f" (did you mean {', '.join(newest[c] for c in close)}?)" if close else ""
    fetch = f"Fetch tasks ({', '.join(FETCH_IDS)}) and PointMaze"
    extra = f"gymnasium-robotics adds {fetch}" if robotics else f"{fetch} need {_ROBOTICS_HINT}"
    return (
        f"unknown env id {env_id!r}{suggestion}; herkit's goal envs are "
        f"{', '.join(HERKIT_IDS)}; {extra}"
    )


def _family(env_id: str) -> str:
    """``env_id`` without its version: ``FetchPush-v4`` -> ``FetchPush``."""
    try:
        namespace, base, _ = parse_env_id(env_id)
    except gym.error.Error:
        return env_id
    return f"{namespace}/{base}" if namespace else base


def _newest_versions(ids: list[str]) -> dict[str, str]:
    """Each family of ``ids`` (:func:`_family`) and its newest id: old versions of an env
    (``FetchPush-v1``, which needs mujoco-py) are never suggested beside the current one."""
    newest: dict[str, tuple[int, str]] = {}
    for env_id in ids:
        try:
            _, _, version = parse_env_id(env_id)
        except gym.error.Error:
            continue
        family = _family(env_id)
        rank = -1 if version is None else version
        if family not in newest or rank > newest[family][0]:
            newest[family] = (rank, env_id)
    return {family: env_id for family, (_, env_id) in newest.items()}
