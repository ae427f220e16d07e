"""herkit against SB3 as docs/sb3.md reports it: its parts run in turn, then the report.

Each part is a comparison of its own (:mod:`sb3_training`, :mod:`sb3_updates`); this runs
those asked for, keeps their records in sb3.json and makes docs/sb3.md's marked parts again
from it (the machine, each part's section, the summary of speed-ups) and its figure.

    python benchmarks/sb3_compare.py                          # every part (about an hour)
    python benchmarks/sb3_compare.py --report-only            # docs/sb3.md from docs/sb3.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import common
from sb3_training import (
    bitflip_section,
    fetchreach_note,
    fetchreach_section,
    first_differences,
    part_training,
    plot_bitflip,
    sb3_run,
    speed_section,
)
from sb3_updates import part_updates, updates_run, updates_section

PARTS = ("bitflip", "fetchreach", "updates", "fetchpush-speed")
"""The parts of docs/sb3.md, in the order they run."""
RESULTS = common.DOCS / "sb3.json"
REPORT = common.DOCS / "sb3.md"
"""The report: its marked parts (``<!-- sb3 NAME -->``) are made from RESULTS."""
MARKED = common.marked("sb3")
SECTIONS = {
    "bitflip": bitflip_section,
    "fetchreach": fetchreach_section,
    "updates": updates_section,
    "fetchpush_speed": speed_section,
}
"""Each part's key in RESULTS and the function that writes its section of the report."""


def machine_part(results: dict[str, Any]) -> list[str]:
    """The report's machine, libraries, herkit's commit per part and each part's wall time."""
    m = results["machine"]
    versions = m.get("versions") or {key.replace("_", "-"): value for key, value in m.items()}
    names = ("torch", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium")
    names += ("gymnasium-robotics", "mujoco")
    commits = [
        f"{name} `{part['code']['commit'][:12]}`"
        + (" (with uncommitted changes in src/)" if part["code"]["src_modified"] else "")
        for name, part in results.items()
        if name != "machine" and isinstance(part, dict)
    ]
    minutes = {name: results[name]["part_wall_s"] / 60 for name in SECTIONS if name in results}
    return [
        "```text",
        *m.get("lscpu", [f"{m.get('processor')}, {m.get('cpus')} CPUs"]),
        "```",
        "",
        f"Python {m['python']}, "
        + ", ".join(f"{name} {versions.get(name)}" for name in names)
        + ". herkit's commit when each part started: "
        + ", ".join(commits)
        + ".",
        "",
        "Wall time of each part (including process start-ups and any waiting): "
        + ", ".join(f"{name} {value:.1f} min" for name, value in minutes.items())
        + f"; total {sum(minutes.values()):.1f} min.",
    ]


def speedups_part(results: dict[str, Any]) -> list[str]:
    """The summary of speed-ups, and how to read "time to 0.9" next to "whole budget"."""
    note = (
        'Reading these numbers: "time to 0.9" is read at the evaluations, so it moves in '
        "whole evaluation intervals. Where both libraries first reach 0.9 at the same "
        "evaluation, its ratio is the ratio of the wall time spent up to there; where they "
        "reach it at different evaluations, sample efficiency decides as well, and the "
        "ratio can fall below 1 although herkit is faster per step. The whole-budget ratio "
        "compares the same number of env steps and updates, i.e. throughput."
    )
    if "bitflip" in results:
        note += first_differences(results["bitflip"], "Bit flipping")
    if "fetchreach" in results:
        note += fetchreach_note(results["fetchreach"])
    verdicts = [
        line
        for name, section in SECTIONS.items()
        if name in results
        for line in section(results[name])[1]
    ]
    return [*verdicts, "", note]


def report_part(results: dict[str, Any], name: str) -> str | None:
    """The marked part ``name`` of the report made from ``results`` (None: not run yet)."""
    if name == "machine":
        return "\n".join(machine_part(results))
    if name == "speedups":
        return "\n".join(speedups_part(results))
    return "\n".join(SECTIONS[name](results[name])[0]) if name in results else None


def fill_report(text: str, results: dict[str, Any]) -> str:
    """The report ``text`` with its marked parts made again from ``results``."""
    return common.fill_marked(text, MARKED, lambda name: report_part(results, name))


def write_report(results: dict[str, Any], path: Path = REPORT) -> None:
    """docs/sb3.md (or ``path``) with its marked parts made again from ``results``."""
    path.write_text(fill_report(common.source(path).read_text(), results))


def run_compare(options: argparse.Namespace) -> None:
    """Run the parts asked for (or a hidden worker), then write sb3.json, sb3.md and the figure."""
    if options.sb3_run:
        out = Path(options.out)
        sb3_run(options.sb3_run, options.algo, options.seed, out, options.steps, options.eval_every)
        return
    if options.updates_run:
        settings = (options.threads, Path(options.data), options.buffer_size)
        row = updates_run(
            options.updates_run, options.algo, *settings, options.updates, options.repeats
        )
        print(json.dumps(row))
        return
    os.chdir(common.ROOT)  # run directories and the commands shown are relative to the repository
    results = common.read_json(RESULTS)
    if not options.report_only:
        results["machine"] = common.machine()
        for name in options.only or PARTS:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            out_root = Path(options.out)
            if name == "updates":
                part = part_updates(out_root / "updates", options.quiet_pattern)
            else:
                task = "fetchpush" if name == "fetchpush-speed" else name
                seeds = options.seeds[:1] if name == "fetchpush-speed" else options.seeds
                part = part_training(task, seeds, out_root, options.quiet_pattern)
            part["part_wall_s"] = round(time.perf_counter() - started, 1)
            part["code"] = common.code_version()
            results[name.replace("-", "_")] = part
            RESULTS.write_text(json.dumps(results, indent=1))
    if "bitflip" in results:
        plot_bitflip(results["bitflip"], common.FIGURES / "sb3_bitflip.png")
    write_report(results, REPORT)
    print(f"wrote {RESULTS} and {REPORT}")
