"""Speed benchmark of :class:`herkit.HerReplayBuffer` alone: ``herkit bench buffer``.

It times the two operations an off-policy HER agent does all the time, with FetchPush's
shapes (observation 25, goals 3, action 4, float32), episodes of 50 steps ended by
``truncated``, a 1M-transition buffer, the ``future`` strategy with ``k = 4``, Fetch's
sparse reward ``-(||achieved - desired|| > 0.05)`` and batches of 256:

- **add**: transitions per second while filling an empty buffer to the largest
  ``stored`` size, one step at a time from pre-generated random data: from 1 env, and
  from 16 envs (``n_envs=16``, one ``add`` per step of all 16 envs, whole episodes, so up
  to ``16 * episode_length - 1`` transitions more; the median of three fills of fresh
  buffers, as one takes well under a second).
- **sample**: median milliseconds per ``sample(batch_size)`` call, over as many calls as
  fit in ``seconds``, once the buffer holds each ``stored`` number of real transitions.

herkit is timed with ``relabel="sample"`` (plain and ``prioritized=True``) and with
``relabel="store"``; :func:`check_targets` compares the numbers with :data:`TARGETS`.
The same data against stable-baselines3's and cpprb's HER buffers is
``python benchmarks/buffer.py`` in a source checkout: it builds on :class:`Episodes`,
:func:`fill` and :func:`measure` here and prints its rows with :func:`print_buffer_table`.
"""

from __future__ import annotations

import gc
import importlib.metadata
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from itertools import cycle, islice
from typing import Any

import numpy as np

from herkit.buffer import HerReplayBuffer

__all__ = [
    "TARGETS",
    "BufferBenchConfig",
    "Episodes",
    "bench_buffer",
    "check_targets",
    "environment_info",
    "fetch_reward",
    "fill",
    "measure",
    "print_buffer_table",
    "run_buffer_bench",
]

OBSERVATION_DIM = 25
"""FetchPush's ``observation`` size."""
GOAL_DIM = 3
"""FetchPush's goal size (achieved and desired)."""
ACTION_DIM = 4
"""FetchPush's action size."""
DISTANCE_THRESHOLD = 0.05
"""Fetch's success distance."""
MANY_ENVS = 16
"""Envs stepping together in the vectorised add measurement."""
POOL_EPISODES = 20
"""Episodes of random data generated once and cycled through by every ``add`` loop."""

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


@dataclass(frozen=True)
class BufferBenchConfig:
    """Settings of the replay-buffer speed benchmark (FetchPush shapes)."""

    stored: tuple[int, ...] = (10_000, 500_000)
    """Real transitions held when sampling is timed (multiples of episode_length, <= capacity)."""
    capacity: int = 1_000_000
    """Buffer capacity in transitions."""
    batch_size: int = 256
    """Transitions per sample call."""
    episode_length: int = 50
    """Steps per episode; each episode ends with truncated=True."""
    k: int = 4
    """Relabelled goals per real transition (the future strategy's k)."""
    seconds: float = 1.0
    """Time budget of each sample measurement in seconds (adds are timed over the fill)."""
    seed: int = 0
    """Seed of the generated data and of the buffers' random generators."""
    json_out: str | None = None
    """Also write the results, configuration and machine details to this JSON file."""

    def __post_init__(self) -> None:
        for name in ("capacity", "batch_size", "episode_length", "k", "seed"):
            _require_int(name, getattr(self, name), minimum=0 if name in ("k", "seed") else 1)
        stored = self.stored
        if not isinstance(stored, tuple) or not stored:
            raise ValueError(f"stored must be a non-empty tuple of ints, got {stored!r}")
        for value in stored:
            _require_int("stored", value, minimum=1)
        if len(set(stored)) != len(stored):
            raise ValueError(f"stored must not repeat a size, got {stored!r}")
        if any(value % self.episode_length for value in stored):
            raise ValueError(
                f"stored sizes must be multiples of episode_length ({self.episode_length}), "
                f"got {stored!r}"
            )
        if max(stored) > self.capacity:
            raise ValueError(f"stored sizes must be <= capacity ({self.capacity}), got {stored!r}")
        if self.capacity // MANY_ENVS < self.episode_length:
            raise ValueError(
                f"capacity must hold an episode per env with {MANY_ENVS} envs, i.e. be >= "
                f"{MANY_ENVS * self.episode_length}, got {self.capacity}"
            )
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds <= 0
        ):
            raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
        if self.json_out is not None and (not isinstance(self.json_out, str) or not self.json_out):
            raise ValueError(f"json_out must be a non-empty path or None, got {self.json_out!r}")


