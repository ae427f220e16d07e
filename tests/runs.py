"""Shared by the tests that train: a preset config made quiet and small, the quick flags of
a short `herkit train`, and `python -m herkit` run in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from herkit.config.resolve import preset_config
from herkit.config.train import TrainConfig, config_from_dict

TESTS = Path(__file__).resolve().parent
"""This folder: the modules of the tests' own envs (faulty.py, ledger.py, ...) are here."""

QUIET: dict[str, Any] = {"progress": False, "tensorboard": False}
"""The settings of a run that draws no progress bar and writes no TensorBoard events."""


def quiet(**changes: Any) -> TrainConfig:
    """A preset config with no progress bar or TensorBoard, for tests; in float32, so that
    a test's numbers do not follow whether the CPU multiplies bfloat16 natively."""
    env_id = changes.pop("env_id", "herkit/BitFlip-v0")
    preset = preset_config(env_id, algo=changes.get("algo"))  # and its agent's settings
    values = preset.to_dict() | QUIET | {"precision": "fp32"}
    for key, value in changes.items():  # agent settings are merged, not replaced
        values[key] = values[key] | value if isinstance(value, dict) else value
    return config_from_dict(values)


def quick_flags(eval_episodes: int = 3) -> list[str]:
    """The flags that keep a `herkit train` short and quiet: no progress bar, no
    TensorBoard, ``eval_episodes`` episodes per evaluation."""
    return ["--no-progress", "--no-tensorboard", "--eval-episodes", str(eval_episodes)]


QUICK = quick_flags()
""":func:`quick_flags` with 3 evaluation episodes, as most tests of the command use them."""


def herkit_command(*args: str) -> list[str]:
    """The command line of ``python -m herkit ARGS`` in this interpreter."""
    return [sys.executable, "-m", "herkit", *args]


def herkit(
    *args: str,
    timeout: float = 300,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m herkit ARGS`` run to its end in ``cwd`` (this folder if None) with the
    environment ``env`` (this process's if None), its output captured as text."""
    return subprocess.run(
        herkit_command(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def start_herkit(
    args: list[str],
    ready: Callable[[], bool],
    within: float = 240,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    group: bool = False,
) -> subprocess.Popen[str]:
    """``python -m herkit ARGS`` started, its output piped; returns once ``ready()``, once
    it has ended, or after ``within`` seconds, whichever comes first. ``group``: in a
    process group of its own (its workers too), for a signal to the whole group."""
    process = subprocess.Popen(
        herkit_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=group,
    )
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(0.05)
    return process


def start_until(
    args: list[str], ready: Callable[[], bool], group: bool = False
) -> subprocess.Popen[str]:
    """Start ``herkit ARGS`` (quietly) and return once ``ready()``, still running
    (``group``: see :func:`start_herkit`)."""
    process = start_herkit([*args, *QUICK], ready, group=group)
    assert process.poll() is None, "the run finished before it could be stopped"
    return process


def with_test_modules() -> dict[str, str]:
    """This process's environment, with :data:`TESTS` and this process's ``sys.path`` on
    the ``PYTHONPATH`` of a child, so that it imports the tests' envs as this one does."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))


def point_reach_dataset(path: Path, episodes: int = 12, seed: int = 0) -> Path:
    """An OGBench-layout dataset of herkit/PointReach-v0 (a state ``(x, y, vx, vy)``, its
    goal ``(x, y)``: the first coordinates) written to ``path``: ``episodes`` episodes of
    random actions, each as long as the env lets it run. Needs no extra."""
    import numpy as np

    from herkit.envs import make_goal_env

    env = make_goal_env("herkit/PointReach-v0")
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    states, actions, ends = [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done = False
        while not done:
            action = env.action_space.sample()
            states.append(obs["observation"])
            actions.append(action)
            ends.append(False)
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated or rng.random() < 0.02
        states.append(obs["observation"])
        actions.append(np.zeros_like(actions[-1]))
        ends.append(True)
    env.close()
    np.savez(
        path,
        observations=np.asarray(states, np.float32),
        actions=np.asarray(actions, np.float32),
        terminals=np.asarray(ends),
    )
    return path


def offline_flags(dataset: Path, steps: int) -> list[str]:
    """The flags of a short run of GCIVL on ``dataset`` of herkit/PointReach-v0
    (:func:`point_reach_dataset`): ``steps`` gradient steps, small networks and batches,
    on one thread."""
    return [
        "herkit/PointReach-v0",
        "--dataset",
        str(dataset),
        "--algo",
        "gcivl",
        "--offline-steps",
        str(steps),
        "--gcivl.hidden",
        "16",
        "16",
        "--gcivl.batch-size",
        "32",
        "--torch-threads",
        "1",  # a run on a dataset takes every core: for networks this small one is faster
    ]
