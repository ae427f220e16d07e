"""Goals as offline goal-conditioned RL draws them (OGBench, Park et al. 2024): a value
goal mix and an actor goal mix over the states of the recorded episodes.

Offline agents (GCIVL, GCIQL and their kin) learn a value ``V(s, g)`` for goals that are
states, and a policy from goals of the same trajectory. Each sample's goal is one of:

- the **current** state ``s_t`` itself (the transition's ``achieved_goal``): the only
  goal counted as reached, so the value of being at the goal is learned;
- a **future** state of its episode, ``s_{t+j}`` with ``j >= 1`` (the ``next_achieved_goal``
  of step ``t + j - 1``): ``j`` drawn from a geometric law with success probability
  ``1 - gamma``, capped at the episode's last state (OGBench's value goals), or uniform
  over ``t+1 .. T`` (herkit's ``future`` strategy: its actor goals);
- a **random** state of any stored episode (an ``achieved_goal`` of any slot).

A mix is three weights ``(current, future, random)``; :data:`OGBENCH_VALUE_GOALS` and
:data:`OGBENCH_ACTOR_GOALS` are the reference agents' defaults. The reward of a sample under
the value mix follows OGBench's rule: 0 and terminal where the goal is the current state,
-1 otherwise (its ``gc_negative`` convention; a goal counts as reached by its index, not
by its distance, as in OGBench). The random numbers come from the caller's uniform
generator, and the bookkeeping is the host's (:class:`~herkit.buffer.storage.Ledger`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np

from herkit.buffer.backend import ArrayOps
from herkit.buffer.storage import Ledger, sample_slots
from herkit.buffer.strategies import future_steps

__all__ = [
    "FUTURE_LAWS",
    "OGBENCH_ACTOR_GOALS",
    "OGBENCH_VALUE_GOALS",
    "FutureLaw",
    "actor_samples",
    "check_goal_mix",
    "draw_state_goals",
    "geometric_steps",
    "value_samples",
]

FutureLaw = Literal["geometric", "uniform"]
"""How far ahead a future goal lies: geometric with the discount, or uniform."""
FUTURE_LAWS: tuple[str, ...] = get_args(FutureLaw)

OGBENCH_VALUE_GOALS = (0.2, 0.5, 0.3)
"""OGBench's value goals (GCIVL, GCIQL, HIQL): 20 % current, 50 % future (geometric),
30 % random states."""
OGBENCH_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""OGBench's actor goals (every agent): future states, uniformly."""


def check_goal_mix(name: str, weights: Any) -> tuple[float, float, float] | None:
    """``(current, future, random)`` weights as probabilities summing to 1 (None: no mix);
    a ValueError names ``name`` otherwise."""
    if weights is None:
        return None
    values = np.asarray(weights, dtype=np.float64).ravel() if len(weights) == 3 else None
    if values is None or not np.all(np.isfinite(values)) or values.min() < 0 or values.sum() <= 0:
        raise ValueError(
            f"{name} must be 3 weights (current, future, random), finite, >= 0 and not all 0, "
            f"got {weights!r}"
        )
    current, future, random = (values / values.sum()).tolist()
    return current, future, random


def geometric_steps(t: np.ndarray, length: np.ndarray, u: np.ndarray, gamma: float) -> np.ndarray:
    """``t + j - 1`` for ``j ~ Geometric(1 - gamma)`` (``j >= 1``), capped at ``length - 1``:
    the step whose ``next_achieved_goal`` is the state ``j`` steps after ``s_t``."""
    if not 0 < gamma < 1:
        raise ValueError(f"a geometric future needs gamma in (0, 1), got {gamma!r}")
    ahead = np.floor(np.log1p(-u) / math.log(gamma)).astype(np.int64)  # j - 1 >= 0
    return t + np.minimum(ahead, length - t - 1)


def draw_state_goals(
    ledger: Ledger,
    data: dict[str, Any],
    ops: ArrayOps,
    slots: np.ndarray,
    at: tuple[np.ndarray, np.ndarray, np.ndarray],
    mix: tuple[float, float, float],
    future: FutureLaw,
    gamma: float | None,
    uniform: Callable[[int], np.ndarray],
) -> tuple[Any, np.ndarray]:
    """The goals of the transitions in ``slots`` (at ``at``: their episodes' start rows,
    lengths and steps, :func:`~herkit.buffer.storage.positions`) under ``mix`` (see the
    module), and the host mask of those whose goal is their current state (drawn as the
    current state, or as a random state that is the same one: OGBench's index rule). Only
    the sources the mix uses are drawn."""
    current_p, future_p, random_p = mix
    n = len(slots)
    source = uniform(n) if 0 < max(mix) < 1 else None  # one source: no draw
    is_current = (source < current_p) if source is not None else np.full(n, current_p == 1)
    is_future = (
        (source >= current_p) & (source < current_p + future_p)
        if source is not None
        else np.full(n, future_p == 1)
    )
    goal_slots = slots
    reached = is_current
    if random_p > 0:
        random_slots = sample_slots(ledger, uniform(n))
        goal_slots = np.where(is_current, slots, random_slots)
        reached = is_current | (~is_future & (random_slots == slots))
    if future_p > 0:
        start, length, step = at
        v = uniform(n)
        if future == "geometric":
            assert gamma is not None
            goal_step = geometric_steps(step, length, v, gamma)
        else:
            goal_step = future_steps(ledger.ops, step, length, v)
        ahead = ((start + goal_step) % ledger.rows) * ledger.n_envs + slots % ledger.n_envs
        future_goal = ops.take(data["next_achieved_goal"], ahead)
        if future_p == 1:
            return future_goal, reached
        goal = ops.take(data["achieved_goal"], goal_slots)
        return ops.where(_rows(ops, is_future, goal), future_goal, goal), reached
    return ops.take(data["achieved_goal"], goal_slots), reached


def value_samples(
    ledger: Ledger,
    data: dict[str, Any],
    ops: ArrayOps,
    slots: np.ndarray,
    at: Any,
    her: Any,
    uniform: Callable[[int], np.ndarray],
) -> tuple[Any, Any, Any]:
    """The value goals of the transitions in ``slots`` under the settings ``her``
    (:class:`~herkit.buffer.settings.HerSettings` with ``value_goals``; ``at``: their
    :func:`~herkit.buffer.storage.positions`), their rewards (0 where reached, else -1)
    and terminal flags (1 where reached), in ``ops``' arrays."""
    goal, reached = draw_state_goals(
        ledger, data, ops, slots, at, her.value_goals, her.value_future, her.gamma, uniform
    )
    terminated = ops.from_host(reached.astype(np.float32))
    return goal, terminated - 1.0, terminated


def actor_samples(
    ledger: Ledger,
    data: dict[str, Any],
    ops: ArrayOps,
    slots: np.ndarray,
    at: Any,
    her: Any,
    uniform: Callable[[int], np.ndarray],
) -> Any:
    """The actor goals of the transitions in ``slots`` (at ``at``) under ``her``'s
    ``actor_goals`` (their future goals uniform), or None without that mix."""
    if her.actor_goals is None:
        return None
    goal, _ = draw_state_goals(ledger, data, ops, slots, at, her.actor_goals, "uniform",
                               her.gamma, uniform)  # fmt: skip
    return goal


def _rows(ops: ArrayOps, mask: np.ndarray, like: Any) -> Any:
    """A host ``(B,)`` mask in ``ops``' arrays, shaped to broadcast over ``like``."""
    return ops.from_host(mask).reshape(-1, *(1,) * (like.ndim - 1))
