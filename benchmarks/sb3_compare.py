"""herkit against stable-baselines3 (SB3): the same algorithms and settings, one machine.

    python benchmarks/sb3_compare.py                          # every part below (about an hour)
    python benchmarks/sb3_compare.py --only bitflip --seeds 0 1 2
    python benchmarks/sb3_compare.py --only fetchreach --seeds 0
    python benchmarks/sb3_compare.py --only updates
    python benchmarks/sb3_compare.py --only fetchpush-speed
    python benchmarks/sb3_compare.py --report-only            # docs/sb3.md from docs/sb3.json
    python benchmarks/sb3_compare.py buffer --tasks bitflip --seeds 0   # SB3 on herkit's buffer
    python benchmarks/sb3_compare.py tqc --minutes 20         # SB3 TQC with rl-zoo's FetchPush
    python benchmarks/sb3_compare.py zoo --record             # the SB3 guide's zoo line: speed
    python benchmarks/sb3_compare.py pointmaze                # PointMaze SAC+HER, both libraries
    python benchmarks/sb3_compare.py parking --seeds 0 1 2    # highway-env's parking-v0, both

Without a subcommand, the parts of docs/sb3.md (``--only``; method: that page), each run
in a fresh process (SB3's through the hidden ``--sb3-run`` and ``--updates-run`` workers)
on a quiet machine; writes sb3.json, sb3.md and figures/sb3_bitflip.png. Needs
stable-baselines3, gymnasium-robotics, sb3-contrib (TQC) and highway-env (parking).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import importlib
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import common
import numpy as np

SCRIPT = "benchmarks/sb3_compare.py"
BATCH = 256
TARGET = 0.9

# -- the SB3 side ------------------------------------------------------------------------------


def sb3_model(
    algo: str, env: Any, seed: int, buffer_class: Any = None, her: Any = None, size: int = 10**6
) -> Any:
    """The SB3 model of ``algo`` with herkit's settings (docs/sb3.md), on SB3's HER buffer
    or ``buffer_class`` with ``her``'s settings."""
    from stable_baselines3 import DDPG, DQN, SAC, TD3, HerReplayBuffer
    from stable_baselines3.common.noise import NormalActionNoise

    settings: dict[str, Any] = {
        "learning_rate": 1e-3,
        "gamma": 0.98,
        "tau": 0.05,
        "buffer_size": size,
        "batch_size": BATCH,
        "replay_buffer_class": buffer_class or HerReplayBuffer,
        "replay_buffer_kwargs": her or {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        "train_freq": 1,
        "gradient_steps": 1,
        "learning_starts": 1_000,
        "policy_kwargs": {"net_arch": [256, 256, 256]},
        "seed": seed,
        "device": "cpu",
        "verbose": 0,
    }
    if algo == "dqn":
        dqn = {"tau": 0.01, "train_freq": 4, "learning_starts": 256, "target_update_interval": 4}
        dqn |= {"exploration_initial_eps": 0.5, "exploration_final_eps": 0.5}
        return DQN(
            "MultiInputPolicy", env, **settings | dqn | {"policy_kwargs": {"net_arch": [256]}}
        )
    if algo == "tqc":
        from sb3_contrib import TQC

        return TQC("MultiInputPolicy", env, ent_coef="auto_0.1", **settings)
    if algo == "sac":
        return SAC("MultiInputPolicy", env, ent_coef="auto_0.1", **settings)
    if algo in ("ddpg", "td3"):
        dim = env.action_space.shape[0]
        noise = NormalActionNoise(np.zeros(dim), 0.2 * np.ones(dim))
        return (DDPG if algo == "ddpg" else TD3)(
            "MultiInputPolicy", env, action_noise=noise, **settings
        )
    raise ValueError(f"unknown SB3 algo {algo!r}")


def evaluate(
    model: Any, env: Any, episodes: int, seed: int, key: str = "is_success", normalizer: Any = None
) -> float:
    """Success rate of an SB3 model's deterministic policy over ``episodes`` episodes of
    ``env`` (``info[key]`` at each end), observations through ``normalizer`` if given."""
    successes = []
    obs, _ = env.reset(seed=seed)
    while len(successes) < episodes:
        inputs = obs if normalizer is None else normalizer.normalize_obs(obs)
        action, _ = model.predict(inputs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            successes.append(float(info.get(key, 0.0)))
            obs, _ = env.reset()
    return float(np.mean(successes))


def learn(
    model: Any,
    steps: int,
    every: int,
    eval_env: Any,
    episodes: int,
    seed: Any,
    key: str = "is_success",
    normalizer: Any = None,
    seconds: float | None = None,
    say: bool = False,
) -> list[dict[str, float]]:
    """``model.learn`` for ``steps`` env steps (or ``seconds``), with :func:`evaluate` every
    ``every`` env steps; a row per evaluation (env steps, updates, wall_s, eval_s, success)."""
    from stable_baselines3.common.callbacks import BaseCallback

    def success(env_steps: int) -> float:
        at = seed(env_steps) if callable(seed) else seed + 10_000 + env_steps
        rate = evaluate(model, eval_env, episodes, at, key, normalizer)
        if say:
            print(f"{env_steps} env steps: success {rate}", flush=True)
        return rate

    rows: list[dict[str, float]] = []
    clock = {"next": every, "eval_s": 0.0, "start": 0.0}

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps >= clock["next"]:
                clock["next"] += every
                began = time.perf_counter()
                rate = success(self.num_timesteps)
                clock["eval_s"] += time.perf_counter() - began
                rows.append(
                    {
                        "env_steps": self.num_timesteps,
                        "updates": model._n_updates,
                        "wall_s": time.perf_counter() - clock["start"],
                        "eval_s": clock["eval_s"],
                        "success_rate": rate,
                    }
                )
            return seconds is None or time.perf_counter() - clock["start"] < seconds

    clock["start"] = time.perf_counter()
    model.learn(total_timesteps=steps, callback=Evaluate())
    return rows


def one_thread() -> None:
    """torch on one thread, as herkit trains by default."""
    import torch

    torch.set_num_threads(1)


def sb3_envs(env_id: str, n_envs: int, seed: int, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """SB3's seeded vector env of ``n_envs`` herkit goal envs and an env to evaluate on."""
    from stable_baselines3.common.env_util import make_vec_env

    from herkit.envs import make_goal_env

    one_thread()
    make = functools.partial(make_goal_env, env_id, **kwargs)
    return make_vec_env(make, n_envs=n_envs, seed=seed), make()


# -- measuring on a quiet machine ---------------------------------------------------------------

MAX_BUSY = 0.1
"""The machine counts as quiet below this share of busy CPU time."""


def busy_fraction(seconds: float = 5.0) -> float:
    """Share of the machine's CPU time (all cores) spent busy during ``seconds``."""
    idle0, total0 = common.cpu_ticks()
    time.sleep(seconds)
    idle1, total1 = common.cpu_ticks()
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1)


def running(pattern: str) -> bool:
    """Whether a process whose command line matches ``pattern`` runs ('': never)."""
    found = bool(pattern) and subprocess.run(["pgrep", "-f", pattern], capture_output=True).stdout
    return bool(found)


def wait_quiet(pattern: str) -> dict[str, Any]:
    """Wait while a process matching ``pattern`` runs or the machine is busier than MAX_BUSY."""
    waited = 0
    while True:
        found, busy = running(pattern), busy_fraction()
        if not found and busy < MAX_BUSY:
            return {"waited_s": waited, "busy_before": round(busy, 3)}
        if waited == 0:
            why = f"{pattern!r} runs" if found else f"the machine is {busy:.0%} busy"
            print(f"  waiting: {why} ...", flush=True)
        time.sleep(60)
        waited += 60


def quiet_measure(measure: Any, pattern: str) -> dict[str, Any]:
    """``measure()`` on a quiet machine, redone (up to 5 times) while it is busy right after."""
    for attempt in range(1, 6):
        state = wait_quiet(pattern)
        result = measure()
        busy_after = busy_fraction(3.0)
        result.update(state, busy_after=round(busy_after, 3), attempts=attempt)
        if busy_after < MAX_BUSY and not running(pattern):
            return result
        print(f"    machine busy ({busy_after:.0%}) right after: measuring again", flush=True)
    result["disturbed"] = True
    return result


# -- the parts' training runs: bitflip, fetchreach, fetchpush-speed ----------------------------


class Part(NamedTuple):
    """A task of the parts' training runs: its env, budget, evaluations and algorithms."""

    env_id: str
    steps: int
    eval_every: int
    algos: tuple[str, ...]


TASKS = {
    "bitflip": Part("herkit/BitFlip-v0", 20_000, 1_000, ("dqn",)),
    "fetchreach": Part("FetchReach-v4", 10_000, 500, ("sac", "ddpg")),
    "fetchpush": Part("FetchPush-v4", 20_000, 20_000, ("sac", "ddpg")),
}
PARTS = ("bitflip", "fetchreach", "updates", "fetchpush-speed")
EVAL_EPISODES = 10
FETCH_N_ENVS = 2
"""Training envs on Fetch tasks, 0.5 updates per env step."""


def summarise(rows: list[dict[str, float]]) -> dict[str, Any]:
    """First evaluation at or above TARGET, final success, curve."""
    first = common.first_at(rows, TARGET)
    return {
        "first_0.9_env_steps": None if first is None else int(first["env_steps"]),
        "first_0.9_wall_s": None if first is None else round(first["wall_s"], 2),
        "final_success": rows[-1]["success_rate"],
        "env_steps": int(rows[-1]["env_steps"]),
        "updates": int(rows[-1]["updates"]),
        "wall_s": round(rows[-1]["wall_s"], 2),
        "curve": [[int(r["env_steps"]), round(r["wall_s"], 3), r["success_rate"]] for r in rows],
    }


def training_command(lib: str, task: str, algo: str, seed: int, out: Path) -> str:
    """The command of one run: ``herkit train`` or this script's ``--sb3-run``."""
    spec = TASKS[task]
    budget = f"--algo {algo} --steps {spec.steps} --eval-every {spec.eval_every}"
    if lib == "sb3":
        return f"python {SCRIPT} --sb3-run {task} {budget} --seed {seed} --out {out}"
    flags = f" --eval-episodes {EVAL_EPISODES}"
    if spec.env_id.startswith("Fetch"):
        flags += " --n-eval-envs 1"
    if spec.env_id == "FetchPush-v4":  # the settings SB3 is given (the earlier preset's)
        flags += f" --n-envs {FETCH_N_ENVS} --updates-per-step 0.5 --{algo}.batch-size {BATCH}"
    quiet = "--no-progress --no-tensorboard"
    return f"herkit train {spec.env_id} {budget}{flags} --seed {seed} --out {out} {quiet}"


def run_training(
    lib: str, task: str, algo: str, seed: int, out_root: Path, quiet: str
) -> dict[str, Any]:
    """One training run in a fresh process; its summary, curve and process wall time."""
    out = out_root / task / f"{lib}-{algo}-s{seed}"
    command = training_command(lib, task, algo, seed, out)
    argv = [sys.executable, *(["-m", "herkit"] if lib == "herkit" else []), *command.split()[1:]]
    print(f"  {lib} {algo} seed {seed}: {command}", flush=True)

    def measure() -> dict[str, Any]:
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        subprocess.run(argv, check=True, cwd=common.ROOT, stdout=subprocess.DEVNULL)
        process_wall = time.perf_counter() - started
        keys = ("env_steps", "updates", "wall_s", "success_rate")
        result = {"lib": lib, "algo": algo, "seed": seed, "command": command}
        return (
            result
            | summarise(common.progress(out, *keys))
            | {"process_wall_s": round(process_wall, 2)}
        )

    result = quiet_measure(measure, quiet)
    print(
        f"    final {result['final_success']:.2f}, 0.9 at {result['first_0.9_env_steps']} "
        f"steps / {result['first_0.9_wall_s']} s, loop {result['wall_s']} s, "
        f"process {result['process_wall_s']} s",
        flush=True,
    )
    return result


def sb3_run(task: str, algo: str, seed: int, out: Path, steps: int, eval_every: int) -> None:
    """The ``--sb3-run`` worker: SB3 on ``task``, written as ``herkit train`` writes."""
    from stable_baselines3.common.vec_env import VecNormalize

    env_id = TASKS[task].env_id
    fetch = env_id.startswith("Fetch")
    env, eval_env = sb3_envs(env_id, FETCH_N_ENVS if fetch else 1, seed, {})
    normalizer = None
    if fetch:
        env = normalizer = VecNormalize(
            env, norm_obs=True, norm_reward=False, clip_obs=5.0, gamma=0.98
        )
    model = sb3_model(algo, env, seed)
    rows = learn(model, steps, eval_every, eval_env, EVAL_EPISODES, seed, normalizer=normalizer)
    out.mkdir(parents=True, exist_ok=True)
    columns = ["env_steps", "updates", "wall_s", "success_rate"]
    with open(out / "progress.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    last = {key: rows[-1][key] for key in columns}
    summary = {"env_id": env_id, "algo": f"sb3-{algo}", "seed": seed, **last}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


def part_training(task: str, seeds: list[int], out_root: Path, quiet: str) -> dict[str, Any]:
    """Every run of ``task`` (libraries, algorithms, seeds) on a quiet machine; its record."""
    spec = TASKS[task]
    runs = [
        run_training(lib, task, algo, seed, out_root, quiet)
        for seed in seeds
        for lib in ("herkit", "sb3")
        for algo in spec.algos
    ]
    return {
        "env_id": spec.env_id,
        "steps": spec.steps,
        "eval_every": spec.eval_every,
        "eval_episodes": EVAL_EPISODES,
        "seeds": seeds,
        "runs": runs,
    }


def fmt(value: float | None, digits: int = 1) -> str:
    """``value`` with thousands separators and ``digits`` decimals; ``-`` for ``None``."""
    return "-" if value is None else f"{value:,.{digits}f}"


def run_label(run: dict[str, Any]) -> str:
    """``herkit SAC`` or ``SB3 DQN``: the library and algorithm of a run or row."""
    return f"{'SB3' if run['lib'] == 'sb3' else 'herkit'} {run['algo'].upper()}"


def busy_cell(entry: dict[str, Any]) -> str:
    """The "CPU busy before / after" cell of a measurement (see :func:`quiet_measure`)."""
    text = f"{entry['busy_before']:.0%} / {entry['busy_after']:.0%}"
    return text + (" (disturbed)" if entry.get("disturbed") else "")


def training_table(part: dict[str, Any]) -> list[str]:
    """The report's table of a part's runs: time to 0.9, final success, wall times."""
    columns = ["library", "seed", "env steps to 0.9", "wall s to 0.9", "final success"]
    columns += ["updates", "loop wall s", "process wall s", "CPU busy before / after"]
    rows = [
        [
            run_label(run),
            run["seed"],
            "not reached"
            if run["first_0.9_env_steps"] is None
            else f"{run['first_0.9_env_steps']:,}",
            fmt(run["first_0.9_wall_s"]),
            f"{run['final_success']:.2f}",
            f"{run['updates']:,}",
            f"{run['wall_s']:.1f}",
            f"{run['process_wall_s']:.1f}",
            busy_cell(run),
        ]
        for run in part["runs"]
    ]
    return common.markdown(columns, "lrrrrrrrr", rows).splitlines()


def by_run(part: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """A part's runs by library, algorithm and seed."""
    return {(r["lib"], r["algo"], r["seed"]): r for r in part["runs"]}


def speedup_text(part: dict[str, Any], herkit_algo: str, sb3_algo: str) -> str:
    """Per seed, SB3 / herkit wall s to 0.9: ``seed 0: 2.10x, seed 1: > 3.00x`` (a bound
    where one side never got there)."""
    by, texts = by_run(part), []
    for seed in part["seeds"]:
        h, s = by.get(("herkit", herkit_algo, seed)), by.get(("sb3", sb3_algo, seed))
        if h is None or s is None:
            continue
        ht, st = h["first_0.9_wall_s"], s["first_0.9_wall_s"]
        if ht is None and st is None:
            texts.append(f"seed {seed}: neither reached 0.9")
        else:
            bound = "" if ht is not None and st is not None else "> " if ht is not None else "< "
            sb3_s, herkit_s = (st, s["wall_s"])[st is None], (ht, h["wall_s"])[ht is None]
            texts.append(f"seed {seed}: {bound}{sb3_s / herkit_s:.2f}x")
    return ", ".join(texts)


def budget_ratios(part: dict[str, Any], herkit_algo: str, sb3_algo: str) -> str:
    """Per seed, SB3 / herkit loop wall s of the whole budget: ``2.10x, 1.95x``."""
    by = by_run(part)
    pairs = [
        (by.get(("sb3", sb3_algo, seed)), by.get(("herkit", herkit_algo, seed)))
        for seed in part["seeds"]
    ]
    return ", ".join(f"{s['wall_s'] / h['wall_s']:.2f}x" for s, h in pairs if s and h)


def first_differences(part: dict[str, Any], title: str) -> str:
    """A sentence naming the runs where the libraries first reached 0.9 at different steps."""
    by = {key: run["first_0.9_env_steps"] for key, run in by_run(part).items()}
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


def commands_block(part: dict[str, Any], seed: int | None = None) -> list[str]:
    """The report's block of a part's commands (of one seed where ``seed`` is given)."""
    runs = [run for run in part["runs"] if seed is None or run["seed"] == seed]
    return ["```bash", *sorted({run["command"] for run in runs}), "```"]


def bitflip_section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 1 of docs/sb3.md (bit flipping), and its line of the summary of speed-ups."""
    ratio_text, budget = speedup_text(part, "dqn", "dqn"), budget_ratios(part, "dqn", "dqn")
    h, s = (
        [r["first_0.9_wall_s"] for r in part["runs"] if r["lib"] == lib and r["first_0.9_wall_s"]]
        for lib in ("herkit", "sb3")
    )
    lines = [
        f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
        f"env steps ({part['eval_episodes']} deterministic episodes on a separate env), "
        f"seeds {', '.join(map(str, part['seeds']))}.",
        "",
        *training_table(part),
        "",
        f"Medians over the seeds that reached 0.9: herkit {fmt(median(h))} s, "
        f"SB3 {fmt(median(s))} s of loop wall time. Wall time to 0.9, SB3 / herkit: "
        f"{ratio_text}. Loop wall time of the whole budget (same env steps, same number "
        f"of updates), SB3 / herkit, seeds in order: {budget}.",
        "",
        "![success vs env steps and wall time](figures/sb3_bitflip.png)",
        "",
        "Commands (seed 0; other seeds change `--seed`):",
        "",
        *commands_block(part, part["seeds"][0]),
    ]
    verdict = (
        f"- Bit flipping, DQN+HER: wall time to 0.9, SB3 / herkit: {ratio_text}; loop wall "
        f"time of the whole budget, SB3 / herkit: {budget}."
    )
    return lines, [verdict]


def median(values: list[float]) -> float | None:
    """The median of ``values``; None where there are none."""
    return statistics.median(values) if values else None


def plot_bitflip(part: dict[str, Any], path: Path) -> None:
    """Success against env steps and against loop wall time, one line per run, to ``path``."""
    with common.figure(path, 1, 2, figsize=(11, 4)) as (fig, axes):
        colors = {"herkit": "tab:blue", "sb3": "tab:orange"}
        labelled: set[str] = set()
        for run in part["runs"]:
            points = np.asarray(run["curve"], float)
            label = None if run["lib"] in labelled else run_label(run) + "+HER"
            labelled.add(run["lib"])
            for ax, column in ((axes[0], 0), (axes[1], 1)):
                style = {"color": colors[run["lib"]], "alpha": 0.8, "marker": "."}
                ax.plot(points[:, column], points[:, 2], label=label, **style)
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


PAIRS = (("sac", "sac"), ("ddpg", "ddpg"), ("ddpg", "sac"))
"""(herkit, SB3) algorithms compared on Fetch: like with like, and herkit's preset with
SB3's usual HER algorithm."""


def fetchreach_section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 2 of docs/sb3.md (FetchReach), and its lines of the summary of speed-ups."""
    lines = [
        f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
        f"env steps ({part['eval_episodes']} deterministic episodes on one separate env), "
        f"seeds {', '.join(map(str, part['seeds']))}.",
        "",
        *training_table(part),
        "",
    ]
    verdicts = []
    for h_algo, s_algo in PAIRS:
        ratio_text = speedup_text(part, h_algo, s_algo)
        if not ratio_text:
            continue
        pair = f"herkit {h_algo.upper()} vs SB3 {s_algo.upper()}" + (
            "" if h_algo == s_algo else " (herkit's default preset; different algorithms)"
        )
        budget = budget_ratios(part, h_algo, s_algo)
        lines.append(
            f"- {pair}: wall time to 0.9, SB3 / herkit: {ratio_text}; loop wall time of "
            f"the whole budget, SB3 / herkit: {budget}."
        )
        verdicts.append(
            f"- FetchReach, {pair}: wall time to 0.9, SB3 / herkit: {ratio_text}; whole "
            f"budget: {budget}."
        )
    seed = part["seeds"][0]
    return [*lines, "", "Commands (seed 0):", "", *commands_block(part, seed)], verdicts


def fetchreach_note(part: dict[str, Any]) -> str:
    """The report's reading notes on the FetchReach runs (may be empty)."""
    text = first_differences(part, "FetchReach")
    firsts = {r["first_0.9_env_steps"] for r in part["runs"]}
    if len(firsts) == 1 and None not in firsts:
        (first,) = firsts
        text += (
            f" On FetchReach every run first reached 0.9 at {first:,} env steps, after "
            f"1,000 random-action steps and only about {(first - 1000) // 2:,} updates, "
            "so its time to 0.9 mostly measures env stepping, action selection and the "
            "evaluations, not update speed."
        )
    return text


def speed_section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 3b of docs/sb3.md (a short FetchPush run), and its lines of the summary."""
    columns = ["library", "env steps", "updates", "loop wall s", "env steps/s"]
    columns += ["updates/s in the loop", "success at the end", "process wall s"]
    rows = [
        [
            run_label(run),
            f"{run['env_steps']:,}",
            f"{run['updates']:,}",
            f"{run['wall_s']:.1f}",
            f"{run['env_steps'] / run['wall_s']:,.0f}",
            f"{run['updates'] / run['wall_s']:,.1f}",
            f"{run['final_success']:.2f}",
            f"{run['process_wall_s']:.1f}",
        ]
        for run in part["runs"]
    ]
    lines = [
        f"{part['steps']:,} env steps, seed {part['seeds'][0]}, settings as in "
        "FetchReach (2 envs, 0.5 updates per env step after 1,000 random steps, 3x256, "
        "batch 256); one evaluation (10 episodes) at the end, inside the loop time. "
        f"{part['steps']:,} env steps are far too few to learn FetchPush; the success "
        "column is only reported, not compared.",
        "",
        common.markdown(columns, "lrrrrrrr", rows),
        "",
        *commands_block(part),
    ]
    runs = {(r["lib"], r["algo"]): r for r in part["runs"]}
    verdicts = []
    for h_algo, s_algo in PAIRS:
        h, s = runs.get(("herkit", h_algo)), runs.get(("sb3", s_algo))
        if h and s:
            ratio = (h["env_steps"] / h["wall_s"]) / (s["env_steps"] / s["wall_s"])
            verdicts.append(
                f"- FetchPush {part['steps']:,}-step training, herkit {h_algo.upper()} vs "
                f"SB3 {s_algo.upper()}: env steps/s, herkit / SB3: {ratio:.2f}x."
            )
    return lines, verdicts


# -- the updates part ----------------------------------------------------------------------------

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


# -- the report: docs/sb3.md ------------------------------------------------------------------

RESULTS = common.DOCS / "sb3.json"
REPORT = common.DOCS / "sb3.md"
"""The report: its marked parts (``<!-- sb3 NAME -->``) are made from RESULTS."""
MARKED = common.marked("sb3")
SECTIONS = {
    "bitflip": bitflip_section,
    "fetchreach": fetchreach_section,
    "updates": updates_section,
    "fetchpush_speed": speed_section,
}
"""Each part's key in RESULTS and the function that writes its section of the report."""


def machine_part(results: dict[str, Any]) -> list[str]:
    """The report's machine, libraries, herkit's commit per part and each part's wall time."""
    m = results["machine"]
    versions = m.get("versions") or {key.replace("_", "-"): value for key, value in m.items()}
    names = ("torch", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium")
    names += ("gymnasium-robotics", "mujoco")
    commits = [
        f"{name} `{part['code']['commit'][:12]}`"
        + (" (with uncommitted changes in src/)" if part["code"]["src_modified"] else "")
        for name, part in results.items()
        if name != "machine" and isinstance(part, dict)
    ]
    minutes = {name: results[name]["part_wall_s"] / 60 for name in SECTIONS if name in results}
    return [
        "```text",
        *m.get("lscpu", [f"{m.get('processor')}, {m.get('cpus')} CPUs"]),
        "```",
        "",
        f"Python {m['python']}, "
        + ", ".join(f"{name} {versions.get(name)}" for name in names)
        + ". herkit's commit when each part started: "
        + ", ".join(commits)
        + ".",
        "",
        "Wall time of each part (including process start-ups and any waiting): "
        + ", ".join(f"{name} {value:.1f} min" for name, value in minutes.items())
        + f"; total {sum(minutes.values()):.1f} min.",
    ]


def speedups_part(results: dict[str, Any]) -> list[str]:
    """The summary of speed-ups, and how to read "time to 0.9" next to "whole budget"."""
    note = (
        'Reading these numbers: "time to 0.9" is read at the evaluations, so it moves in '
        "whole evaluation intervals. Where both libraries first reach 0.9 at the same "
        "evaluation, its ratio is the ratio of the wall time spent up to there; where they "
        "reach it at different evaluations, sample efficiency decides as well, and the "
        "ratio can fall below 1 although herkit is faster per step. The whole-budget ratio "
        "compares the same number of env steps and updates, i.e. throughput."
    )
    if "bitflip" in results:
        note += first_differences(results["bitflip"], "Bit flipping")
    if "fetchreach" in results:
        note += fetchreach_note(results["fetchreach"])
    verdicts = [
        line
        for name, section in SECTIONS.items()
        if name in results
        for line in section(results[name])[1]
    ]
    return [*verdicts, "", note]


def report_part(results: dict[str, Any], name: str) -> str | None:
    """The marked part ``name`` of the report made from ``results`` (None: not run yet)."""
    if name == "machine":
        return "\n".join(machine_part(results))
    if name == "speedups":
        return "\n".join(speedups_part(results))
    return "\n".join(SECTIONS[name](results[name])[0]) if name in results else None


def fill_report(text: str, results: dict[str, Any]) -> str:
    """The report ``text`` with its marked parts made again from ``results``."""
    return common.fill_marked(text, MARKED, lambda name: report_part(results, name))


def write_report(results: dict[str, Any], path: Path = REPORT) -> None:
    """docs/sb3.md (or ``path``) with its marked parts made again from ``results``."""
    path.write_text(fill_report(common.source(path).read_text(), results))


def run_compare(options: argparse.Namespace) -> None:
    """Run the parts asked for (or a hidden worker), then write sb3.json, sb3.md and the figure."""
    if options.sb3_run:
        out = Path(options.out)
        sb3_run(options.sb3_run, options.algo, options.seed, out, options.steps, options.eval_every)
        return
    if options.updates_run:
        settings = (options.threads, Path(options.data), options.buffer_size)
        row = updates_run(
            options.updates_run, options.algo, *settings, options.updates, options.repeats
        )
        print(json.dumps(row))
        return
    os.chdir(common.ROOT)  # run directories and the commands shown are relative to the repository
    results = common.read_json(RESULTS)
    if not options.report_only:
        results["machine"] = common.machine()
        for name in options.only or PARTS:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            out_root = Path(options.out)
            if name == "updates":
                part = part_updates(out_root / "updates", options.quiet_pattern)
            else:
                task = "fetchpush" if name == "fetchpush-speed" else name
                seeds = options.seeds[:1] if name == "fetchpush-speed" else options.seeds
                part = part_training(task, seeds, out_root, options.quiet_pattern)
            part["part_wall_s"] = round(time.perf_counter() - started, 1)
            part["code"] = common.code_version()
            results[name.replace("-", "_")] = part
            RESULTS.write_text(json.dumps(results, indent=1))
    if "bitflip" in results:
        plot_bitflip(results["bitflip"], common.FIGURES / "sb3_bitflip.png")
    write_report(results, REPORT)
    print(f"wrote {RESULTS} and {REPORT}")


# -- buffer: SB3's algorithms on herkit's buffer (herkit.sb3) against SB3's own ------------------

BUFFER_DOC = """SB3's own algorithms with herkit's buffer (herkit.sb3) against its HerReplayBuffer.

All but ``replay_buffer_class`` is the same (:func:`sb3_model`); per task and seed the
buffers run at once, one process and core each, the time in ``sample`` measured apart.
``--buffers`` names herkit.sb3's other settings (:data:`VARIANTS`). See docs/guide-sb3.md.

    python benchmarks/sb3_compare.py buffer                    # the default tasks, 3 seeds
    python benchmarks/sb3_compare.py buffer --tasks bitflip --seeds 0
    python benchmarks/sb3_compare.py buffer --table            # docs/experiment-log.md's tables
    python benchmarks/sb3_compare.py buffer --same-data        # what each buffer samples
    python benchmarks/sb3_compare.py buffer --tasks fetchreach-td3 --buffers herkit-finished
    python benchmarks/sb3_compare.py buffer --tasks bitflip --buffers herkit herkit-n3  # n-step
    python benchmarks/sb3_compare.py buffer --tasks parking --buffers herkit-computed --seeds 0 1
    python benchmarks/sb3_compare.py buffer --paired sb3 herkit   # differences, 95 % intervals

Writes sb3_buffer.json (merged by task, buffer, seed).
"""

BUFFER_RECORD = common.DOCS / "sb3_buffer.json"


@dataclasses.dataclass(frozen=True)
class Task:
    """A task of the buffer comparison: its env (and keyword arguments), algorithm, budget,
    evaluations and the info field of an episode's success."""

    env_id: str
    algo: str
    n_envs: int
    steps: int
    eval_every: int
    eval_episodes: int
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    success_key: str = "is_success"


MAZE = {"continuing_task": False, "max_episode_steps": 100}
BUFFER_TASKS = {
    "bitflip": Task("herkit/BitFlip-v0", "dqn", 1, 20_000, 1_000, 10, {"n_bits": 15}),
    "pointreach": Task("herkit/PointReach-v0", "td3", 1, 4_000, 500, 20),
    "fetchreach": Task("FetchReach-v4", "sac", 2, 10_000, 500, 10),
    "fetchreach-td3": Task("FetchReach-v4", "td3", 2, 10_000, 500, 10),
    "pointmaze": Task("PointMaze_UMaze-v3", "sac", 1, 20_000, 2_000, 20, MAZE, "success"),
    "pointreach-ddpg": Task("herkit/PointReach-v0", "ddpg", 1, 4_000, 500, 20),
    "pointreach-tqc": Task("herkit/PointReach-v0", "tqc", 1, 4_000, 500, 20),
    "parking": Task("highway_env:parking-v0", "sac", 1, 20_000, 2_000, 10),
    "hazard": Task(
        "hazard_reach:HazardReach-v0", "sac", 1, 6_000, 1_000, 20, {"distance_threshold": 0.1}
    ),
}
DEFAULT_TASKS = ("bitflip", "pointreach", "fetchreach", "fetchreach-td3", "pointmaze")
BUFFERS = ("sb3", "herkit")
VARIANTS = {
    "herkit-finished": {},
    "herkit-n3": {"n_steps": 3, "gamma": 0.98},
    "herkit-terminal": {"terminal_on_success": True},
    "herkit-computed": {},
    "herkit-sb3rewards": {"terminal_on_success": False},
    "herkit-terms": {"keep_env_terms": True, "terminal_on_success": False},
    "herkit-ends": {"keep_env_terms": False, "terminal_on_success": True},
    "herkit-sb3rules": {"keep_env_terms": False, "terminal_on_success": False},
    "herkit-both": {"keep_env_terms": True, "terminal_on_success": None},
}
"""Other buffers ``--buffers`` can name, with their herkit.sb3 settings (or, for
:data:`EXPERIMENTS`, a subclass made here)."""


def finished_episodes_only() -> type:
    """An experiment: herkit.sb3's buffer sampling only finished episodes, as SB3's does."""
    from herkit import sb3

    class FinishedEpisodesOnly(sb3.HerReplayBuffer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            storage = self.buffer.storage
            sample_slots = storage.sample_slots
            storage.sample_slots = (  # type: ignore[method-assign]
                lambda n, rng, closed_only: sample_slots(n, rng, True)
            )

    return FinishedEpisodesOnly


def computed_rewards_only() -> type:
    """An experiment: herkit.sb3's buffer storing ``compute_reward`` as each step's reward."""
    from herkit import sb3

    class ComputedRewardsOnly(sb3.HerReplayBuffer):
        def add(
            self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any
        ) -> None:
            computed = self._compute_reward(
                np.asarray(next_obs["achieved_goal"]), np.asarray(next_obs["desired_goal"]), {}
            )
            super().add(obs, next_obs, action, computed, done, infos)

    return ComputedRewardsOnly


def sb3_rewards() -> type:
    """An experiment: herkit.sb3's buffer giving ``compute_reward`` alone to relabelled
    samples and the env's reward to real ones, as SB3's does."""
    from herkit import sb3

    class Sb3Rewards(sb3.HerReplayBuffer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            inner = self.buffer
            goals, sample = inner.relabeller.goals, inner.sample
            relabelled: list[Any] = [None]

            def recorded(*goal_args: Any) -> Any:
                goal, relabel = goals(*goal_args)
                relabelled[0] = relabel
                return goal, relabel

            def sampled(*sample_args: Any, **sample_kwargs: Any) -> Any:
                batch = sample(*sample_args, **sample_kwargs)
                if relabelled[0] is None:
                    return batch
                computed = self._compute_reward(batch.next_achieved_goal, batch.goal, {})
                reward = np.where(relabelled[0], computed, batch.reward).astype(np.float32)
                return dataclasses.replace(batch, reward=reward)

            inner.relabeller.goals = recorded
            inner.sample = sampled  # type: ignore[method-assign]

    return Sb3Rewards


EXPERIMENTS = {
    "herkit-finished": finished_episodes_only,
    "herkit-computed": computed_rewards_only,
    "herkit-sb3rewards": sb3_rewards,
}


def buffer_model(task: str, buffer: str, env: Any, seed: int) -> Any:
    """The SB3 model of ``task`` with SB3's HER buffer or one of herkit's."""
    import stable_baselines3

    from herkit import sb3

    buffer_class = EXPERIMENTS[buffer]() if buffer in EXPERIMENTS else sb3.HerReplayBuffer
    if buffer == "sb3":
        buffer_class = stable_baselines3.HerReplayBuffer
    her = {"n_sampled_goal": 4, "goal_selection_strategy": "future", **VARIANTS.get(buffer, {})}
    return sb3_model(BUFFER_TASKS[task].algo, env, seed, buffer_class, her)


def buffer_worker(task: str, buffer: str, seed: int) -> dict[str, Any]:
    """One training run (the ``--worker``): its evaluations and the time spent sampling."""
    spec = BUFFER_TASKS[task]
    env, eval_env = sb3_envs(spec.env_id, spec.n_envs, seed, spec.kwargs)
    model = buffer_model(task, buffer, env, seed)
    sampling = [0.0]
    replay = model.replay_buffer
    sample = replay.sample

    def timed(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        try:
            return sample(*args, **kwargs)
        finally:
            sampling[0] += time.perf_counter() - begin

    replay.sample = timed
    started = time.perf_counter()
    eval_args = (eval_env, spec.eval_episodes, seed, spec.success_key)
    rows = learn(model, spec.steps, spec.eval_every, *eval_args)
    return {
        "rows": [
            {
                "env_steps": r["env_steps"],
                "wall_s": round(r["wall_s"], 2),
                "success_rate": r["success_rate"],
            }
            for r in rows
        ],
        "wall_s": round(time.perf_counter() - started, 1),
        "sample_s": round(sampling[0], 2),
        "updates": int(model._n_updates),
    }


def run_pair(task: str, seed: int, buffers: tuple[str, ...]) -> None:
    """The buffers' runs of ``task`` with ``seed``, at once; each recorded as it ends."""
    started = {
        buffer: subprocess.Popen(
            [sys.executable, __file__, "buffer", "--worker", task, buffer, str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for buffer in buffers
    }
    for buffer, process in started.items():
        out, err = process.communicate()
        if process.returncode:
            raise RuntimeError(f"{task} {buffer} seed {seed} failed:\n{err[-3000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        rows = result["rows"]
        solved = common.first_at(rows)
        run = {
            "task": task,
            "buffer": buffer,
            "seed": seed,
            **result,
            "first_0.9": solved,
            "final_success": rows[-1]["success_rate"],
            "settings": dataclasses.asdict(BUFFER_TASKS[task]),
            "concurrent_with": [name for name in buffers if name != buffer],
            "code": common.code_version(),
        }
        common.add_run(BUFFER_RECORD, f"{task}/{buffer}/seed{seed}", run, common.machine())
        print(
            f"{task} {buffer} seed {seed}: first 0.9 {solved}, final "
            f"{rows[-1]['success_rate']:.2f}, {result['wall_s']} s "
            f"({result['sample_s']} s sampling)",
            flush=True,
        )


def same_data(task: str, steps: int, batches: int) -> dict[str, dict[str, float]]:
    """Both buffers fed the same ``steps`` random steps, then ``batches`` of 4,096 sampled:
    what each hands the learner."""
    import stable_baselines3

    from herkit import sb3

    spec = BUFFER_TASKS[task]
    env, _ = sb3_envs(spec.env_id, spec.n_envs, 0, spec.kwargs)
    spaces = (100_000, env.observation_space, env.action_space, env, "cpu")
    kwargs = {"n_envs": spec.n_envs, "n_sampled_goal": 4}
    buffers = {
        "sb3": stable_baselines3.HerReplayBuffer(*spaces, **kwargs),
        "herkit": sb3.HerReplayBuffer(*spaces, seed=0, **kwargs),
    }
    env.action_space.seed(0)
    obs = env.reset()
    for _ in range(steps // spec.n_envs):
        action = np.array([env.action_space.sample() for _ in range(spec.n_envs)])
        new_obs, reward, done, infos = env.step(action)
        nxt = {key: value.copy() for key, value in new_obs.items()}
        for i in np.flatnonzero(done):
            for key in nxt:
                nxt[key][i] = infos[i]["terminal_observation"][key]
        for buffer in buffers.values():
            buffer.add(obs, nxt, action, reward, done, infos)
        obs = new_obs
    stats = {}
    for name, buffer in buffers.items():
        batches_drawn = [buffer.sample(4096) for _ in range(batches)]
        reward = np.concatenate([batch.rewards.numpy().ravel() for batch in batches_drawn])
        done = np.concatenate([batch.dones.numpy().ravel() for batch in batches_drawn])
        stats[name] = {
            "samples": int(reward.size),
            "reward_mean": float(reward.mean()),
            "reward_std": float(reward.std()),
            "share_reward_max": float((reward == reward.max()).mean()),
            "done_mean": float(done.mean()),
        }
    return stats


def task_name(task: str) -> str:
    """``bitflip (DQN)``: a task as the tables name it."""
    return f"{task} ({BUFFER_TASKS[task].algo.upper()})"


def buffer_table(tasks: list[str]) -> str:
    """Markdown: per task and buffer, the success over the evaluations, at four budgets and
    over the last 4; env steps to 0.9, wall times and time in ``sample`` per seed."""
    runs = common.read_json(BUFFER_RECORD)["runs"]

    def mean(values: Any) -> str:
        return f"{np.mean(list(values)):.2f}"

    def at(run: dict[str, Any], mark: int) -> float:
        done = [r for r in run["rows"] if r["env_steps"] <= mark]
        return float(done[-1]["success_rate"]) if done else 0.0

    rows = []
    for task in tasks:
        steps = BUFFER_TASKS[task].steps
        marks = [steps // 4, steps // 2, 3 * steps // 4, steps]
        for buffer in (*BUFFERS, *VARIANTS):
            mine = sorted(
                (r for r in runs.values() if r["task"] == task and r["buffer"] == buffer),
                key=lambda r: r["seed"],
            )
            if not mine:
                continue
            rows.append(
                [
                    task_name(task),
                    buffer,
                    ", ".join(str(r["seed"]) for r in mine),
                    mean(np.mean([r["success_rate"] for r in run["rows"]]) for run in mine),
                    " / ".join(mean(at(r, m) for r in mine) for m in marks),
                    mean(last_evaluations(run) for run in mine),
                    " / ".join(
                        f"{r['first_0.9']['env_steps']:,}" if r["first_0.9"] else "never"
                        for r in mine
                    ),
                    " / ".join(f"{r['wall_s']:.0f}" for r in mine),
                    " / ".join(f"{r['sample_s']:.1f}" for r in mine),
                ]
            )
    columns = ["task", "buffer", "seeds", "success: all evaluations"]
    columns += ["at 1/4, 1/2, 3/4, all of the env steps", "last 4 evaluations"]
    columns += ["env steps to 0.9", "wall s, whole run", "s in `sample`"]
    return common.markdown(columns, "lllrlrlll", rows)


def last_evaluations(run: dict[str, Any], count: int = 4) -> float:
    """A run's success over its last ``count`` evaluations."""
    return float(np.mean([row["success_rate"] for row in run["rows"][-count:]]))


def interval(differences: list[float], draws: int = 20_000) -> tuple[float, float]:
    """95 % bootstrap interval of the mean of paired differences (seeded: reproducible)."""
    values = np.asarray(differences)
    rng = np.random.default_rng(0)
    means = rng.choice(values, size=(draws, len(values))).mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def paired(runs: dict[str, Any], task: str, first: str, second: str) -> dict[str, Any] | None:
    """The seeds of ``task`` run with both buffers: their success over the last 4
    evaluations, the mean difference with its 95 % interval, env steps to 0.9 (or None)."""
    pairs = [
        (runs.get(f"{task}/{first}/seed{s}"), runs.get(f"{task}/{second}/seed{s}"))
        for s in range(1_000)
    ]
    pairs = [(a, b) for a, b in pairs if a and b]
    if not pairs:
        return None
    a = [last_evaluations(x) for x, _ in pairs]
    b = [last_evaluations(y) for _, y in pairs]
    both = [
        (x["first_0.9"]["env_steps"], y["first_0.9"]["env_steps"])
        for x, y in pairs
        if x["first_0.9"] and y["first_0.9"]
    ]
    solved = [sum(bool(run["first_0.9"]) for run in side) for side in zip(*pairs, strict=True)]
    return {
        "seeds": len(pairs),
        "first": float(np.mean(a)),
        "second": float(np.mean(b)),
        "solved": solved,
        "difference": float(np.mean(b) - np.mean(a)),
        "interval": interval([y - x for x, y in zip(a, b, strict=True)]),
        "steps": [float(np.mean([pair[side] for pair in both])) for side in (0, 1)] if both else [],
    }


MIN_INTERVAL_SEEDS = 3
"""Paired seeds below which no interval is shown."""


def difference(found: dict[str, Any]) -> str:
    """The mean difference of :func:`paired`, with its interval where there are seeds enough."""
    if found["seeds"] < MIN_INTERVAL_SEEDS:
        return f"{found['difference']:+.2f} (no interval: {found['seeds']} seeds)"
    low, high = found["interval"]
    return f"{found['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"


def paired_table(tasks: list[str], first: str, second: str) -> str:
    """Markdown: per task, :func:`paired`'s figures of ``first`` and ``second``."""
    runs = common.read_json(BUFFER_RECORD)["runs"]
    rows = []
    for task in tasks:
        found = paired(runs, task, first, second)
        if found is not None:
            rows.append(
                [
                    task_name(task),
                    found["seeds"],
                    f"{found['first']:.2f}",
                    f"{found['second']:.2f}",
                    " / ".join(map(str, found["solved"])),
                    difference(found),
                    " / ".join(f"{mean:,.0f}" for mean in found["steps"]) or "-",
                ]
            )
    columns = ["task", "seeds", f"{first}: last 4 evaluations", f"{second}: last 4 evaluations"]
    columns += [f"reached 0.9 ({first} / {second})", "difference, 95 % interval"]
    columns += [f"env steps to 0.9 ({first} / {second})"]
    return common.markdown(columns, "lrrrlll", rows)


RULES = {
    "herkit-sb3rules": ("no", "no"),
    "herkit-terms": ("yes", "no"),
    "herkit-ends": ("no", "yes"),
    "herkit-both": ("yes", "from the env"),
    "herkit": ("no (default)", "from the env, with terms (default)"),
}
"""herkit.sb3's buffers by their rules for relabelled samples: the env's terms kept in the
reward, and a reached goal terminal."""


def rules_table(tasks: list[str]) -> str:
    """Markdown: per task and buffer of :data:`RULES`, its paired figures against SB3's."""
    runs = common.read_json(BUFFER_RECORD)["runs"]
    rows = []
    for task in tasks:
        for buffer, (terms, ends) in RULES.items():
            found = paired(runs, task, "sb3", buffer)
            if found is not None:
                figures = [f"{found['first']:.2f}", f"{found['second']:.2f}", difference(found)]
                rows.append([task_name(task), buffer, terms, ends, found["seeds"], *figures])
    columns = ["task", "herkit.sb3", "env's terms kept", "reached goal terminal", "seeds"]
    columns += ["sb3: last 4 evaluations", "herkit.sb3: last 4 evaluations"]
    columns += ["difference, 95 % interval"]
    return common.markdown(columns, "llllrrrl", rows)


def run_buffer(options: argparse.Namespace) -> None:
    """The ``buffer`` subcommand: run the pairs of runs, or print a table of the records."""
    if options.worker:
        task, name, seed = options.worker
        print(json.dumps(buffer_worker(task, name, int(seed))))
    elif options.table:
        print(buffer_table(options.tasks))
    elif options.paired:
        print(paired_table(list(BUFFER_TASKS), *options.paired))
    elif options.rules:
        print(rules_table(options.rules))
    elif options.same_data:
        record = common.read_json(BUFFER_RECORD)
        found = record.get("same_data", {})
        for task in options.tasks:
            found[task] = {
                "steps": 6_000,
                "code": common.code_version(),
                **same_data(task, 6_000, 25),
            }
            print(task, json.dumps(found[task]), flush=True)
        BUFFER_RECORD.write_text(json.dumps(record | {"same_data": found}, indent=1))
    else:
        for task in options.tasks:
            for seed in options.seeds:
                run_pair(task, seed, tuple(options.buffers))


# -- tqc: SB3's TQC with rl-zoo's FetchPush settings against herkit's records --------------------

TQC_DOC = """SB3's TQC with rl-zoo's FetchPush settings against herkit, at equal wall time.

    python benchmarks/sb3_compare.py tqc --minutes 20     # one SB3 run, then the table
    python benchmarks/sb3_compare.py tqc --table          # the table from the records

Writes sb3_tqc.json and prints it beside fetch.json's FetchPush-v4 records at that wall time.
"""

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


def run_zoo(options: argparse.Namespace) -> None:
    """The ``zoo`` subcommand: docs/guide-sb3.md's rl-zoo3 line against README's SB3
    example, env steps per second of ``learn()`` each (target: within 1.5x); sb3_zoo.json."""
    guide, readme = (common.ROOT / "docs" / "guide-sb3.md").read_text(), common.ROOT / "README.md"
    zoo_line = re.search(r"^python (-m rl_zoo3\.train .*)$", guide, re.M)
    example = re.search(r"sb3 example: start -->\n```python\n(.*?)```", readme.read_text(), re.S)
    assert zoo_line and example, "the zoo line or the SB3 example is gone from the docs"
    timed = re.sub(
        r"^(model\.learn\(.*)$",
        r"import time; _t = time.perf_counter()\n\1\n"
        r"print(f'fps {model.num_timesteps / (time.perf_counter() - _t):.1f}')",
        example.group(1),
        flags=re.M,
    )
    speeds, load_at_start = {}, os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "herkit_her.yml").write_text(guide.split("```yaml\n")[1].split("```")[0])
        zoo = [*zoo_line.group(1).split(), "-n", str(options.steps), "--eval-freq", "-1"]
        for name, command in (("zoo", ["-u", *zoo]), ("sb3", ["-c", timed])):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, *command], cwd=folder, capture_output=True)
            assert done.returncode == 0, done.stderr.decode()[-3000:]
            fps = re.findall(r"fps\s*\|?\s*([\d.]+)", done.stdout.decode())[-1]
            speeds[name] = {
                "env_steps_per_s": float(fps),
                "process_s": round(time.perf_counter() - started, 1),
            }
            print(f"  {name}: {fps} env steps/s", flush=True)
    ratio = speeds["sb3"]["env_steps_per_s"] / speeds["zoo"]["env_steps_per_s"]
    print(f"the SB3 example / the zoo line, env steps per second: {ratio:.2f} (target <= 1.5)")
    record = {
        "command": " ".join(["python", *sys.argv]),
        "zoo_line": " ".join(zoo),
        **speeds,
        "sb3_over_zoo": round(ratio, 2),
        "load_average": [round(load_at_start, 1), round(os.getloadavg()[0], 1)],
        "machine": common.machine(),
        "code": common.code_version(),
    }
    (common.DOCS / "sb3_zoo.json").write_text(json.dumps(record, indent=1) + "\n")


# -- pointmaze and parking: SAC+HER on an env herkit did not write, both libraries -------------

ONE_ENV_DOC = """SAC+HER on one env that herkit's authors did not write: herkit beside SB3.

``pointmaze`` (PointMaze_UMaze-v3) and ``parking`` (highway-env's parking-v0) as ``herkit
train`` launches them, SB3's SAC with herkit's settings (:func:`sb3_model`); both evaluate
every 2,000 env steps, one thread each, one after the other. See docs/experiment-log.md.

    python benchmarks/sb3_compare.py pointmaze                 # seed 0, 50,000 env steps, both
    python benchmarks/sb3_compare.py pointmaze --seeds 0 1 2 --only herkit
    python benchmarks/sb3_compare.py pointmaze --only herkit --algo td3
    python benchmarks/sb3_compare.py parking --seeds 0 1 2     # 30,000 env steps, both
    python benchmarks/sb3_compare.py parking --table           # the success at every budget

Writes pointmaze.json or parking.json (merged by library and seed) and its figure.
"""


class OneEnv(NamedTuple):
    """How each library runs a single-env comparison: gymnasium's id and the module that
    registers it (SB3's), the env and flags of ``herkit train``, the budget and evaluations."""

    env_id: str
    module: str
    herkit_id: str
    herkit_flags: tuple[str, ...]
    kwargs: dict[str, Any]
    steps: int
    eval_episodes: int
    success_key: str
    title: str


EVAL_EVERY = 2_000
COLUMNS = ("env_steps", "wall_s", "eval_s", "success_rate")
ONE_ENV = {
    "pointmaze": OneEnv(
        "PointMaze_UMaze-v3",
        "gymnasium_robotics",
        "PointMaze_UMaze-v3",
        (),
        MAZE,
        50_000,
        20,
        "success",
        "PointMaze_UMaze-v3 (continuing_task=False, 100-step episodes), one thread each",
    ),
    "parking": OneEnv(
        "parking-v0",
        "highway_env",
        "highway_env:parking-v0",
        ("--eval-every", str(EVAL_EVERY), "--eval-episodes", "10"),
        {},
        30_000,
        10,
        "is_success",
        "highway-env parking-v0: SAC+HER (3 x 256, lr 1e-3, batch 256, future k=4), one "
        "thread each",
    ),
}


def one_env_rows(
    name: str, library: str, algo: str, seed: int, steps: int
) -> list[dict[str, float]]:
    """One run of ``herkit train`` or of SB3's SAC on the env ``name``; its evaluations."""
    spec = ONE_ENV[name]
    if library == "herkit":
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            flags = f"--algo {algo} --seed {seed} --steps {steps} --torch-threads 1".split()
            common.herkit_train(spec.herkit_id, *flags, *spec.herkit_flags, out=out)
            return common.progress(out, *COLUMNS)
    import gymnasium as gym

    one_thread()
    gym.register_envs(importlib.import_module(spec.module))
    env, eval_env = (gym.make(spec.env_id, **spec.kwargs) for _ in range(2))
    model = sb3_model("sac", env, seed)
    rows = learn(model, steps, EVAL_EVERY, eval_env, spec.eval_episodes, seed, spec.success_key)
    return [{key: row[key] for key in COLUMNS} for row in rows]


def train_minutes(row: dict[str, float]) -> float:
    """Wall time of a row without its run's evaluations (where recorded), in minutes."""
    return (row["wall_s"] - row.get("eval_s", 0.0)) / 60


def success_by_steps(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the evaluation at ``budget`` env steps (NaN if none)."""
    return next((row["success_rate"] for row in rows if row["env_steps"] == budget), np.nan)


def success_by_minutes(rows: list[dict[str, float]], budget: float) -> float:
    """Success of the last evaluation done by ``budget`` minutes of training (0 before)."""
    done = [row["success_rate"] for row in rows if train_minutes(row) <= budget]
    return done[-1] if done else 0.0


def by_side(records: dict[str, Any]) -> dict[str, list[list[dict[str, float]]]]:
    """Each side's runs (their evaluations): a library, and its algorithm where not SAC."""
    sides = sorted({key.split("/")[0] for key in records})
    return {
        side: [r["rows"] for key, r in sorted(records.items()) if key.split("/")[0] == side]
        for side in sides
    }


def plot_one_env(name: str, records: dict[str, Any], path: Path) -> None:
    """Success against env steps and wall time: each seed thin, each side's mean thick."""
    spec = ONE_ENV[name]
    with common.figure(path, 1, 2, figsize=(11, 4)) as (fig, axes):
        colors = {"herkit": "tab:blue", "sb3": "tab:orange", "herkit-td3": "tab:green"}
        for side, runs in by_side(records).items():
            color = colors.get(side, "tab:red")
            for rows in runs:
                success = [row["success_rate"] for row in rows]
                axes[0].plot([row["env_steps"] for row in rows], success, color=color, alpha=0.3)
                axes[1].plot([train_minutes(row) for row in rows], success, color=color, alpha=0.3)
            steps = sorted({row["env_steps"] for rows in runs for row in rows})
            mean = [np.nanmean([success_by_steps(rows, b) for rows in runs]) for b in steps]
            library, _, algo = side.partition("-")
            label = f"{'SB3' if library == 'sb3' else 'herkit'} {(algo or 'sac').upper()}+HER, "
            label += f"mean of {len(runs)} seeds" if len(runs) > 1 else "one seed"
            axes[0].plot(steps, mean, color=color, lw=2.5, marker=".", label=label)
            minutes = np.arange(0.5, max(train_minutes(rows[-1]) for rows in runs), 0.5)
            mean = [np.mean([success_by_minutes(rows, b) for rows in runs]) for b in minutes]
            axes[1].plot(minutes, mean, color=color, lw=2.5, drawstyle="steps-post")
        ylabel = f"success rate ({spec.eval_episodes} episodes)"
        axes[0].set(xlabel="env steps", ylabel=ylabel, ylim=(-0.02, 1.02))
        axes[1].set(xlabel="training wall time, evaluations out where recorded (min)")
        axes[1].set(ylim=(-0.02, 1.02))
        for ax in axes:
            ax.grid(alpha=0.3)
            ax.axhline(0.9, color="gray", lw=0.8, ls="--")
        axes[0].legend(fontsize=8, loc="lower right")
        fig.suptitle(spec.title)


def at_budgets(records: dict[str, Any]) -> str:
    """Markdown: each side's mean success at every evaluation's env steps and every 2
    minutes of training wall time."""
    runs = by_side(records)
    every_run = [rows for side in runs for rows in runs[side]]
    steps = sorted({row["env_steps"] for rows in every_run for row in rows})
    longest = max(train_minutes(rows[-1]) for rows in every_run)
    minutes = list(range(2, int(longest) + 1, 2))
    table = []
    for label, budgets, read in (
        ("env steps", steps, success_by_steps),
        ("min", minutes, success_by_minutes),
    ):
        for budget in budgets:
            means = [np.nanmean([read(rows, budget) for rows in runs[side]]) for side in runs]
            table.append([f"{budget:,.0f} {label}", *(f"{m:.2f}" for m in means)])
    seeds = ", ".join(f"{side} {len(runs[side])}" for side in runs)
    return f"seeds: {seeds}\n" + common.markdown(["budget", *runs], "l" + "r" * len(runs), table)


def run_one_env(options: argparse.Namespace) -> None:
    """The ``pointmaze`` and ``parking`` subcommands: each seed and library, recorded as it
    ends (``--table``: print the budgets)."""
    name = options.command
    record = common.DOCS / f"{name}.json"
    if options.table:
        print(at_budgets(common.read_json(record)["runs"]))
        return
    for seed in options.seeds:
        for library in [options.only] if options.only else ["herkit", "sb3"]:
            steps = options.steps or ONE_ENV[name].steps
            print(f"{library} seed {seed}: {steps} env steps", flush=True)
            algo = options.algo if library == "herkit" else "sac"
            started = time.perf_counter()
            rows = one_env_rows(name, library, algo, seed, steps)
            total = time.perf_counter() - started
            reached = common.first_at(rows)
            run = {
                "library": library,
                "algo": algo,
                "seed": seed,
                "steps": steps,
                "rows": rows,
                "process_wall_s": round(total, 1),
                "first_0.9": reached,
                "final_success": rows[-1]["success_rate"],
                "code": common.code_version(),
            }
            side = library if algo == "sac" else f"{library}-{algo}"
            records = common.add_run(record, f"{side}/seed{seed}", run, common.machine())
            final = rows[-1]["success_rate"]
            print(f"  first >= 0.9: {reached}; final {final:.2f}; {total:.0f} s", flush=True)
            plot_one_env(name, records, common.FIGURES / f"{name}.png")


def described(doc: str) -> dict[str, Any]:
    """A subcommand's help: its docstring, laid out as written."""
    return {"description": doc, "formatter_class": argparse.RawDescriptionHelpFormatter}


def main() -> None:
    """The command line (see the module's and the subcommands' docstrings)."""
    cli = common.parser(__doc__)
    cli.add_argument("--only", nargs="*", choices=PARTS, help="parts to run (default all)")
    cli.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    cli.add_argument("--out", default="runs/sb3_compare", help="where run directories go")
    cli.add_argument("--quiet-pattern", default="benchmarks/bitflip.py")
    cli.add_argument("--report-only", action="store_true", help="rewrite sb3.md from sb3.json")
    # the workers of the parts
    cli.add_argument("--sb3-run", choices=sorted(TASKS), help=argparse.SUPPRESS)
    cli.add_argument("--updates-run", choices=("herkit", "sb3"), help=argparse.SUPPRESS)
    cli.add_argument("--algo", help=argparse.SUPPRESS)
    cli.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    cli.add_argument("--buffer-size", type=int, default=1_000_000, help=argparse.SUPPRESS)
    cli.add_argument("--data", help=argparse.SUPPRESS)
    cli.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--eval-every", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--updates", type=int, default=UPDATES, help=argparse.SUPPRESS)
    cli.add_argument("--repeats", type=int, default=REPEATS, help=argparse.SUPPRESS)
    cli.set_defaults(run=run_compare)
    commands = cli.add_subparsers(dest="command", metavar="{buffer,tqc,zoo,pointmaze,parking}")

    sub = commands.add_parser("buffer", help=BUFFER_DOC.split("\n")[0], **described(BUFFER_DOC))
    names = [*BUFFERS, *VARIANTS]
    sub.add_argument("--tasks", nargs="+", choices=tuple(BUFFER_TASKS), default=list(DEFAULT_TASKS))
    sub.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    sub.add_argument(
        "--buffers", nargs="+", default=list(BUFFERS), choices=names, help="run at once"
    )
    sub.add_argument("--table", action="store_true", help="print the tables, run nothing")
    sub.add_argument(
        "--paired",
        nargs=2,
        metavar=("FIRST", "SECOND"),
        choices=names,
        help="print two buffers' paired differences, run nothing",
    )
    sub.add_argument(
        "--rules",
        nargs="+",
        metavar="TASK",
        choices=tuple(BUFFER_TASKS),
        help="print each rule's paired difference against SB3's buffer on these tasks, run nothing",
    )
    sub.add_argument(
        "--same-data",
        action="store_true",
        help="feed both buffers the same random steps of each task's env and "
        "compare what they sample (sb3_buffer.json, same_data)",
    )
    sub.add_argument(
        "--worker", nargs=3, metavar=("TASK", "BUFFER", "SEED"), help=argparse.SUPPRESS
    )
    sub.set_defaults(run=run_buffer)

    sub = commands.add_parser("tqc", help=TQC_DOC.split("\n")[0], **described(TQC_DOC))
    sub.add_argument("--minutes", type=float, default=20.0, help="wall time of the SB3 run")
    sub.add_argument("--eval-every", type=int, default=250, help="env steps between evals")
    sub.add_argument("--seed", type=int, default=0, help="training seed")
    sub.add_argument("--table", action="store_true", help="only print the table")
    sub.set_defaults(run=run_tqc)

    sub = commands.add_parser(
        "zoo", help=str(run_zoo.__doc__).split("\n")[0], **described(str(run_zoo.__doc__))
    )
    sub.add_argument("--steps", type=int, default=2_000, help="env steps of the zoo line")
    sub.set_defaults(run=run_zoo)

    for name in ONE_ENV:
        sub = commands.add_parser(name, help=ONE_ENV[name].title, **described(ONE_ENV_DOC))
        sub.add_argument("--seeds", type=int, nargs="+", default=[0])
        sub.add_argument("--steps", type=int, default=None, help="env steps of each run")
        sub.add_argument("--only", choices=("herkit", "sb3"), default=None)
        sub.add_argument("--algo", choices=("sac", "td3"), default="sac", help="herkit's")
        sub.add_argument("--table", action="store_true", help="print the budget table, run none")
        sub.set_defaults(run=run_one_env)
    options = cli.parse_args()
    options.run(options)


if __name__ == "__main__":
    main()
