"""The one clock of every update timing: :func:`time_updates`.

``herkit bench update``, the buffer benchmark's sample latency and the timings of
``benchmarks/`` (update_speed.py, throughput.py, precision.py, sb3_updates.py) all time
their calls here, so that "updates per second" means one thing everywhere: calls of a
step (``buffer.sample`` + ``agent.update``, or whatever is timed) over a wall-clock
window that starts after the warm-up and ends once the device has finished.

The module imports nothing of herkit: ``benchmarks/update_speed.py`` loads this file by
its path into processes that run another commit's herkit, so that both sides of its
comparison are timed by the same clock.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["UpdateTiming", "time_updates"]


class UpdateTiming(NamedTuple):
    """What :func:`time_updates` measured."""

    updates_per_s: float
    """Updates per second: the median of :attr:`rates` (the one rate where ``repeats=1``)."""
    rates: tuple[float, ...]
    """Updates per second of each repeat: its calls times ``updates_per_call`` over the
    wall seconds from the start of its first call to the end of its last (after
    ``synchronize``)."""
    calls: int
    """Timed calls of the step, all repeats together."""
    seconds: float
    """Wall seconds of the timed calls, all repeats together."""
    warmup_s: float
    """Wall seconds of the warm-up calls (compiling, capturing), ``synchronize`` included."""
    median_ms: float | None
    """With ``per_call``: the median milliseconds of one call; else None."""


def time_updates(
    step: Callable[[], Any],
    *,
    seconds: float | None = None,
    count: int | None = None,
    warmup: int = 0,
    synchronize: Callable[[], Any] | None = None,
    min_calls: int = 1,
    repeats: int = 1,
    updates_per_call: int = 1,
    per_call: bool = False,
    gc_paused: bool = False,
) -> UpdateTiming:
    """Time ``step()`` (one update, or ``updates_per_call`` of them) after ``warmup``
    untimed calls: for ``seconds`` of wall time (and at least ``min_calls`` calls; a
    call that starts before the window ends is counted whole), or for exactly ``count``
    calls, ``repeats`` times in a row.

    ``synchronize`` (e.g. ``torch.cuda.synchronize``) is called after the warm-up and
    before each reading of the clock that ends a window, so that work queued on a device
    is inside the time it belongs to. Two measures, both returned:

    - the rate (:attr:`UpdateTiming.updates_per_s`): updates over the window's wall time,
      the throughput a training loop sees;
    - with ``per_call``, the median time of one call (:attr:`UpdateTiming.median_ms`),
      each call timed on its own (``synchronize`` after each): a latency that a
      pause now and then (a garbage collection, another process) leaves alone.

    ``gc_paused`` collects garbage before the timed calls and pauses the collector while
    they run (the buffer benchmark's sample latency). Returns an :class:`UpdateTiming`.
    """
    if (seconds is None) == (count is None):
        raise ValueError(f"give one of seconds or count, got seconds={seconds}, count={count}")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    for name, value, least in (
        ("count", count, 1),
        ("warmup", warmup, 0),
        ("min_calls", min_calls, 1),
        ("repeats", repeats, 1),
        ("updates_per_call", updates_per_call, 1),
    ):
        if value is not None and (not isinstance(value, int) or value < least):
            raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    sync = synchronize if synchronize is not None else _nothing
    window = seconds  # None: exactly ``count`` calls
    if count is not None:
        min_calls = count
    clock = time.perf_counter
    started = clock()
    for _ in range(warmup):
        step()
    sync()
    warmup_s = clock() - started
    rates: list[float] = []
    call_s: list[float] = []
    calls, total_s = 0, 0.0
    collecting = gc.isenabled()
    if gc_paused:
        gc.collect()
        gc.disable()
    try:
        for _ in range(repeats):
            done, start = 0, clock()
            while done < min_calls or (window is not None and clock() - start < window):
                if per_call:
                    begun = clock()
                    step()
                    sync()
                    call_s.append(clock() - begun)
                else:
                    step()
                done += 1
            sync()
            elapsed = clock() - start
            rates.append(done * updates_per_call / elapsed)
            calls, total_s = calls + done, total_s + elapsed
    finally:
        if gc_paused and collecting:
            gc.enable()
    median_ms = statistics.median(call_s) * 1e3 if per_call else None
    return UpdateTiming(statistics.median(rates), tuple(rates), calls, total_s, warmup_s, median_ms)


def _nothing() -> None:
    """No device to wait for."""
