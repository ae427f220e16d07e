"""OGBench's locomaze envs (``pointmaze-*``, ``antmaze-*``, ``humanoidmaze-*``) as GoalEnvs.

OGBench's maze envs return a flat observation and give the goal once, as
``info["goal"]`` of ``reset``: a full observation of the agent placed at the goal (its
``xy`` for the ``-oraclerep`` ids). :class:`OGBenchGoalEnv` turns that into the GoalEnv API:

- ``observation``: the env's observation (its dtype: float64 for the state envs);
- ``achieved_goal``: the observation itself (OGBench's goals are full observations; its
  first two coordinates for an ``-oraclerep`` env, whose goals are ``xy``);
- ``desired_goal``: ``info["goal"]`` of the last ``reset``;
- ``compute_reward``: ``0`` where the ``xy`` distance (the first two coordinates) is at
  most the env's goal tolerance (1.0 for the point, 0.5 for the ant and the humanoid),
  ``-1`` elsewhere, batched on leading axes: the env's own success test;
- ``info["is_success"]``: the env's ``info["success"]``. The env ends an episode on
  success as it does (``terminate_at_goal``, True by default), and says so to herkit
  (``terminates_on_success``).

OGBench's mazes draw their start and goal noise (and a reset's task, the teleport maze's
destination) from numpy's global generator: the env comes in
:class:`~herkit.envs.seeding.SeededEpisodes`, so that ``reset(seed=s)`` fixes the episode,
in one process or in workers.

``reset(options={"task_id": k})`` starts OGBench's evaluation task ``k``
(:attr:`OGBenchGoalEnv.evaluation_tasks` lists them). :func:`make_ogbench_env` makes one by
id, a dataset id (``pointmaze-medium-navigate-v0``) or an env id (``pointmaze-medium-v0``).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.envs.core import goal_observation_space
from herkit.envs.seeding import SeededEpisodes

__all__ = ["OGBENCH_MAZE_ID", "OGBenchGoalEnv", "make_ogbench_env"]

OGBENCH_MAZE_ID = re.compile(r"^(point|ant|humanoid)maze-")
"""The form of OGBench's state-based locomaze ids (env ids and dataset ids alike)."""

OFFLINE_HINT = "pip install 'herkit[offline]'"
"""How to install OGBench with herkit."""


