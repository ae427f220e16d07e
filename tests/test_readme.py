"""The README's Python examples, run as a newcomer would run them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import ROOT, python_block, python_blocks

from herkit.rundir.paths import RunPaths
from runs import QUICK, herkit


def own_env_example() -> str:
    """The Python block of the "Your own environment" guide."""
    return python_block("Your own environment", ROOT / "docs" / "guide-own-env.md")


def test_the_buffer_example_runs_without_torch_and_ends_episodes_as_the_env_declares() -> None:
    """The README's buffer example, as written, in a fresh interpreter without torch."""
    code = (
        "import sys\nsys.modules['torch'] = None  # the core install has no torch\n"
        + python_blocks("The buffer in your own loop")[0]
        + "assert buf.terminal_on_success and len(buf) == 1_000 and len(batch) == 256\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "terminal_on_success=True (declared by BitFlipEnv" in done.stdout
    assert "reward_range=(-1.0, 0.0)" in done.stdout


@pytest.mark.slow("README's training example")
def test_the_gradient_step_on_the_buffers_batch_changes_the_network() -> None:
    """Both blocks of the README's buffer section, in order: one update that moves the
    Q-network towards targets within the returns' range."""
    first, step = python_blocks("The buffer in your own loop")
    code = (
        first
        + step
        + "assert all(not torch.equal(a, b) for a, b in zip(q.parameters(), before0))\n"
        + "assert target.min() >= -50 and target.max() <= 0 and torch.isfinite(loss)\n"
    )
    code = code.replace(
        "optimizer = torch.optim.Adam(q.parameters(), lr=1e-3)\n",
        "optimizer = torch.optim.Adam(q.parameters(), lr=1e-3)\n"
        "before0 = [p.detach().clone() for p in q.parameters()]\n",
    )
    assert "before0 = " in code
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow("the README's SB3 example as written: SAC learns for 5,000 env steps")
def test_the_sb3_example_ends_with_its_success_rate_above_a_still_policys(tmp_path: Path) -> None:
    """The example's last line tells a reader whether it learned: the trained policy's
    success rate beside that of a policy that never moves, on the same fresh episodes."""
    pytest.importorskip("stable_baselines3", reason="install with: bash install.sh sb3")
    code = python_blocks("Stable-Baselines3 and cpprb by one import")[0]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = re.fullmatch(r"success rate (\d\.\d\d); a still policy's (\d\.\d\d)\n", done.stdout)
    assert said, done.stdout
    learned, still = map(float, said.groups())
    assert learned >= still + 0.5, done.stdout  # seeds 0-3: 0.95, 1.00, 0.90, 0.80 at 5,000
    assert (tmp_path / "buffer.pkl").stat().st_size > 0


@pytest.mark.slow("a training run in a subprocess")
def test_your_own_env_trains_from_its_folder_with_an_algorithm_for_its_actions(
    tmp_path: Path,
) -> None:
    (tmp_path / "myreach.py").write_text(own_env_example())
    out = tmp_path / "runs" / "mine"
    args = ["--steps", "300", "--eval-every", "300", "--out", str(out), *QUICK]
    # The `herkit` command itself, not `python -m herkit` (which puts the folder on the path).
    command = str(Path(sys.executable).with_name("herkit"))
    command = command if Path(command).exists() else shutil.which("herkit")
    assert command, "the herkit command is not installed (bash install.sh)"
    done = subprocess.run(
        [command, "train", "myreach:MyReach-v0", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "continuous action space: training with --algo sac" in done.stderr
    assert json.loads(RunPaths(out).config.read_text())["algo"] == "sac"
    told = herkit(
        "train", "myreach:MyReach-v0", *args, "--algo", "ddpg", "--overwrite", cwd=tmp_path
    )
    assert told.returncode == 0 and "--algo sac" not in told.stderr
    # One episode is one episode; a video of an env that cannot render says so.
    one = herkit("eval", str(out), "--episodes", "1", cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.strip().endswith("over 1 episode"), one.stdout
    video = herkit("eval", str(out), "--video", str(tmp_path / "v.mp4"), cwd=tmp_path)
    assert video.returncode == 2 and video.stderr.count("\n") == 1
    assert "cannot render" in video.stderr and "--env-kwargs" not in video.stderr
