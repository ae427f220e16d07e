"""SB3's storage attributes, read from herkit's episodic storage.

SB3's buffers keep arrays of shape ``(buffer_size // n_envs, n_envs, ...)``: row ``pos``
holds one step of every env. herkit's storage has the same layout, flattened (slot
``row * n_envs + env``), so observations, actions and rewards are views of it. The episode
arrays SB3 keeps (``dones``, ``timeouts``, ``ep_start``, ``ep_length``) are computed from
herkit's episode table, with SB3's meanings, and are read-only: herkit's bookkeeping is the
table, and writing a copy of it would change nothing.

The functions at the end (:func:`observations` to :func:`current_ep_start`) are those
attributes of :class:`herkit.sb3.HerReplayBuffer`, which makes each a property; the helpers
above them work on an :class:`~herkit.buffer.storage.EpisodeStorage`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from herkit.buffer.goal_env import GOAL_KEYS
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.storage import EpisodeStorage

BOOKKEEPING = (
    "SB3's episode arrays are computed from herkit's episode table and read-only: end the "
    "episodes in progress with truncate_last_trajectory()"
)
"""Why the episode arrays are read-only (the error on writing one)."""


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


# -- SB3's storage attributes, as properties of the adapter ---------------------------------


class Adapter(Protocol):
    """What the attributes below read of :class:`herkit.sb3.HerReplayBuffer`."""

    buffer: HerReplayBuffer
    handle_timeout_termination: bool


def observations(adapter: Adapter) -> dict[str, np.ndarray]:
    """The stored observations, ``(buffer_size, n_envs, *shape)`` views per key."""
    storage = adapter.buffer.storage
    extras = {key: by_row(storage, f"obs.{key}") for key in adapter.buffer.extra_keys}
    return {key: by_row(storage, key) for key in GOAL_KEYS} | extras


def next_observations(adapter: Adapter) -> dict[str, np.ndarray]:
    """The stored next observations; ``desired_goal`` is the step's own (read-only:
    herkit stores one desired goal per step, writable as ``observations``')."""
    storage = adapter.buffer.storage
    return {
        "observation": by_row(storage, "next_observation"),
        "achieved_goal": by_row(storage, "next_achieved_goal"),
        "desired_goal": read_only(
            by_row(storage, "desired_goal"),
            "next_observations['desired_goal'] is the step's own desired goal, stored once: "
            "write observations['desired_goal']",
        ),
    } | {key: by_row(storage, f"next_obs.{key}") for key in adapter.buffer.extra_keys}


def actions(adapter: Adapter) -> np.ndarray:
    """The stored actions, ``(buffer_size, n_envs, action_dim)``."""
    return by_row(adapter.buffer.storage, "action")


def rewards(adapter: Adapter) -> np.ndarray:
    """The env's step rewards, ``(buffer_size, n_envs)`` (read-only: herkit keeps the
    part of each reward that ``compute_reward`` lacks beside it)."""
    adapter.buffer.flush()
    return read_only(
        by_row(adapter.buffer.storage, "reward"),
        "rewards are read-only: herkit derives the env's own reward terms from them when "
        "they are stored",
    )


def _episode_array(adapter: Adapter, name: str) -> np.ndarray:
    arrays = episode_arrays(adapter.buffer.storage, adapter.handle_timeout_termination)
    return read_only(arrays[name], BOOKKEEPING)


def dones(adapter: Adapter) -> np.ndarray:
    """1.0 on the last step of every ended episode, ``(buffer_size, n_envs)``."""
    return _episode_array(adapter, "dones")


def timeouts(adapter: Adapter) -> np.ndarray:
    """1.0 on the last step of an episode that ended without terminating (when timeouts
    are handled), ``(buffer_size, n_envs)``."""
    return _episode_array(adapter, "timeouts")


def ep_start(adapter: Adapter) -> np.ndarray:
    """The row where each step's episode starts, ``(buffer_size, n_envs)``."""
    return _episode_array(adapter, "ep_start")


def ep_length(adapter: Adapter) -> np.ndarray:
    """Each step's episode length once the episode has ended and while it can be
    sampled, else 0, ``(buffer_size, n_envs)``."""
    return _episode_array(adapter, "ep_length")


def current_ep_start(adapter: Adapter) -> np.ndarray:
    """The row where each env's episode in progress started, ``(n_envs,)``."""
    storage = adapter.buffer.storage
    return read_only(storage.episode_start[storage.open_episode] % storage.rows, BOOKKEEPING)
