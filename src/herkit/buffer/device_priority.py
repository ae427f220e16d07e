"""Prioritized replay where the buffer lives: :class:`DeviceSumTree` and
:class:`DevicePriorities`.

A buffer on a device keeps its priorities in a host :class:`~herkit.buffer.priority.SumTree`;
reading each update's TD errors back to it costs a host sync per update. With
:class:`~herkit.buffer.device_sampler.DeviceSampler` the priorities live on the device
instead: a sum tree of torch tensors whose writes and searches are fixed-shape device work
(a gather or a scatter per level of the tree, no host read), so that drawing by priority,
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

if TYPE_CHECKING:
    from herkit.buffer.sampler import TransitionSampler

__all__ = ["DevicePriorities", "DeviceSumTree"]


class DeviceSumTree:
    """The layout of :class:`~herkit.buffer.priority.SumTree` (node ``i`` has children
    ``2i`` and ``2i+1``, leaf ``j`` at ``size + j``) as one float64 tensor on ``device``;
    every operation is device work of a fixed shape."""

    def __init__(self, capacity: int, device: torch.device | str) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be a positive int, got {capacity}")
        self.capacity = int(capacity)
        self.size = 1 << max(0, (self.capacity - 1).bit_length())
        self.depth = self.size.bit_length() - 1
        self.tree = torch.zeros(2 * self.size, dtype=torch.float64, device=device)

    @property
    def leaves(self) -> torch.Tensor:
        """The leaf values (a view)."""
        return self.tree[self.size : self.size + self.capacity]

    @property
    def total(self) -> torch.Tensor:
        """The sum of all leaves (a 0-d tensor on the device)."""
        return self.tree[1]

    def set(self, leaves: torch.Tensor, values: torch.Tensor) -> None:
        """Write ``values`` at ``leaves`` and the sums above them, level by level (of a
        leaf named twice, one write is kept)."""
        tree = self.tree
        nodes = leaves + self.size
        tree.index_put_((nodes,), values.to(torch.float64))
        for _ in range(self.depth):
            nodes = nodes // 2
            tree.index_put_((nodes,), tree[2 * nodes] + tree[2 * nodes + 1])

    def load(self, leaves: torch.Tensor) -> None:
        """Replace every leaf and rebuild the whole tree."""
        tree = self.tree
        tree.zero_()
        tree[self.size : self.size + self.capacity] = leaves.to(torch.float64)
        level = self.size
        while level > 1:
            tree[level // 2 : level] = tree[level : 2 * level : 2] + tree[level + 1 : 2 * level : 2]
            level //= 2

    def find(self, mass: torch.Tensor) -> torch.Tensor:
        """Leaf ``j`` per mass with ``prefix(j) <= mass < prefix(j + 1)``, never a leaf of
        value 0 while the total is positive (a rounded mass at a subtree's end turns back
        from an empty sibling)."""
        tree = self.tree
        node = torch.ones(mass.shape, dtype=torch.int64, device=tree.device)
        mass = mass.to(torch.float64).clamp(min=0.0)
        for _ in range(self.depth):
            left = 2 * node
            left_sum, right_sum = tree[left], tree[left + 1]
            go_right = ((mass >= left_sum) & (right_sum > 0.0)) | (left_sum <= 0.0)
            mass = torch.where(go_right, mass - left_sum, mass)
            node = left + go_right.long()
        return node - self.size

    def sample(self, n: int, uniform: Callable[[int], torch.Tensor]) -> torch.Tensor:
        """``n`` leaves drawn in proportion to their values, one from each of ``n`` equal
        strata of the total (as the host tree draws), by the numbers of ``uniform``."""
        bounds = torch.arange(n, dtype=torch.float64, device=self.tree.device) + uniform(n)
        return self.find(bounds * (self.total / n))


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
        self.tree = DeviceSumTree(host.capacity, device)
        self.max_priority = torch.ones((), dtype=torch.float64, device=device)
        self.alpha, self.beta, self.eps = sampler.alpha, sampler.beta, sampler.eps
        self.from_host()

    def from_host(self) -> None:
        """Take the host tree's leaves and largest priority (the buffer is new, or was
        restored)."""
        host = self.sampler.tree
        assert host is not None
        self.tree.load(torch.from_numpy(np.array(host.leaves)).to(self.device))
        self.max_priority.fill_(self.sampler.max_priority)

    def follow(self, slots: torch.Tensor, live: torch.Tensor) -> None:
        """The ``slots`` written or dropped since the last call: those ``live`` may be drawn,
        with the largest priority so far, the others no more."""
        self.tree.set(slots, torch.where(live, self.max_priority, 0.0))

    def draw(
        self, n: int, uniform: Callable[[int], torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` slots drawn by priority and their importance weights
        ``(P(i) / min P) ** -beta`` (float32; the host's weights, the population cancelled)."""
        slots = self.tree.sample(n, uniform)
        probability = self.tree.leaves[slots] / self.tree.total
        weights = probability**-self.beta
        return slots, (weights / weights.max()).float()

    def reprioritize(self, slots: torch.Tensor, td_abs: torch.Tensor) -> None:
        """Give the drawn ``slots`` the priorities ``(|TD error| + eps) ** alpha``, where
        they may still be drawn (the host's rule); device work only."""
        value = (td_abs.detach().to(torch.float64).reshape(-1) + self.eps) ** self.alpha
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
