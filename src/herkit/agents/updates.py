"""How an agent's update runs, from a batch to the algorithm's loss and back: the one room
of the update runner.

- :class:`UpdateSteps`, the part of every agent (:class:`herkit.agents.base.GoalAgent`)
  between a batch and the algorithm's gradient step: :meth:`UpdateSteps.update` takes a
  batch (or :meth:`UpdateSteps.update_drawn` draws one within the step from a sampler on the
  device, e.g. :class:`herkit.buffer.device_sampler.DeviceSampler`), and
  :meth:`UpdateSteps.step` normalises it, runs the algorithm's ``_update`` (a function of
  tensors: a batch in, its metrics and ``|TD error|`` out) under the agent's precision and
  writes the metrics to the agent's :class:`UpdateLog`: device work only. The step changes
  no Python state (a CUDA graph's replay runs none); what the host must know of it, it
  learns in :meth:`UpdateSteps._finish`, after the step.
- :class:`AgentInputs` and :class:`TorchBatch`: observations and goals normalised and
  joined, a :class:`~herkit.buffer.batch.Batch` as tensors on the agent's device (host
  arrays normalised in numpy, where one env step costs a few microseconds against ten
  times more in torch's dispatch; tensors where they lie); :meth:`AgentInputs.raw` and
  :meth:`AgentInputs.from_raw` split the same work for an update that is compiled or
  captured (the first moves a batch to the device, the second is device work only).
- :class:`StepRunner` and :data:`UPDATE_MODES`: a step run ``eager`` (op by op, the
  reference), ``compiled`` (:func:`torch.compile` fuses its ops, on a CPU too where a C++
  compiler is at hand), ``captured`` (on CUDA, recorded once as a CUDA graph and replayed:
  one launch per update instead of a hundred-odd) or ``compiled-captured``. A captured step
  copies each update's inputs into the graph's own input tensors and replays it; its
  outputs are the graph's, overwritten by the next replay. The first
  :data:`CAPTURE_WARMUP` calls of a graph run eagerly on a side stream (real updates: they
  initialise optimiser state and kernels), the next one records it; whatever changes what
  a step does (precision, reward scale, a loaded optimiser state) captures it again
  (:meth:`StepRunner.reset`).
- :class:`UpdateLog`: every update's metrics in a ring of rows on the device (no host read:
  a read per update makes a GPU wait on Python), read in one transfer per row of
  ``updates.csv``.
- The helpers the algorithms' steps share: :class:`ValueScale` and :func:`return_bounds`
  (how rewards are scaled and the range TD targets are clipped to), :func:`adam`,
  :func:`frozen` and :func:`weighted_mean`.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
import torch
from torch import nn

from herkit.agents.normalizer import Normalizer
from herkit.buffer.backend import to_device
from herkit.buffer.batch import Batch
from herkit.buffer.device_sampler import DeviceBatch, uniform_of
from herkit.config.agents import UPDATE_MODES, OffPolicyConfig, UpdateMode
from herkit.runtime.distributed import Context

__all__ = [
    "CAPTURE_WARMUP",
    "UPDATE_MODES",
    "AgentInputs",
    "Draw",
    "Reprioritize",
    "StepRunner",
    "TorchBatch",
    "UpdateLog",
    "UpdateMode",
    "UpdateSteps",
    "ValueScale",
    "adam",
    "check_update_mode",
    "frozen",
    "mode_available",
    "return_bounds",
    "weighted_mean",
]


# --- the helpers of the algorithms' update steps -------------------------------------------


def return_bounds(reward_range: tuple[float, float], gamma: float) -> tuple[float, float]:
    """Range of discounted returns with rewards in ``reward_range``.

    Returns of any length, terminated or bootstrapped, lie within
    ``[min(r_min, r_min / (1 - gamma)), max(r_max, r_max / (1 - gamma))]``; for Fetch's
    -1/0 rewards that is ``[-1 / (1 - gamma), 0]``, baselines' ``clip_return``.
    """
    low, high = (float(r) for r in reward_range)
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(
            f"reward_range must be finite (low, high) with low <= high, got {reward_range!r}"
        )
    return min(low, low / (1 - gamma)), max(high, high / (1 - gamma))


@dataclass(frozen=True)
class ValueScale:
    """How an agent scales rewards, and the range its Q values are clipped to (scaled).

    Sparse rewards come in conventions whose Q values differ in scale by ``1 / (1 - gamma)``:
    with Fetch's -1/0 every step of delay costs 1, with 0/1 rewards and episodes that end
    on success (PointMaze) it costs only ``(1 - gamma) * 1``, so the action gaps that a
    critic must resolve are 50 times smaller at gamma 0.98 and, with Adam's fixed step size,
    drown in noise (0/1 bit flipping: 0 % where -1/0 solves it). Scaling rewards so that one
    step of delay costs 1 gives every convention -1/0's dynamics; a positive scale never
    changes which policy is optimal. The step cost is ``high - low`` when episodes go on
    past success, and ``(1 - gamma) * high - low`` when success (the reward ``high``, the
    only one above ``low``) ends them. For rewards on both sides of 0 (-1/0, 0/1) the scaled
    returns span ``1 / (1 - gamma)`` either way, so learning which one holds only moves them.
    """

    scale: float
    """Factor applied to every reward before the TD target."""
    low: float
    """Smallest scaled return."""
    high: float
    """Largest scaled return; critics start there (optimistic, as -1/0's Q = 0 start)."""

    @classmethod
    def of(
        cls, reward_range: tuple[float, float] | None, gamma: float, ends_on_success: bool
    ) -> ValueScale:
        """The scale for ``reward_range`` (None: rewards left as they are, no bounds)."""
        if reward_range is None:
            return cls(1.0, -math.inf, math.inf)
        low, high = return_bounds(reward_range, gamma)
        r_low, r_high = (float(r) for r in reward_range)
        cost = r_high - r_low
        if ends_on_success:
            low, high = min(r_high, r_low / (1 - gamma)), max(r_high, r_low / (1 - gamma))
            cost = (1 - gamma) * r_high - r_low
        scale = 1.0 / cost if cost > 0 else 1.0
        return cls(scale, scale * low, scale * high)


def adam(params: Iterable[nn.Parameter], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one kernel for all parameters: about 3x faster steps
    for these small networks); the default implementation where fused is unsupported."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, ValueError):
        return torch.optim.Adam(params, lr=lr)


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Turn off gradients of ``module``'s parameters (e.g. the critic in the actor loss)."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def weighted_mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """``mean(weights * values)``, or ``mean(values)`` without weights."""
    return values.mean() if weights is None else (weights * values).mean()


# --- a batch as the networks take it -------------------------------------------------------


class TorchBatch(NamedTuple):
    """A :class:`Batch` as float32 tensors on the agent's device, inputs normalised."""

    x: torch.Tensor
    """``normalise(observation) || normalise(goal)``, ``(B, obs_dim + goal_dim)``."""
    next_x: torch.Tensor
    """``normalise(next_observation) || normalise(goal)``."""
    action: torch.Tensor
    """Actions as stored, ``(B,)`` int64 or ``(B, act_dim)`` float32."""
    reward: torch.Tensor
    """Rewards ``(B,)`` (times the agent's reward scale)."""
    not_done: torch.Tensor
    """``1 - terminated``, ``(B,)``: timeouts bootstrap."""
    discount: torch.Tensor | None
    """Per-sample discount of the bootstrap (``gamma ** m`` for n-step samples), or None
    for ``gamma``."""
    weights: torch.Tensor | None
    """Per-sample loss weights ``(B,)`` (prioritized replay), or None."""
    actor_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(actor_goal)`` where the batch has actor goals
    (:attr:`herkit.Batch.actor_goal`, offline agents), else None."""
    next_actor_x: torch.Tensor | None = None
    """``normalise(next_observation) || normalise(actor_goal)``, or None as ``actor_x``."""
    low_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(low_actor_goal)`` where the batch has HIQL's
    subgoals (:attr:`herkit.Batch.low_actor_goal`), else None."""
    next_low_x: torch.Tensor | None = None
    """``normalise(next_observation) || normalise(low_actor_goal)``, or None."""
    target_x: torch.Tensor | None = None
    """``normalise(high_actor_target_observation) || normalise(actor_goal)`` (the value
    goal's without actor goals): the high actor's target state and goal, or None."""
    target_goal_x: torch.Tensor | None = None
    """``normalise(observation) || normalise(high_actor_target)``: the state and the high
    actor's target as a goal, or None."""


def _input_pairs(batch: Batch | DeviceBatch) -> tuple[list[str], list[Any], list[Any]]:
    """The network inputs a batch makes, as the names of :class:`TorchBatch` and the
    observations and goals each joins: x and next_x; with actor goals actor_x and
    next_actor_x; with HIQL's subgoals low_x, next_low_x, target_x and target_goal_x."""
    obs, next_obs = batch.observation, batch.next_observation
    pairs = [("x", obs, batch.goal), ("next_x", next_obs, batch.goal)]
    if batch.actor_goal is not None:
        pairs += [("actor_x", obs, batch.actor_goal), ("next_actor_x", next_obs, batch.actor_goal)]
    if batch.low_actor_goal is not None:
        high = batch.goal if batch.actor_goal is None else batch.actor_goal
        pairs += [
            ("low_x", obs, batch.low_actor_goal),
            ("next_low_x", next_obs, batch.low_actor_goal),
            ("target_x", batch.high_actor_target_observation, high),
            ("target_goal_x", obs, batch.high_actor_target),
        ]
    names, observations, goals = zip(*pairs, strict=True)
    return list(names), list(observations), list(goals)


class AgentInputs:
    """Normalises observations and goals and brings batches to ``device``."""

    def __init__(
        self,
        obs_normalizer: Normalizer,
        goal_normalizer: Normalizer,
        observation_dim: int,
        goal_dim: int,
        device: torch.device,
        normalize: bool = True,
    ) -> None:
        self.obs_normalizer = obs_normalizer
        self.goal_normalizer = goal_normalizer
        self.observation_dim = observation_dim
        self.goal_dim = goal_dim
        self.device = device
        self.normalize = normalize
        """Whether inputs are standardised (else fed as they are, as float32)."""

    def host(self, observation: Any, goal: Any) -> torch.Tensor:
        """``normalise(observation) || normalise(goal)`` as a float32 tensor on the device,
        normalised on the host in numpy."""
        obs = np.asarray(observation).reshape(-1, self.observation_dim)
        goal = np.asarray(goal).reshape(-1, self.goal_dim)
        if len(obs) != len(goal):
            raise ValueError(f"observation and goal batch sizes differ: {len(obs)} vs {len(goal)}")
        if self.normalize:
            obs, goal = self.obs_normalizer.normalize(obs), self.goal_normalizer.normalize(goal)
        x = np.concatenate([obs, goal], axis=1, dtype=np.float32)
        return torch.from_numpy(x).to(self.device)

    def tensors(self, observation: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """:meth:`host` for tensors: normalised where they lie, then moved to the device
        (no move when the buffer lives there)."""
        obs = observation.reshape(-1, self.observation_dim)
        goals = goal.reshape(-1, self.goal_dim)
        if self.normalize:
            obs = self.obs_normalizer.normalize_tensor(obs)
            goals = self.goal_normalizer.normalize_tensor(goals)
        return torch.cat([obs.float(), goals.float()], dim=1).to(self.device)

    def batch(self, batch: Batch, reward_scale: float) -> TorchBatch:
        """``batch`` for an eager update: x and next_x (and, with actor goals, actor_x and
        next_actor_x; with subgoals, HIQL's inputs) in one pass each way."""
        weights = None if batch.weights is None else self._tensor(batch.weights).reshape(-1)
        names, observations, goals = _input_pairs(batch)
        if isinstance(batch.observation, torch.Tensor):  # from a buffer on a device
            inputs = self.tensors(
                torch.cat([torch.as_tensor(o) for o in observations]),
                torch.cat([torch.as_tensor(g) for g in goals]),
            ).chunk(len(goals))
        else:  # one transfer and one normalisation for all
            inputs = self.host(np.concatenate(observations), np.concatenate(goals)).chunk(
                len(goals)
            )
        return TorchBatch(
            **dict(zip(names, inputs, strict=True)),
            action=(
                batch.action.to(self.device)
                if isinstance(batch.action, torch.Tensor)
                else torch.as_tensor(np.asarray(batch.action), device=self.device)
            ),
            reward=self._tensor(batch.reward).reshape(-1) * reward_scale,
            not_done=1.0 - self._tensor(batch.terminated).reshape(-1),
            discount=None if batch.discount is None else self._tensor(batch.discount).reshape(-1),
            weights=weights,
        )

    def raw(self, batch: Batch, action_dtype: torch.dtype) -> DeviceBatch:
        """``batch``'s arrays on the device, for :meth:`from_raw` (host arrays are copied
        without waiting, through pinned memory on CUDA), its actor goals too."""

        def put(value: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            if not isinstance(value, torch.Tensor):
                value = to_device(np.asarray(value), self.device)
            return value.to(self.device, dtype, non_blocking=True)

        def flat(value: Any) -> torch.Tensor | None:
            return None if value is None else put(value).reshape(-1)

        def maybe(value: Any) -> torch.Tensor | None:
            return None if value is None else put(value)

        return DeviceBatch(
            put(batch.observation),
            put(batch.next_observation),
            put(batch.goal),
            put(batch.action, action_dtype),
            put(batch.reward).reshape(-1),
            put(batch.terminated).reshape(-1),
            flat(batch.discount),
            flat(batch.weights),
            actor_goal=maybe(batch.actor_goal),
            low_actor_goal=maybe(batch.low_actor_goal),
            high_actor_target=maybe(batch.high_actor_target),
            high_actor_target_observation=maybe(batch.high_actor_target_observation),
        )

    def from_raw(self, raw: DeviceBatch, reward_scale: float) -> TorchBatch:
        """A :class:`DeviceBatch` normalised on the device: device work only (the normalisers'
        host statistics copied there first, :meth:`sync`), so it can be captured; its actor
        goals too, where it has them (and HIQL's subgoals)."""
        names, observations, goals = _input_pairs(raw)
        obs = torch.cat(observations).reshape(-1, self.observation_dim)
        goal = torch.cat(goals).reshape(-1, self.goal_dim)
        if self.normalize:
            obs = self.obs_normalizer.normalize_device(obs)
            goal = self.goal_normalizer.normalize_device(goal)
        inputs = torch.cat([obs.float(), goal.float()], dim=1).chunk(len(goals))
        return TorchBatch(
            **dict(zip(names, inputs, strict=True)),
            action=raw.action,
            reward=raw.reward.reshape(-1) * reward_scale,
            not_done=1.0 - raw.terminated.reshape(-1),
            discount=raw.discount,
            weights=raw.weights,
        )

    def sync(self) -> None:
        """Copy the normalisers' host statistics to the device where they changed."""
        if not self.normalize:
            return
        self.obs_normalizer.sync_device(self.device)
        self.goal_normalizer.sync_device(self.device)

    def _tensor(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(self.device).float()
        return torch.as_tensor(np.asarray(x), device=self.device).float()


# --- the metrics, kept on the device -------------------------------------------------------


class UpdateLog:
    """Rows of update metrics on ``device``, ``capacity`` of them between two reads.

    ``names`` fixes the columns (every metric the agent can report, in order). Past
    ``capacity`` rows without a read, the rows are moved to the host (one transfer) so
    that nothing is lost.
    """

    def __init__(self, names: tuple[str, ...], capacity: int, device: torch.device) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.names = names
        self.capacity = capacity
        self.rows = torch.zeros(capacity, len(names), dtype=torch.float32, device=device)
        self.cursor = torch.zeros(1, dtype=torch.int64, device=device)
        """The next row to write, on the device (a captured update advances it itself)."""
        self._present: list[tuple[str, ...]] = []
        self._taken: list[dict[str, float]] = []

    def write(self, values: torch.Tensor) -> None:
        """Write one update's ``values`` (one per name, 0 where absent) at the cursor and
        advance it (round the ``capacity`` rows); device work only. :meth:`note` follows
        on the host where the rows are kept."""
        self.rows.index_copy_(0, self.cursor, values.reshape(1, -1).float())
        self.cursor.add_(1).remainder_(self.capacity)

    def note(self, present: tuple[str, ...]) -> None:
        """Record on the host which metrics the row just written holds; moves the rows to
        the host first when they fill the log."""
        self._present.append(present)
        if len(self._present) == self.capacity:
            self._taken += self._read()

    def take(self) -> list[dict[str, float]]:
        """The metrics of every update since the last call, oldest first (one transfer)."""
        rows = self._taken + self._read()
        self._taken = []
        return rows

    def __len__(self) -> int:
        """Updates written since the last :meth:`take`."""
        return len(self._taken) + len(self._present)

    def clear(self) -> None:
        """Forget every row (kept or not) and start again at the first."""
        self.cursor.zero_()
        self._present = []
        self._taken = []

    def _read(self) -> list[dict[str, float]]:
        count = len(self._present)
        if count == 0:
            return []
        values = self.rows[:count].cpu().numpy()
        self.cursor.zero_()
        index = {name: i for i, name in enumerate(self.names)}
        rows = [
            {name: float(row[index[name]]) for name in present}
            for row, present in zip(values, self._present, strict=True)
        ]
        self._present = []
        return rows


# --- the update modes ----------------------------------------------------------------------

CAPTURE_WARMUP = 3
"""Eager calls of a step (on a side stream) before its CUDA graph is captured."""

Step = Callable[..., Any]


def check_update_mode(mode: str, device: torch.device) -> None:
    """ValueError unless ``mode`` is an update mode that ``device`` can run."""
    if mode not in UPDATE_MODES:
        raise ValueError(f"update_mode must be one of {', '.join(UPDATE_MODES)}, got {mode!r}")
    if not mode_available(mode, device):
        raise ValueError(
            f"update_mode {mode!r} captures CUDA graphs: it needs a CUDA device, got {device}"
        )


def mode_available(mode: str, device: torch.device) -> bool:
    """Whether ``device`` can run ``mode`` (capture needs CUDA)."""
    return "captured" not in mode or (device.type == "cuda" and torch.cuda.is_available())


class StepRunner:
    """Runs an update step function in one of :data:`UPDATE_MODES`.

    ``step(*inputs, **flags)`` takes device tensors (or None) and returns a tuple of
    tensors; ``flags`` (plain values such as whether the actor steps) select a variant:
    one compiled or captured version per distinct flags and input layout.
    ``generator`` is a torch generator the step draws from (registered with each graph).
    ``prepare`` runs before a graph is first warmed up (e.g. make optimisers capturable).
    """

    def __init__(
        self,
        step: Step,
        mode: UpdateMode,
        generator: torch.Generator | None = None,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.step = step
        self.mode = mode
        self.generator = generator
        self.prepare = prepare
        self._compiled: Step | None = None
        self._graphs: dict[Hashable, _Graph] = {}

    @property
    def compiles(self) -> bool:
        """Whether the step goes through :func:`torch.compile`."""
        return self.mode in ("compiled", "compiled-captured")

    @property
    def captures(self) -> bool:
        """Whether the step is replayed from CUDA graphs."""
        return self.mode in ("captured", "compiled-captured")

    def __call__(self, inputs: Sequence[torch.Tensor | None], **flags: Any) -> Any:
        """Run the step on ``inputs`` with ``flags``."""
        step = self._step()
        if not self.captures:
            return step(*inputs, **flags)
        key = (tuple(sorted(flags.items())), _layout(inputs))
        graph = self._graphs.get(key)
        if graph is None:
            if self.prepare is not None and not self._graphs:
                self.prepare()
            graph = self._graphs[key] = _Graph(step, flags, self.generator)
        return graph(inputs)

    def reset(self) -> None:
        """Forget the captured graphs (they are captured again on the next calls); the
        compiled function stays (it checks by itself what it was compiled for)."""
        self._graphs.clear()

    def _step(self) -> Step:
        if not self.compiles:
            return self.step
        if self._compiled is None:
            self._compiled = torch.compile(self.step, dynamic=False)
        return self._compiled


def _layout(inputs: Sequence[torch.Tensor | None]) -> tuple[Any, ...]:
    """What a graph is specific to: each input's shape and dtype, or None."""
    return tuple(None if t is None else (tuple(t.shape), t.dtype) for t in inputs)


class _Graph:
    """One step, warmed up, captured and replayed for inputs of one layout."""

    def __init__(self, step: Step, flags: dict[str, Any], generator: torch.Generator | None):
        self.step = step
        self.flags = flags
        self.generator = generator
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: list[torch.Tensor | None] = []
        self.outputs: Any = None

    def __call__(self, inputs: Sequence[torch.Tensor | None]) -> Any:
        if self.graph is not None:
            for static, given in zip(self.inputs, inputs, strict=True):
                if static is not None and given is not None:
                    static.copy_(given, non_blocking=True)
            self.graph.replay()
            return self.outputs
        if self.calls < CAPTURE_WARMUP:
            self.calls += 1
            return self._on_side_stream(inputs)
        self.inputs = [None if t is None else t.clone() for t in inputs]
        graph = torch.cuda.CUDAGraph()
        if self.generator is not None:
            register = getattr(graph, "register_generator_state", None)
            if register is None:
                raise RuntimeError(
                    f"torch {torch.__version__} cannot capture a step that draws from its "
                    "own random generator (CUDAGraph.register_generator_state is missing)"
                )
            register(self.generator)
        torch.cuda.synchronize()
        # Garbage in a reference cycle can hold an earlier step's autograd graph (torch no
        # longer collects before a capture): its parameters' gradient accumulators, made
        # on another stream, would make the capture wait on that stream, which fails.
        gc.collect()
        # thread_local: CUDA calls of other threads (none of herkit's) do not spoil it
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self.outputs = self.step(*self.inputs, **self.flags)
        self.graph = graph
        graph.replay()  # capture records the step without running it
        return self.outputs

    def _on_side_stream(self, inputs: Sequence[torch.Tensor | None]) -> Any:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            outputs = self.step(*inputs, **self.flags)
        main = torch.cuda.current_stream()
        main.wait_stream(stream)
        for output in outputs if isinstance(outputs, tuple) else (outputs,):
            if isinstance(output, torch.Tensor):
                output.record_stream(main)  # used there: not reused before that
        return outputs


# --- the update of an agent ----------------------------------------------------------------

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
    config: OffPolicyConfig

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

    def _targets_step(self) -> bool:
        """Whether the next update also moves the target networks: every
        ``target_every``-th update (after it, as baselines moves them after a cycle's
        updates)."""
        return (self.updates + 1) % self.config.target_every == 0

    if TYPE_CHECKING:  # given by GoalAgent and each algorithm

        def _autocast(self) -> AbstractContextManager[Any]: ...

        def _update(
            self, batch: TorchBatch, actor_step: bool, move_targets: bool
        ) -> tuple[dict[str, torch.Tensor], torch.Tensor]: ...

        def _optimizers(self) -> dict[str, torch.optim.Optimizer]: ...

        def update_goal_normalizer(self, goal: Any) -> None: ...

    # -- entry points -------------------------------------------------------------------

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
            if count_goals:
                self.goal_normalizer.add_tensor(batch.goal)
            prepared = self.inputs.batch(batch, self.values.scale)
            output = self.step(count_goals=False, prepared=prepared, **parts)
        else:
            self.inputs.sync()
            raw = self.inputs.raw(batch, self.ACTION_DTYPE)
            output = self._runners["batch"](raw, count_goals=count_goals, **parts)
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
        output = self._runners["drawn"]((), count_goals=count_goals, **parts, **flags)
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

    # -- the step: device work only -------------------------------------------------------

    def step(
        self,
        *raw: torch.Tensor | None,
        actor_step: bool,
        move_targets: bool,
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
