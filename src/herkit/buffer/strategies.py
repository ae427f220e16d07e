"""HER's goal strategies, one registry (:data:`STRATEGIES`): a strategy is one function.

An in-episode strategy is a goal-step function registered with :func:`goal_strategy`: from
positions inside episodes to the steps whose achieved goal becomes the new goal,
``(ops, t, length, u, settings) -> steps``. ``t`` is the transition's step, ``length`` the
steps its episode has recorded, ``u`` one uniform number on ``[0, 1)`` per goal (None for a
strategy that draws none), ``settings`` the buffer's
:class:`~herkit.buffer.settings.HerSettings` (a strategy may read ``gamma``, ``k``, ...);
step ``s`` means "the goal achieved *after* the action of step ``s``",
``next_achieved_goal[s]`` (``s == t`` makes the transition a success). The function is
written once over ``ops`` (:class:`~herkit.buffer.backend.ArrayOps`), so that it runs on
the host (numpy) and on a device (torch) alike. Its docstring's first paragraph is its
help. ``random`` (any stored transition) and ``none`` (no relabelling) are entries with no
steps.

Everything that names the strategies is built from the registry: the enum
:class:`~herkit.buffer.settings.Strategy` and the names
:data:`~herkit.buffer.settings.StrategyName` (``herkit train --strategy``'s choices), the
help of ``--strategy`` (:func:`strategy_help`) and the tests' parametrisations; the
relabellers of :mod:`herkit.buffer.rules` call the functions. A new strategy is one
decorated function here, its tests and a line in the docs.

This module sits below :mod:`herkit.buffer.settings`, which builds the enum from it, and
so cannot be part of :mod:`herkit.buffer.rules`, which reads the settings (the package's
imports have no cycle).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from herkit.buffer.backend import ArrayOps

__all__ = [
    "STRATEGIES",
    "GoalStepFn",
    "StrategyRule",
    "StrategySettings",
    "geometric_steps",
    "goal_strategy",
    "strategy_help",
    "uniform_below",
]


class StrategySettings(Protocol):
    """What a goal-step function may read of the buffer's settings
    (:class:`~herkit.buffer.settings.HerSettings` is one)."""

    @property
    def k(self) -> int:
        """Relabelled goals per real transition."""
        ...

    @property
    def gamma(self) -> float | None:
        """The discount (a run's: its agent's); checked in ``(0, 1)`` for a strategy
        registered with ``needs_gamma``."""
        ...


GoalStepFn = Callable[[ArrayOps, Any, Any, Any, StrategySettings], Any]
"""``(ops, t, length, u, settings) -> goal steps``: the goal-step function of an in-episode
strategy, for steps ``t`` of episodes of ``length`` and one uniform number of ``u`` each
(numpy arrays or torch tensors, by ``ops``)."""

Source = Literal["episode", "buffer", "none"]
"""Where a strategy's goals lie: a step of the transition's episode, any stored transition,
or nowhere (no relabelling)."""


@dataclass(frozen=True)
class StrategyRule:
    """One strategy of the registry."""

    name: str
    """Its name (``--strategy NAME``, ``HerReplayBuffer(strategy=NAME)``)."""
    help: str
    """What its goals are, in a sentence (``--strategy``'s help, the enum's docstring)."""
    steps: GoalStepFn | None = None
    """Its goal-step function (None: not a step of the episode, ``source`` says where)."""
    source: Source = "episode"
    """Where its goals lie."""
    draws: bool = True
    """Takes one uniform number per goal (``final`` takes none)."""
    needs_end: bool = False
    """Relabels a transition only once its episode has ended (sample mode; ``final``:
    the last step of an open episode does not exist yet)."""
    needs_gamma: bool = False
    """Reads ``settings.gamma``, which must then be in ``(0, 1)``."""

    def goals_per_transition(self, k: int) -> int:
        """Relabelled goals per real transition: ``k`` (final too, as OpenAI baselines and
        SB3 relabel a share ``k / (k + 1)`` of samples whatever the strategy; the paper's
        ``final`` names the goal and has no k), 0 for none."""
        return 0 if self.source == "none" else k


STRATEGIES: dict[str, StrategyRule] = {}
"""The strategies by name, in the order they are listed (the enum's, ``--help``'s)."""


def _register(rule: StrategyRule) -> None:
    if rule.name in STRATEGIES or not re.fullmatch(r"[a-z][a-z0-9_]*", rule.name):
        raise ValueError(f"a strategy's name must be new and snake_case, got {rule.name!r}")
    STRATEGIES[rule.name] = rule


def _first_paragraph(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())


def goal_strategy(
    name: str, *, draws: bool = True, needs_end: bool = False, needs_gamma: bool = False
) -> Callable[[GoalStepFn], GoalStepFn]:
    """Registers the decorated goal-step function as the in-episode strategy ``name``
    (see :class:`StrategyRule` for the flags; its help: the docstring's first paragraph)."""

    def register(steps: GoalStepFn) -> GoalStepFn:
        help_ = _first_paragraph(steps.__doc__)
        _register(StrategyRule(name, help_, steps, "episode", draws, needs_end, needs_gamma))
        return steps

    return register


def strategy_help() -> str:
    """The help of ``--strategy``: every strategy and its sentence."""
    listed = "; ".join(f"{rule.name}: {_clause(rule.help)}" for rule in STRATEGIES.values())
    return f"Where relabelled goals come from. {listed}."


def _clause(sentence: str) -> str:
    """``sentence`` as a clause of a list: no final period, its first letter in lower case
    unless its first word is a name (``OGBench``)."""
    text = sentence.rstrip(".")
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word[1:] == word[1:].lower() else text


# --- the strategies ----------------------------------------------------------------------


def uniform_below(ops: ArrayOps, u: Any, n: Any) -> Any:
    """The uniform law on ``0 .. n-1``: ``floor(u * n)`` for one uniform number of ``u``
    each (``floor``, not ``round``, so that every value has equal weight; at most ``n - 1``,
    as float rounding could give ``n``)."""
    return ops.minimum(ops.floor_int(u * n), n - 1)


def geometric_steps(ops: ArrayOps, t: Any, length: Any, u: Any, gamma: float) -> Any:
    """The geometric law of a future step: ``t + j - 1`` for ``j ~ Geometric(1 - gamma)`` on
    1, 2, ..., at most ``length - 1``, one uniform number of ``u`` each.

    ``j - 1 = floor(log(1 - u) / log(gamma))``, the geometric law's inverse distribution
    function (``P(j > m) = gamma ** m``). The offline goal mixes' geometric future state
    (:func:`herkit.buffer.rules.future_state_steps`) is this law one step on."""
    ahead = ops.floor_int(ops.log1p(-u) / math.log(gamma))  # j - 1 >= 0
    return ops.minimum(t + ahead, length - 1)


@goal_strategy("future")
def future_steps(ops: ArrayOps, t: Any, length: Any, u: Any, settings: StrategySettings) -> Any:
    """A step of the same episode at or after t, uniformly.

    Uniform over ``t .. length-1`` inclusive (:func:`uniform_below`)."""
    return t + uniform_below(ops, u, length - t)


@goal_strategy("geom_future", needs_gamma=True)
def geom_future_steps(
    ops: ArrayOps, t: Any, length: Any, u: Any, settings: StrategySettings
) -> Any:
    """A step of the same episode at or after t, t + j - 1 for j ~ Geometric(1 - gamma) on
    1, 2, ... (j = 1: step t's own next achieved goal, as future counts), at most the last
    (OGBench's value-goal law, gamma the agent's).

    OGBench's ``GCDataset.sample_goals`` takes state ``min(idx + j, final_state_idx)``, ``j``
    from ``np.random.geometric(1 - discount)``; the state ``j`` steps after step ``t``'s is
    ``next_achieved_goal[t + j - 1]``, so the step is ``min(t + j - 1, length - 1)``, the
    episode's last achieved goal at most (:func:`geometric_steps`)."""
    assert settings.gamma is not None  # checked in (0, 1) by the settings (needs_gamma)
    return geometric_steps(ops, t, length, u, settings.gamma)


@goal_strategy("final", draws=False, needs_end=True)
def final_steps(ops: ArrayOps, t: Any, length: Any, u: Any, settings: StrategySettings) -> Any:
    """The episode's last step (an open episode's transitions keep their goal).

    The last recorded step, ``length - 1`` (``u`` unused: None)."""
    return length - 1


@goal_strategy("episode")
def episode_steps(ops: ArrayOps, t: Any, length: Any, u: Any, settings: StrategySettings) -> Any:
    """Any step of the same episode, uniformly.

    Uniform over ``0 .. length-1`` (:func:`uniform_below`)."""
    return uniform_below(ops, u, length)


_register(StrategyRule("random", "Any stored transition, uniformly.", source="buffer"))
_register(StrategyRule("none", "No relabelling: plain experience replay.", source="none"))
