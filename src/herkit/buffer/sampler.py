"""Which stored transitions a batch holds: :class:`TransitionSampler`.

Uniformly over the transitions that may be sampled (all, or in store mode those of
finished episodes), or with ``prioritized`` in proportion to their priority (a
:class:`~herkit.buffer.priority.SumTree` of one leaf per slot, or one per (slot, goal)
pair in store mode), with importance weights. In store mode it also draws which of a
transition's ``k + 1`` goals a sample takes. New transitions get the largest priority
given so far; a transition dropped from the ring gets none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from herkit.buffer.backend import NUMPY
from herkit.buffer.priority import SumTree, checked_priorities, importance_weights, priorities_of
from herkit.buffer.settings import HerSettings
from herkit.buffer.storage import EpisodeStorage, sample_slots

__all__ = ["DrawnSlots", "TransitionSampler"]


@dataclass(frozen=True)
class DrawnSlots:
    """The transitions of a batch: their slots, in store mode which goal of each (0: its
    own; None: sample mode), and with priorities their leaves and importance weights."""

    slots: np.ndarray
    copy: np.ndarray | None = None
    indices: np.ndarray | None = None
    weights: np.ndarray | None = None


class TransitionSampler:
    """Draws the transitions of batches from ``storage`` (see the module's docstring)."""

    def __init__(self, storage: EpisodeStorage, settings: HerSettings) -> None:
        self.storage = storage
        self.closed_only = settings.relabel == "store"
        self.copies = settings.goals_per_transition + 1 if self.closed_only else 1
        """Goals per transition that a sample picks from: ``k + 1`` in store mode, else 1."""
        self.alpha, self.beta, self.eps = settings.alpha, settings.beta, settings.eps
        self.tree = SumTree(storage.slots * self.copies) if settings.prioritized else None
        self.max_priority = 1.0

    def count(self) -> int:
        """Transitions that may be sampled."""
        return self.storage.count(self.closed_only)

    def draw(self, batch_size: int, rng: np.random.Generator, beta: float | None) -> DrawnSlots:
        """The transitions of a batch of ``batch_size`` (``beta``: the importance-sampling
        exponent, None for the settings')."""
        if self.tree is None:
            ledger = self.storage.ledger(self.closed_only)
            slots = sample_slots(ledger, rng.random(batch_size))
            copy = rng.integers(0, self.copies, size=batch_size) if self.copies > 1 else None
            return DrawnSlots(slots, copy)
        indices = self.tree.sample(batch_size, rng.random(batch_size))
        beta = self.beta if beta is None else beta
        weights = importance_weights(NUMPY, self.tree.leaves[indices], self.tree.total, beta)
        copy = indices % self.copies if self.copies > 1 else None
        return DrawnSlots(indices // self.copies, copy, indices, weights)

    def added(self, base: int, n_envs: int, dropped: np.ndarray) -> None:
        """Give priorities to the ``n_envs`` slots written from ``base`` (in store mode
        none until their episode ends) and take them from the ``dropped`` slots."""
        if self.tree is None:
            return
        block = slice(base * self.copies, (base + n_envs) * self.copies)
        self.tree.set(block, 0.0 if self.closed_only else self.max_priority)
        if len(dropped):
            self.tree.set(self.leaves_of(dropped), 0.0)

    def may_sample(self, slots: np.ndarray) -> None:
        """The transitions of ``slots`` may now be sampled (store mode: their episode
        ended and their goals are written)."""
        if self.tree is not None:
            self.tree.set(self.leaves_of(slots), self.max_priority)

    def leaves_of(self, slots: np.ndarray) -> np.ndarray:
        """The priority leaves of ``slots``: one per slot, or ``copies`` per slot."""
        if self.copies == 1:
            return slots
        return (slots[:, None] * self.copies + np.arange(self.copies)).ravel()

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (e.g. absolute TD errors) of sampled ``indices``, stored as
        ``(priority + eps) ** alpha``; indices whose transition has been dropped since it
        was sampled are ignored."""
        if self.tree is None:
            raise ValueError("update_priorities needs a buffer built with prioritized=True")
        idx, value = checked_priorities(indices, priorities, self.tree.capacity)
        value = priorities_of(value, self.eps, self.alpha)
        live = self.tree.leaves[idx] > 0
        self.tree.set(idx[live], value[live])
        if len(value):
            self.max_priority = max(self.max_priority, float(value.max()))
