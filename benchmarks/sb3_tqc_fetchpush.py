"""Stable-Baselines3 TQC with rl-zoo's FetchPush settings against herkit, at equal wall time.

    python benchmarks/sb3_tqc_fetchpush.py --minutes 20     # one SB3 run, then the table
    python benchmarks/sb3_tqc_fetchpush.py --table          # the table from the records

rl-baselines3-zoo's ``hyperparams/tqc.yml`` for FetchPush: TQC (sb3-contrib) with
``HerReplayBuffer`` (future, k=4), 3 x 512 networks, 2 critics, batch 2048, gamma 0.95,
learning rate 1e-3, tau 0.05, one gradient step per env step, SB3's default 100 random steps
first; the zoo's older ``TimeFeatureWrapper`` is left out, as the zoo's current file does. The
run stops after ``--minutes`` of wall time (its evaluations included, as in herkit's
``wall_s``); every ``--eval-every`` env steps its deterministic policy plays 20 episodes on a
separate env. Torch keeps its default threads (both cores).

Writes docs/sb3_tqc.json (the SB3 curve, the machine) and prints, for every FetchPush-v4 record
of docs/fetch.json (``benchmarks/fetch.py``), herkit's success at the last evaluation within
the same wall time, beside SB3's.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from common import DOCS, code_version, machine, sb3_success_rate

RESULTS = DOCS / "sb3_tqc.json"
FETCH = DOCS / "fetch.json"
TASK = "FetchPush-v4"


def zoo_tqc(env: Any, seed: int) -> Any:
    """TQC with rl-zoo's FetchPush hyperparameters."""
    from sb3_contrib import TQC
    from stable_baselines3 import HerReplayBuffer

    return TQC(
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


def run_sb3(minutes: float, eval_every: int, seed: int) -> dict[str, Any]:
    """Train until ``minutes`` of wall time have passed; the curve of evaluations."""
    import gymnasium as gym
    import gymnasium_robotics
    from stable_baselines3.common.callbacks import BaseCallback

    gym.register_envs(gymnasium_robotics)
    env, eval_env = gym.make(TASK), gym.make(TASK)
    model = zoo_tqc(env, seed)
    curve: list[dict[str, float]] = []
    started = time.perf_counter()

    class Clock(BaseCallback):
        """Evaluates every ``eval_every`` env steps; stops the run at the time limit."""

        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every == 0:
                success = sb3_success_rate(model, eval_env, 20, seed=10_000 + len(curve))
                curve.append(
                    dict(
                        env_steps=float(self.num_timesteps),
                        wall_s=time.perf_counter() - started,
                        success_rate=success,
                    )
                )
                print(json.dumps(curve[-1]), flush=True)
            return time.perf_counter() - started < minutes * 60

    model.learn(total_timesteps=10_000_000, callback=Clock())
    wall_s = time.perf_counter() - started
    return {
        "command": f"python benchmarks/sb3_tqc_fetchpush.py --minutes {minutes:g} "
        f"--eval-every {eval_every} --seed {seed}",
        "seed": seed,
        "minutes": minutes,
        "env_steps": int(model.num_timesteps),
        "wall_s": round(wall_s, 1),
        "env_steps_per_s": round(model.num_timesteps / wall_s, 2),
        "curve": curve,
        "machine": machine(),
        "code": code_version(),
    }


def success_within(curve: list[dict[str, float]], wall_s: float) -> float | None:
    """Success at the last evaluation that ended within ``wall_s``, or None."""
    inside = [point["success_rate"] for point in curve if point["wall_s"] <= wall_s]
    return inside[-1] if inside else None


def table(sb3: dict[str, Any]) -> list[str]:
    """SB3's run beside every herkit FetchPush-v4 record, at SB3's wall time."""
    wall_s = sb3["wall_s"]
    lines = [
        f"| run | env steps in {wall_s / 60:.0f} min | env steps/s | success at "
        f"{wall_s / 60:.0f} min | best success so far |",
        "|---|---:|---:|---:|---:|",
    ]
    best = max((p["success_rate"] for p in sb3["curve"]), default=float("nan"))
    lines.append(
        f"| SB3 TQC, rl-zoo settings, seed {sb3['seed']} | {sb3['env_steps']:,} | "
        f"{sb3['env_steps_per_s']:.1f} | {success_within(sb3['curve'], wall_s)} | {best} |"
    )
    records = json.loads(FETCH.read_text()) if FETCH.exists() else {}
    for key, record in sorted(records.items()):
        if not key.startswith(f"{TASK}/"):
            continue
        inside = [p for p in record["curve"] if p["wall_s"] <= wall_s]
        if not inside:
            continue
        lines.append(
            f"| herkit `{record['command'].split(' -m herkit ')[-1]}` | "
            f"{inside[-1]['env_steps']:,.0f} (last evaluation) | "
            f"{record['env_steps_per_s']:.0f} | {inside[-1]['success_rate']} | "
            f"{max(p['success_rate'] for p in inside)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=20.0, help="wall time of the SB3 run")
    parser.add_argument("--eval-every", type=int, default=250, help="env steps between evals")
    parser.add_argument("--seed", type=int, default=0, help="training seed")
    parser.add_argument("--table", action="store_true", help="only print the table")
    options = parser.parse_args()
    if not options.table:
        RESULTS.write_text(
            json.dumps(run_sb3(options.minutes, options.eval_every, options.seed), indent=1) + "\n"
        )
    print("\n".join(table(json.loads(RESULTS.read_text()))))


if __name__ == "__main__":
    main()
