"""Videos and statistics of a trained policy: herkit eval --video, train --video-every."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest

import herkit
from herkit.buffer.conventions import SuccessSignal
from herkit.presentation.video import RenderError, label_frames, render_frame, write_video
from herkit.rundir.paths import RunPaths
from herkit.training.build import make_vector_env
from herkit.training.evaluation import episode_seeds, evaluate
from herkit.training.loop import train
from runs import herkit as herkit_cli
from runs import quiet

HAS_ROBOTICS = importlib.util.find_spec("gymnasium_robotics") is not None


@pytest.fixture
def bitflip_run(train_once: Callable[..., Path]) -> Path:
    """A policy trained once on 8 bits, whose episodes the tests play and record."""
    return train_once(steps=2_000, eval_every=1_000, env_kwargs=("n_bits=8",))


@pytest.mark.slow("training, then videos encoded")
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_eval_video_has_one_frame_per_step_played(
    bitflip_run: Path, tmp_path: Path, suffix: str
) -> None:
    video = tmp_path / f"episodes{suffix}"
    done = herkit_cli("eval", str(bitflip_run), "--video", str(video), "--episodes", "4", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    steps = round(result["mean_length"] * result["episodes"])
    assert result["episodes"] == 4 and result["frames"] == steps
    frames = iio.imread(video, index=None)
    assert frames.shape[0] == steps and frames.shape[1:3] == (112, 288)  # 8 bits
    said = done.stderr.splitlines()  # the time it takes, first, and each episode as it ends
    assert "herkit: recording 4 episodes (at most 32 frames, " in said[0]
    assert [line.split(" recorded")[0] for line in said[1:5]] == [
        f"herkit: episode {k}/4" for k in range(1, 5)
    ]
    assert "left" in said[1] and "left" not in said[4]


@pytest.mark.slow("training, then herkit eval in subprocesses")
def test_eval_reports_return_and_length(bitflip_run: Path) -> None:
    done = herkit_cli("eval", str(bitflip_run), "--episodes", "30", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) >= {"success_rate", "mean_return", "mean_length", "deterministic"}
    assert result["deterministic"] is True
    again = json.loads(herkit_cli("eval", str(bitflip_run), "--episodes", "30", "--json").stdout)
    assert again == result  # deterministic policy, same seed
    stochastic = herkit_cli("eval", str(bitflip_run), "--episodes", "30", "--stochastic", "--json")
    assert json.loads(stochastic.stdout)["deterministic"] is False
    text = herkit_cli("eval", str(bitflip_run), "--episodes", "5")
    assert "mean return" in text.stdout and "mean length" in text.stdout


@pytest.mark.slow("a training run, then videos of its episodes")
def test_returns_and_lengths_are_those_of_the_episodes_played(bitflip_run: Path) -> None:
    policy = herkit.load_policy(bitflip_run)
    envs = make_vector_env(policy.config, 3, seed_offset=0)
    try:
        seeds = episode_seeds((5,), 10)
        result = evaluate(policy.agent, envs, seeds, success_of=SuccessSignal("is_success"))
    finally:
        envs.close()
    assert len(result.returns) == len(result.lengths) == len(result.successes) == 10
    # bit flipping: -1 per step, 0 on the step that reaches the goal (and ends the episode)
    expected = [
        -length + success for length, success in zip(result.lengths, result.successes, strict=True)
    ]
    assert result.returns == expected
    assert all(1 <= length <= 8 for length in result.lengths)


@pytest.mark.slow("a training run writing videos")
def test_train_video_every_writes_videos_and_tensorboard(tmp_path: Path) -> None:
    run = tmp_path / "run"
    config = quiet(out=str(run), steps=600, eval_every=300, video_every=250, tensorboard=True)
    train(config)
    paths = RunPaths(run)
    videos = sorted(paths.video(0).parent.iterdir())
    assert videos == [paths.video(250), paths.video(500), paths.video(600)]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(paths.tensorboard), size_guidance={"images": 0})
    events.Reload()
    images = events.Images("eval/video")
    assert [image.step for image in images] == [250, 500, 600]
    assert images[0].encoded_image_string[:6] == b"GIF89a"


def test_render_frame_errors() -> None:
    with pytest.raises(RenderError, match="render_mode='rgb_array'"):
        render_frame(gym.make("herkit/BitFlip-v0", render_mode="ansi"))
    with pytest.raises(ValueError, match=r"must end in \.mp4 or \.gif"):
        write_video("out.avi", [np.zeros((16, 16, 3), np.uint8)], fps=4)


def test_labels_show_the_outcome() -> None:
    frame = np.full((64, 64, 3), 255, np.uint8)
    won, lost, unknown = (label_frames([frame], "x", outcome)[0] for outcome in (True, False, None))
    assert won[2, 60, 1] > won[2, 60, 0]  # green banner
    assert lost[2, 60, 0] > lost[2, 60, 1]  # red banner
    assert unknown[2, 60, 0] == unknown[2, 60, 1]  # grey
    assert (won[32:] == 255).all()  # the picture under the banner is untouched


@pytest.mark.skipif(not HAS_ROBOTICS, reason="needs the robotics extra (gymnasium-robotics)")
def test_fetch_renders_offscreen() -> None:
    from herkit.envs import register_robotics_envs

    assert register_robotics_envs()  # MUJOCO_GL chosen, then Fetch registered
    env = gym.make("FetchReach-v4", render_mode="rgb_array")
    env.reset(seed=0)
    frame = render_frame(env)
    env.close()
    assert frame.shape == (480, 480, 3) and frame.dtype == np.uint8
    assert frame.std() > 10  # a picture, not a blank


@pytest.mark.skipif(not HAS_ROBOTICS, reason="needs the robotics extra (gymnasium-robotics)")
def test_missing_opengl_library_is_named() -> None:
    """With MUJOCO_GL naming a backend, either it renders or the error says what to install."""
    code = (
        "import herkit\n"
        "from herkit.envs import make_goal_env\n"
        "from herkit.presentation.video import render_frame\n"
        "env = make_goal_env('FetchReach-v4', render_mode='rgb_array')\n"
        "env.reset(seed=0)\n"
        "print(render_frame(env).shape)\n"
    )
    environ = {**os.environ, "MUJOCO_GL": "osmesa"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120
    )
    if done.returncode == 0:
        assert done.stdout.strip() == "(480, 480, 3)"
    else:
        assert "MUJOCO_GL=osmesa" in done.stderr and "apt install libosmesa6" in done.stderr


@pytest.mark.slow("gradient steps on a dataset, then env steps, writing videos")
def test_videos_on_the_dataset_alone_keep_their_own_names(tmp_path: Path) -> None:
    """A video at gradient step 10 and one at env step 10 are two files (the second wrote
    over the first when both were ``step-N``)."""
    from herkit.cli import main
    from runs import QUICK, offline_flags, point_reach_dataset

    dataset = point_reach_dataset(tmp_path / "data.npz", episodes=4)
    run = tmp_path / "run"
    flags = ["--steps", "20", "--n-envs", "2", "--video-every", "10", "--eval-every", "20"]
    assert main(["train", *offline_flags(dataset, 20), *flags, "--out", str(run), *QUICK]) == 0
    paths = RunPaths(run)
    on_dataset = [paths.video(10, gradient_steps=True), paths.video(20, gradient_steps=True)]
    assert sorted(paths.video(0).parent.iterdir()) == [
        *on_dataset,
        paths.video(10),
        paths.video(20),
    ]
