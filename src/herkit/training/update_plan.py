"""How a run's updates run, chosen by timing them: the precision (``fp32``, ``bf16``) and
the update mode (``eager``, ``compiled``, ``captured``, ``compiled-captured``;
:mod:`herkit.agents.updates`).

``--precision auto`` and ``--update-mode auto`` time a few updates of the run's own
networks at its batch size in every combination the device can run and take the
fastest, keeping fp32 unless bf16 is at least :data:`AUTO_BF16_SPEEDUP` times faster and
eager unless another mode is at least :data:`AUTO_MODE_SPEEDUP` times faster. Compiling
costs tens of seconds (:data:`COMPILE_SECONDS`), so the compiled modes are timed only
where that is at most :data:`COMPILE_SHARE` of the run's expected update time. The choice
and its timings are recorded in the run's ``config.json``; ``--resume`` and a rerun that
names them reuse it, so a timing that flips cannot make one seed give two results.

With several ranks each rank times its own updates alone (no gradient all-reduce: how
many updates fit the timing's seconds follows each rank's clock, and unequal counts of
collectives would cross the ranks' messages) and the timings are averaged over ranks, so
every rank makes the same choice; a mode that fails on any rank is left out on all.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import torch

from herkit.agents.updates import UPDATE_MODES, mode_available
from herkit.buffer.batch import Batch
from herkit.runtime.distributed import Context
from herkit.runtime.precision import fast_bf16, synthetic_batch

__all__ = [
    "AUTO_BF16_SPEEDUP",
    "AUTO_MODE_SPEEDUP",
    "COMPILE_SECONDS",
    "COMPILE_SHARE",
    "UpdatePlan",
    "choose_update",
    "time_update",
]

AUTO_BF16_SPEEDUP = 1.1
"""``auto`` takes bf16 where the run's update is at least this much faster in it."""
AUTO_MODE_SPEEDUP = 1.05
"""``auto`` takes a mode other than eager where it is at least this much faster."""
COMPILE_SECONDS = 60.0
"""What compiling an update is expected to cost, in seconds: 20-35 s per precision for a
DDPG update on a 2-core Zen 4 (torch 2.13), both precisions timed."""
COMPILE_SHARE = 0.05
"""The compiled modes are timed where :data:`COMPILE_SECONDS` is at most this share of
the run's expected update time (its updates at the eager speed)."""


@dataclass(frozen=True)
class UpdatePlan:
    """A precision and an update mode, with the timings they were chosen by."""

    precision: str
    mode: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    """Milliseconds per update by ``"PRECISION MODE"`` (empty when nothing was timed)."""
    why: str = "given"
    """How the choice was made, in words (the timings)."""
    notes: tuple[str, ...] = ()
    """What was not timed, or failed, and why."""


def time_update(
    agent: Any,
    batch: Batch,
    precision: str,
    mode: str,
    seconds: float = 0.25,
    repeats: int = 3,
) -> float:
    """Milliseconds per update of ``agent`` on ``batch`` in ``precision`` and ``mode``:
    after warm-up calls (compiling, capturing), at least ``repeats`` updates and
    ``seconds``. Changes the agent: callers restore its state."""
    agent.set_precision(precision)
    agent.set_update_mode(mode)
    warmup = {"eager": 1, "compiled": 2}.get(mode, 6)  # captured: warm-up, capture, replay
    for _ in range(warmup):
        agent.update(batch)
    _synchronize(agent.device)
    done, start = 0, time.perf_counter()
    while done < repeats or time.perf_counter() - start < seconds:
        agent.update(batch)
        done += 1
        if done % 8 == 0:
            _synchronize(agent.device)
    _synchronize(agent.device)
    return 1000 * (time.perf_counter() - start) / done


