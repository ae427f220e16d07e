"""What the buffer benchmark shows and writes, and the command itself.

:func:`bench_buffer` is ``herkit bench buffer``: it logs the machine
(:func:`environment_info`), runs the measurement, prints the results and herkit's targets
as rich tables (:func:`print_buffer_table`) and writes them as JSON if asked.
``benchmarks/buffer.py`` prints its peer rows with the same table and calls
:func:`bench_buffer` with its own ``run``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from herkit.bench.data import MANY_ENVS
from herkit.bench.settings import BufferBenchConfig
from herkit.bench.timing import check_targets, run_buffer_bench
from herkit.runtime.cores import VECTOR_UNITS, cpu_flags


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
        "vector_units": [flag for flag in VECTOR_UNITS if flag in cpu_flags()],
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as file:
        for line in file:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
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
