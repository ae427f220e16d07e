"""Episodic ring storage for transitions from ``n_envs`` environments stepping in lockstep.

Layout: ``rows = capacity // n_envs`` rows of ``n_envs`` slots each, flattened so that
slot ``row * n_envs + env`` holds env ``env``'s transition written at that row. Every
``write`` fills one row, so each env owns one column and its episodes are contiguous
runs of rows in that column (modulo ``rows``). Rows are also counted absolutely
(``rows_written`` never wraps), which makes "is this row still here" a comparison.

Episodes live in a table indexed by episode id: start row (absolute) and length (0 while
the episode is open; its length is then ``rows_written - start``). A table of
``capacity + n_envs + 1`` ids is never reused while an episode that holds a slot lives
(at most ``n_envs`` ids are given per row, and a live episode started less than ``rows``
rows ago); the slots of an episode dropped earlier may still name its id after it was given
to a newer episode, whose start then lies after the slot's row.

Wrap-around: overwriting the first row of an old episode drops the whole episode. For
each env, the rows that may be sampled are ``[valid_from[env], end)``: ``valid_from``
jumps past an episode as soon as one of its rows is overwritten, so no sample and no
goal ever comes from a partly overwritten episode, and no goal index can land in
another episode.

A recorded dataset (:class:`~herkit.buffer.datasets.RecordedEpisodes`: its states held
once, episodes as index ranges) may be held after the ring (``recorded``): its
transitions take the slots ``capacity .. capacity + N - 1``, one more column of the
bookkeeping that never wraps and is never overwritten, and every column is read through
:meth:`EpisodeStorage.take`, which gathers a dataset slot's values from its states.

The columns of data are numpy arrays, or torch tensors on a device when built with
:class:`~herkit.buffer.backend.TorchOps`; the bookkeeping is numpy either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from herkit.buffer.backend import NUMPY, ArrayOps, NumpyOps, rows_mask
from herkit.buffer.datasets import unprefixed

if TYPE_CHECKING:
    from herkit.buffer.datasets import RecordedEpisodes


@dataclass(frozen=True)
class Ledger:
    """Where the sampleable transitions lie, in one backend's arrays (the storage's numpy
    bookkeeping, or its copy on a device): what a draw reads besides the stored columns.

    Column ``env`` (``0 .. n_envs - 1``) is an env's column of the ring: its absolute row
    ``r`` is slot ``(r % rows) * n_envs + env``. Where a recorded dataset is attached
    (``recorded > 0``), column ``n_envs`` holds its transitions: row ``r`` is slot
    ``ring_slots + r``, and ``valid_from`` and ``valid_end`` have one more entry for it."""

    episode_of: Any
    """The episode id of each slot."""
    episode_start: Any
    """Each episode's absolute start row (in its column)."""
    episode_length: Any
    """Each episode's length (0 while it is open)."""
    valid_from: Any
    """Per column, the first sampleable absolute row."""
    valid_end: Any
    """Per column, one past the last sampleable absolute row."""
    rows_written: Any
    """Rows written to the ring so far (an int, or a one-element tensor)."""
    rows: int
    """Rows of the ring (at least 1 here: a ring without room holds no sampleable row)."""
    n_envs: int
    ops: ArrayOps
    """The operations of these arrays' backend."""
    ring_slots: int = 0
    """Slots of the ring, ``rows * n_envs``: where a recorded dataset's slots begin."""
    recorded: int = 0
    """Transitions of a recorded dataset after the ring's slots (0: none)."""


def slot_at(ledger: Ledger, abs_rows: Any, column: Any) -> Any:
    """The slot of absolute row ``abs_rows`` of column ``column`` (see :class:`Ledger`)."""
    ring = (abs_rows % ledger.rows) * ledger.n_envs + column
    if not ledger.recorded:
        return ring
    return ledger.ops.where(column == ledger.n_envs, ledger.ring_slots + abs_rows, ring)


def column_of(ledger: Ledger, slots: Any) -> Any:
    """The column of each slot: its env's, or ``n_envs`` for a recorded dataset's."""
    if not ledger.recorded:
        return slots % ledger.n_envs
    return ledger.ops.where(slots >= ledger.ring_slots, ledger.n_envs, slots % ledger.n_envs)


