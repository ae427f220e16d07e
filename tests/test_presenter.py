"""A run's figures are drawn by another process: a failure there is a warning, never an
exception out of the run, and a drawing stopped half way leaves no file behind."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from herkit.presentation.figures import present
from herkit.presentation.presenter import Presenter
from herkit.rundir.paths import RunPaths


@pytest.fixture
def trained(train_once: Callable[..., Path]) -> Path:
    """A real, tiny `herkit train` run, trained once."""
    return train_once(steps=400, eval_every=200, eval_episodes=2)


@pytest.mark.slow("draws figures in child processes")
def test_final_draws_the_figures_of_a_run(trained: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    paths = RunPaths(run)
    for figure in (paths.curve, paths.report):
        figure.unlink(missing_ok=True)
    presenter = Presenter(run, "BitFlip dqn+HER")
    presenter.refresh()  # a background drawing in progress is stopped, then drawn over
    presenter.final()
    assert paths.curve.stat().st_size > 0
    assert "BitFlip" in paths.report.read_text()
    assert not list(run.glob("*.tmp"))


@pytest.mark.slow("draws figures in a child process")
def test_a_failing_drawing_is_one_warning_naming_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "not-a-run"
    run.mkdir()
    Presenter(run, "title").final()  # no progress.csv: the child fails, the caller goes on
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"herkit: warning: the figures of {run} were not made (")
    assert "progress.csv" in lines[0]
    assert lines[0].endswith(f"make them with: herkit report {run} -o {RunPaths(run).report}")


@pytest.mark.slow("draws figures in a child process")
def test_close_stops_a_drawing_in_progress(trained: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    presenter = Presenter(run, "title")
    presenter.refresh()
    child = presenter._child
    assert child is not None and child.poll() is None
    presenter.close()
    assert child.poll() is not None  # stopped and reaped
    assert not list(run.glob("*.tmp"))
    presenter.close()  # again: nothing to do


def test_present_draws_in_this_process_too(trained: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    present(run, "title")
    paths = RunPaths(run)
    assert paths.curve.stat().st_size > 0 and paths.report.exists()
