"""A run's figures are drawn by another process: a failure there is a warning, never an
exception out of the run, and a drawing stopped half way leaves no file behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from herkit.presentation.figures import present
from herkit.presentation.presenter import Presenter
from herkit.training.loop import train
from runs import quiet


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, tiny `herkit train` run."""
    run = tmp_path_factory.mktemp("trained") / "run"
    train(quiet(out=str(run), steps=400, eval_every=200, eval_episodes=2))
    return run


@pytest.mark.slow("draws figures in child processes")
def test_final_draws_the_figures_of_a_run(trained: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    for name in ("curve.png", "report.html"):
        (run / name).unlink(missing_ok=True)
    presenter = Presenter(run, "BitFlip dqn+HER")
    presenter.refresh()  # a background drawing in progress is stopped, then drawn over
    presenter.final()
    assert (run / "curve.png").stat().st_size > 0
    assert "BitFlip" in (run / "report.html").read_text()
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
    assert lines[0].endswith(f"make them with: herkit report {run} -o {run}/report.html")


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
    assert (run / "curve.png").stat().st_size > 0 and (run / "report.html").exists()
