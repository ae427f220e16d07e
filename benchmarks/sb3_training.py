"""Training runs of herkit and SB3 side by side, the machinery that the bit-flipping,
FetchReach and FetchPush-speed comparisons (``sb3_bitflip.py``, ``sb3_fetchreach.py``,
``sb3_fetchpush_speed.py``) share.

Every run is a fresh process: herkit through its CLI (:func:`herkit_command`), SB3 through
``benchmarks/sb3_compare.py --sb3-run`` (:func:`sb3_run`), which writes the same
``progress.csv`` / ``summary.json`` columns. Both evaluate the same way: every
``eval_every`` env steps, ``EVAL_EPISODES`` episodes of the deterministic policy on one
separate env, success = ``info["is_success"]`` at the end of the episode; wall time counts
from the start of the training loop and includes the evaluations. Runs go to the full
budget (no early stop), and the first evaluation with success >= ``TARGET`` gives "env steps
/ wall s to 0.9". Also here: the tables and ratios that read these runs.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sb3_common import BATCH, ROOT, SCRIPT, busy_cell, fmt, quiet_measure, run_label, sb3_model

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
"""Per task: the env, budget, evaluation interval and the algorithms run on each side
(``--smoke`` shrinks the budgets)."""

EVAL_EPISODES = 10
"""Deterministic evaluation episodes, on both sides."""
TARGET = 0.9
"""The success rate whose first evaluation gives "env steps / wall s to 0.9"."""
FETCH_N_ENVS = 2
"""Training envs on Fetch tasks (herkit's FetchReach preset; FetchPush's before): 0.5
updates per env step."""

# --------------------------------------------------------------------------------------
# the runs


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
    """The ``herkit train`` command of one run of ``task``."""
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
    """The ``sb3_compare.py --sb3-run`` command of one SB3 run of ``task``."""
    spec = TASKS[task]
    return [
        "python",
        SCRIPT,
        "--sb3-run",
        task,
        "--algo",
        algo,
        "--steps",
        str(spec["steps"]),
        "--eval-every",
        str(spec["eval_every"]),
        "--seed",
        str(seed),
        "--out",
        str(out),
    ]


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


def part_training(task: str, seeds: list[int], out_root: Path, quiet: str) -> dict[str, Any]:
    """Every run of ``task`` (both libraries, each algorithm, each seed) on a quiet machine;
    the part's record for docs/sb3.json."""
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
# reading them


def training_table(part: dict[str, Any]) -> list[str]:
    """The report's table of a part's runs: time to 0.9, final success, wall times."""
    lines = [
        "| library | seed | env steps to 0.9 | wall s to 0.9 | final success | updates "
        "| loop wall s | process wall s | CPU busy before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in part["runs"]:
        steps = run["first_0.9_env_steps"]
        lines.append(
            f"| {run_label(run)} | {run['seed']} | "
            f"{'not reached' if steps is None else f'{steps:,}'} | "
            f"{fmt(run['first_0.9_wall_s'])} | {run['final_success']:.2f} | "
            f"{run['updates']:,} | {run['wall_s']:.1f} | {run['process_wall_s']:.1f} | "
            f"{busy_cell(run)} |"
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


def ratios_text(values: list[float]) -> str:
    """``2.10x, 1.95x``: ratios as the report writes them."""
    return ", ".join(f"{v:.2f}x" for v in values)


def speedup_text(entry: dict[str, Any]) -> str:
    """One seed of :func:`speedups` as text: ``2.10x``, ``> 3.00x`` (SB3 never reached 0.9)."""
    if entry["ratio"] is None:
        return "neither reached 0.9"
    prefix = {"=": "", ">": "> ", "<": "< "}[entry["kind"]]
    return f"{prefix}{entry['ratio']:.2f}x"


def settings_table(settings: list[tuple[str, str, str]]) -> list[str]:
    """The "setting | herkit | SB3" table of a comparison's ``SETTINGS`` rows."""
    lines = ["| setting | herkit | SB3 |", "|---|---|---|"]
    for row in settings:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return lines


def first_differences(part: dict[str, Any], title: str) -> str:
    """A sentence naming the runs where herkit and SB3 first reached 0.9 at different env
    steps (same algorithm and seed); empty when there are none."""
    by = {(r["lib"], r["algo"], r["seed"]): r["first_0.9_env_steps"] for r in part["runs"]}
    differ = [
        f"{algo.upper()} seed {seed} (herkit {by[('herkit', algo, seed)]}, "
        f"SB3 {by[('sb3', algo, seed)]})"
        for (lib, algo, seed) in by
        if lib == "herkit"
        and ("sb3", algo, seed) in by
        and by[("herkit", algo, seed)] != by[("sb3", algo, seed)]
    ]
    if not differ:
        return ""
    return f" {title}: 0.9 first reached at different env steps on " + ", ".join(differ) + "."
