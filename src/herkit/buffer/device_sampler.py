"""Sampling where a buffer's data lives, with no host step: :class:`DeviceSampler`.

A buffer on a device samples with its bookkeeping in numpy on the host
(:mod:`herkit.buffer.backend`): exact and seeded like a host buffer, but every batch is
host work and index copies. :class:`DeviceSampler` keeps a copy of the bookkeeping on the
device (which episode each slot holds, episode starts and lengths, each env's valid rows)
and draws slots, goals, rewards and terminal flags with torch operations and a torch
generator there, so that one sample is device work only and can be captured in a CUDA
graph together with the update that follows it.

:meth:`DeviceSampler.prepare` runs on the host before a draw (or a replay of a graph that
draws): it scores the steps added since the last sample and copies what changed in the
bookkeeping (a few rows and episodes per env step) to the device. :meth:`DeviceSampler.draw`
then follows the buffer's rules exactly (see :mod:`herkit.buffer.her`: sample mode, the
strategies and the goal mix, one-step returns, the env's reward terms and flags kept, the
reached rule where episodes end on success) with other random numbers: its batches are
samples of the same distribution, not the same batches. With prioritized replay the
priorities live on the device too (:mod:`herkit.buffer.device_priority`): a draw takes
slots by priority with their importance weights, and :meth:`DeviceSampler.reprioritize`
sets the drawn slots' priorities after the update; :meth:`DeviceSampler.priorities_to_host`
hands them to the host tree before the buffer is saved. Store-time relabelling and n-step
returns sample on the host (:func:`unsupported` says why).

This module imports torch: it is imported where a buffer on a device is trained from,
never by :mod:`herkit.buffer` itself, whose core stays numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from herkit.buffer.device_priority import DevicePriorities
from herkit.buffer.strategies import Strategy

if TYPE_CHECKING:
    from herkit.buffer.her import HerReplayBuffer

__all__ = ["DeviceSampler", "unsupported"]


def unsupported(buffer: HerReplayBuffer) -> str | None:
    """Why ``buffer`` cannot sample on its device without the host, or None if it can."""
    if buffer.device is None:
        return "its data is on the host"
    if buffer.torch_reward_fn is None:
        return "its reward has no torch form"
    if buffer.settings.relabel != "sample":
        return "store-time relabelling"
    if buffer.settings.n_step > 1:
        return "n-step returns"
    return None


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

        self.episode_of = zeros(storage.capacity)
        self.episode_start = zeros(len(storage.episode_start))
        self.episode_length = zeros(len(storage.episode_length))
        self.valid_from = zeros(storage.n_envs)
        self.rows_written = zeros(1)
        self.threshold = torch.zeros((), dtype=torch.float32, device=self.device)
        self._synced_rows: int | None = None  # rows of episode_of copied; None: none yet
        self._valid_from = storage.valid_from.copy()  # the host's, at the last prepare
        self.priorities = (
            DevicePriorities(buffer.sampler, self.device) if buffer.settings.prioritized else None
        )
        self._seen = -1
        self._flags: dict[str, Any] | None = None

    # -- host side ----------------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """Score new steps and copy what changed to the device; returns the settings a
        draw depends on (``flags`` of :meth:`draw`, the key of a captured graph)."""
        buffer, storage = self.buffer, self.buffer.storage
        if self._flags is not None and self._seen == storage.rows_written:
            if (
                not storage.has_changes()
                and buffer.terminal_on_success == self._flags["terminal_on_success"]
            ):
                return self._flags  # nothing added since: the device's copy is current
        if len(buffer) == 0:
            raise ValueError("cannot sample from an empty buffer: add transitions first")
        buffer.flush()
        changed = storage.take_changes()
        whole = changed is None or self._synced_rows is None  # new, or restored
        if whole:
            self._synced_rows = None
            self.episode_start.copy_(self._upload(storage.episode_start))
            self.episode_length.copy_(self._upload(storage.episode_length))
        elif changed is not None and len(changed):
            index = self._upload(changed)
            self.episode_start.index_copy_(0, index, self._upload(storage.episode_start[changed]))
            self.episode_length.index_copy_(0, index, self._upload(storage.episode_length[changed]))
        written = self._sync_episode_of()
        if self.priorities is not None:
            self._follow_priorities(whole, written)
        self._valid_from = storage.valid_from.copy()
        self.valid_from.copy_(self._upload(storage.valid_from))
        self.rows_written.fill_(storage.rows_written)
        threshold = buffer.reached_threshold()
        if threshold is not None:
            self.threshold.fill_(threshold)
        warm = (
            buffer.settings.goal_mix is None
            or storage.rows_written * buffer.n_envs >= buffer.settings.goal_mix_warmup
        )
        self._seen = storage.rows_written
        self._flags = {
            "terminal_on_success": bool(buffer.terminal_on_success),
            "threshold": threshold is not None,
            "mix_warm": warm,
        }
        return self._flags

    def _sync_episode_of(self) -> np.ndarray | None:
        """Copy the episodes of the slots written since the last call; returns those
        slots (None: every slot copied)."""
        storage = self.storage
        done = storage.rows_written
        synced, self._synced_rows = self._synced_rows, done
        if synced is None or done - synced >= storage.rows:
            self.episode_of.copy_(self._upload(storage.episode_of))
            return None
        rows = np.arange(synced, done) % storage.rows
        slots = (rows[:, None] * storage.n_envs + np.arange(storage.n_envs)).ravel()
        if len(slots):
            self.episode_of.index_copy_(
                0, self._upload(slots), self._upload(storage.episode_of[slots])
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
            slots = np.arange(storage.capacity)
        else:
            envs = np.repeat(np.arange(storage.n_envs), dropped)
            offsets = np.arange(dropped.sum()) - np.repeat(np.cumsum(dropped) - dropped, dropped)
            rows = np.repeat(self._valid_from, dropped) + offsets
            slots = np.union1d(written, (rows % storage.rows) * storage.n_envs + envs)
        if len(slots):
            tree = self.buffer.sampler.tree
            assert tree is not None
            live = torch.from_numpy(tree.leaves[slots] > 0).to(self.device)
            self.priorities.follow(self._upload(slots), live)

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

    def _upload(self, array: np.ndarray) -> torch.Tensor:
        tensor = torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64))
        if self.device.type == "cuda":
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor.to(self.device)

    # -- device side --------------------------------------------------------------------

    def draw(
        self,
        batch_size: int,
        generator: torch.Generator,
        *,
        terminal_on_success: bool,
        threshold: bool,
        mix_warm: bool,
    ) -> tuple[torch.Tensor, ...]:
        """One batch as ``(observation, next_observation, goal, action, reward,
        terminated)`` tensors, followed with prioritized replay by the importance weights
        and the drawn slots: device work only, drawn from ``generator``. The flags are what
        :meth:`prepare` returned."""
        buffer = self.buffer
        data = self.storage.data
        weights = None
        if self.priorities is not None:
            slot, weights = self.priorities.draw(batch_size, generator)
            env = slot % self.storage.n_envs
        else:
            slot, env = self._slots(batch_size, generator)
        goal = data["desired_goal"][slot]
        next_achieved = data["next_achieved_goal"][slot]
        relabel = self._relabelled_goals(slot, env, goal, generator, mix_warm)
        if relabel is None:
            reward = data["reward"][slot]
            terminal = data["terminated"][slot]
        else:
            relabelled, goal = relabel
            info = {key: data[f"info.{key}"][slot] for key in buffer.settings.info_keys}
            fn = buffer.torch_reward_fn
            assert fn is not None
            goal_reward = fn(next_achieved, goal, info).float()
            relabelled_reward = goal_reward
            if buffer.settings.keep_env_terms:  # a frozen setting: fixed at capture
                relabelled_reward = goal_reward + data["reward_extra"][slot]
            reward = torch.where(relabelled, relabelled_reward, data["reward"][slot])
            terminal = data["terminated"][slot]
            if terminal_on_success:
                if threshold:
                    reached = goal_reward >= self.threshold
                else:
                    reached = goal_reward == fn(goal, goal, info).float()
                other_end = terminal & ~data["success"][slot]
                terminal = torch.where(relabelled, other_end | reached, terminal)
        batch = (
            data["observation"][slot], data["next_observation"][slot], goal,
            data["action"][slot], reward.float(), terminal.float(),
        )  # fmt: skip
        return batch if weights is None else (*batch, weights, slot)

    def _slots(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sampleable slots, uniformly with replacement, and their envs."""
        storage = self.storage
        counts = self.rows_written - self.valid_from
        cum = counts.cumsum(0)
        u = torch.rand(n, generator=generator, dtype=torch.float64, device=self.device)
        pick = torch.minimum((u * cum[-1]).long(), cum[-1] - 1)
        env = torch.searchsorted(cum, pick, right=True)
        row = self.valid_from[env] + pick - (cum - counts)[env]
        return (row % storage.rows) * storage.n_envs + env, env

    def _relabelled_goals(
        self,
        slot: torch.Tensor,
        env: torch.Tensor,
        goal: torch.Tensor,
        generator: torch.Generator,
        mix_warm: bool,
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Which samples take another goal, and the goals: the strategy's with probability
        ``k / (k + 1)``, or the goal mix's; None where nothing is relabelled."""
        buffer, data = self.buffer, self.storage.data
        n = len(slot)

        def uniform() -> torch.Tensor:
            return torch.rand(n, generator=generator, dtype=torch.float64, device=self.device)

        def per_sample(mask: torch.Tensor) -> torch.Tensor:
            return mask.reshape(-1, *(1,) * (goal.dim() - 1))

        if buffer.settings.goal_mix is not None:
            real, future, desired = buffer.settings.goal_mix if mix_warm else (0.0, 1.0, 0.0)
            kind = uniform()
            if desired > 0:
                take_future = (kind >= real) & (kind < real + future)
                take_desired = kind >= real + future
            else:  # a zero share takes nothing, whatever the rounding of the others
                take_future = (
                    kind >= real if future > 0 else torch.zeros_like(kind, dtype=torch.bool)
                )
                take_desired = torch.zeros_like(take_future)
            future_goal = data["next_achieved_goal"][self._goal_slots(slot, env, generator)]
            goal = torch.where(per_sample(take_future), future_goal, goal)
            other, _ = self._slots(n, generator)
            goal = torch.where(per_sample(take_desired), data["desired_goal"][other], goal)
            return take_future | take_desired, goal
        if not buffer.settings.goals_per_transition:
            return None
        relabel = uniform() < buffer.settings.relabel_probability
        if buffer.settings.strategy is Strategy.RANDOM:
            goal_slot, _ = self._slots(n, generator)
        else:
            goal_slot = self._goal_slots(slot, env, generator)
            if buffer.settings.strategy is Strategy.FINAL:  # an open episode has no final goal yet
                relabel &= self.episode_length[self.episode_of[slot]] > 0
        chosen = data["next_achieved_goal"][goal_slot]
        return relabel, torch.where(per_sample(relabel), chosen, goal)

    def _goal_slots(
        self, slot: torch.Tensor, env: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        """The slots whose achieved goal relabels each sample, by the in-episode strategy
        (the future one for a goal mix)."""
        storage, buffer = self.storage, self.buffer
        ids = self.episode_of[slot]
        start = self.episode_start[ids]
        length = self.episode_length[ids]
        length = torch.where(length == 0, self.rows_written - start, length)
        step = (slot // storage.n_envs - start) % storage.rows
        u = torch.rand(len(slot), generator=generator, dtype=torch.float64, device=self.device)
        if buffer.settings.strategy is Strategy.FINAL and buffer.settings.goal_mix is None:
            goal_step = length - 1
        elif buffer.settings.strategy is Strategy.EPISODE and buffer.settings.goal_mix is None:
            goal_step = torch.minimum((u * length).long(), length - 1)
        else:  # future: uniform over t .. length - 1, inclusive
            offset = torch.minimum((u * (length - step)).long(), length - step - 1)
            goal_step = step + offset
        return ((start + goal_step) % storage.rows) * storage.n_envs + env
