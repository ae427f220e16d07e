"""benchmarks/gpu.py: the GPU check's archive filed into docs/gpu.json."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from scripts import load_benchmark

gpu = load_benchmark("gpu")


def check_files(folder: Path) -> None:
    """What gpu_check.sh leaves: the code, the tests' log, a bench and a timed run."""
    folder.mkdir()
    machine = {"gpu": "NVIDIA H100 80GB HBM3", "cpus": 16}
    row = {"algo": "ddpg", "mode": "captured", "updates_per_s": 617.3}
    (folder / "bench.json").write_text(json.dumps({"machine": machine, "rows": [row]}))
    (folder / "code.json").write_text(json.dumps({"commit": "abc", "torch": "2.11.0"}))
    (folder / "tests.log").write_text("....\n19 passed\nfast tier\nlast line\n")
    (folder / "push-summary.json").write_text(json.dumps({"success_rate": 0.92}))
    (folder / "push-progress.csv").write_text("env_steps,updates,wall_s\n20000,9504,20.4\n")


def test_the_archive_is_filed_with_its_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_files(tmp_path / "out")
    archive = tmp_path / "check.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "out", arcname=".")
    monkeypatch.setattr(gpu, "RECORD", tmp_path / "gpu.json")
    key = gpu.record(archive, ["push: rerun apart"])
    entry = json.loads((tmp_path / "gpu.json").read_text())[key]
    assert key == "check/NVIDIA H100 80GB HBM3"
    assert entry["rows"][0]["updates_per_s"] == 617.3 and entry["prioritized_rows"] == []
    assert entry["code"]["commit"] == "abc" and entry["notes"] == ["push: rerun apart"]
    assert entry["tests"] == ["19 passed", "fast tier", "last line"]
    push = entry["runs"]["push"]
    assert push["summary"] == {"success_rate": 0.92}
    assert push["curve"] == [{"env_steps": 20000.0, "updates": 9504.0, "wall_s": 20.4}]
    assert entry["runs"]["slide"] is None  # not run


def test_a_folder_is_filed_as_its_archive_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_files(tmp_path / "out")
    monkeypatch.setattr(gpu, "RECORD", tmp_path / "gpu.json")
    key = gpu.record(tmp_path / "out")
    entry = json.loads((tmp_path / "gpu.json").read_text())[key]
    assert entry["notes"] == [] and entry["runs"]["push"]["summary"]["success_rate"] == 0.92
