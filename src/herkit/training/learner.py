"""The learning concern of the training loop: :class:`Learner` owes gradient updates as
env steps are stored and runs them when the loop says so.

``updates_per_step`` updates are owed per env step stored once updates may start (after
the phase's warm-up, :attr:`~herkit.training.phase.Phase.warmup_steps`: none after gradient
steps on a dataset; and on every rank once every rank's buffer can be sampled); while a
run trains on its dataset alone, one gradient step is owed per iteration of the loop
(:meth:`Learner.owe_gradient_step`). :meth:`learn` runs every update owed: sample a
batch, update the agent, refresh the priorities. Where
updates are captured as CUDA graphs and the buffer lives on the GPU, the batch is drawn
there within the captured update (:class:`~herkit.buffer.device_sampler.DeviceSampler`):
sampling and the update are one graph replay, and prioritized replay's priorities stay
there too until :meth:`~Learner.settle` hands them to the buffer before a checkpoint.

No update waits on the host: the agent keeps its metrics on its device, and
:meth:`~Learner.read_metrics` reads them in one transfer once per row of ``updates.csv``
(every ``log_updates_every`` updates) and before each evaluation and checkpoint, checks
them (a NaN or an infinity stops the run, naming the update) and records them.
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents import Agent
from herkit.buffer.device_sampler import DeviceSampler, unsupported
from herkit.buffer.her import HerReplayBuffer
from herkit.rundir.records import RunRecords
from herkit.runtime.distributed import Context
from herkit.runtime.failures import check_finite_metrics
from herkit.training.parts import RunParts
from herkit.training.phase import Phase
from herkit.training.state import LoopState, Metrics

__all__ = ["Learner", "draws_on_device"]


def draws_on_device(agent: Agent, buffer: HerReplayBuffer) -> bool:
    """Whether a run draws its batches on the buffer's device within each update: where
    updates are captured (a host sample would run outside the graph) and the buffer can."""
    return "captured" in agent.update_mode and unsupported(buffer) is None


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
    """Env steps stored before updates start (:attr:`~herkit.training.phase.Phase.warmup_steps`)."""
    normalize_relabelled_goals: bool
    log_updates_every: int
    can_update: bool = False
    """Whether updates may start (warm-up over and every rank's buffer non-empty)."""
    sampler: DeviceSampler | None = None
    """Draws batches on the buffer's device within captured updates (None: on the host)."""

    def __post_init__(self) -> None:
        self.agent.log_updates()
        if draws_on_device(self.agent, self.buffer):
            self.sampler = DeviceSampler(self.buffer)
            self.agent.attach_sampler(self.sampler.draw, self.batch_size, self.sampler.reprioritize)

    def owe_gradient_step(self) -> None:
        """Owe one gradient step on the buffer as it is (a dataset, before any env step)."""
        self.state.owed_updates += 1

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
            count_goals = self.normalize_relabelled_goals
            if self.sampler is not None:  # drawn on the device within the update
                self.agent.update_drawn(self.sampler.prepare(), count_goals=count_goals)
            else:
                batch = self.buffer.sample(self.batch_size)
                self.agent.update(batch, count_goals=count_goals)
                if self.buffer.settings.prioritized:
                    self.buffer.update_priorities(batch.indices, self.agent.priorities)
            state.updates += 1
            state.owed_updates -= 1
            if state.updates % self.log_updates_every == 0:
                self.read_metrics()

    def settle(self) -> None:
        """Bring to the host what the updates keep on the device, before a checkpoint:
        the metrics (:meth:`read_metrics`) and the priorities of batches drawn there."""
        self.read_metrics()
        if self.sampler is not None:
            self.sampler.priorities_to_host()

    def read_metrics(self) -> None:
        """Read the metrics of the updates since the last read from the agent (one
        transfer), check that they are finite and record them."""
        rows = self.agent.update_metrics()
        first = self.state.updates - len(rows) + 1
        for update, metrics in enumerate(rows, start=first):
            check_finite_metrics(metrics, update)
            self.metrics.losses.add(metrics)
            self.records.updated(metrics, update, self.state.env_steps)

    @classmethod
    def of_run(
        cls, parts: RunParts, phase: Phase, metrics: Metrics, records: RunRecords
    ) -> Learner:
        """The learner of the run of ``parts`` in ``phase`` (its counters), with its metrics
        and records."""
        config = parts.config
        return cls(
            context=parts.context,
            agent=parts.agent,
            buffer=parts.buffer,
            state=phase.state,
            metrics=metrics,
            records=records,
            batch_size=config.agent_config().batch_size,
            updates_per_iteration=config.n_envs * config.updates_per_step,
            warmup_steps=phase.warmup_steps,
            normalize_relabelled_goals=config.normalize_relabelled_goals,
            log_updates_every=config.log_updates_every,
        )
