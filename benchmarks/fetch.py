"""Fetch tasks with the DDPG+HER preset: success against env steps and against wall time.

    python benchmarks/fetch.py --label preset    # FetchPush-v4, the preset, one process
    python benchmarks/fetch.py --ranks 2 --herkit-args --n-envs 2 --ddpg.batch-size 256 \
        --updates-per-step 0.25 --eval-every 20000 --eval-episodes 20   # the earlier 2-rank runs
    python benchmarks/fetch.py --tasks FetchReach-v4 --steps 20000 --ranks 1
    python benchmarks/fetch.py --tasks FetchPickAndPlace-v4 FetchSlide-v4 --steps 2000000
    python benchmarks/fetch.py --seeds 1 2                      # more seeds of FetchPush-v4
    python benchmarks/fetch.py --herkit-args --updates-per-step 0.5   # other training flags
    python benchmarks/fetch.py --minutes 30 --label preset --seeds 0 1 2 \
        --herkit-args --target-success 0.9      # at most 30 min each, stop at 0.9
    python benchmarks/fetch.py --label 64-per-step --herkit-args --n-envs 8 \
        --updates-per-step 0.125                # the earlier one-process preset
    python benchmarks/fetch.py --table          # every setting's seeds against the targets

Each task and seed is one ``torchrun --nproc-per-node RANKS -m herkit train TASK --seed
SEED --steps STEPS`` job (the task's preset) with ``--herkit-args`` appended; env steps
count over all ranks, and a run whose directory holds a summary.json is not run again.
``--label L`` keeps other settings' records apart (key ``<task>/L/seed<seed>``). Writes
docs/fetch.json (a record per task and seed, with ``others_cores``: the cores' worth of
CPU other processes used meanwhile) and docs/figures/fetch_<task>.png. A task is solved
where the mean success of ``HELD`` evaluations in a row first reaches its target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common
import numpy as np

RESULTS = common.DOCS / "fetch.json"
HERKIT_ARGS = ["--eval-every", "20000", "--eval-episodes", "20"]
SOLVED = 0.9
TARGETS = {"FetchSlide-v4": 0.8}
"""Targets other than :data:`SOLVED` (FetchSlide's published runs plateau below 0.9)."""
HELD = 3
"""Evaluations in a row whose mean success must reach the target (``herkit train``'s)."""
SHARED = 0.5
"""Others' cores during a run above which its wall time is marked as not comparable."""
BUDGETS = {"FetchPush-v4": 400_000, "FetchPickAndPlace-v4": 1_000_000, "FetchSlide-v4": 1_000_000}
"""Env steps at which ``--table`` compares settings on the same budget."""


def held_at(curve: list[dict[str, float]], target: float, n: int = HELD) -> dict[str, float] | None:
    """The first evaluation where the mean success of the last ``n`` reaches ``target``."""
    rates = [point["success_rate"] for point in curve]
    for i in range(n - 1, len(curve)):
        if np.mean(rates[i - n + 1 : i + 1]) >= target:
            return curve[i]
    return None


def success_at(curve: list[dict[str, float]], budget: int, n: int = HELD) -> float | None:
    """The mean success of the last ``n`` evaluations by ``budget`` env steps (or None)."""
    # an evaluation lands a few env steps past its multiple where n_envs does not divide it
    rates = [point["success_rate"] for point in curve if point["env_steps"] <= budget * 1.01]
    if not curve or curve[-1]["env_steps"] < budget - 20_000 or len(rates) < n:
        return None
    return float(np.mean(rates[-n:]))


def eval_episodes(record: dict[str, Any]) -> int:
    """Episodes per evaluation of a record (its command's ``--eval-episodes``; the preset's 20)."""
    words = record["command"].split()
    return int(words[words.index("--eval-episodes") + 1]) if "--eval-episodes" in words else 20


def table(records: dict[str, dict[str, Any]], tasks: list[str]) -> str:
    """Markdown: per task, setting and seed, where the target was first reached and first
    held, the success at the task's budget, its best, env steps/s and others' cores."""

    def at(point: dict[str, float] | None) -> str:
        if point is None:
            return "not reached"
        return f"{point['env_steps']:,.0f} env steps, {point['wall_s'] / 60:.1f} min"

    rows = []
    for key, record in sorted(records.items()):
        task = key.split("/")[0]
        if task not in tasks:
            continue
        target = TARGETS.get(task, SOLVED)
        curve = record["curve"]
        others = record.get("others_cores")
        budget = BUDGETS.get(task, curve[-1]["env_steps"] if curve else 0)
        there = success_at(curve, budget)
        if there is None and len(curve) >= HELD:  # stopped early: where it was
            last = np.mean([point["success_rate"] for point in curve[-HELD:]])
            at_budget = f"stopped: {last:.2f} at {curve[-1]['env_steps']:,.0f}"
        else:
            at_budget = "-" if there is None else f"{there:.2f} at {budget:,}"
        rows.append(
            [
                task,
                setting(record),
                record["seed"],
                at(common.first_at(curve, target)),
                at(held_at(curve, target)),
                at_budget,
                eval_episodes(record),
                f"{record['best_success']:.2f}",
                f"{record['env_steps_per_s']:.0f}",
                "?" if others is None else f"{others:.2f}",
            ]
        )
    columns = ["task", "setting", "seed", "first evaluation >= target"]
    columns += [f"target held ({HELD} in a row)", "success at budget", "episodes", "best"]
    return common.markdown([*columns, "env steps/s", "others' cores"], "llrlllrrrr", rows)


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``)."""
    idle, total = common.cpu_ticks()
    return (total - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    """CPU seconds of this script's finished child processes (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def torchrun_train(
    env_id: str, seed: int, ranks: int, steps: int, out: Path, herkit_args: list[str], minutes=None
) -> dict[str, Any]:
    """One ``torchrun ... herkit train`` job (reused when finished; stopped by SIGTERM after
    ``minutes``); its record."""
    args = ["train", env_id, "--seed", str(seed), "--steps", str(steps), *herkit_args]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command = [*torchrun, "--nproc-per-node", str(ranks), "-m", "herkit", *args]
    own = ["--out", str(out), *common.QUIET, "--checkpoint-every", str(steps)]
    wall_file = out / "process_wall_s.txt"
    if not (out / "summary.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        started, busy, ours = time.perf_counter(), busy_cpu_s(), children_cpu_s()
        job = subprocess.Popen([*command, *own], stdout=subprocess.DEVNULL)
        stopped = False
        try:
            job.wait(timeout=None if minutes is None else minutes * 60)
        except subprocess.TimeoutExpired:
            job.terminate()  # torchrun passes it on; herkit checkpoints and writes its summary
            job.wait()
            stopped = True
        done = out / "summary.json"
        # SIGTERM from elsewhere (a run stopped by hand) also leaves an interrupted summary
        interrupted = common.read_json(done).get("interrupted", False)
        if not done.exists() or (job.returncode != 0 and not (stopped or interrupted)):
            raise SystemExit(f"{' '.join(command)} failed with exit code {job.returncode}")
        wall_s = time.perf_counter() - started
        others = (busy_cpu_s() - busy) - (children_cpu_s() - ours)
        wall_file.write_text(f"{wall_s:.1f}\n")
        (out / "others_cores.txt").write_text(f"{max(0.0, others) / wall_s:.3f}\n")
    others_file = out / "others_cores.txt"
    summary = common.read_json(out / "summary.json")
    curve = common.progress(out, "env_steps", "wall_s", "success_rate", "updates")
    solved = common.first_at(curve, SOLVED)
    return {
        "command": f"torchrun --nproc-per-node {ranks} -m herkit " + " ".join(args),
        "ranks": ranks,
        "seed": seed,
        "summary": summary,
        "process_wall_s": float(wall_file.read_text()) if wall_file.exists() else None,
        "others_cores": float(others_file.read_text()) if others_file.exists() else None,
        "env_steps_per_s": round(summary["env_steps"] / summary["wall_s"], 1),
        "best_success": max((point["success_rate"] for point in curve), default=None),
        f"first_at_{SOLVED}": solved,
        "curve": curve,
        "run_dir": common.shown(out),
    }


def plot_curves(
    groups: dict[str, list[dict[str, Any]]], path: Path, title: str, target: float = SOLVED
) -> None:
    """Success against env steps and wall time: a thin line per record, a group's median
    and band thick, the target dashed."""
    layout = {"rect": (0, 0.01 + 0.035 * len(groups), 1, 1)}
    with common.figure(path, 1, 2, figsize=(11, 4.5), layout=layout) as (fig, axes):
        by_steps, by_time = axes
        for index, (name, records) in enumerate(groups.items()):
            color = f"C{index % 10}"
            seeds = ", ".join(str(record["seed"]) for record in records)
            one_seed = len(records) == 1
            label = f"{name} (seed {seeds})" if one_seed else f"{name}, median of seeds {seeds}"
            if any(r.get("shared") or (r.get("others_cores") or 0) > SHARED for r in records):
                label += ", shared machine: wall times not comparable"
            for record in records:
                curve = record["curve"]
                success = [point["success_rate"] for point in curve]
                thin = {"color": color, "alpha": 1.0 if one_seed else 0.35, "marker": "."}
                thin |= {"label": label} if one_seed else {}
                by_steps.plot([p["env_steps"] for p in curve], success, **thin)
                by_time.plot([p["wall_s"] / 60 for p in curve], success, **thin)
            if not one_seed:
                steps, wall_s, success, low, high = common.median_band(
                    [r["curve"] for r in records]
                )
                for axis, xs in ((by_steps, steps), (by_time, wall_s / 60)):
                    axis.plot(xs, success, color=color, linewidth=2.5, label=label)
                    axis.fill_between(xs, low, high, color=color, alpha=0.15, linewidth=0)
        by_steps.set(xlabel="env steps (all ranks)")
        by_time.set(xlabel="wall time (min)")
        for axis in axes:
            axis.set(ylabel="success rate", ylim=(-0.02, 1.02))
            axis.axhline(target, color="grey", linestyle="--", linewidth=1)
            axis.grid(alpha=0.3)
        handles, labels = by_steps.get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=1, fontsize=8, frameon=False)
        fig.suptitle(title)


