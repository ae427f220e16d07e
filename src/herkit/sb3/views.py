"""SB3's storage attributes, read from herkit's episodic storage.

SB3's buffers keep arrays of shape ``(buffer_size // n_envs, n_envs, ...)``: row ``pos``
holds one step of every env. herkit's storage has the same layout, flattened (slot
``row * n_envs + env``), so observations, actions and rewards are views of it. The episode
arrays SB3 keeps (``dones``, ``timeouts``, ``ep_start``, ``ep_length``) are computed from
herkit's episode table, with SB3's meanings, and are read-only: herkit's bookkeeping is the
table, and writing a copy of it would change nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from herkit.buffer.storage import EpisodeStorage


class ReadOnlyArray(np.ndarray):
    """An array that says which attribute it is, and why, when written to."""

    why: str = "it is read-only"

    def __array_finalize__(self, obj: Any) -> None:
        self.why = getattr(obj, "why", ReadOnlyArray.why)

    def __setitem__(self, index: Any, value: Any) -> None:
        if self.flags.writeable:
            super().__setitem__(index, value)
            return
        raise ValueError(f"cannot write here: {self.why}")


def read_only(array: np.ndarray, why: str) -> ReadOnlyArray:
    """A read-only view of ``array`` whose error on writing is ``why``."""
    view = array.view(ReadOnlyArray)
    view.why = why
    view.flags.writeable = False
    return view


def by_row(storage: EpisodeStorage, name: str) -> np.ndarray:
    """The stored column ``name`` as a ``(rows, n_envs, *shape)`` view."""
    column = storage.data[name]
    return column.reshape(storage.rows, storage.n_envs, *column.shape[1:])


def episode_arrays(storage: EpisodeStorage, handle_timeouts: bool) -> dict[str, np.ndarray]:
    """SB3's ``dones``, ``timeouts``, ``ep_start`` and ``ep_length`` for every slot.

    - ``dones``: 1.0 on the last step of every episode that has ended (terminated, cut by
      a time limit, or ended by the buffer), 0.0 elsewhere;
    - ``timeouts``: 1.0 on the last step of an episode that ended without terminating, when
      timeouts are handled (else 0.0 everywhere, as in SB3);
    - ``ep_start``: the row where each step's episode starts;
    - ``ep_length``: each step's episode length where that episode has ended and can still be
      sampled, 0 for an episode in progress or one partly overwritten (as in SB3).
    Slots never written are 0 in all four.
    """
    rows, n_envs = storage.rows, storage.n_envs
    written = min(storage.rows_written, rows) * n_envs
    slots = np.arange(written)
    ids = storage.episode_of[:written]
    start = storage.episode_start[ids]
    length = storage.episode_length[ids]
    newest = storage.rows_written - 1
    abs_row = newest - (newest - slots // n_envs) % rows
    last = (length > 0) & (abs_row - start == length - 1)
    live = abs_row >= storage.valid_from[slots % n_envs]
    terminated = storage.data["terminated"][:written]

    def full(values: np.ndarray, dtype: Any) -> np.ndarray:
        array = np.zeros(rows * n_envs, dtype=dtype)
        array[:written] = values
        return array.reshape(rows, n_envs)

    return {
        "dones": full(last, np.float32),
        "timeouts": full(last & ~terminated if handle_timeouts else last & False, np.float32),
        "ep_start": full(start % rows, np.int64),
        "ep_length": full(np.where((length > 0) & live, length, 0), np.int64),
    }


def current_episode_start(storage: EpisodeStorage) -> np.ndarray:
    """SB3's ``_current_ep_start``: the row where each env's episode in progress began."""
    return storage.episode_start[storage.open_episode] % storage.rows
