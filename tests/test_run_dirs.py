"""Run directories: one process each, names that keep tasks apart, failed runs retried."""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from herkit.config import DQNConfig, preset_config
from herkit.config.resolve import run_directory
from herkit.rundir.directory import LOCK_NAME, RunDirInUse, RunDirLock
from herkit.rundir.paths import RunPaths
from runs import QUICK, herkit, start_until


def test_run_paths_name_every_file_of_a_run_directory() -> None:
    """The names on disk, written out once: users, scripts and the docs rely on them, and
    every other test names a run's files through RunPaths."""
    paths = RunPaths("runs/mine")
    assert paths.root == Path("runs/mine") and RunPaths(Path("runs/mine")) == paths
    named = [
        (paths.config, "config.json"),
        (paths.summary, "summary.json"),
        (paths.progress, "progress.csv"),
        (paths.episodes, "episodes.csv"),
        (paths.updates, "updates.csv"),
        (paths.tensorboard, "tb"),
        (paths.checkpoint, "checkpoint"),
        (paths.previous_checkpoint, "checkpoint.old"),
        (paths.partial_checkpoint(400), ".checkpoint-400"),
        (paths.error_log(), "error.log"),
        (paths.error_log(rank=0), "error.log"),
        (paths.error_log(rank=1), "error.rank1.log"),
        (paths.video(250), "videos/step-000000250.mp4"),
        (paths.video(1_234_567_890), "videos/step-1234567890.mp4"),
        (paths.curve, "curve.png"),
        (paths.report, "report.html"),
        (paths.lock, ".herkit-lock"),
    ]
    for path, name in named:
        assert path == Path("runs/mine") / name, name
    assert paths.lock.name == LOCK_NAME


@pytest.mark.slow("herkit train runs in subprocesses")
def test_a_second_run_into_a_held_directory_is_refused_and_told_who_holds_it(
    tmp_path: Path,
) -> None:
    out = tmp_path / "same"
    first = start_until(
        ["train", "--out", str(out), "--steps", "1000000"],
        ready=RunPaths(out).progress.exists,
    )
    try:
        second = herkit("train", "--out", str(out), "--steps", "200", *QUICK)
        assert second.returncode == 2, second.stderr
        message = second.stderr.strip()
        assert message.count("\n") == 0 and "in use by another herkit run" in message
        assert f"pid {first.pid} on host {socket.gethostname()}" in message
        resumed = herkit("train", "--resume", str(out), "--steps", "2000000", *QUICK)
        assert resumed.returncode == 2 and "in use" in resumed.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    assert first.returncode == 130, first.stderr
    assert not RunPaths(out).lock.exists()  # released on exit
    config = json.loads(RunPaths(out).config.read_text())
    assert config["steps"] == 1_000_000  # the first run's files, not the second's


@pytest.mark.slow("herkit train runs in subprocesses")
def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "run"
    paths = RunPaths(out)
    done = herkit("train", "--out", str(out), "--steps", "200", "--eval-every", "200", *QUICK)
    assert done.returncode == 0, done.stderr
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    holder = {"pid": gone.pid, "host": socket.gethostname(), "started": 0}
    paths.lock.write_text(json.dumps(holder))
    resumed = herkit("train", "--resume", str(out), "--steps", "400", *QUICK)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(paths.summary.read_text())["env_steps"] == 400
    assert not paths.lock.exists()


def test_a_lock_of_another_host_is_reported_with_the_file_to_delete(tmp_path: Path) -> None:
    lock = RunPaths(tmp_path).lock
    lock.write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": 0}))
    with pytest.raises(RunDirInUse, match="pid 1 on host elsewhere") as refused:
        RunDirLock(tmp_path).acquire()
    assert f"delete {lock}" in str(refused.value)
    mine = RunDirLock(tmp_path / "fresh")
    with mine, pytest.raises(RunDirInUse, match="in use"):
        RunDirLock(tmp_path / "fresh").acquire()  # this very process holds it
    assert not RunPaths(tmp_path / "fresh").lock.exists()