def setting(record: dict[str, Any]) -> str:
    """A record's settings as the figure names them: its label and ranks."""
    name = record.get("label") or "earlier settings"
    return name if record["ranks"] == 1 else f"{name}, {record['ranks']} ranks"


def main() -> None:
    cli = common.parser(__doc__)
    cli.add_argument("--tasks", nargs="+", default=["FetchPush-v4"], help="Fetch env ids")
    cli.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds")
    cli.add_argument("--steps", type=int, default=1_000_000, help="env steps (all ranks)")
    cli.add_argument("--ranks", type=int, default=1, help="torchrun processes")
    cli.add_argument("--runs-dir", default="runs/fetch", help="where the runs go")
    cli.add_argument("--label", default="", help="names these settings in the records")
    cli.add_argument("--minutes", type=float, help="stop each run after this wall time (SIGTERM)")
    cli.add_argument(
        "--herkit-args",
        nargs=argparse.REMAINDER,
        default=HERKIT_ARGS,
        help="flags for herkit train (the rest of the command line)",
    )
    cli.add_argument("--table", action="store_true", help="print every record's row, run nothing")
    options = cli.parse_args()
    records = common.read_json(RESULTS)
    if options.table:
        print(table(records, sorted({key.split("/")[0] for key in records})))
        return
    for task in options.tasks:
        for seed in options.seeds:
            label = f"{options.label}/" if options.label else ""
            key = f"{task}/{label}seed{seed}"
            print(f"== {key}", flush=True)
            out = Path(options.runs_dir) / task / f"{label}seed{seed}"
            record = torchrun_train(
                task, seed, options.ranks, options.steps, out, options.herkit_args, options.minutes
            )
            record.update(machine=common.machine(), code=common.code_version(), label=options.label)
            record.update(common.run_choices(out))
            # read again: another fetch.py may have written its records meanwhile
            records = common.read_json(RESULTS) | {key: record}
            print(json.dumps({k: v for k, v in record.items() if k != "curve"}), flush=True)
            RESULTS.write_text(json.dumps(records, indent=1) + "\n")
        groups: dict[str, list[dict[str, Any]]] = {}
        for key, record in sorted(records.items()):
            if key.startswith(f"{task}/"):
                groups.setdefault(setting(record), []).append(record)
        figure = common.FIGURES / f"fetch_{task.split('-')[0].lower()}.png"
        title = f"{task}, DDPG+HER on {common.machine()['cpus']} CPU cores"
        plot_curves(groups, figure, title, TARGETS.get(task, SOLVED))


if __name__ == "__main__":
    main()
