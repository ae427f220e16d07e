"""Goal-selection strategies of Hindsight Experience Replay (Andrychowicz et al. 2017, §4.5).

A strategy is an enum value plus a pure function that maps positions inside episodes to
the episode steps whose achieved goal becomes the new goal. Positions are relative:
``t`` is the step of the transition (0-based) and ``length`` the number of recorded steps
of its episode. The returned step ``s`` means "the goal achieved *after* the action of
step ``s``", i.e. ``next_achieved_goal[s]``: relabelling with ``s == t`` makes the
transition a success.

``random`` draws from the whole buffer rather than one episode, so it has no function
here: the buffer samples any stored transition for it.

A goal mix (``goal_mix=(real, future, desired)``, see :mod:`herkit.buffer.her`) replaces
the strategy: :func:`parse_goal_mix` checks its weights, :func:`goal_sources` draws where
each sample's goal comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

import numpy as np

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


def parse_goal_mix(
    weights: Sequence[float] | None, relabel: str
) -> tuple[float, float, float] | None:
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


def check_goal_mix_warmup(steps: int, mix: tuple[float, float, float] | None) -> int:
    """``steps`` as the transitions added before the goal ``mix`` applies (ValueError
    unless an int >= 0, and 0 where there is no mix)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"goal_mix_warmup must be an int >= 0 (transitions), got {steps!r}")
    if steps and mix is None:
        raise ValueError(f"goal_mix_warmup={steps} needs goal_mix (it delays the mix)")
    return int(steps)


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
