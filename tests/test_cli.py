"""The `herkit` command in subprocesses, as a user runs it."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from herkit import __version__ as herkit_version
from herkit.agents.registry import algo_names
from herkit.buffer.strategies import STRATEGIES
from herkit.flags import auto_flags
from herkit.rundir.logs import read_progress
from herkit.rundir.paths import RunPaths
from runs import QUICK, herkit, start_until

OFFLINE_SPOKEN = " or ".join(", ".join(algo_names(offline=True)).rsplit(", ", 1))
"""The offline agents as the command line lists them: "gcbc, gcivl or gciql"."""


@pytest.mark.slow("herkit train, eval and plot in subprocesses")
def test_train_eval_plot(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = herkit("train", "--steps", "400", "--eval-every", "200", "--out", str(run), *QUICK)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["env_steps"] == 400 and summary["env_id"] == "herkit/BitFlip-v0"
    assert json.loads(RunPaths(run).summary.read_text()) == summary

    evaluated = herkit("eval", str(run), "--episodes", "12", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert result["episodes"] == 12 and 0.0 <= result["success_rate"] <= 1.0
    assert result["env_steps"] == 400

    png = tmp_path / "both.png"
    plotted = herkit("plot", str(run), str(run), "-o", str(png))
    assert plotted.returncode == 0, plotted.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow("a herkit train run in a subprocess")
def test_env_kwargs_and_tensorboard(tmp_path: Path) -> None:
    done = herkit(
        "train",
        "--env-kwargs",
        "n_bits=6",
        "max_steps=6",
        "--steps",
        "120",
        "--out",
        str(tmp_path),
        "--eval-every",
        "60",
        "--eval-episodes",
        "2",
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    paths = RunPaths(tmp_path)
    assert json.loads(paths.config.read_text())["env_kwargs"] == ["n_bits=6", "max_steps=6"]
    assert list(paths.tensorboard.glob("events.out.tfevents.*"))


@pytest.mark.slow("a herkit subprocess per bad input")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--steps", "-5"], "error: --steps must be an int >= 1, got -5"),
        (["train", "--algo", "td3", "--td3.batch-size", "0"], "error: --td3.batch-size must"),
        (["train", "--env-kwargs", "nbits=10"], "'nbits' (--env-kwargs) is not accepted"),
        (["train", "--stepz", "5"], "--stepz: did you mean --steps? (see herkit train --help)"),
        (["train", "--terminal-on-success", "maybe"], "terminal-on-success"),
        (["plot"], "at least one run directory"),
        (["evl", "x"], "unknown command 'evl' (did you mean herkit eval?)"),
        (["trian"], "unknown command 'trian' (did you mean herkit train?)"),
        (["bench", "buffer", "--peers"], "--peers"),
        (["train", "NoSuchEnv-v9"], "NoSuchEnv-v9"),
        (["train", "CartPole-v1"], "not a goal env"),
        (["train", "--algo", "ddpg"], "algo='ddpg'"),
        (["train", "--algo", "ppo"], "ppo"),
        (["train", "--resume", "/nonexistent/run"], "'/nonexistent/run' does not exist"),
        (["eval", "/nonexistent/run"], "run directory '/nonexistent/run' does not exist"),
        (["eval", "."], "run directory '.' is not a herkit run (it has no config.json)"),
        (["plot", "/nonexistent/run"], "run directory '/nonexistent/run' does not exist"),
        (["plot", "."], "run directory '.' has no evaluation yet (no progress.csv)"),
        (["train", "--steps", "abc"], "--steps expects a whole number, got 'abc'"),
        (["train", "--algo", "ddpg", "--ddpg.lr", "x"], "--ddpg.lr expects a number, got 'x'"),
        (["train", "--shaped-reward", "1"], "expects 2 values (FLOAT FLOAT), got 1"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_code_2(
    args: list[str], message: str, tmp_path: Path
) -> None:
    done = herkit(*args, *QUICK if args[0] == "train" else [], cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert done.stderr.startswith("herkit: error: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()  # a run that cannot start leaves nothing


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where CUDA is missing")
def test_cuda_without_cuda_is_one_line(tmp_path: Path) -> None:
    done = herkit("train", "--device", "cuda", *QUICK, cwd=tmp_path)
    assert done.returncode == 2 and "needs CUDA" in done.stderr and "--device cpu" in done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "runs").exists()


@pytest.mark.slow("herkit train runs in subprocesses")
def test_bad_files_are_one_line_naming_the_file(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep")
    done = herkit("train", "--out", str(afile), *QUICK)
    assert done.returncode == 2 and "existing file" in done.stderr and str(afile) in done.stderr
    assert afile.read_text() == "keep"

    run = tmp_path / "run"
    first = herkit("train", "--steps", "200", "--eval-every", "200", "--out", str(run), *QUICK)
    assert first.returncode == 0, first.stderr
    again = herkit("train", "--resume", str(run))  # finished, and no larger --steps
    assert again.returncode == 2 and "already trained 200 env steps" in again.stderr
    assert "larger --steps" in again.stderr

    RunPaths(run).config.write_text("{not json")
    for args in (["eval", str(run)], ["train", "--resume", str(run), "--steps", "400"]):
        done = herkit(*args)
        assert done.returncode == 2, done.stderr
        assert f"{RunPaths(run).config} is not a valid herkit config" in done.stderr
        assert done.stderr.count("\n") == 1

    png = tmp_path / "new" / "folder" / "curves.png"  # plot makes the missing folders
    plotted = herkit("plot", str(run), "-o", str(png))
    assert plotted.returncode == 0 and png.exists(), plotted.stderr


def test_version_and_bare_flags() -> None:
    done = herkit("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"herkit {herkit_version}"
    assert herkit("-V").stdout == done.stdout
    helped = herkit("--help", env={**os.environ, "COLUMNS": "100"})
    assert helped.returncode == 0, helped.stderr
    assert "[-V]" in helped.stdout.splitlines()[0]  # usage: herkit [-h] [-V] {train,...}
    assert re.search(r"-V, --version +print herkit's version and exit", helped.stdout)
    assert f"herkit {herkit_version}: " in helped.stdout
    assert auto_flags(["--terminal-on-success", "--steps", "5"])[:2] == [
        "--terminal-on-success",
        "True",
    ]
    assert auto_flags(["--no-terminal-on-success"]) == ["--terminal-on-success", "False"]
    assert auto_flags(["--terminal-on-success", "None"]) == ["--terminal-on-success", "None"]


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow("herkit train runs in subprocesses")
def test_a_used_run_directory_is_never_clobbered(tmp_path: Path) -> None:
    args = ["--steps", "200", "--eval-every", "200", *QUICK]
    first = herkit("train", *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "runs" / "herkit-BitFlip-v0-dqn-future-s0"  # strategy in the name
    lines = first.stderr.strip().splitlines()
    assert str(Path("runs") / run.name) in lines[0] and str(Path("runs") / run.name) in lines[-1]
    paths = RunPaths(run)
    assert json.loads(paths.config.read_text())["out"] == str(Path("runs") / run.name)
    before = files_of(run)

    second = herkit("train", *args, "--eval-every", "100", cwd=tmp_path)  # same directory
    assert second.returncode == 2
    message = second.stderr.strip()
    assert message.count("\n") == 0 and str(Path("runs") / run.name) in message
    assert "--resume" in message and "--out" in message
    assert files_of(run) == before  # byte for byte

    plain = herkit("train", *args, "--strategy", "none", cwd=tmp_path)  # its own directory
    assert plain.returncode == 0, plain.stderr
    assert RunPaths(tmp_path / "runs" / "herkit-BitFlip-v0-dqn-none-s0").summary.exists()
    assert files_of(run) == before

    replaced = herkit("train", *args, "--eval-every", "400", "--overwrite", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert json.loads(paths.summary.read_text())["env_steps"] == 200
    assert json.loads(paths.config.read_text())["eval_every"] == 400


@pytest.mark.slow("herkit train in subprocesses, signalled and resumed")
@pytest.mark.parametrize(
    ("signum", "envs", "group"),
    [
        (signal.SIGINT, [], False),
        (signal.SIGTERM, [], False),
        (signal.SIGINT, ["--n-envs", "2", "--env-workers", "1"], False),  # overlapped, a worker
        # to the whole process group, workers too (timeout, a job scheduler, Ctrl-C)
        (signal.SIGTERM, ["--n-envs", "2", "--env-workers", "2"], True),
    ],
)
def test_a_signal_checkpoints_where_it_stopped_and_resume_continues_there(
    tmp_path: Path, signum: int, envs: list[str], group: bool
) -> None:
    run = tmp_path / "run"
    paths = RunPaths(run)
    args = ["train", "--steps", "100000", "--eval-every", "250", "--checkpoint-every", "50000"]
    args += envs
    process = start_until(
        [*args, "--out", str(run)],
        lambda: paths.progress.exists() and len(read_progress(run)) >= 3,
        group=group,
    )
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stderr.count(f"{signal.Signals(signum).name}: stopping") == 1, stderr  # the trainer's
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("herkit: interrupted at ") and f"herkit train --resume {run}" in last
    stopped_at = json.loads((paths.checkpoint / "state.json").read_text())["state"]["env_steps"]
    assert f"interrupted at {stopped_at} env steps" in last
    assert 750 <= stopped_at < 50000  # the step where it stopped, not a periodic checkpoint
    summary = json.loads(paths.summary.read_text())
    assert summary["interrupted"] is True and summary["env_steps"] == stopped_at
    assert paths.curve.exists()

    resumed = herkit("train", "--resume", str(run), "--steps", str(stopped_at + 500))
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(paths.summary.read_text())
    assert summary["env_steps"] == stopped_at + 500 and "interrupted" not in summary
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == sorted(set(steps)) and steps[-1] == stopped_at + 500
    assert any(step <= stopped_at for step in steps)


def test_a_second_signal_stops_at_once() -> None:
    from herkit.runtime.console import StopOnSignal

    before = signal.getsignal(signal.SIGINT)
    with StopOnSignal() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        assert stop.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.slow("a herkit train run in a subprocess")
def test_output_to_a_file_or_pipe_gets_progress_lines_as_it_trains(tmp_path: Path) -> None:
    """Where stderr is no terminal (a log file, a job scheduler) there is no bar to redraw:
    a plain line follows each evaluation, before the run's last line."""
    done = herkit(
        "train",
        "--steps",
        "600",
        "--eval-every",
        "300",
        "--eval-episodes",
        "3",
        "--no-tensorboard",
        "--out",
        str(tmp_path / "run"),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    said = [i for i, line in enumerate(lines) if re.match(r"herkit: [\d,]+/600 env steps", line)]
    end = next(i for i, line in enumerate(lines) if line.startswith("herkit: done:"))
    assert len(said) == 2 and said[-1] < end, done.stderr
    first = lines[said[0]]
    assert first.startswith("herkit: 300/600 env steps (50%), success rate "), first
    assert all(word in first for word in ("env steps/s", "updates/s", "elapsed"))
    assert "left" not in first  # 256 of its 300 steps were the warm-up: no estimate from them
    assert "━" not in done.stderr + done.stdout  # no bar drawn into the file
    assert lines[0].startswith("herkit: training herkit/BitFlip-v0 (15 bits) with dqn"), lines
    mode = next(line for line in lines if line.startswith("herkit: update mode: "))
    assert mode.startswith("herkit: update mode: eager: PyTorch runs each update operation by")
    run = tmp_path / "run"
    assert lines[end + 1 :] == [  # where to look, and what a new user can do next
        f"herkit: report: {run / 'report.html'} (open it in a browser); curve: {run / 'curve.png'}",
        f"herkit: next: herkit eval {run} --video {run / 'policy.mp4'} (watch the policy), "
        f"or herkit train --resume {run} --steps 1200 (train twice as long)",
    ]
    assert (run / "report.html").is_file() and (run / "curve.png").is_file()


def test_a_progress_line_follows_every_evaluation_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from herkit.runtime.console import Progress

    state = types.SimpleNamespace(updates=0, success_rate=math.nan, eval_s=0.0)
    progress = Progress("[bold]env[/] algo", 1000, 0)  # stderr is captured: no terminal
    progress.update(state, 0)  # no evaluation yet, and not 30 s without a line
    state.updates, state.success_rate = 100, 0.25
    progress.update(state, 500, evaluated=True)
    progress.update(state, 500, evaluated=True)  # every evaluation gets its line
    progress.update(state, 1000, force=True)  # the last
    progress.close()
    offline = Progress("[bold]env[/] algo", 300, 0, unit="gradient steps")
    state.updates = 150
    offline.update(state, 150, evaluated=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith("herkit: 500/1,000 env steps (50%), success rate 0.25, ")
    assert " updates/s, " in lines[0] and lines[1].startswith("herkit: 500/1,000 env steps")
    assert lines[2].startswith("herkit: 1,000/1,000 env steps (100%), success rate 0.25, ")
    assert "left" in lines[0] and "left" not in lines[2]
    assert lines[3].startswith("herkit: 150/300 gradient steps (50%), success rate 0.25, ")
    assert " gradient steps/s, " in lines[3] and "about" in lines[3]


def test_the_time_left_waits_for_updates_and_counts_evaluations() -> None:
    """A run of 5,000 env steps: a warm-up of 500 env steps alone at 0.1 ms each, then
    20 ms per env step with its update, and a 1 s evaluation every 500 steps (88 s left at
    1,000). The warm-up alone says nothing of what follows; from the first stretch with
    updates on, the estimate is the time the rest takes."""
    from herkit.runtime.console import TimeLeft

    time_left = TimeLeft(updates_per_step=1.0)
    time_left.add(0.05 + 1.0, 500, 1, 1.0)  # the warm-up (its last step updated), an evaluation
    assert time_left.seconds(4500) is None  # its rate would say 0.5 s
    time_left.add(10.0 + 1.0, 500, 500, 1.0)
    assert time_left.seconds(4000) == pytest.approx(4000 * 0.020 + 8 * 1.0)
    assert time_left.seconds(0) is None


def test_a_phase_of_more_than_a_day_says_so_once_with_the_flag_that_sets_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """OGBench's 1,000,000 gradient steps at 2 s a step (a large update on a CPU): after
    30 s, the first plain line says about 23 days left, and one line says what fits a day;
    a phase of 1,000 such steps (33 minutes) says nothing more than its progress."""
    import herkit.runtime.console as console

    now = [0.0]
    monkeypatch.setattr(console, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    state = types.SimpleNamespace(updates=0, success_rate=math.nan, eval_s=0.0)
    flag = "--offline-steps"
    long = console.Progress("env", 1_000_000, 0, unit="gradient steps", budget_flag=flag)
    for done in (15, 30):  # a line at least every 30 s: one judgement, said once
        now[0], state.updates = 2.0 * done, done
        long.update(state, done)
    short = console.Progress("env", 1_000, 0, unit="env steps", updates_per_step=1.0)
    now[0], state.updates = 60.0 + 2.0 * 15, 45
    short.update(state, 15)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith("herkit: 15/1,000,000 gradient steps (0%), success rate not ")
    assert lines[0].endswith(", 0:30 elapsed, about 23 days 4 h left")  # 999,985 x 2 s
    assert ", 0.5 gradient steps/s, " in lines[0]  # not 0 steps/s
    assert lines[1] == (
        "herkit: this run is long: about 23 days 4 h left for 999,985 gradient steps at the "
        "speed so far; about 43,000 gradient steps fit in a day (--offline-steps 43000 ends "
        "there; a run resumed with a larger --offline-steps trains on)"
    )
    assert lines[2].startswith("herkit: 30/1,000,000 gradient steps") and "day" in lines[2]
    assert lines[3].startswith("herkit: 15/1,000 env steps") and lines[3].endswith(":50 left")


def test_help_counts_steps_and_episodes_as_each_kind_of_run_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every agent's --help: the cadences count env steps, or gradient steps on a dataset
    alone; episodes per task on an env with tasks; a field's help names no other agent
    (GCBC's unused discount is GCBC's alone)."""
    from herkit.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    for algo in algo_names():
        with pytest.raises(SystemExit) as done:
            main(["train", "--algo", algo, "--help"])
        assert done.value.code == 0
        text = " ".join(capsys.readouterr().out.replace("│", " ").split())
        help_of = {  # a flag's description: after its name, up to its default
            flag: re.findall(rf"{flag} ([A-Z].*?) \(default", text)[0]
            for flag in ("--eval-every INT", "--eval-episodes INT", "--checkpoint-every INT")
        }
        assert help_of["--eval-every INT"] == (
            "Env steps between evaluations (gradient steps while on a dataset alone)."
        )
        assert help_of["--eval-episodes INT"] == (
            "Episodes per evaluation (of each task, on an env with tasks)."
        )
        assert "(gradient steps while on a dataset" in help_of["--checkpoint-every INT"]
        unused = set(re.findall(r"[Uu]nused by (\w+)", text))
        assert unused <= {algo.upper()}, (algo, unused)
        if algo == "gcbc":
            assert "--gcbc.gamma FLOAT Unused by GCBC: it has no value function" in text
        if algo == "gciql":  # a sentence, not a method's name left by its markup
            assert "(OGBench's default 0.3; its pointmaze runs use 0.003, the entry's" in text
            assert ", pointmaze)" not in text


@pytest.mark.slow("a PointMaze training run in a subprocess")
def test_pointmaze_by_id_alone(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium_robotics", reason="needs herkit[robotics]")
    run = tmp_path / "run"
    done = herkit(
        "train",
        "PointMaze_UMaze-v3",
        "--steps",
        "300",
        "--eval-every",
        "300",
        "--warmup-steps",
        "100",
        "--env-kwargs",
        "max_episode_steps=50",
        "--out",
        str(run),
        *QUICK,
    )
    assert done.returncode == 0, done.stderr
    config = json.loads(RunPaths(run).config.read_text())
    assert config["algo"] == "sac"
    # the preset's continuing_task=False stays beside the kwarg given on the command line
    assert config["env_kwargs"] == ["continuing_task=False", "max_episode_steps=50"]
    assert config["reward_range"] == [0.0, 1.0] and config["success_key"] == "success"
    assert config["her"]["terminal_on_success"] is True
    assert "PointMazeEnv.continuing_task" in done.stderr


@pytest.mark.slow("herkit train in subprocesses, killed and resumed")
def test_resume_after_a_kill_continues_and_keeps_progress_monotone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["train", "--steps", "3000", "--eval-every", "250", "--checkpoint-every", "500"]
    state = RunPaths(run).checkpoint / "state.json"
    process = start_until(
        [*args, "--out", str(run)],
        lambda: state.exists() and json.loads(state.read_text())["state"]["env_steps"] >= 1000,
    )
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = json.loads(state.read_text())["state"]["env_steps"]

    resumed = herkit("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(RunPaths(run).summary.read_text())
    assert summary["env_steps"] == 3000
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == sorted(set(steps)) and steps[-1] == 3000
    assert any(step <= killed_at for step in steps) and any(step > killed_at for step in steps)


@pytest.mark.slow("herkit train runs in subprocesses")
def test_resume_extends_a_finished_run_and_refuses_other_changes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    paths = RunPaths(run)
    args = ["--eval-every", "200", "--checkpoint-every", "400", *QUICK]
    first = herkit("train", "--steps", "400", "--out", str(run), *args)
    assert first.returncode == 0, first.stderr
    config_before = paths.config.read_text()

    refused = herkit("train", "--resume", str(run), "--steps", "800", "--algo", "ddpg")
    assert refused.returncode == 2
    assert "algo cannot change" in refused.stderr and "steps" in refused.stderr
    assert paths.config.read_text() == config_before  # nothing stored changed

    extended = herkit("train", "--resume", str(run), "--steps", "800", cwd=tmp_path)
    assert extended.returncode == 0, extended.stderr
    assert json.loads(paths.summary.read_text())["env_steps"] == 800
    steps = [int(row["env_steps"]) for row in read_progress(run)]
    assert steps == [200, 400, 600, 800]
    assert json.loads(paths.config.read_text())["steps"] == 800


def test_help_wraps_each_description_only_where_the_terminal_ends() -> None:
    """tyro keeps an indented docstring's source line breaks; --help must not show them:
    every line of a flag's description but its last is filled as far as the next word
    allows (greedy wrapping)."""
    done = herkit("train", "--help", timeout=120, env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    inner = [line[2:-2] for line in done.stdout.splitlines() if line.startswith("│ ")]
    descriptions: list[list[str]] = [[]]
    for text in inner:
        if text.startswith("      ") and text.strip():
            descriptions[-1].append(text.rstrip())
        elif descriptions[-1]:
            descriptions.append([])
    wrapped = [lines for lines in descriptions if len(lines) > 1]
    assert len(wrapped) > 20, done.stdout
    width = len(inner[0])
    for lines in wrapped:
        for line, after in itertools.pairwise(lines):
            assert len(line) + 1 + len(after.split()[0]) > width, "\n".join(lines)


def test_train_help_says_whose_defaults_it_shows_and_only_their_algorithm() -> None:
    """Grouped (the HER settings, the algorithm's settings), the run's algorithm only, and
    the defaults named: bit flipping's budget is not an own env's."""
    env = {**os.environ, "COLUMNS": "100"}
    shown = herkit("train", "--help", timeout=120, env=env)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.replace("│", " ").split())  # the box's sides: not text
    assert "The defaults shown are herkit/BitFlip-v0's preset, for --algo dqn" in text
    assert "--steps INT" in text and "(default: 10000)" in text
    assert "100,000 for an env without a preset" in text
    boxes = [
        line.split("─ ")[1].split(" ─")[0]
        for line in shown.stdout.splitlines()
        if line.startswith("╭─ ")
    ]
    assert boxes == ["positional arguments", "options", "her options", "dqn options"]
    choices = ",".join(STRATEGIES)  # the registry's strategies, in its order, with their help
    assert "--ddpg.lr" not in text and f"--strategy {{{choices}}}" in text
    assert all(f"; {name}: " in text for name in list(STRATEGIES)[1:]), text
    assert "``" not in text and ":class:" not in text  # the docstrings' markup is gone
    dqn = text.split("dqn options")[1]
    assert "--dqn.lr FLOAT Adam learning rate of the Q-network." in dqn
    assert not re.search(r"\bactor", dqn), dqn  # DQN has no actor: no flag, no word of one
    td3 = " ".join(herkit("train", "--algo", "td3", "--help", env=env).stdout.split())
    assert "--td3.lr" in td3 and "--dqn.lr" not in td3 and "for --algo td3" in td3
    # 253 with --recipe, --dqn.target-every, --dqn.activation, --dqn.grad-clip-mode,
    # --dqn.normalizer and a goal mix of 3 or 4 weights; then about a line per strategy for
    # --strategy's help, which names each strategy of the registry and says what it does
    assert len(shown.stdout.splitlines()) < 250 + 2 * len(STRATEGIES)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["train", "--help"],
        ["train", "--steps", "-5"],
        ["train", "NoSuchEnv-v9"],
        ["eval", "--help"],
        ["plot"],
    ],
)
def test_help_and_bad_input_answer_without_importing_torch(args: list[str]) -> None:
    code = (
        "import sys\n"
        "from herkit.cli import main\n"
        "try:\n"
        f"    code = main({args!r})\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "print(code, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    exit_code, torch_imported = done.stdout.split()[-2:]
    assert exit_code in ("0", "2") and torch_imported == "False", done.stderr


BAD_DATASETS = {
    "missing": (None, "no such file"),
    "text": (b"not arrays\n", "is not an .npz file (not a zip archive): expected numpy's .npz"),
    "pickled": (
        "pickled",
        "its array 'observations' holds Python objects (pickled data), "
        "which herkit never loads: store numeric arrays",
    ),
    "nan": (
        "nan",
        "observations hold non-finite values (NaN or inf) in 1 rows, the first at row 3",
    ),
    "wide": (
        "wide",
        "its observations have shape (7,), herkit/PointReach-v0's have (4,): a "
        "dataset of another env?",
    ),
    "rows": (
        "rows",
        "observations (N, ...), actions (N, ...) and terminals (N,) must have one "
        "row per state, got shapes (30, 4), (29, 2), (30,)",
    ),
}
"""Bad datasets for herkit/PointReach-v0, each with what ``herkit train`` says of it."""


@pytest.mark.parametrize("name", sorted(BAD_DATASETS))
def test_a_bad_dataset_is_one_line_naming_the_file_and_the_problem(
    tmp_path: Path, name: str
) -> None:
    """Before torch loads (benchmarks/offline.py bad times it), nothing written."""
    import numpy as np

    content, words = BAD_DATASETS[name]
    path = tmp_path / "data.npz"
    arrays = {
        "observations": np.zeros((30, 4), np.float32),
        "actions": np.zeros((30, 2), np.float32),
        "terminals": np.eye(30)[-1] > 0,
    }
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "pickled":
        arrays["observations"] = np.array([{"a": 1}] * 30, dtype=object)
    elif content == "nan":
        arrays["observations"][3, 1] = np.nan
    elif content == "wide":
        arrays["observations"] = np.zeros((30, 7), np.float32)
    elif content == "rows":
        arrays["actions"] = arrays["actions"][:29]
    if content is not None and not isinstance(content, bytes):
        np.savez(path, **arrays)
    run = tmp_path / "run"
    done = herkit(
        "train",
        "herkit/PointReach-v0",
        "--dataset",
        str(path),
        "--algo",
        "gcbc",
        "--offline-steps",
        "10",
        "--out",
        str(run),
    )
    assert done.returncode == 2, done.stderr
    said = f"herkit: error: dataset '{path}'{'' if name == 'text' else ':'} {words}"
    assert done.stderr.startswith(said) and len(done.stderr.splitlines()) == 1
    assert not run.exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--algo", "gcivl"], "algo 'gcivl' is an offline agent: it trains on a recorded dataset"),
        (
            ["--algo", "ddpg", "--dataset", "D", "--offline-steps", "5"],
            f"--dataset trains an offline agent (--algo {OFFLINE_SPOKEN}); ddpg learns online",
        ),
        (
            ["--algo", "gcbc", "--dataset", "D"],
            "--dataset with nothing to train: give --offline-steps N",
        ),
        (
            ["--offline-steps", "5"],
            "offline_steps=5 are gradient steps on a dataset: give --dataset PATH",
        ),
    ],
)
def test_an_algorithm_and_its_data_that_do_not_go_together_are_refused(
    tmp_path: Path, flags: list[str], words: str
) -> None:
    import numpy as np

    data = tmp_path / "D.npz"
    np.savez(
        data,
        observations=np.zeros((30, 4), np.float32),
        actions=np.zeros((30, 2), np.float32),
        terminals=np.eye(30)[-1] > 0,
    )
    flags = [str(data) if flag == "D" else flag for flag in flags]
    done = herkit("train", "herkit/PointReach-v0", *flags, "--out", str(tmp_path / "run"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("herkit: error: ") and words in done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "run").exists()


def test_summaries_hold_figures_rounded_to_what_they_are_worth() -> None:
    """summary.json and `herkit eval --json` hold 0.228 and -2.2, not a float sum's
    0.22800000000000004 and -2.1999999999999997."""
    from herkit.config.run import config_for
    from herkit.training.evaluation import EvalResult
    from herkit.training.phase import first_state
    from herkit.training.state import summary_of

    result = EvalResult([1.0, 0.0, 0.0], [-1.1, -2.2, -3.3], [7, 8, 8])
    assert float(np.mean(result.returns)) != -2.2  # what rounding is for
    assert result.summary() == {
        "episodes": 3,
        "success_rate": 0.3333,
        "mean_return": -2.2,
        "mean_length": 7.6667,
    }
    config = config_for("herkit/BitFlip-v0")
    state = first_state(config)
    state.success_rate, state.wall_s = 0.22800000000000004, 1.23456789
    summary = summary_of(config, state, 1)
    assert summary["success_rate"] == 0.228 and summary["wall_s"] == 1.235


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--step", "10"], "--step: did you mean --steps?"),
        (["--learning-rate", "3"], "--learning-rate: did you mean --dqn.lr?"),  # the preset's
        (["pointmaze-medium-navigate-v0", "--learning_rate", "3"], "did you mean --gcivl.lr?"),
        (["--algo", "gcivl", "--batch", "3"], "--batch: did you mean --gcivl.batch-size?"),
        (["--her.k", "3"], "--her.k: did you mean --k?"),
        (["--algo", "sac", "--learning-rate", "3"], "--learning-rate: did you mean --sac.lr?"),
        (["--algo", "sac", "--batch", "3"], "--batch: did you mean --sac.batch-size?"),
        (["--timesteps", "3"], "--timesteps: did you mean --steps?"),
    ],
)
def test_an_unknown_flag_gets_herkits_flag_in_one_short_line(
    args: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """tyro's suggestions quote each similar flag's whole help: the line names the flag."""
    from herkit.cli import main

    try:
        code = main(["train", *args])
    except SystemExit as stopped:  # as the console script ends it
        code = stopped.code
    said = capsys.readouterr().err
    assert code == 2 and said.count("\n") == 1, said
    assert said.startswith("herkit: error: Unrecognized options: ") and hint in said, said
    assert said.endswith("(see herkit train --help)\n") and len(said) < 200, said


@pytest.mark.parametrize(("name", "near"), [("td3bc", None), ("gcivi", "gcivl")])
def test_an_unregistered_agent_is_one_line_that_says_how_to_register_one(
    name: str, near: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--algo NAME`` that no entry holds reads as a missing agent, not a typo: the
    registered agents, how one is registered, and a near name where there is one."""
    from herkit.cli import main

    code = main(["train", "herkit/BitFlip-v0", "--algo", name, *QUICK])
    said = capsys.readouterr().err
    assert code == 2 and said.count("\n") == 1, said
    assert said.startswith("herkit: error: --algo must be a registered agent")
    assert f"({', '.join(algo_names())}), got {name!r}" in said
    assert "herkit.agents.registry.register(AgentEntry(...))" in said
    assert "herkit/agents/__init__.py's AGENTS (docs/architecture.md, 'Adding an agent')" in said
    assert ("did you mean" in said) == (near is not None), said
    assert near is None or f"(did you mean {near}?)" in said
