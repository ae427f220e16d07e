"""How an agent's updates run: :class:`Stepper`, the part of an agent (:class:`SteppedAgent`)
between a batch and the algorithm's gradient step.

An update takes a batch (:meth:`Stepper.update`), or draws one within the step from a
sampler that lives on the device (:meth:`Stepper.update_drawn`, e.g.
:class:`herkit.buffer.device_sampler.DeviceSampler`), normalises it, runs the algorithm's
``_update`` under the agent's precision, and writes its metrics to the agent's
:class:`~herkit.agents.update_log.UpdateLog`: device work only, in the update mode of
:mod:`herkit.agents.runners` (eager, compiled, captured as a CUDA graph). A drawn update
captured as one graph holds the whole update: sampling, critic and actor steps, targets.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from herkit.agents.inputs import AgentInputs, RawBatch, TorchBatch
from herkit.agents.normalizer import Normalizer
from herkit.agents.runners import StepRunner, check_update_mode
from herkit.agents.update_log import UpdateLog
from herkit.agents.updates import ValueScale
from herkit.buffer.batch import Batch
from herkit.buffer.device_sampler import uniform_of
from herkit.config.agents import UpdateMode
from herkit.runtime.distributed import Context

__all__ = ["Draw", "Reprioritize", "SteppedAgent", "Stepper"]

Draw = Callable[..., Any]
"""``draw(batch_size, uniform, **flags)``: a batch on the device, device work only, with
the fields of :class:`herkit.buffer.device_sampler.Drawn` (by priority: its ``weights``
and ``slots`` too)."""

Reprioritize = Callable[[torch.Tensor, torch.Tensor], None]
"""``reprioritize(leaves, td_abs)``: give the drawn leaves their new priorities on the
device, device work only."""

StepOutput = tuple[torch.Tensor, torch.Tensor, tuple[str, ...]]


class SteppedAgent(Protocol):
    """What a :class:`Stepper` uses of its agent (:class:`herkit.agents.base.GoalAgent`)."""

    METRICS: ClassVar[tuple[str, ...]]
    ACTION_DTYPE: ClassVar[torch.dtype]
    device: torch.device
    generator: torch.Generator
    dist: Context
    goal_normalizer: Normalizer
    inputs: AgentInputs
    values: ValueScale
    log: UpdateLog
    updates: int
    priorities: torch.Tensor

    def _actor_step(self) -> bool: ...

    def _autocast(self) -> AbstractContextManager[Any]: ...

    def _update(
        self, batch: TorchBatch, actor_step: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]: ...

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]: ...

    def update_goal_normalizer(self, goal: np.ndarray | torch.Tensor) -> None: ...


class Stepper:
    """Runs the updates of ``agent`` (see the module's docstring)."""

    def __init__(self, agent: SteppedAgent) -> None:
        self.agent = agent
        self.mode: UpdateMode = "eager"
        self.keep_log = False
        self.draw: Draw | None = None
        self.draw_size = 0
        self.reprioritize: Reprioritize | None = None
        self._column = {name: i for i, name in enumerate(agent.METRICS)}
        self._uniform = uniform_of(agent.generator)  # a draw's random numbers
        self._zero = torch.zeros((), device=agent.device)
        self._runners = self._make_runners()

    def _make_runners(self) -> dict[str, StepRunner]:
        agent = self.agent
        return {
            name: StepRunner(step, self.mode, agent.generator, prepare=self._make_capturable)
            for name, step in (("batch", self._raw_step), ("drawn", self._drawn_step))
        }

    @property
    def captures(self) -> bool:
        """Whether updates are replayed from CUDA graphs."""
        return self._runners["batch"].captures

    def set_mode(self, mode: str) -> None:
        """Run updates in ``mode`` (ValueError for a mode this device cannot run)."""
        check_update_mode(mode, self.agent.device)
        if mode != self.mode:
            self.mode = mode  # type: ignore[assignment]
            self._runners = self._make_runners()

    def reset(self) -> None:
        """Capture again: something a captured step holds as a constant has changed."""
        for runner in self._runners.values():
            runner.reset()

    def attach(self, draw: Draw, batch_size: int, reprioritize: Reprioritize | None = None) -> None:
        """Let :meth:`update_drawn` draw batches of ``batch_size`` with ``draw`` (by
        priority: then ``reprioritize`` after each update)."""
        self.draw, self.draw_size, self.reprioritize = draw, batch_size, reprioritize
        self._runners["drawn"].reset()

    # -- entry points -------------------------------------------------------------------

    def update(self, batch: Batch, count_goals: bool) -> dict[str, torch.Tensor]:
        """One update on ``batch`` (see :meth:`GoalAgent.update`)."""
        agent = self.agent
        actor_step = agent._actor_step()
        if count_goals and (not isinstance(batch.goal, torch.Tensor) or agent.dist.active):
            agent.update_goal_normalizer(batch.goal)  # summed on the host (over ranks)
            count_goals = False
        if self.mode == "eager":
            if count_goals:
                agent.goal_normalizer.add_tensor(batch.goal)
            output = self._train_step(agent.inputs.batch(batch, agent.values.scale), actor_step)
        else:
            agent.inputs.sync()
            raw = agent.inputs.raw(batch, agent.ACTION_DTYPE)
            output = self._runners["batch"](raw, actor_step=actor_step, count_goals=count_goals)
        return self._finish(output, count_goals)

    def update_drawn(self, flags: dict[str, Any], count_goals: bool) -> dict[str, torch.Tensor]:
        """One update on a batch drawn within the step (see :meth:`GoalAgent.update_drawn`)."""
        agent = self.agent
        if self.draw is None:
            raise ValueError("update_drawn needs a sampler: attach_sampler(draw, batch_size)")
        if agent.dist.active:
            raise ValueError("update_drawn counts goals on the device: one process only")
        agent.inputs.sync()
        actor_step = agent._actor_step()
        output = self._runners["drawn"]((), actor_step=actor_step, count_goals=count_goals, **flags)
        return self._finish(output, count_goals)

    def _finish(self, output: StepOutput, counted_goals: bool) -> dict[str, torch.Tensor]:
        """After a step, on the host: what the step changed that Python must know (it may
        have been replayed, running no Python), and the metrics by name."""
        agent = self.agent
        if counted_goals:
            agent.goal_normalizer.added_on_device()
        values, td_abs, present = output
        if self.captures:  # the graph's outputs: overwritten by its next replay
            values = values.clone()
        agent.updates += 1
        agent.priorities = td_abs
        if self.keep_log:
            agent.log.note(present)
        return {name: values[self._column[name]] for name in present}

    # -- steps: device work only --------------------------------------------------------

    def _train_step(self, batch: TorchBatch, actor_step: bool) -> StepOutput:
        """The algorithm's ``_update`` with its metrics as one vector (every name of
        ``METRICS``, 0 where absent) written to the agent's log. Returns the vector, the
        ``|TD error|`` and the names present."""
        agent = self.agent
        with agent._autocast():
            metrics, td_abs = agent._update(batch, actor_step)
        td_abs = td_abs.detach()
        metrics["td_abs_mean"] = td_abs.float().mean()
        values = torch.stack([
            metrics[name].detach().float() if name in metrics else self._zero
            for name in agent.METRICS
        ])  # fmt: skip
        agent.log.write(values)
        present = tuple(name for name in agent.METRICS if name in metrics)
        return values, td_abs, present

    def _raw_step(
        self, *raw: torch.Tensor | None, actor_step: bool, count_goals: bool
    ) -> StepOutput:
        """The whole update from a :class:`RawBatch`'s tensors, normalising included: the
        step that is compiled or captured."""
        agent = self.agent
        batch = RawBatch(*raw)  # type: ignore[arg-type]
        if count_goals:
            agent.goal_normalizer.add_tensor(batch.goal)
        return self._train_step(agent.inputs.from_raw(batch, agent.values.scale), actor_step)

    def _drawn_step(self, *, actor_step: bool, count_goals: bool, **flags: Any) -> StepOutput:
        """Draw a batch, then :meth:`_raw_step`: with a sampler on the device, the whole
        update in one step."""
        assert self.draw is not None
        drawn = self.draw(self.draw_size, self._uniform, **flags)
        output = self._raw_step(
            drawn.observation, drawn.next_observation, drawn.goal, drawn.action, drawn.reward,
            drawn.terminated, None, drawn.weights, actor_step=actor_step, count_goals=count_goals,
        )  # fmt: skip
        if self.reprioritize is not None:
            self.reprioritize(drawn.slots, output[1])
        return output

    def _make_capturable(self) -> None:
        """Let the optimisers step inside a CUDA graph (their step counts on the device)."""
        for optimizer in self.agent._optimizers().values():
            for group in optimizer.param_groups:
                group["capturable"] = True
