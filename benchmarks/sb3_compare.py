"""herkit against stable-baselines3 (SB3), side by side, same machine, same settings.

    python benchmarks/sb3_compare.py                          # everything (about an hour)
    python benchmarks/sb3_compare.py --only bitflip --seeds 0 1 2
    python benchmarks/sb3_compare.py --only fetchreach --seeds 0
    python benchmarks/sb3_compare.py --only updates
    python benchmarks/sb3_compare.py --only fetchpush-speed
    python benchmarks/sb3_compare.py --report-only            # docs from docs/sb3.json
    python benchmarks/sb3_compare.py --smoke --out /tmp/x     # tiny budgets: a test, no result

Needs stable-baselines3 (``bash install.sh bench``) and, for the Fetch parts,
gymnasium-robotics (``bash install.sh robotics``); sb3-contrib adds TQC to ``updates``.

Parts (``--only``):

- ``bitflip``: ``herkit/BitFlip-v0`` (15 bits, random start and goal every episode).
  ``herkit train`` (DQN+HER preset) against SB3 ``DQN`` + ``HerReplayBuffer`` with the
  same network, batch, learning rate, discount, HER strategy and update schedule.
- ``fetchreach``: ``FetchReach-v4``. SB3 ``SAC`` and ``DDPG`` + ``HerReplayBuffer``
  against ``herkit train --algo sac`` and herkit's default (DDPG) preset: 2 envs, 0.5
  updates per env step on both sides.
- ``updates``: gradient updates per second on FetchPush-v4 shapes, 3x256 networks,
  batch 256, a HER buffer (capacity 1e6, future k=4) holding the same 20,000
  random-action FetchPush transitions: SB3 ``model.train(gradient_steps=500)`` against
  500 x (``buffer.sample(256)`` + ``agent.update(batch)``), torch on 1 and 2 threads.
- ``fetchpush-speed``: a short FetchPush-v4 training run (20,000 env steps, seed = the
  first of ``--seeds``) of herkit SAC and DDPG and SB3 SAC and DDPG, for env steps/s.

Every training run is a fresh process: herkit through its CLI, SB3 through this
script's ``--sb3-run`` worker, which writes the same ``progress.csv`` / ``summary.json``
columns. Both evaluate the same way: every ``eval_every`` env steps, 10 episodes of the
deterministic policy on one separate env, success = ``info["is_success"]`` at the end of
the episode; wall time counts from the start of the training loop and includes the
evaluations. Runs go to the full budget (no early stop), and the first evaluation with
success >= 0.9 gives "env steps / wall s to 0.9".

Before every timed measurement the script waits (polling once a minute) while a process
matching ``--quiet-pattern`` runs (default ``benchmarks/bitflip.py``; '' disables it) or
more than 10 % of the machine's CPU time is busy; a measurement after which the machine is
busy again is done again. Results: ``docs/sb3.json`` (parts not rerun are kept),
``docs/sb3.md`` and ``docs/figures/sb3_bitflip.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "sb3.json"
REPORT = DOCS / "sb3.md"
FIGURE = DOCS / "figures" / "sb3_bitflip.png"
PARTS = ("bitflip", "fetchreach", "updates", "fetchpush-speed")
SCRIPT = "benchmarks/sb3_compare.py"

# task -> env, budget, evaluation interval and the algorithms run on each side
TASKS: dict[str, dict[str, Any]] = {
    "bitflip": {
        "env_id": "herkit/BitFlip-v0",
        "steps": 20_000,
        "eval_every": 1_000,
        "herkit": ("dqn",),
        "sb3": ("dqn",),
    },
    "fetchreach": {
        "env_id": "FetchReach-v4",
        "steps": 10_000,
        "eval_every": 500,
        "herkit": ("sac", "ddpg"),
        "sb3": ("sac", "ddpg"),
    },
    "fetchpush": {
        "env_id": "FetchPush-v4",
        "steps": 20_000,
        "eval_every": 20_000,
        "herkit": ("sac", "ddpg"),
        "sb3": ("sac", "ddpg"),
    },
}
EVAL_EPISODES = 10
MAX_BUSY = 0.1  # the machine counts as quiet below this share of busy CPU time
TARGET = 0.9
FETCH_N_ENVS = 2  # herkit's FetchReach preset (and FetchPush's before): 2 envs, 0.5 updates
FILL = 20_000
BATCH = 256
UPDATES = 500
REPEATS = 3
WARMUP_UPDATES = 50

# What each side is set to; written into docs/sb3.md as "setting | herkit | SB3" rows.
SETTINGS: dict[str, list[tuple[str, str, str]]] = {
    "bitflip": [
        (
            "env",
            "herkit/BitFlip-v0, 15 bits, 15-step episodes that end on success",
            "the same env (SB3's make_vec_env: DummyVecEnv + Monitor, 1 env)",
        ),
        ("algorithm", "DQN, double-Q, Huber loss", "DQN (SB3 has no double-Q), Huber loss"),
        (
            "network",
            "observation || desired_goal (30) -> 256 -> 15, ReLU",
            "MultiInputPolicy, net_arch=[256]: observation || achieved_goal || "
            "desired_goal (45) -> 256 -> 15, ReLU",
        ),
        ("input normalisation", "running mean/std, clip 5 (always on)", "none (SB3 default)"),
        (
            "optimiser",
            "Adam 1e-3 (fused), no gradient clipping",
            "Adam 1e-3, max_grad_norm=10 (SB3 default)",
        ),
        ("batch / gamma", "256 / 0.98", "256 / 0.98"),
        (
            "target network",
            "polyak 0.99 after every update",
            "tau=0.01, target_update_interval=4 (every 4 env steps = every update, also "
            "before learning starts)",
        ),
        (
            "exploration",
            "epsilon-greedy 0.5 from the first step",
            "exploration_initial_eps = exploration_final_eps = 0.5; uniformly random "
            "actions for the first 256 steps (SB3 does that before learning_starts)",
        ),
        (
            "updates",
            "1 per 4 env steps after 256 warm-up steps (updates_per_step=0.25, warmup_steps=256)",
            "train_freq=4, gradient_steps=1, learning_starts=256",
        ),
        (
            "HER",
            "future, k=4, relabelled at sample time; relabelled successes are terminal "
            "(terminal_on_success)",
            "future, n_sampled_goal=4; the stored done flag is kept (no equivalent of "
            "terminal_on_success)",
        ),
        ("Q-target clipping", "to the return range [-1/(1-gamma), 0]", "none"),
        ("buffer", "capacity 1e6", "buffer_size=1e6"),
        ("torch threads", "1 (herkit's default)", "1 (torch.set_num_threads(1))"),
    ],
    "fetchreach": [
        (
            "env",
            "FetchReach-v4, 2 envs in 2 worker processes (preset, AsyncVectorEnv)",
            "FetchReach-v4, 2 envs in one process (make_vec_env: DummyVecEnv + Monitor)",
        ),
        (
            "algorithm",
            "SAC: twin critics, automatic entropy (initial alpha 0.1, target -act_dim). "
            "DDPG (the preset): action L2 1.0, Gaussian noise 0.2, random actions 30 %",
            "SAC: n_critics=2, ent_coef='auto_0.1', target_entropy='auto' (-act_dim). "
            "DDPG: NormalActionNoise(0, 0.2) (SB3 has no action L2 penalty nor random-action "
            "share)",
        ),
        (
            "network",
            "3x256 ReLU, actor and critics; input observation || desired_goal (13)",
            "net_arch=[256, 256, 256]; input observation || achieved_goal || desired_goal (16)",
        ),
        (
            "input normalisation",
            "running mean/std, clip 5",
            "VecNormalize(norm_obs=True, norm_reward=False, clip_obs=5)",
        ),
        ("optimiser", "Adam 1e-3 for actor, critic and alpha", "learning_rate=1e-3 (all three)"),
        ("batch / gamma / target", "256 / 0.98 / polyak 0.95 per update", "256 / 0.98 / tau=0.05"),
        (
            "updates",
            "0.5 per env step (1 per step of the 2 envs) after 1,000 env steps",
            "train_freq=1, gradient_steps=1 with 2 envs = 0.5 per env step, learning_starts=1000",
        ),
        ("random actions", "first 1,000 env steps", "first 1,000 env steps (learning_starts)"),
        ("HER", "future, k=4", "future, n_sampled_goal=4"),
        ("Q-target clipping", "to the return range", "none"),
        ("buffer", "capacity 1e6", "buffer_size=1e6"),
        (
            "evaluation",
            "--n-eval-envs 1 (the preset would use 2)",
            "one separate env, VecNormalize statistics applied",
        ),
        ("torch threads", "1", "1"),
    ],
}


# --------------------------------------------------------------------------------------
# machine and bookkeeping


def busy_fraction(seconds: float = 5.0) -> float:
    """Share of the machine's CPU time (all cores) spent busy during ``seconds``."""

    def read() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total

    idle0, total0 = read()
    time.sleep(seconds)
    idle1, total1 = read()
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1)


