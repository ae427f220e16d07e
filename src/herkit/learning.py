"""The learning concern of the training loop: :class:`Learner` owes gradient updates as
env steps are stored and runs them when the loop says so.

``updates_per_step`` updates are owed per env step stored once updates may start (after
``warmup_steps``, and on every rank once every rank's buffer can be sampled); :meth:`learn`
runs every update owed: sample a batch, update the agent, record its metrics, refresh the
priorities. The loop calls it in one place (:mod:`herkit.train`).
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents import Agent
from herkit.buffer.her import HerReplayBuffer
from herkit.config import TrainConfig
from herkit.distributed import Context
from herkit.failures import check_finite_metrics
from herkit.loop_state import LoopState, Metrics
from herkit.records import RunRecords

__all__ = ["Learner"]


@dataclass(kw_only=True)
class Learner:
    """Owes and runs the gradient updates of a run (see the module's docstring)."""

    context: Context
    agent: Agent
    buffer: HerReplayBuffer
    state: LoopState
    metrics: Metrics
    records: RunRecords
    batch_size: int
    updates_per_iteration: float
    """Updates owed per loop iteration: ``updates_per_step`` for each env of this rank."""
    warmup_steps: int
    normalize_relabelled_goals: bool
    prioritized: bool
    can_update: bool = False
    """Whether updates may start (warm-up over and every rank's buffer non-empty)."""

    def owe_updates(self) -> None:
        """Owe ``updates_per_step`` updates per env step of this iteration, once updates
        may start (every rank must agree to start: store-time relabelling holds nothing
        until an episode has ended, and ranks end episodes at different steps)."""
        state = self.state
        if not self.can_update and state.env_steps >= self.warmup_steps:
            self.can_update = self.context.all_true(len(self.buffer) > 0)
        if self.can_update:
            state.owed_updates += self.updates_per_iteration

    def learn(self) -> None:
        """The gradient updates owed."""
        state = self.state
        while state.owed_updates >= 1:
            batch = self.buffer.sample(self.batch_size)
            if self.normalize_relabelled_goals:
                self.agent.update_goal_normalizer(batch.goal)
            metrics = self.agent.update(batch)
            check_finite_metrics(metrics, state.updates + 1)
            self.metrics.add(metrics)
            if self.prioritized:
                self.buffer.update_priorities(batch.indices, self.agent.priorities)
            state.updates += 1
            self.records.updated(metrics, state.updates, state.env_steps)
            state.owed_updates -= 1

    @classmethod
    def of_run(
        cls,
        config: TrainConfig,
        *,
        context: Context,
        agent: Agent,
        buffer: HerReplayBuffer,
        state: LoopState,
        metrics: Metrics,
        records: RunRecords,
    ) -> Learner:
        """The learner of a run with ``config``, its agent, buffer, counters and records."""
        return cls(
            context=context, agent=agent, buffer=buffer, state=state, metrics=metrics,
            records=records, batch_size=config.agent_config().batch_size,
            updates_per_iteration=config.n_envs * config.updates_per_step,
            warmup_steps=config.warmup_steps,
            normalize_relabelled_goals=config.normalize_relabelled_goals,
            prioritized=config.prioritized,
        )  # fmt: skip
