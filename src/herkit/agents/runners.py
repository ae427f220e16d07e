"""How an agent's update step runs: op by op, compiled, or captured as a CUDA graph.

:data:`UPDATE_MODES` names them:

- ``eager``: PyTorch runs the step op by op (the reference, and the fallback);
- ``compiled``: :func:`torch.compile` fuses the step's ops into fewer, larger kernels
  (on a CPU too, where a C++ compiler is at hand);
- ``captured``: on CUDA, the eager step is recorded once as a CUDA graph and replayed:
  one launch per update instead of a hundred-odd, so the GPU stops waiting on Python;
- ``compiled-captured``: the compiled step, captured and replayed.

A step is a function of device tensors with no host read in it (metrics and ``|TD
error|`` stay on the device, see :mod:`herkit.agents.update_log`). A captured step copies
each update's inputs into the graph's own input tensors and replays it; its outputs are
the graph's output tensors, overwritten by the next replay. The first
:data:`CAPTURE_WARMUP` calls of a graph run eagerly on a side stream (real updates: they
initialise optimiser state and kernels), the next one records the graph, then replays
it. Whatever changes what a step does (precision, reward scale, a loaded optimiser state)
calls :meth:`StepRunner.reset`, and the graphs are captured again.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch

from herkit.config.agents import UPDATE_MODES, UpdateMode

__all__ = [
    "CAPTURE_WARMUP",
    "UPDATE_MODES",
    "StepRunner",
    "UpdateMode",
    "check_update_mode",
    "mode_available",
]

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
