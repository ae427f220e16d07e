"""A vectorised sum tree for prioritized experience replay (Schaul et al. 2016).

The tree is a flat float64 array: node ``i`` has children ``2i`` and ``2i+1``, the root
is node 1 and leaf ``j`` lives at ``size + j``. Every operation works on whole index
arrays, level by level, so there is no Python loop over a batch.

Leaf writes are cheap: :meth:`SumTree.set` writes the leaves at once and only records
them as dirty; the inner sums are brought up to date by the next read of the tree
(:meth:`total`, :meth:`find`, :meth:`sample`). Adding transitions one env step at a time
therefore costs a slice write, not a climb of ``log2(capacity)`` levels.

:func:`importance_weights` and :func:`checked_priorities` are the buffer's two other
pieces of prioritized replay: the weights of a sample and the checks of new priorities.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SumTree", "checked_priorities", "importance_weights"]


class SumTree:
    """Sums of non-negative leaf values with O(log n) vectorised updates and searches."""

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be a positive int, got {capacity}")
        self.capacity = int(capacity)
        self.size = 1 << max(0, (self.capacity - 1).bit_length())
        self.depth = self.size.bit_length() - 1
        self._tree = np.zeros(2 * self.size, dtype=np.float64)
        self._dirty: list[np.ndarray] = []
        self._ranges: list[list[int]] = []  # dirty [start, stop) leaf ranges

    @property
    def leaves(self) -> np.ndarray:
        """Read-only view of the leaf values (always current, dirty or not)."""
        view = self._tree[self.size : self.size + self.capacity]
        view.flags.writeable = False
        return view

    def set(self, indices: np.ndarray | slice, values: np.ndarray | float) -> None:
        """Write leaf values; the inner sums follow at the next read.

        A slice (step 1) is written as a slice, and a slice that continues the previous
        one, as consecutive adds produce, extends one dirty range instead of a new one.
        """
        if isinstance(indices, slice):
            start, stop, _ = indices.indices(self.capacity)
            self._tree[self.size + start : self.size + stop] = values
            if self._ranges and self._ranges[-1][1] == start:
                self._ranges[-1][1] = stop
            else:
                self._ranges.append([start, stop])
            return
        indices = np.asarray(indices, dtype=np.int64)
        self._tree[self.size + indices] = values
        self._dirty.append(indices)

    def flush(self) -> None:
        """Recompute the inner nodes above every leaf written since the last flush.

        Repeated nodes are not removed: each copy writes the same sum, which costs less
        than sorting them out at every level.
        """
        if self._ranges:
            self._dirty.extend(np.arange(start, stop) for start, stop in self._ranges)
            self._ranges.clear()
        if not self._dirty:
            return
        nodes = np.concatenate(self._dirty) + self.size
        self._dirty.clear()
        tree = self._tree
        for _ in range(self.depth):
            nodes >>= 1
            tree[nodes] = tree.take(2 * nodes) + tree.take(2 * nodes + 1)

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        self.flush()
        return float(self._tree[1])

    def find(self, masses: np.ndarray) -> np.ndarray:
        """Leaf index ``j`` per mass with ``prefix(j) <= mass < prefix(j + 1)``.

        Masses are clipped into ``[0, total)``; a leaf of value 0 is never returned while
        the total is positive.
        """
        self.flush()
        tree = self._tree
        mass = np.maximum(np.asarray(masses, dtype=np.float64), 0.0)
        start = mass.copy()
        node = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth):
            node <<= 1
            left_sum = tree.take(node)
            go_right = mass >= left_sum
            np.subtract(mass, left_sum, out=mass, where=go_right)
            node += go_right
        # Rounding can carry a mass at the very end of a subtree into an empty sibling.
        stray = np.flatnonzero(tree.take(node) <= 0.0)
        if len(stray):
            node[stray] = self._find_careful(start[stray])
        return node - self.size

    def _find_careful(self, mass: np.ndarray) -> np.ndarray:
        """The descent of :meth:`find` that never enters an empty subtree (returns nodes)."""
        tree = self._tree
        node = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * node
            left_sum = tree[left]
            go_right = ((mass >= left_sum) & (tree[left + 1] > 0.0)) | (left_sum <= 0.0)
            mass = np.where(go_right, mass - left_sum, mass)
            node = left + go_right
        return node

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """Stratified sample of ``batch_size`` leaves with probability proportional to value."""
        total = self.total
        if total <= 0.0:
            raise ValueError("cannot sample from a sum tree whose leaves are all zero")
        bounds = np.arange(batch_size, dtype=np.float64) + rng.random(batch_size)
        return self.find(bounds * (total / batch_size))

    def load_leaves(self, leaves: np.ndarray) -> None:
        """Replace every leaf and rebuild the whole tree (used by load)."""
        leaves = np.asarray(leaves, dtype=np.float64)
        if leaves.shape != (self.capacity,):
            raise ValueError(f"leaves must have shape ({self.capacity},), got {leaves.shape}")
        self._tree[:] = 0.0
        self._tree[self.size : self.size + self.capacity] = leaves
        self._dirty.clear()
        self._ranges.clear()
        level = self.size
        while level > 1:
            parents = np.arange(level // 2, level)
            self._tree[parents] = self._tree[2 * parents] + self._tree[2 * parents + 1]
            level //= 2


def importance_weights(
    tree: SumTree, indices: np.ndarray, beta: float, population: int
) -> np.ndarray:
    """Importance-sampling weights ``(population * P(i)) ** -beta`` of sampled leaves,
    divided by their maximum (float32); ``population`` is the number of live leaves."""
    probability = tree.leaves[indices] / tree.total
    weights = (population * probability) ** -beta
    return (weights / weights.max()).astype(np.float32)


def checked_priorities(
    indices: Any, priorities: Any, capacity: int
) -> tuple[np.ndarray, np.ndarray]:
    """``indices`` (1-D ints in ``[0, capacity)``) and ``priorities`` (one finite value >= 0
    per index; an array, or a tensor on any device) as arrays; ValueError naming what is
    wrong otherwise."""
    idx = np.asarray(indices)
    if hasattr(priorities, "detach"):  # a torch tensor, perhaps on a GPU
        priorities = priorities.detach().cpu().numpy()
    value = np.asarray(priorities, dtype=np.float64).reshape(-1)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be a 1-D integer array, got {idx.dtype} {idx.shape}")
    if value.shape != idx.shape:
        raise ValueError(
            f"priorities must have one value per index, shape {idx.shape}, got {value.shape}"
        )
    if len(idx) and (idx.min() < 0 or idx.max() >= capacity):
        raise ValueError(f"indices must lie in [0, {capacity}), got out of range")
    if not np.all(np.isfinite(value)) or np.any(value < 0):
        raise ValueError("priorities must be finite and >= 0")
    return idx, value
