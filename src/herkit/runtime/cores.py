"""How a run spreads over the CPU cores it has: torch threads and env worker processes.

The learner (torch's kernels, ``torch_threads`` threads) and the env workers (processes
that step the envs, several envs each, :class:`herkit.envs.workers.WorkerVectorEnv`) run
at the same time when the loop overlaps them, so together they should not ask for more
cores than the process has: oversubscribed, each waits on the other's time slices.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VECTOR_UNITS", "CorePlan", "available_cores", "cpu_flags", "plan_cores"]

VECTOR_UNITS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
"""The CPU flags that decide how fast a CPU multiplies float32 and bfloat16 matrices."""


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's CPU (``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def available_cores(local_ranks: int = 1) -> int:
    """CPU cores this process may use: those of its affinity mask (else ``os.cpu_count``),
    shared evenly by the ``local_ranks`` processes of a torchrun on this machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, local_ranks))


@dataclass(frozen=True)
class CorePlan:
    """Threads and worker processes of one training process."""

    cores: int
    """CPU cores of this process."""
    torch_threads: int
    """Threads of torch's CPU kernels."""
    env_workers: int
    """Processes stepping the training envs; 0: they step in the trainer process."""
    n_envs: int
    """Training envs."""
    chosen: bool
    """Whether herkit chose the numbers (else they were given)."""

    def describe(self) -> str:
        """One line for the start of a run."""
        how = "chosen for" if self.chosen else "given, on"
        if self.env_workers == 0:
            envs = f"{self.n_envs} env{'s' if self.n_envs > 1 else ''} in the trainer process"
        elif self.n_envs == 1:
            envs = "1 env in 1 worker process"
        else:
            per = self.n_envs / self.env_workers
            each = f"{per:g}" if per == int(per) else f"{per:.1f} on average"
            envs = (f"{self.n_envs} envs in {self.env_workers} worker process"
                    f"{'es' if self.env_workers > 1 else ''} ({each} each)")  # fmt: skip
        text = (f"{envs}, torch on {self.torch_threads} thread"
                f"{'s' if self.torch_threads > 1 else ''} ({how} {self.cores} CPU "
                f"core{'s' if self.cores > 1 else ''})")  # fmt: skip
        if self.torch_threads + self.env_workers > self.cores:
            text += ": more than the cores, so they will wait on each other"
        return text


def plan_cores(
    n_envs: int,
    torch_threads: int | None,
    env_workers: int | None,
    gpu: bool,
    local_ranks: int = 1,
) -> CorePlan:
    """Threads and env workers for a process with ``n_envs`` training envs.

    What is given is kept. Otherwise torch gets one thread on a GPU (it only launches
    kernels) and on CPUs of up to 4 cores (the Fetch-sized update gains little from a
    second thread), a quarter of the cores on larger ones; the env workers get the cores
    left, at most one per env, and none for a single env (a pipe round trip costs more
    than a small env's step).
    """
    cores = available_cores(local_ranks)
    chosen = torch_threads is None or env_workers is None
    if torch_threads is None:
        torch_threads = 1 if gpu or cores <= 4 else cores // 4
    if env_workers is None:
        spare = cores - torch_threads
        env_workers = 0 if n_envs == 1 or spare < 1 else min(n_envs, spare)
    return CorePlan(cores, torch_threads, env_workers, n_envs, chosen)
