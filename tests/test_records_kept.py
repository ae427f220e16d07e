"""Records in docs/ are results: a benchmark run writes there only when asked
(``--record``); without it (a trial at another budget, setting or commit) it writes what it
writes under runs/trials/docs, copying nothing else, and says so, and docs/ stays as it
was."""

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


def trial_files() -> dict[str, int]:
    """The files under runs/trials/docs by the time each was last written."""
    found = sorted(TRIALS.rglob("*")) if TRIALS.exists() else []
    return {str(path): path.stat().st_mtime_ns for path in found if path.is_file()}


def test_only_record_writes_into_docs() -> None:
    where = "import common; print(common.DOCS, common.RECORDING, sys.argv[1:])"
    code = f"import sys; sys.path.insert(0, 'benchmarks'); {where}"
    before = trial_files()
    trial = benchmark("-c", code, "--other")
    assert trial_files() == before  # a trial copies nothing in advance
    record = benchmark("-c", code, "--record", "--other")
    assert trial.stdout.split() == [str(TRIALS), "False", "['--other']"], trial.stderr
    assert record.stdout.split() == [str(DOCS), "True", "['--other']"], record.stderr


def test_a_trial_copies_only_the_records_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial reads the records where it has not written its own copy, and a record it adds
    a run to is copied with the run added, into the trial's folder alone."""
    from scripts import load_benchmark

    common = load_benchmark("common")
    records, trials = tmp_path / "docs", tmp_path / "trials"
    records.mkdir()
    for name in ("kept.json", "other.json"):
        (records / name).write_text(json.dumps({"machine": {"cpu": 1}, "runs": {"a": 1}}))
    monkeypatch.setattr(common, "RECORDS", records)
    monkeypatch.setattr(common, "TRIALS", trials)
    monkeypatch.setattr(common, "RECORDING", False)
    assert common.read_json(trials / "kept.json")["runs"] == {"a": 1}  # the record's
    assert not trials.exists()
    trials.mkdir()
    runs = common.add_run(trials / "kept.json", "b", {"x": 2}, {"cpu": 1})
    assert runs == {"a": 1, "b": {"x": 2}}
    assert sorted(path.name for path in trials.iterdir()) == ["kept.json", "kept.json.lock"]
    assert json.loads((records / "kept.json").read_text())["runs"] == {"a": 1}
    assert common.read_json(trials / "kept.json")["runs"] == runs  # the trial's own now
    assert common.source(trials / "other.json") == records / "other.json"
    assert common.source(trials / "new.json") == trials / "new.json"
    monkeypatch.setattr(common, "RECORDING", True)
    assert common.source(records / "kept.json") == records / "kept.json"


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
