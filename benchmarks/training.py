"""Learning benchmarks: run `herkit train` presets, print docs/training.md's table and
write its curves.

    python benchmarks/training.py                     # every run below
    python benchmarks/training.py --only bitflip-15   # one of them

Each run uses its env's preset plus the flags listed here; the table records the budget,
the success reached, when 0.9 was first reached, wall time and the machine.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from subprocess import DEVNULL

import common

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
    started = time.perf_counter()
    common.herkit_train(*args, "--target-success", "1.0", out=out, stdout=DEVNULL)
    summary = common.read_json(out / "summary.json")
    summary["process_wall_s"] = round(time.perf_counter() - started, 1)
    summary["command"] = "herkit train " + " ".join(args)
    if reached := common.first_at(common.progress(out, "env_steps", "wall_s", "success_rate")):
        summary["first_0.9_env_steps"] = int(reached["env_steps"])
        summary["first_0.9_wall_s"] = reached["wall_s"]
    common.FIGURES.mkdir(parents=True, exist_ok=True)
    shutil.copy(out / "curve.png", common.FIGURES / f"{name}.png")
    return summary


def write_table(results: dict[str, dict]) -> str:
    """Markdown rows for the results."""
    rows = [
        [
            name,
            f"`{r['command']}`",
            r["env_steps"],
            f"{r['success_rate']:.2f}",
            f"{r['first_0.9_env_steps']} / {r['first_0.9_wall_s']:.1f}"
            if "first_0.9_env_steps" in r
            else "not reached",
            f"{r['wall_s']:.1f}",
        ]
        for name, r in results.items()
    ]
    columns = ["run", "command", "env steps", "success", "first >= 0.9 at (env steps / s)"]
    return common.markdown([*columns, "wall s"], "llllll", rows)


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("--only", nargs="*", choices=sorted(RUNS), help="runs to do")
    cli.add_argument("--out", default="runs/benchmarks", help="where run directories go")
    options = cli.parse_args()
    results_file = common.DOCS / "training.json"
    results = common.read_json(results_file)
    for name in options.only or RUNS:
        print(f"== {name}", flush=True)
        results[name] = run(name, RUNS[name], Path(options.out)) | {"machine": common.machine()}
        results_file.write_text(json.dumps(results, indent=1))
        print(json.dumps(results[name]), flush=True)
    print(write_table(results))


if __name__ == "__main__":
    main()
