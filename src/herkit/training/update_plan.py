"""How a run's updates run: the precision (``fp32``, ``bf16``) and the update mode
(``eager``, ``compiled``, ``captured``, ``compiled-captured``; :mod:`herkit.agents.updates`),
decided once, at the start, from what the machine and the command are.

``--precision auto`` and ``--update-mode auto`` follow fixed rules, never a timing: a
timing on a shared machine follows the load of the moment, so the same command and seed
could train in another precision, and so to other numbers, busy or idle.

- Precision: bf16 where the device multiplies bfloat16 natively (a CPU with AVX512-BF16 or
  AMX, a CUDA GPU that supports it) and the update is large enough to gain from it: its
  hidden layers' matrix products reach
  :data:`~herkit.runtime.cores.LARGE_UPDATE_WORK` multiply-adds per network pass over
  the batch (batch x the sum of the products of adjacent hidden widths). Below that,
  autocast's conversions cost more than bfloat16 saves; fp32 elsewhere.
- Mode: on a CPU, compiled for a run whose offline phase has at least
  :data:`CPU_COMPILE_MIN_UPDATES` gradient steps, where a C++ compiler is found (what
  :func:`torch.compile` builds its CPU kernels with), by an agent that learns a value
  (all offline agents but GCBC): their updates are a few thousand small operations eager,
  and one compiled graph ran them 1.2-1.4 times as fast at 3 x 256, batch 256, and up to
  1.4 at 2 x 128 (QRL 1.0 there; ``benchmarks/update_profile.py``), for a warm-up of
  10-60 s; GCBC's actor alone ran 15 % slower compiled; eager otherwise
  (online runs: their updates were not timed compiled against eager on a CPU; ``--update-mode
  compiled`` asks for it), and for the ranks of a torchrun job; on one CUDA GPU,
  compiled-captured where the run expects at least :data:`COMPILE_MIN_UPDATES` updates
  (compiling then pays), else captured. A captured mode that fails on this GPU is seen in
  a trial of a few updates at the start (pass or fail, not a timing) and the next one is
  taken: captured, then eager.

The choice is written to the run's ``config.json`` and ``--resume`` reads it back, so a
resumed run keeps it. ``herkit bench update`` times every precision and mode on a machine,
for a user who wants to pin the fastest with the flags.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch

from herkit.agents.updates import mode_available
from herkit.runtime.cores import LARGE_UPDATE_WORK, cpu_flags, update_work
from herkit.runtime.precision import fast_bf16, synthetic_batch

__all__ = [
    "COMPILE_MIN_UPDATES",
    "CPU_COMPILE_MIN_UPDATES",
    "UpdatePlan",
    "auto_modes",
    "auto_precision",
    "choose_update",
    "first_error",
    "no_profiler_notes",
]

COMPILE_MIN_UPDATES = 200_000
"""On one CUDA GPU ``auto`` compiles before capturing where a run expects at least this many
updates: compiling costs about a minute, and saves about 0.3 ms an update over a plain
capture (1,240 against 2,020 updates/s at 3 x 256, batch 256, on an H100)."""

CPU_COMPILE_MIN_UPDATES = 20_000
"""On a CPU ``auto`` compiles an offline phase of at least this many gradient steps: at the
quick start's size (2 x 128, batch 256) compiling took 27-45 s of warm-up and saved about
4 ms an update, so it pays after about 10,000 updates."""

TRIAL_UPDATES = 6
"""Updates of a captured mode's trial: warm-up, capture and replays."""


@dataclass(frozen=True)
class UpdatePlan:
    """A precision and an update mode, and why they were chosen."""

    precision: str
    mode: str
    why: str = "given"
    """Why the precision, in words (``given`` where the flag named it)."""
    notes: tuple[str, ...] = ()
    """Why the mode, in words, and what failed in a trial (empty where it was given)."""


def auto_precision(device: torch.device, hidden: Sequence[int], batch_size: int) -> tuple[str, str]:
    """``(precision, why)`` of ``--precision auto`` for networks of ``hidden`` widths at
    ``batch_size`` on ``device`` (see the module)."""
    if not fast_bf16(device):
        what = "GPU" if device.type == "cuda" else "CPU"
        return "fp32", f"this {what} does not multiply bfloat16 natively"
    if device.type == "cuda":
        native = "this GPU multiplies bfloat16 natively"
    else:
        units = ", ".join(sorted({"avx512_bf16", "amx_bf16"} & cpu_flags()))
        native = f"this CPU multiplies bfloat16 natively ({units})"
    work = update_work(hidden, batch_size)
    least = f"{LARGE_UPDATE_WORK:,} multiply-adds per pass"
    if work >= LARGE_UPDATE_WORK:
        size = f"the hidden layers make {work:,} multiply-adds per pass of batch {batch_size}"
        return "bf16", f"{native} and {size}, at least {least}"
    size = (
        f"the hidden layers make {work:,} multiply-adds per pass of batch {batch_size}"
        if len(hidden) > 1
        else "one hidden layer, no product between hidden layers"
    )
    return "fp32", f"{native}, but the update is too small to gain: {size} (bf16 from {least})"


