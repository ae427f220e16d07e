"""Goal-selection strategies of Hindsight Experience Replay (Andrychowicz et al. 2017, §4.5).

A strategy is an enum value plus a pure function that maps positions inside episodes to
the episode steps whose achieved goal becomes the new goal. Positions are relative:
``t`` is the step of the transition (0-based) and ``length`` the number of recorded steps
of its episode. The returned step ``s`` means "the goal achieved *after* the action of
step ``s``", i.e. ``next_achieved_goal[s]``: relabelling with ``s == t`` makes the
transition a success.

``random`` draws from the whole buffer rather than one episode, so it has no function
here: the buffer samples any stored transition for it.

A goal mix (``goal_mix=(real, future, desired)``, see :mod:`herkit.buffer.relabel`)
replaces the strategy: :func:`goal_sources` draws where each sample's goal comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Literal

import numpy as np

StrategyName = Literal["future", "final", "episode", "random", "none"]
"""The strategies by name (the values of :class:`Strategy`)."""

GoalStepFn = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]
"""``(t, length, rng) -> goal steps``: the goal-step function of an in-episode strategy."""


class Strategy(str, Enum):
    """Where relabelled goals come from."""

    FUTURE = "future"
    """A step of the same episode at or after the transition, uniformly."""
    FINAL = "final"
    """The last recorded step of the same episode (one relabelled goal per transition)."""
    EPISODE = "episode"
    """Any step of the same episode, uniformly."""
    RANDOM = "random"
    """Any transition stored in the buffer, uniformly."""
    NONE = "none"
    """No relabelling: plain experience replay."""

    @classmethod
    def parse(cls, value: str | Strategy) -> Strategy:
        """Return the strategy named ``value``; ValueError naming ``strategy`` otherwise."""
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(repr(s.value) for s in cls)
            raise ValueError(f"strategy must be one of {known}, got {value!r}") from None

    def goals_per_transition(self, k: int) -> int:
        """Relabelled goals per real transition: ``k``, except 1 for final and 0 for none."""
        if self is Strategy.NONE:
            return 0
        if self is Strategy.FINAL:
            return 1
        return k


def future_steps(t: np.ndarray, length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform over ``t .. length-1`` inclusive (``floor``, so every step has equal weight)."""
    offset = np.floor(rng.random(t.shape) * (length - t)).astype(np.int64)
    return t + np.minimum(offset, length - t - 1)


def final_steps(t: np.ndarray, length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The last recorded step, ``length - 1``."""
    return np.broadcast_to(length - 1, t.shape).astype(np.int64)


def episode_steps(t: np.ndarray, length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform over ``0 .. length-1``."""
    step = np.floor(rng.random(t.shape) * length).astype(np.int64)
    return np.minimum(step, length - 1)


GOAL_STEPS: dict[Strategy, GoalStepFn] = {
    Strategy.FUTURE: future_steps,
    Strategy.FINAL: final_steps,
    Strategy.EPISODE: episode_steps,
}
"""The in-episode strategies and their goal-step functions."""


def goal_sources(
    mix: tuple[float, float, float], size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Where the goals of ``size`` samples come from under the goal ``mix`` (probabilities):
    the masks of those that take a future achieved goal and of those that take a stored
    desired goal (the others keep their own)."""
    real_share, future_share, desired_share = mix
    kind = np.searchsorted([real_share, real_share + future_share],
                           rng.random(size), side="right")  # fmt: skip
    if desired_share == 0:  # rounding must not leave a sliver for a zero share
        kind = np.minimum(kind, 1 if future_share > 0 else 0)
    return kind == 1, kind == 2