def _require_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def fetch_reward(achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any = None) -> Any:
    """Fetch's sparse reward, vectorised: 0 within ``DISTANCE_THRESHOLD``, else -1."""
    distance = np.linalg.norm(achieved_goal - desired_goal, axis=-1)
    return -(distance > DISTANCE_THRESHOLD).astype(np.float32)


# -- data ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Episodes:
    """Random FetchPush-shaped episodes, ``[episode, step, env, ...]``: the data every
    buffer of the benchmark is filled with."""

    observation: np.ndarray  # (POOL_EPISODES, length + 1, n_envs, 25)
    achieved_goal: np.ndarray  # (POOL_EPISODES, length + 1, n_envs, 3)
    desired_goal: np.ndarray  # (POOL_EPISODES, n_envs, 3): one goal per episode and env
    action: np.ndarray  # (POOL_EPISODES, length, n_envs, 4)

    @classmethod
    def generate(cls, length: int, n_envs: int, rng: np.random.Generator) -> Episodes:
        """:data:`POOL_EPISODES` episodes of ``length`` steps for ``n_envs`` envs, from ``rng``."""
        shape = (POOL_EPISODES, length + 1, n_envs)

        def uniform(*dims: int, high: float = 1.0) -> np.ndarray:
            return rng.uniform(-high, high, size=dims).astype(np.float32)

        # Goals in a 10 cm cube, so that Fetch's 5 cm reward is sometimes 0, sometimes -1.
        return cls(
            observation=uniform(*shape, OBSERVATION_DIM),
            achieved_goal=uniform(*shape, GOAL_DIM, high=0.05),
            desired_goal=uniform(POOL_EPISODES, n_envs, GOAL_DIM, high=0.05),
            action=uniform(POOL_EPISODES, length, n_envs, ACTION_DIM),
        )

    @property
    def length(self) -> int:
        """Steps per episode."""
        return self.action.shape[1]

    def herkit_steps(self) -> list[tuple[Any, ...]]:
        """Argument tuples of ``HerReplayBuffer.add``, one per step, episode after episode."""
        n_envs = self.action.shape[2]
        running, ended = np.zeros(n_envs, dtype=bool), np.ones(n_envs, dtype=bool)
        steps: list[tuple[Any, ...]] = []
        for e in range(POOL_EPISODES):
            goal = self.desired_goal[e]
            obs = [
                {
                    "observation": self.observation[e, t],
                    "achieved_goal": self.achieved_goal[e, t],
                    "desired_goal": goal,
                }
                for t in range(self.length + 1)
            ]
            last = self.length - 1
            steps += [
                (obs[t], self.action[e, t], obs[t + 1], running, ended if t == last else running)
                for t in range(self.length)
            ]
        return steps


# -- timing ----------------------------------------------------------------------------------------


def _median_ms(call: Callable[[], Any], seconds: float) -> tuple[float, int]:
    """Median wall time of ``call()`` in ms over the calls that fit in ``seconds``."""
    for _ in range(_WARMUP_CALLS):
        call()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    times: list[int] = []
    try:
        clock = time.perf_counter_ns
        deadline = clock() + int(seconds * 1e9)
        while True:
            start = clock()
            call()
            end = clock()
            times.append(end - start)
            if end >= deadline and len(times) >= _MIN_CALLS:
                break
    finally:
        if enabled:
            gc.enable()
    return statistics.median(times) / 1e6, len(times)


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

_HERKIT_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sample", {"relabel": "sample", "prioritized": False}),
    ("sample + PER", {"relabel": "sample", "prioritized": True}),
    ("store", {"relabel": "store", "prioritized": False}),
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
    time, ``store``: at store time; ``+ PER``: prioritized), ``relabel``, ``prioritized``,
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
        row |= {"relabel": kwargs["relabel"], "prioritized": kwargs["prioritized"]}
        del buffer
        row["add_16env_per_s"] = _add_rate_many(config, kwargs, many)
        report(f"herkit ({variant}): {row['add_16env_per_s']:,.0f} adds/s from {MANY_ENVS} envs")
        row |= {"add_vs_herkit": None, "sample_vs_herkit": None}
        rows.append(row)
    gc.collect()
    return rows


