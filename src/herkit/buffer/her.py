"""HerReplayBuffer: episodic storage + a goal strategy + an injected reward function.

Two relabelling modes give the same distribution of goals (seed 004):

- ``relabel="sample"`` (default): transitions are stored as collected; at sample time
  each one is relabelled with probability ``k / (k + 1)`` in a copy of the batch. The
  stored data never changes, and the steps of open episodes can be sampled at once.
  Their goals follow one rule: a relabelled goal is an achieved goal that the episode
  has already recorded. ``future`` draws from the recorded steps t.. so far, ``episode``
  from all recorded steps, ``random`` from any stored step; ``final`` does not relabel a
  transition of an open episode at all (its last step does not exist yet), so it keeps
  its original goal until the episode ends.
- ``relabel="store"``: the paper's form. When an episode ends, ``k`` goals per
  transition are drawn and written beside it; a sample is then one of the ``k + 1``
  (transition, goal) pairs, uniformly. Only finished episodes are sampled. The goals
  are stored as values, not as indices, so dropping an old episode cannot redirect them.

A **goal mix** (``goal_mix=(real, future, desired)``, sample mode) replaces the strategy:
each sample keeps its own goal, takes a future achieved goal of its episode (the
``future`` rule above), or takes the desired goal of a stored transition drawn uniformly
from the whole buffer (mrl's "futureactual": goals the env really asks for, which the
agent mostly fails), with probabilities proportional to the three weights. ``future``
with ``k`` is the mix ``(1, k, 0)``; mrl's Fetch recipe ``futureactual_2_2`` is
``(1, 2, 2)``.

**What the env said is kept** (:mod:`herkit.buffer.env_terms`): a sample with its own goal
gets the env's step reward and ``terminated`` flag as stored; a relabelled one gets
``reward_fn(achieved_goal, desired_goal, info)`` (the GoalEnv signature, vectorised over the
leading axis) for its goal plus the part of the env's reward that does not depend on the
goal, and is terminal when the env ended for another reason than reaching the step's own
goal, or (with ``terminal_on_success``) when its goal is reached.

**n-step returns** (``n_step > 1``): the reward of a sample is
``sum_{j<m} gamma^j r_{t+j}``, every ``r_{t+j}`` taken for the sample's (possibly
relabelled) goal as above, over the ``m <= n`` steps of its episode from ``t`` on that are recorded
and come no later than the first terminal step (the env's flag, or with
``terminal_on_success`` a relabelled goal reached). ``next_observation`` is then the
observation after step ``t + m - 1``, ``terminated`` that step's flag, and the batch's
``discount`` is ``gamma ** m``. An episode cut by a time limit, or still open, ends the
window without ending the return: it bootstraps.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from herkit.buffer.backend import array_ops
from herkit.buffer.batch import Batch
from herkit.buffer.env_terms import RewardAudit
from herkit.buffer.priority import SumTree
from herkit.buffer.storage import EpisodeStorage, FieldSpec
from herkit.buffer.strategies import GOAL_STEPS, Strategy

RewardFn = Callable[[np.ndarray, np.ndarray, Mapping[str, np.ndarray]], Any]
"""``reward_fn(achieved_goal, desired_goal, info) -> rewards``, batched on axis 0."""
TorchRewardFn = Callable[[Any, Any, Mapping[str, Any]], Any]
"""The same in torch: tensors on the buffer's device in, a ``(B,)`` tensor out."""

_FORMAT_VERSION = 2


