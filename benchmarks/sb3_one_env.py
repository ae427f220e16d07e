"""SAC+HER on one env that herkit's authors did not write: herkit beside SB3.

``pointmaze`` (PointMaze_UMaze-v3) and ``parking`` (highway-env's parking-v0) as ``herkit
train`` launches them, SB3's SAC with herkit's settings (:func:`sb3_model`); both evaluate
every 2,000 env steps, one thread each, one after the other. See docs/experiment-log.md.

    python benchmarks/sb3_compare.py pointmaze                 # seed 0, 50,000 env steps, both
    python benchmarks/sb3_compare.py pointmaze --seeds 0 1 2 --only herkit
    python benchmarks/sb3_compare.py pointmaze --only herkit --algo td3
    python benchmarks/sb3_compare.py parking --seeds 0 1 2     # 30,000 env steps, both
    python benchmarks/sb3_compare.py parking --table           # the success at every budget

Writes pointmaze.json or parking.json (merged by library and seed) and its figure.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import common
import numpy as np
from sb3_common import MAZE, learn, one_thread, sb3_model


class OneEnv(NamedTuple):
    """How each library runs a single-env comparison: gymnasium's id and the module that
    registers it (SB3's), the env and flags of ``herkit train``, the budget and evaluations."""

    env_id: str
    module: str
    herkit_id: str
    herkit_flags: tuple[str, ...]
    kwargs: dict[str, Any]
    steps: int
    eval_episodes: int
    success_key: str
    title: str


EVAL_EVERY = 2_000
COLUMNS = ("env_steps", "wall_s", "eval_s", "success_rate")
ONE_ENV = {
    "pointmaze": OneEnv(
        "PointMaze_UMaze-v3",
        "gymnasium_robotics",
        "PointMaze_UMaze-v3",
        (),
        MAZE,
        50_000,
        20,
        "success",
        "PointMaze_UMaze-v3 (continuing_task=False, 100-step episodes), one thread each",
    ),
    "parking": OneEnv(
        "parking-v0",
        "highway_env",
        "highway_env:parking-v0",
        ("--eval-every", str(EVAL_EVERY), "--eval-episodes", "10"),
        {},
        30_000,
        10,
        "is_success",
        "highway-env parking-v0: SAC+HER (3 x 256, lr 1e-3, batch 256, future k=4), one "
        "thread each",
    ),
}


def one_env_rows(
    name: str, library: str, algo: str, seed: int, steps: int
) -> list[dict[str, float]]:
    """One run of ``herkit train`` or of SB3's SAC on the env ``name``; its evaluations."""
    spec = ONE_ENV[name]
    if library == "herkit":
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            flags = f"--algo {algo} --seed {seed} --steps {steps} --torch-threads 1".split()
            common.herkit_train(spec.herkit_id, *flags, *spec.herkit_flags, out=out)
            return common.progress(out, *COLUMNS)
    import gymnasium as gym

    one_thread()
    gym.register_envs(importlib.import_module(spec.module))
    env, eval_env = (gym.make(spec.env_id, **spec.kwargs) for _ in range(2))
    model = sb3_model("sac", env, seed)
    rows = learn(model, steps, EVAL_EVERY, eval_env, spec.eval_episodes, seed, spec.success_key)
    return [{key: row[key] for key in COLUMNS} for row in rows]


def train_minutes(row: dict[str, float]) -> float:
    """Wall time of a row without its run's evaluations (where recorded), in minutes."""
    return (row["wall_s"] - row.get("eval_s", 0.0)) / 60


def success_by_steps(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the evaluation at ``budget`` env steps (NaN if none)."""
    return next((row["success_rate"] for row in rows if row["env_steps"] == budget), np.nan)


def success_by_minutes(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the last evaluation done by ``budget`` minutes of training (0 before)."""
    done = [row["success_rate"] for row in rows if train_minutes(row) <= budget]
    return done[-1] if done else 0.0


def by_side(records: dict[str, Any]) -> dict[str, list[list[dict[str, float]]]]:
    """Each side's runs (their evaluations): a library, and its algorithm where not SAC."""
    sides = sorted({key.split("/")[0] for key in records})
    return {
        side: [r["rows"] for key, r in sorted(records.items()) if key.split("/")[0] == side]
        for side in sides
    }


def plot_one_env(name: str, records: dict[str, Any], path: Path) -> None:
    """Success against env steps and wall time: each seed thin, each side's mean thick."""
    spec = ONE_ENV[name]
    with common.figure(path, 1, 2, figsize=(11, 4)) as (fig, axes):
        colors = {"herkit": "tab:blue", "sb3": "tab:orange", "herkit-td3": "tab:green"}
        for side, runs in by_side(records).items():
            color = colors.get(side, "tab:red")
            for rows in runs:
                success = [row["success_rate"] for row in rows]
                axes[0].plot([row["env_steps"] for row in rows], success, color=color, alpha=0.3)
                axes[1].plot([train_minutes(row) for row in rows], success, color=color, alpha=0.3)
            steps = sorted({row["env_steps"] for rows in runs for row in rows})
            mean = [np.nanmean([success_by_steps(rows, b) for rows in runs]) for b in steps]
            library, _, algo = side.partition("-")
            label = f"{'SB3' if library == 'sb3' else 'herkit'} {(algo or 'sac').upper()}+HER, "
            label += f"mean of {len(runs)} seeds" if len(runs) > 1 else "one seed"
            axes[0].plot(steps, mean, color=color, lw=2.5, marker=".", label=label)
            minutes = np.arange(0.5, max(train_minutes(rows[-1]) for rows in runs), 0.5)
            mean = [np.mean([success_by_minutes(rows, b) for rows in runs]) for b in minutes]
            axes[1].plot(minutes, mean, color=color, lw=2.5, drawstyle="steps-post")
        ylabel = f"success rate ({spec.eval_episodes} episodes)"
        axes[0].set(xlabel="env steps", ylabel=ylabel, ylim=(-0.02, 1.02))
        axes[1].set(xlabel="training wall time, evaluations out where recorded (min)")
        axes[1].set(ylim=(-0.02, 1.02))
        for ax in axes:
            ax.grid(alpha=0.3)
            ax.axhline(0.9, color="gray", lw=0.8, ls="--")
        axes[0].legend(fontsize=8, loc="lower right")
        fig.suptitle(spec.title)


def at_budgets(records: dict[str, Any]) -> str:
    """Markdown: each side's mean success at every evaluation's env steps and every 2
    minutes of training wall time."""
    runs = by_side(records)
    every_run = [rows for side in runs for rows in runs[side]]
    steps = sorted({row["env_steps"] for rows in every_run for row in rows})
    longest = max(train_minutes(rows[-1]) for rows in every_run)
    minutes = list(range(2, int(longest) + 1, 2))
    table = []
    for label, budgets, read in (
        ("env steps", steps, success_by_steps),
        ("min", minutes, success_by_minutes),
    ):
        for budget in budgets:
            means = [np.nanmean([read(rows, budget) for rows in runs[side]]) for side in runs]
            table.append([f"{budget:,.0f} {label}", *(f"{m:.2f}" for m in means)])
    seeds = ", ".join(f"{side} {len(runs[side])}" for side in runs)
    return f"seeds: {seeds}\n" + common.markdown(["budget", *runs], "l" + "r" * len(runs), table)


def run_one_env(options: argparse.Namespace) -> None:
    """The ``pointmaze`` and ``parking`` subcommands: each seed and library, recorded as it
    ends (``--table``: print the budgets)."""
    name = options.command
    record = common.DOCS / f"{name}.json"
    if options.table:
        print(at_budgets(common.read_json(record)["runs"]))
        return
    for seed in options.seeds:
        for library in [options.only] if options.only else ["herkit", "sb3"]:
            steps = options.steps or ONE_ENV[name].steps
            print(f"{library} seed {seed}: {steps} env steps", flush=True)
            algo = options.algo if library == "herkit" else "sac"
            started = time.perf_counter()
            rows = one_env_rows(name, library, algo, seed, steps)
            total = time.perf_counter() - started
            reached = common.first_at(rows)
            run = {
                "library": library,
                "algo": algo,
                "seed": seed,
                "steps": steps,
                "rows": rows,
                "process_wall_s": round(total, 1),
                "first_0.9": reached,
                "final_success": rows[-1]["success_rate"],
                "code": common.code_version(),
            }
            side = library if algo == "sac" else f"{library}-{algo}"
            records = common.add_run(record, f"{side}/seed{seed}", run, common.machine())
            final = rows[-1]["success_rate"]
            print(f"  first >= 0.9: {reached}; final {final:.2f}; {total:.0f} s", flush=True)
            plot_one_env(name, records, common.FIGURES / f"{name}.png")
