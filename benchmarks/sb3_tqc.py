"""SB3's TQC with rl-zoo's FetchPush settings against herkit, at equal wall time.

    python benchmarks/sb3_compare.py tqc --minutes 20     # one SB3 run, then the table
    python benchmarks/sb3_compare.py tqc --table          # the table from the records

Writes sb3_tqc.json and prints it beside fetch.json's FetchPush-v4 records at that wall time.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import common
from sb3_common import SCRIPT, learn

TQC_RECORD = common.DOCS / "sb3_tqc.json"


def zoo_tqc(minutes: float, eval_every: int, seed: int) -> dict[str, Any]:
    """TQC with rl-zoo's FetchPush hyperparameters for ``minutes``; its record and curve."""
    import gymnasium as gym
    import gymnasium_robotics
    from sb3_contrib import TQC
    from stable_baselines3 import HerReplayBuffer

    gym.register_envs(gymnasium_robotics)
    env, eval_env = gym.make("FetchPush-v4"), gym.make("FetchPush-v4")
    model = TQC(
        "MultiInputPolicy",
        env,
        buffer_size=1_000_000,
        batch_size=2048,
        gamma=0.95,
        learning_rate=1e-3,
        tau=0.05,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
        policy_kwargs=dict(net_arch=[512, 512, 512], n_critics=2),
        seed=seed,
        verbose=0,
    )

    def eval_seed(env_steps: int) -> int:
        return 10_000 + env_steps // eval_every - 1

    started = time.perf_counter()
    rows = learn(model, 10**7, eval_every, eval_env, 20, eval_seed, seconds=minutes * 60, say=True)
    wall_s = time.perf_counter() - started
    return {
        "command": f"python {SCRIPT} tqc --minutes {minutes:g} --eval-every {eval_every} "
        f"--seed {seed}",
        "seed": seed,
        "minutes": minutes,
        "env_steps": int(model.num_timesteps),
        "wall_s": round(wall_s, 1),
        "env_steps_per_s": round(model.num_timesteps / wall_s, 2),
        "curve": [
            {key: row[key] for key in ("env_steps", "wall_s", "success_rate")} for row in rows
        ],
        "machine": common.machine(),
        "code": common.code_version(),
    }


def success_within(curve: list[dict[str, float]], wall_s: float) -> float | None:
    """Success at the last evaluation that ended within ``wall_s``, or None."""
    inside = [point["success_rate"] for point in curve if point["wall_s"] <= wall_s]
    return inside[-1] if inside else None


def tqc_table(sb3: dict[str, Any]) -> str:
    """SB3's run beside every herkit FetchPush-v4 record, at SB3's wall time."""
    wall_s = sb3["wall_s"]
    best = max((p["success_rate"] for p in sb3["curve"]), default=float("nan"))
    rows: list[list[Any]] = [
        [
            f"SB3 TQC, rl-zoo settings, seed {sb3['seed']}",
            f"{sb3['env_steps']:,}",
            f"{sb3['env_steps_per_s']:.1f}",
            success_within(sb3["curve"], wall_s),
            best,
        ]
    ]
    for key, record in sorted(common.read_json(common.DOCS / "fetch.json").items()):
        inside = [p for p in record["curve"] if p["wall_s"] <= wall_s]
        if key.startswith("FetchPush-v4/") and inside:
            rows.append(
                [
                    f"herkit `{record['command'].split(' -m herkit ')[-1]}`",
                    f"{inside[-1]['env_steps']:,.0f} (last evaluation)",
                    f"{record['env_steps_per_s']:.0f}",
                    inside[-1]["success_rate"],
                    max(p["success_rate"] for p in inside),
                ]
            )
    minutes = f"{wall_s / 60:.0f} min"
    columns = ["run", f"env steps in {minutes}", "env steps/s", f"success at {minutes}"]
    return common.markdown([*columns, "best success so far"], "lrrrr", rows)


def run_tqc(options: argparse.Namespace) -> None:
    """The ``tqc`` subcommand: one SB3 run (unless ``--table``), then the table."""
    if not options.table:
        record = zoo_tqc(options.minutes, options.eval_every, options.seed)
        TQC_RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(tqc_table(common.read_json(TQC_RECORD)))
