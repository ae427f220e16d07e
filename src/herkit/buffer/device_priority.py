"""Prioritized replay where the buffer lives: :class:`DevicePriorities`.

A buffer on a device keeps its priorities in a host :class:`~herkit.buffer.priority.SumTree`;
reading each update's TD errors back to it costs a host sync per update. With
:class:`~herkit.buffer.device_sampler.DeviceSampler` the priorities live on the device
instead: the same sum tree on torch tensors, not lazy, so that its writes and searches are
fixed-shape device work (a gather or a scatter per level, no host read) and drawing by priority,
the importance weights and the new priorities after an update all run within a captured
update. The host tree stays the record of the priorities: the device's are copied to it
by :meth:`DevicePriorities.to_host` (before a checkpoint), and from it by
:meth:`DevicePriorities.from_host` when the device's copy is built or the buffer restored.

Which transitions may be drawn follows the host's bookkeeping: the slots written since
the last :meth:`DevicePriorities.follow` get the largest priority given so far (the host's
rule), the slots of episodes dropped from the ring get none, as the host's tree says.

This module imports torch, as :mod:`herkit.buffer.device_sampler` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from herkit.buffer.backend import array_ops
from herkit.buffer.priority import SumTree, importance_weights, priorities_of

if TYPE_CHECKING:
    from herkit.buffer.sampler import TransitionSampler

__all__ = ["DevicePriorities"]


class DevicePriorities:
    """The priorities of a :class:`~herkit.buffer.sampler.TransitionSampler` (sample mode:
    one leaf per slot) on ``device``, kept there through draws and updates."""

    def __init__(self, sampler: TransitionSampler, device: torch.device) -> None:
        host = sampler.tree
        if host is None:
            raise ValueError("DevicePriorities needs a sampler built with prioritized=True")
        if sampler.copies != 1:
            raise ValueError("priorities on the device need one goal per slot (sample mode)")
        self.sampler = sampler
        self.device = device
        self.ops = array_ops(device)
        self.tree = SumTree(host.capacity, self.ops, lazy=False)
        self.max_priority = torch.ones((), dtype=torch.float64, device=device)
        self.alpha, self.beta, self.eps = sampler.alpha, sampler.beta, sampler.eps
        self.from_host()

    def from_host(self) -> None:
        """Take the host tree's leaves and largest priority (the buffer is new, or was
        restored)."""
        host = self.sampler.tree
        assert host is not None
        self.tree.load_leaves(np.array(host.leaves))
        self.max_priority.fill_(self.sampler.max_priority)

    def follow(self, slots: torch.Tensor, live: torch.Tensor) -> None:
        """The ``slots`` written or dropped since the last call: those ``live`` may be drawn,
        with the largest priority so far, the others no more."""
        self.tree.set(slots, torch.where(live, self.max_priority, 0.0))

    def draw(
        self, n: int, uniform: Callable[[int], torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` slots drawn by priority (by the numbers of ``uniform``) and their importance
        weights (:func:`~herkit.buffer.priority.importance_weights`, as the host's)."""
        slots = self.tree.sample(n, uniform(n))
        return slots, importance_weights(
            self.ops, self.tree.leaves[slots], self.tree.total, self.beta
        )

    def reprioritize(self, slots: torch.Tensor, td_abs: torch.Tensor) -> None:
        """Give the drawn ``slots`` the priorities ``(|TD error| + eps) ** alpha``, where
        they may still be drawn (the host's rule); device work only."""
        value = priorities_of(td_abs.detach().to(torch.float64).reshape(-1), self.eps, self.alpha)
        current = self.tree.leaves[slots]
        self.tree.set(slots, torch.where(current > 0, value, current))
        self.max_priority.copy_(torch.maximum(self.max_priority, value.max()))

    def to_host(self) -> None:
        """Copy the priorities and the largest one to the host tree (one read), so that
        the buffer saves what the device learnt."""
        host = self.sampler.tree
        assert host is not None
        host.load_leaves(self.tree.leaves.cpu().numpy())
        self.sampler.max_priority = float(self.max_priority)
