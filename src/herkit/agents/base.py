""":class:`GoalAgent`, the shared part of every agent, and what the training loop,
evaluation and a loaded policy ask of an agent (:data:`Agent`).

:class:`GoalAgent` owns what does not depend on the algorithm: the observation and goal
normalisers and the network inputs (:mod:`herkit.agents.inputs`), the random generators
(a numpy one for exploration, a torch one for sampling in updates, both seeded from
``seed``; the global RNGs are never used), TD targets clipped to the return range,
optimiser steps, polyak averaging and the ``state_dict`` plumbing. The helpers an update
step uses (:class:`ValueScale`, :func:`return_bounds`, :func:`adam`, :func:`frozen`,
:func:`weighted_mean`) live in :mod:`herkit.agents.loss_parts` and are re-exported here.

It owns the update too, from a :class:`~herkit.buffer.batch.Batch` to the algorithm's
``_update`` and back: :meth:`GoalAgent.update` takes a batch (or
:meth:`GoalAgent.update_drawn` draws one within the step from a sampler on the device,
e.g. :class:`herkit.buffer.device_sampler.DeviceSampler`) and runs :meth:`GoalAgent.step`,
a function of the networks, optimisers and batch (the batch prepared by
:meth:`herkit.agents.inputs.AgentInputs.prepare`, the algorithm's ``_update`` under the
agent's precision, the metrics written to its :class:`~herkit.agents.update_log.UpdateLog`)
that runs eagerly as it is, or compiled or captured as a CUDA graph by a
:class:`~herkit.agents.updates.StepRunner` (:meth:`GoalAgent.set_update_mode`). The step
changes no Python state (a CUDA graph's replay runs none); what the host must know of
it, it learns after the step. An update never waits on the host: its metrics come back
as device tensors (and, with :meth:`GoalAgent.log_updates`, are kept on the device for
:meth:`GoalAgent.update_metrics`, read once per log row), its ``|TD error|`` stays a
device tensor, and relabelled goals are counted on the device.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.inputs import AgentInputs, TorchBatch
from herkit.agents.loss_parts import ValueScale, adam, frozen, return_bounds, weighted_mean
from herkit.agents.networks import MLP
from herkit.agents.normalizer import Normalizer
from herkit.agents.update_log import UpdateLog
from herkit.agents.updates import (
    Draw,
    Reprioritize,
    StepOutput,
    StepRunner,
    UpdateMode,
    check_update_mode,
)
from herkit.buffer.batch import Batch
from herkit.buffer.device_sampler import uniform_of
from herkit.agents.settings import OffPolicyConfig
from herkit.runtime.distributed import Context

__all__ = [
    "Agent",
    "BoxAgent",
    "GoalAgent",
    "TorchBatch",
    "ValueScale",
    "adam",
    "frozen",
    "return_bounds",
    "weighted_mean",
]


LOG_CAPACITY = 256
"""Update rows an agent keeps on its device between two reads of its metrics."""


class GoalAgent(ABC):
    """Shared state and helpers of the agents; subclasses build networks and ``_update``."""

    METRICS: ClassVar[tuple[str, ...]]
    """Every metric an update of this agent can report, in the order they are logged."""
    ACTION_DTYPE: ClassVar[torch.dtype] = torch.float32
    """The dtype of the actions an update takes (int64 indices for discrete actions)."""

    def __init__(
        self,
        config: OffPolicyConfig,
        observation_dim: int,
        goal_dim: int,
        reward_range: tuple[float, float] | None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
        self.config = config
        self.observation_dim = observation_dim
        self.goal_dim = goal_dim
        self.device = torch.device(device)
        self.reward_range = reward_range
        self.values = ValueScale.of(reward_range, config.gamma, ends_on_success=False)
        rng_seed, generator_seed, init_seed = np.random.SeedSequence(seed).generate_state(3)
        self.rng = np.random.default_rng(int(rng_seed))
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(generator_seed))
        self._init_seed = int(init_seed)
        self.obs_normalizer = Normalizer(
            observation_dim, config.clip_obs, config.clip_normalized, form=config.normalizer
        )
        self.goal_normalizer = Normalizer(
            goal_dim, config.clip_obs, config.clip_normalized, form=config.normalizer
        )
        self.inputs = AgentInputs(
            self.obs_normalizer,
            self.goal_normalizer,
            observation_dim,
            goal_dim,
            self.device,
            normalize=config.normalize_inputs,
            action_dtype=self.ACTION_DTYPE,
        )
        self.updates = 0
        self.priorities = torch.zeros(0, device=self.device)
        self.dist = Context()  # one process until join()
        self.precision = "fp32"
        self.log = UpdateLog(self.METRICS, LOG_CAPACITY, self.device)
        """The metrics of the updates since the loop last read them, on the device."""
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

    # --- subclass interface -------------------------------------------------------------
    @abstractmethod
    def _networks(self) -> dict[str, nn.Module]:
        """Modules saved by :meth:`state_dict`, by name."""

    @abstractmethod
    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Optimisers saved by :meth:`state_dict`, by name."""

    @abstractmethod
    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """Actions for normalised inputs ``x``."""

    @abstractmethod
    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """One gradient step (the actor's too where ``actor_step``; the target networks'
        polyak move where ``move_targets``); returns scalar metrics and ``|TD error|`` per
        sample, as device tensors."""

    def _value_networks(self) -> list[nn.Module]:
        """The networks that output Q values (online and target); see :meth:`_place_values`."""
        return [net for name, net in self._networks().items() if "actor" not in name]

    # --- public API ----------------------------------------------------------------------
    @property
    def return_bounds(self) -> tuple[float, float]:
        """The range TD targets are clipped to (scaled; infinite without clipping)."""
        if not self.config.clip_return:
            return (-math.inf, math.inf)
        return (self.values.low, self.values.high)

    def set_terminal_on_success(self, ends: bool | None) -> None:
        """Tell the agent whether the env ends episodes on success (None: not known yet).

        Changes the reward scale (:class:`ValueScale`) and moves the critics' outputs by the
        change of the smallest return, so that the Q values learned so far stay in range.
        """
        new = ValueScale.of(self.reward_range, self.config.gamma, ends_on_success=bool(ends))
        if math.isfinite(new.low):
            self._shift_values(new.low - self.values.low)
        if new != self.values:
            self.capture_again()  # the scale and bounds are constants of a captured step
        self.values = new

    def _place_values(self) -> None:
        """Start the critics at the largest return (optimistic); called once they exist."""
        if math.isfinite(self.values.high):
            self._shift_values(self.values.high)

    def _shift_values(self, delta: float) -> None:
        if delta == 0:
            return
        with torch.no_grad():
            for net in self._value_networks():
                for module in net.modules():
                    if isinstance(module, MLP):
                        module.output_layer.bias.add_(delta)

    def act(
        self, observation: np.ndarray, goal: np.ndarray, deterministic: bool = False
    ) -> np.ndarray:
        """Actions for ``observation (n, obs_dim)`` and ``goal (n, goal_dim)``.

        Explores (see the subclass) unless ``deterministic``.
        """
        with torch.no_grad(), self._autocast():
            return self._act(self.inputs.host(observation, goal), deterministic)

    def set_precision(self, precision: str) -> None:
        """Run forward passes in ``"fp32"`` or under a ``"bf16"`` autocast (see
        :mod:`herkit.runtime.precision`)."""
        if precision not in ("fp32", "bf16"):
            raise ValueError(f"precision must be 'fp32' or 'bf16', got {precision!r}")
        if precision != self.precision:
            self.capture_again()
        self.precision = precision

    def _autocast(self) -> torch.autocast:
        # No cast cache: until pytorch/pytorch#165068 (issue #112583) a weight cast under no_grad
        # (a target computed with a network trained in the same update) was reused without
        # its gradient by the trained pass; a cache cannot outlive a capture; and one setting
        # for every mode keeps torch.compile from compiling each update twice.
        return torch.autocast(
            self.device.type,
            dtype=torch.bfloat16,
            enabled=self.precision == "bf16",
            cache_enabled=False,
        )

    def update_normalizer(self, observation: np.ndarray, goal: np.ndarray) -> None:
        """Feed ``observation (..., obs_dim)`` and ``goal (..., goal_dim)`` to the normalisers.

        With several ranks the batch statistics are summed over ranks first (one
        all-reduce), so every rank normalises identically. Nothing where the agent feeds
        its inputs as they are (``normalize_inputs=False``).
        """
        if not self.inputs.normalize:
            return
        obs_stats = self.obs_normalizer.batch_stats(observation)
        both = self.dist.all_sum(
            np.concatenate([obs_stats, self.goal_normalizer.batch_stats(goal)])
        )
        self.obs_normalizer.add_stats(both[: len(obs_stats)])
        self.goal_normalizer.add_stats(both[len(obs_stats) :])

    def update_goal_normalizer(self, goal: Any) -> None:
        """Feed ``goal (..., goal_dim)`` alone to the goal normaliser (summed over ranks).

        A tensor is counted where it lies, with nothing read to the host (with several
        ranks it is copied to the host, whose statistics are summed over ranks)."""
        if not self.inputs.normalize:
            return
        if isinstance(goal, torch.Tensor):
            if not self.dist.active:
                self.goal_normalizer.add_tensor(goal)
                self.goal_normalizer.added_on_device()
                return
            goal = goal.detach().cpu().numpy()
        self.goal_normalizer.add_stats(self.dist.all_sum(self.goal_normalizer.batch_stats(goal)))

    def join(self, context: Context, exploration_seed: int) -> None:
        """Train data-parallel in ``context``: take rank 0's parameters and average every
        gradient over ranks from now on; explore with a seed of this rank's own."""
        self.dist = context
        context.broadcast_parameters(self._networks().values())
        self.rng = np.random.default_rng(exploration_seed)
        self.generator.manual_seed(exploration_seed)

    def parameters_agree(self) -> bool:
        """Whether every rank holds the same parameters (always true in one process)."""
        return self.dist.checksum_agrees(self._networks().values())

    def state_dict(self) -> dict[str, Any]:
        """A snapshot of networks, targets, optimisers, normalisers, counters and RNGs."""
        state = {
            "agent": type(self).__name__,
            "networks": {name: net.state_dict() for name, net in self._networks().items()},
            "optimizers": {name: opt.state_dict() for name, opt in self._optimizers().items()},
            "obs_normalizer": self.obs_normalizer.state_dict(),
            "goal_normalizer": self.goal_normalizer.state_dict(),
            "updates": self.updates,
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state(),
        }
        return copy.deepcopy(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` of an agent of the same class and sizes."""
        if state.get("agent") != type(self).__name__:
            raise ValueError(
                f"state_dict is of agent {state.get('agent')!r}, not {type(self).__name__!r}"
            )
        for name, net in self._networks().items():
            net.load_state_dict(state["networks"][name])
        for name, opt in self._optimizers().items():
            # torch's optimiser keeps the given tensors as its own: a state loaded twice
            # (into two agents, or once more into the same) would share its moments
            opt.load_state_dict(copy.deepcopy(state["optimizers"][name]))
        self.obs_normalizer.load_state_dict(state["obs_normalizer"])
        self.goal_normalizer.load_state_dict(state["goal_normalizer"])
        self.updates = int(state["updates"])
        self.rng.bit_generator.state = state["rng"]
        self.generator.set_state(state["generator"].cpu())
        self.capture_again()  # the optimisers hold new state tensors

    # --- the update: a batch to the loss and back ------------------------------------------
    def update(self, batch: Batch, count_goals: bool = False) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch``, and the polyak target update where one is due
        (:meth:`_targets_step`: every ``target_every``-th update); returns its metrics.

        The metrics are 0-dim tensors on the agent's device: nothing is read to the host
        (``float(metrics["critic_loss"])`` reads one). :attr:`priorities` becomes the
        ``|TD error|`` of each sample (the largest over twin critics, as LAP does), a
        device tensor. ``count_goals`` first feeds the batch's goals (relabelled ones
        included) to the goal normaliser, where they lie. With :meth:`log_updates` on,
        the metrics are also kept for :meth:`update_metrics`.
        """
        parts = {"actor_step": self._actor_step(), "move_targets": self._targets_step()}
        count_goals &= self.inputs.normalize
        if count_goals and (not isinstance(batch.goal, torch.Tensor) or self.dist.active):
            self.update_goal_normalizer(batch.goal)  # summed on the host (over ranks)
            count_goals = False
        if self.update_mode == "eager":
            if isinstance(batch.observation, torch.Tensor):
                self.inputs.sync()
            output = self.step(batch, count_goals=count_goals, **parts)
        else:
            self.inputs.sync()
            output = self._runners["batch"](
                self.inputs.to_device(batch), count_goals=count_goals, **parts
            )
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
        parts = {"actor_step": self._actor_step(), "move_targets": self._targets_step()}
        count_goals &= self.inputs.normalize
        output = self._runners["drawn"](None, count_goals=count_goals, **parts, **flags)
        return self._finish(output, count_goals)

    def step(
        self,
        batch: Batch | None,
        *,
        actor_step: bool,
        move_targets: bool,
        count_goals: bool,
        **flags: Any,
    ) -> StepOutput:
        """One update, device work only, the function that is run eagerly, compiled or
        captured as it is: ``batch`` (None: drawn here by the attached sampler, with
        ``flags``), its goals counted where ``count_goals``, prepared
        (:meth:`AgentInputs.prepare`), the algorithm's ``_update``; its metrics as one
        vector (every name of ``METRICS``, 0 where absent) written to the log. Returns
        the vector, the ``|TD error|`` and the names present."""
        if batch is None:
            assert self._draw is not None
            batch = self._draw(self._draw_size, self._uniform, **flags)
            reprioritize = self._reprioritize
        else:
            reprioritize = None  # a batch given: its priorities are set by the caller
        if count_goals:
            assert isinstance(batch.goal, torch.Tensor)  # host goals are counted on the host
            self.goal_normalizer.add_tensor(batch.goal)
        prepared = self.inputs.prepare(batch, self.values.scale)
        with self._autocast():
            metrics, td_abs = self._update(prepared, actor_step, move_targets)
        td_abs = td_abs.detach()
        metrics["td_abs_mean"] = td_abs.float().mean()
        values = torch.stack(
            [
                metrics[name].detach().float() if name in metrics else self._zero
                for name in self.METRICS
            ]
        )
        self.log.write(values)
        if reprioritize is not None and isinstance(batch.indices, torch.Tensor):
            reprioritize(batch.indices, td_abs)
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

    def _actor_step(self) -> bool:
        """Whether the next update also steps the actor (TD3 delays it)."""
        return True

    def _targets_step(self) -> bool:
        """Whether the next update also moves the target networks: every
        ``target_every``-th update (after it, as baselines moves them after a cycle's
        updates)."""
        return (self.updates + 1) % self.config.target_every == 0

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
        """Run updates in ``mode`` (:mod:`herkit.agents.updates`); ValueError for a mode
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

    # --- helpers -------------------------------------------------------------------------
    def _track_targets(self, *pairs: tuple[nn.Module, nn.Module]) -> None:
        """Register ``(target, online)`` network pairs for :meth:`_update_targets`."""
        self._target_params: list[torch.Tensor] = [p for t, _ in pairs for p in t.parameters()]
        self._online_params: list[torch.Tensor] = [p for _, o in pairs for p in o.parameters()]

    def _update_targets(self) -> None:
        """``target <- polyak * target + (1 - polyak) * online`` for every tracked pair, in
        one call."""
        with torch.no_grad():
            torch._foreach_lerp_(self._target_params, self._online_params, 1 - self.config.polyak)

    def _set_action_box(self, low: np.ndarray, high: np.ndarray) -> None:
        """Bounds and size of a continuous (Box) action space, as float32 arrays."""
        self.action_low = np.asarray(low, np.float32)
        self.action_high = np.asarray(high, np.float32)
        self.act_dim = len(self.action_low)

    @contextmanager
    def _seeded_init(self) -> Iterator[None]:
        """Build networks (on CPU) from the agent's seed, leaving the global RNG untouched."""
        with torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(self._init_seed)
            yield

    def _trained(self, *nets: nn.Module) -> list[torch.optim.Optimizer]:
        """Move networks built in :meth:`_seeded_init` to the device; one Adam each."""
        return [adam(net.to(self.device).parameters(), self.config.lr) for net in nets]

    def _targets(self, *online: nn.Module) -> list[nn.Module]:
        """Frozen copies of the ``online`` networks, tracked as their polyak targets."""
        targets = [copy.deepcopy(net).requires_grad_(False) for net in online]
        self._track_targets(*zip(targets, online, strict=True))
        return targets

    def _td_target(self, batch: TorchBatch, next_value: torch.Tensor) -> torch.Tensor:
        """``r + gamma * (1 - terminated) * next_value`` (``gamma ** m`` for an n-step
        sample), clipped to the return range."""
        discount = self.config.gamma if batch.discount is None else batch.discount
        target = batch.reward + discount * batch.not_done * next_value
        return target.clamp(*self.return_bounds)

    def _step(
        self,
        optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer],
        loss: torch.Tensor,
    ) -> None:
        """Backpropagate ``loss`` once, then for each optimiser (one, or several sharing the
        loss) clip the gradient of its parameters (by norm, or each entry by value) and
        step."""
        optimizers = [optimizer] if isinstance(optimizer, torch.optim.Optimizer) else optimizer
        groups = [opt.param_groups[0]["params"] for opt in optimizers]
        for params in groups:  # zero_grad(set_to_none=True) without its per-call overhead
            for param in params:
                param.grad = None
        loss.backward()
        for opt, params in zip(optimizers, groups, strict=True):
            self.dist.average_gradients(params)
            clip = self.config.grad_clip
            if clip is not None and self.config.grad_clip_mode == "value":
                nn.utils.clip_grad_value_(params, clip)
            elif clip is not None:
                nn.utils.clip_grad_norm_(params, clip)
            opt.step()


class BoxAgent(GoalAgent):
    """A :class:`GoalAgent` of a ``Box`` action space ``[action_low, action_high]`` (DDPG,
    TD3, SAC and the offline agents), whose :meth:`_build` makes its networks."""

    def __init__(
        self,
        config: OffPolicyConfig,
        observation_dim: int,
        goal_dim: int,
        action_low: np.ndarray,
        action_high: np.ndarray,
        reward_range: tuple[float, float] | None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ) -> None:
        super().__init__(config, observation_dim, goal_dim, reward_range, device, seed)
        self._set_action_box(action_low, action_high)
        self.in_dim = observation_dim + goal_dim
        """Size of a network's input ``observation || goal``."""
        self._build()

    @abstractmethod
    def _build(self) -> None:
        """Make the networks (under :meth:`_seeded_init`), their optimisers and targets."""


Agent = GoalAgent
"""What the training loop, evaluation and a loaded policy use: an agent takes a
:class:`herkit.Batch` and never sees the replay buffer."""
