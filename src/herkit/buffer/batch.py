"""The sampled minibatch, from the draw to the loss: :class:`Batch`."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["TORCH_MISSING", "Array", "Batch"]

TORCH_MISSING = "Batch.to_torch needs torch, from herkit's train extra: pip install 'herkit[train]'"
"""What :meth:`Batch.to_torch` says without torch (the buffer imports nothing of herkit
outside it, so these are :func:`herkit.extras.needs_extra`'s words, written out)."""

Array: TypeAlias = Union[np.ndarray, "torch.Tensor"]
"""A field of a :class:`Batch`: a numpy array from a host buffer, a torch tensor from a
buffer on a device, a draw within an update or :meth:`Batch.to_torch`."""


@dataclass(frozen=True)
class Batch:
    """Transitions with a leading batch axis, goals already relabelled: the one batch from
    the draw to the agent, on the host and on a device.

    Numpy arrays as sampled from a host buffer, torch tensors on the device from a buffer
    built with ``device=`` (``indices`` then stay a numpy array: they are host keys) or
    drawn within an update (:class:`~herkit.buffer.device_sampler.DeviceSampler`);
    :meth:`to_torch` returns the same batch as tensors. An agent's update turns it into the
    network inputs its loss reads (:class:`herkit.agents.inputs.TorchBatch`, by
    :meth:`herkit.agents.inputs.AgentInputs.prepare`); ``len(batch)`` is its number of
    samples, :meth:`fields` its fields in order (a compiled or captured step takes them).
    """

    observation: Array
    """Observation before the action, ``(B, *obs_shape)``."""
    action: Array
    """Action taken, ``(B, *action_shape)``."""
    reward: Array
    """Reward recomputed for ``goal``, float32 ``(B,)``."""
    next_observation: Array
    """Observation after the action, ``(B, *obs_shape)``."""
    goal: Array
    """Desired goal of this sample (relabelled or the original), ``(B, *goal_shape)``."""
    achieved_goal: Array | None
    """Goal achieved before the action, ``(B, *goal_shape)``; None in a batch drawn
    within an update, which no agent reads it from."""
    next_achieved_goal: Array | None
    """Goal achieved after the action, ``(B, *goal_shape)``; None as ``achieved_goal``."""
    terminated: Array
    """1.0 where the transition ends the episode for real (not a timeout), float32 ``(B,)``."""
    discount: Array | None = None
    """n-step returns only: ``gamma ** m`` per sample, where ``m`` is the number of steps
    summed in ``reward`` and ``next_observation`` is the observation ``m`` steps later
    (``terminated`` then refers to that last step); None for one-step samples."""
    weights: Array | None = None
    """Importance-sampling weights (max 1), float32 ``(B,)``; prioritized replay only."""
    indices: Array | None = None
    """Keys for ``update_priorities``, int64 ``(B,)`` (a numpy array from a buffer; the
    drawn slots, a tensor, from a draw within an update); prioritized replay only."""
    extras: dict[str, Array] | None = None
    """The observation keys beyond the GoalEnv's three (``extra_keys``), before the
    action, ``{key: (B, *shape)}``; None without extra keys."""
    next_extras: dict[str, Array] | None = None
    """The same keys of ``next_observation`` (n steps later with n-step returns)."""
    actor_goal: Array | None = None
    """A second goal per sample for the actor, drawn by the settings' ``actor_goals`` mix
    (offline goal-conditioned agents, OGBench's rule), ``(B, *goal_shape)``; None
    without that mix. HIQL's high actor takes it as its goal."""
    low_actor_goal: Array | None = None
    """HIQL's low actor's goal: the achieved goal of the state ``subgoal_steps`` on in the
    sample's episode, at most its last (the settings' ``subgoal_steps``),
    ``(B, *goal_shape)``; None without subgoals."""
    high_actor_target: Array | None = None
    """HIQL's high actor's target: the achieved goal of the state ``subgoal_steps`` on, at
    most the step where ``actor_goal`` is reached (the episode's last for a random goal),
    ``(B, *goal_shape)``; None without subgoals."""
    high_actor_target_observation: Array | None = None
    """The observation of that state, ``(B, *obs_shape)``; None without subgoals."""

    def __len__(self) -> int:
        return len(self.reward)

    def fields(self) -> list[Any]:
        """The fields' values in their order (``Batch(*batch.fields())`` is the batch)."""
        return [getattr(self, field.name) for field in fields(self)]

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
