"""The goal-env base class shared by herkit's environments.

Gymnasium 1.x has no ``GoalEnv`` of its own (gymnasium-robotics has one); herkit's envs
follow the same API without depending on gymnasium-robotics:

- ``observation_space`` is a ``Dict`` with the keys ``observation``, ``achieved_goal`` and
  ``desired_goal``;
- ``compute_reward(achieved_goal, desired_goal, info)`` is vectorised over leading axes, so
  a replay buffer can recompute the rewards of relabelled goals in one call;
- every ``step`` (and ``reset``) info holds ``is_success``, and the step reward is
  ``compute_reward(next achieved_goal, desired_goal, info)``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from herkit.buffer.goal_env import GOAL_KEYS

__all__ = ["GOAL_KEYS", "DrawnGoalEnv", "GoalEnv", "GoalObs", "goal_observation_space"]

GoalObs = dict[str, NDArray[np.float32]]
"""A goal env's observation: ``observation``, ``achieved_goal`` and ``desired_goal`` arrays."""

ActType = TypeVar("ActType")


def goal_observation_space(observation: gym.spaces.Box, goal: gym.spaces.Box) -> gym.spaces.Dict:
    """The ``Dict`` observation space of a goal env whose two goals share the space ``goal``."""
    return gym.spaces.Dict(
        {
            "observation": observation,
            "achieved_goal": goal,
            "desired_goal": gym.spaces.Box(goal.low, goal.high, goal.shape, goal.dtype),
        }
    )


class GoalEnv(gym.Env[GoalObs, ActType]):
    """A gymnasium env with a goal-conditioned ``Dict`` observation and a sparse reward.

    Subclasses implement ``compute_reward``; the reward is ``0`` where the achieved goal
    reaches the desired goal and ``-1`` elsewhere.
    """

    observation_space: gym.spaces.Dict  # type: ignore[assignment]  # narrower than the base
    terminates_on_success: bool = False
    """Whether ``step`` ends the episode (``terminated``) when the goal is reached; read by
    :func:`herkit.buffer.conventions.probe_conventions`."""

    @abstractmethod
    def compute_reward(
        self, achieved_goal: ArrayLike, desired_goal: ArrayLike, info: Any = None
    ) -> NDArray[np.float32]:
        """Rewards (``0`` success, ``-1`` otherwise) for goals batched on leading axes.

        ``achieved_goal`` and ``desired_goal`` have shape ``(..., goal_dim)`` (a single goal
        or a batch); the result has shape ``(...)``. ``info`` (a dict of arrays, a list of
        dicts or ``None``) is ignored by herkit's envs.
        """

    def is_success(self, achieved_goal: ArrayLike, desired_goal: ArrayLike) -> NDArray[np.bool_]:
        """Whether ``achieved_goal`` reaches ``desired_goal`` (batched like ``compute_reward``)."""
        return self.compute_reward(achieved_goal, desired_goal, None) == 0.0

    def _outcome(self, obs: GoalObs) -> tuple[float, dict[str, Any]]:
        """The step reward and info of observation ``obs``, consistent with compute_reward."""
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], None))
        return reward, {"is_success": float(reward == 0.0)}


class DrawnGoalEnv(GoalEnv[ActType]):
    """A :class:`GoalEnv` of herkit's that renders ``"ansi"`` text (``_render_text``) or
    ``"rgb_array"`` frames (``_render_frame``); rendering reads the state only (no
    randomness)."""

    def _set_render_mode(self, render_mode: str | None) -> None:
        """Keep ``render_mode``: None, ``"ansi"`` or ``"rgb_array"`` (else a ValueError)."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}"
            )
        self.render_mode = render_mode

    def render(self) -> str | NDArray[np.uint8] | None:
        """The current frame: text for ``"ansi"``, an RGB array for ``"rgb_array"``, else None."""
        if self.render_mode == "ansi":
            return self._render_text()
        if self.render_mode == "rgb_array":
            return self._render_frame()
        return None

    @abstractmethod
    def _render_text(self) -> str: ...

    @abstractmethod
    def _render_frame(self) -> NDArray[np.uint8]: ...
