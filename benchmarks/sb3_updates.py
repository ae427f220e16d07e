"""herkit against SB3: gradient updates per second on FetchPush-v4 shapes.

``python benchmarks/sb3_compare.py --only updates`` runs it (part ``updates``; needs
gymnasium-robotics, and sb3-contrib for TQC): 3x256 networks, batch 256, a HER buffer
(capacity 1e6, future k=4) holding the same 20,000 random-action FetchPush transitions:
SB3 ``model.train(gradient_steps=500)`` against 500 x (``buffer.sample(256)`` +
``agent.update(batch)``), torch on 1 and 2 threads, each row in a fresh
``sb3_compare.py --updates-run`` process (:func:`updates_run`). Here: the worker, the part
and the report's section 3a.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sb3_common import BATCH, ROOT, SCRIPT, busy_cell, quiet_measure, sb3_model

FILL = 20_000
"""Random-action FetchPush-v4 transitions both buffers hold."""
UPDATES = 500
"""Updates per timing."""
REPEATS = 3
"""Timings per row (in one process); the median is reported."""
WARMUP_UPDATES = 50
"""Untimed updates before the timings."""


def collect_push(path: Path, steps: int, seed: int = 0) -> None:
    """``steps`` FetchPush-v4 transitions with uniformly random actions, to an .npz."""
    from herkit.envs import make_goal_env

    env = make_goal_env("FetchPush-v4")
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    data: dict[str, list[Any]] = {}
    for _ in range(steps):
        action = env.action_space.sample()
        next_obs, _, terminated, truncated, info = env.step(action)
        record = {
            **{f"obs.{key}": value for key, value in obs.items()},
            **{f"next_obs.{key}": value for key, value in next_obs.items()},
            "action": action,
            "terminated": terminated,
            "truncated": truncated,
            "is_success": info["is_success"],
        }
        for key, value in record.items():
            data.setdefault(key, []).append(value)
        obs = next_obs if not (terminated or truncated) else env.reset()[0]
    np.savez(path, **{key: np.asarray(value) for key, value in data.items()})


def updates_run(
    lib: str,
    algo: str,
    threads: int,
    data_path: Path,
    buffer_size: int,
    updates: int = UPDATES,
    repeats: int = REPEATS,
) -> dict:
    """Fill a HER buffer with the saved transitions, then time ``updates`` updates
    ``repeats`` times."""
    import torch

    from herkit.envs import make_goal_env

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    data = dict(np.load(data_path))
    n = len(data["action"])
    keys = ("observation", "achieved_goal", "desired_goal")
    env = make_goal_env("FetchPush-v4")
    rates = []
    if lib == "sb3":
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.vec_env import DummyVecEnv

        venv = DummyVecEnv([lambda: env])
        model = sb3_model(algo, venv, seed=0, buffer_size=buffer_size)
        model.set_logger(Logger(folder=None, output_formats=[]))
        buffer = model.replay_buffer
        for i in range(n):
            obs = {key: data[f"obs.{key}"][i][None] for key in keys}
            next_obs = {key: data[f"next_obs.{key}"][i][None] for key in keys}
            terminated, truncated = bool(data["terminated"][i]), bool(data["truncated"][i])
            info = {"is_success": data["is_success"][i]}
            info["TimeLimit.truncated"] = truncated and not terminated
            buffer.add(
                obs,
                next_obs,
                data["action"][i][None],
                env.unwrapped.compute_reward(
                    next_obs["achieved_goal"], next_obs["desired_goal"], None
                ),
                np.array([terminated or truncated]),
                [info],
            )
        model.train(gradient_steps=WARMUP_UPDATES, batch_size=BATCH)
        for _ in range(repeats):
            started = time.perf_counter()
            model.train(gradient_steps=updates, batch_size=BATCH)
            rates.append(updates / (time.perf_counter() - started))
    else:
        from herkit import HerReplayBuffer
        from herkit.agents import make_agent

        agent = make_agent(
            algo,
            None,
            observation_dim=env.observation_space["observation"].shape[0],
            goal_dim=env.observation_space["desired_goal"].shape[0],
            action_space=env.action_space,
            reward_range=(-1.0, 0.0),
            seed=0,
        )
        buffer = HerReplayBuffer.from_env(env, capacity=buffer_size, strategy="future", k=4, seed=0)
        for i in range(n):
            obs = {key: data[f"obs.{key}"][i] for key in keys}
            next_obs = {key: data[f"next_obs.{key}"][i] for key in keys}
            buffer.add(
                obs,
                data["action"][i],
                next_obs,
                data["terminated"][i],
                data["truncated"][i],
                {"is_success": data["is_success"][i]},
            )
            agent.update_normalizer(obs["observation"][None], obs["desired_goal"][None])
        for _ in range(WARMUP_UPDATES):
            agent.update(buffer.sample(BATCH))
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(updates):
                agent.update(buffer.sample(BATCH))
            rates.append(updates / (time.perf_counter() - started))
    return {
        "lib": lib,
        "algo": algo,
        "threads": threads,
        "buffer_size": buffer_size,
        "transitions": n,
        "updates_per_s": [round(rate, 1) for rate in rates],
        "median_updates_per_s": round(statistics.median(rates), 1),
    }


UPDATE_CONFIGS: list[tuple[str, str, int | None]] = [
    ("herkit", "sac", 1_000_000),
    ("sb3", "sac", 1_000_000),
    ("herkit", "ddpg", 1_000_000),
    ("sb3", "ddpg", 1_000_000),
    ("sb3", "tqc", 1_000_000),
    ("sb3", "sac", None),  # SB3 with no empty capacity: its sampler scans the whole buffer
]
"""Rows of the part: (library, algorithm, buffer capacity; None: exactly the number of
stored transitions)."""


def part_updates(
    out_root: Path, quiet: str, fill: int = FILL, updates: int = UPDATES, repeats: int = REPEATS
) -> dict[str, Any]:
    """Collect ``fill`` random FetchPush-v4 transitions once (to ``out_root``), then time
    every :data:`UPDATE_CONFIGS` row at 1 and 2 torch threads, each in a fresh
    ``sb3_compare.py --updates-run`` process on a quiet machine; the part's record."""
    out_root.mkdir(parents=True, exist_ok=True)
    data_path = out_root / "fetchpush_random.npz"
    if not data_path.exists():
        print(f"  collecting {fill} random FetchPush-v4 transitions", flush=True)
        collect_push(data_path, fill)
    try:
        import sb3_contrib  # noqa: F401

        configs = UPDATE_CONFIGS
    except ImportError:
        configs = [c for c in UPDATE_CONFIGS if c[1] != "tqc"]
    rows = []
    for threads in (1, 2):
        for lib, algo, capacity in configs:
            buffer_size = fill if capacity is None else capacity
            command = [
                sys.executable,
                SCRIPT,
                "--updates-run",
                lib,
                "--algo",
                algo,
                "--threads",
                str(threads),
                "--buffer-size",
                str(buffer_size),
                "--data",
                str(data_path),
                "--updates",
                str(updates),
                "--repeats",
                str(repeats),
            ]
            print(f"  {lib} {algo} threads={threads} buffer={buffer_size}", flush=True)

            def measure(command: list[str] = command) -> dict[str, Any]:
                output = subprocess.run(
                    command, check=True, cwd=ROOT, capture_output=True, text=True
                )
                return json.loads(output.stdout.strip().splitlines()[-1])

            row = quiet_measure(measure, quiet)
            row["command"] = " ".join(["python", *command[1:]])
            print(f"    {row['updates_per_s']} updates/s", flush=True)
            rows.append(row)
    return {
        "transitions": fill,
        "batch": BATCH,
        "updates": updates,
        "repeats": repeats,
        "warmup_updates": WARMUP_UPDATES,
        "rows": rows,
    }


