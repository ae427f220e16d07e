"""The `herkit` command in subprocesses, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from herkit.logging import read_progress

QUICK = ["--no-progress", "--no-tensorboard", "--eval-episodes", "3"]


def herkit(
    *args: str, timeout: float = 300, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "herkit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def test_train_eval_plot(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = herkit("train", "--steps", "400", "--eval-every", "200", "--out", str(run), *QUICK)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["env_steps"] == 400 and summary["env_id"] == "herkit/BitFlip-v0"
    assert json.loads((run / "summary.json").read_text()) == summary

    evaluated = herkit("eval", str(run), "--episodes", "12", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert result["episodes"] == 12 and 0.0 <= result["success_rate"] <= 1.0
    assert result["env_steps"] == 400

    png = tmp_path / "both.png"
    plotted = herkit("plot", str(run), str(run), "-o", str(png))
    assert plotted.returncode == 0, plotted.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_env_kwargs_and_tensorboard(tmp_path: Path) -> None:
    done = herkit(
        "train", "--env-kwargs", "n_bits=6", "max_steps=6", "--steps", "120", "--out",
        str(tmp_path), "--eval-every", "60", "--eval-episodes", "2", "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "config.json").read_text())["env_kwargs"] == [
        "n_bits=6",
        "max_steps=6",
    ]
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--steps", "-5"], "steps must be an int >= 1"),
        (["train", "NoSuchEnv-v9"], "NoSuchEnv-v9"),
        (["train", "CartPole-v1"], "not a goal env"),
        (["train", "--algo", "ddpg"], "algo='ddpg'"),
        (["train", "--algo", "ppo"], "ppo"),
        (["train", "--resume", "/nonexistent/run"], "has no config.json"),
        (["eval", "/nonexistent/run"], "has no config.json"),
        (["plot", "/nonexistent/run"], "has no progress.csv"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_code_2(
    args: list[str], message: str, tmp_path: Path
) -> None:
    done = herkit(*args, *QUICK if args[0] == "train" else [], cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # a run that cannot start leaves nothing


def test_resume_after_a_kill_continues_and_keeps_progress_monotone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["train", "--steps", "3000", "--eval-every", "250", "--checkpoint-every", "500"]
    process = subprocess.Popen(
        [sys.executable, "-m", "herkit", *args, "--out", str(run), *QUICK],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    state = run / "checkpoint" / "state.json"
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists() and json.loads(state.read_text())["state"]["env_steps"] >= 1000:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = json.loads(state.read_text())["state"]["env_steps"]

    resumed = herkit("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["env_steps"] == 3000
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == sorted(set(steps)) and steps[-1] == 3000
    assert any(step <= killed_at for step in steps) and any(step > killed_at for step in steps)


def test_resume_extends_a_finished_run_and_refuses_other_changes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["--eval-every", "200", "--checkpoint-every", "400", *QUICK]
    first = herkit("train", "--steps", "400", "--out", str(run), *args)
    assert first.returncode == 0, first.stderr
    config_before = (run / "config.json").read_text()

    refused = herkit("train", "--resume", str(run), "--steps", "800", "--algo", "ddpg")
    assert refused.returncode == 2
    assert "algo cannot change" in refused.stderr and "steps" in refused.stderr
    assert (run / "config.json").read_text() == config_before  # nothing stored changed

    extended = herkit("train", "--resume", str(run), "--steps", "800", cwd=tmp_path)
    assert extended.returncode == 0, extended.stderr
    assert json.loads((run / "summary.json").read_text())["env_steps"] == 800
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == [200, 400, 600, 800]
    assert json.loads((run / "config.json").read_text())["steps"] == 800
