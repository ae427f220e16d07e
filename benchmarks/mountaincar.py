"""DQN with and without HER on goal mountain car: final, future and random strategies.

The HER tutorial among the project's seed documents trains DQN+HER on MountainCar (one
goal: the flag at 0.5, reward -1 per step until it is reached) and reports that HER learns
the policy quickly where plain DQN needs far more steps and random exploration; it compares
the ``final`` and ``random`` strategies. This script repeats that on
``herkit/MountainCarGoal-v0`` with herkit's preset (DQN, k = 4):

- goals ``fixed``: the single goal of the classic task (``goal_low=0.5 goal_high=0.5``);
- goals ``random``: the env's default, a new goal in ``[-1.1, 0.5]`` every episode;

and for each, ``--strategy none`` (plain DQN), ``final``, ``future`` and ``random``. Every
run is ``herkit train`` in its own process on one thread, evaluated every 2,500 env steps
on 10 episodes of the greedy policy. Measures: the first evaluation at >= 0.9 success (env
steps and wall time), the first training episode that reached the goal (to the 2,500-step
evaluation interval: the first interval whose ``train_success_rate`` is above 0), and the
success at the end.

    python benchmarks/mountaincar.py                       # 3 seeds, both goal settings
    python benchmarks/mountaincar.py --goals fixed --strategies none final --seeds 0

Writes docs/mountaincar.json (merged by goals, strategy and seed) and
docs/figures/mountaincar.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, FIGURES, code_version, machine

ENV_ID = "herkit/MountainCarGoal-v0"
GOALS = {"fixed": ["goal_low=0.5", "goal_high=0.5"], "random": []}
STRATEGIES = ("none", "final", "future", "random")
EVAL_EVERY = 2_500
RECORD = DOCS / "mountaincar.json"
COLUMNS = ("env_steps", "wall_s", "success_rate", "train_success_rate")


def train(goals: str, strategy: str, seed: int, steps: int, out: Path) -> list[dict[str, float]]:
    """One ``herkit train`` run with the preset; its progress rows."""
    command = [
        sys.executable,
        "-m",
        "herkit",
        "train",
        ENV_ID,
        "--strategy",
        strategy,
        "--seed",
        str(seed),
        "--steps",
        str(steps),
        "--eval-every",
        str(EVAL_EVERY),
        "--out",
        str(out),
        "--no-progress",
        "--no-tensorboard",
        "--torch-threads",
        "1",
        "--checkpoint-every",
        str(steps),
    ]
    if GOALS[goals]:
        command += ["--env-kwargs", *GOALS[goals]]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(out / "progress.csv", newline="") as file:
        return [{key: float(row[key]) for key in COLUMNS} for row in csv.DictReader(file)]


def measures(rows: list[dict[str, float]]) -> dict[str, Any]:
    """First evaluation at >= 0.9, first interval with a training success, last success."""
    solved = next((row for row in rows if row["success_rate"] >= 0.9), None)
    first = next((row for row in rows if row["train_success_rate"] > 0), None)
    return {
        "first_0.9_env_steps": None if solved is None else int(solved["env_steps"]),
        "first_0.9_wall_s": None if solved is None else round(solved["wall_s"], 1),
        "first_train_success_by": None if first is None else int(first["env_steps"]),
        "final_success": rows[-1]["success_rate"],
        "mean_success": float(np.mean([row["success_rate"] for row in rows])),
    }


def seed_statistics(runs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Mean, min and max success over seeds at each evaluation, and the mean wall time
    there (every run evaluates at the same env steps; only the steps all runs reached)."""
    length = min(len(run["rows"]) for run in runs)
    success = np.array([[row["success_rate"] for row in run["rows"][:length]] for run in runs])
    wall = np.array([[row["wall_s"] for row in run["rows"][:length]] for run in runs])
    steps = np.array([row["env_steps"] for row in runs[0]["rows"][:length]])
    return {
        "env_steps": steps,
        "wall_s": wall.mean(axis=0),
        "mean": success.mean(axis=0),
        "min": success.min(axis=0),
        "max": success.max(axis=0),
    }


