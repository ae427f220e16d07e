"""Bit flipping as in the HER paper's Fig. 1: success rate against the number of bits.

    python benchmarks/bitflip.py                       # the sweep, then the long run
    python benchmarks/bitflip.py --skip-long           # the sweep only
    python benchmarks/bitflip.py --only-long           # the 50-bit long run only
    python benchmarks/bitflip.py --bits 5 10 --seeds 0 # part of the sweep

Sweep: per number of bits, method (DQN, DQN+HER future or final, k=4) and seed, one
``herkit train herkit/BitFlip-v0`` run with the preset for ``max(5000, BUDGET_PER_BIT * n)``
env steps, 5 evaluations of 20 episodes; its success is the mean of the last two. Runs go
one at a time into ``runs/bitflip/`` (a finished one is not run again). Long run: 50 bits,
DQN+HER future, up to 300,000 env steps, stopping at 0.9. Writes docs/bitflip.json and
docs/figures/bitflip_success.png and bitflip_long.png.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import common

RESULTS = common.DOCS / "bitflip.json"
FIGURE = common.FIGURES / "bitflip_success.png"
LONG_FIGURE = common.FIGURES / "bitflip_long.png"
ENV_ID = "herkit/BitFlip-v0"
CODE: dict[str, Any] = {}  # git commit and dirty flag, taken when the script starts

BITS = (5, 10, 15, 20, 25, 30, 40, 50)
SEEDS = (0, 1, 2)
MIN_BUDGET = 5000
BUDGET_PER_BIT = 1600
EVALS_PER_RUN = 5
EVAL_EPISODES = 20
LONG = dict(
    n_bits=50,
    strategy="future",
    seed=0,
    steps=300_000,
    eval_every=10_000,
    eval_episodes=100,
    target_success=0.9,
)

# method name -> (strategy, k, label in the figure)
METHODS: dict[str, tuple[str, int, str]] = {
    "dqn": ("none", 4, "DQN"),
    "her-future": ("future", 4, "DQN+HER (future, k=4)"),
    "her-final": ("final", 4, "DQN+HER (final)"),
}


def budget(n_bits: int, per_bit: int) -> int:
    """Env steps of one sweep run with ``n_bits`` bits."""
    return max(MIN_BUDGET, per_bit * n_bits)


def train_run(run_dir: Path, n_bits: int, strategy: str, k: int, seed: int, **changes: Any) -> dict:
    """One run in this process (skipped when done), checkpoint removed; its summary and
    evaluations ``(env_steps, success_rate)``."""
    summary_file = run_dir / "summary.json"
    if not summary_file.exists():
        shutil.rmtree(run_dir, ignore_errors=True)  # a run killed part-way starts again
        started = time.perf_counter()
        bits = {"env_kwargs": (f"n_bits={n_bits}",), "strategy": strategy, "k": k, "seed": seed}
        summary, _ = common.train_here(ENV_ID, run_dir, **bits, torch_threads=1, **changes)
        summary["process_wall_s"] = round(time.perf_counter() - started, 2)
        summary["code"] = CODE  # the tree this process imported herkit from
        summary_file.write_text(json.dumps(summary, indent=1))
    shutil.rmtree(run_dir / "checkpoint", ignore_errors=True)
    return json.loads(summary_file.read_text()) | {"evals": common.curve(run_dir)}


def sweep(options: argparse.Namespace, runs_dir: Path) -> list[dict]:
    """Every (bits, method, seed) run; returns one record per run."""
    records = []
    for n_bits in options.bits:
        steps = budget(n_bits, options.budget_per_bit)
        for method, (strategy, k, _) in METHODS.items():
            for seed in options.seeds:
                run_dir = runs_dir / f"bits{n_bits}-{method}-s{seed}"
                summary = train_run(
                    run_dir,
                    n_bits,
                    strategy,
                    k,
                    seed,
                    steps=steps,
                    eval_every=max(1, steps // EVALS_PER_RUN),
                    eval_episodes=EVAL_EPISODES,
                    checkpoint_every=steps,  # only the final checkpoint
                )
                evals = summary["evals"]
                last = [success for _, success in evals[-2:]]
                record = {
                    "n": n_bits,
                    "method": method,
                    "strategy": strategy,
                    "k": k if strategy != "none" else 0,
                    "seed": seed,
                    "success": round(sum(last) / len(last), 4),
                    "last_evals": last,
                    "env_steps": summary["env_steps"],
                    "updates": summary["updates"],
                    "wall_s": summary["wall_s"],
                    "code": summary.get("code"),
                    "run_dir": common.shown(run_dir),
                }
                records.append(record)
                print(json.dumps(record), flush=True)
    return records


def long_run(options: argparse.Namespace, runs_dir: Path) -> dict:
    """The 50-bit run with a 0.9 target; returns where it got to."""
    from herkit.config.resolve import preset_config

    preset = preset_config(ENV_ID)
    settings = dict(LONG)
    run_dir = runs_dir / "long-bits50-her-future-s0"
    summary = train_run(
        run_dir,
        settings.pop("n_bits"),
        settings.pop("strategy"),
        4,
        settings.pop("seed"),
        **settings,
    )
    evals = summary["evals"]
    record = {
        "n": LONG["n_bits"],
        "strategy": LONG["strategy"],
        "k": 4,
        "seed": LONG["seed"],
        "settings": {
            **{key: LONG[key] for key in ("steps", "eval_every", "eval_episodes")},
            "updates_per_step": preset.updates_per_step,
            "dqn": dataclasses.asdict(preset.agent_config()),
        },
        "target_success": LONG["target_success"],
        "reached_target": "solved_at_env_steps" in summary,
        "solved_at_env_steps": summary.get("solved_at_env_steps"),
        "solved_at_wall_s": summary.get("solved_at_wall_s"),
        "best_success": max(success for _, success in evals),
        "final_success": summary["success_rate"],
        "env_steps": summary["env_steps"],
        "wall_s": summary["wall_s"],
        "code": summary.get("code"),
        "evals": evals,
        "run_dir": common.shown(run_dir),
    }
    plot_long(evals)
    print(json.dumps({k: v for k, v in record.items() if k != "evals"}), flush=True)
    return record


def aggregate(records: list[dict]) -> list[dict]:
    """Per (n, method): median, min and max success over seeds."""
    rows = []
    for n_bits in sorted({r["n"] for r in records}):
        for method in METHODS:
            group = [r for r in records if r["n"] == n_bits and r["method"] == method]
            if not group:
                continue
            values = [r["success"] for r in group]
            rows.append(
                {
                    "n": n_bits,
                    "method": method,
                    "median": statistics.median(values),
                    "min": min(values),
                    "max": max(values),
                    "seeds": len(values),
                    "budget": group[0]["env_steps"],
                    "wall_s": round(sum(r["wall_s"] for r in group), 1),
                }
            )
    return rows


def plot_sweep(rows: list[dict], per_bit: int) -> None:
    """Success rate against bits, median over seeds with a min-max band."""
    with common.figure(FIGURE, figsize=(6.4, 4.2)) as (_, ax):
        for method, (_, _, label) in METHODS.items():
            group = [r for r in rows if r["method"] == method]
            if not group:
                continue
            xs = [r["n"] for r in group]
            line = ax.plot(xs, [r["median"] for r in group], marker="o", label=label)[0]
            low, high = [r["min"] for r in group], [r["max"] for r in group]
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        title = f"Bit flipping: success after max({MIN_BUDGET}, {per_bit} n) env steps"
        ax.set(xlabel="number of bits n", ylabel="success rate", ylim=(-0.02, 1.02), title=title)
        ax.grid(alpha=0.3)
        ax.legend()


def plot_long(evals: list[tuple[int, float]]) -> None:
    """Success rate of the long 50-bit run against env steps."""
    with common.figure(LONG_FIGURE, figsize=(6.4, 3.6)) as (_, ax):
        ax.plot([s for s, _ in evals], [v for _, v in evals], marker=".")
        ax.axhline(LONG["target_success"], color="grey", linestyle="--", linewidth=1)
        ax.set(
            xlabel="env steps",
            ylabel=f"success rate ({LONG['eval_episodes']} episodes)",
            ylim=(-0.02, 1.02),
            title="50 bits, DQN+HER (future, k=4), seed 0",
        )
        ax.grid(alpha=0.3)


def markdown_table(rows: list[dict]) -> str:
    """One line per n: median [min-max] success of each method, and the budget."""
    table = []
    for n_bits in sorted({r["n"] for r in rows}):
        found = {r["method"]: r for r in rows if r["n"] == n_bits}
        cells = [
            f"{found[m]['median']:.2f} [{found[m]['min']:.2f}-{found[m]['max']:.2f}]"
            if m in found
            else "-"
            for m in METHODS
        ]
        steps = next(r["budget"] for r in rows if r["n"] == n_bits)
        table.append([n_bits, f"{steps:,}", *cells])
    columns = ["n", "budget (env steps)", *(v[2] for v in METHODS.values())]
    return common.markdown(columns, "rr" + "r" * len(METHODS), table)


def main() -> None:
    cli = common.parser(__doc__)
    cli.add_argument("--bits", type=int, nargs="+", default=list(BITS), help="n values")
    cli.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help="seeds")
    cli.add_argument(
        "--budget-per-bit",
        type=int,
        default=BUDGET_PER_BIT,
        help=f"sweep budget is max({MIN_BUDGET}, this * n) env steps (default {BUDGET_PER_BIT})",
    )
    cli.add_argument("--only-long", action="store_true", help="only the 50-bit long run")
    cli.add_argument("--skip-long", action="store_true", help="no 50-bit long run")
    cli.add_argument("--runs-dir", default=str(common.ROOT / "runs" / "bitflip"), help="run dirs")
    options = cli.parse_args()
    CODE.update(common.code_version())
    if options.only_long and options.skip_long:
        cli.error("--only-long and --skip-long exclude each other")
    runs_dir = Path(options.runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    results = common.read_json(RESULTS)
    started = time.perf_counter()
    if not options.only_long:
        records = sweep(options, runs_dir)
        rows = aggregate(records)
        results.update(
            {
                "budget_rule": f"max({MIN_BUDGET}, {options.budget_per_bit} * n) env steps",
                "evaluation": (
                    f"every budget // {EVALS_PER_RUN} env steps, {EVAL_EPISODES} episodes; "
                    "success = mean of the last two evaluations"
                ),
                "seeds": options.seeds,
                "runs": records,
                "summary": rows,
                "sweep_wall_s": round(sum(r["wall_s"] for r in records), 1),
            }
        )
        plot_sweep(rows, options.budget_per_bit)
        print(markdown_table(rows), flush=True)
    if not options.skip_long:
        results["long"] = long_run(options, runs_dir)
    results["machine"] = common.machine()
    results.pop("code", None)  # an older field
    done = results.get("runs", []) + ([results["long"]] if "long" in results else [])
    results["code_versions"] = [
        json.loads(c) for c in sorted({json.dumps(r["code"]) for r in done})
    ]
    results["total_run_wall_s"] = round(sum(r["wall_s"] for r in done), 1)
    results["script_wall_s_last_invocation"] = round(time.perf_counter() - started, 1)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
