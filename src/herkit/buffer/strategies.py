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
from typing import Any, Literal

from herkit.buffer.backend import ArrayOps

StrategyName = Literal["future", "final", "episode", "random", "none"]
"""The strategies by name (the values of :class:`Strategy`)."""

GoalStepFn = Callable[[ArrayOps, Any, Any, Any], Any]
"""``(ops, t, length, u) -> goal steps``: the goal-step function of an in-episode strategy,
for steps ``t`` of episodes of ``length`` and one uniform number of ``u`` each (numpy
arrays or torch tensors, by ``ops``)."""


class Strategy(str, Enum):
    """Where relabelled goals come from."""

    FUTURE = "future"
    """A step of the same episode at or after the transition, uniformly."""
    FINAL = "final"
    """The last recorded step of the same episode."""
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
        """Relabelled goals per real transition: ``k`` (final too, as in the paper, OpenAI
        baselines and SB3: a share ``k / (k + 1)`` of samples relabelled), 0 for none."""
        return 0 if self is Strategy.NONE else k


def future_steps(ops: ArrayOps, t: Any, length: Any, u: Any) -> Any:
    """Uniform over ``t .. length-1`` inclusive (``floor``, so every step has equal weight)."""
    return t + ops.minimum(ops.floor_int(u * (length - t)), length - t - 1)


def final_steps(ops: ArrayOps, t: Any, length: Any, u: Any) -> Any:
    """The last recorded step, ``length - 1`` (``u`` unused: None)."""
    return length - 1


def episode_steps(ops: ArrayOps, t: Any, length: Any, u: Any) -> Any:
    """Uniform over ``0 .. length-1``."""
    return ops.minimum(ops.floor_int(u * length), length - 1)


GOAL_STEPS: dict[Strategy, GoalStepFn] = {
    Strategy.FUTURE: future_steps,
    Strategy.FINAL: final_steps,
    Strategy.EPISODE: episode_steps,
}
"""The in-episode strategies and their goal-step functions."""


def goal_sources(mix: tuple[float, float, float], u: Any) -> tuple[Any, Any]:
    """Where the goals of samples come from under the goal ``mix`` (probabilities), one
    sample per uniform number of ``u``: the masks of those that take a future achieved goal
    and of those that take a stored desired goal (the others keep their own)."""
    real, future, desired = mix
    if desired == 0:  # rounding must not leave a sliver for a zero share
        never = u < 0  # uniform numbers are >= 0
        return (u >= real if future > 0 else never), never
    return (u >= real) & (u < real + future), u >= real + future
