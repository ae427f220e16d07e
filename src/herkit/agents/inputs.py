"""From a :class:`~herkit.buffer.batch.Batch` to what an algorithm's loss reads: one
:meth:`AgentInputs.prepare` for every update mode.

:class:`TorchBatch` holds the network inputs, observations and goals normalised and joined
(``normalise(observation) || normalise(goal)``), as float32 tensors on the agent's device,
and the rewards, ends, discounts and weights the TD targets take. :class:`AgentInputs`
makes it: :meth:`AgentInputs.prepare` turns a batch into it, host arrays normalised in
numpy (where one env step costs a few microseconds against ten times more in torch's
dispatch) and moved in one transfer, tensors normalised where they lie as device work
only, so that a compiled or captured step calls it too (:meth:`AgentInputs.to_device`
first moves a host batch there, :meth:`AgentInputs.sync` the normalisers' statistics).
Which inputs a batch makes (its actor goals, HIQL's subgoals) is written once, in
:func:`input_pairs`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from herkit.agents.normalizer import Normalizer
from herkit.buffer.backend import to_device
from herkit.buffer.batch import Array, Batch

__all__ = ["AgentInputs", "TorchBatch", "input_pairs"]


class TorchBatch(NamedTuple):
    """A :class:`Batch` as the losses read it: float32 tensors on the agent's device,
    inputs normalised (made by :meth:`AgentInputs.prepare`)."""

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
    low_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(low_actor_goal)`` where the batch has HIQL's
    subgoals (:attr:`herkit.Batch.low_actor_goal`), else None."""
    next_low_x: torch.Tensor | None = None
    """``normalise(next_observation) || normalise(low_actor_goal)``, or None."""
    target_x: torch.Tensor | None = None
    """``normalise(high_actor_target_observation) || normalise(actor_goal)`` (the value
    goal's without actor goals): the high actor's target state and goal, or None."""
    target_goal_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(high_actor_target)``: the state and the high
    actor's target as a goal, or None."""


def input_pairs(batch: Batch) -> tuple[list[str], list[Array], list[Array]]:
    """The network inputs a batch makes, as the names of :class:`TorchBatch` and the
    observations and goals each joins: x and next_x; with actor goals actor_x and
    next_actor_x; with HIQL's subgoals low_x, next_low_x, target_x and target_goal_x."""
    obs, next_obs = batch.observation, batch.next_observation
    pairs: list[tuple[str, Array, Array | None]] = [
        ("x", obs, batch.goal),
        ("next_x", next_obs, batch.goal),
    ]
    if batch.actor_goal is not None:
        pairs += [("actor_x", obs, batch.actor_goal), ("next_actor_x", next_obs, batch.actor_goal)]
    if batch.low_actor_goal is not None:
        high = batch.goal if batch.actor_goal is None else batch.actor_goal
        if batch.high_actor_target_observation is None or batch.high_actor_target is None:
            raise ValueError("a batch with low_actor_goal needs HIQL's high actor targets too")
        pairs += [
            ("low_x", obs, batch.low_actor_goal),
            ("next_low_x", next_obs, batch.low_actor_goal),
            ("target_x", batch.high_actor_target_observation, high),
            ("target_goal_x", obs, batch.high_actor_target),
        ]
    names = [name for name, _, _ in pairs]
    observations = [o for _, o, _ in pairs]
    goals = [g for _, _, g in pairs if g is not None]
    return names, observations, goals


