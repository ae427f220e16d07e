"""Data-parallel training with 2 gloo processes on localhost."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

import herkit
from herkit import Batch
from herkit.agents import make_agent
from herkit.config import DDPGConfig, DQNConfig
from herkit.rundir.logs import read_progress
from herkit.rundir.paths import RunPaths
from runs import QUICK, herkit_command
from runs import herkit as herkit_cli

WORLD = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(rank: int, port: int) -> dict[str, str]:
    return {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(WORLD),
    }


def random_batch(algo: str, size: int, seed: int) -> Batch:
    rng = np.random.default_rng(seed)
    action = (
        rng.integers(0, 4, size)
        if algo == "dqn"
        else rng.uniform(-1, 1, (size, 2)).astype(np.float32)
    )
    return Batch(
        observation=rng.normal(size=(size, 5)).astype(np.float32),
        action=action,
        reward=-rng.integers(0, 2, size).astype(np.float32),
        next_observation=rng.normal(size=(size, 5)).astype(np.float32),
        goal=rng.normal(size=(size, 3)).astype(np.float32),
        achieved_goal=rng.normal(size=(size, 3)).astype(np.float32),
        next_achieved_goal=rng.normal(size=(size, 3)).astype(np.float32),
        terminated=rng.integers(0, 2, size).astype(np.float32),
    )


def small_agent(algo: str) -> Any:
    if algo == "dqn":
        config: Any = DQNConfig(hidden=(32,), batch_size=8)
        space: Any = gym.spaces.Discrete(4)
    else:
        config = DDPGConfig(hidden=(32, 32), batch_size=8)
        space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    return make_agent(algo, config, 5, 3, space, (-1.0, 0.0), seed=7)


def _worker(rank: int, port: int, out: str, algo: str) -> None:
    """One rank: join, train on this rank's own data, save what the test compares."""
    os.environ.update(rank_env(rank, port))
    torch.set_num_threads(1)
    from herkit.runtime import distributed

    context = distributed.init("cpu", timeout_s=60)
    agent = small_agent(algo)
    agent.join(context, exploration_seed=100 + rank)
    # Each rank sees different data; normalisers and parameters must still agree.
    rng = np.random.default_rng(rank)
    agent.update_normalizer(rng.normal(size=(10, 5)) * (rank + 1), rng.normal(size=(10, 3)))
    agent.update(random_batch(algo, 8, seed=rank))  # the test repeats this one in 1 process
    first = agent.state_dict()  # networks and Adam moments (scale-sensitive, unlike a step)
    for step in range(1, 5):
        agent.update(random_batch(algo, 8, seed=1000 * step + rank))
    torch.save(
        {
            "after_one_update": first,
            "networks": {name: net.state_dict() for name, net in agent._networks().items()},
            "obs_sum": agent.obs_normalizer.state_dict()["sum"],
            "obs_count": agent.obs_normalizer.count,
            "agree": agent.parameters_agree(),
        },
        Path(out) / f"rank{rank}.pt",
    )
    distributed.shutdown()


@pytest.mark.slow("torchrun: several processes")
@pytest.mark.parametrize("algo", ["dqn", "ddpg"])
def test_two_ranks_stay_identical_and_equal_one_process_with_twice_the_batch(
    tmp_path: Path, algo: str
) -> None:
    mp.spawn(_worker, args=(free_port(), str(tmp_path), algo), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]
    assert all(state["agree"] for state in ranks)
    for name, net in ranks[0]["networks"].items():
        for key, value in net.items():
            torch.testing.assert_close(ranks[1]["networks"][name][key], value, rtol=0, atol=0)
    # Normaliser statistics are the sums over both ranks' data.
    expected_sum = sum(
        np.random.default_rng(r).normal(size=(10, 5)).sum(axis=0) * (r + 1) for r in range(WORLD)
    )
    np.testing.assert_allclose(ranks[0]["obs_sum"].numpy(), expected_sum, rtol=1e-12)
    assert ranks[0]["obs_count"] == ranks[1]["obs_count"] == 20.0

    # One update with 2 ranks of batch B == one single-process update of batch 2B.
    single = small_agent(algo)
    obs_parts, goal_parts = [], []
    for r in range(WORLD):  # the same draws as each rank's, in the same order
        rng = np.random.default_rng(r)
        obs_parts.append(rng.normal(size=(10, 5)) * (r + 1))
        goal_parts.append(rng.normal(size=(10, 3)))
    single.update_normalizer(np.concatenate(obs_parts), np.concatenate(goal_parts))
    single_sum = single.obs_normalizer.state_dict()["sum"].numpy()
    np.testing.assert_allclose(single_sum, ranks[0]["obs_sum"].numpy(), rtol=1e-12)
    halves = [random_batch(algo, 8, seed=r) for r in range(WORLD)]
    both = Batch(
        **{
            field: np.concatenate([getattr(h, field) for h in halves])
            for field in (
                "observation",
                "action",
                "reward",
                "next_observation",
                "goal",
                "achieved_goal",
                "next_achieved_goal",
                "terminated",
            )
        }
    )
    single.update(both)
    expected, got = single.state_dict(), ranks[0]["after_one_update"]
    for name, net in expected["networks"].items():
        for key, value in net.items():
            torch.testing.assert_close(got["networks"][name][key], value, rtol=1e-5, atol=1e-6)
    for name, optimizer in expected["optimizers"].items():
        for index, moments in optimizer["state"].items():
            for key in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(
                    got["optimizers"][name]["state"][index][key], moments[key], rtol=1e-4, atol=1e-9
                )


