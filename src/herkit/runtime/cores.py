"""How a run spreads over the CPU cores it has: torch threads and env worker processes.

The learner (torch's kernels, ``torch_threads`` threads) and the env workers (processes
that step the envs, several envs each, :class:`herkit.envs.workers.WorkerVectorEnv`) run
at the same time when the loop overlaps them, so together they should not ask for more
cores than the process has: oversubscribed, each waits on the other's time slices.

A learner with nothing beside it (a run on a recorded dataset: no env steps while it
learns) takes every core (:func:`plan_cores` with ``alone``). Torch's OpenMP threads wait
for work by spinning, so where other processes use some of those cores each update costs
several times the CPU (measured: about 4 times, 2 threads beside one busy process):
:class:`CoreWatch` looks at the machine every few seconds and gives torch the cores the
other processes leave it, back up to the plan's threads once they are free.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "VECTOR_UNITS",
    "CorePlan",
    "CoreWatch",
    "available_cores",
    "cpu_flags",
    "machine_ticks",
    "plan_cores",
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
    """Whether herkit chose the numbers (else they were given)."""
    alone: bool = False
    """Whether the learner runs with nothing beside it (no env steps while it learns)."""

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
            envs = (
                f"{self.n_envs} envs in {self.env_workers} worker process"
                f"{'es' if self.env_workers > 1 else ''} ({each} each)"
            )
        beside = ", nothing stepping beside it" if self.alone and self.chosen else ""
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
) -> CorePlan:
    """Threads and env workers for a process with ``n_envs`` training envs.

    What is given is kept. Otherwise torch gets one thread on a GPU (it only launches
    kernels), every core where it learns ``alone`` (a recorded dataset: no env steps
    beside it), else one thread on CPUs of up to 4 cores (the Fetch-sized update gains
    little from a second thread) and a quarter of the cores on larger ones; the env
    workers get the cores left, at most one per env, and none for a single env (a pipe
    round trip costs more than a small env's step).
    """
    cores = available_cores(local_ranks)
    chosen = torch_threads is None or env_workers is None
    if torch_threads is None:
        torch_threads = 1 if gpu else cores if alone else 1 if cores <= 4 else cores // 4
    if env_workers is None:
        spare = cores - torch_threads
        env_workers = 0 if n_envs == 1 or spare < 1 else min(n_envs, spare)
    return CorePlan(cores, torch_threads, env_workers, n_envs, chosen, alone)


def machine_ticks() -> tuple[float, float]:
    """Clock ticks since boot of every core together: ``(busy, total)`` (``/proc/stat``;
    idle and iowait are not busy); ``(0, 0)`` where there is no /proc."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0.0, 0.0
    total = float(sum(fields))
    return total - fields[3] - fields[4], total


def own_ticks() -> float:
    """This process's CPU time (every thread), in clock ticks."""
    times = os.times()
    return (times.user + times.system) * os.sysconf("SC_CLK_TCK")


class CoreWatch:
    """Torch's threads as the cores other processes leave this one (see the module):
    :meth:`check`, every ``every_s`` seconds at most, measures the cores the others used
    since the last look, and says how many threads to run, between 1 and ``most``: fewer
    once the others use ``drop`` of a core or more, ``most`` again once they use no more
    than ``free``."""

    def __init__(
        self,
        most: int,
        cores: int,
        every_s: float = 5.0,
        drop: float = 0.6,
        free: float = 0.3,
        machine: Callable[[], tuple[float, float]] = machine_ticks,
        own: Callable[[], float] = own_ticks,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.most, self.cores, self.every_s = most, cores, every_s
        self.drop, self.free = drop, free
        self.machine, self.own, self.clock = machine, own, clock
        self.threads = most
        """The threads torch runs now."""
        self.others = 0.0
        """The cores the other processes used in the last interval looked at."""
        self._last = (self.clock(), *self.machine(), self.own())

    def check(self) -> int | None:
        """The threads to run from now on where they should change, else None (also
        between two looks, and where the machine cannot be read)."""
        now = self.clock()
        if now - self._last[0] < self.every_s:
            return None
        busy, total, own = *self.machine(), self.own()
        _, busy_then, total_then, own_then = self._last
        self._last = (now, busy, total, own)
        if total <= total_then:
            return None
        per_core = (total - total_then) / self.cores  # ticks of one core in the interval
        others = max(0.0, (busy - busy_then) - (own - own_then)) / per_core
        self.others = others
        threads = self.threads
        if others >= self.drop:
            threads = max(1, min(self.most, self.cores - round(others)))
        elif others <= self.free:
            threads = self.most
        if threads == self.threads:
            return None
        self.threads = threads
        return threads
