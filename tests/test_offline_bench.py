"""benchmarks/offline.py: a run's figures as OGBench reports them, the table beside
OGBench's, and a missing dataset said before anything runs."""

from __future__ import annotations

import json

import pytest
from scripts import load_benchmark

script = load_benchmark("offline")


def write_progress(run, successes):
    run.mkdir(parents=True)
    lines = ["env_steps,updates,success_rate,success_task_1,success_task_2"]
    lines += [f"0,{(i + 1) * 10},{s},{s},{s}" for i, s in enumerate(successes)]
    (run / "progress.csv").write_text("\n".join(lines) + "\n")


def test_a_runs_figure_averages_its_last_three_evaluations(tmp_path):
    write_progress(tmp_path / "run", [0.0, 0.1, 0.5, 0.6, 0.7])
    figures = script.run_figures(tmp_path / "run")
    assert figures["success"] == pytest.approx(0.6)
    assert figures["tasks"] == {
        "success_task_1": pytest.approx(0.6),
        "success_task_2": pytest.approx(0.6),
    }
    assert figures["curve"][0] == [10, 0.0] and figures["evaluations_averaged"] == 3


def test_the_table_stands_each_algorithm_beside_ogbench(tmp_path, monkeypatch, capsys):
    record = tmp_path / "offline.json"
    tasks = {"success_task_1": 1.0, "success_task_2": 0.5}
    runs = {
        f"b/gcivl/s{seed}": {
            "algo": "gcivl",
            "seed": seed,
            "success": value,
            "tasks": tasks,
            "wall_s": 600.0,
        }
        for seed, value in ((0, 0.6), (1, 0.7))
    }
    runs["b/gcivl/s1"]["machine"] = {"processor": "AMD EPYC"}  # a run of another machine
    machine = {"processor": "Intel(R) Xeon(R) Processor"}
    record.write_text(json.dumps({"machine": machine, "runs": runs}))
    monkeypatch.setattr(script, "RECORD", record)
    script.main(["table"])
    row = capsys.readouterr().out.splitlines()[-1]
    assert (
        row == "| b | gcivl | 0, 1 | 65 ± 7 | 100 / 50 | 63 ± 6 | 10 / 10 | AMD EPYC / Intel Xeon |"
    )


def test_training_without_the_dataset_says_how_to_make_it(tmp_path):
    with pytest.raises(SystemExit, match="make it first"):
        script.main(["train", "--data", str(tmp_path / "none.npz")])