def auto_modes(
    device: torch.device,
    expected_updates: float,
    distributed: bool,
    offline_updates: float = 0,
    learns_values: bool = True,
) -> tuple[list[str], str]:
    """The modes ``--update-mode auto`` tries in turn (the first that runs is taken) and
    why, for a run of ``expected_updates`` updates on ``device``, ``offline_updates`` of
    them on a dataset, by an agent that ``learns_values`` (all but GCBC; see the module)."""
    if distributed:
        return ["eager"], "the ranks of a torchrun job average gradients within each update"
    if not mode_available("captured", device):
        if offline_updates and not learns_values:
            return ["eager"], (
                "on a CPU; an actor alone (no value to learn) is an update too small for "
                "compiling to pay"
            )
        if offline_updates < CPU_COMPILE_MIN_UPDATES:
            return ["eager"], (
                "on a CPU; --update-mode compiled compiles, at a minute's start-up cost "
                f"(auto compiles an offline phase of {CPU_COMPILE_MIN_UPDATES:,} steps or more)"
            )
        compiler = os.environ.get("CXX") or "g++"
        if shutil.which(compiler) is None:
            return ["eager"], (
                f"on a CPU without a C++ compiler ({compiler} not found), which compiling needs"
            )
        return ["compiled"], (
            f"on a CPU, {offline_updates:,.0f} gradient steps on a dataset: one compiled graph "
            "runs an offline update's thousands of operations faster, for a warm-up of 10-60 s"
        )
    if expected_updates >= COMPILE_MIN_UPDATES:
        why = f"one GPU, {expected_updates:,.0f} updates expected: compiling pays"
        return ["compiled-captured", "captured", "eager"], why
    why = f"one GPU, {expected_updates:,.0f} updates expected: too few for compiling to pay"
    return ["captured", "eager"], why


def choose_update(
    agent: Any,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Space,
    hidden: Sequence[int],
    batch_size: int,
    precision: str = "auto",
    mode: str = "auto",
    expected_updates: float = 0.0,
    offline_updates: float = 0.0,
    learns_values: bool = True,
    on_device: bool = False,
    distributed: bool = False,
    all_true: Callable[[bool], bool] | None = None,
    tell: Callable[[str], None] | None = None,
    actor_goals: bool = False,
    subgoals: bool = False,
) -> UpdatePlan:
    """The precision and update mode of ``agent``'s updates, set on it.

    What is given (not ``auto``) is kept; ``auto`` follows :func:`auto_precision` and
    :func:`auto_modes`. With several ranks (``distributed``), ``all_true`` makes them
    agree: bf16 only where every rank would take it. The modes that may fail on a device
    (captured ones) are tried on a synthetic batch of these spaces (on the agent's device
    where ``on_device``, with actor goals where ``actor_goals``, HIQL's subgoals where
    ``subgoals``); ``tell`` hears a line
    before that trial. The agent's state is restored after a trial.
    """
    device = agent.device
    why = "given"
    if precision == "auto":
        precision, why = auto_precision(device, hidden, batch_size)
        if all_true is not None:  # every rank asks, whatever it chose
            everywhere = all_true(precision == "bf16")
            if precision == "bf16" and not everywhere:
                precision, why = "fp32", "another rank's device does not multiply bfloat16 natively"
    notes: list[str] = []
    if mode != "auto":
        modes = [mode]
    else:
        modes, mode_why = auto_modes(
            device, expected_updates, distributed, offline_updates, learns_values
        )
        notes.append(mode_why)
    agent.set_precision(precision)
    chosen = modes[-1]
    tried = [candidate for candidate in modes[:-1] if "captured" in candidate]
    if tried and tell is not None:
        tell(f"trying {', '.join(tried)} updates (a few updates each, not a timing)...")
    for candidate in modes[:-1]:
        error = _trial(
            agent,
            observation_space,
            action_space,
            batch_size,
            candidate,
            on_device,
            actor_goals,
            subgoals,
        )
        if error is None:
            chosen = candidate
            break
        notes.append(f"{candidate} failed here: {error}")
    agent.set_update_mode(chosen)
    return UpdatePlan(precision, chosen, why, tuple(notes))


def _trial(
    agent: Any,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Space,
    batch_size: int,
    mode: str,
    on_device: bool,
    actor_goals: bool,
    subgoals: bool = False,
) -> str | None:
    """Run :data:`TRIAL_UPDATES` updates of ``agent`` in ``mode`` on a synthetic batch;
    None where they ran, else the error in one line. The agent's state is restored."""
    batch = synthetic_batch(
        observation_space, action_space, batch_size, actor_goals=actor_goals, subgoals=subgoals
    )
    saved = agent.state_dict()
    try:
        agent.update_normalizer(batch.observation, batch.goal)
        data = batch.to_torch(agent.device) if on_device else batch
        agent.set_update_mode(mode)
        with no_profiler_notes():
            for _ in range(TRIAL_UPDATES):
                agent.update(data)
            if agent.device.type == "cuda":
                torch.cuda.synchronize(agent.device)
    except Exception as error:
        return first_error(error)
    finally:
        agent.load_state_dict(saved)
        agent.update_metrics()  # the trial's updates are not the run's
    return None


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


_PROFILER_NOTES = {
    "torch._dynamo.variables.ctx_manager": "Profiler record function %s will be ignored",
    "torch._dynamo.variables.torch": "Profiler function %s will be ignored",
}
"""The warnings torch.compile logs (logger: message) when it traces past the profiler
hooks of an optimiser step: it leaves them out, which changes nothing of the update."""


def _not_a_profiler_note(record: logging.LogRecord) -> bool:
    return record.msg != _PROFILER_NOTES.get(record.name)


@contextmanager
def no_profiler_notes() -> Iterator[None]:
    """torch.compile's notes on the profiler hooks (:data:`_PROFILER_NOTES`) held back
    within the block (a run that compiles its update); torch's other messages pass."""
    loggers = [logging.getLogger(name) for name in _PROFILER_NOTES]
    for logger in loggers:
        logger.addFilter(_not_a_profiler_note)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(_not_a_profiler_note)
