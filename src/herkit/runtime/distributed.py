"""Data-parallel training with torch.distributed, launched by ``torchrun``.

Each rank runs its own envs, buffer and seed; the ranks stay in lockstep and agree on
everything that steers the loop:

- gradients are averaged over ranks before every optimiser step, so one update of B
  samples on each of N ranks equals one update of N*B samples in one process;
- normaliser statistics (sum, sum of squares, count) are summed over ranks;
- evaluation success is averaged over ranks;
- rank 0 alone writes logs, curves and checkpoint metadata (every rank's finished
  episodes are gathered to it for ``episodes.csv``).

``torchrun --nproc-per-node N -m herkit train ...`` sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``; without them (or with
``WORLD_SIZE=1``) training runs in one process and nothing here communicates. The
backend is gloo on CPU and NCCL on CUDA. A collective that fails, because another rank
died or the network broke, raises :class:`DistributedError` instead of hanging past the
timeout.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from herkit.runtime.failures import DistributedError


@dataclass(frozen=True)
class Context:
    """This process's place in the job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def active(self) -> bool:
        """Whether there are other ranks to talk to."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0, the one that writes files."""
        return self.rank == 0

    def device(self, device: str) -> str:
        """``device`` with ``cuda`` pinned to this rank's local GPU."""
        if self.active and device == "cuda":
            return f"cuda:{self.local_rank}"
        return device

    # -- collectives (no-ops in a single process) -------------------------------------------

    def all_sum(self, values: np.ndarray) -> np.ndarray:
        """Element-wise sum over ranks of a float array (float64 on the wire)."""
        if not self.active:
            return values
        tensor = torch.as_tensor(np.asarray(values, np.float64).copy())
        _collective("all_reduce", dist.all_reduce, tensor)
        return tensor.numpy()

    def mean(self, value: float) -> float:
        """Mean of a scalar over ranks."""
        return float(self.all_sum(np.array([value]))[0] / self.world_size)

    def all_true(self, flag: bool) -> bool:
        """Whether ``flag`` holds on every rank (the same answer everywhere)."""
        return bool(self.all_sum(np.array([float(flag)]))[0] == self.world_size)

    def average_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        """Replace each gradient by its mean over ranks (one flat all-reduce)."""
        if not self.active:
            return
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        _collective("all_reduce", dist.all_reduce, flat)
        flat /= self.world_size
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    def broadcast_parameters(self, modules: Iterable[torch.nn.Module]) -> None:
        """Copy every parameter and buffer of ``modules`` from rank 0 to the others."""
        if not self.active:
            return
        for module in modules:
            for tensor in [*module.parameters(), *module.buffers()]:
                _collective("broadcast", dist.broadcast, tensor.data, src=0)

    def checksum_agrees(self, modules: Iterable[torch.nn.Module]) -> bool:
        """Whether the parameters of ``modules`` are bitwise identical on every rank.

        Each rank sums its parameters in the same order; identical parameters give
        identical float64 sums, which are gathered and compared exactly.
        """
        if not self.active:
            return True
        local = sum(float(p.detach().double().sum()) for m in modules for p in m.parameters())
        sums = np.zeros(self.world_size)
        sums[self.rank] = local
        sums = self.all_sum(sums)
        return bool(np.all(sums == sums[0]))

    def gather_objects(self, value: Any) -> list[Any]:
        """Every rank's ``value`` (picklable), in rank order, on every rank; ``[value]``
        in a single process."""
        if not self.active:
            return [value]
        gathered: list[Any] = [None] * self.world_size
        _collective("all_gather_object", dist.all_gather_object, gathered, value)
        return gathered

    def barrier(self) -> None:
        """Wait for every rank."""
        if self.active:
            _collective("barrier", dist.barrier)


def init(device: str = "cpu", timeout_s: float = 300.0) -> Context:
    """Join the job described by torchrun's environment variables (if any)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Context()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    return Context(rank=rank, world_size=world_size, local_rank=local_rank)


def shutdown(synchronize: bool = True) -> None:
    """Leave the process group (if one was joined).

    With ``synchronize`` every rank waits for the others first: a gloo collective can
    return on one rank while its last messages are still travelling to another, and
    closing the connections under them aborts that process. Pass False on an error path,
    where another rank may be gone and the barrier would only wait for the timeout.
    """
    if not dist.is_initialized():
        return
    try:
        if synchronize:
            _collective("barrier", dist.barrier)
    finally:
        dist.destroy_process_group()


def _collective(name: str, operation: object, *args: object, **kwargs: object) -> None:
    try:
        operation(*args, **kwargs)  # type: ignore[operator]
    except (RuntimeError, dist.DistBackendError) as error:
        raise DistributedError(
            f"torch.distributed {name} failed on rank {dist.get_rank()}: another rank has "
            f"probably died or become unreachable ({str(error).splitlines()[0]})"
        ) from None
