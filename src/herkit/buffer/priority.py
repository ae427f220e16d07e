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

from herkit.buffer.backend import NUMPY, ArrayOps

__all__ = ["SumTree", "checked_priorities", "importance_weights", "priorities_of"]


class SumTree:
    """Sums of non-negative leaf values with O(log n) vectorised updates and searches, in
    the arrays of ``ops`` (numpy on the host, torch tensors on a device).

    ``lazy`` (the host's way): :meth:`set` writes leaves and notes them, and the inner sums
    follow at the next read, so that adding transitions one env step at a time costs a
    slice write rather than a climb. Not lazy (a device's way): every :meth:`set` climbs
    at once, fixed-shape device work with no Python state, so it can run within a captured
    update; reads then need no flush.
    """

    def __init__(self, capacity: int, ops: ArrayOps = NUMPY, lazy: bool = True) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be a positive int, got {capacity}")
        self.capacity = int(capacity)
        self.size = 1 << max(0, (self.capacity - 1).bit_length())
        self.depth = self.size.bit_length() - 1
        self.ops, self.lazy = ops, lazy
        self.tree = ops.zeros((2 * self.size,), np.dtype(np.float64))
        self._dirty: list[np.ndarray] = []
        self._ranges: list[list[int]] = []  # dirty [start, stop) leaf ranges

    @property
    def leaves(self) -> Any:
        """The leaf values (always current, dirty or not; on the host a read-only view)."""
        view = self.tree[self.size : self.size + self.capacity]
        if isinstance(view, np.ndarray):
            view.flags.writeable = False
        return view

    def set(self, indices: Any, values: Any) -> None:
        """Write leaf values (of a leaf named twice, one write is kept); the inner sums
        follow at once, or with ``lazy`` at the next read. Lazily, a slice (step 1) that
        continues the previous one, as consecutive adds write, extends one dirty range."""
        if isinstance(indices, slice):
            start, stop, _ = indices.indices(self.capacity)
            self.ops.assign(self.tree, slice(self.size + start, self.size + stop), values)
            if self._ranges and self._ranges[-1][1] == start:
                self._ranges[-1][1] = stop
            else:
                self._ranges.append([start, stop])
            return
        if isinstance(indices, np.ndarray) or self.lazy:
            indices = np.asarray(indices, dtype=np.int64)
        self.ops.assign(self.tree, indices + self.size, values)
        if self.lazy:
            self._dirty.append(indices)
        else:
            self._climb(indices + self.size)

    def _climb(self, nodes: Any) -> None:
        """Recompute the sums above ``nodes``, level by level (a node named twice writes the
        same sum twice, which costs less than sorting the names out)."""
        ops, tree = self.ops, self.tree
        for _ in range(self.depth):
            nodes = nodes // 2
            ops.assign(tree, nodes, ops.take(tree, 2 * nodes) + ops.take(tree, 2 * nodes + 1))

    def flush(self) -> None:
        """Bring the inner sums up to date with the leaves written since the last flush."""
        if self._ranges:
            self._dirty.extend(np.arange(start, stop) for start, stop in self._ranges)
            self._ranges.clear()
        if self._dirty:
            nodes = np.concatenate(self._dirty) + self.size
            self._dirty.clear()
            self._climb(nodes)

    @property
    def total(self) -> Any:
        """Sum of all leaves (a float; on a device, a 0-d tensor there)."""
        self.flush()
        return float(self.tree[1]) if isinstance(self.tree, np.ndarray) else self.tree[1]

    def find(self, masses: Any) -> Any:
        """Leaf index ``j`` per mass with ``prefix(j) <= mass < prefix(j + 1)``, masses
        clipped into ``[0, total)``; never a leaf of value 0 while the total is positive (a
        mass rounded to a subtree's very end turns back from an empty sibling)."""
        self.flush()
        ops, tree = self.ops, self.tree
        mass = ops.where(masses > 0, masses, 0.0)
        node = ops.zeros(tuple(mass.shape), np.dtype(np.int64)) + 1
        for _ in range(self.depth):
            left = 2 * node
            left_sum, right_sum = ops.take(tree, left), ops.take(tree, left + 1)
            go_right = ((mass >= left_sum) & (right_sum > 0.0)) | (left_sum <= 0.0)
            mass = ops.where(go_right, mass - left_sum, mass)
            node = left + go_right
        return node - self.size

    def sample(self, n: int, u: Any) -> Any:
        """``n`` leaves drawn in proportion to their values, one from each of ``n`` equal
        strata of the total, by the uniform numbers ``u``."""
        total = self.total
        if isinstance(total, float) and total <= 0.0:
            raise ValueError("cannot sample from a sum tree whose leaves are all zero")
        return self.find((self.ops.arange(n) + u) * (total / n))

    def load_leaves(self, leaves: Any) -> None:
        """Replace every leaf and rebuild the whole tree (a load, or a copy to a device)."""
        ops, tree = self.ops, self.tree
        if isinstance(leaves, np.ndarray | list):
            leaves = ops.from_host(np.asarray(leaves, dtype=np.float64))
        if tuple(leaves.shape) != (self.capacity,):
            raise ValueError(f"leaves must have shape ({self.capacity},), got {leaves.shape}")
        ops.assign(tree, slice(0, 2 * self.size), 0.0)
        ops.assign(tree, slice(self.size, self.size + self.capacity), leaves)
        self._dirty.clear()
        self._ranges.clear()
        level = self.size
        while level > 1:
            sums = tree[level : 2 * level : 2] + tree[level + 1 : 2 * level : 2]
            ops.assign(tree, slice(level // 2, level), sums)
            level //= 2


def importance_weights(ops: ArrayOps, leaves: Any, total: Any, beta: float) -> Any:
    """Importance-sampling weights ``(N * P(i)) ** -beta`` of sampled leaves of values
    ``leaves`` (``P(i) = leaf / total``), divided by their maximum: ``N``, the population,
    cancels, so that a device needs no count of its live leaves (float32)."""
    weights = (leaves / total) ** -beta
    return ops.as_float32(weights / weights.max())


def priorities_of(td_abs: Any, eps: float, alpha: float) -> Any:
    """The priorities ``(|TD error| + eps) ** alpha`` of new TD errors."""
    return (td_abs + eps) ** alpha


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