def choose_update(
    agent: Any,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Space,
    batch_size: int,
    precision: str = "auto",
    mode: str = "auto",
    expected_updates: float = 0.0,
    on_device: bool = False,
    distributed: bool = False,
    mean: Callable[[float], float] | None = None,
    tell: Callable[[str], None] | None = None,
    actor_goals: bool = False,
) -> UpdatePlan:
    """The precision and update mode for ``agent``'s updates at ``batch_size`` (on batches
    with actor goals where ``actor_goals``: an offline agent's).

    What is given (not ``auto``) is kept; the rest is timed (:func:`time_update`) on a
    synthetic batch of these spaces, on the agent's device where ``on_device`` (a
    buffer there), in every combination the device can run: bf16 only where it
    multiplies bfloat16 natively, the captured modes only on CUDA and not across ranks
    (``distributed``), the compiled ones only where the run's ``expected_updates`` make
    their cost small (:data:`COMPILE_SHARE`). ``mean`` averages each timing over ranks,
    so every rank decides alike. The agent's state is restored afterwards; its
    precision and mode are set to the choice. A mode that fails to compile or capture
    here is left out, and the reason kept in :attr:`UpdatePlan.notes`. ``tell`` hears a
    line before the slow timings (compiling, capturing) and one with their outcome;
    torch.compile's notes on the profiler hooks it skips are held back meanwhile.
    """
    device = agent.device
    precisions = (
        [precision]
        if precision != "auto"
        else (["fp32", "bf16"] if fast_bf16(device) else ["fp32"])
    )
    if mode != "auto":
        modes = [mode]
    else:
        modes = [m for m in UPDATE_MODES if mode_available(m, device)]
        if distributed:
            modes = [m for m in modes if "captured" not in m]
    if len(precisions) == 1 and len(modes) == 1:
        agent.set_precision(precisions[0])
        agent.set_update_mode(modes[0])
        return UpdatePlan(precisions[0], modes[0])
    batch = synthetic_batch(observation_space, action_space, batch_size, actor_goals=actor_goals)
    saved = agent.state_dict()
    timings: dict[str, float] = {}
    notes: list[str] = []
    slow: list[tuple[str, str]] = []  # what compiles or captures: seconds to minutes
    started = time.perf_counter()
    with _alone(agent):  # no collective: each rank times its own updates
        try:
            agent.update_normalizer(batch.observation, batch.goal)
            if on_device:
                batch = batch.to_torch(device)
            for each in precisions:
                timings[f"{each} eager"] = _timed(agent, batch, each, "eager", mean)
            eager_s = min(timings.values()) / 1000 * expected_updates
            compile_ok = mode != "auto" or COMPILE_SECONDS <= COMPILE_SHARE * eager_s
            if not compile_ok and any("compiled" in m for m in modes):
                notes.append(
                    f"compiling not timed: it costs about {COMPILE_SECONDS:g} s, more than "
                    f"{COMPILE_SHARE:.0%} of the run's {eager_s:,.0f} s of updates"
                )
            slow = [
                (each, candidate)
                for each in precisions
                for candidate in modes
                if candidate != "eager" and ("compiled" not in candidate or compile_ok)
            ]
            started = time.perf_counter()
            if slow and tell is not None:
                tell(_timing_line(slow, precision, mode))
            with _no_profiler_notes():
                for each, candidate in slow:
                    if candidate not in modes:  # failed in the other precision
                        continue
                    try:
                        timings[f"{each} {candidate}"] = _timed(agent, batch, each, candidate, mean)
                    except Exception as error:
                        notes.append(f"{candidate} failed here: {first_error(error)}")
                        modes = [m for m in modes if m != candidate]
                        agent.load_state_dict(saved)
        finally:
            agent.load_state_dict(saved)
            agent.update_metrics()  # the timing updates are not the run's
    chosen_precision, chosen_mode = _pick(timings, precisions, modes)
    agent.set_precision(chosen_precision)
    agent.set_update_mode(chosen_mode)
    if slow and tell is not None:
        seconds = time.perf_counter() - started
        tell(f"timed in {seconds:.0f} s: the updates run {chosen_precision} {chosen_mode}")
    on = "device" if on_device else "host"
    summary = ", ".join(f"{name} {ms:.3g}" for name, ms in timings.items())
    why = f"timed at batch {batch_size} on the {on}: {summary} ms per update"
    return UpdatePlan(chosen_precision, chosen_mode, timings, why, tuple(notes))


