"""Goals as offline goal-conditioned RL draws them, by OGBench's rules (Park et al. 2024, its
``GCDataset``): a value goal mix and an actor goal mix over the states of the stored
episodes, every goal drawn as the index of a transition whose first state it is.

Offline agents (GCIVL, GCIQL and their kin) learn a value ``V(s, g)`` for goals that are
states, and a policy from goals of the same trajectory. Each sample's goal is one of:

- the **current** state ``s_t`` itself (the transition's ``achieved_goal``);
- a **future** state of its episode, ``s_{t+j}``, ``j >= 1``, capped at the episode's last
  state that has a transition (``s_{L-1}`` of an episode of ``L`` transitions: the state
  after its last action never is a goal, as in OGBench, whose goals are the dataset's
  valid rows). ``j`` is geometric with success probability ``1 - gamma`` (the value goals'
  law), or uniform as OGBench draws it: ``round(min(t + 1, L - 1) * d + (L - 1) * (1 - d))``
  for ``d`` uniform on ``[0, 1)`` (its ends at half weight; at ``t = L - 1`` the state
  itself);
- a **random** state: the first state of any stored transition, uniformly.

A mix is three weights ``(current, future, random)``; :data:`OGBENCH_VALUE_GOALS` and
:data:`OGBENCH_ACTOR_GOALS` are the reference agents' defaults. A value goal counts as
reached where its index is the sample's own (OGBench's rule: by index, not by distance;
a future goal capped at the last state and a random draw of the same transition count
too): the sample is then terminal, with reward 0, else -1 (``gc_negative``; without it 1
and 0). The random numbers come from the drawing side's uniform generator, and the
bookkeeping is a :class:`~herkit.buffer.storage.Ledger` (the host's or a device's copy),
so the host and a device draw alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np

from herkit.buffer.storage import EpisodeStorage, Ledger, column_of, sample_slots, slot_at

__all__ = [
    "FUTURE_LAWS",
    "OGBENCH_ACTOR_GOALS",
    "OGBENCH_VALUE_GOALS",
    "FutureLaw",
    "actor_samples",
    "check_goal_mix",
    "future_state_steps",
    "state_goal_slots",
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


def future_state_steps(
    ops: Any, step: Any, length: Any, u: Any, law: FutureLaw, gamma: float | None
) -> Any:
    """The steps whose first state is the future goal of the transitions at ``step`` of
    episodes of ``length`` transitions, one uniform number of ``u`` each (see the module):
    ``min(step + j, length - 1)``."""
    last = length - 1
    if law == "geometric":
        if gamma is None or not 0 < gamma < 1:
            raise ValueError(f"a geometric future needs gamma in (0, 1), got {gamma!r}")
        ahead = ops.floor_int(ops.log1p(-u) / np.log(gamma)) + 1  # j >= 1
        return ops.minimum(step + ahead, last)
    near = ops.minimum(step + 1, last)
    return ops.round_int(near * u + last * (1 - u))


def state_goal_slots(
    ledger: Ledger,
    slots: Any,
    at: tuple[Any, Any, Any],
    mix: tuple[float, float, float],
    law: FutureLaw,
    gamma: float | None,
    uniform: Callable[[int], Any],
) -> Any:
    """The slots whose first state is the goal of each of ``slots`` (at ``at``: their
    episodes' start rows, lengths and steps, :func:`~herkit.buffer.storage.positions`)
    under ``mix``; only the sources the mix uses draw numbers."""
    ops = ledger.ops
    current_p, future_p, random_p = mix
    n = len(slots)
    source = uniform(n) if 0 < max(mix) < 1 else None  # one source: no draw
    goal = slots
    if future_p > 0:
        start, length, step = at
        goal_step = future_state_steps(ops, step, length, uniform(n), law, gamma)
        ahead = slot_at(ledger, start + goal_step, column_of(ledger, slots))
        goal = ahead if source is None else ops.where(source >= current_p, ahead, goal)
    if random_p > 0:
        anywhere = sample_slots(ledger, uniform(n))
        goal = (
            anywhere
            if source is None
            else (ops.where(source >= current_p + future_p, anywhere, goal))
        )
    return goal


def value_samples(
    storage: EpisodeStorage,
    ledger: Ledger,
    slots: Any,
    at: Any,
    her: Any,
    uniform: Callable[[int], Any],
) -> tuple[Any, Any, Any]:
    """The value goals of the transitions in ``slots`` under the settings ``her``
    (:class:`~herkit.buffer.settings.HerSettings` with ``value_goals``; ``at``: their
    :func:`~herkit.buffer.storage.positions`), their rewards (0 where reached, else -1;
    1 and 0 without ``gc_negative``) and terminal flags (1 where reached), in the storage's
    arrays."""
    goal_slots = state_goal_slots(
        ledger, slots, at, her.value_goals, her.value_future, her.gamma, uniform
    )
    terminated = storage.ops.from_host(ledger.ops.as_float32(goal_slots == slots))
    reward = terminated - 1.0 if her.gc_negative else terminated
    return storage.take("achieved_goal", goal_slots), reward, terminated


def actor_samples(
    storage: EpisodeStorage,
    ledger: Ledger,
    slots: Any,
    at: Any,
    her: Any,
    uniform: Callable[[int], Any],
) -> Any:
    """The actor goals of the transitions in ``slots`` (at ``at``) under ``her``'s
    ``actor_goals`` (their future goals uniform), or None without that mix."""
    if her.actor_goals is None:
        return None
    goal_slots = state_goal_slots(ledger, slots, at, her.actor_goals, "uniform", her.gamma, uniform)
    return storage.take("achieved_goal", goal_slots)