class HerReplayBuffer:
    """Hindsight Experience Replay buffer for ``n_envs`` envs stepping together.

    Args:
        capacity: transitions held (rounded down to a multiple of ``n_envs``); the
            oldest whole episodes are dropped when full.
        observation_shape, goal_shape, action_shape: shapes of one transition's
            ``observation``, goals (achieved and desired) and action (``()`` for a
            discrete action).
        reward_fn: vectorised ``reward_fn(achieved_goal, desired_goal, info)``; ``info``
            is a dict of the stored ``info_keys`` columns for the batch.
        observation_dtype, goal_dtype, action_dtype: storage dtypes (uint8 stays uint8).
        strategy: ``future``, ``final``, ``episode``, ``random`` or ``none``.
        k: relabelled goals per real transition (final uses 1, none 0).
        n_envs: envs whose transitions arrive together in every ``add``.
        relabel: ``"sample"`` or ``"store"`` (see the module docstring).
        prioritized: proportional prioritized replay (Schaul et al. 2016).
        alpha, beta, eps: priority exponent, importance-sampling exponent (default for
            ``sample``), and the constant added to every priority.
        info_keys: numeric scalar info fields stored with each transition and handed to
            ``reward_fn``, so that info-dependent rewards stay vectorised.
        terminal_on_success: the env ends episodes on success (bit flipping, parking): a
            relabelled sample is terminal when its goal is reached, or when the env ended
            its step for another reason (a crash). Otherwise the env's flag is kept.
        success_threshold: a goal counts as reached when ``reward_fn`` gives at least this
            (for dense rewards, e.g. parking's ``-0.12``). None: learned from the
            ``success`` flags given to :meth:`add`, else ``reward_fn(goal, goal, info)``
            (see :mod:`herkit.buffer.env_terms`).
        goal_mix: ``(real, future, desired)`` weights of a goal mix (see the module
            docstring), in place of ``strategy`` and ``k``; sample mode only.
        n_step: steps summed per sample (n-step returns, see the module docstring).
        gamma: discount of the n-step sums; needed when ``n_step > 1``.
        seed: seed of the buffer's own ``np.random.Generator``.
        device: None (default) keeps the data in numpy arrays; a torch device (``"cuda"``,
            or ``"cpu"`` for torch tensors in host memory) keeps it in tensors there, so
            that relabelled batches are gathered on the device and returned as tensors
            (``Batch.indices`` stays numpy). Bookkeeping and random draws stay on the host,
            so a buffer on a device samples exactly what a numpy buffer with the same seed
            samples.
        torch_reward_fn: ``reward_fn`` in torch form for a buffer on a device (rewards are
            then computed there); without it ``reward_fn`` gets host copies.
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
        strategy: str | Strategy = "future",
        k: int = 4,
        n_envs: int = 1,
        relabel: Literal["sample", "store"] = "sample",
        prioritized: bool = False,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        info_keys: Sequence[str] = (),
        terminal_on_success: bool = False,
        success_threshold: float | None = None,
        goal_mix: Sequence[float] | None = None,
        n_step: int = 1,
        gamma: float | None = None,
        seed: int | None = None,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
    ) -> None:
        _require_int("capacity", capacity, minimum=1)
        _require_int("n_step", n_step, minimum=1)
        if n_step > 1 and (
            isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0 < gamma <= 1
        ):
            raise ValueError(f"n_step > 1 needs gamma in (0, 1], got gamma={gamma!r}")
        _require_int("n_envs", n_envs, minimum=1)
        _require_int("k", k, minimum=0)
        if relabel not in ("sample", "store"):
            raise ValueError(f"relabel must be 'sample' or 'store', got {relabel!r}")
        if not callable(reward_fn):
            raise ValueError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
        if torch_reward_fn is not None and not callable(torch_reward_fn):
            raise ValueError(
                f"torch_reward_fn must be callable or None, got {type(torch_reward_fn).__name__}"
            )
        if success_threshold is not None and (
            isinstance(success_threshold, bool)
            or not isinstance(success_threshold, int | float | np.floating)
            or not np.isfinite(success_threshold)
        ):
            raise ValueError(
                f"success_threshold must be a finite number or None, got {success_threshold!r}"
            )
        if alpha < 0 or beta < 0 or eps <= 0:
            raise ValueError(
                f"alpha and beta must be >= 0 and eps > 0, got {alpha=}, {beta=}, {eps=}"
            )
        self.strategy = Strategy.parse(strategy)
        self.goal_mix = _goal_mix(goal_mix, relabel)
        if self.goal_mix is not None:  # its future share follows the future rule
            self.strategy, k = Strategy.FUTURE, 1
        self.k = int(k)
        self.relabel = relabel
        self.reward_fn = reward_fn
        self.torch_reward_fn = torch_reward_fn
        self.ops = array_ops(device)
        self.device = self.ops.device
        self.prioritized = bool(prioritized)
        self.alpha, self.beta, self.eps = float(alpha), float(beta), float(eps)
        self.info_keys = tuple(info_keys)
        self.terminal_on_success = bool(terminal_on_success)
        self.success_threshold = None if success_threshold is None else float(success_threshold)
        self.audit = RewardAudit()
        """The env's rewards against ``reward_fn``, as of the last sample, save or
        :meth:`flush` (or every few hundred adds)."""
        self._reward_fn_checked = False
        self.n_step = int(n_step)
        self.gamma = None if gamma is None else float(gamma)
        self.goals_per_transition = self.strategy.goals_per_transition(self.k)
        self.relabel_probability = self.goals_per_transition / (self.goals_per_transition + 1)
        self._seed = seed
        self.rng = np.random.default_rng(seed)

        obs = FieldSpec.of(observation_shape, observation_dtype)
        goal = FieldSpec.of(goal_shape, goal_dtype)
        self._specs = {
            "observation": obs,
            "achieved_goal": goal,
            "desired_goal": goal,
            "action": FieldSpec.of(action_shape, action_dtype),
            "next_observation": obs,
            "next_achieved_goal": goal,
            "terminated": FieldSpec((), np.dtype(bool)),
            "reward": FieldSpec((), np.dtype(np.float32)),
            "reward_extra": FieldSpec((), np.dtype(np.float32)),
            "success": FieldSpec((), np.dtype(bool)),
        }
        self._specs |= {f"info.{key}": FieldSpec((), np.dtype(np.float64)) for key in info_keys}
        stored = dict(self._specs)
        if relabel == "store" and self.goals_per_transition:
            stored["relabel_goal"] = FieldSpec((self.goals_per_transition, *goal.shape), goal.dtype)
        self.storage = EpisodeStorage(capacity, n_envs, stored, self.ops)
        self.n_envs = n_envs
        self._closed_only = relabel == "store"
        # Prioritized leaves: one per slot, or one per (slot, goal) pair in store mode.
        self._copies = self.goals_per_transition + 1 if self._closed_only else 1
        self.tree = SumTree(self.storage.capacity * self._copies) if prioritized else None
        if "relabel_goal" in stored:  # a (capacity * k, *goal_shape) view for one gather
            self._stored_goals_flat = self.storage.data["relabel_goal"].reshape(-1, *goal.shape)
        self.max_priority = 1.0
        # Steps added but not yet scored (:meth:`_score`): base slot, env reward or None,
        # success as int8 or None, done flags. Scored before the ring could overwrite them.
        self._pending: list[tuple[int, np.ndarray | None, np.ndarray | None, np.ndarray]] = []
        self._score_every = max(1, min(256, self.storage.rows // 2))

    # -- construction from an env --------------------------------------------------------

    @classmethod
    def from_env(
        cls,
        env: Any,
        capacity: int,
        *,
        n_envs: int | None = None,
        reward_fn: RewardFn | None = None,
        **kwargs: Any,
    ) -> HerReplayBuffer:
        """Build a buffer from a GoalEnv (or a gymnasium vector env of them).

        Shapes and dtypes come from the observation and action spaces, ``reward_fn``
        from the env's ``compute_reward`` unless given, ``n_envs`` from a vector env's
        ``num_envs`` unless given. Other keyword arguments go to the constructor.
        """
        space = getattr(env, "single_observation_space", env.observation_space)
        action_space = getattr(env, "single_action_space", env.action_space)
        keys = ("observation", "achieved_goal", "desired_goal")
        if not all(key in getattr(space, "spaces", {}) for key in keys):
            raise ValueError(
                "env must be a GoalEnv: its observation space must be a Dict with keys "
                f"{keys}, got {space}"
            )
        if reward_fn is None:
            reward_fn = compute_reward_of(env)
        return cls(
            capacity,
            observation_shape=space["observation"].shape,
            goal_shape=space["desired_goal"].shape,
            action_shape=action_space.shape,
            observation_dtype=space["observation"].dtype,
            goal_dtype=space["desired_goal"].dtype,
            action_dtype=action_space.dtype,
            reward_fn=reward_fn,
            n_envs=n_envs if n_envs is not None else getattr(env, "num_envs", 1),
            **kwargs,
        )

    # -- adding ----------------------------------------------------------------------------

    def __len__(self) -> int:
        """Real transitions that can be sampled (finished episodes only in store mode)."""
        return self.storage.count(self._closed_only)

    @property
    def capacity(self) -> int:
        """Transitions held at most."""
        return self.storage.capacity

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
        rule of ``success_threshold``). Everything is checked before anything is written:
        a ValueError leaves the buffer as it was.
        """
        n_envs, specs = self.n_envs, self._specs
        sources = {"obs": obs, "next_obs": next_obs}
        values = {
            field: _as_column(label, _get(sources[source], source, key), specs[field], n_envs)
            for field, (source, key, label) in _OBS_FIELDS.items()
        }
        values["action"] = _as_column("action", action, specs["action"], n_envs)
        values["terminated"] = _as_flags("terminated", terminated, n_envs)
        done = values["terminated"] | _as_flags("truncated", truncated, n_envs)
        for key in self.info_keys:
            if info is None or key not in info:
                raise ValueError(f"info must hold the stored key {key!r} (info_keys)")
            name = f"info.{key}"
            values[name] = _as_column(f"info[{key!r}]", info[key], specs[name], n_envs)
        env_reward = None if reward is None else _as_rewards(reward, n_envs)
        given_success = None if success is None else _as_flags("success", success, n_envs)
        self.storage.check_room()
        if not self._reward_fn_checked:
            self._check_reward_fn(values)

        base, invalidated = self.storage.write(values)
        outcome = None if given_success is None else given_success.astype(np.int8)
        self._pending.append((int(base), env_reward, outcome, done))
        if len(self._pending) >= self._score_every:
            self._score()
        if self.tree is not None:
            block = slice(base * self._copies, (base + self.n_envs) * self._copies)
            self.tree.set(block, 0.0 if self._closed_only else self.max_priority)
            if len(invalidated):
                self.tree.set(self._leaves_of(invalidated), 0.0)
        if done.any():
            ids, envs = self.storage.close_episodes(done)
            if self._closed_only and len(ids):
                self._store_goals(ids, envs)

    def _check_reward_fn(self, values: dict[str, np.ndarray]) -> None:
        """Call ``reward_fn`` on the first step added, so that one of the wrong shape is
        refused by that ``add`` (later steps are scored in batches, :meth:`_score`)."""
        info = {key: values[f"info.{key}"].astype(np.float64) for key in self.info_keys}
        self._goal_rewards(values["next_achieved_goal"], values["desired_goal"], info)
        self._reward_fn_checked = True

    def _goal_rewards(
        self, achieved: np.ndarray, desired: np.ndarray, info: Mapping[str, np.ndarray]
    ) -> np.ndarray:
        """``reward_fn`` of host rows as float64, its shape checked."""
        reward = np.asarray(self.reward_fn(achieved, desired, info), dtype=np.float64)
        if reward.shape != (len(achieved),):
            raise ValueError(
                f"reward_fn must return one reward per transition, shape ({len(achieved)},), "
                f"got shape {reward.shape}"
            )
        return reward

    def flush(self) -> None:
        """Score the steps added since the last sample, so that :attr:`audit` counts every
        step stored (sampling and saving do this by themselves)."""
        self._score()

    def _score(self) -> None:
        """Fill the ``reward``, ``reward_extra`` and ``success`` columns of the steps added
        since the last call, and account for them in :attr:`audit`: one ``reward_fn`` call
        for all of them. Runs before every sample and save, and every few hundred adds.
        Without ``success`` flags, success is decided by the rule only where an episode
        ended (elsewhere it is never read)."""
        pending = self._pending
        if not pending:
            return
        n, ops, data = self.n_envs, self.ops, self.storage.data
        slots = (np.array([entry[0] for entry in pending])[:, None] + np.arange(n)).ravel()

        def column(name: str) -> np.ndarray:
            return ops.to_host(ops.take(data[name], slots))

        info = {key: column(f"info.{key}") for key in self.info_keys}
        achieved, desired = column("next_achieved_goal"), column("desired_goal")
        goal_reward = self._goal_rewards(achieved, desired, info)
        given = [entry[1] for entry in pending]
        if all(reward is None for reward in given):
            env_reward = goal_reward
        else:
            env_reward = np.concatenate(
                [goal_reward[i * n : (i + 1) * n] if r is None else r for i, r in enumerate(given)]
            )
        outcomes = [entry[2] for entry in pending]
        known = None if all(o is None for o in outcomes) else np.concatenate(
            [np.full(n, -1, np.int8) if o is None else o for o in outcomes]
        )  # fmt: skip
        extra = self.audit.observe(env_reward, goal_reward, known)
        success = np.zeros(len(slots), bool) if known is None else known == 1
        unknown = np.concatenate([entry[3] for entry in pending])  # done, success not given
        if known is not None:
            unknown &= known < 0
        if unknown.any():
            ended = {key: value[unknown] for key, value in info.items()}
            scored = goal_reward[unknown].astype(np.float32)
            success[unknown] = self._reached_host(scored, desired[unknown], ended)
        ops.assign(data["reward"], slots, env_reward.astype(np.float32))
        ops.assign(data["reward_extra"], slots, extra)
        ops.assign(data["success"], slots, success)
        self._pending = []

    def _reached_host(
        self, goal_reward: np.ndarray, goal: np.ndarray, info: Mapping[str, np.ndarray]
    ) -> np.ndarray:
        """Whether each of a few host rows reached ``goal`` (see :meth:`_reached`)."""
        threshold = self.reached_threshold()
        if threshold is not None:
            return goal_reward >= threshold
        own = np.asarray(self.reward_fn(goal, goal, info), dtype=np.float32)
        return goal_reward == own

    def reached_threshold(self) -> float | None:
        """The ``reward_fn`` value from which a goal counts as reached: the declared
        ``success_threshold``, else the one learned from ``success`` flags, else None
        (reached means ``reward_fn(g, g)``)."""
        if self.success_threshold is not None:
            return self.success_threshold
        return self.audit.learned_threshold()

    def success_rule(self) -> str:
        """In words, how a relabelled goal counts as reached now (for logs and configs)."""
        if self.success_threshold is not None:
            return f"reward_fn >= {self.success_threshold:g} (declared)"
        learned, audit = self.audit.learned_threshold(), self.audit
        if learned is not None:
            return (
                f"reward_fn >= {learned:.6g} (learned from {audit.successes:,} successes and "
                f"{audit.failures:,} failures the env reported)"
            )
        why = (
            "successes and failures the env reported overlap in reward"
            if audit.successes
            else "no success reported yet"
        )
        return f"reward_fn(goal) == reward_fn(goal, goal) ({why})"

    def end_episodes(self, mask: Any = None) -> None:
        """End the open episodes of all envs (or where ``mask`` is true) as if truncated.

        For envs reset outside ``add``, e.g. when a run resumes from a checkpoint: their
        next steps must not extend the episodes recorded before.
        """
        done = np.ones(self.n_envs, bool) if mask is None else _as_flags("mask", mask, self.n_envs)
        ids, envs = self.storage.close_episodes(done)
        if self._closed_only and len(ids):
            self._store_goals(ids, envs)

    def _store_goals(self, ids: np.ndarray, envs: np.ndarray) -> None:
        """Draw and write the goals of just-finished episodes (store mode)."""
        storage = self.storage
        lengths = storage.episode_length[ids]
        starts = np.repeat(storage.episode_start[ids], lengths)
        step = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        env = np.repeat(envs, lengths)
        slots = storage.slot_of(starts + step, env)
        n_goals = self.goals_per_transition
        if n_goals:
            goal_slots = self._goal_slots(
                np.repeat(starts, n_goals),
                np.repeat(np.repeat(lengths, lengths), n_goals),
                np.repeat(step, n_goals),
                np.repeat(env, n_goals),
            )
            goals = self.ops.take(storage.data["next_achieved_goal"], goal_slots)
            self.ops.assign(
                storage.data["relabel_goal"],
                slots,
                goals.reshape(len(slots), n_goals, *goals.shape[1:]),
            )
        if self.tree is not None:
            self.tree.set(self._leaves_of(slots), self.max_priority)

    def _goal_slots(
        self, start: np.ndarray, length: np.ndarray, step: np.ndarray, env: np.ndarray
    ) -> np.ndarray:
        """Slots whose ``next_achieved_goal`` relabels the given transitions."""
        if self.strategy is Strategy.RANDOM:
            return self.storage.sample_slots(len(step), self.rng, self._closed_only)
        goal_step = GOAL_STEPS[self.strategy](step, length, self.rng)
        return self.storage.slot_of(start + goal_step, env)

    def _leaves_of(self, slots: np.ndarray) -> np.ndarray:
        if self._copies == 1:
            return slots
        return (slots[:, None] * self._copies + np.arange(self._copies)).ravel()

    # -- sampling --------------------------------------------------------------------------

    def sample(self, batch_size: int, beta: float | None = None) -> Batch:
        """Draw ``batch_size`` transitions with replacement, goals relabelled as configured."""
        _require_int("batch_size", batch_size, minimum=1)
        self._score()
        if len(self) == 0:
            raise ValueError(
                "cannot sample from an empty buffer: add transitions first"
                + (" and finish an episode (relabel='store')" if self._closed_only else "")
            )
        weights = indices = None
        copy = None
        if self.tree is not None:
            indices = self.tree.sample(batch_size, self.rng)
            weights = self._weights(indices, self.beta if beta is None else beta)
            slots = indices // self._copies
            if self._copies > 1:
                copy = indices % self._copies
        else:
            slots = self.storage.sample_slots(batch_size, self.rng, self._closed_only)
            if self._closed_only and self.goals_per_transition:
                copy = self.rng.integers(0, self._copies, size=batch_size)

        data, ops = self.storage.data, self.ops
        goal = ops.take(data["desired_goal"], slots)
        next_achieved = ops.take(data["next_achieved_goal"], slots)
        if copy is not None:  # store mode: copy j > 0 is the j-th stored goal
            relabel = copy > 0
            stored = self._stored_goals_flat
            chosen = ops.take(stored, slots * (self._copies - 1) + np.maximum(copy - 1, 0))
            goal = ops.where(self._per_sample(relabel), chosen, goal)
        elif self.goal_mix is not None:
            goal, relabel = self._mixed_goals(slots, goal)
        elif not self._closed_only and self.goals_per_transition:
            relabel = self.rng.random(batch_size) < self.relabel_probability
            if self.strategy is Strategy.FINAL:  # an open episode has no final goal yet
                relabel &= self.storage.is_closed(slots)
            start, length, step = self.storage.positions(slots)
            goal_slots = self._goal_slots(start, length, step, slots % self.n_envs)
            chosen = ops.take(data["next_achieved_goal"], goal_slots)
            goal = ops.where(self._per_sample(relabel), chosen, goal)
        else:
            relabel = None

        reward, terminated, last, discount = self._returns(slots, goal, relabel, next_achieved)
        return Batch(
            observation=ops.take(data["observation"], slots),
            action=ops.take(data["action"], slots),
            reward=reward,
            next_observation=ops.take(data["next_observation"], last),
            goal=goal,
            achieved_goal=ops.take(data["achieved_goal"], slots),
            next_achieved_goal=next_achieved,
            terminated=terminated,
            discount=discount,
            weights=None if weights is None else ops.from_host(weights),
            indices=indices,
        )

    def _returns(
        self,
        slots: np.ndarray,
        goal: np.ndarray,
        relabel: np.ndarray | None,
        next_achieved: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Reward, terminal flag, slot of the last step and discount of each sample: one
        step (discount None: the agent's gamma), or n steps (see the module docstring),
        every reward and flag the env's where ``relabel`` is false (or None), else taken for
        ``goal`` (:mod:`herkit.buffer.env_terms`); ``next_achieved`` is the samples' own."""
        data, ops, n, size = self.storage.data, self.ops, self.n_step, len(slots)
        flat = slots
        if n > 1:
            start, length, step = self.storage.positions(slots)
            steps = step[:, None] + np.arange(n)  # (B, n): the window's steps
            recorded = steps < length[:, None]
            rows = start[:, None] + np.minimum(steps, length[:, None] - 1)
            window = self.storage.slot_of(rows, (slots % self.n_envs)[:, None])
            flat = window.ravel()
        rewards = ops.take(data["reward"], flat)
        terminal = ops.take(data["terminated"], flat)
        if relabel is not None and relabel.any():
            goals = goal if n == 1 else ops.repeat(goal, n)
            info = {key: ops.take(data[f"info.{key}"], flat) for key in self.info_keys}
            achieved = next_achieved if n == 1 else ops.take(data["next_achieved_goal"], flat)
            goal_reward = self._reward(achieved, goals, info)
            relabelled = relabel if n == 1 else np.repeat(relabel, n)
            extra = ops.take(data["reward_extra"], flat)
            rewards = ops.where(relabelled, goal_reward + extra, rewards)
            if self.terminal_on_success:  # ended for another reason, or this goal reached
                other_end = terminal & ~ops.take(data["success"], flat)
                reached = self._reached(goal_reward, goals, info)
                terminal = ops.where(relabelled, other_end | reached, terminal)
        if n == 1:
            return rewards, ops.as_float32(terminal), slots, None
        assert self.gamma is not None
        # The window's bookkeeping on the host (a (B, n) array of flags), sums in the backend.
        terminal_host = ops.to_host(terminal).reshape(size, n) & recorded
        after_terminal = (np.cumsum(terminal_host, axis=1) - terminal_host) > 0
        used = recorded & ~after_terminal  # (B, n), a prefix of each row, never empty
        m = used.sum(axis=1)
        weight = used * self.gamma ** np.arange(n)  # float64, as the sum
        reward = ops.as_float32((rewards.reshape(size, n) * ops.from_host(weight)).sum(1))
        rows_i = np.arange(size)
        terminated = ops.from_host(terminal_host[rows_i, m - 1].astype(np.float32))
        discount = ops.from_host((self.gamma**m).astype(np.float32))
        return reward, terminated, window[rows_i, m - 1], discount

    def _mixed_goals(self, slots: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Goals of the goal mix for ``slots`` (whose own goals are ``goal``) and the mask
        of the samples whose goal was replaced."""
        assert self.goal_mix is not None
        data, ops = self.storage.data, self.ops
        real_share, future_share, desired_share = self.goal_mix
        kind = np.searchsorted([real_share, real_share + future_share],
                               self.rng.random(len(slots)), side="right")  # fmt: skip
        if desired_share == 0:  # rounding must not leave a sliver for a zero share
            kind = np.minimum(kind, 1 if future_share > 0 else 0)
        future, desired = kind == 1, kind == 2
        start, length, step = self.storage.positions(slots)
        future_slots = self._goal_slots(start, length, step, slots % self.n_envs)
        other_slots = self.storage.sample_slots(len(slots), self.rng, False)
        future_goal = ops.take(data["next_achieved_goal"], future_slots)
        goal = ops.where(self._per_sample(future), future_goal, goal)
        desired_goal = ops.take(data["desired_goal"], other_slots)
        goal = ops.where(self._per_sample(desired), desired_goal, goal)
        return goal, future | desired

    def _per_sample(self, mask: np.ndarray) -> np.ndarray:
        """A ``(B,)`` mask shaped to broadcast over goals of any rank."""
        return mask.reshape(-1, *(1,) * len(self._specs["desired_goal"].shape))

    def _reached(self, goal_reward: Any, goal: Any, info: Mapping[str, Any]) -> Any:
        """Whether each sample's goal is reached, given ``goal_reward = reward_fn(achieved,
        goal)``: at or above :meth:`reached_threshold`, else equal to the reward of the
        goal paired with itself."""
        threshold = self.reached_threshold()
        if threshold is not None:
            return goal_reward >= threshold
        return goal_reward == self._reward(goal, goal, info)

    def _reward(self, achieved: Any, desired: Any, info: Mapping[str, Any]) -> Any:
        """Rewards for a batch, in the backend: ``torch_reward_fn`` on the device when
        given, else ``reward_fn`` on host copies."""
        ops, name = self.ops, "reward_fn"
        if self.torch_reward_fn is not None and self.device is not None:
            reward = ops.as_float32(self.torch_reward_fn(achieved, desired, info))
            name = "torch_reward_fn"
        else:
            host = {key: ops.to_host(value) for key, value in info.items()}
            reward = self.reward_fn(ops.to_host(achieved), ops.to_host(desired), host)
            reward = ops.from_host(np.asarray(reward, dtype=np.float32))
        if tuple(reward.shape) != (len(achieved),):
            raise ValueError(
                f"{name} must return one reward per transition, shape ({len(achieved)},), "
                f"got shape {tuple(reward.shape)}"
            )
        return reward

    def _weights(self, indices: np.ndarray, beta: float) -> np.ndarray:
        assert self.tree is not None
        probability = self.tree.leaves[indices] / self.tree.total
        weights = (len(self) * self._copies * probability) ** -beta
        return (weights / weights.max()).astype(np.float32)

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (e.g. absolute TD errors) of sampled ``indices``.

        Stored as ``(priority + eps) ** alpha``. Indices whose transition has been dropped
        since it was sampled are ignored.
        """
        if self.tree is None:
            raise ValueError("update_priorities needs a buffer built with prioritized=True")
        idx = np.asarray(indices)
        value = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"indices must be a 1-D integer array, got {idx.dtype} {idx.shape}")
        if value.shape != idx.shape:
            raise ValueError(
                f"priorities must have one value per index, shape {idx.shape}, got {value.shape}"
            )
        if len(idx) and (idx.min() < 0 or idx.max() >= self.tree.capacity):
            raise ValueError(f"indices must lie in [0, {self.tree.capacity}), got out of range")
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError("priorities must be finite and >= 0")
        value = (value + self.eps) ** self.alpha
        live = self.tree.leaves[idx] > 0
        self.tree.set(idx[live], value[live])
        if len(value):
            self.max_priority = max(self.max_priority, float(value.max()))

    # -- persistence -----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole buffer to one ``.npz`` file (no pickle), atomically."""
        self._score()
        arrays, counters = self.storage.state()
        if self.tree is not None:
            arrays["priorities"] = np.asarray(self.tree.leaves)
        meta = {
            "format": _FORMAT_VERSION,
            "config": self._config(),
            "counters": counters,
            "max_priority": self.max_priority,
            "rng": self.rng.bit_generator.state,
            "audit": self.audit.to_dict(),
        }
        arrays["meta"] = np.array(json.dumps(meta))
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as file:
            np.savez(file, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        reward_fn: RewardFn,
        *,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
    ) -> HerReplayBuffer:
        """Rebuild a buffer written by :meth:`save`; the reward functions are not stored,
        nor is the device: a buffer saved from any device loads onto ``device``."""
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
            meta = json.loads(str(arrays.pop("meta")))
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(f"path {str(path)!r} is not a herkit buffer file: {error}") from error
        if meta.get("format") not in (1, _FORMAT_VERSION):
            raise ValueError(f"path {str(path)!r} has unknown buffer format {meta.get('format')}")
        config = meta["config"]
        buffer = cls(reward_fn=reward_fn, device=device, torch_reward_fn=torch_reward_fn, **config)
        if meta["format"] == 1:  # written before the env's rewards were kept
            arrays |= buffer._env_terms_of_format_1(arrays)
        buffer.audit = RewardAudit.from_dict(meta.get("audit", {}))
        buffer.storage.restore(arrays, meta["counters"])
        if buffer.tree is not None:
            buffer.tree.load_leaves(arrays["priorities"])
        buffer.max_priority = float(meta["max_priority"])
        buffer.rng.bit_generator.state = meta["rng"]
        return buffer

    def _env_terms_of_format_1(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The ``reward``, ``reward_extra`` and ``success`` columns for the data of a file
        of format 1, which held none: the rewards of ``reward_fn``, as that format's
        sampling computed them."""
        info = {key: arrays[f"data.info.{key}"] for key in self.info_keys}
        achieved, desired = arrays["data.next_achieved_goal"], arrays["data.desired_goal"]
        reward = np.asarray(self.reward_fn(achieved, desired, info), dtype=np.float32)
        reward = reward.reshape(len(achieved))
        success = self._reached_host(reward, desired, info)
        return {
            "data.reward": reward,
            "data.reward_extra": np.zeros_like(reward),
            "data.success": success,
        }

    def _config(self) -> dict[str, Any]:
        specs = self._specs
        return {
            "capacity": self.storage.capacity,
            "observation_shape": list(specs["observation"].shape),
            "goal_shape": list(specs["desired_goal"].shape),
            "action_shape": list(specs["action"].shape),
            "observation_dtype": specs["observation"].dtype.str,
            "goal_dtype": specs["desired_goal"].dtype.str,
            "action_dtype": specs["action"].dtype.str,
            "strategy": self.strategy.value,
            "k": self.k,
            "n_envs": self.n_envs,
            "relabel": self.relabel,
            "prioritized": self.prioritized,
            "alpha": self.alpha,
            "beta": self.beta,
            "eps": self.eps,
            "info_keys": list(self.info_keys),
            "terminal_on_success": self.terminal_on_success,
            "success_threshold": self.success_threshold,
            "goal_mix": None if self.goal_mix is None else list(self.goal_mix),
            "n_step": self.n_step,
            "gamma": self.gamma,
            "seed": self._seed,
        }


def _goal_mix(weights: Sequence[float] | None, relabel: str) -> tuple[float, float, float] | None:
    """``(real, future, desired)`` weights as probabilities summing to 1 (None: no mix)."""
    if weights is None:
        return None
    values = np.asarray(weights, dtype=np.float64) if len(weights) == 3 else None
    if values is None or not np.all(np.isfinite(values)) or values.min() < 0 or values.sum() <= 0:
        raise ValueError(
            "goal_mix must be 3 weights (real, future, desired), finite, >= 0 and not all 0, "
            f"got {weights!r}"
        )
    if relabel != "sample":
        raise ValueError("goal_mix needs relabel='sample' (goals are mixed at sample time)")
    real, future, desired = (values / values.sum()).tolist()
    return real, future, desired


def _require_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _get(mapping: Mapping[str, Any], name: str, key: str) -> Any:
    try:
        return mapping[key]
    except (KeyError, TypeError, IndexError):
        raise ValueError(
            f"{name} must be a GoalEnv observation dict with key {key!r}, got {type(mapping)}"
        ) from None


_OBS_FIELDS = {
    "observation": ("obs", "observation", "obs['observation']"),
    "achieved_goal": ("obs", "achieved_goal", "obs['achieved_goal']"),
    "desired_goal": ("obs", "desired_goal", "obs['desired_goal']"),
    "next_observation": ("next_obs", "observation", "next_obs['observation']"),
    "next_achieved_goal": ("next_obs", "achieved_goal", "next_obs['achieved_goal']"),
}
"""Stored observation fields: the ``add`` argument and dict key each is read from, and the
name that errors use."""


def _as_rewards(value: Any, n_envs: int) -> np.ndarray:
    """The env's step rewards as a finite float64 ``(n_envs,)`` array."""
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (n_envs,):
        if not math.isfinite(value.sum()):  # a NaN or an infinity makes the sum one
            raise ValueError(f"reward must be finite, got {value}")
        return value
    array = np.asarray(value)
    if array.shape != (n_envs,) and not (n_envs == 1 and array.shape in ((), (1, 1))):
        raise ValueError(f"reward must have shape ({n_envs},), got {array.shape}")
    if not (array.dtype == bool or np.issubdtype(array.dtype, np.number)):
        raise ValueError(f"reward must be numeric, got {array.dtype}")
    array = array.astype(np.float64).reshape(n_envs)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"reward must be finite, got {array}")
    return array


def _as_flags(name: str, value: Any, n_envs: int) -> np.ndarray:
    """Episode-end flags (bool or 0/1 numbers) as a bool ``(n_envs,)`` array."""
    if type(value) is np.ndarray and value.dtype == bool and value.shape == (n_envs,):
        return value
    array = np.asarray(value)
    if array.shape != (n_envs,) and not (n_envs == 1 and array.shape == ()):
        raise ValueError(f"{name} must have shape ({n_envs},), got {array.shape}")
    if not (array.dtype == bool or np.issubdtype(array.dtype, np.number)):
        raise ValueError(f"{name} must be bool or numeric, got {array.dtype}")
    return array.reshape(n_envs) != 0


def _as_column(name: str, value: Any, spec: FieldSpec, n_envs: int) -> np.ndarray:
    """``value`` as an ``(n_envs, *spec.shape)`` array; ValueError naming ``name`` if not."""
    if type(value) is np.ndarray and value.dtype == spec.dtype:
        shape = value.shape
        if len(shape) == len(spec.shape) + 1 and shape[0] == n_envs and shape[1:] == spec.shape:
            return value
    array = np.asarray(value)
    expected = (n_envs, *spec.shape)
    if array.shape != expected:
        if n_envs == 1 and array.shape == spec.shape:
            array = array[None]
        else:
            also = f" or {spec.shape}" if n_envs == 1 else ""
            raise ValueError(f"{name} must have shape {expected}{also}, got {array.shape}")
    if array.dtype != spec.dtype and not np.can_cast(array.dtype, spec.dtype, "same_kind"):
        raise ValueError(f"{name} must have a dtype that casts to {spec.dtype}, got {array.dtype}")
    return array


def compute_reward_of(env: Any) -> RewardFn:
    """The ``compute_reward`` of a GoalEnv, or of the first env of a vector env."""
    if hasattr(env, "envs"):
        env = env.envs[0]
    elif hasattr(env, "env_fns"):
        env = env.env_fns[0]()
    compute_reward = getattr(env.unwrapped, "compute_reward", None)
    if compute_reward is None:
        raise ValueError("env must be a GoalEnv with a compute_reward method, or pass reward_fn")
    return compute_reward
