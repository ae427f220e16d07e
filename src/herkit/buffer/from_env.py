"""The arguments of :meth:`HerReplayBuffer.from_env <herkit.buffer.her.HerReplayBuffer.from_env>`:
what a GoalEnv says of itself (:mod:`~herkit.buffer.goal_env`) and its conventions
(:mod:`~herkit.buffer.conventions`), never acting in the env given."""

from __future__ import annotations

from typing import Any

from herkit.buffer.conventions import GoalConventions, conventions_of
from herkit.buffer.ending import Ending
from herkit.buffer.goal_env import RewardFn, compute_reward_of, settings_of
from herkit.buffer.settings import HerSettings

__all__ = ["arguments_from_env"]


def arguments_from_env(
    env: Any,
    n_envs: int | None,
    reward_fn: RewardFn | None,
    conventions: GoalConventions | None,
    probe: bool,
    given: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, str], GoalConventions]:
    """The constructor's keyword arguments for ``env`` (``given`` ones kept), where each
    setting came from, and the env's conventions (see ``from_env``)."""
    arguments = settings_of(env)
    sources = {"reward_fn": "given" if reward_fn is not None else "the env's compute_reward"}
    if n_envs is not None:
        arguments["n_envs"] = n_envs
    arguments["reward_fn"] = compute_reward_of(env) if reward_fn is None else reward_fn
    her = HerSettings.of(
        given.get("settings"), {name: given[name] for name in HerSettings.names() if name in given}
    )
    if conventions is None:
        conventions = conventions_of(
            env, arguments["reward_fn"], probe=probe, info_keys=her.info_keys
        )
    sources.update(conventions.sources)
    ending = Ending.given(her.terminal_on_success).otherwise(conventions.ending)
    sources["terminal_on_success"] = ending.source
    return arguments | given | {"terminal_on_success": ending.ends}, sources, conventions
