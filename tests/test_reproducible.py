"""A run is a function of its command and seed on a machine: the same command gives the
same numbers busy or idle (threads, precision and update mode decided once, from the
machine, never from the load or a timing), and a run killed anywhere and resumed ends
where the uninterrupted run ends: its networks, optimisers and every non-time cell of
progress.csv and updates.csv."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

from herkit.cli import main
from herkit.rundir.checkpoint import load_agent_state
from herkit.rundir.logs import TIME_COLUMNS
from herkit.rundir.paths import RunPaths
from runs import TESTS, point_reach_dataset

QUIET = ["--no-progress", "--no-tensorboard"]
BITFLIP = ["train", "--steps", "1500", "--eval-every", "500", "--eval-episodes", "10", *QUIET]
"""A short bit-flipping run of the preset (DQN+HER, one env in the trainer process)."""


@pytest.fixture(autouse=True)
def no_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """curve.png and report.html are drawn from the files compared here: not drawn."""
    from herkit.presentation.presenter import Presenter

    monkeypatch.setattr(Presenter, "refresh", lambda self: None)
    monkeypatch.setattr(Presenter, "final", lambda self: None)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve recorded episodes of herkit/PointReach-v0 in OGBench's layout."""
    return point_reach_dataset(tmp_path_factory.mktemp("data") / "point-reach.npz")


def offline_args(dataset: Path, steps: int = 60) -> list[str]:
    """A small offline GCIVL run on ``dataset``: evaluations and checkpoints every 20
    gradient steps, updates.csv rows every 8 (so that a checkpoint cuts an interval)."""
    return [
        "train",
        "herkit/PointReach-v0",
        "--dataset",
        str(dataset),
        "--algo",
        "gcivl",
        "--gcivl.hidden",
        "32",
        "32",
        "--gcivl.batch-size",
        "64",
        "--offline-steps",
        str(steps),
        "--eval-every",
        "20",
        "--checkpoint-every",
        "20",
        "--log-updates-every",
        "8",
        "--eval-episodes",
        "5",
        *QUIET,
    ]


@pytest.fixture(scope="module")
def maze_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three episodes of 101 states of OGBench's medium maze, made as OGBench makes them."""
    pytest.importorskip("ogbench")
    from scripts import load_benchmark

    path = tmp_path_factory.mktemp("maze") / "pointmaze-medium-navigate-v0.npz"
    load_benchmark("offline_data").make_dataset("pointmaze-medium-v0", 3, 101, 0.5, 0, path)
    return path


def maze_args(dataset: Path) -> list[str]:
    """GCIVL on OGBench's medium maze (which draws its start and goal noise from numpy's
    global generator) shrunk to 0.65 units a cell: the start and goal noise alone decides
    whether task 3 is reached, in about half its episodes, so that the success columns
    tell episodes apart. Episodes of 5 steps, 8 of each task on 4 envs."""
    return [
        "train",
        "pointmaze-medium-navigate-v0",
        *offline_args(dataset)[2:],
        "--eval-episodes",
        "8",
        "--n-eval-envs",
        "4",
        "--env-kwargs",
        "maze_unit=0.65",
        "max_episode_steps=5",
    ]


def train(args: list[str], out: Path, *more: str) -> None:
    assert main([*args, "--out", str(out), *more]) == 0


def rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file without their time columns."""
    import csv

    with open(path, newline="") as file:
        return [
            {key: value for key, value in row.items() if key not in TIME_COLUMNS}
            for row in csv.DictReader(file)
        ]


def choices(run: Path) -> dict[str, Any]:
    saved = json.loads(RunPaths(run).config.read_text())
    return {key: saved[key] for key in ("precision", "update_mode", "torch_threads", "env_workers")}


def assert_same_numbers(run: Path, other: Path) -> None:
    """Two runs' progress.csv and updates.csv equal, time columns aside, and their
    networks and optimisers equal, tensor for tensor."""
    paths, others = RunPaths(run), RunPaths(other)
    assert rows(paths.progress) == rows(others.progress)
    assert rows(paths.updates) == rows(others.updates)
    assert len(rows(paths.progress)) >= 3
    mine, theirs = load_agent_state(run)["agent"], load_agent_state(other)["agent"]
    assert_equal_states(mine, theirs)


def assert_equal_states(mine: Any, theirs: Any, where: str = "agent") -> None:
    if isinstance(mine, torch.Tensor):
        assert torch.equal(mine, theirs), where
    elif isinstance(mine, dict):
        assert mine.keys() == theirs.keys(), where
        for key in mine:
            assert_equal_states(mine[key], theirs[key], f"{where}.{key}")
    elif isinstance(mine, list | tuple):
        assert len(mine) == len(theirs), where
        for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert_equal_states(a, b, f"{where}[{index}]")
    else:
        assert mine == theirs, where


@contextmanager
def a_busy_core() -> Iterator[None]:
    """Another process that keeps one core busy, as long as the block runs."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        busy.kill()
        busy.wait()


MAZE_RUNS = pytest.mark.slow("two runs on OGBench's maze, evaluations in worker processes")


