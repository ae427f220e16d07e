"""How an agent's updates run: :class:`UpdateSteps`, the part of every agent
(:class:`herkit.agents.base.GoalAgent`) between a batch and the algorithm's gradient step.

An update takes a batch (:meth:`UpdateSteps.update`), or draws one within the step from a
sampler that lives on the device (:meth:`UpdateSteps.update_drawn`, e.g.
:class:`herkit.buffer.device_sampler.DeviceSampler`); :meth:`UpdateSteps.step` normalises
it, runs the algorithm's ``_update`` (a function of tensors: a batch in, its metrics and
``|TD error|`` out) under the agent's precision and writes the metrics to the agent's
:class:`~herkit.agents.update_log.UpdateLog`: device work only, run in the update mode of
:mod:`herkit.agents.runners` (eager, compiled, captured as a CUDA graph; the wrapper lives
there alone). A drawn update captured as one graph holds the whole update: sampling,
critic and actor steps, targets. The step changes no Python state (a replay runs none);
what the host must know of it, it learns in :meth:`UpdateSteps._finish`, after the step.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from herkit.agents.inputs import AgentInputs, TorchBatch
from herkit.agents.normalizer import Normalizer
from herkit.agents.runners import StepRunner, check_update_mode
from herkit.agents.update_log import UpdateLog
from herkit.agents.updates import ValueScale
from herkit.buffer.batch import Batch
from herkit.buffer.device_sampler import DeviceBatch, uniform_of
from herkit.config.agents import UpdateMode
from herkit.runtime.distributed import Context

__all__ = ["Draw", "Reprioritize", "UpdateSteps"]

Draw = Callable[..., Any]
"""``draw(batch_size, uniform, **flags)``: a batch on the device, device work only, with
the fields of :class:`herkit.buffer.device_sampler.DeviceBatch` (by priority: its ``weights``
and ``slots`` too)."""

Reprioritize = Callable[[torch.Tensor, torch.Tensor], None]
"""``reprioritize(leaves, td_abs)``: give the drawn leaves their new priorities on the
device, device work only."""

StepOutput = tuple[torch.Tensor, torch.Tensor, tuple[str, ...]]


class UpdateSteps:
    """The updates of an agent (see the module's docstring); :meth:`_init_steps` sets them
    up once the agent's generator, device, inputs and log exist."""

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

    def _init_steps(self) -> None:
        self.update_mode: UpdateMode = "eager"
        """How updates run: ``eager``, ``compiled``, ``captured`` or ``compiled-captured``."""
        self._keep_log = False
        self._draw: Draw | None = None
        self._draw_size = 0
        self._reprioritize: Reprioritize | None = None
        self._column = {name: i for i, name in enumerate(self.METRICS)}
        self._uniform = uniform_of(self.generator)  # a draw's random numbers
        self._zero = torch.zeros((), device=self.device)
        self._runners = self._make_runners()

    def _actor_step(self) -> bool:
        """Whether the next update also steps the actor (TD3 delays it)."""
        return True

    if TYPE_CHECKING:  # given by GoalAgent and each algorithm

        def _autocast(self) -> AbstractContextManager[Any]: ...

        def _update(
            self, batch: TorchBatch, actor_step: bool
        ) -> tuple[dict[str, torch.Tensor], torch.Tensor]: ...

        def _optimizers(self) -> dict[str, torch.optim.Optimizer]: ...

        def update_goal_normalizer(self, goal: Any) -> None: ...

    # -- entry points -------------------------------------------------------------------

    def update(self, batch: Batch, count_goals: bool = False) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch`` plus the polyak target update; returns its metrics.

        The metrics are 0-dim tensors on the agent's device: nothing is read to the host
        (``float(metrics["critic_loss"])`` reads one). :attr:`priorities` becomes the
        ``|TD error|`` of each sample (the largest over twin critics, as LAP does), a
        device tensor. ``count_goals`` first feeds the batch's goals (relabelled ones
        included) to the goal normaliser, where they lie. With :meth:`log_updates` on,
        the metrics are also kept for :meth:`update_metrics`.
        """
        actor_step = self._actor_step()
        count_goals &= self.inputs.normalize
        if count_goals and (not isinstance(batch.goal, torch.Tensor) or self.dist.active):
            self.update_goal_normalizer(batch.goal)  # summed on the host (over ranks)
            count_goals = False
        if self.update_mode == "eager":
            if count_goals:
                self.goal_normalizer.add_tensor(batch.goal)
            prepared = self.inputs.batch(batch, self.values.scale)
            output = self.step(actor_step=actor_step, count_goals=False, prepared=prepared)
        else:
            self.inputs.sync()
            raw = self.inputs.raw(batch, self.ACTION_DTYPE)
            output = self._runners["batch"](raw, actor_step=actor_step, count_goals=count_goals)
        return self._finish(output, count_goals)

    def update_drawn(
        self, flags: dict[str, Any], count_goals: bool = False
    ) -> dict[str, torch.Tensor]:
        """:meth:`update` on a batch drawn within the update by the attached sampler, with
        ``flags`` (what its ``prepare`` returned): captured, the whole update is one graph."""
        if self._draw is None:
            raise ValueError("update_drawn needs a sampler: attach_sampler(draw, batch_size)")
        if self.dist.active:
            raise ValueError("update_drawn counts goals on the device: one process only")
        self.inputs.sync()
        actor_step = self._actor_step()
        count_goals &= self.inputs.normalize
        output = self._runners["drawn"]((), actor_step=actor_step, count_goals=count_goals, **flags)
        return self._finish(output, count_goals)

    def attach_sampler(
        self, draw: Draw, batch_size: int, reprioritize: Reprioritize | None = None
    ) -> None:
        """Let :meth:`update_drawn` draw its batches of ``batch_size`` with ``draw(batch_size,
        uniform, **flags)`` (e.g. :meth:`herkit.buffer.device_sampler.DeviceSampler.draw`),
        with random numbers from the agent's torch generator; where it draws by priority,
        ``reprioritize(leaves, td_abs)`` sets the drawn leaves' priorities after each update,
        on the device."""
        self._draw, self._draw_size, self._reprioritize = draw, batch_size, reprioritize
        self._runners["drawn"].reset()

    def set_update_mode(self, mode: str) -> None:
        """Run updates in ``mode`` (:mod:`herkit.agents.runners`); ValueError for a mode
        this device cannot run."""
        check_update_mode(mode, self.device)
        if mode != self.update_mode:
            self.update_mode = mode  # type: ignore[assignment]
            self._runners = self._make_runners()

    def log_updates(self, keep: bool = True) -> None:
        """Keep every update's metrics (on the device) for :meth:`update_metrics`."""
        self._keep_log = keep
        self.log.clear()

    def update_metrics(self) -> list[dict[str, float]]:
        """The metrics of every update since the last call (one dict each, oldest first),
        read from the device in one transfer; empty unless :meth:`log_updates` is on."""
        return self.log.take()

    @property
    def captures(self) -> bool:
        """Whether updates are replayed from CUDA graphs."""
        return self._runners["batch"].captures

    def capture_again(self) -> None:
        """Capture anew: something a captured step holds as a constant has changed (the
        precision, the reward scale, a loaded optimiser state)."""
        for runner in self._runners.values():
            runner.reset()

    # -- the step: device work only -------------------------------------------------------

    def step(
        self,
        *raw: torch.Tensor | None,
        actor_step: bool,
        count_goals: bool,
        prepared: TorchBatch | None = None,
        **flags: Any,
    ) -> StepOutput:
        """One update, the function that is compiled or captured: a batch drawn by the
        attached sampler (no ``raw``), or a :class:`DeviceBatch`'s tensors, normalised here
        (an eager update passes its batch ``prepared``); the algorithm's ``_update``; its
        metrics as one vector (every name of ``METRICS``, 0 where absent) written to the
        log. Returns the vector, the ``|TD error|`` and the names present."""
        drawn = None
        if prepared is None:
            if not raw:  # drawn within the step
                assert self._draw is not None
                drawn = self._draw(self._draw_size, self._uniform, **flags)
            batch = drawn if drawn is not None else DeviceBatch(*raw)  # type: ignore[arg-type]
            if count_goals:
                self.goal_normalizer.add_tensor(batch.goal)
            prepared = self.inputs.from_raw(batch, self.values.scale)
        with self._autocast():
            metrics, td_abs = self._update(prepared, actor_step)
        td_abs = td_abs.detach()
        metrics["td_abs_mean"] = td_abs.float().mean()
        values = torch.stack(
            [
                metrics[name].detach().float() if name in metrics else self._zero
                for name in self.METRICS
            ]
        )
        self.log.write(values)
        if drawn is not None and self._reprioritize is not None:
            self._reprioritize(drawn.slots, td_abs)
        return values, td_abs, tuple(name for name in self.METRICS if name in metrics)

    def _finish(self, output: StepOutput, counted_goals: bool) -> dict[str, torch.Tensor]:
        """After a step, on the host: what the step changed that Python must know (it may
        have been replayed, running no Python), and the metrics by name."""
        if counted_goals:
            self.goal_normalizer.added_on_device()
        values, td_abs, present = output
        if self.captures:  # the graph's outputs: overwritten by its next replay
            values = values.clone()
        self.updates += 1
        self.priorities = td_abs
        if self._keep_log:
            self.log.note(present)
        return {name: values[self._column[name]] for name in present}

    def _make_runners(self) -> dict[str, StepRunner]:
        """The runners of the step: on a batch given, and drawn within the step."""
        mode, prepare = self.update_mode, self._make_capturable
        return {
            name: StepRunner(self.step, mode, self.generator, prepare=prepare)
            for name in ("batch", "drawn")
        }

    def _make_capturable(self) -> None:
        """Let the optimisers step inside a CUDA graph (their step counts on the device)."""
        for optimizer in self._optimizers().values():
            for group in optimizer.param_groups:
                group["capturable"] = True
