"""How a run spreads over the CPU cores it has: torch threads and env worker processes.

The learner (torch's kernels, ``torch_threads`` threads) and the env workers (processes
that step the envs, several envs each, :class:`herkit.envs.workers.WorkerVectorEnv`) run
at the same time when the loop overlaps them, so together they should not ask for more
cores than the process has: oversubscribed, each waits on the other's time slices.

A learner with nothing beside it (a run on a recorded dataset: no env steps while it
learns) takes every core (:func:`plan_cores` with ``alone``).

The plan is made once, from the cores the process may use (its affinity mask), never from
the load of the moment, and kept for the whole run: a matrix product sums in another order
on another number of threads, so a run whose threads followed the other processes would
give other numbers busy or idle. On a machine shared with other busy processes, torch's
threads wait for each other's time slices (measured on a 2-core Xeon beside one busy
process: 2 threads 51-54 gradient steps/s, 1 thread 52-59); ``--torch-threads 1`` keeps
such a run to one core.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LARGE_UPDATE_WORK",
    "VECTOR_UNITS",
    "CorePlan",
    "available_cores",
    "cpu_flags",
    "plan_cores",
    "update_work",
]

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
    """Whether herkit chose the torch threads (else they were given)."""
    alone: bool = False
    """Whether the learner runs with nothing beside it (no env steps while it learns)."""
    large_update: bool = True
    """Whether the update is large enough to share among threads (:data:`LARGE_UPDATE_WORK`)."""
    workers_chosen: bool | None = None
    """Whether herkit chose the env workers (else they were given); None: as :attr:`chosen`."""

    def describe(self) -> str:
        """One line for the start of a run."""
        workers_chosen = self.chosen if self.workers_chosen is None else self.workers_chosen
        if self.n_envs == 1 or self.chosen == workers_chosen:  # one env: no workers to choose
            how = "chosen for" if self.chosen else "given, on"
        elif self.chosen:
            how = "env workers given, threads chosen for"
        else:
            how = "threads given, env workers chosen for"
        if self.env_workers == 0:
            envs = f"{self.n_envs} env{'s' if self.n_envs > 1 else ''} in the trainer process"
        elif self.n_envs == 1:
            envs = "1 env in 1 worker process"
        else:
            per = self.n_envs / self.env_workers
            each = f"{per:g}" if per == int(per) else f"{per:.1f} on average"
            envs = (
                f"{self.n_envs} envs in {self.env_workers} worker process"
                f"{'es' if self.env_workers > 1 else ''} ({each} each)"
            )
        beside = ""
        if self.alone and self.chosen:
            beside = ", nothing stepping beside it"
            if not self.large_update:
                beside += ", an update too small to share"
        text = (
            f"{envs}, torch on {self.torch_threads} thread"
            f"{'s' if self.torch_threads > 1 else ''} ({how} {self.cores} CPU "
            f"core{'s' if self.cores > 1 else ''}{beside})"
        )
        if self.torch_threads + self.env_workers > self.cores:
            text += ": more than the cores, so they will wait on each other"
        return text


def plan_cores(
    n_envs: int,
    torch_threads: int | None,
    env_workers: int | None,
    gpu: bool,
    local_ranks: int = 1,
    alone: bool = False,
    large_update: bool = True,
) -> CorePlan:
    """Threads and env workers for a process with ``n_envs`` training envs.

    What is given is kept. Otherwise torch gets one thread on a GPU (it only launches
    kernels), every core where it learns ``alone`` (a recorded dataset: no env steps
    beside it) on a ``large_update`` (one thread for a smaller one: its matrix products
    are too small to share, and two threads that wait on each other beside any other
    busy process cost several times one), else one thread on CPUs of up to 4 cores (the
    Fetch-sized update gains little from a second thread) and a quarter of the cores on
    larger ones; the env workers get the cores left, at most one per env, and none for a
    single env (a pipe round trip costs more than a small env's step).
    """
    cores = available_cores(local_ranks)
    chosen, workers_chosen = torch_threads is None, env_workers is None
    if torch_threads is None:
        if gpu:
            torch_threads = 1
        elif alone:
            torch_threads = cores if large_update else 1
        else:
            torch_threads = 1 if cores <= 4 else cores // 4
    if env_workers is None:
        spare = cores - torch_threads
        env_workers = 0 if n_envs == 1 or spare < 1 else min(n_envs, spare)
    return CorePlan(
        cores, torch_threads, env_workers, n_envs, chosen, alone, large_update, workers_chosen
    )


LARGE_UPDATE_WORK = 1 << 24
"""An update whose hidden layers make at least this many multiply-adds per network pass
over its batch (:func:`update_work`) is large: it gains from bfloat16 on a device that
multiplies it natively, and from a second thread of torch where nothing else runs. Three
hidden layers of 256 at batch 256 make 33.6 million, two of 256 at batch 256 16.8 million,
one layer of 256 (bit flipping's DQN) none. Measured on a 2-core Zen 4 (one torch thread):
bf16 ran 0.7-0.8x as fast as fp32 with one hidden layer of 256 or two of 64 at batch 256,
1.15-1.3x with two of 256, 1.3x with three of 256, 1.6-1.8x at batch 1024."""


def update_work(hidden: Sequence[int], batch_size: int) -> int:
    """Multiply-adds of the matrix products between hidden layers in one pass of a network
    with ``hidden`` widths over ``batch_size`` samples (see :data:`LARGE_UPDATE_WORK`)."""
    return batch_size * sum(a * b for a, b in itertools.pairwise(hidden))
