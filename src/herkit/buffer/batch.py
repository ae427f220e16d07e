"""The sampled minibatch that agents consume."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

__all__ = ["TORCH_MISSING", "Batch"]

TORCH_MISSING = "Batch.to_torch needs torch, from herkit's train extra: pip install 'herkit[train]'"
"""What :meth:`Batch.to_torch` says without torch (the buffer imports nothing of herkit
outside it, so these are :func:`herkit.extras.needs_extra`'s words, written out)."""


@dataclass(frozen=True)
class Batch:
    """Transitions with a leading batch axis, goals already relabelled.

    Numpy arrays as sampled from a host buffer, torch tensors on the device from a buffer
    built with ``device=`` (``indices`` stay a numpy array: they are host keys);
    :meth:`to_torch` returns the same structure as tensors.
    """

    observation: Any
    """Observation before the action, ``(B, *obs_shape)``."""
    action: Any
    """Action taken, ``(B, *action_shape)``."""
    reward: Any
    """Reward recomputed for ``goal``, float32 ``(B,)``."""
    next_observation: Any
    """Observation after the action, ``(B, *obs_shape)``."""
    goal: Any
    """Desired goal of this sample (relabelled or the original), ``(B, *goal_shape)``."""
    achieved_goal: Any
    """Goal achieved before the action, ``(B, *goal_shape)``."""
    next_achieved_goal: Any
    """Goal achieved after the action, ``(B, *goal_shape)``."""
    terminated: Any
    """1.0 where the transition ends the episode for real (not a timeout), float32 ``(B,)``."""
    discount: Any = None
    """n-step returns only: ``gamma ** m`` per sample, where ``m`` is the number of steps
    summed in ``reward`` and ``next_observation`` is the observation ``m`` steps later
    (``terminated`` then refers to that last step); None for one-step samples."""
    weights: Any = None
    """Importance-sampling weights (max 1), float32 ``(B,)``; prioritized replay only."""
    indices: Any = None
    """Keys for ``update_priorities``, int64 ``(B,)``; prioritized replay only."""
    extras: dict[str, Any] | None = None
    """The observation keys beyond the GoalEnv's three (``extra_keys``), before the
    action, ``{key: (B, *shape)}``; None without extra keys."""
    next_extras: dict[str, Any] | None = None
    """The same keys of ``next_observation`` (n steps later with n-step returns)."""
    actor_goal: Any = None
    """A second goal per sample for the actor, drawn by the settings' ``actor_goals`` mix
    (offline goal-conditioned agents, OGBench's rule), ``(B, *goal_shape)``; None
    without that mix. HIQL's high actor takes it as its goal."""
    low_actor_goal: Any = None
    """HIQL's low actor's goal: the achieved goal of the state ``subgoal_steps`` on in the
    sample's episode, at most its last (the settings' ``subgoal_steps``),
    ``(B, *goal_shape)``; None without subgoals."""
    high_actor_target: Any = None
    """HIQL's high actor's target: the achieved goal of the state ``subgoal_steps`` on, at
    most the step where ``actor_goal`` is reached (the episode's last for a random goal),
    ``(B, *goal_shape)``; None without subgoals."""
    high_actor_target_observation: Any = None
    """The observation of that state, ``(B, *obs_shape)``; None without subgoals."""

    def __len__(self) -> int:
        return len(self.reward)

    def to_torch(self, device: Any = "cpu") -> Batch:
        """The same batch as torch tensors on ``device`` (CPU tensors share memory); without
        torch, a ModuleNotFoundError that names the extra to install."""
        try:
            import torch
        except ModuleNotFoundError as error:
            raise ModuleNotFoundError(TORCH_MISSING, name=error.name) from None

        def convert(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, dict):
                return {key: convert(item) for key, item in value.items()}
            if isinstance(value, torch.Tensor):  # sampled by a buffer on a device
                return value.to(device)
            return torch.as_tensor(np.ascontiguousarray(value), device=device)

        return replace(self, **{f.name: convert(getattr(self, f.name)) for f in fields(self)})
