"""rl-zoo3 with herkit's buffer by one changed line: the hyperparameter file of the SB3 guide
trains, its agent enjoys, and a second training continues from the saved agent and its
replay buffer (herkit's, pickled and loaded by the zoo)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import ROOT, blocks

pytest.importorskip("rl_zoo3", reason="install with: bash install.sh zoo")
pytest.importorskip("gymnasium_robotics", reason="install with: bash install.sh robotics")

GUIDE = ROOT / "docs" / "guide-sb3.md"
ZOO = ["--algo", "tqc", "--env", "FetchReach-v4", "--gym-packages", "gymnasium_robotics",
       "--device", "cpu", "-f", "logs"]  # fmt: skip
SHORT = ["--eval-freq", "-1", "--seed", "0", "--hyperparams", "learning_starts:100",
         "policy_kwargs:dict(net_arch=[32, 32], n_critics=1)"]  # fmt: skip
"""The guide's run, made short: 100 random steps, small networks, no evaluations."""


def zoo(module: str, *args: str, cwd: Path) -> str:
    command = [sys.executable, "-m", f"rl_zoo3.{module}", *ZOO, *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def the_guides_file() -> str:
    (yaml,) = [block.code for block in blocks(GUIDE) if block.language == "yaml"]
    return yaml


@pytest.mark.slow("rl-zoo3 trains, enjoys and trains on, in subprocesses")
def test_the_guides_zoo_file_trains_enjoys_and_reloads_with_herkits_buffer(
    tmp_path: Path,
) -> None:
    yaml = the_guides_file()
    assert "replay_buffer_class: \"importlib.import_module('herkit.sb3').HerReplayBuffer\"" in yaml
    (tmp_path / "herkit_her.yml").write_text(yaml)
    zoo("train", "--conf-file", "herkit_her.yml", "-n", "400", "--save-replay-buffer", *SHORT,
        cwd=tmp_path)  # fmt: skip
    run = tmp_path / "logs" / "tqc" / "FetchReach-v4_1"
    with open(run / "replay_buffer.pkl", "rb") as file:
        saved = pickle.load(file)
    assert type(saved).__module__ == "herkit.sb3.buffer" and saved.size() == 400
    shown = zoo("enjoy", "--exp-id", "1", "-n", "100", "--no-render", cwd=tmp_path)
    assert "Success rate" in shown
    again = zoo("train", "--conf-file", "herkit_her.yml", "-n", "100", "--save-replay-buffer",
                "-i", str(run / "FetchReach-v4.zip"), *SHORT, cwd=tmp_path)  # fmt: skip
    assert "Loading replay buffer" in again
    with open(tmp_path / "logs" / "tqc" / "FetchReach-v4_2" / "replay_buffer.pkl", "rb") as file:
        assert pickle.load(file).size() == 500  # the saved 400 steps, and 100 more
