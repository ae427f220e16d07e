"""The training loop with its envs in worker processes, overlapped with the updates.

Every test trains on ``ledger:Ledger-v0`` (tests/ledger.py), whose observations name the
env, episode and step they came from and the action the env received, and then reads
the buffer of the run's checkpoint back row by row.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ledger import ends_terminated, episode_length

from herkit.buffer.her import HerReplayBuffer
from herkit.config import DDPGConfig, TrainConfig
from herkit.config.resolve import run_directory
from herkit.rundir.checkpoint import load_checkpoint
from herkit.rundir.logs import read_progress
from herkit.rundir.paths import RunPaths
from herkit.training.loop import train
from runs import quiet

N_ENVS = 3


def ledger_config(tmp_path: Path, **changes: Any) -> TrainConfig:
    values: dict[str, Any] = dict(
        env_id="ledger:Ledger-v0",
        algo="ddpg",
        n_envs=N_ENVS,
        env_workers=2,
        precision="fp32",  # auto chooses by timing on a CPU with bf16: runs could differ
        steps=150,
        warmup_steps=30,
        random_steps=15,
        updates_per_step=0.5,
        eval_every=60,
        eval_episodes=2,
        n_eval_envs=2,
        checkpoint_every=75,
        buffer_size=3_000,
        reward_range=(-1.0, 0.0),
        agent=DDPGConfig(hidden=(16, 16), batch_size=16),
        out=str(tmp_path / "run"),
    )
    values.update(changes)
    return dataclasses.replace(quiet(env_id="ledger:Ledger-v0"), **values)


def stored_buffer(run_dir: Path) -> HerReplayBuffer:
    from ledger import LedgerEnv

    _, buffer = load_checkpoint(run_dir, LedgerEnv().compute_reward)
    return buffer


def columns(buffer: HerReplayBuffer) -> dict[str, np.ndarray]:
    """Each stored field as ``(rows, n_envs, ...)``, rows in the order they were written
    (the buffer here never wraps)."""
    storage = buffer.storage
    assert storage.rows_written <= storage.rows
    used = storage.rows_written * storage.n_envs
    return {
        name: np.asarray(value[:used]).reshape(
            storage.rows_written, storage.n_envs, *value.shape[1:]
        )
        for name, value in storage.data.items()
    }


def check_ledger(data: dict[str, np.ndarray], env: int, rows: slice, ident: int) -> int:
    """Assert that rows ``rows`` of env column ``env`` are the env's transitions in order:
    episodes 0, 1, ... of the env first seeded ``ident``, every step once, each with the
    action the env received; returns how many episodes were complete."""
    obs = data["observation"][rows, env]
    nxt = data["next_observation"][rows, env]
    assert (obs[:, 0] == ident).all() and (nxt[:, 0] == ident).all()
    episode, t, complete = 0, 0, 0
    for row in range(len(obs)):
        assert tuple(obs[row, 1:3]) == (episode, t), (env, row, obs[row], (episode, t))
        assert tuple(nxt[row, 1:3]) == (episode, t + 1)
        assert nxt[row, 3] == data["action"][rows, env][row, 0]  # the action the env got
        t += 1
        last = t == episode_length(ident, episode)
        terminated = bool(data["terminated"][rows, env][row])
        assert terminated == (last and ends_terminated(ident, episode))
        if last:
            episode, t, complete = episode + 1, 0, complete + 1
    return complete


def idents(config: TrainConfig, resets: int = 0) -> list[int]:
    """The first-reset seeds of the training envs (see herkit.training.loop)."""
    return [config.seed + 7919 * resets + env for env in range(config.n_envs)]


@pytest.mark.slow("a training run with env workers")
def test_overlapped_loop_stores_every_env_transition_once_in_order(tmp_path: Path) -> None:
    config = ledger_config(tmp_path)
    summary = train(config)
    run_dir = Path(summary["run_dir"])
    machine = json.loads(RunPaths(run_dir).config.read_text())["machine"]
    assert "3 envs in 2 worker processes" in machine["core_plan"]
    buffer = stored_buffer(run_dir)
    data = columns(buffer)
    assert buffer.storage.rows_written == config.steps // N_ENVS
    complete = [
        check_ledger(data, env, slice(None), ident) for env, ident in enumerate(idents(config))
    ]
    assert min(complete) >= 5  # many resets, each env at its own pace
    # the episodes still open at the checkpoint are the ones in progress at the last step
    open_lengths = buffer.storage.open_lengths()
    for env, ident in enumerate(idents(config)):
        rows = data["observation"][:, env]
        assert open_lengths[env] == int(rows[-1, 2]) + 1 or (
            data["next_observation"][-1, env, 2] == episode_length(ident, int(rows[-1, 1]))
            and open_lengths[env] == 0
        )


@pytest.mark.slow("two training runs with env workers")
def test_overlap_does_the_same_updates_as_waiting_for_the_envs(tmp_path: Path) -> None:
    overlapped = train(ledger_config(tmp_path / "a"))
    waiting = train(ledger_config(tmp_path / "b", overlap=False))
    in_process = train(ledger_config(tmp_path / "c", env_workers=0))
    assert overlapped["updates"] == waiting["updates"] == in_process["updates"] > 0
    a = columns(stored_buffer(Path(overlapped["run_dir"])))
    b = columns(stored_buffer(Path(waiting["run_dir"])))
    c = columns(stored_buffer(Path(in_process["run_dir"])))
    # the envs' transitions do not depend on where they step; only the actions (and the
    # observation that records the last one) can differ
    np.testing.assert_array_equal(a["observation"][..., :3], b["observation"][..., :3])
    np.testing.assert_array_equal(a["terminated"], b["terminated"])
    # without overlap, workers or not, the same seed gives the same run
    for name in b:
        np.testing.assert_array_equal(b[name], c[name])


@pytest.mark.slow("two training runs with env workers")
def test_same_seed_gives_the_same_overlapped_run(tmp_path: Path) -> None:
    first = train(ledger_config(tmp_path / "a"))
    second = train(ledger_config(tmp_path / "b"))
    a = columns(stored_buffer(Path(first["run_dir"])))
    b = columns(stored_buffer(Path(second["run_dir"])))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    learned = ("env_steps", "updates", "episodes", "success_rate")  # the timings differ
    rows = [read_progress(RunPaths(s["run_dir"]).progress) for s in (first, second)]
    assert [[row[key] for key in learned] for row in rows[0]] == [
        [row[key] for key in learned] for row in rows[1]
    ]


@pytest.mark.slow("training runs with env workers, resumed")
def test_resume_continues_an_overlapped_run(tmp_path: Path) -> None:
    config = ledger_config(tmp_path, steps=75)
    train(config)
    run_dir = run_directory(config)
    before = columns(stored_buffer(run_dir))
    summary = train(dataclasses.replace(config, steps=150), resume=True)
    assert summary["env_steps"] == 150
    after = columns(stored_buffer(run_dir))
    rows_before = before["observation"].shape[0]
    for name in before:  # what was stored stays as it was
        np.testing.assert_array_equal(after[name][:rows_before], before[name])
    for env, (old, new) in enumerate(zip(idents(config), idents(config, resets=1), strict=True)):
        check_ledger(after, env, slice(0, rows_before), old)
        # fresh envs (seeded anew) start fresh episodes; the open ones were ended
        check_ledger(after, env, slice(rows_before, None), new)
    assert after["observation"].shape[0] == 150 // N_ENVS


@pytest.mark.parametrize("env_workers", [0, 1, 3])
def test_env_workers_given_are_used(tmp_path: Path, env_workers: int) -> None:
    summary = train(ledger_config(tmp_path, env_workers=env_workers, steps=30, warmup_steps=15))
    config = json.loads(RunPaths(summary["run_dir"]).config.read_text())
    assert config["env_workers"] == env_workers
    assert config["torch_threads"] >= 1
