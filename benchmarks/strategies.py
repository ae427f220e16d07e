"""HER goal strategies and k compared on a continuous task (paper section 4.5).

    python benchmarks/strategies.py                  # 4 strategies x k in {1,2,4,8}, + none
    python benchmarks/strategies.py --seeds 0 1 2

Each run is `herkit train FetchReach-v4 --strategy S --k K` with the Fetch preset, evaluated
every 250 env steps; measures: env steps to 0.9 and the mean success (wall time does not
enter). Writes strategies.json and figures/strategies.png.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from subprocess import DEVNULL

from common import DOCS, FIGURES, curve, figure, first_steps, herkit_train, parser

STRATEGIES = ("future", "final", "episode", "random")
KS = (1, 2, 4, 8)


def run(strategy: str, k: int, seed: int, steps: int, out: Path) -> dict:
    """One training run; returns its evaluation curve and summary measures."""
    shutil.rmtree(out, ignore_errors=True)
    flags = f"--strategy {strategy} --k {k} --seed {seed} --steps {steps} --eval-every 250"
    flags += f" --checkpoint-every {steps}"
    herkit_train("FetchReach-v4", *flags.split(), out=out, stdout=DEVNULL, stderr=DEVNULL)
    points = curve(out)
    return {
        "strategy": strategy,
        "k": k,
        "seed": seed,
        "first_0.9_env_steps": first_steps(points),
        "mean_success": sum(s for _, s in points) / len(points),
        "final_success": points[-1][1],
        "curve": points,
    }


def plot(results: list[dict], path: Path) -> None:
    """Env steps to 0.9 and mean success against k, one line per strategy."""
    with figure(path, 1, 2, figsize=(11, 4)) as (fig, (first_ax, mean_ax)):
        for strategy in STRATEGIES:
            ks = sorted({r["k"] for r in results if r["strategy"] == strategy})
            if not ks:
                continue

            def median(key: str, k: int, strategy: str = strategy) -> float:
                values = sorted(
                    float("nan") if r[key] is None else r[key]
                    for r in results
                    if r["strategy"] == strategy and r["k"] == k
                )
                return values[len(values) // 2]

            first = [median("first_0.9_env_steps", k) for k in ks]
            first_ax.plot(ks, first, marker="o", label=strategy)
            mean_ax.plot(ks, [median("mean_success", k) for k in ks], marker="o", label=strategy)
        if none := [r for r in results if r["strategy"] == "none"]:
            mean_ax.axhline(none[0]["mean_success"], color="gray", linestyle="--", label="no HER")
        first_ax.set(xscale="log", xlabel="k", ylabel="env steps to 0.9 success (median)")
        mean_ax.set(xscale="log", xlabel="k", ylabel="mean success over the run (median)")
        for axis in (first_ax, mean_ax):
            axis.minorticks_off()
            axis.set_xticks(KS, [str(k) for k in KS])
            axis.grid(alpha=0.3)
            axis.legend(fontsize=8)
        fig.suptitle("FetchReach-v4, DDPG+HER: goal strategies and k")


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = parser(__doc__)
    cli.add_argument("--seeds", type=int, nargs="+", default=[0])
    cli.add_argument("--steps", type=int, default=4000, help="env steps per run")
    cli.add_argument("--out", default="runs/strategies")
    options = cli.parse_args()
    results: list[dict] = []
    jobs = [(s, k) for s in STRATEGIES for k in KS] + [("none", 0)]
    for seed in options.seeds:
        for strategy, k in jobs:
            result = run(
                strategy, k, seed, options.steps, Path(options.out) / f"{strategy}-k{k}-s{seed}"
            )
            results.append(result)
            print(json.dumps({key: v for key, v in result.items() if key != "curve"}), flush=True)
            (DOCS / "strategies.json").write_text(json.dumps(results, indent=1))
    plot(results, FIGURES / "strategies.png")


if __name__ == "__main__":
    main()
