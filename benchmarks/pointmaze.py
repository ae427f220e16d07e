"""PointMaze_UMaze-v3 (gymnasium-robotics) with SAC+HER: herkit's preset beside SB3's SAC.

PointMaze scores as no herkit env does: reward 1 on success, 0 otherwise, success in
``info["success"]``, and with ``continuing_task=False`` the episode ends on success. herkit
runs as ``herkit train PointMaze_UMaze-v3`` launches it (its preset); SB3 runs SAC with its
HerReplayBuffer and the same settings (3 x 256 networks, Adam 1e-3, gamma 0.98, tau 0.05,
batch 256, future k=4, one update per env step after 1,000 steps, entropy coefficient
learned from 0.1) on the same env
(``continuing_task=False``, 100-step episodes). Both evaluate every 2,000 env steps on 20
episodes of the deterministic policy, success read from ``info["success"]`` at the end of
the episode, and both count the evaluations in their wall time. The runs go one after the
other, each on one thread, so neither slows the other.

    python benchmarks/pointmaze.py                 # seed 0, 50,000 env steps, both libraries
    python benchmarks/pointmaze.py --seeds 0 1 2 --only herkit
    python benchmarks/pointmaze.py --only herkit --algo td3

Writes docs/pointmaze.json (merged by library and seed) and docs/figures/pointmaze.png.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, FIGURES, add_run, code_version, machine, sb3_success_rate

ENV_ID = "PointMaze_UMaze-v3"
ENV_KWARGS = {"continuing_task": False, "max_episode_steps": 100}
EVAL_EVERY = 2_000
EVAL_EPISODES = 20
RECORD = DOCS / "pointmaze.json"


def herkit_run(seed: int, steps: int, out: Path, algo: str) -> list[dict[str, float]]:
    """``herkit train PointMaze_UMaze-v3`` (its preset) for ``steps``; its progress rows."""
    command = [
        sys.executable,
        "-m",
        "herkit",
        "train",
        ENV_ID,
        "--algo",
        algo,
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
    ]
    subprocess.run(command, check=True)
    with open(out / "progress.csv", newline="") as file:
        return [
            {key: float(row[key]) for key in ("env_steps", "wall_s", "success_rate")}
            for row in csv.DictReader(file)
        ]


def sb3_run(seed: int, steps: int) -> list[dict[str, float]]:
    """SB3 SAC + HerReplayBuffer with herkit's settings; evaluated like herkit."""
    import gymnasium as gym
    import gymnasium_robotics
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    gym.register_envs(gymnasium_robotics)
    env = gym.make(ENV_ID, **ENV_KWARGS)
    eval_env = gym.make(ENV_ID, **ENV_KWARGS)
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

    def evaluate(eval_seed: int) -> float:
        return sb3_success_rate(model, eval_env, EVAL_EPISODES, eval_seed, key="success")

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % EVAL_EVERY == 0:
                success = evaluate(seed + 10_000 + self.num_timesteps)
                wall = time.perf_counter() - started
                rows.append(
                    {"env_steps": self.num_timesteps, "wall_s": wall, "success_rate": success}
                )
            return True

    model.learn(total_timesteps=steps, callback=Evaluate())
    return rows


def first_reaching(rows: list[dict[str, float]], level: float) -> dict[str, float] | None:
    """The first evaluation at or above ``level``."""
    return next((row for row in rows if row["success_rate"] >= level), None)


def plot(records: dict[str, Any], path: Path) -> None:
    """Success against env steps and against wall time, one line per library and seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"herkit": "tab:blue", "sb3": "tab:orange"}
    colors["herkit-td3"] = "tab:green"
    for _, record in sorted(records.items()):
        algo = record.get("algo", "sac")
        library = record["library"] if algo == "sac" else f"{record['library']}-{algo}"
        rows = record["rows"]
        name = "herkit" if record["library"] == "herkit" else "SB3"
        label = f"{name} {algo.upper()}+HER, seed {record['seed']}"
        for ax, x in zip(axes, ("env_steps", "wall_s"), strict=True):
            xs = [row[x] / (60 if x == "wall_s" else 1) for row in rows]
            ax.plot(
                xs,
                [row["success_rate"] for row in rows],
                marker=".",
                label=label,
                color=colors[library],
                alpha=1.0 if record["seed"] == 0 else 0.5,
            )
    axes[0].set(xlabel="env steps", ylabel="success rate (20 episodes)", ylim=(-0.02, 1.02))
    axes[1].set(xlabel="wall time (min)", ylim=(-0.02, 1.02))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.axhline(0.9, color="gray", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{ENV_ID} (continuing_task=False, 100-step episodes), one thread each")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--only", choices=("herkit", "sb3"), default=None)
    parser.add_argument("--algo", choices=("sac", "td3"), default="sac", help="herkit's")
    args = parser.parse_args()
    libraries = [args.only] if args.only else ["herkit", "sb3"]
    for seed in args.seeds:
        for library in libraries:
            print(f"{library} seed {seed}: {args.steps} env steps", flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                run_started = time.perf_counter()
                if library == "herkit":
                    rows = herkit_run(seed, args.steps, Path(tmp) / "run", args.algo)
                else:
                    rows = sb3_run(seed, args.steps)
                total = time.perf_counter() - run_started
            reached = first_reaching(rows, 0.9)
            algo = args.algo if library == "herkit" else "sac"
            key = f"{library}/seed{seed}" if algo == "sac" else f"{library}-{algo}/seed{seed}"
            run = {
                "library": library,
                "algo": algo,
                "seed": seed,
                "steps": args.steps,
                "rows": rows,
                "process_wall_s": round(total, 1),
                "first_0.9": reached,
                "final_success": rows[-1]["success_rate"],
                "code": code_version(),
            }
            records = add_run(RECORD, key, run, machine())
            print(
                f"  first >= 0.9: {reached}; final {rows[-1]['success_rate']:.2f}; {total:.0f} s",
                flush=True,
            )
            plot(records, FIGURES / "pointmaze.png")


if __name__ == "__main__":
    main()
