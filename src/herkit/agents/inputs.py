"""What an agent's networks take: observations and goals normalised and joined, and a
:class:`~herkit.buffer.batch.Batch` as tensors on the agent's device (:class:`AgentInputs`,
:class:`TorchBatch`).

A batch arrives as numpy arrays (a buffer on the host) or as tensors (a buffer on a
device). Host arrays are normalised in numpy, where one env step costs a few microseconds
against about ten times more in torch's dispatch; tensors are normalised where they lie.
:meth:`AgentInputs.raw` and :meth:`AgentInputs.from_raw` split the same work for an update
that is compiled or captured: the first moves a batch's arrays to the device (host arrays
through pinned memory, without waiting), the second is device work only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from herkit.agents.normalizer import Normalizer
from herkit.buffer.backend import to_device
from herkit.buffer.batch import Batch
from herkit.buffer.device_sampler import DeviceBatch

__all__ = ["AgentInputs", "TorchBatch"]


class TorchBatch(NamedTuple):
    """A :class:`Batch` as float32 tensors on the agent's device, inputs normalised."""

    x: torch.Tensor
    """``normalise(observation) || normalise(goal)``, ``(B, obs_dim + goal_dim)``."""
    next_x: torch.Tensor
    """``normalise(next_observation) || normalise(goal)``."""
    action: torch.Tensor
    """Actions as stored, ``(B,)`` int64 or ``(B, act_dim)`` float32."""
    reward: torch.Tensor
    """Rewards ``(B,)`` (times the agent's reward scale)."""
    not_done: torch.Tensor
    """``1 - terminated``, ``(B,)``: timeouts bootstrap."""
    discount: torch.Tensor | None
    """Per-sample discount of the bootstrap (``gamma ** m`` for n-step samples), or None
    for ``gamma``."""
    weights: torch.Tensor | None
    """Per-sample loss weights ``(B,)`` (prioritized replay), or None."""
    actor_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(actor_goal)`` where the batch has actor goals
    (:attr:`herkit.Batch.actor_goal`, offline agents), else None."""
    next_actor_x: torch.Tensor | None = None
    """``normalise(next_observation) || normalise(actor_goal)``, or None as ``actor_x``."""


class AgentInputs:
    """Normalises observations and goals and brings batches to ``device``."""

    def __init__(
        self,
        obs_normalizer: Normalizer,
        goal_normalizer: Normalizer,
        observation_dim: int,
        goal_dim: int,
        device: torch.device,
        normalize: bool = True,
    ) -> None:
        self.obs_normalizer = obs_normalizer
        self.goal_normalizer = goal_normalizer
        self.observation_dim = observation_dim
        self.goal_dim = goal_dim
        self.device = device
        self.normalize = normalize
        """Whether inputs are standardised (else fed as they are, as float32)."""

    def host(self, observation: Any, goal: Any) -> torch.Tensor:
        """``normalise(observation) || normalise(goal)`` as a float32 tensor on the device,
        normalised on the host in numpy."""
        obs = np.asarray(observation).reshape(-1, self.observation_dim)
        goal = np.asarray(goal).reshape(-1, self.goal_dim)
        if len(obs) != len(goal):
            raise ValueError(f"observation and goal batch sizes differ: {len(obs)} vs {len(goal)}")
        if self.normalize:
            obs, goal = self.obs_normalizer.normalize(obs), self.goal_normalizer.normalize(goal)
        x = np.concatenate([obs, goal], axis=1, dtype=np.float32)
        return torch.from_numpy(x).to(self.device)

    def tensors(self, observation: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """:meth:`host` for tensors: normalised where they lie, then moved to the device
        (no move when the buffer lives there)."""
        obs = observation.reshape(-1, self.observation_dim)
        goals = goal.reshape(-1, self.goal_dim)
        if not self.normalize:
            return torch.cat([obs.float(), goals.float()], dim=1).to(self.device)
        x = torch.cat(
            [
                self.obs_normalizer.normalize_tensor(obs),
                self.goal_normalizer.normalize_tensor(goals),
            ],
            dim=1,
        )
        return x.to(self.device)

    def batch(self, batch: Batch, reward_scale: float) -> TorchBatch:
        """``batch`` for an eager update: x and next_x (and, with actor goals, actor_x and
        next_actor_x) in one pass each way."""
        weights = None if batch.weights is None else self._tensor(batch.weights).reshape(-1)
        observations = [batch.observation, batch.next_observation]
        goals = [batch.goal, batch.goal]
        if batch.actor_goal is not None:
            observations += observations
            goals += [batch.actor_goal, batch.actor_goal]
        if isinstance(batch.observation, torch.Tensor):  # from a buffer on a device
            inputs = self.tensors(
                torch.cat(observations), torch.cat([torch.as_tensor(g) for g in goals])
            ).chunk(len(goals))
        else:  # one transfer and one normalisation for all
            inputs = self.host(np.concatenate(observations), np.concatenate(goals)).chunk(
                len(goals)
            )
        x, next_x = inputs[0], inputs[1]
        actor_x, next_actor_x = (inputs[2], inputs[3]) if len(inputs) == 4 else (None, None)
        return TorchBatch(
            x=x,
            next_x=next_x,
            action=(
                batch.action.to(self.device)
                if isinstance(batch.action, torch.Tensor)
                else torch.as_tensor(np.asarray(batch.action), device=self.device)
            ),
            reward=self._tensor(batch.reward).reshape(-1) * reward_scale,
            not_done=1.0 - self._tensor(batch.terminated).reshape(-1),
            discount=None if batch.discount is None else self._tensor(batch.discount).reshape(-1),
            weights=weights,
            actor_x=actor_x,
            next_actor_x=next_actor_x,
        )

    def raw(self, batch: Batch, action_dtype: torch.dtype) -> DeviceBatch:
        """``batch``'s arrays on the device, for :meth:`from_raw` (host arrays are copied
        without waiting, through pinned memory on CUDA), its actor goals too."""

        def put(value: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            if not isinstance(value, torch.Tensor):
                value = to_device(np.asarray(value), self.device)
            return value.to(self.device, dtype, non_blocking=True)

        def flat(value: Any) -> torch.Tensor | None:
            return None if value is None else put(value).reshape(-1)

        actor_goal = None if batch.actor_goal is None else put(batch.actor_goal)
        return DeviceBatch(
            put(batch.observation),
            put(batch.next_observation),
            put(batch.goal),
            put(batch.action, action_dtype),
            put(batch.reward).reshape(-1),
            put(batch.terminated).reshape(-1),
            flat(batch.discount),
            flat(batch.weights),
            actor_goal=actor_goal,
        )

    def from_raw(self, raw: DeviceBatch, reward_scale: float) -> TorchBatch:
        """A :class:`DeviceBatch` normalised on the device: device work only (the normalisers'
        host statistics copied there first, :meth:`sync`), so it can be captured; its actor
        goals too, where it has them."""
        observations = [raw.observation, raw.next_observation]
        goals = [raw.goal, raw.goal]
        if raw.actor_goal is not None:
            observations += observations
            goals += [raw.actor_goal, raw.actor_goal]
        obs = torch.cat(observations).reshape(-1, self.observation_dim)
        goal = torch.cat(goals).reshape(-1, self.goal_dim)
        if self.normalize:
            obs = self.obs_normalizer.normalize_device(obs)
            goal = self.goal_normalizer.normalize_device(goal)
        inputs = torch.cat([obs.float(), goal.float()], dim=1).chunk(len(goals))
        actor_x, next_actor_x = (inputs[2], inputs[3]) if len(inputs) == 4 else (None, None)
        return TorchBatch(
            x=inputs[0],
            next_x=inputs[1],
            action=raw.action,
            reward=raw.reward.reshape(-1) * reward_scale,
            not_done=1.0 - raw.terminated.reshape(-1),
            discount=raw.discount,
            weights=raw.weights,
            actor_x=actor_x,
            next_actor_x=next_actor_x,
        )

    def sync(self) -> None:
        """Copy the normalisers' host statistics to the device where they changed."""
        if not self.normalize:
            return
        self.obs_normalizer.sync_device(self.device)
        self.goal_normalizer.sync_device(self.device)

    def _tensor(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(self.device).float()
        return torch.as_tensor(np.asarray(x), device=self.device).float()
