"""Learning benchmarks: run `herkit train` presets, print docs/training.md's table and
write its curves.

    python benchmarks/training.py                     # every run below
    python benchmarks/training.py --only bitflip-15   # one of them

Each run uses its env's preset plus the flags listed here; the table records the budget,
the success reached, when 0.9 was first reached, wall time and the machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import DOCS, machine

RUNS: dict[str, list[str]] = {
    "bitflip-15": [],  # the default `herkit train`
    "bitflip-15-no-her": ["--strategy", "none"],
    "pointreach-ddpg": ["herkit/PointReach-v0"],
    "gridworld-dqn": ["herkit/GridWorld-v0"],
    "fetchreach-ddpg": ["FetchReach-v4", "--steps", "5000", "--eval-every", "500"],
}


def run(name: str, args: list[str], out_root: Path) -> dict:
    """Train one configuration in a subprocess; returns its summary plus wall time."""
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "herkit", "train", *args, "--out", str(out)]
    command += ["--no-progress", "--no-tensorboard", "--target-success", "1.0"]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    summary["process_wall_s"] = round(time.perf_counter() - started, 1)
    summary["command"] = "herkit train " + " ".join(args)
    rows = (out / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    reached = [
        dict(zip(header, row.split(","), strict=False))
        for row in rows[1:]
        if float(dict(zip(header, row.split(","), strict=False))["success_rate"]) >= 0.9
    ]
    if reached:
        summary["first_0.9_env_steps"] = int(reached[0]["env_steps"])
        summary["first_0.9_wall_s"] = float(reached[0]["wall_s"])
    shutil.copy(out / "curve.png", DOCS / "figures" / f"{name}.png")
    return summary


def write_table(results: dict[str, dict]) -> str:
    """Markdown rows for the results."""
    lines = [
        "| run | command | env steps | success | first >= 0.9 at (env steps / s) | wall s |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        first = (
            f"{r['first_0.9_env_steps']} / {r['first_0.9_wall_s']:.1f}"
            if "first_0.9_env_steps" in r
            else "not reached"
        )
        lines.append(
            f"| {name} | `{r['command']}` | {r['env_steps']} | {r['success_rate']:.2f} | "
            f"{first} | {r['wall_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(RUNS), help="runs to do")
    parser.add_argument("--out", default="runs/benchmarks", help="where run directories go")
    options = parser.parse_args()
    (DOCS / "figures").mkdir(parents=True, exist_ok=True)
    results_file = DOCS / "training.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for name in options.only or RUNS:
        print(f"== {name}", flush=True)
        results[name] = run(name, RUNS[name], Path(options.out))
        results[name]["machine"] = machine()
        results_file.write_text(json.dumps(results, indent=1))
        print(json.dumps(results[name]), flush=True)
    print(write_table(results))


if __name__ == "__main__":
    main()