def plot(records: dict[str, Any], path: Path) -> None:
    """Per goal setting (rows): seed-mean success with its min-max band against env steps
    and against wall time, one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = [goals for goals in GOALS if any(r["goals"] == goals for r in records.values())]
    fig, axes = plt.subplots(len(settings), 2, figsize=(11, 3.6 * len(settings)), squeeze=False)
    colors = dict(zip(STRATEGIES, ("black", "tab:orange", "tab:blue", "tab:green"), strict=True))
    for row_axes, goals in zip(axes, settings, strict=True):
        for strategy in STRATEGIES:
            runs = [r for r in records.values() if (r["goals"], r["strategy"]) == (goals, strategy)]
            if not runs:
                continue
            stats = seed_statistics(runs)
            name = "DQN" if strategy == "none" else f"DQN+HER {strategy}"
            label = f"{name} ({len(runs)} seeds)"
            for ax, x in zip(row_axes, ("env_steps", "wall_s"), strict=True):
                xs = stats[x] / (60 if x == "wall_s" else 1)
                ax.plot(xs, stats["mean"], label=label, color=colors[strategy])
                ax.fill_between(xs, stats["min"], stats["max"], color=colors[strategy], alpha=0.15)
        title = "one fixed goal (0.5)" if goals == "fixed" else "random goal each episode"
        row_axes[0].set(xlabel="env steps", ylabel="success rate (10 episodes)", title=title)
        row_axes[1].set(xlabel="wall time (min, one thread; mean over seeds)", title=title)
        for ax in row_axes:
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            ax.axhline(0.9, color="gray", lw=0.8, ls="--")
        row_axes[0].legend(fontsize=8)
    fig.suptitle(f"{ENV_ID}: DQN with and without HER (mean and min-max over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(records: dict[str, Any]) -> str:
    """The results as a markdown table: one row per goal setting and strategy, the
    measures of seeds 0, 1, 2 side by side."""

    def cells(runs: list[dict[str, Any]], key: str, spec: str = ",") -> str:
        values = [run[key] for run in runs]
        return " / ".join("never" if v is None else format(v, spec) for v in values)

    lines = [
        "| goals | agent | budget | env steps to 0.9 | wall s to 0.9 | first training success "
        "by | success at the end | mean success over the run |",
        "|---|---|---:|---|---|---|---|---|",
    ]
    for goals in GOALS:
        for strategy in STRATEGIES:
            runs = sorted(
                (r for r in records.values() if (r["goals"], r["strategy"]) == (goals, strategy)),
                key=lambda r: r["seed"],
            )
            if not runs:
                continue
            name = "DQN" if strategy == "none" else f"DQN+HER {strategy}"
            columns = [
                goals,
                name,
                f"{runs[0]['steps']:,}",
                cells(runs, "first_0.9_env_steps"),
                cells(runs, "first_0.9_wall_s", ".0f"),
                cells(runs, "first_train_success_by"),
                cells(runs, "final_success", ".2f"),
                cells(runs, "mean_success", ".2f"),
            ]
            lines.append("| " + " | ".join(columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--goals", nargs="+", choices=tuple(GOALS), default=list(GOALS))
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--plot-only", action="store_true", help="redraw and print the table")
    args = parser.parse_args()
    records: dict[str, Any] = json.loads(RECORD.read_text())["runs"] if RECORD.exists() else {}
    if not args.plot_only:
        for goals in args.goals:
            for seed in args.seeds:
                for strategy in args.strategies:
                    with tempfile.TemporaryDirectory() as tmp:
                        started = time.perf_counter()
                        rows = train(goals, strategy, seed, args.steps, Path(tmp) / "run")
                        total = time.perf_counter() - started
                    found = measures(rows)
                    print(f"{goals} goals, {strategy}, seed {seed}: {found}", flush=True)
                    # Re-read: another job may have added runs (or other entries) meanwhile.
                    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
                    records = record.get("runs", {})  # the file's runs, this one added below
                    records[f"{goals}/{strategy}/seed{seed}"] = {
                        "goals": goals,
                        "strategy": strategy,
                        "seed": seed,
                        "steps": args.steps,
                        "process_wall_s": round(total, 1),
                        **found,
                        "rows": rows,
                        "code": code_version(),
                    }
                    record |= {"machine": machine(), "runs": records}
                    RECORD.write_text(json.dumps(record, indent=1))
    records = json.loads(RECORD.read_text())["runs"]
    plot(records, FIGURES / "mountaincar.png")
    print(table(records))


if __name__ == "__main__":
    main()
