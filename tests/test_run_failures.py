"""What `herkit train` does when something goes wrong in a run, each fault injected as a
user would meet it: the closing line, the exit code, the checkpoint kept, error.log,
nothing half-written, no process left behind, and --resume afterwards. The faults that can
meet any run are injected into both kinds (``KINDS``): an online run, and one that trains on
a recorded dataset, whose clock is its gradient steps."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runs
from herkit import cli
from herkit.rundir.paths import RunPaths
from herkit.runtime.failures import EXIT_CODES
from runs import (
    TESTS,
    offline_flags,
    point_reach_dataset,
    quick_flags,
    start_herkit,
    with_test_modules,
)

ENV = "faulty:FaultyBitFlip-v0"

KINDS = ("online", "offline")
"""The kinds of run every fault of the learner, the disk and the loop is injected into."""


def kind_args(kind: str, run: Path, *args: str, steps: int = 600) -> list[str]:
    """The command of a short run of ``kind``: :func:`herkit_args` online (no env fault),
    or ``steps`` gradient steps on a dataset of herkit/PointReach-v0 (made beside ``run``),
    evaluated and checkpointed every 200."""
    if kind == "online":
        return herkit_args(run, *args, steps=steps, kwargs="fault=none")
    data = run.parent / "data.npz"
    if not data.exists():
        point_reach_dataset(data)
    return [
        "train",
        *offline_flags(data, steps),
        "--eval-every",
        "200",
        "--checkpoint-every",
        "200",
        "--out",
        str(run),
        *quick_flags(eval_episodes=2),
        *args,
    ]


def at(kind: str, step: int) -> str:
    """Where a run of ``kind`` is, as its lines say it."""
    return f"{'gradient' if kind == 'offline' else 'env'} step {step:,}"


def herkit_args(run: Path, *args: str, kwargs: str = "", steps: int = 600) -> list[str]:
    return [
        "train",
        ENV,
        "--steps",
        str(steps),
        "--eval-every",
        "200",
        "--checkpoint-every",
        "200",
        "--warmup-steps",
        "64",
        "--out",
        str(run),
        *quick_flags(eval_episodes=2),
        *args,
        "--env-kwargs",
        "n_bits=4",
        *kwargs.split(),
    ]


def start_until_checkpoint(run: Path, args: list[str]) -> subprocess.Popen[str]:
    """``herkit ARGS`` started, once ``run`` has its first checkpoint (or it ended)."""
    state = RunPaths(run).checkpoint / "state.json"
    return start_herkit(args, state.exists, within=120, cwd=TESTS, env=with_test_modules())


def herkit(*args: str) -> subprocess.CompletedProcess[str]:
    """:func:`runs.herkit` run where the faulty env imports: in this folder, with it on
    the child's path."""
    return runs.herkit(*args, timeout=240, cwd=TESTS, env=with_test_modules())


def closing_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def checkpoint_steps(run: Path) -> int:
    """The step of the run's checkpoint on its clock: gradient steps while it trains on a
    dataset alone, else env steps."""
    state = json.loads((RunPaths(run).checkpoint / "state.json").read_text())["state"]
    return int(state["updates" if state.get("phase") == "offline" else "env_steps"])