def wait_quiet(pattern: str) -> dict[str, Any]:
    """Wait (60 s at a time) while a process matching ``pattern`` runs or, with this script
    idle, more than MAX_BUSY of the machine's CPU time is busy (someone else's work)."""
    waited = 0
    while True:
        found = bool(pattern) and bool(
            subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
        )
        busy = busy_fraction()
        if not found and busy < MAX_BUSY:
            return {"waited_s": waited, "busy_before": round(busy, 3)}
        if waited == 0:
            why = f"{pattern!r} runs" if found else f"the machine is {busy:.0%} busy"
            print(f"  waiting: {why} ...", flush=True)
        time.sleep(60)
        waited += 60


def quiet_measure(measure: Any, pattern: str) -> dict[str, Any]:
    """``measure()`` on a quiet machine; redone (up to 5 times) when the machine is busy
    right after it, i.e. someone else's work probably overlapped it."""
    for attempt in range(1, 6):
        state = wait_quiet(pattern)
        result = measure()
        busy_after = busy_fraction(3.0)
        found = bool(pattern) and bool(
            subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
        )
        result.update(state, busy_after=round(busy_after, 3), attempts=attempt)
        if busy_after < MAX_BUSY and not found:
            return result
        print(f"    machine busy ({busy_after:.0%}) right after: measuring again", flush=True)
    result["disturbed"] = True
    return result


