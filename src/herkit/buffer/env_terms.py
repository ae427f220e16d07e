"""What the env said beyond ``compute_reward``, kept through relabelling.

A GoalEnv's step reward can hold terms that ``compute_reward(achieved, desired, info)``
lacks: collision, energy or time penalties, reward wrappers. An episode can end whatever
the goal (a crash). Recomputing every sampled reward from ``compute_reward`` drops both
silently; highway-env's ``parking-v0`` then learns to crash. So the buffer stores, with
each step, the env's reward ``r``, its ``terminated`` flag and whether the step's own goal
``g`` was reached, and a sample with goal ``g'`` gets:

======================  ============================  =====================================
                        reward                        terminal
======================  ============================  =====================================
own goal (``g``)        ``r``, as the env gave it     the env's flag
relabelled (``g'``)     ``compute_reward(g') +        the env ended for another reason than
                        (r - compute_reward(g))``     reaching ``g`` (a crash), or, where
                                                      episodes end on success, ``g'`` is
                                                      reached
======================  ============================  =====================================

``r - compute_reward(g)`` is the part of the env's reward that does not depend on the goal
(0 for an env whose step reward is its ``compute_reward``).

**Reached** is the env's success test, in this order: a declared threshold
(``compute_reward >= threshold``, e.g. parking's ``-0.12``); else one learned from the
success flags the env reported for the steps' own goals (``info["is_success"]``): the
smallest ``compute_reward`` of a success, as long as every failure scored lower (for -1/0
or 0/1 rewards this is the reward of a reached goal); else ``compute_reward(g', g')``, the
reward of a goal reached exactly.

:class:`RewardAudit` counts, on every stored step, how often and by how much the env's
reward differs from ``compute_reward``, and learns the threshold above. The functions
below the class compute the rewards of goals (:func:`host_rewards`, :class:`GoalRewards`),
apply the reached rule (:func:`reached_threshold`, :meth:`GoalRewards.reached`,
:func:`success_rule`) and score the steps that ``add`` stored
(:class:`StepScorer`: the columns ``reward``, ``reward_extra`` and ``success`` that
sampling reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from herkit.buffer.backend import NUMPY, ArrayOps
from herkit.buffer.goal_env import RewardFn, TorchRewardFn
from herkit.buffer.storage import EpisodeStorage

__all__ = [
    "GoalRewards",
    "PendingStep",
    "RewardAudit",
    "StepScorer",
    "check_reward_shape",
    "host_rewards",
    "reached_threshold",
    "success_rule",
]

_RTOL, _ATOL = 1e-5, 1e-6
"""A step reward this close to ``compute_reward`` counts as equal to it."""


@dataclass
class RewardAudit:
    """Running account of the env's step rewards against ``compute_reward``."""

    steps: int = 0
    """Steps stored."""
    differing: int = 0
    """Steps whose env reward differs from ``compute_reward`` of their own goal."""
    first_differing_step: int | None = None
    """The index (0-based, counted in stored steps) of the first such step."""
    extra_abs_sum: float = 0.0
    """Sum of ``|r - compute_reward(g)|`` over the stored steps."""
    extra_low: float = 0.0
    """Smallest ``r - compute_reward(g)`` seen (0 when none differs)."""
    extra_high: float = 0.0
    """Largest ``r - compute_reward(g)`` seen (0 when none differs)."""
    reward_low: float = float("inf")
    """Smallest env reward of a step whose reward differs from ``compute_reward``."""
    reward_high: float = float("-inf")
    """Largest env reward of a step whose reward differs from ``compute_reward``."""
    successes: int = 0
    """Steps whose own goal the env reported reached."""
    failures: int = 0
    """Steps whose own goal the env reported not reached."""
    success_low: float = float("inf")
    """Smallest ``compute_reward`` of a reported success (float32 values)."""
    failure_high: float = float("-inf")
    """Largest ``compute_reward`` of a reported failure (float32 values)."""

    def observe(
        self, env_reward: np.ndarray, goal_reward: np.ndarray, outcome: np.ndarray | None
    ) -> np.ndarray:
        """Account for stored steps (in the order they were added); return ``env_reward -
        goal_reward`` as float32, with differences within float tolerance set to exactly 0.

        ``outcome`` holds the env's own account of each step's goal: 1 reached, 0 not, -1
        not said (None: nothing said for any step).
        """
        n = len(env_reward)
        if outcome is not None:
            scored = goal_reward.astype(np.float32)
            success, failure = outcome == 1, outcome == 0
            self.successes += int(np.count_nonzero(success))
            self.failures += int(np.count_nonzero(failure))
            low = float(np.min(scored, where=success, initial=np.inf))
            self.success_low = min(self.success_low, low)
            high = float(np.max(scored, where=failure, initial=-np.inf))
            self.failure_high = max(self.failure_high, high)
        extra = env_reward - goal_reward
        if not extra.any():  # the rule: an env whose reward is its compute_reward
            self.steps += n
            return np.zeros(n, np.float32)
        close = np.abs(extra) <= _ATOL + _RTOL * np.abs(goal_reward)
        if close.all():
            self.steps += n
            return np.zeros(n, np.float32)
        extra[close] = 0.0
        differs = ~close
        if self.first_differing_step is None:
            self.first_differing_step = self.steps + int(np.argmax(differs))
        self.steps += n
        self.differing += int(np.count_nonzero(differs))
        self.extra_abs_sum += float(np.abs(extra).sum())
        self.extra_low = min(self.extra_low, float(extra.min()))
        self.extra_high = max(self.extra_high, float(extra.max()))
        self.reward_low = min(self.reward_low, float(env_reward[differs].min()))
        self.reward_high = max(self.reward_high, float(env_reward[differs].max()))
        return extra.astype(np.float32)

    def learned_threshold(self) -> float | None:
        """The smallest ``compute_reward`` of a reported success, while every reported
        failure scored lower; None before a success, or when successes and failures
        overlap (then success is not a threshold on ``compute_reward``)."""
        if self.successes and self.success_low > self.failure_high:
            return self.success_low
        return None

    def differing_share(self) -> float:
        """Share of stored steps whose env reward differs from ``compute_reward``."""
        return self.differing / self.steps if self.steps else 0.0

    def describe(self) -> str:
        """One line: how often and how much the env's reward differs, and what is done."""
        mean = self.extra_abs_sum / max(self.differing, 1)
        return (
            f"the env's step reward differs from compute_reward(achieved_goal, desired_goal, "
            f"info) at {self.differing:,} of {self.steps:,} steps so far (first at step "
            f"{self.first_differing_step}; by {self.extra_low:+.4g} to {self.extra_high:+.4g}, "
            f"mean |difference| {mean:.4g}): herkit keeps the env's reward for each step's own "
            "goal and adds the difference (the part that does not depend on the goal, e.g. a "
            "penalty) to the reward of every goal relabelled onto that step"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (infinities of empty accounts as None)."""
        values = asdict(self)
        for key, value in values.items():
            if isinstance(value, float) and not np.isfinite(value):
                values[key] = None
        values["differing_share"] = self.differing_share()
        values["learned_success_threshold"] = self.learned_threshold()
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RewardAudit:
        """Inverse of :meth:`to_dict`."""
        defaults = cls()
        kwargs = {}
        for key, default in asdict(defaults).items():
            value = values.get(key, default)
            kwargs[key] = default if value is None else value
        return cls(**kwargs)


PendingStep = tuple[
    int, np.ndarray | None, np.ndarray | None, np.ndarray, dict[str, np.ndarray] | None
]
"""One ``add`` not scored yet: its base slot, the env's rewards (None: not given), the
env's success flags as int8 (None: not given), the steps' done flags, and host copies of
the columns a reward needs (``next_achieved_goal``, ``desired_goal``, ``info.KEY``) for a
buffer whose data lives on a device (None: read from the columns)."""


def host_rewards(
    reward_fn: RewardFn, achieved: np.ndarray, desired: np.ndarray, info: Mapping[str, np.ndarray]
) -> np.ndarray:
    """``reward_fn`` of host rows as float64, its shape checked (one reward per row)."""
    reward = np.asarray(reward_fn(achieved, desired, info), dtype=np.float64)
    check_reward_shape("reward_fn", reward.shape, len(achieved))
    return reward


def check_reward_shape(name: str, shape: tuple[int, ...], n: int) -> None:
    """ValueError naming the reward function ``name`` unless it gave one reward for each of
    the ``n`` transitions (shape ``(n,)``)."""
    if shape != (n,):
        raise ValueError(
            f"{name} must return one reward per transition, shape ({n},), got shape {shape}"
        )


def reached_threshold(declared: float | None, audit: RewardAudit) -> float | None:
    """The ``reward_fn`` value from which a goal counts as reached: ``declared``, else the
    one ``audit`` learned from success flags, else None (reached means ``reward_fn(g, g)``)."""
    if declared is not None:
        return declared
    return audit.learned_threshold()


def success_rule(declared: float | None, audit: RewardAudit) -> str:
    """In words, how a relabelled goal counts as reached (for logs and configs)."""
    if declared is not None:
        return f"reward_fn >= {declared:g} (declared)"
    learned = audit.learned_threshold()
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


class StepScorer:
    """Scores the steps that ``add`` stored, in batches: fills their ``reward``,
    ``reward_extra`` and ``success`` columns (what sampling reads) and accounts for them in
    :attr:`audit`. Steps wait in :attr:`pending` until :meth:`score` (before every sample
    and save, and every few hundred adds, before the ring could overwrite them)."""

    def __init__(
        self,
        storage: EpisodeStorage,
        rewards: GoalRewards,
        info_keys: Sequence[str],
        declared_threshold: float | None,
    ) -> None:
        self.storage, self.rewards = storage, rewards
        self.info_keys, self.declared_threshold = tuple(info_keys), declared_threshold
        self.audit = RewardAudit()
        """The env's rewards against ``reward_fn``, as of the last :meth:`score`."""
        self.pending: list[PendingStep] = []
        self.every = max(1, min(256, storage.rows // 2))
        self.checked = False

    def check_first(self, values: Mapping[str, np.ndarray]) -> None:
        """Call ``reward_fn`` on the first step added, so that one of the wrong shape is
        refused by that ``add`` (later steps are scored in batches)."""
        if not self.checked:
            info = {key: values[f"info.{key}"].astype(np.float64) for key in self.info_keys}
            goals = values["next_achieved_goal"], values["desired_goal"]
            host_rewards(self.rewards.reward_fn, *goals, info)
            self.checked = True

    def added(self, step: PendingStep) -> None:
        """Note a step written (scored with the next batch)."""
        self.pending.append(step)
        if len(self.pending) >= self.every:
            self.score()

    def threshold(self) -> float | None:
        """The reward from which a goal counts as reached (:func:`reached_threshold`)."""
        return reached_threshold(self.declared_threshold, self.audit)

    def score(self) -> None:
        """Score the pending steps (``n_envs`` slots each, in the order added) with one
        ``reward_fn`` call.

        ``reward`` is the env's (``reward_fn`` of the step's own goal where none was given),
        ``reward_extra`` its goal-free part (:meth:`RewardAudit.observe`), ``success`` the
        env's flag where given; without one, success is decided by the reached rule only
        where an episode ended (elsewhere it is never read).
        """
        pending = self.pending
        if not pending:
            return
        storage = self.storage
        n = storage.n_envs
        slots = (np.array([entry[0] for entry in pending])[:, None] + np.arange(n)).ravel()

        def column(name: str) -> np.ndarray:
            kept = [entry[4] for entry in pending]
            if all(copy is not None for copy in kept):  # no read back from a device
                return np.concatenate([copy[name] for copy in kept])  # type: ignore[index]
            return storage.ops.to_host(storage.take(name, slots))

        given = [entry[1] for entry in pending]
        env_reward = (
            None
            if all(reward is None for reward in given)
            else [None if r is None else (i * n, r) for i, r in enumerate(given)]
        )
        outcomes = [entry[2] for entry in pending]
        known = (
            None
            if all(o is None for o in outcomes)
            else np.concatenate([np.full(n, -1, np.int8) if o is None else o for o in outcomes])
        )
        done = np.concatenate([entry[3] for entry in pending])
        self.score_slots(slots, column, env_reward, known, done)
        self.pending = []

    def score_slots(
        self,
        slots: np.ndarray,
        column: Any,
        env_reward: Any,
        known: np.ndarray | None,
        done: np.ndarray,
    ) -> None:
        """Score the steps in ``slots`` (see :meth:`score`): ``column(name)`` gives a stored
        column of them on the host, ``env_reward`` the env's rewards (an array, None for
        ``reward_fn`` of their own goals, or a list of ``(offset, rewards)`` pieces and
        Nones), ``known`` the env's success flags (1, 0, or -1 where not given; None:
        none given), ``done`` where an episode ended."""
        storage, reward_fn, audit = self.storage, self.rewards.reward_fn, self.audit
        info = {key: column(f"info.{key}") for key in self.info_keys}
        achieved, desired = column("next_achieved_goal"), column("desired_goal")
        goal_reward = host_rewards(reward_fn, achieved, desired, info)
        if env_reward is None:
            env_reward = goal_reward
        elif isinstance(env_reward, list):  # pieces of rows, None where not given
            pieces = np.array(goal_reward)
            for piece in env_reward:
                if piece is not None:
                    pieces[piece[0] : piece[0] + len(piece[1])] = piece[1]
            env_reward = pieces
        extra = audit.observe(env_reward, goal_reward, known)
        success = np.zeros(len(slots), bool) if known is None else known == 1
        unknown = np.array(done, bool)  # done, success not given
        if known is not None:
            unknown &= known < 0
        if unknown.any():  # the threshold as learned with these steps
            threshold = self.threshold()
            ended = {key: value[unknown] for key, value in info.items()}
            scored = goal_reward[unknown].astype(np.float32)
            host = GoalRewards(NUMPY, reward_fn)  # the scored columns are host copies
            success[unknown] = host.reached(threshold, scored, desired[unknown], ended)
        storage.assign("reward", slots, np.asarray(env_reward).astype(np.float32))
        storage.assign("reward_extra", slots, extra)
        storage.assign("success", slots, success)

    def score_recorded(self, chunk: int = 1 << 16) -> None:
        """Score the transitions of the storage's recorded dataset (its env rewards where
        recorded, else ``reward_fn``'s), ``chunk`` at a time."""
        storage = self.storage
        recorded = storage.recorded
        if recorded is None:
            return
        done = np.zeros(recorded.transitions, bool)
        done[np.cumsum(recorded.lengths) - 1] = True
        for first in range(0, recorded.transitions, chunk):
            t = np.arange(first, min(first + chunk, recorded.transitions))
            slots = storage.capacity + t

            def column(name: str, slots: np.ndarray = slots) -> np.ndarray:
                return storage.ops.to_host(storage.take(name, slots))

            given = recorded.recorded_reward
            env_reward = None if given is None else np.asarray(given[t], np.float64)
            self.score_slots(slots, column, env_reward, None, done[t])


class GoalRewards:
    """The reward functions of a buffer, in the backend of ``ops``: the rewards of goals and
    whether they are reached (the module docstring's rule)."""

    def __init__(
        self, ops: ArrayOps, reward_fn: RewardFn, torch_reward_fn: TorchRewardFn | None = None
    ) -> None:
        self.ops, self.reward_fn, self.torch_reward_fn = ops, reward_fn, torch_reward_fn

    def reward(self, achieved: Any, desired: Any, info: Mapping[str, Any]) -> Any:
        """``reward_fn(achieved, desired, info)`` for a batch as float32 in the backend:
        ``torch_reward_fn`` on the device where there is one, else ``reward_fn`` on host
        copies; its shape checked (one reward per row)."""
        ops, name = self.ops, "reward_fn"
        if self.torch_reward_fn is not None and ops.device is not None:
            reward = ops.as_float32(self.torch_reward_fn(achieved, desired, info))
            name = "torch_reward_fn"
        else:
            host = {key: ops.to_host(value) for key, value in info.items()}
            reward = self.reward_fn(ops.to_host(achieved), ops.to_host(desired), host)
            reward = ops.from_host(np.asarray(reward, dtype=np.float32))
        check_reward_shape(name, tuple(reward.shape), len(achieved))
        return reward

    def reached(self, threshold: Any, goal_reward: Any, goal: Any, info: Mapping[str, Any]) -> Any:
        """Whether each goal is reached, given ``goal_reward = reward_fn(achieved, goal)``:
        at or above ``threshold``, else (None) equal to the reward of the goal with itself."""
        if threshold is not None:
            return goal_reward >= threshold
        return goal_reward == self.reward(goal, goal, info)
