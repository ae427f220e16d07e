"""The buffer benchmark's measurement: herkit's buffers timed, and the results checked.

:func:`run_buffer_bench` times herkit's :class:`~herkit.HerReplayBuffer` with
``relabel="sample"`` (plain and ``prioritized=True``) and with ``relabel="store"``:

- **add**: transitions per second while filling an empty buffer to the largest
  ``stored`` size, one step at a time from pre-generated random data: from 1 env, and
  from 16 envs (``n_envs=16``, one ``add`` per step of all 16 envs, whole episodes, so up
  to ``16 * episode_length - 1`` transitions more; the median of three fills of fresh
  buffers, as one takes well under a second).
- **sample**: median milliseconds per ``sample(batch_size)`` call (with OGBench's goal
  mixes too: a value and an actor goal per sample), over as many calls as
  fit in ``seconds``, once the buffer holds each ``stored`` number of real transitions.

:func:`fill` and :func:`measure` do the timing for any buffer (``benchmarks/buffer.py``
times stable-baselines3's and cpprb's with them); :func:`check_targets` compares herkit's
numbers with :data:`TARGETS`.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import cycle, islice
from typing import Any

import numpy as np

from herkit.bench.clock import time_updates
from herkit.bench.data import (
    ACTION_DIM,
    GOAL_DIM,
    MANY_ENVS,
    OBSERVATION_DIM,
    Episodes,
    fetch_reward,
)
from herkit.bench.settings import BufferBenchConfig
from herkit.buffer import HerReplayBuffer
from herkit.buffer.rules import OGBENCH_ACTOR_GOALS, OGBENCH_VALUE_GOALS

_ADD_REPEATS = 3
"""Fresh buffers filled from 16 envs; their median rate is reported."""
_WARMUP_CALLS = 5
_MIN_CALLS = 5

TARGETS = {
    "sample_ms": 0.1,
    "sample_ms_prioritized": 0.3,
    "add_per_s": 100_000.0,
    "add_16env_per_s": 1_000_000.0,
    "sample_growth": 1.2,
}
"""herkit's targets: sample latency (ms, plain and prioritized), add rates (transitions/s
from 1 and 16 envs), and the most the sample latency may grow from the smallest ``stored``
size to each larger one (a ratio)."""


# -- timing ---------------------------------------------------------------------------------------


def _median_ms(call: Callable[[], Any], seconds: float) -> tuple[float, int]:
    """Median wall time of ``call()`` in ms over the calls that fit in ``seconds`` (at least
    ``_MIN_CALLS``, after ``_WARMUP_CALLS``; the garbage collector paused), and the calls."""
    timed = time_updates(
        call,
        seconds=seconds,
        warmup=_WARMUP_CALLS,
        min_calls=_MIN_CALLS,
        per_call=True,
        gc_paused=True,
    )
    assert timed.median_ms is not None  # per_call
    return timed.median_ms, timed.calls


def fill(add: Callable[..., Any], steps: Sequence[tuple[Any, ...]], n: int) -> float:
    """Call ``add(*step)`` for ``n`` steps cycled from ``steps``; return the seconds taken."""
    gc.collect()
    start = time.perf_counter()
    for step in islice(cycle(steps), n):
        add(*step)
    return time.perf_counter() - start


def measure(
    name: str,
    variant: str,
    fill_n: Callable[[int], float],
    size: Callable[[], int],
    sample: Callable[[], Any],
    config: BufferBenchConfig,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Fill a buffer to each stored size in turn (timing the adds), timing ``sample`` at each.

    ``fill_n(n)`` adds ``n`` more transitions and returns the seconds taken, ``size()`` is
    the number of real transitions held, ``sample()`` draws one batch. Returns a row of
    :func:`run_buffer_bench` (``add_16env_per_s`` ``None``; no ``relabel``,
    ``prioritized`` or ratios yet)."""
    filled, fill_seconds = 0, 0.0
    sample_ms: dict[int, float] = {}
    sample_calls: dict[int, int] = {}
    for target in sorted(config.stored):
        fill_seconds += fill_n(target - filled)
        filled = target
        if size() != target:
            raise RuntimeError(f"{name} ({variant}): holds {size()} transitions, expected {target}")
        sample_ms[target], sample_calls[target] = _median_ms(sample, config.seconds)
        progress(
            f"{name} ({variant}): {target:,} stored ({filled / fill_seconds:,.0f} adds/s), "
            f"sample {sample_ms[target]:.3f} ms over {sample_calls[target]:,} calls"
        )
    return {
        "buffer": name,
        "variant": variant,
        "add_per_s": filled / fill_seconds,
        "add_16env_per_s": None,
        "sample_ms": sample_ms,
        "sample_calls": sample_calls,
    }


# -- herkit's buffers ------------------------------------------------------------------------------

