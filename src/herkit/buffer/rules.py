"""The rules of a sample: the goal it is trained for, its reward, whether it ends its
episode and its return, and the one draw that makes a batch of them on the host or on a
device (:func:`draw_batch`, this module's entry).

**Goals.** A HER strategy is one entry of the registry
(:data:`herkit.buffer.strategies.STRATEGIES`): a pure function, given the settings, from
positions inside episodes to the steps whose achieved goal becomes the new goal (``t`` is
the transition's step, ``length`` the steps its episode has recorded, and step ``s`` means
"the goal achieved *after* the action of step ``s``", ``next_achieved_goal[s]``: ``s == t``
makes the transition a success); ``random`` draws from the whole buffer
(:func:`goal_slots`). One relabeller per mode picks the goals:

- ``relabel="sample"`` (:class:`SampleTimeGoals`): each sampled transition is relabelled
  with probability ``k / (k + 1)`` in a copy of the batch; a relabelled goal is an achieved
  goal the episode has already recorded (``future``: from the steps ``t..`` so far; ``final``
  does not relabel a transition of an open episode: its last step does not exist yet);
- ``relabel="store"`` (:class:`StoredGoals`): the paper's form, ``k`` goals per transition
  written when its episode ends, as values; only finished episodes are sampled;
- a goal mix ``(real, future, desired[, achieved])`` (:class:`MixedGoals`): each sample
  keeps its goal, takes a future achieved goal of its episode, the desired goal of any
  stored transition, or the achieved goal of any stored transition (mrl's
  "futureactual" and "rfaa"; ``future`` with ``k`` is ``(1, k, 0)``), future goals alone
  until ``goal_mix_warmup`` transitions were added;
- offline goal-conditioned RL's value and actor goals (OGBench's ``GCDataset``, Park et al.
  2024, index for index: :func:`state_goal_slots`): each goal is the first state of a
  stored transition, the current one, a future one of the episode (geometric with the
  discount, or uniform with OGBench's rounding, stopping at the episode's last state that
  has a transition) or any one; a value goal is reached where its index is the sample's.
  HIQL's subgoals ride along (OGBench's ``HGCDataset``, :func:`subgoal_slots`): the low
  actor's goal ``subgoal_steps`` states on, at most the episode's last, and the high
  actor's target as far, at most its goal's step.

**Rewards, endings, returns** (:func:`sample_returns`). What the env said is kept
(:mod:`herkit.buffer.env_terms`): a sample with its own goal gets the env's reward and
``terminated`` flag; a relabelled one ``reward_fn`` of its goal plus the goal-free part of
the env's reward, terminal when the env ended for another reason, or (``terminal_on_success``)
when its goal is reached. A value goal's reward is 0 where reached, else -1 (``gc_negative``;
1 and 0 without), terminal where reached. With ``n_step > 1`` a sample's reward sums
``gamma^j r_{t+j}`` over the ``m <= n`` recorded steps up to the first terminal one, every
reward taken for its goal; ``next_observation`` is then ``m`` steps on and ``discount``
``gamma ** m``; a timeout or an open episode ends the window without ending the return.

**One draw.** :meth:`herkit.HerReplayBuffer.sample` picks transitions on the host and
:meth:`herkit.buffer.device_sampler.DeviceSampler.draw` on a device; both call
:func:`draw_batch` with their own bookkeeping (a :class:`~herkit.buffer.storage.Ledger`)
and uniform numbers, so that given the same numbers they make the same batch.
:data:`ON_A_DEVICE` says of every HER setting whether a device serves it, or why not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from herkit.buffer.backend import ArrayOps, rows_mask
from herkit.buffer.batch import Batch
from herkit.buffer.env_terms import GoalRewards
from herkit.buffer.settings import FutureLaw, HerSettings, Strategy
from herkit.buffer.storage import (
    EpisodeStorage,
    Ledger,
    column_of,
    positions,
    sample_slots,
    slot_at,
)
from herkit.buffer.strategies import STRATEGIES, StrategyRule, StrategySettings, geometric_steps

__all__ = [
    "OGBENCH_ACTOR_GOALS",
    "OGBENCH_VALUE_GOALS",
    "ON_A_DEVICE",
    "DrawSource",
    "MixedGoals",
    "NoRelabelling",
    "Relabeller",
    "SampleTimeGoals",
    "StoredGoals",
    "Uniform",
    "draw_batch",
    "future_state_steps",
    "goal_slots",
    "goal_sources",
    "mix_warm",
    "n_step_sums",
    "relabeller_for",
    "sample_returns",
    "state_goal_slots",
    "step_window",
    "subgoal_slots",
    "unsupported",
]


# --- a goal mix's sources (the strategies are herkit.buffer.strategies') ----------------


def goal_sources(mix: tuple[float, ...], u: Any) -> tuple[Any, Any, Any]:
    """Where the goals of samples come from under the goal ``mix`` (probabilities: real,
    future, desired and, where given, achieved), one sample per uniform number of ``u``:
    the masks of those that take a future achieved goal, a stored desired goal and a stored
    achieved goal (None where the mix has no achieved share; the others keep their own).
    The last source with a share takes every number above its lower bound, so that rounding
    leaves no sliver for a zero share."""
    real, future, desired = mix[:3]
    achieved = mix[3] if len(mix) > 3 else 0.0
    never = u < 0  # uniform numbers are >= 0
    if achieved > 0:
        other = real + future + desired
        taken = (u >= real) & (u < real + future), (u >= real + future) & (u < other)
        return taken[0], taken[1], u >= other
    if desired == 0:
        return (u >= real if future > 0 else never), never, None
    return (u >= real) & (u < real + future), u >= real + future, None


# --- the relabellers -------------------------------------------------------------------

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
    ledger: Ledger,
    rule: StrategyRule,
    at: tuple[Any, Any, Any],
    column: Any,
    uniform: Uniform,
    settings: StrategySettings,
) -> Any:
    """The slots whose ``next_achieved_goal`` relabels the transitions at ``at`` (their
    episodes' absolute start rows, lengths and steps) of the ledger's columns ``column`` by
    the strategy ``rule`` (its goal-step function given ``settings``)."""
    start, length, step = at
    if rule.steps is None:  # random: any stored transition
        return sample_slots(ledger, uniform(len(step)))
    u = uniform(len(step)) if rule.draws else None
    goal_step = rule.steps(ledger.ops, step, length, u, settings)
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
        self.storage, self.ops, self.settings = storage, ops, settings
        self.rule = Strategy.parse(settings.strategy).rule
        self.probability = settings.relabel_probability

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """Goals for ``slots`` (see the class's docstring)."""
        book = ledger.ops
        relabel = uniform(len(slots)) < self.probability
        if self.rule.needs_end:  # an open episode has no final goal yet
            relabel &= book.take(ledger.episode_length, book.take(ledger.episode_of, slots)) > 0
        at = positions(ledger, slots)
        column = column_of(ledger, slots)
        chosen_slots = goal_slots(ledger, self.rule, at, column, uniform, self.settings)
        chosen = self.storage.take("next_achieved_goal", chosen_slots)
        return self.ops.where(rows_mask(relabel, goal), chosen, goal), relabel


class MixedGoals:
    """Each sample keeps its goal, takes a future achieved goal, a stored desired goal, or
    (where the mix has that share) a stored achieved goal, by the goal mix's probabilities
    (future goals only until the mix is ``warm``). The stored desired and achieved goals
    are those of one transition drawn uniformly from the buffer per sample (the ``random``
    strategy's draw: its achieved goal is ``next_achieved_goal``, as mrl's ``ag``)."""

    def __init__(self, storage: EpisodeStorage, ops: ArrayOps, settings: HerSettings) -> None:
        assert settings.goal_mix is not None
        self.storage, self.ops, self.settings = storage, ops, settings
        self.mix = settings.goal_mix

    def goals(
        self, ledger: Ledger, slots: Any, copy: Any, goal: Any, uniform: Uniform, warm: bool
    ) -> Goals:
        """Goals for ``slots`` (see the class's docstring)."""
        ops, storage = self.ops, self.storage
        mix = self.mix if warm else (0.0, 1.0, 0.0)
        future, desired, achieved = goal_sources(mix, uniform(len(slots)))
        at = positions(ledger, slots)
        column, rule = column_of(ledger, slots), STRATEGIES["future"]  # the future share's
        future_slots = goal_slots(ledger, rule, at, column, uniform, self.settings)
        other_slots = sample_slots(ledger, uniform(len(slots)))
        future_goal = storage.take("next_achieved_goal", future_slots)
        goal = ops.where(rows_mask(future, goal), future_goal, goal)
        desired_goal = storage.take("desired_goal", other_slots)
        goal = ops.where(rows_mask(desired, goal), desired_goal, goal)
        if achieved is None:
            return goal, future | desired
        achieved_goal = storage.take("next_achieved_goal", other_slots)
        return ops.where(
            rows_mask(achieved, goal), achieved_goal, goal
        ), future | desired | achieved


class StoredGoals:
    """Writes ``k`` goals per transition when its episode ends, and serves one of each
    transition's ``k + 1`` goals per sample (store mode)."""

    FIELD = "relabel_goal"
    """The stored column of relabelled goals, ``(k, *goal_shape)`` per transition."""

    def __init__(self, storage: EpisodeStorage, ops: ArrayOps, settings: HerSettings) -> None:
        self.storage, self.ops, self.settings = storage, ops, settings
        self.rule = Strategy.parse(settings.strategy).rule
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
            at = (start, length, step)
            chosen = goal_slots(ledger, self.rule, at, env, uniform, self.settings)
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


# --- offline goal mixes (OGBench's rules) ------------------------------------------------

OGBENCH_VALUE_GOALS = (0.2, 0.5, 0.3)
"""OGBench's value goals (GCIVL, GCIQL, HIQL): 20 % current, 50 % future (geometric),
30 % random states."""
OGBENCH_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""OGBench's actor goals (every agent): future states, uniformly."""


def future_state_steps(
    ops: Any, step: Any, length: Any, u: Any, law: FutureLaw, gamma: float | None
) -> Any:
    """The steps whose first state is the future goal of the transitions at ``step`` of
    episodes of ``length`` transitions, one uniform number of ``u`` each (see the module).

    ``geometric``: ``min(step + j, length - 1)``, HER's geometric law
    (:func:`~herkit.buffer.strategies.geometric_steps`) one step on: the state ``j`` steps
    after step ``t``'s first is the first state of step ``t + 1 + j - 1``. ``uniform``:
    OGBench's own law, ``round(min(step + 1, last) * u + last * (1 - u))`` for the last
    step ``last``: its two ends at half weight, as OGBench rounds (not HER's ``future``,
    whose steps weigh alike, :func:`~herkit.buffer.strategies.uniform_below`)."""
    last = length - 1
    if law == "geometric":
        if gamma is None or not 0 < gamma < 1:
            raise ValueError(f"a geometric future needs gamma in (0, 1), got {gamma!r}")
        return geometric_steps(ops, step + 1, length, u, gamma)
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
    reach: bool = False,
) -> Any:
    """The slots whose first state is the goal of each of ``slots`` (at ``at``: their
    episodes' start rows, lengths and steps, :func:`~herkit.buffer.storage.positions`)
    under ``mix``; only the sources the mix uses draw numbers. With ``reach`` also the
    step of each sample's episode its goal is reached by (HIQL's, :func:`subgoal_slots`):
    the goal's own for a current or future goal, the episode's last for a random one."""
    ops = ledger.ops
    current_p, future_p, random_p = mix
    n = len(slots)
    source = uniform(n) if 0 < max(mix) < 1 else None  # one source: no draw
    start, length, step = at
    goal, reached = slots, step
    if future_p > 0:
        goal_step = future_state_steps(ops, step, length, uniform(n), law, gamma)
        ahead = slot_at(ledger, start + goal_step, column_of(ledger, slots))
        goal = ahead if source is None else ops.where(source >= current_p, ahead, goal)
        if reach:
            reached = (
                goal_step if source is None else ops.where(source >= current_p, goal_step, step)
            )
    if random_p > 0:
        anywhere = sample_slots(ledger, uniform(n))
        if source is None:
            goal, reached = anywhere, length - 1
        else:
            far = source >= current_p + future_p
            goal = ops.where(far, anywhere, goal)
            if reach:
                reached = ops.where(far, length - 1, reached)
    return (goal, reached) if reach else goal


def subgoal_slots(ledger: Ledger, slots: Any, at: tuple[Any, Any, Any], reach: Any, k: int) -> Any:
    """HIQL's subgoals of ``slots`` (at ``at``, :func:`state_goal_slots`), OGBench's
    ``HGCDataset``: the slots of the low actor's goal, the state ``k`` steps on, at most the
    episode's last (``min(t + k, last)``), and of the high actor's target, the state ``k``
    steps on, at most the step ``reach`` where its goal is reached (``min(t + k, reach)``:
    a future goal's step, the last for a random goal, ``t`` for the current state)."""
    ops = ledger.ops
    start, length, step = at
    column = column_of(ledger, slots)
    ahead = step + k
    low = slot_at(ledger, start + ops.minimum(ahead, length - 1), column)
    return low, slot_at(ledger, start + ops.minimum(ahead, reach), column)


# --- rewards, endings and returns --------------------------------------------------------


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


# --- one draw ------------------------------------------------------------------------

ON_A_DEVICE: dict[str, str | None] = {
    "strategy": None,
    "k": None,
    "relabel": "store-time relabelling",
    "goal_mix": None,
    "goal_mix_warmup": None,
    "n_step": "n-step returns",
    "gamma": None,
    "prioritized": None,
    "alpha": None,
    "beta": None,
    "eps": None,
    "terminal_on_success": None,
    "keep_env_terms": None,
    "success_threshold": None,
    "info_keys": None,
    "value_goals": None,
    "value_future": None,
    "actor_goals": None,
    "actor_future": None,
    "subgoal_steps": None,
    "gc_negative": None,
}
"""Every HER setting, and why a draw on a device cannot serve it when it differs from its
default (None: served there as on the host). Store-time relabelling writes goals at
episode ends and n-step windows read the host's bookkeeping."""


class DrawSource(Protocol):
    """What a draw reads of a buffer (:class:`herkit.HerReplayBuffer` is one)."""

    @property
    def storage(self) -> EpisodeStorage:
        """The episodes (and a recorded dataset after them)."""
        ...

    @property
    def settings(self) -> HerSettings:
        """How goals are relabelled and samples scored."""
        ...

    @property
    def relabeller(self) -> Relabeller:
        """Picks the goals of a strategy or a goal mix."""
        ...

    @property
    def rewards(self) -> GoalRewards:
        """The reward functions, in the storage's backend."""
        ...


def unsupported(buffer: Any) -> str | None:
    """Why ``buffer`` (a :class:`herkit.HerReplayBuffer`) cannot draw on its device without
    the host, or None if it can."""
    if buffer.device is None:
        return "its data is on the host"
    if buffer.torch_reward_fn is None:
        return "its reward has no torch form"
    settings, default = buffer.settings, HerSettings()
    for name, why in ON_A_DEVICE.items():
        if why is not None and getattr(settings, name) != getattr(default, name):
            return why
    return None


def draw_batch(
    source: DrawSource,
    ledger: Ledger,
    slots: Any,
    copy: Any,
    uniform: Uniform,
    *,
    terminal_on_success: bool | None,
    threshold: Any,
    warm: bool,
    achieved_goals: bool,
) -> tuple[Batch, Any]:
    """The :class:`~herkit.buffer.batch.Batch` of the transitions ``slots`` (in store mode
    ``copy`` says which of each one's goals; None otherwise) with the random numbers of
    ``uniform`` and the bookkeeping ``ledger``, and ``last``, the slots whose next
    observation it holds (n steps on with n-step returns). The batch has ``discount`` and
    ``actor_goal`` where the settings make them, with ``subgoal_steps`` HIQL's
    ``low_actor_goal``, ``high_actor_target`` and ``high_actor_target_observation``
    (:func:`subgoal_slots`; the high actor's goal is ``actor_goal``), with
    ``achieved_goals`` its ``achieved_goal`` and ``next_achieved_goal``; no weights,
    indices or extras (the caller's).

    ``terminal_on_success`` and ``warm`` (the goal mix's warm-up is over) are the flags the
    rules follow, ``threshold`` the reward from which a goal counts as reached (None: the
    reward of a goal with itself)."""
    storage, her, ops = source.storage, source.settings, source.storage.ops
    offline = her.value_goals is not None or her.actor_goals is not None
    at: Any = positions(ledger, slots) if offline else None  # where the samples lie
    next_achieved = None
    if achieved_goals or her.value_goals is None:
        next_achieved = storage.take("next_achieved_goal", slots)
    if her.value_goals is not None:  # offline GCRL's value goals, rewards and ends
        value_slots = state_goal_slots(
            ledger, slots, at, her.value_goals, her.value_future, her.gamma, uniform
        )
        terminated = ops.from_host(ledger.ops.as_float32(value_slots == slots))  # reached
        reward = terminated - 1.0 if her.gc_negative else terminated
        goal, last, discount = storage.take("achieved_goal", value_slots), slots, None
    else:
        own_goal = storage.take("desired_goal", slots)
        goal, relabel = source.relabeller.goals(ledger, slots, copy, own_goal, uniform, warm)
        reward, terminated, last, discount = sample_returns(
            storage,
            ops,
            slots,
            goal,
            relabel,
            next_achieved,
            n_step=her.n_step,
            gamma=her.gamma,
            info_keys=her.info_keys,
            terminal_on_success=terminal_on_success,
            keep_env_terms=her.keep_env_terms,
            goal_rewards=source.rewards,
            threshold=threshold,
        )
    actor_goal = subgoals = None
    if her.actor_goals is not None:  # offline actors' goals (and HIQL's subgoals)
        k = her.subgoal_steps
        mix, law = her.actor_goals, her.actor_future
        drawn = state_goal_slots(ledger, slots, at, mix, law, her.gamma, uniform, k is not None)
        actor = drawn
        if k is not None:
            actor, reach = drawn
            low, target = subgoal_slots(ledger, slots, at, reach, k)
            subgoals = {
                "low_actor_goal": storage.take("achieved_goal", low),
                "high_actor_target": storage.take("achieved_goal", target),
                "high_actor_target_observation": storage.take("observation", target),
            }
        actor_goal = storage.take("achieved_goal", actor)
    achieved = storage.take("achieved_goal", slots) if achieved_goals else None
    batch = Batch(
        observation=storage.take("observation", slots),
        action=storage.take("action", slots),
        reward=reward,
        next_observation=storage.take("next_observation", last),
        goal=goal,
        achieved_goal=achieved,
        next_achieved_goal=next_achieved if achieved_goals else None,
        terminated=terminated,
        discount=discount,
        actor_goal=actor_goal,
        **(subgoals or {}),
    )
    return batch, last
