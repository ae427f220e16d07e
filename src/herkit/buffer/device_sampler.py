"""Sampling where a buffer's data lives, with no host step: :class:`DeviceSampler`.

A buffer on a device samples with its bookkeeping in numpy on the host
(:mod:`herkit.buffer.backend`): exact and seeded like a host buffer, but every batch is
host work and index copies. :class:`DeviceSampler` keeps a copy of the bookkeeping on the
device (a :class:`~herkit.buffer.storage.Ledger`: which episode each slot holds, episode
starts and lengths, each env's valid rows) and draws there by the buffer's own rules,
the same code as the host's (its relabeller and
:func:`~herkit.buffer.rules.sample_returns` over torch tensors), with random numbers
from a torch generator: one sample is device work only and can be captured in a CUDA
graph together with the update that follows it. Given the same random numbers, the host
and the device draw the same batch.

:meth:`DeviceSampler.prepare` runs on the host before a draw (or a replay of a graph that
draws): it scores the steps added since the last sample and copies what changed in the
bookkeeping (a few rows and episodes per env step) to the device. With prioritized replay
the priorities live on the device too (:class:`DevicePriorities`: the host's sum tree on
torch tensors, not lazy, so that its writes and searches are fixed-shape device work with
no host read): a draw takes slots by priority with their importance weights, and
:meth:`DeviceSampler.reprioritize` sets the drawn slots' priorities after the update, all
within a captured update. The host tree stays the record of the priorities: the slots
written since the last prepare get the largest priority given so far and those of episodes
dropped from the ring none, as the host's tree says, and
:meth:`DeviceSampler.priorities_to_host` hands the device's to it before the buffer is
saved (a host read per update would cost a sync per update). The batch itself is made by the
one draw of :mod:`herkit.buffer.rules`, as the host's: every setting is served there or
refused by name (store-time relabelling and n-step returns sample on the host;
:func:`unsupported` says why). A recorded dataset after the ring is copied with its
bookkeeping once (it never changes).

This module imports torch: it is imported where a buffer on a device is trained from,
never by :mod:`herkit.buffer` itself, whose core stays numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from herkit.buffer.backend import array_ops
from herkit.buffer.batch import Batch
from herkit.buffer.priority import SumTree, importance_weights, priorities_of
from herkit.buffer.rules import Uniform, draw_batch, mix_warm, unsupported
from herkit.buffer.storage import Ledger, sample_slots

if TYPE_CHECKING:
    from herkit.buffer.her import HerReplayBuffer
    from herkit.buffer.sampler import TransitionSampler

__all__ = ["DevicePriorities", "DeviceSampler", "uniform_of", "unsupported"]


def uniform_of(generator: torch.Generator) -> Uniform:
    """``uniform(n)``: ``n`` float64 numbers uniform on ``[0, 1)`` from ``generator``, on
    its device (what a draw on the device takes its random numbers from)."""

    def uniform(n: int) -> torch.Tensor:
        return torch.rand(n, generator=generator, dtype=torch.float64, device=generator.device)

    return uniform


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


class DeviceSampler:
    """Draws batches of ``buffer`` on its device (see the module's docstring)."""

    def __init__(self, buffer: HerReplayBuffer) -> None:
        why = unsupported(buffer)
        if why is not None:
            raise ValueError(f"this buffer cannot sample on its device: {why}")
        self.buffer = buffer
        self.device = torch.device(buffer.device)
        storage = buffer.storage
        storage.track_changes = True

        def zeros(n: int) -> torch.Tensor:
            return torch.zeros(n, dtype=torch.int64, device=self.device)

        host = storage.ledger(closed_only=False)
        self.episode_of = zeros(storage.slots)
        self.episode_start = zeros(len(storage.episode_start))
        self.episode_length = zeros(len(storage.episode_length))
        self.valid_from = zeros(len(host.valid_from))
        self.valid_end = zeros(len(host.valid_end))
        self.rows_written = zeros(1)
        self.threshold = torch.zeros((), dtype=torch.float32, device=self.device)
        self._synced_rows: int | None = None  # rows of episode_of copied; None: none yet
        self._valid_from = storage.valid_from.copy()  # the host's, at the last prepare
        self.priorities = (
            DevicePriorities(buffer.sampler, self.device) if buffer.settings.prioritized else None
        )
        self._seen = -1
        self._flags: dict[str, Any] | None = None
        # terminal_on_success at the last prepare: None while unknown (the flags say False)
        self._ending: bool | None = None
        self.ops = buffer.ops
        self.ledger = Ledger(
            self.episode_of,
            self.episode_start,
            self.episode_length,
            self.valid_from,
            self.valid_end,
            self.rows_written,
            host.rows,
            storage.n_envs,
            buffer.ops,
            host.ring_slots,
            host.recorded,
        )
        """The device's copy of the bookkeeping, as the buffer's rules read it."""

    # -- host side ----------------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """Score new steps and copy what changed to the device; returns the settings a
        draw depends on (``flags`` of :meth:`draw`, the key of a captured graph)."""
        buffer, storage = self.buffer, self.buffer.storage
        if self._flags is not None and self._seen == storage.rows_written:
            if not storage.has_changes() and buffer.terminal_on_success == self._ending:
                return self._flags  # nothing added, the ending unchanged: the copy is current
        if len(buffer) == 0:
            raise ValueError("cannot sample from an empty buffer: add transitions first")
        buffer.flush()
        changed = storage.take_changes()
        whole = changed is None or self._synced_rows is None  # new, or restored
        if whole:
            self._synced_rows = None
            self.episode_start.copy_(self.ops.from_host(storage.episode_start))
            self.episode_length.copy_(self.ops.from_host(storage.episode_length))
        elif changed is not None and len(changed):
            index = self.ops.from_host(changed)
            self.episode_start.index_copy_(
                0, index, self.ops.from_host(storage.episode_start[changed])
            )
            self.episode_length.index_copy_(
                0, index, self.ops.from_host(storage.episode_length[changed])
            )
        written = self._sync_episode_of()
        if self.priorities is not None:
            self._follow_priorities(whole, written)
        self._valid_from = storage.valid_from.copy()
        host = storage.ledger(closed_only=False)
        self.valid_from.copy_(self.ops.from_host(host.valid_from))
        self.valid_end.copy_(self.ops.from_host(host.valid_end))
        self.rows_written.fill_(storage.rows_written)
        threshold = buffer.reached_threshold()
        if threshold is not None:
            self.threshold.fill_(threshold)
        self._seen = storage.rows_written
        self._ending = buffer.terminal_on_success
        self._flags = {
            "terminal_on_success": bool(buffer.terminal_on_success),
            "threshold": threshold is not None,
            "mix_warm": mix_warm(buffer.settings, storage),
        }
        return self._flags

    def _sync_episode_of(self) -> np.ndarray | None:
        """Copy the episodes of the slots written since the last call; returns those
        slots (None: every slot copied)."""
        storage = self.storage
        done = storage.rows_written
        synced, self._synced_rows = self._synced_rows, done
        if synced is None or done - synced >= max(storage.rows, 1):
            self.episode_of.copy_(self.ops.from_host(storage.episode_of))
            return None
        if done == synced:  # nothing written since (always so without a ring)
            return np.zeros(0, np.int64)
        rows = np.arange(synced, done) % storage.rows
        slots = (rows[:, None] * storage.n_envs + np.arange(storage.n_envs)).ravel()
        if len(slots):
            self.episode_of.index_copy_(
                0, self.ops.from_host(slots), self.ops.from_host(storage.episode_of[slots])
            )
        return slots

    def _follow_priorities(self, whole: bool, written: np.ndarray | None) -> None:
        """Tell the device's priorities which slots may now be drawn and which no more,
        as the host's tree says: the ``written`` ones (None: every slot) and those of
        episodes dropped since the last prepare. ``whole``: the buffer is new or was
        restored, its tree is taken as it is."""
        assert self.priorities is not None
        if whole:
            self.priorities.from_host()
            return
        storage = self.storage
        dropped = storage.valid_from - self._valid_from
        if written is None or np.any((dropped < 0) | (dropped >= storage.rows)):
            slots = np.arange(storage.slots)
        else:
            envs = np.repeat(np.arange(storage.n_envs), dropped)
            offsets = np.arange(dropped.sum()) - np.repeat(np.cumsum(dropped) - dropped, dropped)
            rows = np.repeat(self._valid_from, dropped) + offsets
            slots = np.union1d(written, (rows % storage.rows) * storage.n_envs + envs)
        if len(slots):
            tree = self.buffer.sampler.tree
            assert tree is not None
            live = self.ops.from_host(tree.leaves[slots] > 0)
            self.priorities.follow(self.ops.from_host(slots), live)

    @property
    def reprioritize(self) -> Any:
        """``reprioritize(slots, td_abs)`` after an update on a draw by priority
        (:meth:`DevicePriorities.reprioritize`), or None without prioritized replay."""
        return None if self.priorities is None else self.priorities.reprioritize

    def priorities_to_host(self) -> None:
        """Copy the device's priorities to the host tree (see
        :meth:`DevicePriorities.to_host`); nothing without prioritized replay."""
        if self.priorities is not None:
            self.priorities.to_host()

    @property
    def storage(self) -> Any:
        """The buffer's episode storage."""
        return self.buffer.storage

    # -- device side --------------------------------------------------------------------

    def draw(
        self,
        batch_size: int,
        uniform: Uniform,
        *,
        terminal_on_success: bool,
        threshold: bool,
        mix_warm: bool,
    ) -> Batch:
        """One :class:`~herkit.buffer.batch.Batch` of tensors (its ``indices`` the slots
        drawn, with prioritized replay), device work only, by the buffer's own rules (the
        one draw of :func:`~herkit.buffer.rules.draw_batch`, on the device's copy of the
        bookkeeping), with the random numbers of ``uniform`` (e.g. :func:`uniform_of` a
        torch generator): given the same numbers, the host's batch. The flags are what
        :meth:`prepare` returned."""
        weights = None
        if self.priorities is not None:
            slots, weights = self.priorities.draw(batch_size, uniform)
        else:
            slots = sample_slots(self.ledger, uniform(batch_size))
        batch, _ = draw_batch(
            self.buffer,
            self.ledger,
            slots,
            None,
            uniform,
            terminal_on_success=terminal_on_success,
            threshold=self.threshold if threshold else None,
            warm=mix_warm,
            achieved_goals=False,
        )
        assert isinstance(batch.reward, torch.Tensor)
        return replace(
            batch,
            reward=batch.reward.float(),
            weights=weights,
            indices=None if weights is None else slots,
        )
