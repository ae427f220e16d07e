"""Collecting experience: :class:`Collector` acts in the training envs and stores what
they return.

The vector envs run with autoreset disabled: a finished env is reset by mask after its
final transition is stored, so the buffer always receives the true last observation of
an episode. The env's own reward and success are stored with each step (relabelling
changes only the goal's part). What the steps show of the env is said once: step
rewards beyond ``compute_reward`` or outside the Q-target range, and, at its first
success, whether its episodes end on success.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs.failures import EnvFailure
from herkit.runtime.console import say
from herkit.runtime.failures import check_finite_action
from herkit.training.outputs import RunOutputs
from herkit.training.parts import RunParts
from herkit.training.restarts import EnvRestarts
from herkit.training.state import LoopState, Metrics

__all__ = ["Collector"]

Observation = dict[str, np.ndarray]


def _sampled(space: gym.Space[Any]) -> list[gym.Space[Any]]:
    """The spaces whose generators ``space.sample()`` draws from: the leaves of composite
    spaces (Dict, Tuple), in order."""
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        children = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        return [leaf for child in children for leaf in _sampled(child)]
    return [space]


class Collector:
    """Acts in the training envs of ``parts`` and stores their steps (see the module's
    docstring)."""

    def __init__(
        self,
        parts: RunParts,
        state: LoopState,
        metrics: Metrics,
        outputs: RunOutputs,
        restarts: EnvRestarts,
    ) -> None:
        self.parts = parts
        self.state = state
        self.metrics = metrics
        self.outputs = outputs
        self.restarts = restarts
        self.terminal_unknown = parts.buffer.terminal_on_success is None
        # the env's reward terms beyond compute_reward, said once (by the probe or here)
        self.terms_reported = parts.conventions.step_reward_extra is not None
        self.range_reported = False

    def reset(self) -> Observation:
        """Reset every training env (with a seed new to the run); the observations."""
        try:
            obs, _ = self.parts.envs.reset(seed=self._reset_seed())
        except EnvFailure as failure:
            return self.restart(failure)
        return obs

    def act(self, obs: Observation) -> np.ndarray:
        """Send the envs the actions for ``obs`` (random for the first ``random_steps``,
        then the exploring policy's); they step while the caller goes on. Returns the
        actions."""
        parts, state = self.parts, self.state
        if state.env_steps < parts.config.random_steps:
            action = parts.envs.action_space.sample()
        else:
            action = parts.agent.act(obs["observation"], obs["desired_goal"], deterministic=False)
            check_finite_action(action, state.updates)
        parts.envs.step_async(action)
        return action

    def store(self, obs: Observation, action: np.ndarray) -> tuple[Observation, np.ndarray]:
        """Wait for the envs' step on ``action`` from ``obs``, store it (buffer,
        normalisers, episode records) and count its env steps; returns the next
        observations and which envs ended an episode (:meth:`reset_ended` resets them)."""
        parts, state = self.parts, self.state
        next_obs, reward, terminated, truncated, info = parts.envs.step_wait()
        success = parts.success_of(info, next_obs)
        parts.buffer.add(
            obs,
            action,
            next_obs,
            terminated,
            truncated,
            info,
            reward=reward,
            success=None if success is None else success > 0,
        )
        parts.agent.update_normalizer(obs["observation"], obs["desired_goal"])
        done: np.ndarray = terminated | truncated
        state.episodes += int(done.sum())
        env_steps = state.env_steps + parts.steps_per_iteration  # once this step counts
        self.outputs.records.episodes.step(env_steps, reward, done, success, next_obs)
        if success is not None:
            self.metrics.episode_successes.extend(success[done].tolist())
        self._report_rewards()  # what the stored steps show of the env (see the module)
        if self.terminal_unknown and parts.buffer.terminal_on_success is not None:
            # the buffer saw the env's first success, which shows whether its episodes end on
            # success (the agent follows the buffer): said, and written into config.json
            self.terminal_unknown, ending = False, parts.buffer.ending
            if parts.context.is_main:
                say(
                    f"{parts.config.env_id}: episodes end on success: {ending.ends} "
                    f"({ending.source}, at {state.env_steps:,} env steps)"
                )
                self.outputs.write_config()
        state.env_steps = env_steps
        return next_obs, done

    def reset_ended(self, next_obs: Observation, done: np.ndarray) -> Observation:
        """The observations to act on next: ``next_obs``, where the envs whose episode
        ended (``done``) are reset first."""
        if not done.any():
            return next_obs
        fresh, _ = self.parts.envs.reset(options={"reset_mask": done})
        return fresh

    def restart(self, failure: EnvFailure) -> Observation:
        """Rebuild the failed training envs, end every episode in progress, and reset all
        envs; returns the observations to act on. Raises the failure when no restart is
        left (:class:`~herkit.training.restarts.EnvRestarts`)."""
        self.restarts.take(failure)
        self.parts.buffer.end_episodes()
        self.outputs.records.episodes.abandon()

        def rebuild(failed: EnvFailure) -> Observation:
            self.parts.envs.restart(failed.envs)
            obs, _ = self.parts.envs.reset(seed=self._reset_seed())
            return obs

        return self.restarts.retry(failure, rebuild)

    def random_actions_state(self) -> list[Mapping[str, Any]]:
        """Where the stream of random actions (the first ``random_steps``) stands: the state
        of every generator the training envs' action space samples with (a checkpoint
        keeps it, so a resumed run draws the actions the run would have drawn)."""
        return [
            space.np_random.bit_generator.state for space in _sampled(self.parts.envs.action_space)
        ]

    def set_random_actions_state(self, states: list[Mapping[str, Any]]) -> None:
        """Go on with the stream of :meth:`random_actions_state`."""
        spaces = _sampled(self.parts.envs.action_space)
        if len(states) != len(spaces):
            raise ValueError(
                f"the checkpoint holds {len(states)} random-action generators, the action "
                f"space samples with {len(spaces)}"
            )
        for space, state in zip(spaces, states, strict=True):
            space.np_random.bit_generator.state = state

    def _reset_seed(self) -> int:
        state = self.state
        return self.parts.seeds.training_reset(state.resets, state.env_restarts)

    def _report_rewards(self) -> None:
        """Warn once where the env's step rewards differ from compute_reward, and once
        where they leave the range that Q targets are clipped to."""
        parts = self.parts
        main = parts.context.is_main
        if not self.terms_reported and parts.buffer.audit.differing:
            self.terms_reported = True
            if main:
                say(f"warning: {parts.buffer.audit.describe()}")
                self.outputs.write_config()
        audit, bounds = parts.buffer.audit, parts.config.reward_range
        if self.range_reported or bounds is None:
            return
        low, high = bounds
        if not (audit.reward_low >= low - 1e-6 and audit.reward_high <= high + 1e-6):
            self.range_reported = True
            if main:
                say(
                    f"warning: the env gave step rewards from {audit.reward_low:g} to "
                    f"{audit.reward_high:g}, outside the range [{low:g}, {high:g}] that Q targets "
                    "are clipped to: pass --reward-range LOW HIGH covering every reward the env "
                    "can give"
                )