# -- targets and reporting -------------------------------------------------------------------------


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


def environment_info(extra_packages: Sequence[str] = ()) -> dict[str, Any]:
    """Python, platform, CPU model and count, and the versions of the packages involved."""
    versions: dict[str, str | None] = {}
    packages = ("herkit", "numpy", "torch", "gymnasium", "stable-baselines3", "cpprb")
    for package in (*packages, *extra_packages):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ratio_text(ratio: float | None) -> str:
    return "" if ratio is None else f" ({ratio:.2f}x)"


def print_buffer_table(
    rows: Sequence[dict[str, Any]], config: BufferBenchConfig, console: Any = None
) -> None:
    """Print the results (and herkit's targets, met or not) as rich tables.

    Rows of other buffers (``benchmarks/buffer.py`` adds SB3's and cpprb's) carry their
    peer / herkit ratio in parentheses.
    """
    from rich.console import Console
    from rich.table import Table

    console = console if console is not None else Console()
    sizes = sorted(config.stored)
    table = Table(
        title=(
            f"Replay buffer speed: FetchPush shapes, episodes of {config.episode_length}, "
            f"capacity {config.capacity:,}, future k={config.k}, batch {config.batch_size}"
        )
    )
    table.add_column("buffer")
    table.add_column("relabel")
    table.add_column("add/s, 1 env", justify="right")
    table.add_column(f"add/s, {MANY_ENVS} envs", justify="right")
    for size in sizes:
        table.add_column(f"sample ms @{size:,}", justify="right")
    if len(sizes) > 1:
        table.add_column(f"@{sizes[-1]:,} / @{sizes[0]:,}", justify="right")
    for row in rows:
        many = row["add_16env_per_s"]
        cells = [
            row["buffer"],
            row["variant"],
            f"{row['add_per_s']:,.0f}{_ratio_text(row.get('add_vs_herkit'))}",
            "-" if many is None else f"{many:,.0f}",
        ]
        vs = row.get("sample_vs_herkit") or {}
        cells += [f"{row['sample_ms'][size]:.3f}{_ratio_text(vs.get(size))}" for size in sizes]
        if len(sizes) > 1:
            cells.append(f"{row['sample_ms'][sizes[-1]] / row['sample_ms'][sizes[0]]:.2f}")
        table.add_row(*cells)
    console.print(table)
    if any(row["buffer"] != "herkit" for row in rows):
        console.print(
            "(x) = peer / herkit, against herkit relabel=sample with the same prioritized "
            "setting: above 1 means the peer adds faster, or samples slower."
        )

    targets = Table(title="herkit targets")
    for name in ("buffer", "target", "value", "met"):
        targets.add_column(name, justify="right" if name == "value" else "left")
    for check in check_targets(rows):
        value = check["value"]
        text = f"{value:,.0f}" if value >= 1000 else f"{value:.3f}"
        verdict = "[green]met[/green]" if check["met"] else "[red]missed[/red]"
        targets.add_row(check["buffer"], check["target"], text, verdict)
    console.print(targets)


def bench_buffer(
    config: BufferBenchConfig,
    run: Callable[
        [BufferBenchConfig, Callable[[str], None]], list[dict[str, Any]]
    ] = run_buffer_bench,
) -> None:
    """Run the benchmark, print the tables, and write ``config.json_out`` if set.

    ``run(config, progress)`` gives the rows: :func:`run_buffer_bench` (herkit alone)
    unless another is passed (``benchmarks/buffer.py`` passes one that adds the peers).
    """
    from rich.console import Console

    log = Console(stderr=True)
    info = environment_info()
    versions = ", ".join(
        f"{name} {version}" for name, version in info["versions"].items() if version
    )
    log.print(f"[dim]{info['processor']}, {info['cpus']} CPUs, Python {info['python']}, {versions}")
    rows = run(config, lambda line: log.print(f"[dim]{line}"))
    print_buffer_table(rows, config)
    if config.json_out is not None:
        result = {
            "config": asdict(config),
            "machine": info,
            "rows": rows,
            "targets": check_targets(rows),
        }
        with open(config.json_out, "w") as file:
            json.dump(result, file, indent=2)
            file.write("\n")
        log.print(f"[dim]wrote {config.json_out}")
