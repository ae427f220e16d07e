"""How an update step runs: :class:`StepRunner` and :data:`UPDATE_MODES`.

An agent's step (:meth:`herkit.agents.base.GoalAgent.step`: a batch in, prepared, the
algorithm's loss and optimiser steps, its metrics and ``|TD error|`` out; device work only)
runs ``eager`` (op by op, the reference), ``compiled`` (:func:`torch.compile` fuses its
ops, on a CPU too where a C++ compiler is at hand), ``captured`` (on CUDA, recorded once as
a CUDA graph and replayed: one launch per update instead of a hundred-odd) or
``compiled-captured``. The runner wraps the step as it is. A captured step copies each
update's batch into the graph's own input tensors and replays it; its outputs are the
graph's, overwritten by the next replay. The first :data:`CAPTURE_WARMUP` calls of a graph
run eagerly on a side stream (real updates: they initialise optimiser state and kernels),
the next one records it; whatever changes what a step does (precision, reward scale, a
loaded optimiser state) captures it again (:meth:`StepRunner.reset`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable
from typing import Any

import torch

from herkit.buffer.batch import Batch
from herkit.agents.settings import UPDATE_MODES, UpdateMode

__all__ = [
    "CAPTURE_WARMUP",
    "UPDATE_MODES",
    "Draw",
    "Reprioritize",
    "Step",
    "StepOutput",
    "StepRunner",
    "UpdateMode",
    "check_update_mode",
    "mode_available",
]

CAPTURE_WARMUP = 3
"""Eager calls of a step (on a side stream) before its CUDA graph is captured."""

StepOutput = tuple[torch.Tensor, torch.Tensor, tuple[str, ...]]
"""What a step returns: its metrics as one vector, the ``|TD error|`` of each sample and
the names of the metrics present."""

Step = Callable[..., StepOutput]
"""``step(batch, **flags)``: one update on a :class:`~herkit.buffer.batch.Batch` of device
tensors (None: drawn within the step)."""

Draw = Callable[..., Batch]
"""``draw(batch_size, uniform, **flags)``: a :class:`~herkit.buffer.batch.Batch` of tensors
on the device, device work only (by priority: its ``weights`` and ``indices``, the drawn
slots, too)."""

Reprioritize = Callable[[torch.Tensor, torch.Tensor], None]
"""``reprioritize(leaves, td_abs)``: give the drawn leaves their new priorities on the
device, device work only."""


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

    ``step(batch, **flags)`` takes a :class:`~herkit.buffer.batch.Batch` of device tensors
    (or None where it draws its own) and returns a tuple of tensors; ``flags`` (plain
    values such as whether the actor steps) select a variant: one compiled or captured
    version per distinct flags and batch layout. ``generator`` is a torch generator the
    step draws from (registered with each graph). ``prepare`` runs before a graph is first
    warmed up (e.g. make optimisers capturable).
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

    def __call__(self, batch: Batch | None, **flags: Any) -> StepOutput:
        """Run the step on ``batch`` with ``flags``."""
        step = self._step()
        if not self.captures:
            return step(batch, **flags)
        key = (tuple(sorted(flags.items())), _layout(batch))
        graph = self._graphs.get(key)
        if graph is None:
            if self.prepare is not None and not self._graphs:
                self.prepare()
            graph = self._graphs[key] = _Graph(step, flags, self.generator)
        return graph(batch)

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


def _tensors(batch: Batch | None) -> list[torch.Tensor | None]:
    """The fields of a batch of device tensors (none without a batch)."""
    tensors: list[torch.Tensor | None] = []
    for field in [] if batch is None else batch.fields():
        if field is not None and not isinstance(field, torch.Tensor):
            raise ValueError(f"a compiled or captured step takes tensors, got {type(field)}")
        tensors.append(field)
    return tensors


def _layout(batch: Batch | None) -> tuple[Any, ...]:
    """What a graph is specific to: each field's shape and dtype, or None."""
    return tuple(None if t is None else (tuple(t.shape), t.dtype) for t in _tensors(batch))


class _Graph:
    """One step, warmed up, captured and replayed for batches of one layout."""

    def __init__(self, step: Step, flags: dict[str, Any], generator: torch.Generator | None):
        self.step = step
        self.flags = flags
        self.generator = generator
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.batch: Batch | None = None
        self.outputs: Any = None

    def __call__(self, batch: Batch | None) -> Any:
        if self.graph is not None:
            for static, given in zip(_tensors(self.batch), _tensors(batch), strict=True):
                if static is not None and given is not None:
                    static.copy_(given, non_blocking=True)
            self.graph.replay()
            return self.outputs
        if self.calls < CAPTURE_WARMUP:
            self.calls += 1
            return self._on_side_stream(batch)
        if batch is not None:
            clones = [None if t is None else t.clone() for t in _tensors(batch)]
            self.batch = Batch(*clones)  # type: ignore[arg-type]  # the fields in order
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
            self.outputs = self.step(self.batch, **self.flags)
        self.graph = graph
        graph.replay()  # capture records the step without running it
        return self.outputs

    def _on_side_stream(self, batch: Batch | None) -> Any:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            outputs = self.step(batch, **self.flags)
        main = torch.cuda.current_stream()
        main.wait_stream(stream)
        for output in outputs if isinstance(outputs, tuple) else (outputs,):
            if isinstance(output, torch.Tensor):
                output.record_stream(main)  # used there: not reused before that
        return outputs