def sample_slots(ledger: Ledger, u: Any) -> Any:
    """One slot per uniform number of ``u``, uniformly over the sampleable slots (the
    floor of ``u`` times their count, exact while it is below 2**53)."""
    ops = ledger.ops
    counts = ledger.valid_end - ledger.valid_from
    cum = ops.cumsum(counts, 0)
    pick = ops.minimum(ops.floor_int(u * cum[-1]), cum[-1] - 1)
    if ledger.n_envs == 1 and not ledger.recorded:
        return (ledger.valid_from[0] + pick) % ledger.rows
    column = ops.searchsorted(cum, pick)
    abs_rows = ops.take(ledger.valid_from, column) + pick - ops.take(cum - counts, column)
    return slot_at(ledger, abs_rows, column)


def positions(ledger: Ledger, slots: Any) -> tuple[Any, Any, Any]:
    """For each slot: its episode's absolute start row, its episode length (of an open
    episode, the rows recorded so far), its step."""
    ops = ledger.ops
    ids = ops.take(ledger.episode_of, slots)
    start = ops.take(ledger.episode_start, ids)
    length = ops.take(ledger.episode_length, ids)
    length = ops.where(length == 0, ledger.rows_written - start, length)
    step = (slots // ledger.n_envs - start) % ledger.rows
    if ledger.recorded:  # a recorded episode's rows never wrap
        step = ops.where(slots >= ledger.ring_slots, slots - ledger.ring_slots - start, step)
    return start, length, step


@dataclass(frozen=True)
class FieldSpec:
    """Shape (per transition) and dtype of one stored field."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @classmethod
    def of(cls, shape: int | tuple[int, ...], dtype: object) -> FieldSpec:
        """Build a spec from an int or tuple shape and anything ``np.dtype`` accepts."""
        shape_tuple = (int(shape),) if isinstance(shape, int | np.integer) else tuple(shape)
        return cls(tuple(int(s) for s in shape_tuple), np.dtype(dtype))  # type: ignore[call-overload]


class EpisodeStorage:
    """Preallocated columns of per-env episodes with O(1) bookkeeping per step, and a
    recorded dataset after them where one is given (see the module's docstring)."""

    def __init__(
        self,
        capacity: int,
        n_envs: int,
        fields: dict[str, FieldSpec],
        ops: ArrayOps | None = None,
        recorded: RecordedEpisodes | None = None,
    ) -> None:
        if n_envs < 1:
            raise ValueError(f"n_envs must be >= 1, got {n_envs}")
        if capacity < n_envs and not (recorded is not None and capacity == 0):
            raise ValueError(f"capacity must be >= n_envs ({n_envs}), got {capacity}")
        self.n_envs = n_envs
        self.rows = capacity // n_envs
        self.capacity = self.rows * n_envs
        """Slots of the ring (a recorded dataset's come after them)."""
        self.fields = dict(fields)
        self.ops = ops if ops is not None else NumpyOps()
        self.data: dict[str, Any] = {
            name: self.ops.zeros((self.capacity, *spec.shape), spec.dtype)
            for name, spec in self.fields.items()
        }
        self.table = self.capacity + n_envs + 1
        """Episode ids of the ring (a recorded dataset's episodes have the ids after them)."""
        self.recorded = recorded
        """The recorded dataset after the ring, or None."""
        held = 0 if recorded is None else recorded.transitions
        self.slots = self.capacity + held
        """Slots of the ring and of the recorded dataset together."""
        self.episode_of = np.zeros(self.slots, dtype=np.int64)
        self.episode_start = np.zeros(self.table, dtype=np.int64)
        self.episode_length = np.zeros(self.table, dtype=np.int64)
        if recorded is not None:
            recorded.place(self.ops, self.fields)
            ids = self.table + np.arange(recorded.episodes)
            self.episode_start = np.concatenate([self.episode_start, recorded.starts])
            self.episode_length = np.concatenate([self.episode_length, recorded.lengths])
            self.episode_of[self.capacity :] = np.repeat(ids, recorded.lengths)
        self.open_episode = np.arange(n_envs, dtype=np.int64)
        self.next_episode = n_envs
        self.rows_written = 0
        self.valid_from = np.zeros(n_envs, dtype=np.int64)
        self._oldest_open_start = 0
        self._env_ids = np.arange(n_envs, dtype=np.int64)
        self.track_changes = False
        """Note the episode ids whose start or length change, for :meth:`take_changes` (a
        copy of the bookkeeping on a device follows them)."""
        self._changed: list[np.ndarray] | None = []

    # -- writing ---------------------------------------------------------------------

    def open_lengths(self) -> np.ndarray:
        """Steps recorded so far in each env's open episode."""
        return self.rows_written - self.episode_start[self.open_episode]

    def check_room(self) -> None:
        """ValueError if one more step would make an open episode longer than a column."""
        if self.rows == 0:
            raise ValueError(
                "this buffer holds a recorded dataset and has no room for new steps: build it "
                "with from_dataset(..., room=N) for N steps after the dataset"
            )
        if self.rows_written - self._oldest_open_start >= self.rows:
            longest = int(self.open_lengths().max())
            raise ValueError(
                f"an episode reached {longest + 1} steps, more than the buffer holds per env "
                f"(capacity // n_envs = {self.rows}): raise capacity or end episodes sooner"
            )

    def write(self, values: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Append one row (one transition per env); return ``(base_slot, invalidated)``.

        ``values[name]`` has shape ``(n_envs, *shape)`` and was checked by the caller,
        as was :meth:`check_room`. ``invalidated`` lists the slots of dropped episodes
        that stay physically present but may no longer be sampled.
        """
        row = self.rows_written % self.rows
        base = row * self.n_envs
        block = slice(base, base + self.n_envs)
        invalidated = _NO_SLOTS
        if self.rows_written >= self.rows:
            invalidated = self._drop_overwritten(block)
        for name, value in values.items():
            self.ops.assign(self.data[name], block, value)
        self.episode_of[block] = self.open_episode
        self.rows_written += 1
        return np.int64(base), invalidated

    def _drop_overwritten(self, block: slice) -> np.ndarray:
        old = self.episode_of[block]
        overwritten = self.rows_written - self.rows  # the absolute row the block held
        # an id given since to a newer episode: the slot's episode was dropped before
        named_right = self.episode_start[old] <= overwritten
        old_end = np.where(named_right, self.episode_start[old] + self.episode_length[old], 0)
        new_from = np.maximum(self.valid_from, old_end)
        first_kept = self.rows_written - self.rows + 1
        lo = np.maximum(self.valid_from, first_kept)
        counts = np.maximum(new_from - lo, 0)
        self.valid_from = new_from
        if not counts.any():
            return _NO_SLOTS
        envs = np.repeat(self._env_ids, counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return self.slot_of(np.repeat(lo, counts) + offsets, envs)

    def close_episodes(self, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End the open episodes of the envs where ``done``; return their ``(ids, envs)``."""
        # An env with an empty open episode keeps it: there is nothing to close.
        envs = np.flatnonzero(done & (self.open_lengths() > 0))
        ids = self.open_episode[envs]
        self.episode_length[ids] = self.rows_written - self.episode_start[ids]
        new_ids = (self.next_episode + np.arange(len(envs))) % self.table
        self.next_episode = int((self.next_episode + len(envs)) % self.table)
        self.episode_start[new_ids] = self.rows_written
        self.episode_length[new_ids] = 0
        self.open_episode[envs] = new_ids
        if self.track_changes and self._changed is not None:
            self._changed += [ids, new_ids]
        self._oldest_open_start = int(self.episode_start[self.open_episode].min())
        return ids, envs

    def assign(self, name: str, slots: np.ndarray, values: Any) -> None:
        """``column[slots] = values`` for slots of the ring or of the recorded dataset
        (host slots, in order: the ring's first)."""
        recorded = self.recorded
        if recorded is None or not len(slots) or slots[-1] < self.capacity:
            self.ops.assign(self.data[name], slots, values)
            return
        ring = int(np.searchsorted(slots, self.capacity))
        if ring:
            self.ops.assign(self.data[name], slots[:ring], values[:ring])
        recorded.assign(name, slots[ring:] - self.capacity, values[ring:])

    # -- reading ---------------------------------------------------------------------

    def take(self, name: str, slots: Any) -> Any:
        """Column ``name`` at ``slots`` (host int64 arrays, or tensors on the device),
        gathered from the ring's columns or from a recorded dataset's states."""
        recorded = self.recorded
        if recorded is None:
            return self.ops.take(self.data[name], slots)
        if self.capacity == 0:  # a recorded dataset alone
            return recorded.take(name, slots)
        index = NUMPY if isinstance(slots, np.ndarray) else self.ops  # slots' own backend
        in_ring = slots < self.capacity
        ring = self.ops.take(self.data[name], index.minimum(slots, self.capacity - 1))
        held = recorded.take(name, index.maximum(slots - self.capacity, 0))
        return self.ops.where(rows_mask(in_ring, ring), ring, held)

    def ledger(self, closed_only: bool) -> Ledger:
        """The bookkeeping as a draw reads it (``closed_only``: finished episodes only)."""
        valid_from, valid_end = self.valid_from, self.valid_end(closed_only)
        held = 0 if self.recorded is None else self.recorded.transitions
        if held:
            valid_from = np.append(valid_from, 0)
            valid_end = np.append(valid_end, held)
        return Ledger(
            self.episode_of,
            self.episode_start,
            self.episode_length,
            valid_from,
            valid_end,
            self.rows_written,
            max(self.rows, 1),
            self.n_envs,
            NUMPY,
            self.capacity,
            held,
        )

    def slot_of(self, abs_rows: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """Flat slot of absolute row ``abs_rows`` in column ``envs`` (``n_envs``: the
        recorded dataset's)."""
        return slot_at(self.ledger(closed_only=False), abs_rows, envs)

    def valid_end(self, closed_only: bool) -> np.ndarray:
        """Per env, one past the last sampleable absolute row of the ring."""
        if closed_only:
            return self.episode_start[self.open_episode]
        return np.full(self.n_envs, self.rows_written, dtype=np.int64)

    def count(self, closed_only: bool) -> int:
        """Number of sampleable transitions."""
        held = 0 if self.recorded is None else self.recorded.transitions
        return int((self.valid_end(closed_only) - self.valid_from).sum()) + held

    def recorded_episodes(self) -> tuple[np.ndarray, np.ndarray]:
        """The ids of the recorded dataset's episodes and their column (``n_envs``)."""
        held = 0 if self.recorded is None else self.recorded.episodes
        return self.table + np.arange(held), np.full(held, self.n_envs, np.int64)

    def steps_of(
        self, ids: np.ndarray, envs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For every step of the ended episodes ``ids`` (of columns ``envs``), in order: its
        episode's absolute start row, its episode length, its step and its column."""
        lengths = self.episode_length[ids]
        start = np.repeat(self.episode_start[ids], lengths)
        step = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return start, np.repeat(lengths, lengths), step, np.repeat(envs, lengths)

    def has_changes(self) -> bool:
        """Whether :meth:`take_changes` has anything to give."""
        return self._changed is None or bool(self._changed)

    def take_changes(self) -> np.ndarray | None:
        """The episode ids whose start or length changed since the last call (with
        :attr:`track_changes`), or None where everything may have (a restore)."""
        changed, self._changed = self._changed, []
        if changed is None:
            return None
        return np.unique(np.concatenate(changed)) if changed else np.zeros(0, np.int64)

    # -- persistence -----------------------------------------------------------------

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """Arrays and counters that restore this storage exactly: the rows written and the
        episodes that hold them (not the whole episode table: its size is the capacity),
        and the columns a recorded dataset's transitions were given (not its states)."""
        used = min(self.rows_written, self.rows) * self.n_envs
        arrays = {
            f"data.{name}": self.ops.to_host(value[:used]) for name, value in self.data.items()
        }
        live = np.union1d(self.episode_of[:used], self.open_episode)  # the ids in use
        arrays |= {
            "episode_of": self.episode_of[:used],
            "episode_ids": live,
            "episode_starts": self.episode_start[live],
            "episode_lengths": self.episode_length[live],
            "open_episode": self.open_episode,
            "valid_from": self.valid_from,
        }
        if self.recorded is not None:
            arrays |= {f"recorded.{name}": value for name, value in self.recorded.state().items()}
        return arrays, {"rows_written": self.rows_written, "next_episode": self.next_episode}

    def restore(self, arrays: dict[str, np.ndarray], counters: dict[str, int]) -> None:
        """Load what :meth:`state` returned (into a storage built with the same specs and
        the same recorded dataset)."""
        used = min(int(counters["rows_written"]), self.rows) * self.n_envs
        for name, value in self.data.items():
            self.ops.assign(value, slice(0, used), arrays[f"data.{name}"])
        self.episode_of[:used] = arrays["episode_of"]
        table = self.table
        if "episode_ids" in arrays:  # the episodes in use (what state() writes)
            self.episode_start[:table] = 0
            self.episode_length[:table] = 0
            live = arrays["episode_ids"]
            self.episode_start[live] = arrays["episode_starts"]
            self.episode_length[live] = arrays["episode_lengths"]
        else:  # the whole table (files of format 1 and 2)
            self.episode_start[:table] = arrays["episode_start"]
            self.episode_length[:table] = arrays["episode_length"]
        self.open_episode[:] = arrays["open_episode"]
        self.valid_from[:] = arrays["valid_from"]
        self.rows_written = int(counters["rows_written"])
        self.next_episode = int(counters["next_episode"])
        self._oldest_open_start = int(self.episode_start[self.open_episode].min())
        if self.recorded is not None:
            self.recorded.restore(unprefixed(arrays, "recorded."))
        self._changed = None


_NO_SLOTS = np.zeros(0, dtype=np.int64)
