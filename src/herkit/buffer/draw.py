"""One draw: a batch made of the transitions picked, by every rule of the buffer, on the
host or on a device (:func:`draw_batch`).

:meth:`herkit.HerReplayBuffer.sample` picks its transitions on the host (uniformly, by
priority, or in store mode with one of each transition's stored goals) and
:meth:`herkit.buffer.device_sampler.DeviceSampler.draw` picks them on a device; both then
call :func:`draw_batch` with their own bookkeeping (a :class:`~herkit.buffer.storage.Ledger`
in numpy or its copy in tensors) and their own uniform numbers, so that every rule is one
code: the goals (a strategy, a goal mix, or the offline value goals of
:mod:`herkit.buffer.offline_goals`), the actor goals, the rewards and terminal flags with the
env's own terms (:mod:`herkit.buffer.returns`). Given the same numbers, the host and a device
make the same batch.

What a device draw cannot do is refused by name, setting by setting: :data:`ON_A_DEVICE`
says of every field of :class:`~herkit.buffer.settings.HerSettings` whether a device
serves it or why not (:func:`unsupported`), and a test holds it to the record's fields.
"""

from __future__ import annotations

from typing import Any, Protocol

from herkit.buffer.env_terms import GoalRewards
from herkit.buffer.offline_goals import actor_samples, value_samples
from herkit.buffer.relabel import Relabeller, Uniform
from herkit.buffer.returns import sample_returns
from herkit.buffer.settings import HerSettings
from herkit.buffer.storage import EpisodeStorage, Ledger, positions

__all__ = ["ON_A_DEVICE", "DrawSource", "draw_batch", "unsupported"]

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
) -> dict[str, Any]:
    """The batch of the transitions ``slots`` (in store mode ``copy`` says which of each
    one's goals; None otherwise) with the random numbers of ``uniform`` and the bookkeeping
    ``ledger``: its ``observation``, ``action``, ``reward``, ``next_observation``, ``goal``,
    ``terminated``, ``discount`` and ``actor_goal`` (None where there are none), ``last``
    (the slots whose next observation it holds: n steps on with n-step returns), and with
    ``achieved_goals`` its ``achieved_goal`` and ``next_achieved_goal``.

    ``terminal_on_success`` and ``warm`` (the goal mix's warm-up is over) are the flags the
    rules follow, ``threshold`` the reward from which a goal counts as reached (None: the
    reward of a goal with itself)."""
    storage, her, ops = source.storage, source.settings, source.storage.ops
    offline = her.value_goals is not None or her.actor_goals is not None
    at = positions(ledger, slots) if offline else None
    next_achieved = None
    if achieved_goals or her.value_goals is None:
        next_achieved = storage.take("next_achieved_goal", slots)
    if her.value_goals is not None:  # offline GCRL's goals and rewards
        goal, reward, terminated = value_samples(storage, ledger, slots, at, her, uniform)
        last, discount = slots, None
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
    batch = {
        "observation": storage.take("observation", slots),
        "action": storage.take("action", slots),
        "reward": reward,
        "next_observation": storage.take("next_observation", last),
        "goal": goal,
        "terminated": terminated,
        "discount": discount,
        "actor_goal": actor_samples(storage, ledger, slots, at, her, uniform),
        "last": last,
    }
    if achieved_goals:
        batch["achieved_goal"] = storage.take("achieved_goal", slots)
        batch["next_achieved_goal"] = next_achieved
    return batch
