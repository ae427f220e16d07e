"""Each recipe ingredient alone on bit flipping: env steps to a 0.9 success rate.

    python benchmarks/ingredients.py --seeds 0 1 2 --workers 2

herkit's bit-flipping preset on 15 and 25 bits with one ingredient switched on at a time;
per run, the first evaluation at 0.9 and the final success (docs/ingredients.json, a table).
"""

from __future__ import annotations

import dataclasses
import json
from multiprocessing import Pool
from typing import Any

from common import DOCS, code_version, curve, first_steps, machine, markdown, parser, train_here

from herkit.config.resolve import preset_config

RECORD = DOCS / "ingredients.json"
BUDGETS = {15: 10_000, 25: 40_000}
VARIANTS: dict[str, dict[str, Any]] = {
    "preset (future k=4)": {},
    "goal mix 1 2 2": {"goal_mix": (1.0, 2.0, 2.0)},
    "3-step returns": {"n_step": 3},
    "LayerNorm in Q": {"critic_layer_norm": True},
    "goal normaliser fed sampled goals": {"normalize_relabelled_goals": True},
}


def run(job: tuple[int, str, int]) -> dict[str, Any]:
    """One training run: ``(n_bits, variant, seed)`` -> its record."""
    n_bits, variant, seed = job
    # Every variant against the preset as it was when these were measured: the goal
    # normaliser fed only the env's goals (the default until issue 15).
    changes = {"normalize_relabelled_goals": False, **VARIANTS[variant]}
    base = preset_config("herkit/BitFlip-v0")
    if changes.pop("critic_layer_norm", False):
        changes["agent"] = dataclasses.replace(base.agent_config(), critic_layer_norm=True)
    budget = {"steps": BUDGETS[n_bits], "eval_every": BUDGETS[n_bits] // 20, "eval_episodes": 50}
    summary, rows = train_here(
        base, env_kwargs=(f"n_bits={n_bits}",), seed=seed, **budget, **changes
    )
    points = curve(rows)
    return {
        "n_bits": n_bits,
        "variant": variant,
        "seed": seed,
        "first_0.9_at": first_steps(points),
        "final": summary["success_rate"],
        "wall_s": summary["wall_s"],
        "curve": points,
    }


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = parser(__doc__)
    cli.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    cli.add_argument("--workers", type=int, default=1)
    args = cli.parse_args()
    jobs = [(n, v, s) for n in BUDGETS for v in VARIANTS for s in args.seeds]
    with Pool(args.workers) as pool:
        rows = pool.map(run, jobs, chunksize=1)
    RECORD.write_text(
        json.dumps({"machine": machine(), "code": code_version(), "runs": rows}, indent=1)
    )
    table = []
    for n_bits in BUDGETS:
        for variant in VARIANTS:
            mine = [r for r in rows if r["n_bits"] == n_bits and r["variant"] == variant]
            firsts = ", ".join(
                f"{r['first_0.9_at']:,}" if r["first_0.9_at"] else "never" for r in mine
            )
            table.append([n_bits, variant, firsts, ", ".join(f"{r['final']:.2f}" for r in mine)])
    columns = ["bits", "variant", "first >= 0.9 at (env steps, per seed)", "final success"]
    print(markdown(columns, "rlll", table))


if __name__ == "__main__":
    main()