class OGBenchGoalEnv(gym.Wrapper):
    """An OGBench locomaze env with the GoalEnv API (see the module's docstring)."""

    def __init__(self, env: gym.Env) -> None:
        """Wrap ``env``, an OGBench locomaze env (``gymnasium.make`` of its id)."""
        super().__init__(env)
        base = env.unwrapped
        if not hasattr(base, "_goal_tol"):
            raise ValueError(f"{base!r} is not an OGBench locomaze env (it has no goal tolerance)")
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"OGBenchGoalEnv needs flat state observations, got {space}")
        self.goal_tolerance = float(base._goal_tol)
        """Success radius in ``xy``: the env's own (1.0 point, 0.5 ant and humanoid)."""
        self.terminates_on_success = bool(getattr(base, "_terminate_at_goal", True))
        """Whether the env ends an episode on success (its ``terminate_at_goal``)."""
        self._goal_dim = 2 if getattr(base, "_use_oracle_rep", False) else space.shape[0]
        goal = gym.spaces.Box(
            space.low[: self._goal_dim], space.high[: self._goal_dim], dtype=space.dtype
        )
        self.observation_space = goal_observation_space(space, goal)
        task = getattr(base, "_reward_task_id", None)
        count = len(getattr(base, "task_infos", ()) or ())
        self.evaluation_tasks: tuple[dict[str, Any], ...] = (
            ({"task_id": task},) if task else tuple({"task_id": k} for k in range(1, count + 1))
        )
        """The env's own evaluation tasks, as ``reset`` options: ``{"task_id": k}`` for k from
        1 to 5 (one per entry of the env's task list; the single task of a ``-singletask``
        env). This is how herkit's evaluation finds an env's own evaluation
        goals: one or more episodes of ``env.reset(options=task)`` for each ``task``."""
        self._goal = np.zeros(goal.shape, dtype=goal.dtype)

    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """``0`` where the ``xy`` distance (first two coordinates) of the goals is at most
        :attr:`goal_tolerance`, else ``-1``; goals of shape ``(..., goal_dim)`` give
        rewards of shape ``(...)``. ``info`` is ignored."""
        achieved = np.asarray(achieved_goal, dtype=np.float64)[..., :2]
        desired = np.asarray(desired_goal, dtype=np.float64)[..., :2]
        distance = np.linalg.norm(achieved - desired, axis=-1)
        return -(distance > self.goal_tolerance).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env (``options`` passed on: ``{"task_id": k}`` is its task ``k``)."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._goal = np.asarray(info["goal"], dtype=self._goal.dtype).reshape(self._goal.shape)
        goal_obs = self._observation(obs)
        info["is_success"] = float(
            self.compute_reward(goal_obs["achieved_goal"], goal_obs["desired_goal"]) == 0.0
        )
        return goal_obs, info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Step the env; the reward is :meth:`compute_reward` (``0`` on success, else ``-1``)
        and ``info["is_success"]`` the env's ``info["success"]``."""
        obs, _, terminated, truncated, info = self.env.step(action)
        goal_obs = self._observation(obs)
        info["is_success"] = float(info["success"])
        reward = float(self.compute_reward(goal_obs["achieved_goal"], goal_obs["desired_goal"]))
        return goal_obs, reward, terminated, truncated, info

    def _observation(self, obs: Any) -> dict[str, np.ndarray]:
        """The goal observation of the env's observation ``obs``."""
        obs = np.asarray(obs, dtype=self._goal.dtype)
        return {
            "observation": obs,
            "achieved_goal": obs[: self._goal_dim].copy(),
            "desired_goal": self._goal.copy(),
        }


def make_ogbench_env(env_id: str, **kwargs: Any) -> OGBenchGoalEnv:
    """OGBench's locomaze env ``env_id`` as an :class:`OGBenchGoalEnv`.

    ``env_id`` is a dataset id (``pointmaze-medium-navigate-v0``: made by
    ``ogbench.make_env_and_datasets(env_id, env_only=True)``, which drops the dataset-type
    token) or an env id (``pointmaze-medium-v0``: made by ``gymnasium.make`` once ogbench has
    registered it, as ``make_env_and_datasets`` would wrongly drop its maze size).
    ``kwargs`` go to the env (e.g. ``terminate_at_goal=False``, ``max_episode_steps``).
    Its draws from numpy's global generator are the episode's
    (:class:`~herkit.envs.seeding.SeededEpisodes`; reseeded at every step in the teleport
    maze, which draws its destination while it steps).

    Raises:
        ModuleNotFoundError: ogbench is not installed (one line: the extra to install).
        ValueError: ``env_id`` is not one of OGBench's ids.
    """
    from herkit.envs.offscreen import choose_mujoco_gl

    choose_mujoco_gl()  # before MuJoCo is imported: it reads MUJOCO_GL once
    try:
        import ogbench
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"{env_id} needs ogbench, from herkit's offline extra: {OFFLINE_HINT}",
            name=error.name,
        ) from None
    try:
        if env_id in gym.registry:
            env = gym.make(env_id, **kwargs)
        else:
            env = ogbench.make_env_and_datasets(env_id, env_only=True, **kwargs)
    except gym.error.Error as error:  # a mistyped id: OGBench's ids that resemble it
        known = [name for name in gym.registry if OGBENCH_MAZE_ID.match(name)]
        close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.8)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ValueError(f"unknown OGBench env id {env_id!r}{hint}: {error}") from None
    teleports = getattr(env.unwrapped, "_teleport_info", None) is not None
    return OGBenchGoalEnv(SeededEpisodes(env, every_step=teleports))