def updates_table(part: dict[str, Any]) -> list[str]:
    """The table of every row: updates/s of each repeat, median, CPU busy."""
    lines = [
        "| library | algorithm | buffer capacity | torch threads | updates/s "
        f"({part['repeats']} x {part['updates']}) | median updates/s "
        "| CPU busy before / after |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for row in part["rows"]:
        rates = ", ".join(f"{r:,.0f}" for r in row["updates_per_s"])
        lines.append(
            f"| {row['lib']} | {row['algo'].upper()} | {row['buffer_size']:,} | "
            f"{row['threads']} | {rates} | {row['median_updates_per_s']:,.0f} | "
            f"{busy_cell(row)} |"
        )
    return lines


def update_ratios(part: dict[str, Any]) -> list[dict[str, Any]]:
    """herkit / SB3 median updates/s for each pair compared, at 1 and 2 threads."""
    rows = {(r["lib"], r["algo"], r["threads"], r["buffer_size"]): r for r in part["rows"]}
    ratios = []
    for threads in (1, 2):
        for h_algo, s_algo, s_buffer in (
            ("sac", "sac", 1_000_000),
            ("sac", "sac", part["transitions"]),
            ("ddpg", "ddpg", 1_000_000),
            ("sac", "tqc", 1_000_000),
        ):
            h = rows.get(("herkit", h_algo, threads, 1_000_000))
            s = rows.get(("sb3", s_algo, threads, s_buffer))
            if h and s:
                ratios.append(
                    {
                        "threads": threads,
                        "herkit": h_algo,
                        "sb3": f"{s_algo.upper()} (buffer {s_buffer:,})",
                        "herkit_ups": h["median_updates_per_s"],
                        "sb3_ups": s["median_updates_per_s"],
                        "ratio": h["median_updates_per_s"] / s["median_updates_per_s"],
                    }
                )
    return ratios


def section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 3a of docs/sb3.md, and its line of the summary of speed-ups."""
    lines: list[str] = []
    verdicts: list[str] = []
    ratios = update_ratios(part)
    lines += [
        "## 3a. Gradient updates per second, FetchPush-v4 shapes",
        "",
        f"Both buffers hold the same {part['transitions']:,} FetchPush-v4 transitions "
        f"(uniformly random actions, seed 0, {part['transitions'] // 50} episodes of 50 "
        "steps), HER future k=4. "
        f"Each timing is {part['updates']} updates with batch {part['batch']} after "
        f"{part['warmup_updates']} untimed ones, repeated {part['repeats']} times in one "
        "fresh process per row. SB3: "
        f"`model.train(gradient_steps={part['updates']}, batch_size={part['batch']})` "
        f"(sampling from its `HerReplayBuffer` included); herkit: {part['updates']} x "
        f"`agent.update(buffer.sample({part['batch']}))` with "
        "`make_agent(algo, None, ...)` (default "
        "configs: 3x256, Adam 1e-3, polyak 0.95) and `HerReplayBuffer.from_env(env, "
        "capacity, strategy='future', k=4)`. SB3 models: 3x256 (`net_arch=[256]*3`), "
        "lr 1e-3, gamma 0.98, tau 0.05, SAC/TQC `ent_coef='auto_0.1'`, TQC with its "
        "defaults (25 quantiles, 2 critics, 2 dropped per net), no VecNormalize.",
        "",
        *updates_table(part),
        "",
        "| torch threads | herkit | SB3 | herkit updates/s | SB3 updates/s | herkit / SB3 |",
        "|---:|---|---|---:|---:|---:|",
        *[
            f"| {r['threads']} | {r['herkit'].upper()} | {r['sb3']} | "
            f"{r['herkit_ups']:,.0f} | {r['sb3_ups']:,.0f} | {r['ratio']:.2f} |"
            for r in ratios
        ],
        "",
        "Command of one row: `"
        + part["rows"][0]["command"]
        + "` (the transitions are collected once by the `updates` part).",
        "",
    ]
    same = [r for r in ratios if r["herkit"].upper() == r["sb3"].split()[0]]
    verdicts.append(
        "- Updates per second with the same network and batch (same algorithm, 1 and 2 "
        "threads, both SB3 buffer sizes), herkit / SB3: "
        + ", ".join(
            f"{r['herkit'].upper()} {r['threads']}t vs SB3 {r['sb3']}: {r['ratio']:.2f}x"
            for r in same
        )
        + "."
    )
    return lines, verdicts
