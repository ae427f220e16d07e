"""DQN with and without HER on goal mountain car: final, future and random strategies.

The HER tutorial's MountainCar comparison on ``herkit/MountainCarGoal-v0`` with herkit's
preset (DQN, k = 4): goals ``fixed`` (the classic task's flag at 0.5) or ``random`` (a new
one every episode), each with strategies none, final, future and random; every run its own
process on one thread, evaluated every 2,500 env steps. Measures: the first evaluation at
0.9, the first training success (to the interval), and the success at the end.

    python benchmarks/mountaincar.py                       # 3 seeds, both goal settings
    python benchmarks/mountaincar.py --goals fixed --strategies none final --seeds 0

Writes docs/mountaincar.json (merged by goals, strategy and seed) and
docs/figures/mountaincar.png.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from subprocess import DEVNULL
from typing import Any

import common
import numpy as np

ENV_ID = "herkit/MountainCarGoal-v0"
GOALS = {"fixed": ["goal_low=0.5", "goal_high=0.5"], "random": []}
STRATEGIES = ("none", "final", "future", "random")
EVAL_EVERY = 2_500
RECORD = common.DOCS / "mountaincar.json"
COLUMNS = ("env_steps", "wall_s", "success_rate", "train_success_rate")


def train(goals: str, strategy: str, seed: int, steps: int, out: Path) -> list[dict[str, float]]:
    """One ``herkit train`` run with the preset; its progress rows."""
    flags = f"--strategy {strategy} --seed {seed} --steps {steps} --eval-every {EVAL_EVERY}"
    more = ["--torch-threads", "1", "--checkpoint-every", steps]
    if GOALS[goals]:
        more += ["--env-kwargs", *GOALS[goals]]
    common.herkit_train(ENV_ID, *flags.split(), *more, out=out, stdout=DEVNULL)
    return common.progress(out, *COLUMNS)


def measures(rows: list[dict[str, float]]) -> dict[str, Any]:
    """First evaluation at >= 0.9, first interval with a training success, last success."""
    solved = common.first_at(rows)
    first = next((row for row in rows if row["train_success_rate"] > 0), None)
    return {
        "first_0.9_env_steps": None if solved is None else int(solved["env_steps"]),
        "first_0.9_wall_s": None if solved is None else round(solved["wall_s"], 1),
        "first_train_success_by": None if first is None else int(first["env_steps"]),
        "final_success": rows[-1]["success_rate"],
        "mean_success": float(np.mean([row["success_rate"] for row in rows])),
    }


def seed_statistics(runs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Mean, min and max success over seeds at each evaluation all runs reached, and the
    mean wall time there."""
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
    """Per goal setting, the seeds' mean success and band against env steps and wall time."""
    settings = [goals for goals in GOALS if any(r["goals"] == goals for r in records.values())]
    grid = {"figsize": (11, 3.6 * len(settings)), "squeeze": False}
    with common.figure(path, len(settings), 2, **grid) as (fig, axes):
        colors = dict(
            zip(STRATEGIES, ("black", "tab:orange", "tab:blue", "tab:green"), strict=True)
        )
        for row_axes, goals in zip(axes, settings, strict=True):
            for strategy in STRATEGIES:
                runs = runs_of(records, goals, strategy)
                if not runs:
                    continue
                stats = seed_statistics(runs)
                label = f"{agent_name(strategy)} ({len(runs)} seeds)"
                for ax, x in zip(row_axes, ("env_steps", "wall_s"), strict=True):
                    xs = stats[x] / (60 if x == "wall_s" else 1)
                    ax.plot(xs, stats["mean"], label=label, color=colors[strategy])
                    ax.fill_between(
                        xs, stats["min"], stats["max"], color=colors[strategy], alpha=0.15
                    )
            title = "one fixed goal (0.5)" if goals == "fixed" else "random goal each episode"
            row_axes[0].set(xlabel="env steps", ylabel="success rate (10 episodes)", title=title)
            row_axes[1].set(xlabel="wall time (min, one thread; mean over seeds)", title=title)
            for ax in row_axes:
                ax.set_ylim(-0.02, 1.02)
                ax.grid(alpha=0.3)
                ax.axhline(0.9, color="gray", lw=0.8, ls="--")
            row_axes[0].legend(fontsize=8)
        fig.suptitle(f"{ENV_ID}: DQN with and without HER (mean and min-max over seeds)")


def runs_of(records: dict[str, Any], goals: str, strategy: str) -> list[dict[str, Any]]:
    """The recorded runs of one goal setting and strategy, by seed."""
    found = (r for r in records.values() if (r["goals"], r["strategy"]) == (goals, strategy))
    return sorted(found, key=lambda r: r["seed"])


def agent_name(strategy: str) -> str:
    """``DQN`` or ``DQN+HER final``: a strategy as the figure and table name it."""
    return "DQN" if strategy == "none" else f"DQN+HER {strategy}"


def table(records: dict[str, Any]) -> str:
    """Markdown: per goal setting and strategy, the seeds' measures side by side."""

    def cells(runs: list[dict[str, Any]], key: str, spec: str = ",") -> str:
        values = [run[key] for run in runs]
        return " / ".join("never" if v is None else format(v, spec) for v in values)

    rows = []
    for goals in GOALS:
        for strategy in STRATEGIES:
            runs = runs_of(records, goals, strategy)
            if runs:
                rows.append(
                    [
                        goals,
                        agent_name(strategy),
                        f"{runs[0]['steps']:,}",
                        cells(runs, "first_0.9_env_steps"),
                        cells(runs, "first_0.9_wall_s", ".0f"),
                        cells(runs, "first_train_success_by"),
                        cells(runs, "final_success", ".2f"),
                        cells(runs, "mean_success", ".2f"),
                    ]
                )
    columns = ["goals", "agent", "budget", "env steps to 0.9", "wall s to 0.9"]
    columns += ["first training success by", "success at the end", "mean success over the run"]
    return common.markdown(columns, "llrlllll", rows)


def main() -> None:
    cli = common.parser(__doc__)
    cli.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    cli.add_argument("--steps", type=int, default=100_000)
    cli.add_argument("--goals", nargs="+", choices=tuple(GOALS), default=list(GOALS))
    cli.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    cli.add_argument("--plot-only", action="store_true", help="redraw and print the table")
    args = cli.parse_args()
    for goals in [] if args.plot_only else args.goals:
        for seed in args.seeds:
            for strategy in args.strategies:
                with tempfile.TemporaryDirectory() as tmp:
                    started = time.perf_counter()
                    rows = train(goals, strategy, seed, args.steps, Path(tmp) / "run")
                    total = time.perf_counter() - started
                found = measures(rows)
                print(f"{goals} goals, {strategy}, seed {seed}: {found}", flush=True)
                run = {"goals": goals, "strategy": strategy, "seed": seed, "steps": args.steps}
                run |= {"process_wall_s": round(total, 1), **found, "rows": rows}
                run["code"] = common.code_version()
                common.add_run(RECORD, f"{goals}/{strategy}/seed{seed}", run, common.machine())
    records = common.read_json(RECORD)["runs"]
    plot(records, common.FIGURES / "mountaincar.png")
    print(table(records))


if __name__ == "__main__":
    main()
