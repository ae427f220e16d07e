"""Records in docs/ are results: a benchmark run writes there only when asked
(``--record``); without it (a trial at another budget, setting or commit) it writes into a
copy under runs/trials/docs and says so, and docs/ stays as it was."""

from __future__ import annotations

import hashlib
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
