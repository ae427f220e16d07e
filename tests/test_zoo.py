"""rl-zoo3 with herkit's buffer by one changed line: the hyperparameter file of the SB3 guide
trains, its agent enjoys, and a second training continues from the saved agent and its
replay buffer (herkit's, pickled and loaded by the zoo)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import ROOT, blocks, commands

pytest.importorskip("rl_zoo3", reason="install with: bash install.sh zoo")
pytest.importorskip("gymnasium_robotics", reason="install with: bash install.sh robotics")

GUIDE = ROOT / "docs" / "guide-sb3.md"
SHORT = [
    "--device",
    "cpu",
    "--eval-freq",
    "-1",
    "--seed",
    "0",
    "--hyperparams",
    "learning_starts:100",
    "policy_kwargs:dict(net_arch=[32, 32], n_critics=1)",
]
"""Appended to the guide's training lines: 100 random steps, small networks, no
evaluations (the guide's own run is 20,000 steps)."""


def the_guides_file() -> str:
    (yaml,) = [block.code for block in blocks(GUIDE) if block.language == "yaml"]
    return yaml


def the_guides_lines() -> list[list[str]]:
    """The guide's ``python -m rl_zoo3...`` lines, as written: train, enjoy, train on."""
    zoo = [
        words
        for block in blocks(GUIDE)
        if block.language == "bash"
        for words in commands(block)
        if words[:2] == ["python", "-m"] and words[2].startswith("rl_zoo3.")
    ]
    assert [words[2] for words in zoo] == ["rl_zoo3.train", "rl_zoo3.enjoy", "rl_zoo3.train"]
    return zoo


def run(words: list[str], *more: str, cwd: Path) -> str:
    """A line of the guide, in this interpreter, with ``more`` appended."""
    command = [sys.executable, *words[1:], *more]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (" ".join(words), done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


@pytest.mark.slow("rl-zoo3 trains, enjoys and trains on, in subprocesses")
def test_the_guides_zoo_lines_train_enjoy_and_reload_with_herkits_buffer(
    tmp_path: Path,
) -> None:
    """The guide's file and its three lines as written, the training ones shortened."""
    yaml = the_guides_file()
    assert "replay_buffer_class: \"importlib.import_module('herkit.sb3').HerReplayBuffer\"" in yaml
    (tmp_path / "herkit_her.yml").write_text(yaml)
    train, enjoy, train_on = the_guides_lines()
    run(train, "-n", "400", *SHORT, cwd=tmp_path)
    saved_run = tmp_path / "logs" / "tqc" / "FetchReach-v4_1"
    with open(saved_run / "replay_buffer.pkl", "rb") as file:
        saved = pickle.load(file)
    assert type(saved).__module__ == "herkit.sb3.buffer" and saved.size() == 400
    shown = run(enjoy, "-n", "100", cwd=tmp_path)
    assert "Success rate" in shown
    again = run(train_on, "-n", "100", "--save-replay-buffer", *SHORT, cwd=tmp_path)
    assert "Loading replay buffer" in again
    with open(tmp_path / "logs" / "tqc" / "FetchReach-v4_2" / "replay_buffer.pkl", "rb") as file:
        assert pickle.load(file).size() == 500  # the saved 400 steps, and 100 more
