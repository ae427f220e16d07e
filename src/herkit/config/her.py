"""The HER settings of a training run: :class:`RunHerSettings`, the buffer's
:class:`~herkit.buffer.settings.HerSettings` as ``herkit train`` takes them.

:class:`~herkit.config.train.TrainConfig` holds one in its ``her`` field (its flags are
``--strategy``, ``--k``, ... without a prefix), so that a HER setting is named, checked and
defaulted once, by the buffer's record, and a run's buffer is built from it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tyro

from herkit.buffer.settings import FutureLaw, HerSettings, Strategy, StrategyName
from herkit.buffer.strategies import strategy_help

__all__ = [
    "AGENTS_OWN",
    "HER_ONLY",
    "OFFLINE_LEFT_OUT",
    "RunHerSettings",
    "goal_mix_words",
    "her_name",
]

AGENTS_OWN: dict[str, tuple[Any, str]] = {
    "actor_future": ("uniform", "--hiql.actor-geom-sample"),
    "subgoal_steps": (None, "--hiql.subgoal-steps"),
}
"""The buffer settings a run's agent decides (its registry entry's ``buffer``), not flags:
each one's value in a run's :class:`RunHerSettings` and the flag that sets it."""

HER_ONLY = ("strategy", "k", "relabel", "goal_mix", "goal_mix_warmup", "n_step")
"""HER's relabelling: where a relabelled goal comes from and how returns are summed. An
offline agent draws its goals from its goal mixes instead (value goals, actor goals), so a
run of one refuses these unless at their defaults and its config.json leaves them out."""

OFFLINE_LEFT_OUT = (*HER_ONLY, *AGENTS_OWN, "gamma")
"""The HER settings an offline agent's records (config.json, the report) leave out: HER's
relabelling (:data:`HER_ONLY`) and what its own settings decide (the discount, HIQL's
subgoals: in its block)."""


def goal_mix_words(value_goals: Sequence[float] | None, actor_goals: Sequence[float] | None) -> str:
    """An offline agent's goal mixes in words, ``value goals 0.2 0.5 0.3, actor goals 0 1
    0`` (each its (current, future, random) weights; a mix that is None left out)."""
    return ", ".join(
        f"{name} goals {' '.join(f'{round(weight, 6):g}' for weight in mix)}"
        for name, mix in (("value", value_goals), ("actor", actor_goals))
        if mix is not None
    )


def her_name(settings: Mapping[str, Any]) -> str:
    """How goals are relabelled, in a word, from a run's buffer settings by name (its
    :class:`~herkit.buffer.settings.HerSettings`' values, or the HER settings of its
    config.json flattened, :func:`~herkit.config.learning.flat_settings`): offline value
    goals' weights (``values0.2:0.5:0.3``), or where only the actor has goals theirs
    (``actors0:1:0``), or for a goal mix its weights relative to the smallest
    (``mix1:2:2``), else the strategy."""
    for name in ("value_goals", "actor_goals"):
        mixed = settings.get(name)
        if mixed is not None:
            return name[:-6] + "s" + ":".join(f"{round(weight, 6):g}" for weight in mixed)
    mix = settings.get("goal_mix")
    if mix is None:
        return Strategy.parse(settings["strategy"]).value
    unit = min(weight for weight in mix if weight > 0)  # the mix kept as probabilities
    return "mix" + ":".join(f"{round(weight / unit, 6):g}" for weight in mix)


@dataclass(frozen=True)
class RunHerSettings(HerSettings):
    """How goals are relabelled, which transitions are sampled and what their rewards and
    terminal flags are (the replay buffer's settings)."""

    strategy: StrategyName = field(default="future", metadata={"help": strategy_help()})
    """Where relabelled goals come from: a strategy's name (the flag's choices and help are
    the registry's, :data:`herkit.buffer.strategies.STRATEGIES`)."""
    gamma: tyro.conf.Suppress[float | None] = None
    """Not a flag: the discount of n-step sums is the agent's (``--ALGO.gamma``)."""
    actor_future: tyro.conf.Suppress[FutureLaw] = "uniform"
    """Not a flag: an agent's own (``--hiql.actor-geom-sample``)."""
    subgoal_steps: tyro.conf.Suppress[int | None] = None
    """Not a flag: HIQL's (``--hiql.subgoal-steps``)."""

    GAMMA_LATER: ClassVar[bool] = True
    """The discount is the agent's, given to :meth:`buffer_settings`."""

    def __post_init__(self) -> None:
        if self.gamma is not None:
            raise ValueError(
                f"her.gamma must be None: a run's n-step sums use the agent's gamma "
                f"(--ALGO.gamma), got {self.gamma!r}"
            )
        for name, (default, flag) in AGENTS_OWN.items():  # set by the agent's registry entry
            if getattr(self, name) != default:
                raise ValueError(
                    f"her.{name} must be {default!r}: a run's is its agent's ({flag}), "
                    f"got {getattr(self, name)!r}"
                )
        # every other setting checked and normalised by the buffer's record; those that need
        # the discount when the agent's is known (buffer_settings, TrainConfig)
        HerSettings.__post_init__(self)
        object.__setattr__(self, "strategy", Strategy.parse(self.strategy).value)

    @classmethod
    def of(cls, settings: HerSettings | None, changes: Any = None) -> RunHerSettings:
        """``settings`` (None: the defaults) as a run's, with ``changes`` (a ValueError if
        they set ``gamma``, which is the agent's)."""
        if settings is not None and not isinstance(settings, HerSettings):
            raise ValueError(f"her must be a HerSettings, got {type(settings).__name__}")
        values = {} if settings is None else settings.values()
        return cls(**(values | dict(changes or {})))

    def given(self, names: Sequence[str]) -> list[str]:
        """The settings among ``names`` that differ from their defaults."""
        default = RunHerSettings()
        return [name for name in names if getattr(self, name) != getattr(default, name)]

    def buffer_settings(self, gamma: float) -> HerSettings:
        """These settings for the buffer, with the agent's discount ``gamma``."""
        return HerSettings(**(self.values() | {"gamma": gamma}))
