"""The rewards, terminal flags and discounts of sampled transitions for their goals:
:func:`sample_returns`, one step or ``n``.

**What the env said is kept** (:mod:`herkit.buffer.env_terms`): a sample with its own goal
gets the env's step reward and ``terminated`` flag as stored; a relabelled one gets
``reward_fn(achieved_goal, desired_goal, info)`` (the GoalEnv signature, vectorised over the
leading axis) for its goal plus the part of the env's reward that does not depend on the
goal (``keep_env_terms=False``: ``reward_fn`` alone), and is terminal when the env ended
for another reason than reaching the step's own goal, or (with ``terminal_on_success``)
when its goal is reached.

**n-step returns** (``n_step > 1``): the reward of a sample at step ``t`` is
``sum_{j<m} gamma^j r_{t+j}``, every ``r_{t+j}`` taken for the sample's (possibly
relabelled) goal as above, over the ``m <= n`` steps of its episode from ``t`` on that
are recorded and come no later than the first terminal step (the env's flag, or with
``terminal_on_success`` a relabelled goal reached). ``next_observation`` is then the
observation after step ``t + m - 1``, ``terminated`` that step's flag, and the batch's
``discount`` is ``gamma ** m``. An episode cut by a time limit, or still open, ends the
window without ending the return: it bootstraps. This works in stages:
:func:`step_window` finds the slots of the ``n`` steps (bookkeeping, on the host), every
step's reward and terminal flag are taken for the sample's goal, and :func:`n_step_sums`
cuts the window at the first terminal step and sums it (in the backend of the stored
columns).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from herkit.buffer.backend import ArrayOps
from herkit.buffer.env_terms import GoalRewards
from herkit.buffer.storage import EpisodeStorage, column_of, positions, slot_at

__all__ = ["n_step_sums", "sample_returns", "step_window"]


def sample_returns(
    storage: EpisodeStorage,
    ops: ArrayOps,
    slots: Any,
    goal: Any,
    relabel: Any,
    next_achieved: Any,
    *,
    n_step: int,
    gamma: float | None,
    info_keys: tuple[str, ...],
    terminal_on_success: bool | None,
    keep_env_terms: bool = True,
    goal_rewards: GoalRewards,
    threshold: Any,
) -> tuple[Any, Any, Any, Any]:
    """Reward, terminal flag, slot of the last step and discount of each sample: one step
    (discount None: the agent's gamma), or ``n_step`` (see the module's docstring), every
    reward and flag the env's where ``relabel`` is false (or None), else taken for
    ``goal``; ``next_achieved`` is the samples' own."""
    n = n_step
    flat = slots
    if n > 1:
        window, recorded = step_window(storage, slots, n)
        flat = window.ravel()
    rewards = storage.take("reward", flat)
    terminal = storage.take("terminated", flat)
    if relabel is not None and not (isinstance(relabel, np.ndarray) and not relabel.any()):
        goals = goal if n == 1 else ops.repeat(goal, n)
        info = {key: storage.take(f"info.{key}", flat) for key in info_keys}
        achieved = next_achieved if n == 1 else storage.take("next_achieved_goal", flat)
        goal_reward = goal_rewards.reward(achieved, goals, info)
        relabelled = relabel if n == 1 else np.repeat(relabel, n)
        relabelled_reward = goal_reward
        if keep_env_terms:  # the goal-free part of the env's reward
            relabelled_reward = goal_reward + storage.take("reward_extra", flat)
        rewards = ops.where(relabelled, relabelled_reward, rewards)
        if terminal_on_success:  # ended for another reason, or this goal reached
            other_end = terminal & ~storage.take("success", flat)
            now_reached = goal_rewards.reached(threshold, goal_reward, goals, info)
            terminal = ops.where(relabelled, other_end | now_reached, terminal)
    if n == 1:
        return rewards, ops.as_float32(terminal), slots, None
    assert gamma is not None
    return n_step_sums(ops, rewards, terminal, recorded, window, gamma)


def step_window(
    storage: EpisodeStorage, slots: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(B, n)`` slots of steps ``t .. t + n - 1`` of each sample's episode (steps past
    the last recorded one repeat it) and the ``(B, n)`` mask of the steps recorded."""
    ledger = storage.ledger(closed_only=False)
    start, length, step = positions(ledger, slots)
    steps = step[:, None] + np.arange(n)  # (B, n): the window's steps
    recorded = steps < length[:, None]
    rows = start[:, None] + np.minimum(steps, length[:, None] - 1)
    return slot_at(ledger, rows, column_of(ledger, slots)[:, None]), recorded


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
