"""Offline goal-conditioned RL against OGBench's table: make the data, train, evaluate.

    python benchmarks/offline.py data                       # pointmaze-medium-navigate, 1M steps
    python benchmarks/offline.py train --algos gcbc gcivl gciql --seeds 0 1 --steps 100000
    python benchmarks/offline.py table                      # the records beside OGBench's

``data`` makes the dataset as OGBench's generation script makes pointmaze-medium-navigate-v0
(:mod:`offline_data`: 1,000 episodes of 1,001 states, a noisy scripted oracle, goals
redrawn when reached; ``--episodes`` and ``--steps``, states per episode, choose others)
into ``data/``. ``train`` runs ``herkit train ENV --dataset PATH --algo ALGO
--offline-steps N`` per algorithm and seed (``--steps``: its gradient steps) into
``runs/offline/`` (a finished run is skipped, a stopped one resumed) and records each in
``offline.json`` (``--record``: docs/offline.json; see common.py): the success averaged
over the last three evaluations, as OGBench reports it (its evaluations at 800k, 900k and
1M of 1M gradient steps; here the last three of the budget given), each task's, the wall
time, the precision and the machine. ``--hidden`` and ``--batch`` shrink the networks and
the batch from OGBench's 3 x 512 and 1,024 where two CPU cores cannot afford them;
``--inputs`` feeds the networks the states as they are (``raw``, OGBench's) or standardised
by the dataset's mean and deviation (``standardised``, herkit's online agents').
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, ROOT, add_run, code_version, machine

RECORD = DOCS / "offline.json"
ENV = "pointmaze-medium-navigate-v0"
DATA = ROOT / "data" / f"{ENV}.npz"
ALGOS = ("gcbc", "gcivl", "gciql")
OGBENCH = {
    "gcbc": (9.0, 6.0),
    "gcivl": (63.0, 6.0),
    "gciql": (53.0, 8.0),
}
"""OGBench's success (%, mean and standard deviation over 8 seeds) on
pointmaze-medium-navigate-v0 (Park et al. 2024, arXiv:2410.20092, its table of state-based
results; 1M gradient steps, batch 1024, 3 x 512 networks, 5 tasks x 50 episodes, the last
three evaluations averaged)."""
LAST_EVALUATIONS = 3
"""Evaluations averaged into a run's figure, as OGBench averages its last three."""


def make_data(args: argparse.Namespace) -> None:
    """Write the dataset (and its -val file) with :func:`offline_data.make_dataset`."""
    from offline_data import make_dataset

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    make_dataset(args.env, args.episodes, args.steps, args.noise, args.seed, out)
    print(
        f"{out}: {args.episodes} episodes x {args.steps} states in "
        f"{time.perf_counter() - started:.0f} s"
    )


def run_dir(runs: Path, algo: str, seed: int, tag: str) -> Path:
    """Where one run lives."""
    return runs / tag / algo / f"s{seed}"


def train(args: argparse.Namespace) -> None:
    """Every (algo, seed) run of the grid, one after another, each recorded when done."""
    data = Path(args.data)
    if not data.is_file():
        raise SystemExit(f"no dataset at {data}: make it first (python benchmarks/offline.py data)")
    tag = f"steps{args.steps}-h{'x'.join(map(str, args.hidden))}-b{args.batch}-{args.inputs}"
    for algo in args.algos:
        for seed in args.seeds:
            out = run_dir(Path(args.runs), algo, seed, tag)
            summary = out / "summary.json"
            if summary.is_file() and json.loads(summary.read_text()).get("updates") == args.steps:
                print(f"{algo} seed {seed}: done")
                continue
            flags = [
                f"--{algo}.hidden",
                *map(str, args.hidden),
                f"--{algo}.batch-size",
                str(args.batch),
                f"--{algo}.{'' if args.inputs == 'standardised' else 'no-'}normalize-inputs",
            ]
            common = ["--offline-steps", str(args.steps), "--no-progress", "--no-tensorboard"]
            if args.torch_threads:
                common += ["--torch-threads", str(args.torch_threads)]
            if args.eval_episodes:
                common += ["--eval-episodes", str(args.eval_episodes)]
            if (out / "checkpoint").is_dir():
                command = ["--resume", str(out), *common]
            else:
                command = [
                    ENV,
                    "--dataset",
                    str(data),
                    "--algo",
                    algo,
                    "--seed",
                    str(seed),
                    "--out",
                    str(out),
                    "--overwrite",
                    "--eval-every",
                    str(args.eval_every),
                    "--checkpoint-every",
                    str(args.eval_every),
                    *flags,
                    *common,
                ]
            print(f"{algo} seed {seed}: herkit train {' '.join(command)}", flush=True)
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "herkit", "train", *command], cwd=ROOT)
            if done.returncode != 0:
                print(f"  exit code {done.returncode}")
                continue
            record(out, algo, seed, tag, time.perf_counter() - started, args)


