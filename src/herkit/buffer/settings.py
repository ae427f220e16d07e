"""How a HER buffer relabels and samples: :class:`HerSettings`, one record of every such
setting, and the words it is said in: the goal strategies (:class:`Strategy`) and the
goal mixes (:func:`check_mix`).

:class:`~herkit.buffer.her.HerReplayBuffer` takes it (or its fields as keywords), and so do
the training settings (:meth:`herkit.config.TrainConfig.her_settings`) and both facades
(:mod:`herkit.sb3`, :mod:`herkit.cpprb`): a setting is named, checked and defaulted here
once, so that none of them can drift from another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

import numpy as np

from herkit.buffer.checks import check_bool, check_int, is_number
from herkit.buffer.strategies import STRATEGIES, StrategyRule

__all__ = [
    "FUTURE_LAWS",
    "RELABEL_MODES",
    "STRATEGY_NAMES",
    "FutureLaw",
    "GoalMix",
    "HerSettings",
    "RelabelMode",
    "Strategy",
    "StrategyEnum",
    "StrategyName",
    "check_goal_mix",
    "check_mix",
]

RelabelMode = Literal["sample", "store"]
"""When goals are relabelled: in a copy of each sampled batch, or stored at episode end."""
RELABEL_MODES: tuple[str, ...] = get_args(RelabelMode)

STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)
"""The strategies' names, in the registry's order (:data:`herkit.buffer.strategies.STRATEGIES`)."""

if TYPE_CHECKING:  # a type checker sees a name; at run time the registry's names
    StrategyName = str
else:
    StrategyName = Literal[STRATEGY_NAMES]
"""The strategies by name (the values of :class:`Strategy`; ``--strategy``'s choices)."""

FutureLaw = Literal["geometric", "uniform"]
"""How far ahead an offline mix's future goal lies: geometric with the discount, or
uniform (:mod:`herkit.buffer.rules`)."""
FUTURE_LAWS: tuple[str, ...] = get_args(FutureLaw)


class StrategyEnum(str, Enum):
    """What every strategy is: :class:`Strategy`'s methods (its members are made from the
    registry, :data:`herkit.buffer.strategies.STRATEGIES`)."""

    @classmethod
    def parse(cls, value: str | StrategyEnum) -> Strategy:
        """Return the strategy named ``value``; ValueError naming ``strategy`` otherwise."""
        try:
            return Strategy(value)
        except ValueError:
            known = ", ".join(repr(name) for name in STRATEGY_NAMES)
            raise ValueError(f"strategy must be one of {known}, got {value!r}") from None

    @property
    def rule(self) -> StrategyRule:
        """Its entry in the registry: its goal-step function, help and flags."""
        return STRATEGIES[self.value]

    def goals_per_transition(self, k: int) -> int:
        """Relabelled goals per real transition: ``k``, 0 for none
        (:meth:`~herkit.buffer.strategies.StrategyRule.goals_per_transition`)."""
        return self.rule.goals_per_transition(k)


if TYPE_CHECKING:
    Strategy = StrategyEnum
else:
    Strategy = StrategyEnum(
        "Strategy",
        [(name.upper(), name) for name in STRATEGY_NAMES],
        module=__name__,
        qualname="Strategy",
    )
    Strategy.__doc__ = (
        "Where relabelled goals come from (Andrychowicz et al. 2017, section 4.5), one member "
        "per strategy of the registry (:data:`herkit.buffer.strategies.STRATEGIES`):\n\n"
        + "\n".join(f"- ``{rule.name}``: {rule.help}" for rule in STRATEGIES.values())
    )


GoalMix = tuple[float, float, float] | tuple[float, float, float, float]
"""The weights of a HER goal mix: ``(real, future, desired)`` or ``(real, future, desired,
achieved)`` (:attr:`HerSettings.goal_mix`)."""


def check_mix(name: str, weights: Any, parts: str) -> tuple[float, float, float] | None:
    """The three weights of a goal mix (its ``parts``, e.g. ``"real, future, desired"``)
    as probabilities summing to 1 (kept as given where they already do); None for no mix;
    a ValueError names ``name`` otherwise."""
    values = _mix_weights(name, weights, parts, (3,))
    if values is None:
        return None
    first, second, third = values
    return first, second, third


def check_goal_mix(weights: Any) -> GoalMix | None:
    """A HER goal mix, ``(real, future, desired)`` or ``(real, future, desired,
    achieved)``, as probabilities summing to 1 (:func:`check_mix`); an achieved share of 0
    is left out, so that ``(1, 2, 2, 0)`` is the mix ``(1, 2, 2)``."""
    parts = "real, future, desired[, achieved]"
    if weights is not None and len(weights) == 4 and _is_zero(weights[3]):
        weights = tuple(weights)[:3]
    values = _mix_weights("goal_mix", weights, parts, (3, 4))
    if values is None:
        return None
    if len(values) == 4:
        return values[0], values[1], values[2], values[3]
    return values[0], values[1], values[2]


def _is_zero(weight: Any) -> bool:
    return is_number(weight) and float(weight) == 0.0


def _mix_weights(
    name: str, weights: Any, parts: str, counts: tuple[int, ...]
) -> tuple[float, ...] | None:
    """``weights`` (``counts`` of them) as probabilities summing to 1 (kept as given where
    they already do); None for None; a ValueError names ``name`` otherwise."""
    if weights is None:
        return None
    values = np.asarray(weights, dtype=np.float64).ravel() if len(weights) in counts else None
    if values is None or not np.all(np.isfinite(values)) or values.min() < 0 or values.sum() <= 0:
        number = " or ".join(str(count) for count in counts)
        raise ValueError(
            f"{name} must be {number} weights ({parts}), finite, >= 0 and not all 0, "
            f"got {weights!r}"
        )
    if abs(values.sum() - 1.0) > 1e-12:
        values = values / values.sum()
    return tuple(values.tolist())


@dataclass(frozen=True)
class HerSettings:
    """How goals are relabelled, which transitions are sampled and what their rewards and
    terminal flags are (see :mod:`herkit.buffer.rules`). Checked on construction (a
    ValueError names the setting); a goal mix is kept as probabilities, with the future
    rule (``strategy`` future, ``k`` 1) for its future share."""

    strategy: Strategy | StrategyName = "future"
    """Where relabelled goals come from: a strategy of :class:`Strategy` by name
    (``future``, ``final``, ``episode``, ``random``, ..., ``none``: no relabelling)."""
    k: int = 4
    """Relabelled goals per real transition, for every strategy (none: 0): a share
    ``k / (k + 1)`` of the samples is relabelled (final's goal repeated, as baselines and SB3
    do; the paper's ``final`` has no k)."""
    relabel: RelabelMode = "sample"
    """Relabel a copy of each sampled batch, or store ``k`` goals per transition when its
    episode ends (the paper's form; only finished episodes are sampled)."""
    goal_mix: GoalMix | None = None
    """``(real, future, desired[, achieved])`` weights of a goal mix in place of
    ``strategy`` and ``k`` (sample mode): each sample keeps its goal, takes a future
    achieved goal of its episode, or the desired or achieved goal of any stored transition."""
    goal_mix_warmup: int = 0
    """Transitions added before the goal mix applies; until then every sample takes a
    future goal. Needs ``goal_mix``."""
    n_step: int = 1
    """Steps summed per sample (n-step returns)."""
    gamma: float | None = None
    """Discount of the n-step sums; needed when ``n_step > 1``, and by a strategy that reads
    it (in ``(0, 1)``)."""
    prioritized: bool = False
    """Proportional prioritized replay (Schaul et al. 2016)."""
    alpha: float = 0.6
    """Priority exponent."""
    beta: float = 0.4
    """Importance-sampling exponent (the default of ``sample``)."""
    eps: float = 1e-6
    """Added to every priority."""
    terminal_on_success: bool | None = None
    """The env ends episodes on success: a relabelled sample is terminal when its goal is
    reached, or when the env ended its step for another reason. None: not given, so the
    env decides (:mod:`herkit.buffer.ending`): what it declares (read by ``from_env``),
    else whether its first success added ends its episode."""
    keep_env_terms: bool = True
    """A relabelled sample's reward keeps the part of the env's step reward that
    ``compute_reward`` lacks (a crash penalty, a reward wrapper's term): ``compute_reward``
    of its goal plus ``r - compute_reward`` of the step's own goal. False: ``compute_reward``
    alone, as Stable-Baselines3's HER buffer gives it. Samples that keep their own goal
    always get the env's reward."""
    success_threshold: float | None = None
    """A goal counts as reached where the reward function gives at least this (dense
    rewards). None: learned from the success flags added, else ``reward_fn(g, g)``."""
    info_keys: tuple[str, ...] = ()
    """Numeric scalar info fields stored with each transition and handed to the reward
    function, so that info-dependent rewards stay vectorised."""
    value_goals: tuple[float, float, float] | None = None
    """``(current, future, random)`` weights of offline value goals in place of ``strategy``
    (:mod:`herkit.buffer.rules`; OGBench: 0.2 0.5 0.3; reward 0 at the current state)."""
    value_future: FutureLaw = "geometric"
    """Value goals ahead: ``geometric`` with ``gamma`` (OGBench) or ``uniform`` (OGBench's
    rounding, :mod:`herkit.buffer.rules`)."""
    actor_goals: tuple[float, float, float] | None = None
    """``(current, future, random)`` weights of offline actors' goals (``Batch.actor_goal``;
    OGBench: 0 1 0)."""
    actor_future: FutureLaw = "uniform"
    """Actor goals ahead: ``uniform`` (OGBench's default) or ``geometric`` with ``gamma``
    (OGBench's ``actor_geom_sample``)."""
    subgoal_steps: int | None = None
    """HIQL's subgoals (OGBench's ``HGCDataset``; needs ``actor_goals``, the high actor's
    goals): each sample also carries the low actor's goal ``subgoal_steps`` states on, at most
    its episode's last, and the high actor's target as far, at most its goal's step
    (``Batch.low_actor_goal``, ``high_actor_target``); None: none."""
    gc_negative: bool = True
    """Value goals' rewards: 0 where the goal is reached and -1 elsewhere (OGBench's
    ``gc_negative``); False: 1 and 0."""

    GAMMA_LATER: ClassVar[bool] = False
    """Whether the discount is given later (a run's settings: its agent's ``gamma``, given
    to :meth:`~herkit.config.her.RunHerSettings.buffer_settings`): the checks that need
    ``gamma`` wait for it while it is None."""

    def __post_init__(self) -> None:
        strategy = Strategy.parse(self.strategy)
        k = check_int("k", self.k, 0)
        if self.relabel not in RELABEL_MODES:
            raise ValueError(f"relabel must be 'sample' or 'store', got {self.relabel!r}")
        mix = check_goal_mix(self.goal_mix)
        if mix is not None and self.relabel != "sample":
            raise ValueError("goal_mix needs relabel='sample' (goals are mixed at sample time)")
        warmup = check_int("goal_mix_warmup", self.goal_mix_warmup, 0)
        if warmup and mix is None:
            raise ValueError(f"goal_mix_warmup={warmup} needs goal_mix (it delays the mix)")
        if mix is not None:  # its future share follows the future rule
            strategy, k = Strategy.parse("future"), 1
        n_step = check_int("n_step", self.n_step, 1)
        gamma = self.gamma
        later = gamma is None and self.GAMMA_LATER  # checked when the discount is given
        fits = later or (gamma is not None and is_number(gamma) and 0 < gamma <= 1)
        if n_step > 1 and not fits:
            raise ValueError(f"n_step > 1 needs gamma in (0, 1], got gamma={gamma!r}")
        if strategy.rule.needs_gamma and not (
            later or (gamma is not None and is_number(gamma) and 0 < gamma < 1)
        ):
            raise ValueError(
                f"strategy {strategy.value!r} needs gamma in (0, 1) (a run's: its agent's, "
                f"--ALGO.gamma), got gamma={gamma!r}"
            )
        if self.success_threshold is not None and not is_number(self.success_threshold):
            raise ValueError(
                f"success_threshold must be a finite number or None, got {self.success_threshold!r}"
            )
        if not (is_number(self.alpha) and is_number(self.beta) and is_number(self.eps)) or (
            self.alpha < 0 or self.beta < 0 or self.eps <= 0
        ):
            raise ValueError(
                "alpha and beta must be >= 0 and eps > 0, got "
                f"alpha={self.alpha!r}, beta={self.beta!r}, eps={self.eps!r}"
            )
        terminal = self.terminal_on_success
        keys = self.info_keys
        if isinstance(keys, str) or not all(isinstance(key, str) for key in keys):
            raise ValueError(f"info_keys must be a sequence of key names, got {keys!r}")
        value_goals = check_mix("value_goals", self.value_goals, "current, future, random")
        if self.value_future not in FUTURE_LAWS:
            raise ValueError(
                f"value_future must be 'geometric' or 'uniform', got {self.value_future!r}"
            )
        if value_goals is not None:
            if self.relabel != "sample" or mix is not None or n_step != 1:
                raise ValueError(
                    "value_goals replaces the strategy: it needs relabel='sample', no goal_mix "
                    "and n_step=1"
                )
            if (
                self.value_future == "geometric"
                and value_goals[1] > 0
                and not (later or (gamma is not None and is_number(gamma) and 0 < gamma < 1))
            ):
                raise ValueError(
                    f"value_goals with a geometric future needs gamma in (0, 1), got {gamma!r}"
                )
        actor_goals = check_mix("actor_goals", self.actor_goals, "current, future, random")
        if self.actor_future not in FUTURE_LAWS:
            raise ValueError(
                f"actor_future must be 'geometric' or 'uniform', got {self.actor_future!r}"
            )
        if (
            actor_goals is not None
            and self.actor_future == "geometric"
            and actor_goals[1] > 0
            and not (later or (gamma is not None and is_number(gamma) and 0 < gamma < 1))
        ):
            raise ValueError(
                f"actor_goals with a geometric future needs gamma in (0, 1), got {gamma!r}"
            )
        subgoal_steps = self.subgoal_steps
        if subgoal_steps is not None:
            subgoal_steps = check_int("subgoal_steps", subgoal_steps, 1)
            if actor_goals is None:
                raise ValueError(
                    "subgoal_steps needs actor_goals (the high actor's goals, whose targets "
                    "are the subgoals)"
                )
        normal = {
            "value_goals": value_goals,
            "actor_goals": actor_goals,
            "subgoal_steps": subgoal_steps,
            "strategy": strategy,
            "k": k,
            "goal_mix": mix,
            "goal_mix_warmup": warmup,
            "n_step": n_step,
            "gamma": None if gamma is None else float(gamma),
            "prioritized": bool(self.prioritized),
            "alpha": float(self.alpha),
            "beta": float(self.beta),
            "eps": float(self.eps),
            "terminal_on_success": None if terminal is None else bool(terminal),
            "keep_env_terms": check_bool("keep_env_terms", self.keep_env_terms),
            "gc_negative": check_bool("gc_negative", self.gc_negative),
            "success_threshold": None
            if self.success_threshold is None
            else float(self.success_threshold),
            "info_keys": tuple(keys),
        }
        for name, value in normal.items():
            object.__setattr__(self, name, value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The names of the settings."""
        return tuple(field.name for field in dataclasses.fields(HerSettings))

    @classmethod
    def of(cls, settings: HerSettings | None, changes: Mapping[str, Any]) -> HerSettings:
        """``settings`` (None: the defaults) with ``changes``; a TypeError names a
        keyword that is not a setting."""
        unknown = sorted(set(changes) - set(cls.names()))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {unknown}: not HER settings")
        if settings is not None and not changes:
            return settings
        return dataclasses.replace(settings or cls(), **changes)

    def values(self) -> dict[str, Any]:
        """The settings by name, as they are (the fields of :class:`HerSettings` only)."""
        return {name: getattr(self, name) for name in HerSettings.names()}

    @property
    def goals_per_transition(self) -> int:
        """Relabelled goals per real transition: ``k``, 0 for none."""
        return Strategy.parse(self.strategy).goals_per_transition(self.k)

    @property
    def relabel_probability(self) -> float:
        """The share of samples that are relabelled (strategies): ``k / (k + 1)``."""
        goals = self.goals_per_transition
        return goals / (goals + 1)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON values (what a saved buffer stores)."""
        values = dataclasses.asdict(self)
        values["strategy"] = Strategy.parse(self.strategy).value
        values["goal_mix"] = None if self.goal_mix is None else list(self.goal_mix)
        values["info_keys"] = list(self.info_keys)
        for name in ("value_goals", "actor_goals"):
            values[name] = None if values[name] is None else list(values[name])
        return values