def machine() -> dict[str, Any]:
    """lscpu's first lines, core count and library versions."""
    import gymnasium
    import stable_baselines3
    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "gymnasium": gymnasium.__version__,
        "cores": os.cpu_count(),
    }
    for module in ("sb3_contrib", "gymnasium_robotics", "mujoco"):
        try:
            info[module] = getattr(__import__(module), "__version__", "?")
        except ImportError:
            info[module] = None
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        info["lscpu"] = lscpu.splitlines()[:10]
    except (OSError, subprocess.CalledProcessError):
        info["lscpu"] = []
    try:
        git = ["git", "-C", str(ROOT)]
        run = {"capture_output": True, "text": True, "check": True}
        info["commit"] = subprocess.run([*git, "rev-parse", "HEAD"], **run).stdout.strip()
        status = subprocess.run([*git, "status", "--porcelain", "--", "src"], **run).stdout
        info["src_modified"] = bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def read_progress(run_dir: Path) -> list[dict[str, float]]:
    """Rows (env_steps, updates, wall_s, success_rate) of a run's progress.csv."""
    with open(run_dir / "progress.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    keys = ("env_steps", "updates", "wall_s", "success_rate")
    return [{key: float(row[key]) for key in keys} for row in rows]


def summarise(rows: list[dict[str, float]]) -> dict[str, Any]:
    """First evaluation at or above TARGET, final success, curve."""
    first = next((row for row in rows if row["success_rate"] >= TARGET), None)
    return {
        "first_0.9_env_steps": None if first is None else int(first["env_steps"]),
        "first_0.9_wall_s": None if first is None else round(first["wall_s"], 2),
        "final_success": rows[-1]["success_rate"],
        "env_steps": int(rows[-1]["env_steps"]),
        "updates": int(rows[-1]["updates"]),
        "wall_s": round(rows[-1]["wall_s"], 2),
        "curve": [[int(r["env_steps"]), round(r["wall_s"], 3), r["success_rate"]] for r in rows],
    }


def herkit_command(task: str, algo: str, seed: int, out: Path) -> list[str]:
    spec = TASKS[task]
    args = [spec["env_id"], "--algo", algo, "--steps", str(spec["steps"])]
    args += ["--eval-every", str(spec["eval_every"]), "--eval-episodes", str(EVAL_EPISODES)]
    if spec["env_id"].startswith("Fetch"):
        args += ["--n-eval-envs", "1"]
    if spec["env_id"] == "FetchPush-v4":  # the settings SB3 is given (the earlier preset's)
        args += ["--n-envs", str(FETCH_N_ENVS), "--updates-per-step", "0.5"]
        args += [f"--{algo}.batch-size", str(BATCH)]
    args += ["--seed", str(seed), "--out", str(out), "--no-progress", "--no-tensorboard"]
    return ["herkit", "train", *args]


def sb3_command(task: str, algo: str, seed: int, out: Path) -> list[str]:
    spec = TASKS[task]
    return [
        "python", SCRIPT, "--sb3-run", task, "--algo", algo, "--steps", str(spec["steps"]),
        "--eval-every", str(spec["eval_every"]), "--seed", str(seed), "--out", str(out),
    ]  # fmt: skip


def run_training(
    lib: str, task: str, algo: str, seed: int, out_root: Path, quiet: str
) -> dict[str, Any]:
    """One training run in a fresh process; its summary, curve and process wall time."""
    out = out_root / task / f"{lib}-{algo}-s{seed}"
    shutil.rmtree(out, ignore_errors=True)
    maker = herkit_command if lib == "herkit" else sb3_command
    command = maker(task, algo, seed, out)
    argv = (
        [sys.executable, "-m", "herkit", *command[1:]]
        if lib == "herkit"
        else [sys.executable, *command[1:]]
    )
    print(f"  {lib} {algo} seed {seed}: {' '.join(command)}", flush=True)

    def measure() -> dict[str, Any]:
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        process_wall = time.perf_counter() - started
        result = {"lib": lib, "algo": algo, "seed": seed, "command": " ".join(command)}
        result.update(summarise(read_progress(out)))
        result["process_wall_s"] = round(process_wall, 2)
        return result

    result = quiet_measure(measure, quiet)
    print(
        f"    final {result['final_success']:.2f}, 0.9 at {result['first_0.9_env_steps']} "
        f"steps / {result['first_0.9_wall_s']} s, loop {result['wall_s']} s, "
        f"process {result['process_wall_s']} s",
        flush=True,
    )
    return result


# --------------------------------------------------------------------------------------
# the SB3 side


def sb3_model(algo: str, env: Any, seed: int, buffer_size: int = 1_000_000) -> Any:
    """The SB3 model of ``algo`` with the settings listed in SETTINGS."""
    from stable_baselines3 import DDPG, DQN, SAC, HerReplayBuffer
    from stable_baselines3.common.noise import NormalActionNoise

    common: dict[str, Any] = {
        "learning_rate": 1e-3,
        "gamma": 0.98,
        "tau": 0.05,
        "buffer_size": buffer_size,
        "replay_buffer_class": HerReplayBuffer,
        "replay_buffer_kwargs": {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        "train_freq": 1,
        "gradient_steps": 1,
        "seed": seed,
        "device": "cpu",
        "verbose": 0,
    }
    if algo == "dqn":
        dqn = dict(common, tau=0.01, train_freq=4)  # herkit's bit-flipping preset
        return DQN(
            "MultiInputPolicy",
            env,
            batch_size=256,
            learning_starts=256,
            target_update_interval=4,
            exploration_initial_eps=0.5,
            exploration_final_eps=0.5,
            policy_kwargs={"net_arch": [256]},
            **dqn,
        )
    fetch = {
        "batch_size": BATCH,
        "learning_starts": 1_000,
        "policy_kwargs": {"net_arch": [256, 256, 256]},
    }
    if algo == "sac":
        return SAC("MultiInputPolicy", env, ent_coef="auto_0.1", **fetch, **common)
    if algo == "tqc":
        from sb3_contrib import TQC

        return TQC("MultiInputPolicy", env, ent_coef="auto_0.1", **fetch, **common)
    if algo == "ddpg":
        n_actions = env.action_space.shape[0]
        noise = NormalActionNoise(np.zeros(n_actions), 0.2 * np.ones(n_actions))
        return DDPG("MultiInputPolicy", env, action_noise=noise, **fetch, **common)
    raise ValueError(f"unknown SB3 algo {algo!r}")


def sb3_evaluate(model: Any, env: Any, episodes: int, seed: int, normalizer: Any) -> float:
    """Success rate of ``model``'s deterministic policy over ``episodes`` episodes."""
    successes = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        while True:
            inputs = normalizer.normalize_obs(obs) if normalizer is not None else obs
            action, _ = model.predict(inputs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                successes.append(float(info.get("is_success", 0.0)))
                obs, _ = env.reset()
                break
    return float(np.mean(successes))


def sb3_run(
    task: str, algo: str, seed: int, out: Path, steps: int, eval_every: int, threads: int = 1
) -> None:
    """Train SB3 on ``task``; writes progress.csv and summary.json like ``herkit train``."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from herkit.envs import make_goal_env

    torch.set_num_threads(threads)
    spec = TASKS[task]
    env_id = spec["env_id"]
    fetch = env_id.startswith("Fetch")
    env: Any = make_vec_env(
        lambda: make_goal_env(env_id), n_envs=FETCH_N_ENVS if fetch else 1, seed=seed
    )
    normalizer = None
    if fetch:
        env = normalizer = VecNormalize(
            env, norm_obs=True, norm_reward=False, clip_obs=5.0, gamma=0.98
        )
    eval_env = make_goal_env(env_id)
    model = sb3_model(algo, env, seed)
    rows: list[dict[str, float]] = []

    class Evaluate(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_eval = eval_every
            self.started = 0.0

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                self.next_eval += eval_every
                eval_seed = seed + 10_000 + self.num_timesteps
                success = sb3_evaluate(model, eval_env, EVAL_EPISODES, eval_seed, normalizer)
                rows.append(
                    {
                        "env_steps": self.num_timesteps,
                        "updates": model._n_updates,
                        "wall_s": time.perf_counter() - self.started,
                        "success_rate": success,
                    }
                )
            return True

    callback = Evaluate()
    callback.started = time.perf_counter()
    model.learn(total_timesteps=steps, callback=callback)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "progress.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, ["env_steps", "updates", "wall_s", "success_rate"])
        writer.writeheader()
        writer.writerows(rows)
    summary = {"env_id": env_id, "algo": f"sb3-{algo}", "seed": seed, **rows[-1]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


# --------------------------------------------------------------------------------------
# updates per second


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


# (library, algorithm, buffer capacity; None: exactly the number of stored transitions)
UPDATE_CONFIGS: list[tuple[str, str, int | None]] = [
    ("herkit", "sac", 1_000_000),
    ("sb3", "sac", 1_000_000),
    ("herkit", "ddpg", 1_000_000),
    ("sb3", "ddpg", 1_000_000),
    ("sb3", "tqc", 1_000_000),
    ("sb3", "sac", None),  # SB3 with no empty capacity: its sampler scans the whole buffer
]


def part_updates(out_root: Path, quiet: str) -> dict[str, Any]:
    out_root.mkdir(parents=True, exist_ok=True)
    data_path = out_root / "fetchpush_random.npz"
    if not data_path.exists():
        print(f"  collecting {FILL} random FetchPush-v4 transitions", flush=True)
        collect_push(data_path, FILL)
    try:
        import sb3_contrib  # noqa: F401

        configs = UPDATE_CONFIGS
    except ImportError:
        configs = [c for c in UPDATE_CONFIGS if c[1] != "tqc"]
    rows = []
    for threads in (1, 2):
        for lib, algo, capacity in configs:
            buffer_size = FILL if capacity is None else capacity
            command = [
                sys.executable, SCRIPT, "--updates-run", lib, "--algo", algo,
                "--threads", str(threads), "--buffer-size", str(buffer_size),
                "--data", str(data_path), "--updates", str(UPDATES), "--repeats", str(REPEATS),
            ]  # fmt: skip
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
        "transitions": FILL,
        "batch": BATCH,
        "updates": UPDATES,
        "repeats": REPEATS,
        "warmup_updates": WARMUP_UPDATES,
        "rows": rows,
    }


# --------------------------------------------------------------------------------------
# parts


def part_training(task: str, seeds: list[int], out_root: Path, quiet: str) -> dict[str, Any]:
    spec = TASKS[task]
    runs = []
    for seed in seeds:
        for algo in spec["herkit"]:
            runs.append(run_training("herkit", task, algo, seed, out_root, quiet))
        for algo in spec["sb3"]:
            runs.append(run_training("sb3", task, algo, seed, out_root, quiet))
    return {
        "env_id": spec["env_id"],
        "steps": spec["steps"],
        "eval_every": spec["eval_every"],
        "eval_episodes": EVAL_EPISODES,
        "seeds": seeds,
        "runs": runs,
    }


# --------------------------------------------------------------------------------------
# report


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _label(run: dict[str, Any]) -> str:
    return f"{'SB3' if run['lib'] == 'sb3' else 'herkit'} {run['algo'].upper()}"


def _busy(entry: dict[str, Any]) -> str:
    text = f"{entry['busy_before']:.0%} / {entry['busy_after']:.0%}"
    return text + (" (disturbed)" if entry.get("disturbed") else "")


def training_table(part: dict[str, Any]) -> list[str]:
    lines = [
        "| library | seed | env steps to 0.9 | wall s to 0.9 | final success | updates "
        "| loop wall s | process wall s | CPU busy before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in part["runs"]:
        steps = run["first_0.9_env_steps"]
        lines.append(
            f"| {_label(run)} | {run['seed']} | "
            f"{'not reached' if steps is None else f'{steps:,}'} | "
            f"{_fmt(run['first_0.9_wall_s'])} | {run['final_success']:.2f} | "
            f"{run['updates']:,} | {run['wall_s']:.1f} | {run['process_wall_s']:.1f} | "
            f"{_busy(run)} |"
        )
    return lines


def speedups(part: dict[str, Any], herkit_algo: str, sb3_algo: str) -> dict[str, Any]:
    """Per seed: SB3 wall s to 0.9 / herkit wall s to 0.9 (a bound when one never got there)."""
    by = {(r["lib"], r["algo"], r["seed"]): r for r in part["runs"]}
    out = []
    for seed in part["seeds"]:
        h, s = by.get(("herkit", herkit_algo, seed)), by.get(("sb3", sb3_algo, seed))
        if h is None or s is None:
            continue
        ht, st = h["first_0.9_wall_s"], s["first_0.9_wall_s"]
        if ht is not None and st is not None:
            out.append({"seed": seed, "ratio": st / ht, "kind": "="})
        elif ht is not None:  # SB3 never reached 0.9: it needs more than its whole run
            out.append({"seed": seed, "ratio": s["wall_s"] / ht, "kind": ">"})
        elif st is not None:
            out.append({"seed": seed, "ratio": st / h["wall_s"], "kind": "<"})
        else:
            out.append({"seed": seed, "ratio": None, "kind": "neither"})
    return {"herkit": herkit_algo, "sb3": sb3_algo, "per_seed": out}


def budget_ratios(part: dict[str, Any], herkit_algo: str, sb3_algo: str) -> list[float]:
    """Per seed: SB3 loop wall s / herkit loop wall s for the whole budget."""
    by = {(r["lib"], r["algo"], r["seed"]): r for r in part["runs"]}
    return [
        by[("sb3", sb3_algo, seed)]["wall_s"] / by[("herkit", herkit_algo, seed)]["wall_s"]
        for seed in part["seeds"]
        if ("sb3", sb3_algo, seed) in by and ("herkit", herkit_algo, seed) in by
    ]


def _ratios(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}x" for v in values)


def _ratio_text(entry: dict[str, Any]) -> str:
    if entry["ratio"] is None:
        return "neither reached 0.9"
    prefix = {"=": "", ">": "> ", "<": "< "}[entry["kind"]]
    return f"{prefix}{entry['ratio']:.2f}x"


def plot_bitflip(part: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"herkit": "tab:blue", "sb3": "tab:orange"}
    labelled: set[str] = set()
    for run in part["runs"]:
        curve = np.asarray(run["curve"], float)
        label = None if run["lib"] in labelled else _label(run) + "+HER"
        labelled.add(run["lib"])
        for ax, column in ((axes[0], 0), (axes[1], 1)):
            ax.plot(curve[:, column], curve[:, 2], color=colors[run["lib"]], alpha=0.8,
                    marker=".", label=label)  # fmt: skip
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("wall time of the training loop (s)")
    for ax in axes:
        ax.set_ylabel("success rate (10 episodes)")
        ax.axhline(TARGET, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    seeds = ", ".join(str(s) for s in part["seeds"])
    fig.suptitle(f"BitFlip 15 bits, herkit vs SB3, one line per seed ({seeds})")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)


def updates_table(part: dict[str, Any]) -> list[str]:
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
            f"{_busy(row)} |"
        )
    return lines


def update_ratios(part: dict[str, Any]) -> list[dict[str, Any]]:
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


def speed_table(part: dict[str, Any]) -> list[str]:
    lines = [
        "| library | env steps | updates | loop wall s | env steps/s | updates/s in the loop "
        "| success at the end | process wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in part["runs"]:
        lines.append(
            f"| {_label(run)} | {run['env_steps']:,} | {run['updates']:,} | "
            f"{run['wall_s']:.1f} | {run['env_steps'] / run['wall_s']:,.0f} | "
            f"{run['updates'] / run['wall_s']:,.1f} | {run['final_success']:.2f} | "
            f"{run['process_wall_s']:.1f} |"
        )
    return lines


def settings_table(name: str) -> list[str]:
    lines = ["| setting | herkit | SB3 |", "|---|---|---|"]
    for row in SETTINGS[name]:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return lines


def reading_notes(results: dict[str, Any]) -> list[str]:
    """How to read "time to 0.9" next to "whole budget", from the numbers themselves."""
    notes = [
        'Reading these numbers: "time to 0.9" is read at the evaluations, so it moves in '
        "whole evaluation intervals. Where both libraries first reach 0.9 at the same "
        "evaluation, its ratio is the ratio of the wall time spent up to there; where they "
        "reach it at different evaluations, sample efficiency decides as well, and the "
        "ratio can fall below 1 although herkit is faster per step. The whole-budget ratio "
        "compares the same number of env steps and updates, i.e. throughput.",
    ]
    for name in ("bitflip", "fetchreach"):
        if name not in results:
            continue
        runs = results[name]["runs"]
        by = {(r["lib"], r["algo"], r["seed"]): r["first_0.9_env_steps"] for r in runs}
        differ = [
            f"{algo.upper()} seed {seed} (herkit {by[('herkit', algo, seed)]}, "
            f"SB3 {by[('sb3', algo, seed)]})"
            for (lib, algo, seed) in by
            if lib == "herkit"
            and ("sb3", algo, seed) in by
            and by[("herkit", algo, seed)] != by[("sb3", algo, seed)]
        ]
        if differ:
            title = {"bitflip": "Bit flipping", "fetchreach": "FetchReach"}[name]
            notes[0] += f" {title}: 0.9 first reached at different env steps on " + (
                ", ".join(differ) + "."
            )
    if "fetchreach" in results:
        firsts = {r["first_0.9_env_steps"] for r in results["fetchreach"]["runs"]}
        if len(firsts) == 1 and None not in firsts:
            (first,) = firsts
            notes[0] += (
                f" On FetchReach every run first reached 0.9 at {first:,} env steps, after "
                f"1,000 random-action steps and only about {(first - 1000) // 2:,} updates, "
                "so its time to 0.9 mostly measures env stepping, action selection and the "
                "evaluations, not update speed."
            )
    return [*notes, ""]


def write_report(results: dict[str, Any]) -> None:
    m = results["machine"]
    part_minutes = {
        name: results[name]["part_wall_s"] / 60
        for name in ("bitflip", "fetchreach", "updates", "fetchpush_speed")
        if name in results
    }
    lines = [
        "# herkit vs stable-baselines3, side by side",
        "",
        "Written by `python benchmarks/sb3_compare.py` (parts: `--only "
        + "|".join(PARTS)
        + "`, seeds: `--seeds`). Everything below ran on this machine, one process at a "
        "time. Before each measurement the script waits until no `--quiet-pattern` process "
        f"runs and the machine is less than {MAX_BUSY:.0%} busy over 5 s; a measurement "
        "after which the machine is busy again (someone else's work probably overlapped it) "
        'is done again. "CPU busy before / after" is the share of all cores\' time busy '
        "in the 5 s before and the 3 s after it. Numbers are as measured.",
        "",
        "## Machine",
        "",
        "```",
        *m.get("lscpu", []),
        "```",
        "",
        f"Python {m['python']}, torch {m['torch']}, numpy {m['numpy']}, stable-baselines3 "
        f"{m['stable_baselines3']}, sb3-contrib {m['sb3_contrib']}, gymnasium "
        f"{m['gymnasium']}, gymnasium-robotics {m['gymnasium_robotics']}, mujoco "
        f"{m['mujoco']}. herkit's commit when each part started: "
        + ", ".join(
            f"{name} `{part['code']['commit'][:12]}`"
            + (" (with uncommitted changes in src/)" if part["code"]["src_modified"] else "")
            for name, part in results.items()
            if name != "machine" and isinstance(part, dict)
        )
        + ".",
        "",
        "Wall time of each part (including process start-ups and any waiting): "
        + ", ".join(f"{name} {minutes:.1f} min" for name, minutes in part_minutes.items())
        + f"; total {sum(part_minutes.values()):.1f} min.",
        "",
        'Wall times: "loop wall s" runs from the start of the training loop to the '
        "evaluation in question and includes all evaluations so far (herkit: from "
        '`progress.csv`; SB3: from just before `model.learn`). "process wall s" is the '
        "whole process: interpreter start, imports, env and model construction, the final "
        "checkpoint (herkit) and exit.",
        "",
    ]
    verdicts: list[str] = []
    if "bitflip" in results:
        part = results["bitflip"]
        sp = speedups(part, "dqn", "dqn")
        budget = budget_ratios(part, "dqn", "dqn")
        ratio_text = ", ".join(f"seed {e['seed']}: {_ratio_text(e)}" for e in sp["per_seed"])
        exact = [e["ratio"] for e in sp["per_seed"] if e["kind"] == "="]
        h, s = (
            [
                r["first_0.9_wall_s"]
                for r in part["runs"]
                if r["lib"] == lib and r["first_0.9_wall_s"] is not None
            ]
            for lib in ("herkit", "sb3")
        )
        lines += [
            "## 1. Bit flipping, 15 bits: DQN+HER",
            "",
            f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
            f"env steps ({part['eval_episodes']} deterministic episodes on a separate env), "
            f"seeds {', '.join(map(str, part['seeds']))}.",
            "",
            *training_table(part),
            "",
            f"Medians over the seeds that reached 0.9: herkit {_fmt(_median(h))} s, "
            f"SB3 {_fmt(_median(s))} s of loop wall time. Wall time to 0.9, SB3 / herkit: "
            f"{ratio_text}. Loop wall time of the whole budget (same env steps, same number "
            f"of updates), SB3 / herkit, seeds in order: {_ratios(budget)}.",
            "",
            "![success vs env steps and wall time](figures/sb3_bitflip.png)",
            "",
            "Commands (seed 0; other seeds change `--seed`):",
            "",
            "```bash",
            *sorted({r["command"] for r in part["runs"] if r["seed"] == part["seeds"][0]}),
            "```",
            "",
            *settings_table("bitflip"),
            "",
        ]
        met = bool(exact) and all(
            e["kind"] in ("=", ">") and e["ratio"] >= 2 for e in sp["per_seed"]
        )
        verdicts.append(
            f"- Bit flipping, wall time to 0.9 at least 2x faster than SB3: "
            f"**{'met' if met else 'not met'}** (SB3 / herkit: {ratio_text})."
        )
        verdicts.append(
            "- Bit flipping, whole budget at least 2x faster than SB3: "
            f"**{'met' if budget and min(budget) >= 2 else 'not met'}** ({_ratios(budget)})."
        )
    if "fetchreach" in results:
        part = results["fetchreach"]
        lines += [
            "## 2. FetchReach-v4: SAC+HER (and herkit's DDPG preset)",
            "",
            f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
            f"env steps ({part['eval_episodes']} deterministic episodes on one separate env), "
            f"seeds {', '.join(map(str, part['seeds']))}.",
            "",
            *training_table(part),
            "",
        ]
        for h_algo, s_algo in (("sac", "sac"), ("ddpg", "ddpg"), ("ddpg", "sac")):
            sp = speedups(part, h_algo, s_algo)
            if not sp["per_seed"]:
                continue
            ratio_text = ", ".join(f"seed {e['seed']}: {_ratio_text(e)}" for e in sp["per_seed"])
            met = all(e["kind"] in ("=", ">") and e["ratio"] >= 2 for e in sp["per_seed"])
            pair = f"herkit {h_algo.upper()} vs SB3 {s_algo.upper()}" + (
                "" if h_algo == s_algo else " (herkit's default preset; different algorithms)"
            )
            budget = budget_ratios(part, h_algo, s_algo)
            lines.append(
                f"- {pair}: wall time to 0.9, SB3 / herkit: {ratio_text}; loop wall time of "
                f"the whole budget, SB3 / herkit: {_ratios(budget)}."
            )
            verdicts.append(
                f"- FetchReach, {pair}, at least 2x faster to 0.9: "
                f"**{'met' if met else 'not met'}** ({ratio_text}); whole budget: "
                f"**{'met' if budget and min(budget) >= 2 else 'not met'}** "
                f"({_ratios(budget)})."
            )
        lines += [
            "",
            "Commands (seed 0):",
            "",
            "```bash",
            *sorted({r["command"] for r in part["runs"] if r["seed"] == part["seeds"][0]}),
            "```",
            "",
            *settings_table("fetchreach"),
            "",
        ]
    if "updates" in results:
        part = results["updates"]
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
        more = all(r["ratio"] > 1 for r in same)
        verdicts.append(
            "- More updates/s than SB3 with the same network and batch (same algorithm, "
            f"1 and 2 threads, both SB3 buffer sizes): **{'met' if more else 'not met'}** ("
            + ", ".join(
                f"{r['herkit'].upper()} {r['threads']}t vs SB3 {r['sb3']}: {r['ratio']:.2f}x"
                for r in same
            )
            + ")."
        )
    if "fetchpush_speed" in results:
        part = results["fetchpush_speed"]
        runs = {(r["lib"], r["algo"]): r for r in part["runs"]}
        lines += [
            "## 3b. FetchPush-v4: a short training run, env steps per second",
            "",
            f"{part['steps']:,} env steps, seed {part['seeds'][0]}, settings as in "
            "FetchReach (2 envs, 0.5 updates per env step after 1,000 random steps, 3x256, "
            "batch 256); one evaluation (10 episodes) at the end, inside the loop time. "
            f"{part['steps']:,} env steps are far too few to learn FetchPush; the success "
            "column is only reported, not compared.",
            "",
            *speed_table(part),
            "",
            "```bash",
            *sorted({r["command"] for r in part["runs"]}),
            "```",
            "",
        ]
        for h_algo, s_algo in (("sac", "sac"), ("ddpg", "ddpg"), ("ddpg", "sac")):
            h, s = runs.get(("herkit", h_algo)), runs.get(("sb3", s_algo))
            if h and s:
                ratio = (h["env_steps"] / h["wall_s"]) / (s["env_steps"] / s["wall_s"])
                verdicts.append(
                    f"- FetchPush {part['steps']:,}-step training, herkit {h_algo.upper()} vs "
                    f"SB3 {s_algo.upper()}, at least 2x the env steps/s: "
                    f"**{'met' if ratio >= 2 else 'not met'}** ({ratio:.2f}x)."
                )
    lines += ["## Against the issue's targets", "", *verdicts, "", *reading_notes(results)]
    lines += [
        "## What is not the same on both sides",
        "",
        "- SB3's `MultiInputPolicy` feeds `observation || achieved_goal || desired_goal` to "
        "the networks; herkit feeds `observation || desired_goal` (achieved_goal is part of "
        "the observation in both envs, so no information differs; SB3's first layer is "
        "slightly wider: 45 vs 30 inputs for 15 bits, 16 vs 13 for FetchReach, 31 vs 28 "
        "for FetchPush).",
        "- SB3 DQN has no double-Q and clips gradients at norm 10 (its default); herkit's "
        "DQN is double-Q without clipping. herkit clips Q targets to the return range, SB3 "
        "does not. herkit's bit-flip preset makes relabelled successes terminal; SB3 keeps "
        "the stored `done` (no such option).",
        "- SB3's DQN takes uniformly random actions until `learning_starts` (256 steps); "
        "herkit's preset explores with epsilon 0.5 from the first step.",
        "- Bit flipping: herkit normalises its inputs (always), SB3 gets raw bits (its "
        "default, as in SB3's own HER tests). Fetch: both normalise (SB3 via VecNormalize).",
        "- Fetch envs: herkit's preset steps its 2 training envs in 2 worker processes "
        "(AsyncVectorEnv); SB3's `make_vec_env` steps them in one process (DummyVecEnv). "
        "Both evaluate on one env in the main process.",
        "- SB3's `HerReplayBuffer.sample` scans the validity mask of the whole capacity "
        "(1e6 x n_envs) on every call; the 3a rows with a buffer exactly as large as the "
        "stored data show SB3 without that cost. "
        "Building SB3's buffer (an array of 1e6 info dicts) also takes seconds, which shows "
        "in its process wall time but not in its loop wall time.",
        "- torch threads: 1 on both sides for the training runs (herkit's default; SB3 "
        "would otherwise use both cores). Section 3a shows both libraries at 1 and 2 "
        "threads.",
        "- herkit's loop time includes a checkpoint at 10,000 env steps in the bit-flip "
        "runs (its preset's `checkpoint_every`); SB3 writes none.",
        "- DDPG exploration differs: herkit adds Gaussian noise 0.2 and takes a random action "
        "30 % of the time and penalises large actions (baselines HER); SB3's DDPG only adds "
        "Gaussian noise 0.2. herkit DDPG vs SB3 SAC compares herkit's default preset with "
        "SB3's usual HER algorithm, not like with like: a SAC update costs more than a DDPG "
        "one in both libraries (section 3a).",
        "",
    ]
    REPORT.write_text("\n".join(lines))


# --------------------------------------------------------------------------------------
# main


def main() -> None:
    global FILL, UPDATES, REPEATS, RESULTS, REPORT, FIGURE  # --smoke changes them
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=PARTS, help="parts to run (default all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default="runs/sb3_compare", help="where run directories go")
    parser.add_argument("--quiet-pattern", default="benchmarks/bitflip.py")
    parser.add_argument("--report-only", action="store_true", help="rewrite docs from the json")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny budgets to test the script (not a result)"
    )
    # internal workers
    parser.add_argument("--sb3-run", choices=sorted(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("--updates-run", choices=("herkit", "sb3"), help=argparse.SUPPRESS)
    parser.add_argument("--algo", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--buffer-size", type=int, default=1_000_000, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--eval-every", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--updates", type=int, default=UPDATES, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=REPEATS, help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.sb3_run:
        sb3_run(
            options.sb3_run, options.algo, options.seed, Path(options.out), options.steps,
            options.eval_every,
        )  # fmt: skip
        return
    if options.updates_run:
        row = updates_run(
            options.updates_run, options.algo, options.threads, Path(options.data),
            options.buffer_size, options.updates, options.repeats,
        )  # fmt: skip
        print(json.dumps(row))
        return

    os.chdir(ROOT)  # run directories and the commands shown are relative to the repository
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if options.smoke:  # tiny budgets; what it writes goes to OUT/docs, not to docs/
        smoke_docs = Path(options.out).resolve() / "docs"
        RESULTS, REPORT = smoke_docs / "sb3.json", smoke_docs / "sb3.md"
        FIGURE = smoke_docs / "figures" / "sb3_bitflip.png"
        FIGURE.parent.mkdir(parents=True, exist_ok=True)
        FILL, UPDATES, REPEATS = 2_000, 20, 1
        for spec in TASKS.values():
            spec["steps"] = 2 * spec["eval_every"] if spec["eval_every"] < 20_000 else 2_000
            spec["eval_every"] = min(spec["eval_every"], spec["steps"])
    if not options.report_only:
        results["machine"] = machine()
        out_root = Path(options.out)
        for name in options.only or PARTS:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            if name == "bitflip":
                part = part_training("bitflip", options.seeds, out_root, options.quiet_pattern)
            elif name == "fetchreach":
                part = part_training("fetchreach", options.seeds, out_root, options.quiet_pattern)
            elif name == "updates":
                part = part_updates(out_root / "updates", options.quiet_pattern)
            else:
                seeds = options.seeds[:1]
                part = part_training("fetchpush", seeds, out_root, options.quiet_pattern)
            part["part_wall_s"] = round(time.perf_counter() - started, 1)
            part["code"] = {key: results["machine"].get(key) for key in ("commit", "src_modified")}
            results[name.replace("-", "_")] = part
            RESULTS.write_text(json.dumps(results, indent=1))
    if "bitflip" in results:
        plot_bitflip(results["bitflip"])
    write_report(results)
    print(f"wrote {RESULTS} and {REPORT}")


if __name__ == "__main__":
    main()
