"""The run's records: episodes.csv (every training episode) and updates.csv (update metrics
per interval), checked against what the envs and the agent produced, and across resume."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest

from herkit.config.learning import BOOKKEEPING, RESUME_MAY_CHANGE
from herkit.config.train import TrainConfig
from herkit.envs.bitflip import BitFlipEnv
from herkit.rundir.logs import RecordFile, read_progress
from herkit.rundir.paths import RunPaths
from herkit.rundir.records import EPISODE_COLUMNS, EpisodeTracker, final_distances
from herkit.training.loop import train
from runs import quiet


class RecordedBitFlip(BitFlipEnv):
    """Bit flipping that keeps its own record of each episode it ends."""

    made: ClassVar[list[RecordedBitFlip]] = []  # every instance, in the order they were made

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.first_seed: int | None = None
        self.episodes: list[dict[str, Any]] = []
        self._return, self._length = 0.0, 0
        RecordedBitFlip.made.append(self)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.first_seed is None:
            self.first_seed = seed
        self._return, self._length = 0.0, 0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        self._return += float(reward)
        self._length += 1
        if terminated or truncated:
            distance = np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"])
            success = int(info["is_success"])
            self.episodes.append(
                {
                    "return": self._return,
                    "length": self._length,
                    "success": success,
                    "distance": distance,
                }
            )
        return obs, reward, terminated, truncated, info


if "test/RecordedBitFlip-v0" not in gym.registry:
    gym.register("test/RecordedBitFlip-v0", entry_point=RecordedBitFlip)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        return list(reader.fieldnames or []), list(reader)


def small(out: Path, **changes: Any) -> TrainConfig:
    """Bit flipping with 4 bits (episodes of up to 8 steps, many successes), 2 envs."""
    values: dict[str, Any] = dict(
        env_id="herkit/BitFlip-v0",
        env_kwargs=("n_bits=4", "max_steps=8"),
        steps=600,
        warmup_steps=64,
        eval_every=200,
        eval_episodes=2,
        checkpoint_every=300,
        n_envs=2,
        env_workers=0,
        log_updates_every=20,
        out=str(out),
    )
    if changes.get("algo", "dqn") == "dqn":  # the run's agent block: another agent has none
        values["dqn"] = {"hidden": (32,), "batch_size": 16}
    return quiet(**(values | changes))


@pytest.mark.slow("a training run with several envs")
def test_episode_rows_are_the_episodes_the_envs_played(tmp_path: Path) -> None:
    RecordedBitFlip.made.clear()
    config = small(tmp_path / "run", env_id="test/RecordedBitFlip-v0", seed=3)
    train(config)
    columns, rows = read_csv(RunPaths(tmp_path / "run").episodes)
    assert columns == list(EPISODE_COLUMNS)
    assert [row["env_steps"] for row in rows] == sorted((row["env_steps"] for row in rows), key=int)
    for env in range(config.n_envs):  # the last env made with this env's seed (not the probe)
        played = [e for e in RecordedBitFlip.made if e.first_seed == config.seed + env][-1]
        logged = [row for row in rows if row["env"] == str(env)]
        assert len(logged) == len(played.episodes) > 10
        assert {row["rank"] for row in logged} == {"0"}
        assert [float(row["return"]) for row in logged] == [e["return"] for e in played.episodes]
        lengths = [int(row["length"]) for row in logged]
        assert lengths == [e["length"] for e in played.episodes]
        assert [int(row["success"]) for row in logged] == [e["success"] for e in played.episodes]
        assert 0 < sum(e["success"] for e in played.episodes) < len(played.episodes)
        distances = [float(row["final_distance"]) for row in logged]
        np.testing.assert_allclose(distances, [e["distance"] for e in played.episodes], rtol=1e-5)
        # every env steps once per iteration: an episode ends after its env's steps so far
        steps = [int(row["env_steps"]) for row in logged]
        assert steps == (config.n_envs * np.cumsum(lengths)).tolist()
    assert len(rows) == int(read_progress(tmp_path / "run")[-1]["episodes"])


def test_final_distance_of_the_last_observation_and_empty_cells() -> None:
    obs = {
        "achieved_goal": np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 4.0]]),
        "desired_goal": np.zeros((3, 2)),
    }
    np.testing.assert_allclose(final_distances(obs, np.array([1, 2])), [2**0.5, 5.0])
    images = {"achieved_goal": np.zeros((2, 2, 2)), "desired_goal": np.ones((2, 2, 2))}
    np.testing.assert_allclose(final_distances(images, np.array([0, 1])), [2.0, 2.0])
    words = {"achieved_goal": np.array(["a", "b", "c"]), "desired_goal": np.array(["b"] * 3)}
    assert final_distances(words, np.array([0])) is None
    tracker = EpisodeTracker(n_envs=3, rank=1)
    done = np.array([False, True, True])
    tracker.step(10, np.array([-1.0, -1.0, 0.0]), np.zeros(3, bool), None, obs)
    tracker.step(13, np.array([-1.0, -1.0, -1.0]), done, None, words)
    rows = tracker.take()
    assert [(r["env"], r["return"], r["length"], r["rank"]) for r in rows] == [
        (1, -2.0, 2, 1),
        (2, -1.0, 2, 1),
    ]
    assert all(r["success"] is None and r["final_distance"] is None for r in rows)
    assert tracker.take() == [] and tracker.lengths.tolist() == [2, 0, 0]


METRICS = {
    "dqn": ["critic_loss", "q_mean", "target_q_mean", "td_abs_mean"],
    "ddpg": ["critic_loss", "q_mean", "target_q_mean", "actor_loss", "td_abs_mean"],
    "sac": [
        "critic_loss",
        "actor_loss",
        "q_mean",
        "target_q_mean",
        "entropy",
        "alpha_loss",
        "alpha",
        "td_abs_mean",
    ],
}


@pytest.mark.slow("a training run per algorithm")
@pytest.mark.parametrize("algo", ["dqn", "ddpg", "sac"])
def test_update_rows_every_interval_with_the_algorithms_metrics(tmp_path: Path, algo: str) -> None:
    env = "herkit/BitFlip-v0" if algo == "dqn" else "herkit/PointReach-v0"
    nets = {"hidden": (32, 32), "batch_size": 16}
    config = small(
        tmp_path / "run",
        env_id=env,
        algo=algo,
        steps=300,
        env_kwargs=(),
        updates_per_step=1.0,
        log_updates_every=25,
        **{algo: nets},
    )
    summary = train(config)
    columns, rows = read_csv(RunPaths(tmp_path / "run").updates)
    extremes = ["q_min", "q_max", "q_low", "q_high"]
    assert columns == ["updates", "env_steps", *METRICS[algo], *extremes]
    assert [int(row["updates"]) for row in rows] == list(range(25, summary["updates"] + 1, 25))
    assert len(rows) == summary["updates"] // 25 > 4
    steps = [int(row["env_steps"]) for row in rows]
    assert steps == sorted(steps) and steps[-1] <= 300
    for row in rows:
        assert all(row[name] != "" for name in columns[:-2]), row
        assert float(row["q_min"]) <= float(row["q_mean"]) <= float(row["q_max"])
        low, high = float(row["q_low"]), float(row["q_high"])  # sparse -1/0: clipped
        assert np.isfinite([low, high]).all() and low < high
    if algo == "sac":
        assert all(float(row["alpha"]) > 0 for row in rows)


@pytest.mark.slow("a training run resumed")
def test_resume_appends_without_gaps_or_duplicates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    paths = RunPaths(run)
    config = small(run, steps=300, checkpoint_every=200)
    first = train(config)
    before = paths.episodes.read_text()
    train(dataclasses.replace(config, steps=600, log_updates_every=30), resume=True)
    assert paths.episodes.read_text().startswith(before)
    _, episodes = read_csv(paths.episodes)
    steps = [int(row["env_steps"]) for row in episodes]
    assert steps == sorted(steps) and steps[-1] <= 600 and steps[0] > 0
    keys = [(row["env_steps"], row["rank"], row["env"]) for row in episodes]
    assert len(set(keys)) == len(keys)
    assert len(episodes) == int(read_progress(run)[-1]["episodes"]) > 50
    _, updates = read_csv(paths.updates)
    counts = [int(row["updates"]) for row in updates]
    assert counts == sorted(set(counts))
    assert all(n % (20 if n <= first["updates"] else 30) == 0 for n in counts)
    assert counts[0] == 20 and counts[-1] > first["updates"]


@pytest.mark.slow("a training run killed, then resumed")
def test_rows_after_the_checkpoint_of_a_killed_run_are_dropped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    paths = RunPaths(run)
    config = small(run, steps=300, checkpoint_every=300)
    summary = train(config)
    saved = {path: path.read_text() for path in (paths.episodes, paths.updates)}
    columns = saved[paths.updates].splitlines()[0].count(",")
    fake = {  # the rows of a run killed after its checkpoint
        paths.episodes: ["302,0,0,-3,3,1,0", "310,0,1,-8,8,0,1"],
        paths.updates: [f"{summary['updates'] + 20}" + ",9" * columns],
    }
    for path, lines in fake.items():
        with open(path, "a") as file:
            file.write("".join(line + "\n" for line in lines))
    train(dataclasses.replace(config, steps=400), resume=True)
    for path, text in saved.items():
        now = path.read_text()
        assert now.startswith(text) and not set(fake[path]) & set(now.splitlines()), path.name
        assert len(now.splitlines()) > len(text.splitlines()), path.name  # the resumed run's rows
    _, episodes = read_csv(paths.episodes)
    assert len(episodes) == int(read_progress(run)[-1]["episodes"])


def test_record_file_keeps_rows_up_to_the_resume_point(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    RecordFile(path, "n", ["n", "x"]).append([{"n": n, "x": n / 3} for n in range(5)])
    RecordFile(path, "n", ["n", "x"], resume_after=2).append([{"n": 7, "x": float("inf")}])
    assert path.read_text().splitlines() == ["n,x", "0,0", "1,0.333333", "2,0.666667", "7,"]
    with open(path, "a") as file:  # a row cut short by a kill, then one without its end
        file.write("8,1\n1\n")
    RecordFile(path, "n", resume_after=8).append([{"n": 9, "x": 1}])
    assert path.read_text().splitlines()[-2:] == ["8,1", "9,1"]
    lazy = RecordFile(tmp_path / "lazy.csv", "n")
    assert not lazy.path.exists()
    lazy.append([{"n": 1, "y": None}])
    assert lazy.path.read_text().splitlines() == ["n,y", "1,"]


def test_the_update_log_interval_is_bookkeeping() -> None:
    assert "log_updates_every" in BOOKKEEPING and "log_updates_every" in RESUME_MAY_CHANGE
    with pytest.raises(ValueError, match="log_updates_every"):
        quiet(log_updates_every=0)


def test_tensorboard_of_a_resumed_run_holds_every_row_of_progress_csv(tmp_path: Path) -> None:
    """The resumed run's TensorBoard scalars are progress.csv's rows: the evaluation at the
    checkpoint's step is kept, a point logged after it by a killed run is dropped."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "run"
    paths = RunPaths(run)
    config = dataclasses.replace(
        small(run, steps=64, warmup_steps=32, eval_every=32, checkpoint_every=64),
        tensorboard=True,
    )
    train(config)
    with SummaryWriter(str(paths.tensorboard)) as killed:  # logged after the checkpoint
        killed.add_scalar("eval/success_rate", 0.5, 80)
    train(dataclasses.replace(config, steps=128), resume=True)
    events = EventAccumulator(str(paths.tensorboard))
    events.Reload()
    logged = [(event.step, event.value) for event in events.Scalars("eval/success_rate")]
    rows = [(int(row["env_steps"]), float(row["success_rate"])) for row in read_progress(run)]
    assert [step for step, _ in logged] == [step for step, _ in rows] == [32, 64, 96, 128]
    assert [value for _, value in logged] == pytest.approx([value for _, value in rows])


