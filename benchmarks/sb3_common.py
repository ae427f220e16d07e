"""What the herkit-vs-SB3 comparisons (``benchmarks/sb3_*.py``) share: where things are,
the settings both sides get, measuring only on a quiet machine, the SB3 models, and the
cells of their tables.

``python benchmarks/sb3_compare.py`` runs the comparisons; each lives in its own file:
``sb3_bitflip.py``, ``sb3_fetchreach.py``, ``sb3_fetchpush_speed.py`` (training runs, through
``sb3_training.py``) and ``sb3_updates.py`` (gradient updates per second).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_ticks

ROOT = Path(__file__).resolve().parent.parent
"""The repository; run directories and the commands shown are relative to it."""
SCRIPT = "benchmarks/sb3_compare.py"
"""The script whose hidden ``--sb3-run`` and ``--updates-run`` modes are the SB3 workers."""
MAX_BUSY = 0.1
"""The machine counts as quiet below this share of busy CPU time."""
BATCH = 256
"""Batch size of every update, on both sides."""

# --------------------------------------------------------------------------------------
# measuring on a quiet machine


def busy_fraction(seconds: float = 5.0) -> float:
    """Share of the machine's CPU time (all cores) spent busy during ``seconds``."""

    idle0, total0 = cpu_ticks()
    time.sleep(seconds)
    idle1, total1 = cpu_ticks()
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


# --------------------------------------------------------------------------------------
# the SB3 side


def sb3_model(algo: str, env: Any, seed: int, buffer_size: int = 1_000_000) -> Any:
    """The SB3 model of ``algo`` (dqn, sac, tqc, ddpg) with the settings that the SETTINGS
    tables of sb3_bitflip.py and sb3_fetchreach.py list."""
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


# --------------------------------------------------------------------------------------
# table cells


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
