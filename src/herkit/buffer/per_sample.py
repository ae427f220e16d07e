"""A ``compute_reward`` that takes one goal at a time, called once per sample.

Relabelling calls ``reward_fn(achieved_goal, desired_goal, info)`` on a whole batch of
goals: the reward function a buffer is given is vectorised, as Gymnasium's GoalEnv
``compute_reward`` is. Some envs' ``compute_reward`` only works on one goal pair (a
``float(...)`` or an ``if`` inside, or goals that are dicts); :class:`PerSampleReward`
takes such a function and gives it the batched form: at its first call on a batch it
tries the whole batch, checks a few rows against single calls, and from then on either
passes batches through (no cost) or calls the function once per row, with one warning
per function and process (:class:`PerSampleRewardWarning`) that says what that costs.

Goals may be arrays (rows on the leading axis) or dicts and tuples of them (each leaf
batched on its leading axis); ``info`` a mapping of columns, a list of per-row dicts, or
None. Where even one goal pair fails, :class:`RewardRefused` names that call's exception.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "CHECKED_ROWS",
    "PerSampleReward",
    "PerSampleRewardWarning",
    "RewardRefused",
    "batch_refusal",
    "error_line",
    "per_sample",
    "row",
    "vectorised",
]

CHECKED_ROWS = 4
"""How many rows of the first batch are compared with single calls before trusting a
batched result."""

VECTORISED = "herkit_vectorised"
"""The attribute, True on a reward function, that says it takes batches (set by
:func:`vectorised`): :func:`per_sample` then leaves it as it is."""

_WARNED: set[str] = set()
"""The functions already warned about in this process."""

F = TypeVar("F", bound=Callable[..., Any])


class PerSampleRewardWarning(UserWarning):
    """A reward function is called once per sample: correct, but slower than batched."""


class RewardRefused(ValueError):
    """A reward function that fails on one goal pair too, so it cannot be called at all."""


def vectorised(function: F) -> F:
    """Mark ``function`` as one that takes batches (for :func:`per_sample`); returns it."""
    setattr(function, VECTORISED, True)
    return function


def per_sample(function: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """``function`` where it is marked :func:`vectorised`, else a :class:`PerSampleReward`
    of it (``name``: how messages call it, by default its qualified name)."""
    if getattr(function, VECTORISED, False):
        return function
    return PerSampleReward(function, name)


def row(tree: Any, at: int | slice) -> Any:
    """Row ``at`` (an index, or a slice of rows) of a batch: each array leaf of ``tree``
    (dicts and tuples taken apart) indexed on its leading axis."""
    if isinstance(tree, Mapping):
        return {key: row(value, at) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(row(value, at) for value in tree)
    return tree[at]


def rows_in(tree: Any) -> int:
    """The length of the leading axis of ``tree``'s first leaf (ValueError if it has none)."""
    while isinstance(tree, (Mapping, tuple)):
        if not tree:
            raise ValueError("achieved_goal must hold at least one array, got an empty one")
        tree = next(iter(tree.values())) if isinstance(tree, Mapping) else tree[0]
    shape = np.shape(tree)
    if not shape:
        raise ValueError("achieved_goal must be batched on a leading axis, got a scalar")
    return int(shape[0])


def info_row(info: Any, at: int | slice, n: int) -> Any:
    """Row ``at`` (an index, or a slice of rows) of a batch's ``info``: a mapping's columns
    of length ``n`` indexed (other values kept), a list of ``n`` per-row dicts indexed, None
    kept."""
    if isinstance(info, Mapping):
        return {
            key: value[at] if np.ndim(value) and len(value) == n else value
            for key, value in info.items()
        }
    if isinstance(info, Sequence) and not isinstance(info, str) and len(info) == n:
        return info[at]
    return info


def _goals(n: int) -> str:
    """``a batch of n goals`` (of one goal, for n = 1)."""
    return f"a batch of {n} goal{'' if n == 1 else 's'}"


