"""Drop-in replacement for ``cpprb.HindsightReplayBuffer`` (cpprb 10.x / 11.x).

Code written for cpprb runs by changing one import::

    from herkit.cpprb import HindsightReplayBuffer  # was: from cpprb import ...

Transitions are staged per episode; :meth:`HindsightReplayBuffer.on_episode_end` stores the
episode with its original goal, then ``additional_goals`` relabelled copies of it, into a
FIFO ring of ``size`` rows, as cpprb does. Prioritized replay follows cpprb's
``PrioritizedReplayBuffer``: a row's leaf is ``(p + eps) ** alpha``, new rows get the largest
raw priority seen so far (initially 1), sampling is stratified proportional, and importance
weights ``(N * P(i)) ** -beta`` are divided by their maximum over the batch.

What the env said follows cpprb, which differs here from :class:`herkit.HerReplayBuffer`:
cpprb's ``add`` takes no reward (``rew`` is reserved and computed), so every stored reward,
the original goal's too, is ``reward_func(next_state, action, goal)``; a term the env adds
(a collision penalty) must be part of ``reward_func``, which may read it from the stored
state. A field of ``env_dict`` such as ``done`` is copied as given to every relabelled copy:
a crash stays terminal for every goal, and so does a step that ended on reaching its
original goal. ``herkit.HerReplayBuffer`` keeps the env's rewards and decides relabelled
terminal flags from the goal (see :mod:`herkit.buffer.env_terms`).

Deliberate differences from cpprb: bad input raises ``ValueError`` at once (unknown or
missing keys, bad shapes, over-long episodes, bad priorities) where cpprb fails later or
silently; importance weights are normalised by the batch's largest weight, where cpprb
divides by the weight of the lowest-priority stored row (a min-tree it keeps for this);
``get_all_transitions`` returns rows oldest first rather than in ring order;
``indexes`` are int64; one ``numpy.random.Generator`` (``seed=``) drives every random choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from herkit.buffer.backend import NUMPY
from herkit.buffer.checks import check_int
from herkit.buffer.inputs import check_finite
from herkit.buffer.priority import SumTree, importance_weights
from herkit.buffer.settings import HerSettings, Strategy

__all__ = ["HindsightReplayBuffer"]

_KNOWN_STRATEGIES = ("future", "episode", "random", "final")  # cpprb's own four
_OPTIONS = ("alpha", "eps", "seed", "default_dtype")
_Spec = tuple[tuple[int, ...], np.dtype]


def _identity(states: np.ndarray) -> np.ndarray:
    return states


def _shape(name: str, value: Any) -> tuple[int, ...]:
    shape = tuple(int(d) for d in np.array(value, ndmin=1).ravel())
    if any(d < 0 for d in shape):
        raise ValueError(f"shape of {name!r} must be non-negative, got {value!r}")
    return shape


class HindsightReplayBuffer:
    """Hindsight Experience Replay buffer with cpprb's constructor, methods and semantics."""

    def __init__(
        self,
        size: int,
        env_dict: Mapping[str, Mapping[str, Any]],
        max_episode_len: int,
        reward_func: Callable[[np.ndarray, np.ndarray, np.ndarray], ArrayLike],
        *,
        goal_func: Callable[[np.ndarray], ArrayLike] | None = None,
        goal_shape: int | tuple[int, ...] | None = None,
        state: str = "obs",
        action: str = "act",
        next_state: str = "next_obs",
        strategy: str = "future",
        additional_goals: int = 4,
        prioritized: bool = True,
        **kwargs: Any,
    ) -> None:
        """Create the buffer; extra keywords: ``alpha``, ``eps``, ``default_dtype``, ``seed``."""
        unknown = sorted(set(kwargs) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"HindsightReplayBuffer got unexpected keyword argument(s): {unknown}")
        self.size = check_int("size", size, 1, whole_floats=True)
        self.max_episode_len = check_int("max_episode_len", max_episode_len, 1, whole_floats=True)
        if strategy not in _KNOWN_STRATEGIES:
            raise ValueError(f"strategy must be one of {list(_KNOWN_STRATEGIES)}, got {strategy!r}")
        self.settings = HerSettings(
            strategy=Strategy.parse(strategy),
            # cpprb ignores additional_goals for final: one relabelled goal per transition
            k=1 if strategy == "final" else check_int("additional_goals", additional_goals, 0),
            relabel="store",
            prioritized=bool(prioritized),
            alpha=kwargs.get("alpha", 0.6),
            eps=kwargs.get("eps", 1e-4),  # cpprb's default
        )
        """The HER settings of cpprb's arguments, checked and defaulted by
        :class:`~herkit.buffer.settings.HerSettings` (priorities follow cpprb's own rules)."""
        self.strategy = Strategy.parse(self.settings.strategy)
        self.additional_goals = self.settings.goals_per_transition

        reserved = sorted({"rew", "goal"} & set(env_dict))
        if reserved:
            raise ValueError(f"env_dict must not define {reserved}: they are added automatically")
        for role, key in (("state", state), ("action", action), ("next_state", next_state)):
            if key not in env_dict:
                raise ValueError(f"{role}={key!r} is not a key of env_dict")
        default_dtype = np.dtype(kwargs.get("default_dtype") or np.float32)
        self._specs: dict[str, _Spec] = {
            name: (_shape(name, spec.get("shape", 1)), np.dtype(spec.get("dtype", default_dtype)))
            for name, spec in env_dict.items()
        }
        state_shape, state_dtype = self._specs[state]
        self.goal_shape = state_shape if goal_shape is None else _shape("goal", goal_shape)
        ring_specs = {
            **self._specs,
            "rew": ((1,), default_dtype),
            "goal": (self.goal_shape, state_dtype),
        }

        self.reward_func = reward_func
        self.goal_func = goal_func or _identity
        self.state, self.action, self.next_state = state, action, next_state
        self.prioritized = bool(prioritized)
        self.alpha, self.eps = self.settings.alpha, self.settings.eps
        self.rng = np.random.default_rng(kwargs.get("seed"))

        self._ring = {k: np.zeros((self.size, *s), dtype=d) for k, (s, d) in ring_specs.items()}
        self._episode = {
            k: np.zeros((self.max_episode_len, *s), dtype=d) for k, (s, d) in self._specs.items()
        }
        self._episode_len = 0
        self._next = 0
        self._stored = 0
        self._tree = SumTree(self.size) if self.prioritized else None
        self._max_priority = 1.0

    # ------------------------------------------------------------------ adding
    def add(self, **kwargs: ArrayLike) -> None:
        """Stage one transition, or a batch along a leading axis, for every env_dict key."""
        missing = [k for k in self._specs if k not in kwargs]
        if missing:
            raise ValueError(f"add() is missing value(s) for env_dict key(s) {missing}")
        extra = [k for k in kwargs if k not in self._specs]
        if extra:
            raise ValueError(f"add() got key(s) {extra} that are not in env_dict")
        rows = {k: self._as_rows(k, v) for k, v in kwargs.items()}
        for key, values in rows.items():
            check_finite(repr(key), values, row="transition", call="add")
        counts = {k: len(v) for k, v in rows.items()}
        if len(set(counts.values())) != 1:
            raise ValueError(f"add() got different numbers of transitions per key: {counts}")
        n = next(iter(counts.values()))
        start = self._episode_len
        if start + n > self.max_episode_len:
            raise ValueError(
                f"adding {n} step(s) to an episode of {start} would exceed "
                f"max_episode_len={self.max_episode_len}; call on_episode_end first"
            )
        for k, v in rows.items():
            self._episode[k][start : start + n] = v
        self._episode_len = start + n

    def _as_rows(self, key: str, value: ArrayLike) -> np.ndarray:
        shape = self._specs[key][0]
        array = np.asarray(value)
        if array.shape == shape:
            return array[np.newaxis]
        if shape == (1,) and array.ndim <= 1:
            return array.reshape(-1, 1)
        if array.ndim == len(shape) + 1 and array.shape[1:] == shape:
            return array
        raise ValueError(f"{key!r} must have shape {shape} or (N, *{shape}), got {array.shape}")

    def on_episode_end(self, goal: ArrayLike) -> None:
        """Store the staged episode with its original ``goal`` plus the relabelled copies."""
        length = self._episode_len
        if length == 0:
            return
        episode = {k: v[:length].copy() for k, v in self._episode.items()}
        try:
            goals = np.broadcast_to(np.asarray(goal), (length, *self.goal_shape))
        except ValueError:
            raise ValueError(
                f"goal of shape {np.shape(goal)} does not broadcast to goal_shape {self.goal_shape}"
            ) from None
        check_finite("goal", np.asarray(goals, dtype=np.float64), row="step", call="episode")
        written = [{**episode, "goal": goals, "rew": self._rewards(episode, goals)}]
        k = self.additional_goals
        if k > 0:
            rule = self.strategy.rule
            if rule.steps is None:  # random: any row stored once this episode is
                sources = self._stored_after_write(episode[self.next_state], k * length)
            else:
                steps = np.broadcast_to(np.arange(length, dtype=np.int64), (k, length))
                u = self.rng.random(steps.shape) if rule.draws else None
                lengths = np.full_like(steps, length)
                picked = rule.steps(NUMPY, steps, lengths, u, self.settings)
                sources = episode[self.next_state][picked.ravel()]
            copies = {key: v[np.tile(np.arange(length), k)] for key, v in episode.items()}
            new_goals = self._goals(sources)
            written.append({**copies, "goal": new_goals, "rew": self._rewards(copies, new_goals)})
        for rows in written:  # everything computed and checked before anything is stored
            self._write(rows)
        self._episode_len = 0

    def _stored_after_write(self, states: np.ndarray, count: int) -> np.ndarray:
        """``count`` rows of ``next_state`` drawn uniformly from the ring as it will be once
        the episode whose ``states`` these are is written (so it can be drawn too)."""
        n = len(states)
        kept = min(n, self.size)
        picks = self.rng.integers(0, min(self._stored + n, self.size), size=count)
        sources = self._ring[self.next_state][picks]
        offset = (picks - (self._next + n - kept)) % self.size  # position in the new rows
        new = offset < kept
        sources[new] = states[n - kept + offset[new]]
        return sources

    def _goals(self, states: np.ndarray) -> np.ndarray:
        goals = np.asarray(self.goal_func(states))
        try:
            return goals.reshape(len(states), *self.goal_shape)
        except ValueError:
            raise ValueError(
                f"goal_func returned shape {goals.shape}, expected ({len(states)}, "
                f"*{self.goal_shape})"
            ) from None

    def _rewards(self, rows: dict[str, np.ndarray], goals: np.ndarray) -> np.ndarray:
        n = len(goals)
        rew = np.asarray(self.reward_func(rows[self.next_state], rows[self.action], goals))
        if rew.size != n:
            raise ValueError(f"reward_func returned {rew.size} values for {n} transitions")
        rew = rew.reshape(n, 1)
        check_finite("reward_func's reward", rew.astype(np.float64), row="step", call="episode")
        return rew

    def _write(self, rows: dict[str, np.ndarray]) -> None:
        n = len(rows["rew"])
        kept = min(n, self.size)
        positions = (self._next + n - kept + np.arange(kept)) % self.size
        for key, values in rows.items():
            self._ring[key][positions] = values[n - kept :]
        if self._tree is not None:
            self._tree.set(positions, (self._max_priority + self.eps) ** self.alpha)
        self._next = (self._next + n) % self.size
        self._stored = min(self._stored + n, self.size)

    # ---------------------------------------------------------------- reading
    def sample(self, batch_size: int, beta: float = 0.4) -> dict[str, np.ndarray]:
        """Sample ``batch_size`` rows with replacement (proportionally to priority with PER).

        With PER the result also holds ``weights`` (float32) and ``indexes`` (int64);
        ``beta`` is ignored without PER.
        """
        batch_size = check_int("batch_size", batch_size, 1)
        if self._stored == 0:
            raise ValueError(
                "cannot sample: the buffer is empty (transitions are stored only when "
                "on_episode_end is called)"
            )
        if self._tree is None:
            return self._encode(self.rng.integers(0, self._stored, size=batch_size))
        if not np.isfinite(float(beta)) or float(beta) < 0:
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        beta = float(beta)
        tree = self._tree
        indexes = tree.sample(batch_size, self.rng.random(batch_size))
        batch = self._encode(indexes)
        batch["weights"] = importance_weights(NUMPY, tree.leaves[indexes], tree.total, beta)
        batch["indexes"] = indexes.astype(np.int64)
        return batch

    def _encode(self, indexes: np.ndarray) -> dict[str, np.ndarray]:
        return {key: values[indexes] for key, values in self._ring.items()}

    def get_all_transitions(self, shuffle: bool = False) -> dict[str, np.ndarray]:
        """Every stored row, oldest first (shuffled with the buffer's rng if ``shuffle``)."""
        order = (self._next - self._stored + np.arange(self._stored)) % self.size
        if shuffle:
            order = self.rng.permutation(order)
        return self._encode(order)

    def get_stored_size(self) -> int:
        """Number of rows in the ring (staged, unfinished episodes do not count)."""
        return self._stored

    def get_buffer_size(self) -> int:
        """Capacity of the ring, the ``size`` given to the constructor."""
        return self.size

    def clear(self) -> None:
        """Empty the ring and the staged episode and reset the priorities."""
        self._episode_len = 0
        self._next = 0
        self._stored = 0
        self._max_priority = 1.0
        if self._tree is not None:
            self._tree.load_leaves(np.zeros(self.size))

    # ------------------------------------------------------------- priorities
    def _per(self) -> SumTree:
        if self._tree is None:
            raise ValueError("this buffer was constructed without prioritized replay")
        return self._tree

    def update_priorities(self, indexes: ArrayLike, priorities: ArrayLike) -> None:
        """Set raw priorities (e.g. ``|TD error|``) of stored rows: leaf = ``(p + eps)**alpha``."""
        tree = self._per()
        if indexes is None or priorities is None:
            raise TypeError("indexes and priorities must not be None")
        idx = np.asarray(indexes).ravel()
        prio = np.asarray(priorities, dtype=np.float64).ravel()
        if idx.shape != prio.shape:
            raise ValueError(f"got {idx.size} indexes but {prio.size} priorities")
        if idx.size == 0:
            return
        if not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"indexes must be integers, got dtype {idx.dtype}")
        if not np.isfinite(prio).all() or (prio < 0).any():
            raise ValueError("priorities must be finite and >= 0")
        if (idx < 0).any() or (idx >= self._stored).any():
            raise ValueError(f"indexes must lie in [0, {self._stored}) (the stored size)")
        tree.set(idx.astype(np.int64), (prio + self.eps) ** self.alpha)
        self._max_priority = max(self._max_priority, float(prio.max()))

    def get_max_priority(self) -> float:
        """Largest raw priority seen since construction or the last clear (initially 1.0)."""
        self._per()
        return self._max_priority
