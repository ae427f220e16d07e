"""Learning with the envs overlapped with the updates, and without: the same success at
the same env steps?

    python benchmarks/overlap.py --seeds 0 1 2                       # fp32, both tasks
    python benchmarks/overlap.py --seeds 0 1 2 --precisions fp32 bf16

15-bit flipping and FetchReach-v4 (their presets), each seed and precision trained twice
with its envs in a worker process: overlapped (the default) and with ``--no-overlap``.
Records go to docs/overlap.json.
"""

from __future__ import annotations

from typing import Any

from common import DOCS, add_run, code_version, curve, first_steps, machine, parser, train_here

RECORD = DOCS / "overlap.json"
TASKS: dict[str, dict[str, Any]] = {
    "herkit/BitFlip-v0": {
        "steps": 10_000,
        "eval_every": 1_000,
        "eval_episodes": 50,
        "env_workers": 1,
    },
    "FetchReach-v4": {"steps": 5_000, "eval_every": 500, "eval_episodes": 20},
}


def run(env_id: str, seed: int, precision: str, overlap: bool) -> dict[str, Any]:
    """One run of ``env_id``'s preset, its envs overlapped with the updates or not; its record."""
    settings = {"seed": seed, "precision": precision, "overlap": overlap, "torch_threads": 1}
    summary, rows = train_here(env_id, **settings, **TASKS[env_id])
    points = curve(rows)
    return {
        "env_id": env_id,
        "seed": seed,
        "precision": precision,
        "overlap": overlap,
        "success_rate": summary["success_rate"],
        "first_0.9_at": first_steps(points),
        "wall_s": summary["wall_s"],
        "training_s": round(float(rows[-1]["wall_s"]) - float(rows[-1]["eval_s"]), 2),
        "updates": summary["updates"],
        "curve": points,
    }


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = parser(__doc__)
    cli.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    cli.add_argument("--precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"])
    cli.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    args = cli.parse_args()
    info = machine() | {"code": code_version()}
    for env_id in args.tasks:
        for seed in args.seeds:
            for precision in args.precisions:
                for overlap in (True, False):
                    row = run(env_id, seed, precision, overlap)
                    key = f"{env_id}/seed{seed}/{precision}/{'overlap' if overlap else 'wait'}"
                    add_run(RECORD, key, row, info)
                    print(
                        f"{key}: final {row['success_rate']:.2f}, first >= 0.9 at "
                        f"{row['first_0.9_at']}, training {row['training_s']:.1f} s",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