def error_line(error: BaseException) -> str:
    """``Type: message`` of ``error``, on one line (its first)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class PerSampleReward:
    """``reward_fn(achieved_goal, desired_goal, info)`` batched on the leading axis, from a
    ``function`` that may take one goal pair at a time (see the module docstring).

    ``batched`` is None until the first batch of two rows or more (or the first failing
    batch) decides it: True, batches go to ``function`` as they are; False, one call per row.
    """

    herkit_vectorised = True
    """Instances take batches: :func:`per_sample` does not wrap one again."""

    def __init__(self, function: Callable[..., Any], name: str | None = None) -> None:
        if not callable(function):
            raise ValueError(f"function must be callable, got {type(function).__name__}")
        self.function = function
        # Class.compute_reward for a bound method, else the function's qualified name
        self.name = name or getattr(function, "__qualname__", type(function).__name__)
        self.key = f"{getattr(function, '__module__', '')}:{self.name}"
        """What the warning is given once per process for: the function's module and name."""
        self.batched: bool | None = None
        self.batch_failure = ""
        """How the first batch failed (empty while it has not, or batches work)."""
        self.cost_per_sample_s: float | None = None
        """Seconds per row of the first batch called one row at a time (None: batched)."""

    def __call__(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        """The rewards of a batch of goal pairs, one per row."""
        if self.batched:
            return self.function(achieved_goal, desired_goal, info)
        if self.batched is False:
            return self.one_by_one(achieved_goal, desired_goal, info)
        return self._decide(achieved_goal, desired_goal, info)

    def one_by_one(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> np.ndarray:
        """float64 rewards of ``function`` called on each row; RewardRefused where a call
        fails or does not give one number."""
        n = rows_in(achieved_goal)
        rewards = np.empty(n, dtype=np.float64)
        for i in range(n):
            try:
                value = self.function(
                    row(achieved_goal, i), row(desired_goal, i), info_row(info, i, n)
                )
            except Exception as error:
                raise RewardRefused(self._refusal(error_line(error))) from error
            value = np.asarray(value)
            if value.size != 1:
                raise RewardRefused(self._refusal(f"it gave shape {value.shape}, not one number"))
            rewards[i] = value.item()
        return rewards

    def _decide(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """The first batch: batched if the whole batch works and agrees with single calls,
        else one call per row from now on (with the warning)."""
        n = rows_in(achieved_goal)
        why = ""
        try:
            value = self.function(achieved_goal, desired_goal, info)
            if np.shape(value) != (n,):
                why = f"it gave shape {np.shape(value)}, not ({n},)"
        except Exception as error:
            why = error_line(error)
        if not why:
            if n < 2:
                return value  # one row says nothing of batches: decided at a larger one
            if self._agrees(np.asarray(value), achieved_goal, desired_goal, info, n):
                self.batched = True
                return value
            why = "its rewards differ from those of one goal at a time"
        self.batch_failure = f"{_goals(n)} failed ({why})"
        start = time.perf_counter()
        rewards = self.one_by_one(achieved_goal, desired_goal, info)
        cost = (time.perf_counter() - start) / n
        self.batched = False
        self.cost_per_sample_s = cost
        if self.key not in _WARNED:
            _WARNED.add(self.key)
            warnings.warn(
                f"{self.name} takes one goal at a time ({self.batch_failure}): herkit calls "
                f"it once per sample, about {cost * 1e6:.0f} µs each here; make it accept "
                "goals batched on the leading axis to save that time",
                PerSampleRewardWarning,
                stacklevel=3,
            )
        return rewards

    def _agrees(self, value: np.ndarray, achieved: Any, desired: Any, info: Any, n: int) -> bool:
        """Whether the batched ``value`` matches single calls on the first rows (True where
        single calls fail: the function takes batches only)."""
        m = min(n, CHECKED_ROWS)
        head = (row(achieved, slice(m)), row(desired, slice(m)), info_row(info, slice(m), n))
        try:
            single = self.one_by_one(*head)
        except RewardRefused:
            return True
        try:
            batched = value[:m].astype(np.float64)
        except (TypeError, ValueError):
            return False
        return bool(np.allclose(batched, single, rtol=1e-5, atol=1e-6, equal_nan=True))

    def _refusal(self, single: str) -> str:
        """Why ``function`` cannot be called at all, and what to do, on one line."""
        return (
            f"{self.name} fails on one goal pair ({single})"
            + (f", and {self.batch_failure}" if self.batch_failure else "")
            + ", so it cannot be called at all; fix it so that it works on one goal, and if it "
            "reads info fields, name them with info_keys (--info-keys KEY ...)"
        )


def batch_refusal(
    reward_fn: Callable[..., Any], achieved: Any, desired: Any, info: Any, why: str
) -> ValueError:
    """The error for a ``reward_fn`` that failed (``why``) on a batch: where one goal pair
    works, that it takes one goal at a time (and how to give it batches); else the single
    call's own failure."""
    n = rows_in(achieved)
    single = PerSampleReward(reward_fn, "compute_reward")
    single.batch_failure = f"{_goals(n)} failed ({why})"
    try:
        single.one_by_one(
            row(achieved, slice(1)), row(desired, slice(1)), info_row(info, slice(1), n)
        )
    except RewardRefused as refused:
        return refused
    return ValueError(
        f"compute_reward takes one goal at a time: {_goals(n)} failed ({why}) while "
        "one goal pair works; it must accept goals batched on the leading axis: vectorise it, "
        "or pass herkit.buffer.per_sample.per_sample(compute_reward), which calls it once per "
        "sample"
    )