def first_error(error: BaseException) -> str:
    """The first line of the error that started ``error``'s chain, and what it ended in:
    a CUDA graph's capture that a step's error broke ends in a capture error that hides
    the step's own."""
    first, seen = error, {id(error)}
    while first.__context__ is not None and id(first.__context__) not in seen:
        first = first.__context__
        seen.add(id(first))

    def said(each: BaseException) -> str:
        lines = str(each).strip().splitlines()
        return f"{type(each).__name__}: {lines[0]}" if lines else type(each).__name__

    return said(first) if first is error else f"{said(first)} (then {said(error)})"


def _timing_line(slow: Sequence[tuple[str, str]], precision: str, mode: str) -> str:
    """What is about to be timed, why, and the flags that choose without timing."""
    flags = [
        flag
        for flag, value in (("--update-mode", mode), ("--precision", precision))
        if value == "auto"
    ]
    choose = f"{' and '.join(flags)} choose{'s' if len(flags) == 1 else ''} without timing"
    what = ", ".join(f"{each} {candidate}" for each, candidate in slow)
    compiles = any("compiled" in candidate for _, candidate in slow)
    cost = "compiling takes a minute or two" if compiles else "capturing takes seconds"
    return f"timing the update in {what} against eager, to run the fastest; {cost} ({choose})..."


_PROFILER_NOTES = {
    "torch._dynamo.variables.ctx_manager": "Profiler record function %s will be ignored",
    "torch._dynamo.variables.torch": "Profiler function %s will be ignored",
}
"""The warnings torch.compile logs (logger: message) when it traces past the profiler
hooks of an optimiser step: it leaves them out, which changes nothing of the update."""


def _not_a_profiler_note(record: logging.LogRecord) -> bool:
    return record.msg != _PROFILER_NOTES.get(record.name)


@contextmanager
def _no_profiler_notes() -> Iterator[None]:
    """torch.compile's notes on the profiler hooks (:data:`_PROFILER_NOTES`) held back
    within the block; torch's other messages pass."""
    loggers = [logging.getLogger(name) for name in _PROFILER_NOTES]
    for logger in loggers:
        logger.addFilter(_not_a_profiler_note)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(_not_a_profiler_note)


def _timed(
    agent: Any, batch: Batch, precision: str, mode: str, mean: Callable[[float], float] | None
) -> float:
    """:func:`time_update`, averaged over ranks by ``mean``; raises on every rank where it
    failed on any (each rank calls ``mean`` once, failed or not)."""
    try:
        ms = time_update(agent, batch, precision, mode)
    except Exception:
        if mean is not None:
            mean(math.inf)  # the other ranks learn that it failed here
        raise
    if mean is not None:
        ms = mean(ms)
        if math.isinf(ms):
            raise RuntimeError(f"{precision} {mode} failed on another rank")
    return round(ms, 4)


@contextmanager
def _alone(agent: Any) -> Iterator[None]:
    """``agent`` as if in one process (no collective) within the block."""
    joined = agent.dist
    agent.dist = Context()
    try:
        yield
    finally:
        agent.dist = joined


def _pick(
    timings: dict[str, float], precisions: Sequence[str], modes: Sequence[str]
) -> tuple[str, str]:
    """The fastest combination among ``modes`` (a mode given: that one; the eager timings
    only pick the precision), keeping fp32 and eager unless the others win clearly."""

    allowed = list(modes) or ["eager"]  # a given mode that failed: eager, as timed

    def best(precision: str) -> tuple[float, str]:
        runs = [
            (timings[f"{precision} {mode}"], mode)
            for mode in allowed
            if f"{precision} {mode}" in timings
        ]
        return min(runs) if runs else (float("inf"), allowed[0])

    precision = precisions[0]
    if "bf16" in precisions and "fp32" in precisions:
        precision = "bf16" if best("fp32")[0] >= AUTO_BF16_SPEEDUP * best("bf16")[0] else "fp32"
    fastest, mode = best(precision)
    eager = timings.get(f"{precision} eager")
    if "eager" in allowed and eager is not None and mode != "eager":
        if eager < AUTO_MODE_SPEEDUP * fastest:
            mode = "eager"
    return precision, mode


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
