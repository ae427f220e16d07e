"""n-step returns of sampled transitions, as pure functions of the storage and the rewards.

The semantics are those of :mod:`herkit.buffer.her` ("n-step returns"): a sample at step
``t`` sums ``gamma^j r_{t+j}`` over the ``m <= n`` steps of its episode from ``t`` on that
are recorded and come no later than its first terminal step, and bootstraps from the
observation after step ``t + m - 1`` with discount ``gamma ** m``. The buffer works in two
stages: :func:`step_window` finds the slots of the ``n`` steps (bookkeeping, on the host);
the buffer then takes every step's reward and terminal flag for the sample's goal, and
:func:`n_step_sums` cuts the window at the first terminal step and sums it (in the
backend of the stored columns).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from herkit.buffer.backend import ArrayOps
from herkit.buffer.storage import EpisodeStorage

__all__ = ["n_step_sums", "step_window"]


def step_window(
    storage: EpisodeStorage, slots: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(B, n)`` slots of steps ``t .. t + n - 1`` of each sample's episode (steps past
    the last recorded one repeat it) and the ``(B, n)`` mask of the steps recorded."""
    start, length, step = storage.positions(slots)
    steps = step[:, None] + np.arange(n)  # (B, n): the window's steps
    recorded = steps < length[:, None]
    rows = start[:, None] + np.minimum(steps, length[:, None] - 1)
    return storage.slot_of(rows, (slots % storage.n_envs)[:, None]), recorded


def n_step_sums(
    ops: ArrayOps,
    rewards: Any,
    terminal: Any,
    recorded: np.ndarray,
    window: np.ndarray,
    gamma: float,
) -> tuple[Any, Any, np.ndarray, Any]:
    """Discounted sums of the window's ``rewards`` (``B * n``, row-major, in the backend)
    up to the first ``terminal`` step among the ``recorded`` ones; returns each sample's
    return, terminal flag (float32), slot of its last step and discount ``gamma ** m``."""
    size, n = recorded.shape
    # The window's bookkeeping on the host (a (B, n) array of flags), sums in the backend.
    terminal_host = ops.to_host(terminal).reshape(size, n) & recorded
    after_terminal = (np.cumsum(terminal_host, axis=1) - terminal_host) > 0
    used = recorded & ~after_terminal  # (B, n), a prefix of each row, never empty
    m = used.sum(axis=1)
    weight = used * gamma ** np.arange(n)  # float64, as the sum
    reward = ops.as_float32((rewards.reshape(size, n) * ops.from_host(weight)).sum(1))
    rows_i = np.arange(size)
    terminated = ops.from_host(terminal_host[rows_i, m - 1].astype(np.float32))
    discount = ops.from_host((gamma**m).astype(np.float32))
    return reward, terminated, window[rows_i, m - 1], discount