_OGBENCH_GOALS = {"value_goals": OGBENCH_VALUE_GOALS, "actor_goals": OGBENCH_ACTOR_GOALS}
_HERKIT_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sample", {"relabel": "sample", "prioritized": False}),
    ("sample + PER", {"relabel": "sample", "prioritized": True}),
    ("store", {"relabel": "store", "prioritized": False}),
    # offline GCRL: a value goal (current, geometric future, random) and an actor goal each
    ("OGBench goals", {"relabel": "sample", "prioritized": False, **_OGBENCH_GOALS}),
)


def _herkit_buffer(config: BufferBenchConfig, n_envs: int, **kwargs: Any) -> HerReplayBuffer:
    return HerReplayBuffer(
        config.capacity,
        observation_shape=OBSERVATION_DIM,
        goal_shape=GOAL_DIM,
        action_shape=ACTION_DIM,
        reward_fn=fetch_reward,
        strategy="future",
        k=config.k,
        n_envs=n_envs,
        seed=config.seed,
        gamma=0.99,
        **kwargs,
    )


def _add_rate_many(
    config: BufferBenchConfig, kwargs: dict[str, Any], steps: list[tuple[Any, ...]]
) -> float:
    """Transitions/s filling a fresh ``MANY_ENVS`` buffer with whole episodes of all envs
    to at least the largest ``stored`` size: the median of ``_ADD_REPEATS`` fills, as one
    fill is short and its first touch of fresh memory makes it noisy."""
    per_episode = MANY_ENVS * config.episode_length
    episodes = -(-max(config.stored) // per_episode)
    rates = []
    for _ in range(_ADD_REPEATS):
        buffer = _herkit_buffer(config, MANY_ENVS, **kwargs)
        seconds = fill(buffer.add, steps, episodes * config.episode_length)
        rates.append(episodes * per_episode / seconds)
        del buffer
    return statistics.median(rates)


def run_buffer_bench(
    config: BufferBenchConfig, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Time herkit's buffers; one row per variant.

    Each row has ``buffer`` (``herkit``), ``variant`` (``sample``: goals drawn at sample
    time, ``store``: at store time; ``+ PER``: prioritized; ``OGBench goals``: offline value
    and actor goal mixes), ``relabel``, ``prioritized``,
    ``add_per_s`` (1 env), ``add_16env_per_s``, ``sample_ms`` and ``sample_calls`` (dicts
    keyed by stored size), and ``add_vs_herkit`` and ``sample_vs_herkit``: ``None`` here,
    the peer / herkit ratios of the other buffers' rows that ``benchmarks/buffer.py`` adds.
    ``progress`` receives a line after each measurement.
    """
    report = progress if progress is not None else (lambda line: None)
    rng = np.random.default_rng(config.seed)
    steps = Episodes.generate(config.episode_length, 1, rng).herkit_steps()
    many = Episodes.generate(config.episode_length, MANY_ENVS, rng).herkit_steps()
    rows = []
    for variant, kwargs in _HERKIT_VARIANTS:
        buffer = _herkit_buffer(config, 1, **kwargs)
        row = measure(
            "herkit",
            variant,
            partial(fill, buffer.add, steps),
            buffer.__len__,
            partial(buffer.sample, config.batch_size),
            config,
            report,
        )
        row |= {key: kwargs[key] for key in ("relabel", "prioritized")}
        del buffer
        row["add_16env_per_s"] = _add_rate_many(config, kwargs, many)
        report(f"herkit ({variant}): {row['add_16env_per_s']:,.0f} adds/s from {MANY_ENVS} envs")
        row |= {"add_vs_herkit": None, "sample_vs_herkit": None}
        rows.append(row)
    gc.collect()
    return rows


# -- targets ---------------------------------------------------------------------------------------


def check_targets(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compare every herkit row with :data:`TARGETS`; one dict per check.

    Each has ``buffer`` (``herkit (<variant>)``), ``target`` (in words), ``value`` and ``met``.
    """
    checks = []

    def check(row: dict[str, Any], target: str, value: float, met: bool) -> None:
        name = f"herkit ({row['variant']})"
        checks.append({"buffer": name, "target": target, "value": value, "met": bool(met)})

    for row in rows:
        if row["buffer"] != "herkit":
            continue
        limit = TARGETS["sample_ms_prioritized" if row["prioritized"] else "sample_ms"]
        for size, ms in row["sample_ms"].items():
            check(row, f"sample @{size:,} < {limit} ms", ms, ms < limit)
        smallest, *larger = sorted(row["sample_ms"])
        limit = TARGETS["sample_growth"]
        for size in larger:
            growth = row["sample_ms"][size] / row["sample_ms"][smallest]
            check(row, f"sample @{size:,} <= {limit}x @{smallest:,}", growth, growth <= limit)
        limit = TARGETS["add_per_s"]
        check(row, f"add >= {limit:,.0f}/s from 1 env", row["add_per_s"], row["add_per_s"] >= limit)
        limit = TARGETS["add_16env_per_s"]
        rate = row["add_16env_per_s"]
        check(row, f"add >= {limit:,.0f}/s from {MANY_ENVS} envs", rate, rate >= limit)
    return checks