def torchrun(*args: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(WORLD),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(port),
        "-m",
        "herkit",
        *args,
    ]


def kill_job(launcher: int) -> None:
    """SIGKILL torchrun and every rank: torchrun starts each rank in a session of its own,
    so killing torchrun's process group alone would leave the ranks running."""
    ranks = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == launcher:  # the field after the state is the parent pid
            ranks.append(int(stat.parent.name))
    os.killpg(launcher, signal.SIGKILL)
    for rank in ranks:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(rank, signal.SIGKILL)  # the rank and its env workers


# auto chooses the precision by timing on a CPU with bf16: runs could differ
QUICK_RANKS = [*QUICK, "--n-envs", "1", "--precision", "fp32"]


def start_job(args: list[str], ready: Callable[[], bool]) -> subprocess.Popen[str]:
    """Start ``torchrun ... herkit ARGS`` in a session of its own; return once ``ready()``."""
    process = subprocess.Popen(
        torchrun(*args, *QUICK_RANKS, port=free_port()),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(0.05)
    assert process.poll() is None, process.stderr.read() if process.stderr else ""
    return process


@pytest.mark.slow("torchrun: several processes, killed and resumed")
def test_torchrun_training_and_resume_after_a_kill(tmp_path: Path) -> None:
    run = tmp_path / "run"
    paths = RunPaths(run)
    args = ["train", "--steps", "2400", "--eval-every", "400", "--checkpoint-every", "400"]
    state = paths.checkpoint / "state.json"
    process = start_job(
        [*args, "--out", str(run)],
        lambda: state.exists() and json.loads(state.read_text())["state"]["env_steps"] >= 800,
    )
    kill_job(process.pid)
    process.wait()
    meta = json.loads(state.read_text())
    assert meta["world_size"] == WORLD
    assert {"agent.pt", "agent.rank1.pt", "buffer.npz", "buffer.rank1.npz"} <= set(meta["files"])

    resumed = subprocess.run(
        torchrun("train", "--resume", str(run), port=free_port()),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(paths.summary.read_text())
    assert summary["world_size"] == WORLD and summary["env_steps"] == 2400
    assert resumed.stdout.count('"world_size"') == 1  # one summary, printed by rank 0
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == sorted(set(steps)) and steps[-1] == 2400
    # One episodes.csv holds both ranks' episodes, each once, in order of env steps.
    with open(paths.episodes, newline="") as file:
        episodes = list(csv.DictReader(file))
    assert {row["rank"] for row in episodes} == {"0", "1"}
    ended = [int(row["env_steps"]) for row in episodes]
    assert ended == sorted(ended) and ended[-1] <= 2400
    assert len({(row["env_steps"], row["rank"], row["env"]) for row in episodes}) == len(ended)
    assert len(ended) == int(read_progress(run)[-1]["episodes"])

    # Its policy loads in one process and acts as rank 1's copy does (the ranks agree).
    policy = herkit.load_policy(run)
    env = policy.make_env()
    obs, _ = env.reset(seed=0)
    batch = {key: np.stack([value] * 2) for key, value in obs.items()}
    rank1 = herkit.load_policy(run)
    rank1_state = torch.load(paths.checkpoint / "agent.rank1.pt", weights_only=True)
    rank1.agent.load_state_dict(rank1_state["agent"])
    assert policy.act(batch).tolist() == rank1.act(batch).tolist() == [policy.act(obs)] * 2

    # A checkpoint of 2 ranks cannot be resumed by 1.
    single = herkit_cli("train", "--resume", str(run), "--steps", "3000", timeout=120)
    assert single.returncode == 2 and "written by 2 rank(s)" in single.stderr


@pytest.mark.slow("torchrun: several processes")
def test_a_rank_that_dies_makes_the_other_exit_with_a_clear_error(tmp_path: Path) -> None:
    port = free_port()
    args = ["train", "--steps", "100000", "--out", str(tmp_path), "--dist-timeout-s", "30"]
    processes = [
        subprocess.Popen(
            herkit_command(*args, *QUICK_RANKS),
            env={**os.environ, **rank_env(rank, port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(WORLD)
    ]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not RunPaths(tmp_path).config.exists():
        time.sleep(0.05)
    time.sleep(2.0)  # both ranks are stepping and all-reducing now
    processes[1].kill()
    started = time.monotonic()
    _, stderr = processes[0].communicate(timeout=90)
    # herkit exits with 1 right after its message; gloo's own threads, which saw the
    # connection reset too, sometimes abort the process first (SIGABRT), about 1 run in 10
    assert processes[0].returncode in (1, -signal.SIGABRT), stderr
    assert "another rank has probably died" in stderr and "Traceback" not in stderr
    assert time.monotonic() - started < 60


@pytest.mark.slow("torchrun: several processes")
def test_ctrl_c_to_torchrun_checkpoints_every_rank_at_one_step(tmp_path: Path) -> None:
    """torchrun passes SIGINT on to its ranks; they agree on a step, write the checkpoint
    there together, and rank 0 says how to resume; resuming continues from that step."""
    run = tmp_path / "run"
    paths = RunPaths(run)
    args = ["train", "--steps", "100000", "--eval-every", "400", "--checkpoint-every", "50000"]
    process = start_job(
        [*args, "--out", str(run)],
        lambda: paths.progress.exists() and len(read_progress(run)) >= 2,
    )
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            kill_job(process.pid)
    meta = json.loads((paths.checkpoint / "state.json").read_text())
    stopped_at = meta["state"]["env_steps"]
    assert meta["world_size"] == WORLD and 800 <= stopped_at < 50000, stderr[-3000:]
    assert f"interrupted at {stopped_at} env steps" in stderr
    assert f"torchrun --nproc-per-node {WORLD} -m herkit train --resume {run}" in stderr
    assert json.loads(paths.summary.read_text())["interrupted"] is True

    resumed = subprocess.run(
        torchrun("train", "--resume", str(run), "--steps", str(stopped_at + 400), port=free_port()),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(paths.summary.read_text())["env_steps"] == stopped_at + 400


@pytest.mark.slow("torchrun: several processes, an env that fails on one rank")
@pytest.mark.parametrize(("during", "at"), [("step", 700), ("reset", 107)])
def test_an_env_restart_on_one_rank_keeps_the_ranks_in_step(
    tmp_path: Path, during: str, at: int
) -> None:
    """One rank's env fails and is rebuilt: in a step (the step is lost on that rank
    alone), or in the reset right after a stored step at which the ranks ask whether to
    stop (every 16 iterations). What is due follows the steps stored on every rank alike,
    so the ranks keep meeting at the same collectives and the run ends. Random actions
    throughout make where the env fails independent of learning."""
    from runs import TESTS, with_test_modules

    run, token = tmp_path / "run", tmp_path / "token"
    token.touch()  # one env of one rank fails, once
    done = subprocess.run(
        torchrun(
            "train",
            "faulty:FaultyBitFlip-v0",
            "--steps",
            "2400",
            "--eval-every",
            "400",
            "--env-restarts",
            "1",
            "--dist-timeout-s",
            "60",
            "--random-steps",
            "1200",
            "--out",
            str(run),
            *QUICK_RANKS,
            "--env-kwargs",
            "n_bits=4",
            "fault=raise",
            f"during={during}",
            f"at={at}",
            f"token={token}",
            port=free_port(),
        ),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=TESTS,
        env=with_test_modules(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (rebuilt,) = [line for line in done.stderr.splitlines() if "rebuilt it" in line]
    assert not token.exists() and "(env restart 1 of 1" in rebuilt
    if during == "reset":  # the case of this test: where the ranks ask whether to stop
        stored = int(rebuilt.split(" at env step ")[1].split(":")[0].replace(",", ""))
        assert stored // WORLD % 16 == 0, rebuilt
    assert json.loads(RunPaths(run).summary.read_text())["env_steps"] == 2400
