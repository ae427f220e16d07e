"""The SB3 side of the sb3_*.py comparisons, and measuring on a quiet machine.

SB3's models with herkit's settings (:func:`sb3_model`), their training with evaluations
(:func:`learn`) and their envs; a measurement redone until the machine stayed quiet around
it (:func:`quiet_measure`). Nothing runs here: ``python benchmarks/sb3_compare.py --help``
lists the comparisons that use it.
"""

from __future__ import annotations

import functools
import subprocess
import time
from typing import Any

import common
import numpy as np

SCRIPT = "benchmarks/sb3_compare.py"
"""The entry point of every comparison: the commands the records show run it."""
BATCH = 256
TARGET = 0.9
MAZE = {"continuing_task": False, "max_episode_steps": 100}
"""PointMaze_UMaze-v3 as the comparisons that run it make it."""

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


def busy_cell(entry: dict[str, Any]) -> str:
    """The "CPU busy before / after" cell of a measurement (see :func:`quiet_measure`)."""
    text = f"{entry['busy_before']:.0%} / {entry['busy_after']:.0%}"
    return text + (" (disturbed)" if entry.get("disturbed") else "")
