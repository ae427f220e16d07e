"""HER goal strategies and k compared on a continuous task (paper section 4.5).

    python benchmarks/strategies.py                  # 4 strategies x k in {1,2,4,8}, + none
    python benchmarks/strategies.py --seeds 0 1 2

Each run is `herkit train FetchReach-v4 --strategy S --k K` with the Fetch preset (DDPG+HER,
baselines' settings), a fixed budget of env steps and an evaluation (10 episodes) every
250 env steps. The measure is sample efficiency: the env steps at which the success rate
first reaches 0.9, and the mean success over all evaluations (area under the curve).
Wall time does not enter, so the runs may share the machine with other work. Writes
docs/strategies.json and docs/figures/strategies.png.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
STRATEGIES = ("future", "final", "episode", "random")
KS = (1, 2, 4, 8)


def run(strategy: str, k: int, seed: int, steps: int, out: Path) -> dict:
    """One training run; returns its evaluation curve and summary measures."""
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "herkit",
        "train",
        "FetchReach-v4",
        "--strategy",
        strategy,
        "--k",
        str(k),
        "--seed",
        str(seed),
        "--steps",
        str(steps),
        "--eval-every",
        "250",
        "--out",
        str(out),
        "--no-progress",
        "--no-tensorboard",
        "--checkpoint-every",
        str(steps),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lines = (out / "progress.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    curve = [(int(r["env_steps"]), float(r["success_rate"])) for r in rows]
    first = next((step for step, success in curve if success >= 0.9), None)
    return {
        "strategy": strategy,
        "k": k,
        "seed": seed,
        "first_0.9_env_steps": first,
        "mean_success": sum(s for _, s in curve) / len(curve),
        "final_success": curve[-1][1],
        "curve": curve,
    }


def plot(results: list[dict], path: Path) -> None:
    """Env steps to 0.9 and mean success against k, one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (first_ax, mean_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for strategy in STRATEGIES:
        points = sorted(r["k"] for r in results if r["strategy"] == strategy)
        ks = sorted(set(points))
        if not ks:
            continue

        def median(key: str, k: int, strategy: str = strategy) -> float:
            values = sorted(
                float("nan") if r[key] is None else r[key]
                for r in results
                if r["strategy"] == strategy and r["k"] == k
            )
            return values[len(values) // 2]

        first_ax.plot(
            ks, [median("first_0.9_env_steps", k) for k in ks], marker="o", label=strategy
        )
        mean_ax.plot(ks, [median("mean_success", k) for k in ks], marker="o", label=strategy)
    none = [r for r in results if r["strategy"] == "none"]
    if none:
        mean_ax.axhline(none[0]["mean_success"], color="gray", linestyle="--", label="no HER")
    first_ax.set(xscale="log", xlabel="k", ylabel="env steps to 0.9 success (median)")
    mean_ax.set(xscale="log", xlabel="k", ylabel="mean success over the run (median)")
    for axis in (first_ax, mean_ax):
        axis.minorticks_off()
        axis.set_xticks(KS, [str(k) for k in KS])
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle("FetchReach-v4, DDPG+HER: goal strategies and k")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=4000, help="env steps per run")
    parser.add_argument("--out", default="runs/strategies")
    options = parser.parse_args()
    results_file = DOCS / "strategies.json"
    results: list[dict] = []
    jobs = [(s, k) for s in STRATEGIES for k in KS] + [("none", 0)]
    for seed in options.seeds:
        for strategy, k in jobs:
            out = Path(options.out) / f"{strategy}-k{k}-s{seed}"
            result = run(strategy, k, seed, options.steps, out)
            results.append(result)
            print(json.dumps({key: v for key, v in result.items() if key != "curve"}), flush=True)
            results_file.write_text(json.dumps(results, indent=1))
    (DOCS / "figures").mkdir(parents=True, exist_ok=True)
    plot(results, DOCS / "figures" / "strategies.png")


if __name__ == "__main__":
    main()
