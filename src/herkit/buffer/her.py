"""HerReplayBuffer: episodic storage, a sampler, a relabeller and the env's own rewards.

A buffer is made of parts, each in a module of its own: the episodes in a ring and a
recorded dataset after it (:mod:`~herkit.buffer.storage`, :mod:`~herkit.buffer.datasets`),
which transitions a batch holds (:mod:`~herkit.buffer.sampler`,
:mod:`~herkit.buffer.priority`), the rules of each sample's goal, reward, ending and return
and the one draw that applies them (:mod:`~herkit.buffer.rules`), and what the env said of
each step (:mod:`~herkit.buffer.env_terms`); the same draw runs on a device
(:mod:`~herkit.buffer.device_sampler`). Its settings are one record,
:class:`~herkit.buffer.settings.HerSettings`. :mod:`~herkit.buffer.inputs` checks what
``add`` takes, :mod:`~herkit.buffer.persistence` saves and loads, and ``from_env`` reads an
env. This module holds the hot path that joins them, ``add`` and ``sample``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from herkit.buffer.backend import array_ops
from herkit.buffer.batch import Batch
from herkit.buffer.checks import check_int
from herkit.buffer.conventions import GoalConventions, conventions_of
from herkit.buffer.datasets import RecordedEpisodes, from_dataset
from herkit.buffer.ending import UNKNOWN, Ending
from herkit.buffer.env_terms import (
    GoalRewards,
    RewardAudit,
    StepScorer,
    success_rule,
)
from herkit.buffer.goal_env import RewardFn, TorchRewardFn, compute_reward_of, settings_of
from herkit.buffer.inputs import (
    TransitionReader,
    as_flags,
    as_rewards,
    check_functions,
    extra_key_specs,
    transition_fields,
)
from herkit.buffer.persistence import load_buffer, save_buffer
from herkit.buffer.rules import StoredGoals, draw_batch, mix_warm, relabeller_for
from herkit.buffer.sampler import TransitionSampler
from herkit.buffer.settings import HerSettings, Strategy
from herkit.buffer.storage import EpisodeStorage, FieldSpec

__all__ = ["HerReplayBuffer"]


class HerReplayBuffer:
    """Hindsight Experience Replay buffer for ``n_envs`` envs stepping together.

    How goals are relabelled and transitions sampled is ``settings``
    (:class:`~herkit.buffer.settings.HerSettings`), or its fields given as keywords (which
    change ``settings`` where both are given).

    Args:
        capacity: transitions held (rounded down to a multiple of ``n_envs``); the
            oldest whole episodes are dropped when full.
        observation_shape, goal_shape, action_shape: shapes of one transition's parts
            (the goals achieved and desired; ``()`` for a discrete action).
        reward_fn: vectorised ``reward_fn(achieved_goal, desired_goal, info)``; ``info``
            is a dict of the stored ``info_keys`` columns for the batch.
        observation_dtype, goal_dtype, action_dtype: storage dtypes (uint8 stays uint8).
        n_envs: envs whose transitions arrive together in every ``add``.
        extra_keys: observation keys beyond the GoalEnv's three, ``{key: (shape, dtype)}``
            (an image): stored for both observations of every transition and returned in
            ``Batch.extras`` and ``Batch.next_extras``; relabelling touches only goals.
        seed: seed of the buffer's own ``np.random.Generator``.
        device: None (default) keeps the data in numpy arrays; a torch device (``"cuda"``,
            or ``"cpu"`` for host tensors) keeps it in tensors there, where batches are
            gathered and relabelled (``Batch.indices`` stays numpy). Bookkeeping and random
            draws stay on the host: a buffer on a device samples what a numpy buffer with
            the same seed samples.
        torch_reward_fn: ``reward_fn`` in torch form for a buffer on a device (rewards are
            then computed there); without it ``reward_fn`` gets host copies.
        recorded: a recorded dataset held after the ring, its states once
            (:class:`~herkit.buffer.datasets.RecordedEpisodes`; :meth:`from_dataset` reads
            one); ``capacity`` is then the room for steps added after it, and may be 0.
    """

    def __init__(
        self,
        capacity: int,
        *,
        observation_shape: int | tuple[int, ...],
        goal_shape: int | tuple[int, ...],
        reward_fn: RewardFn,
        action_shape: int | tuple[int, ...] = (),
        observation_dtype: Any = np.float32,
        goal_dtype: Any = np.float32,
        action_dtype: Any = np.float32,
        n_envs: int = 1,
        extra_keys: Mapping[str, tuple[Any, Any]] | None = None,
        seed: int | None = None,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
        settings: HerSettings | None = None,
        recorded: RecordedEpisodes | None = None,
        **changes: Any,
    ) -> None:
        check_int("capacity", capacity, 0 if recorded is not None else 1)
        check_int("n_envs", n_envs, 1)
        if recorded is not None and extra_keys:
            raise ValueError(
                "extra_keys: a recorded dataset holds no observation keys beyond "
                "the GoalEnv's three"
            )
        check_functions(reward_fn, torch_reward_fn)
        self.settings = HerSettings.of(settings, changes)
        self.ops = array_ops(device)
        self.rewards = GoalRewards(self.ops, reward_fn, torch_reward_fn)
        self.device = self.ops.device
        self.sources: dict[str, str] = {}
        """Where :meth:`from_env` took settings from, by name (empty when built directly)."""
        self._ending_followers: list[Callable[[bool | None], None]] = []
        self.conventions: GoalConventions | None = None
        """The env's conventions that :meth:`from_env` found (None when built directly)."""
        self._seed = seed
        self.rng = np.random.default_rng(seed)
        goal = FieldSpec.of(goal_shape, goal_dtype)
        self.extra_keys = extra_key_specs(extra_keys or {})
        specs = transition_fields(
            FieldSpec.of(observation_shape, observation_dtype),
            goal,
            FieldSpec.of(action_shape, action_dtype),
            self.settings.info_keys,
            self.extra_keys,
        )
        self.reader = TransitionReader(specs, self.extra_keys, self.settings.info_keys, n_envs)
        stored = dict(specs)
        n_goals = self.settings.goals_per_transition
        if self.settings.relabel == "store" and n_goals:
            stored[StoredGoals.FIELD] = FieldSpec((n_goals, *goal.shape), goal.dtype)
        self.storage = EpisodeStorage(capacity, n_envs, stored, self.ops, recorded)
        self.n_envs = n_envs
        self.sampler = TransitionSampler(self.storage, self.settings)
        self.relabeller = relabeller_for(self.settings, self.storage, self.ops)
        self.scorer = StepScorer(
            self.storage, self.rewards, self.settings.info_keys, self.settings.success_threshold
        )
        if recorded is not None:  # scored, then sampleable (in store mode, given their goals)
            self.scorer.score_recorded()
            slots = self.storage.capacity + np.arange(self.storage.slots - self.storage.capacity)
            ids, columns = self.storage.recorded_episodes()
            if isinstance(self.relabeller, StoredGoals):
                slots = self.relabeller.episodes_ended(ids, columns, self.rng.random)
            self.sampler.may_sample(slots)

    @classmethod
    def from_env(
        cls,
        env: Any,
        capacity: int,
        *,
        n_envs: int | None = None,
        reward_fn: RewardFn | None = None,
        conventions: GoalConventions | None = None,
        probe: bool = True,
        **kwargs: Any,
    ) -> HerReplayBuffer:
        """Build a buffer from a GoalEnv (or a gymnasium vector env of them): shapes and
        dtypes from its spaces (keys beyond the GoalEnv's three become ``extra_keys``),
        ``reward_fn`` its ``compute_reward`` and ``n_envs`` a vector env's ``num_envs``
        unless given. Its conventions are found as ``herkit train`` finds them
        (:func:`~herkit.buffer.conventions.conventions_of`: what it declares, and 200 random
        steps of a fresh copy; the env given is never stepped, reset or rendered), or taken
        from ``conventions``; ``probe=False`` reads the declarations alone.
        ``terminal_on_success`` comes from them unless given (None where unknown: the first
        ``add`` with a success decides). :attr:`conventions` holds what was found,
        :attr:`sources` where each setting came from. Other keyword arguments go to the
        constructor."""
        arguments = settings_of(env)
        if n_envs is not None:
            arguments["n_envs"] = n_envs
        arguments["reward_fn"] = compute_reward_of(env) if reward_fn is None else reward_fn
        sources = {"reward_fn": "given" if reward_fn is not None else "the env's compute_reward"}
        given = {name: kwargs[name] for name in HerSettings.names() if name in kwargs}
        her = HerSettings.of(kwargs.get("settings"), given)
        if conventions is None:
            conventions = conventions_of(
                env, arguments["reward_fn"], probe=probe, info_keys=her.info_keys
            )
        sources.update(conventions.sources)
        ending = Ending.given(her.terminal_on_success).otherwise(conventions.ending)
        sources["terminal_on_success"] = ending.source
        buffer = cls(capacity, **(arguments | kwargs | {"terminal_on_success": ending.ends}))
        buffer.sources = sources
        buffer.conventions = conventions
        return buffer

    from_dataset = classmethod(from_dataset)

    @property
    def recorded(self) -> RecordedEpisodes | None:
        """The recorded dataset held after the ring (:meth:`from_dataset`), or None."""
        return self.storage.recorded

    def __repr__(self) -> str:
        """The settings that decide what a batch holds, and where ``from_env`` took them."""
        found: dict[str, Any] = {"terminal_on_success": self.terminal_on_success}
        if self.conventions is not None:
            low_high = self.conventions.reward_range
            found["reward_range"] = None if low_high is None else tuple(low_high)
            found["success_key"] = self.conventions.success_key
        said = ", ".join(
            f"{name}={value!r}" + (f" ({self.sources[name]})" if name in self.sources else "")
            for name, value in found.items()
        )
        her = self.settings
        return (
            f"HerReplayBuffer(capacity={self.capacity:,}, n_envs={self.n_envs}, "
            f"strategy={Strategy.parse(her.strategy).value!r}, k={her.k}, "
            f"relabel={her.relabel!r}, prioritized={her.prioritized}, n_step={her.n_step}, "
            f"{said}, stored={len(self):,})"
        )

    def __len__(self) -> int:
        """Real transitions that can be sampled (finished episodes only in store mode)."""
        return self.sampler.count()

    @property
    def capacity(self) -> int:
        """Transitions held at most."""
        return self.storage.capacity

    @property
    def terminal_on_success(self) -> bool | None:
        """Whether the env ends episodes on success (None: not known yet)."""
        return self.settings.terminal_on_success

    @property
    def ending(self) -> Ending:
        """:attr:`terminal_on_success` with where it came from."""
        ends = self.terminal_on_success
        source = self.sources.get("terminal_on_success", UNKNOWN if ends is None else "given")
        return Ending(ends, source)

    def set_ending(self, ending: Ending) -> None:
        """Take ``ending`` (:mod:`herkit.buffer.ending`), e.g. a resumed run's, and tell
        those who follow it (:meth:`follow_ending`)."""
        self.settings = HerSettings.of(self.settings, {"terminal_on_success": ending.ends})
        self.sources["terminal_on_success"] = ending.source
        for follower in self._ending_followers:
            follower(ending.ends)

    def follow_ending(self, follower: Callable[[bool | None], None]) -> None:
        """Call ``follower`` with :attr:`terminal_on_success` now and whenever it changes
        (the env's first success decides it where it was unknown): the buffer holds it, an
        agent whose reward scale depends on it follows it."""
        self._ending_followers.append(follower)
        follower(self.terminal_on_success)

    def add(
        self,
        obs: Mapping[str, Any],
        action: Any,
        next_obs: Mapping[str, Any],
        terminated: Any,
        truncated: Any,
        info: Mapping[str, Any] | None = None,
        *,
        reward: Any = None,
        success: Any = None,
    ) -> None:
        """Store one step of every env; an env whose episode ended starts a new one.

        Arrays carry a leading ``n_envs`` axis (with ``n_envs=1`` it may be left out).
        ``reward`` is the env's step reward (None: ``reward_fn`` of the step's own goal,
        i.e. an env whose reward is its ``compute_reward``); ``success`` whether the step
        reached its own goal by the env's account (``info["is_success"]``; None: by the
        rule of ``success_threshold``). Everything is checked before anything is written
        (:mod:`herkit.buffer.inputs`): a wrong shape or dtype, or a NaN or infinity in an
        observation, goal, action or reward (named with its env and how many values) is
        a ValueError that leaves the buffer as it was.
        """
        n_envs = self.n_envs
        values, done = self.reader.read(obs, action, next_obs, terminated, truncated, info)
        env_reward = None if reward is None else as_rewards(reward, n_envs)
        given_success = None if success is None else as_flags("success", success, n_envs)
        self.storage.check_room()
        self.scorer.check_first(values)
        if self.terminal_on_success is None:  # the env's first success decides
            ending = self.ending.after(
                given_success, values["terminated"], "observed at the first success added"
            )
            if ending.ends is not None:
                self.set_ending(ending)
        base, dropped = self.storage.write(values)
        outcome = None if given_success is None else given_success.astype(np.int8)
        kept = None
        if self.device is not None:  # scoring then reads nothing back from the device
            keys = self.settings.info_keys
            names = ("next_achieved_goal", "desired_goal", *(f"info.{k}" for k in keys))
            kept = {name: np.array(values[name]) for name in names}
        self.scorer.added((int(base), env_reward, outcome, done, kept))
        self.sampler.added(int(base), self.n_envs, dropped)
        if done.any():
            self._episodes_ended(done)

    @property
    def reward_fn(self) -> RewardFn:
        """The vectorised ``reward_fn(achieved_goal, desired_goal, info)``."""
        return self.rewards.reward_fn

    @property
    def torch_reward_fn(self) -> TorchRewardFn | None:
        """``reward_fn`` in torch form, for a buffer on a device (None: none)."""
        return self.rewards.torch_reward_fn

    @property
    def audit(self) -> RewardAudit:
        """The env's rewards against ``reward_fn``, as of the last sample, save or
        :meth:`flush` (or every few hundred adds)."""
        return self.scorer.audit

    @audit.setter
    def audit(self, audit: RewardAudit) -> None:
        self.scorer.audit = audit

    def flush(self) -> None:
        """Score the steps added since the last sample, so that :attr:`audit` counts every
        step stored (sampling and saving do this by themselves)."""
        self.scorer.score()

    def reached_threshold(self) -> float | None:
        """The ``reward_fn`` value from which a goal counts as reached: the declared
        ``success_threshold``, else the one learned from ``success`` flags, else None
        (reached means ``reward_fn(g, g)``)."""
        return self.scorer.threshold()

    def success_rule(self) -> str:
        """In words, how a relabelled goal counts as reached now (for logs and configs)."""
        return success_rule(self.settings.success_threshold, self.audit)

    def end_episodes(self, mask: Any = None) -> None:
        """End the open episodes of all envs (or where ``mask`` is true) as if truncated.

        For envs reset outside ``add``, e.g. when a run resumes from a checkpoint: their
        next steps must not extend the episodes recorded before.
        """
        done = np.ones(self.n_envs, bool) if mask is None else as_flags("mask", mask, self.n_envs)
        self._episodes_ended(done)

    def _episodes_ended(self, done: np.ndarray) -> None:
        """Close the episodes of the envs where ``done``; in store mode their goals are
        drawn and they may be sampled from now on."""
        ids, envs = self.storage.close_episodes(done)
        if isinstance(self.relabeller, StoredGoals) and len(ids):
            self.sampler.may_sample(self.relabeller.episodes_ended(ids, envs, self.rng.random))

    def sample(self, batch_size: int, beta: float | None = None) -> Batch:
        """Draw ``batch_size`` transitions with replacement, goals relabelled as configured."""
        check_int("batch_size", batch_size, 1)
        self.scorer.score()
        if len(self) == 0:
            raise ValueError(
                "cannot sample from an empty buffer: add transitions first"
                + (" and finish an episode (relabel='store')" if self.sampler.closed_only else "")
            )
        drawn = self.sampler.draw(batch_size, self.rng, beta)
        her = self.settings
        batch, last = draw_batch(
            self,
            self.storage.ledger(closed_only=False),
            drawn.slots,
            drawn.copy,
            self.rng.random,
            terminal_on_success=her.terminal_on_success,
            threshold=self.reached_threshold(),
            warm=mix_warm(her, self.storage),
            achieved_goals=True,
        )
        return replace(
            batch,
            weights=None if drawn.weights is None else self.ops.from_host(drawn.weights),
            indices=drawn.indices,
            extras=self._extras("obs", drawn.slots),
            next_extras=self._extras("next_obs", last),
        )

    def _extras(self, side: str, slots: np.ndarray) -> dict[str, Any] | None:
        """The extra observation keys of ``slots`` (None without extra keys)."""
        if not self.extra_keys:
            return None
        data = self.storage.data
        return {key: self.ops.take(data[f"{side}.{key}"], slots) for key in self.extra_keys}

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (e.g. absolute TD errors) of sampled ``indices``.

        Stored as ``(priority + eps) ** alpha``. Indices whose transition has been dropped
        since it was sampled are ignored.
        """
        self.sampler.update_priorities(indices, priorities)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole buffer to one ``.npz`` file (no pickle), atomically."""
        save_buffer(self, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        reward_fn: RewardFn,
        *,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
        room: int | None = None,
    ) -> HerReplayBuffer:
        """Rebuild a buffer written by :meth:`save`; the reward functions are not stored,
        nor is the device: a buffer saved from any device loads onto ``device``. ``room``
        gives a buffer whose ring holds no step yet (a dataset's, going online) that many
        slots (None: those it had)."""
        build = partial(cls, reward_fn=reward_fn, device=device, torch_reward_fn=torch_reward_fn)
        return load_buffer(path, build, room)

    def _config(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this buffer, but the reward functions and the
        device (what :meth:`save` stores)."""
        return {
            "capacity": self.storage.capacity,
            **self.reader.config(),
            "seed": self._seed,
            **self.settings.to_dict(),
        }