def run_figures(out: Path) -> dict[str, Any]:
    """A finished run's figures from its progress.csv: the last evaluations' mean success
    (overall and per task) and its curve."""
    with open(out / "progress.csv") as file:
        rows = list(csv.DictReader(file))
    last = rows[-LAST_EVALUATIONS:]
    tasks = sorted(key for key in rows[-1] if key.startswith("success_task_"))
    return {
        "success": statistics.fmean(float(row["success_rate"]) for row in last),
        "tasks": {key: statistics.fmean(float(row[key]) for row in last) for key in tasks},
        "curve": [[int(float(row["updates"])), float(row["success_rate"])] for row in rows],
        "evaluations_averaged": len(last),
    }


def record(
    out: Path, algo: str, seed: int, tag: str, wall_s: float, args: argparse.Namespace
) -> None:
    """Write one finished run into docs/offline.json."""
    config = json.loads((out / "config.json").read_text())
    run = {
        "env": ENV,
        "algo": algo,
        "seed": seed,
        "steps": args.steps,
        "hidden": list(args.hidden),
        "batch": args.batch,
        "inputs": args.inputs,
        "goal_rules": "OGBench's GCDataset, index for index",
        "precision": config.get("machine", {}).get("precision", config.get("precision")),
        "wall_s": round(wall_s, 1),
        **run_figures(out),
        **code_version(),
        "command": f"python benchmarks/offline.py train --algos {algo} --seeds {seed} "
        f"--steps {args.steps} --hidden {' '.join(map(str, args.hidden))} "
        f"--batch {args.batch} --eval-every {args.eval_every} --inputs {args.inputs} --record",
    }
    add_run(RECORD, f"{tag}/{algo}/s{seed}", run, machine())
    print(f"  {algo} seed {seed}: success {run['success']:.2f} in {wall_s / 60:.1f} min")


def table(_: argparse.Namespace) -> None:
    """The recorded runs per budget and algorithm beside OGBench's figure (the spread over
    seeds where there are several)."""
    runs = json.loads(RECORD.read_text())["runs"] if RECORD.exists() else {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for key, run in runs.items():
        groups.setdefault((key.rsplit("/", 2)[0], run["algo"]), []).append(run)
    print("| budget | algo | seeds | herkit success % | tasks 1-5 % | OGBench % (8 seeds) | "
          "wall min |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for (tag, algo), group in sorted(groups.items(), key=lambda item: ALGOS.index(item[0][1])):
        values = [100 * run["success"] for run in group]
        spread = f" ± {statistics.stdev(values):.0f}" if len(values) > 1 else ""
        tasks = sorted(group[0]["tasks"])
        per_task = " / ".join(
            f"{100 * statistics.fmean(run['tasks'][task] for run in group):.0f}" for task in tasks
        )
        mean, std = OGBENCH[algo]
        seeds = ", ".join(str(run["seed"]) for run in group)
        wall = " / ".join(f"{run['wall_s'] / 60:.0f}" for run in group)
        print(f"| {tag} | {algo} | {seeds} | {statistics.fmean(values):.0f}{spread} | "
              f"{per_task} | {mean:.0f} ± {std:.0f} | {wall} |")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="make the dataset")
    data.add_argument("--env", default="pointmaze-medium-v0")
    data.add_argument("--episodes", type=int, default=1000)
    data.add_argument("--steps", type=int, default=1001, help="states per episode")
    data.add_argument("--noise", type=float, default=0.5)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--out", default=str(DATA))
    data.set_defaults(run=make_data)
    runs = commands.add_parser("train", help="train and record the grid")
    runs.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    runs.add_argument("--seeds", nargs="+", type=int, default=[0])
    runs.add_argument("--steps", type=int, default=1_000_000, help="gradient steps")
    runs.add_argument("--hidden", nargs="+", type=int, default=[512, 512, 512])
    runs.add_argument("--batch", type=int, default=1024)
    runs.add_argument("--eval-every", type=int, default=100_000)
    runs.add_argument("--torch-threads", type=int, default=None, help="torch's CPU threads")
    runs.add_argument(
        "--inputs",
        choices=("raw", "standardised"),
        default="raw",
        help="the networks' inputs: as they are (OGBench's) or standardised",
    )
    runs.add_argument(
        "--eval-episodes",
        type=int,
        default=None,
        help="episodes of each task per evaluation (default: the preset's, 50)",
    )
    runs.add_argument("--data", default=str(DATA))
    runs.add_argument("--runs", default=str(ROOT / "runs" / "offline"))
    runs.set_defaults(run=train)
    shown = commands.add_parser("table", help="the records beside OGBench's table")
    shown.set_defaults(run=table)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