def test_default_names_spell_the_settings_a_user_gave() -> None:
    """Values as a user typed them (no Python reprs), an offline agent's goals only where
    given, its dataset by its file name where that is not the env id."""
    bitflip = preset_config("herkit/BitFlip-v0")
    shaped = dataclasses.replace(
        bitflip,
        shaped_reward=(1.0, 2.0),
        agent=dataclasses.replace(bitflip.agent_config(), hidden=(64, 64)),
    )
    assert run_directory(shaped).name == (
        "herkit-BitFlip-v0-dqn-future-s0-dqn.hidden=64x64,shaped_reward=1x2"
    )
    maze = preset_config("pointmaze-medium-navigate-v0")
    offline = dataclasses.replace(
        maze, algo="gcivl", dataset="data/pointmaze-medium-navigate-v0.npz", offline_steps=1000
    )
    assert run_directory(offline).name.startswith("pointmaze-medium-navigate-v0-gcivl-s0")
    name = run_directory(offline).name
    assert "values" not in name and "dataset" not in name
    other = dataclasses.replace(offline, dataset="elsewhere/mine.npz").with_her(
        value_goals=(0.0, 1.0, 0.0)
    )
    named = run_directory(other).name
    assert named.startswith("pointmaze-medium-navigate-v0-gcivl-values0-1-0-s0-mine")


def test_a_name_and_the_start_up_line_spell_a_setting_alike() -> None:
    """Numbers joined by x, words by commas, in the run's name as in its settings line."""
    from herkit.config.resolve import resolve

    flags = {"shaped_reward": (1.0, 2.0), "her.info_keys": ("speed", "crash")}
    resolution = resolve("herkit/BitFlip-v0", flags=flags, probe=False)
    assert run_directory(resolution.config).name == (
        "herkit-BitFlip-v0-dqn-future-s0-info_keys=speed,crash,shaped_reward=1x2"
    )
    assert "flags: shaped_reward=1x2, her.info_keys=speed,crash" in resolution.describe()


