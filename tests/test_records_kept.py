"""Records in docs/ are results: a benchmark run writes there only when asked
(``--record``); without it (a trial at another budget, setting or commit) it writes into a
copy under runs/trials/docs and says so, and docs/ stays as it was."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TRIALS = ROOT / "runs" / "trials" / "docs"


def snapshot() -> dict[str, tuple[str, int]]:
    """Every file of docs/ (but the built site and locks) by its digest and the time it
    was last written (a file written again with the same bytes was written)."""
    return {
        str(path.relative_to(DOCS)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(DOCS.rglob("*"))
        if path.is_file() and "_build" not in path.parts and path.suffix != ".lock"
    }


def benchmark(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_only_record_writes_into_docs() -> None:
    where = "import common; print(common.DOCS, common.RECORDING, sys.argv[1:])"
    code = f"import sys; sys.path.insert(0, 'benchmarks'); {where}"
    trial = benchmark("-c", code, "--other")
    record = benchmark("-c", code, "--record", "--other")
    assert trial.stdout.split() == [str(TRIALS), "False", "['--other']"], trial.stderr
    assert record.stdout.split() == [str(DOCS), "True", "['--other']"], record.stderr


@pytest.mark.skipif(not (DOCS / "paper.json").exists(), reason="no paper records")
def test_redrawing_the_paper_page_leaves_docs_as_it_was() -> None:
    """The page, its tables and figures are drawn again from the records, into the trial
    copy; the records' page and figures are untouched."""
    before = snapshot()
    done = benchmark("benchmarks/paper.py", "fig4", "--draw")
    assert done.returncode == 0, done.stderr
    assert snapshot() == before
    assert "a trial, not a record" in done.stderr and "runs/trials/docs" in done.stderr
    assert (TRIALS / "paper.md").read_text().count("|") > 10


@pytest.mark.slow("trains FetchPush-v4 for 2,000 env steps: the trial that replaced a record")
def test_a_trial_at_another_budget_does_not_replace_the_record(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium_robotics", reason="needs herkit[robotics]")
    before = snapshot()
    done = benchmark(
        "benchmarks/paper.py",
        "fig4",
        "--tasks",
        "FetchPush-v4",
        "--seeds",
        "0",
        "--steps",
        "2000",
        "--settings",
        "ddpg+her",
        "--runs",
        str(tmp_path),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert snapshot() == before
    trial = (TRIALS / "paper.json").read_text()
    assert '"steps": 2000' in trial and "a trial, not a record" in done.stderr


def test_a_run_recorded_on_another_machine_keeps_its_machine(tmp_path: Path) -> None:
    """The runs of one record file may come from several machines: the file's ``machine``
    stays its first run's, and a run of another machine carries its own."""
    from scripts import load_benchmark

    add_run = load_benchmark("common").add_run
    path = tmp_path / "record.json"
    xeon, zen4 = {"processor": "Intel(R) Xeon(R)"}, {"processor": "AMD EPYC"}
    add_run(path, "a", {"success": 0.5}, xeon)
    add_run(path, "b", {"success": 0.6}, xeon)
    runs = add_run(path, "c", {"success": 0.7}, zen4)
    assert json.loads(path.read_text())["machine"] == xeon
    assert runs == {
        "a": {"success": 0.5},
        "b": {"success": 0.6},
        "c": {"success": 0.7, "machine": zen4},
    }