def processes_of(run: Path) -> list[int]:
    """Processes whose command line names ``run`` (a herkit train and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if str(run) in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def assert_left_clean(run: Path) -> None:
    """No half-written checkpoint or temporary file, and no process of the run."""
    leftovers = [
        p.name
        for p in run.rglob("*")
        if p.name.startswith(".checkpoint-") or p.name.endswith(".tmp")
    ]
    assert not leftovers, leftovers
    deadline = time.monotonic() + 10
    while processes_of(run) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_of(run)


def assert_resumes(run: Path, steps: int = 600) -> None:
    resumed = herkit("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(RunPaths(run).summary.read_text())
    done = summary["updates"] if summary.get("dataset") else summary["env_steps"]
    assert done == steps and "error" not in summary


@pytest.mark.slow("faults injected into training runs, then resumed")
@pytest.mark.parametrize(
    ("placement", "fault", "label"),
    [
        (["--n-envs", "4", "--env-workers", "1"], "during=step at=230", "env 0 (worker 0)"),
        (["--n-envs", "1"], "during=reset at=201", "env 0"),
    ],
    ids=["step-in-a-worker", "reset-in-process"],
)
def test_an_env_that_raises_stops_the_run_with_a_checkpoint_at_its_last_step(
    tmp_path: Path, placement: list[str], fault: str, label: str
) -> None:
    run, token = tmp_path / "run", tmp_path / "token"
    paths = RunPaths(run)
    token.touch()
    kwargs = f"fault=raise token={token} {fault}"  # at > 200: not in the conventions probe
    done = herkit(*herkit_args(run, *placement, kwargs=kwargs, steps=1200))
    assert done.returncode == EXIT_CODES["env failed"] == 3, done.stderr
    method, call = re.search(r"during=(\w+) at=(\d+)", fault).groups()  # type: ignore[union-attr]
    at = checkpoint_steps(run)
    assert at % 200 != 0  # the last whole step, not a periodic checkpoint
    if method == "step":
        assert at == (int(call) - 1) * 4
    assert closing_line(done.stderr) == (
        f"herkit: error: {label} raised RuntimeError('the simulator blew up at {method} "
        f"{call}') in {method} at env step {at:,}; checkpoint at env step {at:,} kept; "
        f"traceback in {paths.error_log()}; continue with: herkit train --resume {run}"
    )
    log = paths.error_log().read_text()
    assert "The env's traceback:" in log and "_maybe_fail" in log and "Traceback" in log
    summary = json.loads(paths.summary.read_text())
    assert summary["exit_code"] == 3 and summary["env_steps"] == at
    assert_left_clean(run)
    assert_resumes(run, steps=1200)  # the token is used up: the resumed envs do not fail


@pytest.mark.slow("a herkit train subprocess")
def test_an_env_that_raises_as_the_run_starts_leaves_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = herkit(*herkit_args(run, kwargs="fault=raise at=5"))
    assert done.returncode == 3, done.stderr
    assert closing_line(done.stderr) == (
        "herkit: error: env 0 raised RuntimeError('the simulator blew up at step 5') in the "
        "random steps of the conventions probe as the run started; traceback above; nothing "
        "was trained: fix the cause and start again"
    )
    assert "_maybe_fail" in done.stderr and not run.exists()


@pytest.mark.slow("faults injected into training runs")
def test_an_evaluation_env_that_raises_stops_the_run(tmp_path: Path) -> None:
    run, token = tmp_path / "run", tmp_path / "token"
    token.touch()
    kwargs = f"fault=raise during=step at=2 armed_from_seed=10000 token={token}"
    done = herkit(*herkit_args(run, "--n-envs", "2", "--env-workers", "1", kwargs=kwargs))
    assert done.returncode == 3, done.stderr
    line = closing_line(done.stderr)
    assert line.startswith("herkit: error: evaluation env 0 (worker 0) raised RuntimeError(")
    assert "at env step 200; checkpoint at env step 200 kept" in line
    assert_left_clean(run)
    assert_resumes(run)
    steps = [row.split(",")[0] for row in RunPaths(run).progress.read_text().splitlines()[1:]]
    assert steps == ["202", "400", "600"]  # the failed evaluation, at the resume's first step


@pytest.mark.slow("faults injected into training runs")
@pytest.mark.parametrize("fault", ["nan", "inf"])
def test_non_finite_observations_stop_the_run_naming_the_env(tmp_path: Path, fault: str) -> None:
    run = tmp_path / "run"
    args = herkit_args(run, "--n-envs", "2", "--env-workers", "0", kwargs=f"fault={fault} at=230")
    done = herkit(*args)
    assert done.returncode == 3, done.stderr
    at = checkpoint_steps(run)
    assert at == 229 * 2
    assert closing_line(done.stderr).startswith(
        "herkit: error: env 0 returned 2 non-finite values (NaN or inf) in obs['observation'] "
        f"in step at env step {at:,}; checkpoint at env step {at:,} kept"
    )
    assert_left_clean(run)


@pytest.mark.slow("faults injected into training runs")
def test_env_restarts_rebuild_a_failed_env_then_stop_past_the_limit(tmp_path: Path) -> None:
    run, token = tmp_path / "run", tmp_path / "token"
    token.touch()
    once = f"fault=raise at=250 token={token}"
    done = herkit(*herkit_args(run, "--n-envs", "2", "--env-restarts", "2", kwargs=once))
    assert done.returncode == 0, done.stderr
    restarted = [line for line in done.stderr.splitlines() if "rebuilt it" in line]
    assert len(restarted) == 1 and "(env restart 1 of 2; traceback in" in restarted[0]
    assert json.loads(RunPaths(run).summary.read_text())["env_restarts"] == 1
    assert "the simulator blew up" in RunPaths(run).error_log().read_text()

    again = tmp_path / "again"  # every env fails at its 250th step
    args = herkit_args(again, "--n-envs", "2", "--env-restarts", "1", kwargs="at=250", steps=1200)
    done = herkit(*args)
    assert done.returncode == 3, done.stderr
    assert len([line for line in done.stderr.splitlines() if "rebuilt it" in line]) == 1
    # env 0 failed first (its worker steps env 1 after it) and was rebuilt; env 1 then failed
    assert "env 1 (worker 0) raised RuntimeError('the simulator blew up at step 250')" in (
        closing_line(done.stderr)
    )
    assert json.loads(RunPaths(again).summary.read_text())["env_restarts"] == 1
    assert_left_clean(again)


@pytest.mark.slow("faults injected into training runs in subprocesses")
@pytest.mark.parametrize("restarts", [0, 1])
def test_a_killed_worker_stops_the_run_at_once_or_is_restarted(
    tmp_path: Path, restarts: int
) -> None:
    run = tmp_path / "run"
    args = herkit_args(
        run,
        "--n-envs",
        "4",
        "--env-workers",
        "1",
        "--env-restarts",
        str(restarts),
        steps=3000,
        kwargs="fault=none",
    )
    process = start_until_checkpoint(run, args)
    workers = [pid for pid in processes_of(run) if pid != process.pid]
    assert workers, "no worker process found"
    os.kill(min(workers), signal.SIGKILL)  # the training envs' worker started first
    killed = time.monotonic()
    _, stderr = process.communicate(timeout=120)
    if restarts:
        assert process.returncode == 0, stderr
        assert "died (exit code -9: killed by SIGKILL" in stderr and "rebuilt it" in stderr
        assert json.loads(RunPaths(run).summary.read_text())["env_restarts"] == 1
    else:
        assert process.returncode == 3, stderr
        assert time.monotonic() - killed < 30
        line = closing_line(stderr)
        assert re.match(
            r"herkit: error: env worker 0 \(envs 0-3\) died \(exit code -9: killed by SIGKILL, "
            r"as the out-of-memory killer does\) at env step [\d,]+; checkpoint at env step "
            r"[\d,]+ kept; traceback in .*error.log; continue with: herkit train --resume ",
            line,
        ), line
        assert_left_clean(run)
        assert_resumes(run, steps=3000)


def run_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    sys.path.insert(0, str(TESTS))
    try:
        code = cli.main(args)
    finally:
        sys.path.remove(str(TESTS))
    return code, capsys.readouterr().err


@pytest.mark.slow("a training run, failed and resumed")
@pytest.mark.parametrize("kind", KINDS)
def test_a_full_disk_while_writing_a_checkpoint_keeps_the_previous_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    from herkit.buffer import persistence

    calls = {"n": 0}
    savez = np.savez

    def disk_full_on_second(file: Any, **arrays: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            file.write(b"half of a buffer")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        savez(file, **arrays)

    run = tmp_path / "run"
    args = kind_args(kind, run)
    monkeypatch.setattr(persistence.np, "savez", disk_full_on_second)
    paths = RunPaths(run)
    code, stderr = run_in_process(args, capsys)
    assert code == EXIT_CODES["write failed"] == 5, stderr
    partial = paths.partial_checkpoint(0 if kind == "offline" else 400)
    assert closing_line(stderr) == (
        f"herkit: error: cannot write {partial / 'buffer.npz'}: No space left on device at "
        f"{at(kind, 400)}; checkpoint at {at(kind, 200)} kept; traceback in "
        f"{paths.error_log()}; free space or fix the path, then continue with: herkit train "
        f"--resume {run}"
    )
    assert checkpoint_steps(run) == 200
    assert "OSError: [Errno 28]" in paths.error_log().read_text()
    assert_left_clean(run)
    monkeypatch.undo()
    assert_resumes(run)


@pytest.mark.slow("a training run, failed and resumed")
def test_a_full_disk_while_appending_a_log_row_leaves_no_part_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import herkit.runtime.files

    real_write = os.write

    class Os:  # os, but a write to episodes.csv after the first checkpoint fills the disk
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def write(fd: int, data: Any) -> int:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if path.endswith(paths.episodes.name) and paths.checkpoint.exists():
                real_write(fd, bytes(data)[:7])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)

    run = tmp_path / "run"
    paths = RunPaths(run)
    monkeypatch.setattr(herkit.runtime.files, "os", Os())
    code, stderr = run_in_process(herkit_args(run, kwargs="fault=none"), capsys)
    assert code == 5, stderr
    assert closing_line(stderr).startswith(
        f"herkit: error: cannot write {paths.episodes}: No space left on device at env "
        "step 400; checkpoint at env step 200 kept"
    )
    rows = paths.episodes.read_text().splitlines()
    assert all(len(row.split(",")) == 7 for row in rows)  # no row cut short
    assert_left_clean(run)
    monkeypatch.undo()
    assert_resumes(run)


@pytest.mark.slow("training runs on a small tmpfs, resumed")
def test_a_real_full_disk_stops_the_run_and_resume_continues_once_freed(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root here: {mounted.stderr.strip()}")
    try:
        run = disk / "run"
        args = herkit_args(run, "--n-envs", "2", steps=20000, kwargs="fault=none")
        process = start_until_checkpoint(run, args)
        filler = disk / "filler"
        with open(filler, "wb") as file, pytest.raises(OSError, match="No space left"):
            while True:
                file.write(b"\0" * (1 << 20))
                file.flush()
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 5, stderr
        line = closing_line(stderr)
        assert f"herkit: error: cannot write {run}" in line and "No space left on device" in line
        assert "free space or fix the path, then continue with: herkit train --resume" in line
        assert_left_clean(run)
        filler.unlink()
        kept = checkpoint_steps(run)
        resumed = herkit("train", "--resume", str(run), "--steps", str(kept + 400))
        assert resumed.returncode == 0, resumed.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow("a herkit train subprocess per kind of run")
@pytest.mark.parametrize("kind", KINDS)
def test_a_diverging_learner_stops_without_a_checkpoint_of_its_weights(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    from herkit.agents.base import GoalAgent

    update = GoalAgent.update

    def diverge_at_300(self: Any, batch: Any, count_goals: bool = False) -> Any:
        """From the 300th update on, NaN rewards: NaN targets, losses and weights."""
        self.updates_seen = getattr(self, "updates_seen", 0) + 1
        if self.updates_seen >= 300:
            batch = dataclasses.replace(batch, reward=np.full_like(batch.reward, math.nan))
        return update(self, batch, count_goals)

    run = tmp_path / "run"
    # given: auto would time updates of its own (the patched update counts them too)
    args = kind_args(kind, run, "--precision", "fp32", "--update-mode", "eager")
    monkeypatch.setattr(GoalAgent, "update", diverge_at_300)
    code, stderr = run_in_process(args, capsys)
    assert code == EXIT_CODES["diverged"] == 4, stderr
    line = closing_line(stderr)
    unit = "gradient" if kind == "offline" else "env"
    expected = (
        rf"herkit: error: training diverged: \w+ of update 300 is nan at {unit} step [\d,]+; "
        rf"checkpoint at {unit} step 200 kept; traceback in "
    )
    assert re.match(expected, line), line
    assert checkpoint_steps(run) == 200
    assert_left_clean(run)


def test_a_full_disk_under_the_agents_file_is_an_oserror_naming_it(tmp_path: Path) -> None:
    """torch.save's own writer reports a full disk as a RuntimeError; herkit's checkpoint
    writes the bytes itself, so the run stops as a write failure (exit 5), naming the file."""
    import torch

    from herkit.rundir.checkpoint import save_checkpoint

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root here: {mounted.stderr.strip()}")
    try:
        state = {"agent": {"critic": {"0.weight": torch.zeros(1 << 18)}}}  # 1 MiB
        with pytest.raises(OSError) as raised:
            save_checkpoint(disk, state, None, {"env_steps": 10, "updates": 7})  # type: ignore[arg-type]
        assert raised.value.errno == errno.ENOSPC
        assert raised.value.filename == str(RunPaths(disk).partial_checkpoint(10) / "agent.pt")
        assert list(disk.iterdir()) == []  # nothing half-written stays
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_checkpoint_is_never_written_with_non_finite_weights(tmp_path: Path) -> None:
    import torch

    from herkit.rundir.checkpoint import save_checkpoint
    from herkit.runtime.failures import Diverged

    state = {"agent": {"critic": {"0.weight": torch.tensor([1.0, math.inf])}}}
    with pytest.raises(Diverged, match=r"agent\.critic\.0\.weight not finite at update 7"):
        save_checkpoint(tmp_path, state, None, {"env_steps": 10, "updates": 7})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow("a herkit train subprocess per kind of run")
@pytest.mark.parametrize("kind", KINDS)
def test_an_unforeseen_error_is_one_line_with_the_traceback_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    from herkit.training.run import TrainingRun

    evaluate = TrainingRun.evaluate_and_log

    def broken(self: TrainingRun) -> bool:
        if self.phase.step >= 400:
            raise KeyError("success_rate")
        return evaluate(self)

    run = tmp_path / "run"
    args = kind_args(kind, run)
    monkeypatch.setattr(TrainingRun, "evaluate_and_log", broken)
    code, stderr = run_in_process(args, capsys)
    assert code == EXIT_CODES["error"] == 1, stderr
    assert closing_line(stderr).startswith(
        f"herkit: error: the run raised KeyError('success_rate') at {at(kind, 400)}; "
        f"checkpoint at {at(kind, 200)} kept; traceback in"
    )
    assert "in broken" in RunPaths(run).error_log().read_text()
    assert_left_clean(run)


@pytest.mark.slow("a run in a subprocess stopped by a signal, on each kind")
@pytest.mark.parametrize(
    ("kind", "signum"),
    # SIGTERM to an online run: tests/test_cli.py, in a subprocess, its workers too
    [("online", signal.SIGINT), ("offline", signal.SIGINT), ("offline", signal.SIGTERM)],
)
def test_a_signal_writes_a_checkpoint_where_it_stopped_and_keeps_everything(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    signum: int,
) -> None:
    """Ctrl-C or SIGTERM at the second evaluation: exit 130, the closing line names where
    the run stopped and how to go on, a checkpoint there, nothing of the run deleted, the
    lock released, and --resume goes on to the end."""
    from herkit.training.run import TrainingRun

    evaluate = TrainingRun.evaluate_and_log

    def signalled(self: TrainingRun) -> bool:
        reached = evaluate(self)
        if len(RunPaths(self.run_dir).progress.read_text().splitlines()) == 3:
            os.kill(os.getpid(), signum)
        return reached

    run = tmp_path / "run"
    args = kind_args(kind, run, steps=800)
    monkeypatch.setattr(TrainingRun, "evaluate_and_log", signalled)
    code, stderr = run_in_process(args, capsys)
    paths = RunPaths(run)
    assert code == EXIT_CODES["interrupted"] == 130, stderr
    stopped = checkpoint_steps(run)
    assert 400 <= stopped < 600  # where the signal came, not at the end (800)
    unit = "gradient steps" if kind == "offline" else "env steps"
    assert closing_line(stderr) == (
        f"herkit: interrupted at {stopped:,} {unit}, checkpoint written; continue with: "
        f"herkit train --resume {run}"
    )
    assert paths.progress.exists() and paths.config.exists() and paths.curve.exists()
    assert json.loads(paths.summary.read_text())["interrupted"] is True
    assert not paths.lock.exists()
    monkeypatch.undo()
    assert_resumes(run, steps=800)


@pytest.mark.slow("a herkit train subprocess")
def test_a_policy_that_gives_nan_actions_stops_before_the_env_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from herkit.agents.base import GoalAgent
    from herkit.envs.workers import WorkerVectorEnv

    act = GoalAgent.act

    def nan_from_the_300th(self: Any, observation: Any, goal: Any, deterministic: bool) -> Any:
        action = act(self, observation, goal, deterministic)
        self.acted = getattr(self, "acted", 0) + 1
        return action * np.nan if self.acted >= 300 and not deterministic else action

    monkeypatch.setattr(GoalAgent, "act", nan_from_the_300th)
    stepped: list[np.ndarray] = []
    step = WorkerVectorEnv.step

    def recorded(self: WorkerVectorEnv, action: np.ndarray) -> Any:
        stepped.append(action)
        return step(self, action)

    monkeypatch.setattr(WorkerVectorEnv, "step", recorded)
    run = tmp_path / "run"
    args = herkit_args(run, "--algo", "ddpg", kwargs="fault=none continuous=True")
    code, stderr = run_in_process(args, capsys)
    assert code == 4, stderr
    assert "training diverged: the policy gave non-finite actions after update" in stderr
    assert all(np.isfinite(action).all() for action in stepped)


def test_the_docs_table_of_exit_codes_and_tests_is_this_code() -> None:
    page = (TESTS.parent / "docs" / "failures.md").read_text()
    codes = re.findall(r"^\| (\d+) \| ", page.split("## Exit codes")[1].split("##")[0], re.M)
    assert sorted(map(int, codes)) == sorted(EXIT_CODES.values())
    for module, name in re.findall(r"`(test_\w+)\.py::(test_\w+)", page):
        assert f"def {name}(" in (TESTS / f"{module}.py").read_text(), (module, name)


@pytest.mark.slow("training, then herkit eval in subprocesses")
def test_herkit_eval_of_a_failing_env_is_one_line_after_its_traceback(tmp_path: Path) -> None:
    run, token = tmp_path / "run", tmp_path / "token"
    # an evaluation episode's env (seeded past 10,000), once the token exists: after training
    kwargs = f"fault=raise at=1 armed_from_seed=10000 token={token}"
    trained = herkit(*herkit_args(run, kwargs=kwargs, steps=200))
    assert trained.returncode == 0, trained.stderr
    token.touch()
    done = herkit("eval", str(run), "--episodes", "2")
    assert done.returncode == 3, done.stderr
    assert closing_line(done.stderr) == (
        "herkit: error: evaluation env 0 raised RuntimeError('the simulator blew up at step 1') "
        "in step"
    )
    assert "_maybe_fail" in done.stderr