@pytest.mark.slow("herkit train runs in subprocesses")
def test_default_names_keep_tasks_and_learning_settings_apart(tmp_path: Path) -> None:
    base = preset_config("herkit/BitFlip-v0")
    names = {
        run_directory(config)
        for config in (
            base,
            dataclasses.replace(base, env_kwargs=("n_bits=30",)),
            base.with_her(k=8),
            dataclasses.replace(base, agent=DQNConfig(lr=3e-4)),
            base.with_her(strategy="none"),
            dataclasses.replace(base, seed=1),
        )
    }
    assert len(names) == 6
    same = dataclasses.replace(base, steps=50, eval_every=7, video_every=3, device="cpu")
    expected = Path("runs/herkit-BitFlip-v0-dqn-future-s0")
    assert run_directory(same) == run_directory(base) == expected
    # The README's examples, in order, each in a directory of its own.
    args = ["--steps", "200", "--eval-every", "200", *QUICK]
    for extra in ([], ["--env-kwargs", "n_bits=30"], ["--k", "2"]):
        done = herkit("train", *args, *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 3


@pytest.mark.slow("herkit train runs in subprocesses")
def test_hints_for_a_used_directory_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["--out", str(out), "--eval-every", "200", *QUICK]
    assert herkit("train", *args, "--steps", "200").returncode == 0
    same = herkit("train", *args, "--steps", "400")  # same learning settings: --resume
    assert same.returncode == 2 and f"--resume {out} --steps 400" in same.stderr
    assert "finished at 200 env steps" in same.stderr
    followed = herkit("train", "--resume", str(out), "--steps", "400", *QUICK)
    assert followed.returncode == 0, followed.stderr
    other = herkit("train", *args, "--steps", "400", "--k", "2")  # --resume would refuse k
    assert other.returncode == 2 and "other settings (k)" in other.stderr
    assert "continue it with --resume" not in other.stderr


def test_a_used_directory_says_whether_its_run_finished_and_what_trains_it_on(
    tmp_path: Path,
) -> None:
    """A plain --resume of a finished run is refused (nothing left to train): the hint
    for a finished run is --resume with a larger --steps."""
    from herkit.rundir.directory import check_new_run_dir
    from herkit.training.loop import train
    from runs import quiet

    run = tmp_path / "run"
    config = quiet(steps=200, eval_every=200, eval_episodes=2, out=str(run))
    train(config)

    def refusal(**changes: Any) -> str:
        with pytest.raises(ValueError) as refused:
            check_new_run_dir(run, dataclasses.replace(config, **changes))
        return str(refused.value)

    assert refusal() == (
        f"run directory {str(run)!r} already holds this run, finished at 200 env steps: train "
        f"it further with --resume {run} --steps N (N above 200), or train into another --out "
        "DIR (--overwrite replaces it)"
    )
    assert f"train it on to 400 with --resume {run} --steps 400, or" in refusal(steps=400)
    paths = RunPaths(run)  # as if stopped early (Ctrl-C, a failure): a plain --resume goes on
    paths.config.write_text(json.dumps(json.loads(paths.config.read_text()) | {"steps": 1000}))
    assert refusal() == (
        f"run directory {str(run)!r} already holds this run, stopped at 200 of 1,000 env "
        f"steps: continue it with --resume {run}, or train into another --out DIR "
        "(--overwrite replaces it)"
    )


BOOM = '''
import gymnasium as gym
from herkit.envs.bitflip import BitFlipEnv


class Boom(BitFlipEnv):
    """Bit flipping that fails after LIMIT steps of its process (200 of them probe the env)."""

    steps = 0

    def step(self, action):
        Boom.steps += 1
        if Boom.steps > LIMIT:
            raise RuntimeError("boom")
        return super().step(action)


gym.register("Boom-v0", entry_point=Boom, max_episode_steps=10)
'''


@pytest.mark.slow("herkit train runs in subprocesses")
def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing_and_can_be_retried(
    tmp_path: Path,
) -> None:
    (tmp_path / "boom.py").write_text("LIMIT = 100\n" + BOOM)  # fails in the probe
    failed = herkit("train", "boom:Boom-v0", "--steps", "1000", *QUICK, cwd=tmp_path)
    assert failed.returncode == 3 and "RuntimeError('boom')" in failed.stderr
    assert not (tmp_path / "runs").exists()
    # One that fails after its first steps keeps them: a checkpoint at its last whole step.
    (tmp_path / "boom.py").write_text("LIMIT = 400\n" + BOOM)
    failed = herkit("train", "boom:Boom-v0", "--steps", "1000", *QUICK, cwd=tmp_path)
    assert failed.returncode == 3 and "checkpoint at env step 200 kept" in failed.stderr
    assert [path.name for path in (tmp_path / "runs").iterdir()] == ["Boom-v0-dqn-future-s0"]
    # A directory left by a run killed before its first checkpoint (config.json, no
    # checkpoint) is not a run: --resume says so, and the same command replaces it.
    out = tmp_path / "killed"
    out.mkdir()
    paths = RunPaths(out)
    paths.config.write_text(json.dumps(preset_config("herkit/BitFlip-v0").to_dict()))
    paths.progress.write_text("env_steps\n")
    resumed = herkit("train", "--resume", str(out), *QUICK)
    assert resumed.returncode == 2 and "failed before its first checkpoint" in resumed.stderr
    assert "without --resume" in resumed.stderr
    retried = herkit("train", "--out", str(out), "--steps", "200", "--eval-every", "200", *QUICK)
    assert retried.returncode == 0, retried.stderr
    assert "replacing it" in retried.stderr
    assert json.loads(paths.summary.read_text())["env_steps"] == 200
    # Files that are not a herkit run are never replaced.
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    refused = herkit("train", "--out", str(other), *QUICK)
    assert refused.returncode == 2 and "not a herkit run" in refused.stderr
    assert (other / "notes.txt").read_text() == "keep"
