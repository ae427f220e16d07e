"""FetchPush-v4 with 1 and 2 torchrun ranks on one machine: throughput and learning.

    python benchmarks/distributed.py                 # both, default budget
    python benchmarks/distributed.py --steps 40000   # env steps per run (all ranks)

Each run is `torchrun --nproc-per-node R -m herkit train FetchPush-v4` with the Fetch
preset (DDPG+HER, 2 envs per rank, 0.5 updates per env step per rank), the same seed and
the same budget in env steps counted over all ranks. Writes docs/distributed.json and
docs/figures/distributed_fetchpush.png (success against env steps and against wall time).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def run(ranks: int, steps: int, out: Path) -> dict:
    """One torchrun job; returns its summary, progress rows and process wall time."""
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
        "--master-port", str(29400 + ranks), "-m", "herkit", "train", "FetchPush-v4",
        "--steps", str(steps), "--eval-every", str(steps // 10), "--eval-episodes", "10",
        "--checkpoint-every", str(steps), "--out", str(out), "--no-progress", "--no-tensorboard",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    lines = (out / "progress.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    return {
        "command": f"torchrun --nproc-per-node {ranks} -m herkit train FetchPush-v4 "
        f"--steps {steps}",
        "summary": summary,
        "process_wall_s": round(time.perf_counter() - started, 1),
        "env_steps_per_s": round(summary["env_steps"] / summary["wall_s"], 1),
        "curve": [
            {k: float(row[k]) for k in ("env_steps", "wall_s", "success_rate", "updates")}
            for row in rows
        ],
    }


def plot(results: dict[str, dict], path: Path) -> None:
    """Success against env steps and against wall time, one line per world size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_steps, by_time) = plt.subplots(1, 2, figsize=(11, 4))
    for name, result in results.items():
        curve = result["curve"]
        steps = [p["env_steps"] for p in curve]
        seconds = [p["wall_s"] for p in curve]
        success = [p["success_rate"] for p in curve]
        by_steps.plot(steps, success, marker=".", label=name)
        by_time.plot(seconds, success, marker=".", label=name)
    by_steps.set(xlabel="env steps (all ranks)", ylabel="success rate", ylim=(-0.02, 1.02))
    by_time.set(xlabel="wall time (s)", ylabel="success rate", ylim=(-0.02, 1.02))
    for axis in (by_steps, by_time):
        axis.grid(alpha=0.3)
        axis.legend()
    fig.suptitle("FetchPush-v4, DDPG+HER, 1 vs 2 ranks on one 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40_000, help="env steps per run")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", default="runs/distributed")
    options = parser.parse_args()
    results = {}
    for ranks in options.ranks:
        name = f"{ranks} rank" + ("s" if ranks > 1 else "")
        print(f"== {name}", flush=True)
        results[name] = run(ranks, options.steps, Path(options.out) / f"ranks{ranks}")
        print(json.dumps({k: v for k, v in results[name].items() if k != "curve"}), flush=True)
    (DOCS / "figures").mkdir(parents=True, exist_ok=True)
    (DOCS / "distributed.json").write_text(json.dumps(results, indent=1))
    plot(results, DOCS / "figures" / "distributed_fetchpush.png")


if __name__ == "__main__":
    main()
