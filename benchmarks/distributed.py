"""FetchPush-v4 with 1 and 2 torchrun ranks on one machine: throughput and learning.

    python benchmarks/distributed.py                 # both, default budget
    python benchmarks/distributed.py --steps 40000   # env steps per run (all ranks)

Each run is `torchrun --nproc-per-node R -m herkit train FetchPush-v4` with the earlier
Fetch preset's flags, seed 0, one budget of env steps over all ranks (a finished run is
reused). Writes docs/distributed.json and docs/figures/distributed_fetchpush.png.
"""

from __future__ import annotations

import json
from pathlib import Path

from common import DOCS, FIGURES, parser
from fetch import plot_curves, torchrun_train


def run(ranks: int, steps: int, out: Path) -> dict:
    """One torchrun job of FetchPush-v4 with those settings; its record."""
    args = "--n-envs 2 --ddpg.batch-size 256 --updates-per-step 0.5"
    args += f" --eval-every {steps // 10} --eval-episodes 10"
    return torchrun_train("FetchPush-v4", 0, ranks, steps, out, args.split())


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = parser(__doc__)
    cli.add_argument("--steps", type=int, default=40_000, help="env steps per run")
    cli.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    cli.add_argument("--out", default="runs/distributed")
    options = cli.parse_args()
    results = {}
    for ranks in options.ranks:
        name = f"{ranks} rank" + ("s" if ranks > 1 else "")
        print(f"== {name}", flush=True)
        results[name] = run(ranks, options.steps, Path(options.out) / f"ranks{ranks}")
        print(json.dumps({k: v for k, v in results[name].items() if k != "curve"}), flush=True)
    (DOCS / "distributed.json").write_text(json.dumps(results, indent=1))
    title = "FetchPush-v4, DDPG+HER, 1 vs 2 ranks on one 2-core machine"
    groups = {name: [record] for name, record in results.items()}
    plot_curves(groups, FIGURES / "distributed_fetchpush.png", title)


if __name__ == "__main__":
    main()