class AgentInputs:
    """Normalises observations and goals and brings batches to ``device`` (see the
    module's docstring); actions become ``action_dtype`` (int64 indices for discrete
    actions)."""

    def __init__(
        self,
        obs_normalizer: Normalizer,
        goal_normalizer: Normalizer,
        observation_dim: int,
        goal_dim: int,
        device: torch.device,
        normalize: bool = True,
        action_dtype: torch.dtype = torch.float32,
    ) -> None:
        self.obs_normalizer = obs_normalizer
        self.goal_normalizer = goal_normalizer
        self.observation_dim = observation_dim
        self.goal_dim = goal_dim
        self.device = device
        self.normalize = normalize
        """Whether inputs are standardised (else fed as they are, as float32)."""
        self.action_dtype = action_dtype

    def host(self, observation: np.ndarray, goal: np.ndarray) -> torch.Tensor:
        """``normalise(observation) || normalise(goal)`` as a float32 tensor on the device,
        normalised on the host in numpy."""
        obs = np.asarray(observation).reshape(-1, self.observation_dim)
        goals = np.asarray(goal).reshape(-1, self.goal_dim)
        if len(obs) != len(goals):
            raise ValueError(f"observation and goal batch sizes differ: {len(obs)} vs {len(goals)}")
        if self.normalize:
            obs, goals = self.obs_normalizer.normalize(obs), self.goal_normalizer.normalize(goals)
        x = np.concatenate([obs, goals], axis=1, dtype=np.float32)
        return torch.from_numpy(x).to(self.device)

    def prepare(self, batch: Batch, reward_scale: float) -> TorchBatch:
        """``batch`` as its loss reads it: every input of :func:`input_pairs` in one pass
        each way, rewards times ``reward_scale``. Host arrays are normalised in numpy and
        moved in one transfer; tensors are normalised on the device, device work only
        (after :meth:`sync`), as a compiled or captured step needs."""
        names, observations, goals = input_pairs(batch)
        if isinstance(batch.observation, torch.Tensor):
            tensor = self._on_device
            obs = torch.cat([tensor(o) for o in observations]).reshape(-1, self.observation_dim)
            goal = torch.cat([tensor(g) for g in goals]).reshape(-1, self.goal_dim)
            if self.normalize:
                obs = self.obs_normalizer.normalize_device(obs)
                goal = self.goal_normalizer.normalize_device(goal)
            joined = torch.cat([obs.float(), goal.float()], dim=1)
        else:
            tensor = self._from_host
            joined = self.host(np.concatenate(observations), np.concatenate(goals))
        return TorchBatch(
            **dict(zip(names, joined.chunk(len(goals)), strict=True)),
            action=tensor(batch.action, self.action_dtype),
            reward=tensor(batch.reward).reshape(-1) * reward_scale,
            not_done=1.0 - tensor(batch.terminated).reshape(-1),
            discount=None if batch.discount is None else tensor(batch.discount).reshape(-1),
            weights=None if batch.weights is None else tensor(batch.weights).reshape(-1),
        )

    def to_device(self, batch: Batch) -> Batch:
        """The fields of ``batch`` that :meth:`prepare` reads, as tensors on the device
        (host arrays copied without waiting, through pinned memory on CUDA): a fixed
        layout of tensors for a compiled or captured step, None where the batch has no
        such field (and for the achieved goals, indices and extras, which no loss reads)."""

        def put(value: Array, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            tensor = value if isinstance(value, torch.Tensor) else to_device(value, self.device)
            return tensor.to(self.device, dtype, non_blocking=True)

        def maybe(value: Array | None) -> torch.Tensor | None:
            return None if value is None else put(value)

        return Batch(
            observation=put(batch.observation),
            action=put(batch.action, self.action_dtype),
            reward=put(batch.reward),
            next_observation=put(batch.next_observation),
            goal=put(batch.goal),
            achieved_goal=None,
            next_achieved_goal=None,
            terminated=put(batch.terminated),
            discount=maybe(batch.discount),
            weights=maybe(batch.weights),
            actor_goal=maybe(batch.actor_goal),
            low_actor_goal=maybe(batch.low_actor_goal),
            high_actor_target=maybe(batch.high_actor_target),
            high_actor_target_observation=maybe(batch.high_actor_target_observation),
        )

    def sync(self) -> None:
        """Copy the normalisers' host statistics to the device where they changed."""
        if not self.normalize:
            return
        self.obs_normalizer.sync_device(self.device)
        self.goal_normalizer.sync_device(self.device)

    def _on_device(self, value: Array, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A tensor field as ``dtype`` on the device (nothing to do where it is so)."""
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"a batch of tensors needs tensors in every field, got {type(value)}")
        return value.to(self.device, dtype)

    def _from_host(self, value: Array, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A field of a host batch as a ``dtype`` tensor on the device (a tensor among its
        arrays is moved as it is)."""
        if isinstance(value, torch.Tensor):
            return value.to(self.device).to(dtype)
        return torch.as_tensor(np.asarray(value), device=self.device).to(dtype)