KILL_AT = """
import os, signal, sys
import herkit.presentation.presenter as presenter
import herkit.training.learner as learner
from herkit.cli import main

at, learn = int(sys.argv[1]), learner.Learner.learn

def learn_then_die(self):
    learn(self)
    if self.state.updates == at:
        os.kill(os.getpid(), signal.SIGKILL)

learner.Learner.learn = learn_then_die
presenter.Presenter.refresh = lambda self: None  # no figures drawn meanwhile
sys.exit(main(sys.argv[2:]))
"""
"""``python -c KILL_AT N ARGS``: ``herkit ARGS``, SIGKILLed once its learner has made ``N``
gradient steps."""


@pytest.mark.slow("an offline-then-online run in a subprocess, killed, and resumed")
def test_tensorboard_keeps_both_phases_of_a_run_killed_and_resumed_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 gradient steps on a dataset, then 40 env steps (an update each), an evaluation
    every 10 steps of each phase, a checkpoint every 20; killed at env step 35, after the
    evaluation at 30, and resumed from the checkpoint at env step 20. TensorBoard holds each
    row of progress.csv once, on one rising axis: a gradient step G, then 60 + E for env
    step E (``train/env_steps`` holds E); the point logged after the checkpoint is dropped
    and made again, no gradient step's point is lost."""
    import json
    import os
    import subprocess
    import sys

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from herkit.cli import main
    from herkit.presentation.presenter import Presenter
    from runs import TESTS, point_reach_dataset

    dataset = point_reach_dataset(tmp_path / "point-reach.npz")
    run = tmp_path / "run"
    paths = RunPaths(run)
    args = ["train", "herkit/PointReach-v0", "--dataset", str(dataset), "--algo", "gcivl"]
    args += ["--gcivl.hidden", "32", "32", "--gcivl.batch-size", "64", "--offline-steps", "60"]
    args += ["--steps", "40", "--eval-every", "10", "--checkpoint-every", "20"]
    args += ["--eval-episodes", "2", "--torch-threads", "1", "--no-progress", "--out", str(run)]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    command = [sys.executable, "-c", KILL_AT, str(60 + 35), *args]
    killed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert killed.returncode == -9, killed.stderr

    def points(tag: str) -> list[tuple[int, float]]:
        events = EventAccumulator(str(paths.tensorboard))
        events.Reload()
        return [(event.step, event.value) for event in events.Scalars(tag)]

    state = json.loads((paths.checkpoint / "state.json").read_text())["state"]
    assert (state["phase"], state["env_steps"], state["updates_offline"]) == ("online", 20, 60)
    assert [step for step, _ in points("eval/success_rate")][-1] == 60 + 30  # after it
    monkeypatch.setattr(Presenter, "final", lambda self: None)
    assert main(["train", "--resume", str(run)]) == 0
    rows = read_progress(run)
    offline = [row for row in rows if row["env_steps"] == "0"]
    assert [int(row["updates"]) for row in offline] == [10, 20, 30, 40, 50, 60]
    assert [int(row["env_steps"]) for row in rows[len(offline) :]] == [10, 20, 30, 40]
    logged = points("eval/success_rate")
    steps = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert [step for step, _ in logged] == steps
    assert [value for _, value in logged] == pytest.approx([float(r["success_rate"]) for r in rows])
    assert points("train/env_steps")[-4:] == [(70, 10), (80, 20), (90, 30), (100, 40)]
    assert [step for step, _ in points("train/updates")] == steps[6:]  # online: updates differ
