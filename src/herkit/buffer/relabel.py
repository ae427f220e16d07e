"""Relabelling: the goal each sampled transition is trained for, one relabeller per mode.

Two relabelling modes give the same distribution of goals:

- ``relabel="sample"`` (default, :class:`SampleTimeGoals`): transitions are stored as
  collected; at sample time each one is relabelled with probability ``k / (k + 1)`` in a
  copy of the batch. The stored data never changes, and the steps of open episodes can
  be sampled at once. Their goals follow one rule: a relabelled goal is an achieved goal
  that the episode has already recorded. ``future`` draws from the recorded steps t.. so
  far, ``episode`` from all recorded steps, ``random`` from any stored step; ``final``
  does not relabel a transition of an open episode at all (its last step does not exist
  yet), so it keeps its original goal until the episode ends.
- ``relabel="store"`` (:class:`StoredGoals`): the paper's form. When an episode ends,
  ``k`` goals per transition are drawn and written beside it; a sample is then one of the
  ``k + 1`` (transition, goal) pairs, uniformly. Only finished episodes are sampled. The
  goals are stored as values, not as indices, so dropping an old episode cannot redirect
  them.

A **goal mix** (``goal_mix=(real, future, desired)``, sample mode, :class:`MixedGoals`)
replaces the strategy: each sample keeps its own goal, takes a future achieved goal of its
episode (the ``future`` rule above), or takes the desired goal of a stored transition
drawn uniformly from the whole buffer (mrl's "futureactual": goals the env really asks
for, which the agent mostly fails), with probabilities proportional to the three weights.
``future`` with ``k`` is the mix ``(1, k, 0)``; mrl's Fetch recipe ``futureactual_2_2`` is
``(1, 2, 2)``. With ``goal_mix_warmup=N`` every sample takes a future goal until ``N``
transitions have been added (mrl's ``future_warm_up``), and the mix applies from then on.

A relabeller picks goals only; the rewards and terminal flags for them (the env's own
terms kept, n-step sums) are :func:`herkit.buffer.returns.sample_returns`'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from herkit.buffer.backend import ArrayOps, rows_mask
from herkit.buffer.settings import HerSettings
from herkit.buffer.storage import (
    EpisodeStorage,
    Ledger,
    column_of,
    positions,
    sample_slots,
    slot_at,
)
from herkit.buffer.strategies import GOAL_STEPS, Strategy, goal_sources

__all__ = [
    "MixedGoals",
    "NoRelabelling",
    "Relabeller",
    "SampleTimeGoals",
    "StoredGoals",
    "Uniform",
    "goal_slots",
    "mix_warm",
    "relabeller_for",
]

Goals = tuple[Any, Any]
"""The goals of a batch and the mask of those relabelled (None: none is)."""

Uniform = Callable[[int], Any]
"""``uniform(n)``: ``n`` uniform numbers on ``[0, 1)`` as float64, from the drawing side's
generator (a numpy Generator's ``random`` on the host, ``torch.rand`` on a device)."""


class Relabeller(Protocol):
    """Picks the goals of sampled transitions."""

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """The goals of the transitions in ``slots`` (whose own goals are ``goal``; in
        store mode ``copy`` says which of each one's goals was drawn; ``warm``: the goal
        mix's warm-up is over), with random numbers from ``uniform``."""
        ...


def goal_slots(
    ledger: Ledger, strategy: Strategy, at: tuple[Any, Any, Any], column: Any, uniform: Uniform
) -> Any:
    """The slots whose ``next_achieved_goal`` relabels the transitions at ``at`` (their
    episodes' absolute start rows, lengths and steps) of the ledger's columns ``column``."""
    start, length, step = at
    if strategy is Strategy.RANDOM:
        return sample_slots(ledger, uniform(len(step)))
    u = None if strategy is Strategy.FINAL else uniform(len(step))
    goal_step = GOAL_STEPS[strategy](ledger.ops, step, length, u)
    return slot_at(ledger, start + goal_step, column)


def mix_warm(settings: HerSettings, storage: EpisodeStorage) -> bool:
    """Whether a goal mix applies yet: ``goal_mix_warmup`` transitions were added (without
    a goal mix, always)."""
    return storage.rows_written * storage.n_envs >= settings.goal_mix_warmup


class NoRelabelling:
    """Every sample keeps its own goal (strategy ``none``, or ``k=0``)."""

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """``goal``, as it is."""
        return goal, None


class SampleTimeGoals:
    """Relabels a share ``k / (k + 1)`` of each batch by the strategy (sample mode)."""

    def __init__(self, storage: EpisodeStorage, ops: ArrayOps, settings: HerSettings) -> None:
        self.storage, self.ops = storage, ops
        self.strategy = Strategy.parse(settings.strategy)
        self.probability = settings.relabel_probability

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """Goals for ``slots`` (see the class's docstring)."""
        book = ledger.ops
        relabel = uniform(len(slots)) < self.probability
        if self.strategy is Strategy.FINAL:  # an open episode has no final goal yet
            relabel &= book.take(ledger.episode_length, book.take(ledger.episode_of, slots)) > 0
        at = positions(ledger, slots)
        chosen_slots = goal_slots(ledger, self.strategy, at, column_of(ledger, slots), uniform)
        chosen = self.storage.take("next_achieved_goal", chosen_slots)
        return self.ops.where(rows_mask(relabel, goal), chosen, goal), relabel


class MixedGoals:
    """Each sample keeps its goal, takes a future achieved goal, or a stored desired goal,
    by the goal mix's probabilities (future goals only until the mix is ``warm``)."""

    def __init__(self, storage: EpisodeStorage, ops: ArrayOps, settings: HerSettings) -> None:
        assert settings.goal_mix is not None
        self.storage, self.ops = storage, ops
        self.mix = settings.goal_mix

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """Goals for ``slots`` (see the class's docstring)."""
        ops, storage = self.ops, self.storage
        future, desired = goal_sources(self.mix if warm else (0.0, 1.0, 0.0), uniform(len(slots)))
        at = positions(ledger, slots)
        future_slots = goal_slots(ledger, Strategy.FUTURE, at, column_of(ledger, slots), uniform)
        other_slots = sample_slots(ledger, uniform(len(slots)))
        future_goal = storage.take("next_achieved_goal", future_slots)
        goal = ops.where(rows_mask(future, goal), future_goal, goal)
        desired_goal = storage.take("desired_goal", other_slots)
        return ops.where(rows_mask(desired, goal), desired_goal, goal), future | desired


class StoredGoals:
    """Writes ``k`` goals per transition when its episode ends, and serves one of each
    transition's ``k + 1`` goals per sample (store mode)."""

    FIELD = "relabel_goal"
    """The stored column of relabelled goals, ``(k, *goal_shape)`` per transition."""

    def __init__(self, storage: EpisodeStorage, ops: ArrayOps, settings: HerSettings) -> None:
        self.storage, self.ops = storage, ops
        self.strategy = Strategy.parse(settings.strategy)
        self.n_goals = settings.goals_per_transition

    def episodes_ended(self, ids: np.ndarray, envs: np.ndarray, uniform: Uniform) -> np.ndarray:
        """Draw and write the goals of the just-ended episodes ``ids`` (of envs ``envs``);
        returns the slots of their transitions, which may now be sampled."""
        storage, n_goals = self.storage, self.n_goals
        start, length, step, env = storage.steps_of(ids, envs)
        slots = storage.slot_of(start + step, env)
        if n_goals:
            start, length, step, env = (np.repeat(a, n_goals) for a in (start, length, step, env))
            ledger = storage.ledger(closed_only=True)
            chosen = goal_slots(ledger, self.strategy, (start, length, step), env, uniform)
            goals = storage.take("next_achieved_goal", chosen)
            storage.assign(self.FIELD, slots, goals.reshape(len(slots), n_goals, *goals.shape[1:]))
        return slots

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """The goal ``copy`` of each of ``slots``: its own for 0, the j-th stored for j."""
        if copy is None:
            return goal, None
        relabel = copy > 0
        stored = self.storage.take(self.FIELD, slots)  # (B, k, *goal_shape)
        flat = stored.reshape(-1, *stored.shape[2:])
        chosen = self.ops.take(flat, np.arange(len(slots)) * self.n_goals + np.maximum(copy - 1, 0))
        return self.ops.where(rows_mask(relabel, goal), chosen, goal), relabel


def relabeller_for(
    settings: HerSettings, storage: EpisodeStorage, ops: ArrayOps
) -> SampleTimeGoals | MixedGoals | StoredGoals | NoRelabelling:
    """The relabeller of ``settings``' mode."""
    if settings.relabel == "store":
        return StoredGoals(storage, ops, settings)
    if settings.goal_mix is not None:
        return MixedGoals(storage, ops, settings)
    if settings.goals_per_transition:
        return SampleTimeGoals(storage, ops, settings)
    return NoRelabelling()