@pytest.mark.parametrize("kind", ["offline", "bitflip", pytest.param("ogbench", marks=MAZE_RUNS)])
def test_the_same_command_gives_the_same_numbers_busy_or_idle(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    args = {
        "offline": lambda: offline_args(request.getfixturevalue("dataset")),
        "bitflip": lambda: BITFLIP,
        "ogbench": lambda: maze_args(request.getfixturevalue("maze_dataset")),
    }[kind]()
    train(args, tmp_path / "idle")
    with a_busy_core():
        train(args, tmp_path / "busy")
    assert choices(tmp_path / "busy") == choices(tmp_path / "idle")
    assert_same_numbers(tmp_path / "busy", tmp_path / "idle")
    if kind == "ogbench":  # the episodes decide the success columns: they are the same
        reached = {row["success_task_3"] for row in rows(RunPaths(tmp_path / "idle").progress)}
        assert reached - {"0", "1"}, reached


SIGNAL_AT = """
import os, signal, sys
import herkit.presentation.presenter as presenter
import herkit.training.learner as learner
from herkit.cli import main

signum, at = getattr(signal, sys.argv[1]), int(sys.argv[2])
learn = learner.Learner.learn

def learn_then_signal(self):
    learn(self)
    if self.state.updates == at:
        os.kill(os.getpid(), signum)

learner.Learner.learn = learn_then_signal
presenter.Presenter.refresh = lambda self: None  # no figures drawn meanwhile
presenter.Presenter.final = lambda self: None
sys.exit(main(sys.argv[3:]))
"""
"""``python -c SIGNAL_AT SIGNAL N ARGS``: ``herkit ARGS``, sent SIGNAL by itself once its
learner has made ``N`` gradient steps: a signal at a chosen place, with nothing of the run's
own code changed."""


@pytest.mark.parametrize(
    ("signame", "exit_code", "env"),
    [
        ("SIGKILL", -9, "point"),
        ("SIGINT", 130, "point"),
        pytest.param("SIGKILL", -9, "maze", marks=MAZE_RUNS),
    ],
)
def test_an_offline_run_stopped_and_resumed_ends_as_the_uninterrupted_one(
    signame: str, exit_code: int, env: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Stopped at gradient step 35: after the checkpoint at 20 and the evaluation at 20,
    mid-way through an interval of updates.csv (rows every 8) and of progress.csv. SIGKILL
    leaves the checkpoint at 20; SIGINT writes one at 35. The resumed run's evaluations
    play the whole run's episodes, OGBench's maze's too."""
    if env == "maze":
        args = maze_args(request.getfixturevalue("maze_dataset"))
    else:
        args = offline_args(request.getfixturevalue("dataset"))
    killed = tmp_path / "killed"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    process = subprocess.Popen(  # beside the whole run: both cores at work
        [sys.executable, "-c", SIGNAL_AT, signame, "35", *args, "--out", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    train(args, tmp_path / "whole")
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == exit_code, stderr
    state = json.loads((RunPaths(killed).checkpoint / "state.json").read_text())["state"]
    assert state["updates"] == (20 if signame == "SIGKILL" else 35)  # its last checkpoint
    assert main(["train", "--resume", str(killed)]) == 0
    assert_same_numbers(killed, tmp_path / "whole")


def test_a_resumed_run_draws_the_random_actions_the_run_would_have_drawn(
    tmp_path: Path,
) -> None:
    """The first ``random_steps`` actions are one stream from the run's seed: a resume goes
    on with it rather than drawing the first actions again."""
    import gymnasium as gym

    import herkit  # noqa: F401  (registers herkit/BitFlip-v0)

    run = tmp_path / "run"
    random = ["--random-steps", "1000", "--eval-every", "100", "--checkpoint-every", "100"]
    train(["train", "--steps", "100", *random, *QUIET], run)
    assert main(["train", "--resume", str(run), "--steps", "300"]) == 0
    saved = load_agent_state(run)["random_actions"]
    space = gym.vector.SyncVectorEnv([lambda: gym.make("herkit/BitFlip-v0")]).action_space
    space.seed(0)  # the run's seed, the training envs' offset 0
    for _ in range(300):
        space.sample()
    assert saved == [space.np_random.bit_generator.state]


@pytest.mark.slow("herkit train in subprocesses, one killed at a moment of the clock")
def test_a_large_offline_run_killed_by_the_clock_resumes_to_the_same_numbers(
    dataset: Path, tmp_path: Path
) -> None:
    """As a user kills a run: SIGKILL at some moment after its first checkpoint, not at a
    chosen step; the update large enough for both cores (and bf16 where the CPU has it)."""
    from runs import QUICK, herkit, start_until

    args = [
        *offline_args(dataset, steps=200)[:7],
        "--gcivl.hidden",
        *["256"] * 3,
        "--gcivl.batch-size",
        "256",
        "--offline-steps",
        "200",
        "--eval-every",
        "50",
        "--checkpoint-every",
        "50",
        "--log-updates-every",
        "30",
    ]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    state = RunPaths(killed).checkpoint / "state.json"
    process = start_until([*args, "--out", str(killed)], state.exists)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert json.loads(state.read_text())["state"]["updates"] < 200
    # Each run takes about a minute alone on 2 cores, several beside the full tier's others.
    done = herkit(*args, "--out", str(whole), *QUICK, timeout=900)
    assert done.returncode == 0, done.stderr
    resumed = herkit("train", "--resume", str(killed), timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert choices(killed) == choices(whole)
    assert_same_numbers(killed, whole)
