"""herkit against SB3 in updates per second: the same network, batch and HER buffer.

The ``updates`` part of docs/sb3.md: both libraries' buffers hold the same random FetchPush-v4
transitions, and each row times its updates in a fresh process (the hidden ``--updates-run``
worker) on a quiet machine, at 1 and 2 torch threads. Its section of docs/sb3.md is made here.

    python benchmarks/sb3_compare.py --only updates
"""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import common
import numpy as np
from sb3_common import BATCH, SCRIPT, busy_cell, quiet_measure, sb3_model

FILL = 20_000
"""Random-action FetchPush-v4 transitions both buffers hold."""
UPDATES = 500
REPEATS = 3
WARMUP_UPDATES = 50
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
KEYS = ("observation", "achieved_goal", "desired_goal")


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
    lib: str, algo: str, threads: int, data_path: Path, buffer_size: int, updates: int, repeats: int
) -> dict[str, Any]:
    """The ``--updates-run`` worker: a HER buffer of the saved transitions, ``updates``
    updates timed ``repeats`` times."""
    import torch

    from herkit.bench import time_updates
    from herkit.envs import make_goal_env

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    data = dict(np.load(data_path))
    n = len(data["action"])
    env = make_goal_env("FetchPush-v4")
    if lib == "sb3":
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.vec_env import DummyVecEnv

        model = sb3_model(algo, DummyVecEnv([lambda: env]), seed=0, size=buffer_size)
        model.set_logger(Logger(folder=None, output_formats=[]))
        for i in range(n):
            obs = {key: data[f"obs.{key}"][i][None] for key in KEYS}
            next_obs = {key: data[f"next_obs.{key}"][i][None] for key in KEYS}
            terminated, truncated = bool(data["terminated"][i]), bool(data["truncated"][i])
            info = {"is_success": data["is_success"][i]}
            info["TimeLimit.truncated"] = truncated and not terminated
            reward = env.unwrapped.compute_reward(
                next_obs["achieved_goal"], next_obs["desired_goal"], None
            )
            done = np.array([terminated or truncated])
            model.replay_buffer.add(obs, next_obs, data["action"][i][None], reward, done, [info])
        model.train(gradient_steps=WARMUP_UPDATES, batch_size=BATCH)
        step = functools.partial(model.train, gradient_steps=updates, batch_size=BATCH)
        timed = time_updates(step, count=1, repeats=repeats, updates_per_call=updates)
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
            obs = {key: data[f"obs.{key}"][i] for key in KEYS}
            next_obs = {key: data[f"next_obs.{key}"][i] for key in KEYS}
            info = {"is_success": data["is_success"][i]}
            terminated, truncated = data["terminated"][i], data["truncated"][i]
            buffer.add(obs, data["action"][i], next_obs, terminated, truncated, info)
            agent.update_normalizer(obs["observation"][None], obs["desired_goal"][None])
        timed = time_updates(
            lambda: agent.update(buffer.sample(BATCH)),
            count=updates,
            warmup=WARMUP_UPDATES,
            repeats=repeats,
        )
    return {
        "lib": lib,
        "algo": algo,
        "threads": threads,
        "buffer_size": buffer_size,
        "transitions": n,
        "updates_per_s": [round(rate, 1) for rate in timed.rates],
        "median_updates_per_s": round(timed.updates_per_s, 1),
    }


def part_updates(out_root: Path, quiet: str) -> dict[str, Any]:
    """Every :data:`UPDATE_CONFIGS` row at 1 and 2 threads, each an ``--updates-run``
    process on a quiet machine, on :data:`FILL` transitions collected once; its record."""
    out_root.mkdir(parents=True, exist_ok=True)
    data_path = out_root / "fetchpush_random.npz"
    if not data_path.exists():
        print(f"  collecting {FILL} random FetchPush-v4 transitions", flush=True)
        collect_push(data_path, FILL)
    has_tqc = importlib.util.find_spec("sb3_contrib") is not None
    rows = []
    for threads in (1, 2):
        for lib, algo, capacity in UPDATE_CONFIGS:
            if algo == "tqc" and not has_tqc:
                continue
            buffer_size = FILL if capacity is None else capacity
            command = (
                f"python {SCRIPT} --updates-run {lib} --algo {algo} --threads {threads} "
                f"--buffer-size {buffer_size} --data {data_path} --updates {UPDATES} "
                f"--repeats {REPEATS}"
            )
            print(f"  {lib} {algo} threads={threads} buffer={buffer_size}", flush=True)

            def measure(command: str = command) -> dict[str, Any]:
                argv = [sys.executable, *command.split()[1:]]
                done = subprocess.run(
                    argv, check=True, cwd=common.ROOT, capture_output=True, text=True
                )
                return json.loads(done.stdout.strip().splitlines()[-1])

            row = quiet_measure(measure, quiet) | {"command": command}
            print(f"    {row['updates_per_s']} updates/s", flush=True)
            rows.append(row)
    return {
        "transitions": FILL,
        "batch": BATCH,
        "updates": UPDATES,
        "repeats": REPEATS,
        "warmup_updates": WARMUP_UPDATES,
        "rows": rows,
    }


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


def updates_section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 3a of docs/sb3.md (updates per second), and its line of the summary."""
    ratios = update_ratios(part)
    columns = ["library", "algorithm", "buffer capacity", "torch threads"]
    columns += [f"updates/s ({part['repeats']} x {part['updates']})", "median updates/s"]
    timings = [
        [
            row["lib"],
            row["algo"].upper(),
            f"{row['buffer_size']:,}",
            row["threads"],
            ", ".join(f"{r:,.0f}" for r in row["updates_per_s"]),
            f"{row['median_updates_per_s']:,.0f}",
            busy_cell(row),
        ]
        for row in part["rows"]
    ]
    compared = [
        [
            r["threads"],
            r["herkit"].upper(),
            r["sb3"],
            f"{r['herkit_ups']:,.0f}",
            f"{r['sb3_ups']:,.0f}",
            f"{r['ratio']:.2f}",
        ]
        for r in ratios
    ]
    pairs = ["torch threads", "herkit", "SB3", "herkit updates/s", "SB3 updates/s", "herkit / SB3"]
    lines = [
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
        common.markdown([*columns, "CPU busy before / after"], "llrrlrr", timings),
        "",
        common.markdown(pairs, "rllrrr", compared),
        "",
        "Command of one row: `"
        + part["rows"][0]["command"]
        + "` (the transitions are collected once by the `updates` part).",
    ]
    same = [r for r in ratios if r["herkit"].upper() == r["sb3"].split()[0]]
    verdict = (
        "- Updates per second with the same network and batch (same algorithm, 1 and 2 "
        "threads, both SB3 buffer sizes), herkit / SB3: "
        + ", ".join(
            f"{r['herkit'].upper()} {r['threads']}t vs SB3 {r['sb3']}: {r['ratio']:.2f}x"
            for r in same
        )
        + "."
    )
    return lines, [verdict]
