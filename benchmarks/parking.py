"""highway-env's parking-v0 with SAC+HER: herkit's defaults beside SB3's SAC + HerReplayBuffer.

parking-v0 is a Gymnasium GoalEnv (highway-env 1.12): a car steers and accelerates into a
parking spot; the reward is ``compute_reward`` (minus the square root of a weighted L1
distance to the goal pose), plus -5 on the step of a collision, success is
``info["is_success"]``, and an episode ends on a crash or on success, else after 500 steps
(100 s at 5 Hz). herkit has no preset for it, so ``herkit train highway_env:parking-v0
--algo sac`` runs its generic SAC defaults (src/herkit/config/agents.py); SB3 runs SAC with its
HerReplayBuffer and the same settings (3 x 256 networks, Adam 1e-3 for the actor, the
critics and the entropy coefficient, gamma 0.98, tau 0.05, batch 256, buffer 1,000,000,
future k=4, one update per env step after 1,000 steps, entropy coefficient learned from 0.1
towards -action_dim) on the same env. Two differences remain that the settings do not
remove: SB3 acts uniformly at random for its first 1,000 steps (learning_starts), herkit
uses its untrained policy from the start (random_steps 0); and SB3's HerReplayBuffer keeps
the env's reward (collision penalty included) for real transitions but gives relabelled ones
bare ``compute_reward`` (no penalty, ``done`` as stored), where herkit's buffer decides for
itself (src/herkit/buffer/; the record notes the commit and whether src/ differed). Both
evaluate every 2,000 env steps on 10 episodes of the deterministic policy, success read from
``info["is_success"]`` at the end of the episode, and both count the evaluations in their
wall time. The runs go one after the other, each on one thread, so neither slows the other.

    python benchmarks/parking.py                        # seed 0, 30,000 env steps, both
    python benchmarks/parking.py --seeds 0 1 2          # 3 seeds, both libraries
    python benchmarks/parking.py --seeds 0 1 2 --only sb3

Writes docs/parking.json (merged by library and seed) and docs/figures/parking.png.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, FIGURES, add_run, code_version, machine, sb3_success_rate

ENV_ID = "parking-v0"
HERKIT_ENV_ID = f"highway_env:{ENV_ID}"
EVAL_EVERY = 2_000
EVAL_EPISODES = 10
RECORD = DOCS / "parking.json"


def herkit_run(seed: int, steps: int, out: Path) -> list[dict[str, float]]:
    """``herkit train highway_env:parking-v0 --algo sac`` for ``steps``; its progress rows."""
    command = [
        sys.executable,
        "-m",
        "herkit",
        "train",
        HERKIT_ENV_ID,
        "--algo",
        "sac",
        "--seed",
        str(seed),
        "--steps",
        str(steps),
        "--out",
        str(out),
        "--no-progress",
        "--no-tensorboard",
        "--torch-threads",
        "1",
        "--eval-every",
        str(EVAL_EVERY),
        "--eval-episodes",
        str(EVAL_EPISODES),
    ]
    subprocess.run(command, check=True)
    with open(out / "progress.csv", newline="") as file:
        return [
            {key: float(row[key]) for key in ("env_steps", "wall_s", "eval_s", "success_rate")}
            for row in csv.DictReader(file)
        ]


def sb3_run(seed: int, steps: int) -> list[dict[str, float]]:
    """SB3 SAC + HerReplayBuffer with herkit's settings; evaluated like herkit."""
    import gymnasium as gym
    import highway_env  # noqa: F401 (registers parking-v0)
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    env = gym.make(ENV_ID)
    eval_env = gym.make(ENV_ID)
    model = SAC(
        "MultiInputPolicy",
        env,
        learning_rate=1e-3,
        gamma=0.98,
        tau=0.05,
        batch_size=256,
        buffer_size=1_000_000,
        learning_starts=1_000,
        train_freq=1,
        gradient_steps=1,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        policy_kwargs={"net_arch": [256, 256, 256]},
        ent_coef="auto_0.1",
        seed=seed,
        device="cpu",
        verbose=0,
    )
    rows: list[dict[str, float]] = []
    started = time.perf_counter()
    eval_s = 0.0

    def evaluate(eval_seed: int) -> float:
        return sb3_success_rate(model, eval_env, EVAL_EPISODES, eval_seed, key="is_success")

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            nonlocal eval_s
            if self.num_timesteps % EVAL_EVERY == 0:
                eval_started = time.perf_counter()
                success = evaluate(seed + 10_000 + self.num_timesteps)
                eval_s += time.perf_counter() - eval_started
                wall = time.perf_counter() - started
                rows.append(
                    {
                        "env_steps": self.num_timesteps,
                        "wall_s": wall,
                        "eval_s": eval_s,
                        "success_rate": success,
                    }
                )
            return True

    model.learn(total_timesteps=steps, callback=Evaluate())
    return rows


def first_reaching(rows: list[dict[str, float]], level: float) -> dict[str, float] | None:
    """The first evaluation at or above ``level``."""
    return next((row for row in rows if row["success_rate"] >= level), None)


def train_minutes(row: dict[str, float]) -> float:
    """Wall time of a row without its run's evaluations (whose length depends on how long the
    policy keeps driving, not on the library), in minutes; with them where not recorded."""
    return (row["wall_s"] - row.get("eval_s", 0.0)) / 60


def success_by_steps(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the evaluation at ``budget`` env steps (NaN if none)."""
    return next((row["success_rate"] for row in rows if row["env_steps"] == budget), np.nan)


def success_by_minutes(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the last evaluation done by ``budget`` minutes of training (0 before)."""
    done = [row["success_rate"] for row in rows if train_minutes(row) <= budget]
    return done[-1] if done else 0.0


def by_library(records: dict[str, Any]) -> dict[str, list[list[dict[str, float]]]]:
    """Each library's runs (their progress rows)."""
    libraries = sorted({record["library"] for record in records.values()})
    return {
        lib: [r["rows"] for _, r in sorted(records.items()) if r["library"] == lib]
        for lib in libraries
    }


def plot(records: dict[str, Any], path: Path) -> None:
    """Success against env steps and against training wall time: each seed thin, each
    library's mean over its seeds thick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"herkit": "tab:blue", "sb3": "tab:orange"}
    names = {"herkit": "herkit", "sb3": "SB3"}
    runs = by_library(records)
    for lib, lib_runs in runs.items():
        for rows in lib_runs:
            success = [row["success_rate"] for row in rows]
            style = {"color": colors[lib], "alpha": 0.3, "lw": 1}
            axes[0].plot([row["env_steps"] for row in rows], success, **style)
            axes[1].plot([train_minutes(row) for row in rows], success, **style)
        steps = sorted({row["env_steps"] for rows in lib_runs for row in rows})
        mean = [np.nanmean([success_by_steps(rows, b) for rows in lib_runs]) for b in steps]
        label = f"{names[lib]} SAC+HER, mean of {len(lib_runs)} seeds"
        axes[0].plot(steps, mean, color=colors[lib], lw=2.5, marker=".", label=label)
        minutes = np.arange(0.5, max(train_minutes(rows[-1]) for rows in lib_runs), 0.5)
        mean = [np.mean([success_by_minutes(rows, b) for rows in lib_runs]) for b in minutes]
        axes[1].plot(minutes, mean, color=colors[lib], lw=2.5, drawstyle="steps-post")
    axes[0].set(
        xlabel="env steps", ylabel=f"success rate ({EVAL_EPISODES} episodes)", ylim=(-0.02, 1.02)
    )
    axes[1].set(xlabel="training wall time, evaluations excluded (min)", ylim=(-0.02, 1.02))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.axhline(0.9, color="gray", lw=0.8, ls="--")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(
        f"highway-env {ENV_ID}: SAC+HER (3 x 256, lr 1e-3, batch 256, future k=4), one thread each"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def at_budgets(records: dict[str, Any]) -> str:
    """A markdown table: each library's success, mean over its seeds, at every evaluation's
    env steps and every 2 minutes of training wall time (the last evaluation done by then;
    0 before the first)."""
    runs = by_library(records)
    libraries = list(runs)
    every_run = [rows for lib in libraries for rows in runs[lib]]
    steps = sorted({row["env_steps"] for rows in every_run for row in rows})
    longest = max(train_minutes(rows[-1]) for rows in every_run)
    minutes = list(range(2, int(longest) + 1, 2))
    seeds = ", ".join(f"{lib} {len(runs[lib])}" for lib in libraries)
    lines = [f"| budget | {' | '.join(libraries)} |", "|---|" + "---:|" * len(libraries)]
    tables = (("env steps", steps, success_by_steps), ("min", minutes, success_by_minutes))
    for label, budgets, read in tables:
        for budget in budgets:
            means = [np.nanmean([read(rows, budget) for rows in runs[lib]]) for lib in libraries]
            name = f"{budget:,.0f} {label}"
            lines.append(f"| {name} | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    return f"seeds: {seeds}\n" + "\n".join(lines)


def machine_info() -> dict[str, Any]:
    """:func:`common.machine` with highway-env's version added."""
    info = machine()
    try:
        info["versions"]["highway-env"] = importlib.metadata.version("highway-env")
    except importlib.metadata.PackageNotFoundError:
        info["versions"]["highway-env"] = None
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--only", choices=("herkit", "sb3"), default=None)
    parser.add_argument("--table", action="store_true", help="print the budget table, run none")
    args = parser.parse_args()
    if args.table:
        print(at_budgets(json.loads(RECORD.read_text())["runs"]))
        return
    libraries = [args.only] if args.only else ["herkit", "sb3"]
    for seed in args.seeds:
        for library in libraries:
            print(f"{library} seed {seed}: {args.steps} env steps", flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                run_started = time.perf_counter()
                if library == "herkit":
                    rows = herkit_run(seed, args.steps, Path(tmp) / "run")
                else:
                    rows = sb3_run(seed, args.steps)
                total = time.perf_counter() - run_started
            reached = first_reaching(rows, 0.9)
            run = {
                "library": library,
                "algo": "sac",
                "seed": seed,
                "steps": args.steps,
                "rows": rows,
                "process_wall_s": round(total, 1),
                "first_0.9": reached,
                "final_success": rows[-1]["success_rate"],
                "code": code_version(),
            }
            records = add_run(RECORD, f"{library}/seed{seed}", run, machine_info())
            print(
                f"  first >= 0.9: {reached}; final {rows[-1]['success_rate']:.2f}; {total:.0f} s",
                flush=True,
            )
            plot(records, FIGURES / "parking.png")


if __name__ == "__main__":
    main()
