"""benchmarks/offline.py: a run's figures as OGBench reports them, the table beside
OGBench's, a missing dataset said before anything runs, and the speed comparison's sides:
each pinned to one core, its CPU time over wall time measured, both ways timed."""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pytest
from scripts import load_benchmark

script = load_benchmark("offline")
goals = load_benchmark("offline_goals")


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


# -- speed: each side pinned to one core, both ways -------------------------------------------

speed = script.offline_speed


def speed_args(data, **changes):
    """The speed subcommand's settings for one small run on ``data``."""
    core = min(os.sched_getaffinity(0))
    settings = {"data": str(data), "ways": ["update", "draw"], "seconds": 0.2, "core": core}
    settings |= {"mode": "eager"}  # compiled: the same path after a warm-up of tens of seconds
    settings |= {"ogbench": "IMPLS", "jax_python": "PY"}
    return argparse.Namespace(**settings | changes)


@pytest.fixture
def maze_data(tmp_path):
    """A small dataset of the point maze's shapes (2-wide states and actions)."""
    path = tmp_path / "maze.npz"
    np.savez(path, **goals.tagged_dataset(40, seed=0))
    return path


def test_herkits_side_runs_pinned_and_times_both_ways(maze_data):
    args = speed_args(maze_data)
    command = [*speed.worker_command("herkit", args, "gcivl", "2x16:8", 0), "--no-peak"]
    rows = speed.run_worker(command)
    assert rows["pinning"]["threads_pinned"] == rows["pinning"]["threads"] >= 1
    for way in ("update", "draw", "draw_alone"):
        assert rows[way]["updates_per_s"] > 0 and rows[way]["calls"] >= 2
        assert 0 < rows[way]["cpu_per_wall"] <= speed.ONE_CORE[1], rows[way]
        assert rows[way]["core"] == args.core
    assert rows["flops"]["flops"] == rows["flops"]["matmul_flops"] > 0
    assert rows["versions"]["torch_threads"] == 1 and "peak" not in rows
    assert rows["versions"]["herkit_from"] == str(speed.HERE.parent / "src" / "herkit")


def fake_side(side, rate, repeat):
    """What one side's process prints, as run_worker returns it."""
    way = {"cpu_per_wall": 0.99, "calls": 10, "warmup_s": 0.1, "updates_per_s": rate + repeat}
    rows = {
        "versions": {"side": side, "torch": "x"},
        "update": dict(way),
        "draw": dict(way, updates_per_s=rate / 2 + repeat),
        "draw_alone": dict(way, updates_per_s=1000.0),
        "peak": {"gflops": 50.0, "cpu_per_wall": 1.0},
        "pinning": {"threads": 3, "threads_pinned": 3},
    }
    if repeat == 0:
        tool = {"flops_tool": "t", "matmul_flops_tool": "t"}
        rows["flops"] = {"flops": 2e9, "matmul_flops": 1e9, **tool}
    return rows


def test_speed_alternates_the_sides_and_records_medians(maze_data, tmp_path, monkeypatch, capsys):
    ran = []

    def run_worker(command):
        side = "ogbench-jax" if any(w.endswith("ogbench_jax.py") for w in command) else "herkit"
        repeat = sum(1 for s, _, _ in ran if s == side)
        ways = command[command.index("--ways") + 1 : command.index("--seconds")]
        ran.append((side, "--no-flops" in command, ways))
        assert side != "herkit" or command[command.index("--mode") + 1] == "compiled"
        return fake_side(side, 10.0 if side == "herkit" else 20.0, repeat)

    monkeypatch.setattr(speed, "run_worker", run_worker)
    monkeypatch.setattr(script, "SPEED_RECORD", tmp_path / "speed.json")
    flags = ["--algos", "gcivl", "--sizes", "3x256:256", "--repeats", "3", "--core", "0"]
    script.main(["speed", *flags, "--ogbench", "I", "--jax-python", "P", "--data", str(maze_data)])
    order = ["herkit", "ogbench-jax", "ogbench-jax", "herkit", "herkit", "ogbench-jax"]
    assert [side for side, _, _ in ran] == order  # the first in a repeat, the second in the next
    assert [no_flops for _, no_flops, _ in ran] == [False, False, True, True, True, True]
    first, second = ["update", "draw"], ["draw", "update"]  # the ways too, every other repeat
    assert [ways for _, _, ways in ran[::2]] == [first, second, first]
    runs = json.loads((tmp_path / "speed.json").read_text())["runs"]
    update, draw = (runs[f"fair/3x256:256/gcivl/{way}/compiled"] for way in ("update", "draw"))
    herkit, jax = update["sides"]["herkit"], update["sides"]["ogbench-jax"]
    assert herkit["rates"] == [10.0, 11.0, 12.0] and herkit["updates_per_s"] == 11.0
    assert jax["updates_per_s"] == 21.0 and update["jax_over_herkit"] == pytest.approx(21 / 11)
    assert herkit["matmul_gflops"] == pytest.approx(11.0) and herkit["gflops"] == 22.0
    assert herkit["peak_share"] == pytest.approx(22 / 50) and update["one_core_alone"]
    assert draw["sides"]["herkit"]["draw_share"] == pytest.approx(6 / 1000)
    assert update["command"].startswith("python benchmarks/offline.py speed --algos gcivl")
    assert "JAX/herkit 1.91" in capsys.readouterr().out


def test_a_side_on_a_shared_core_is_said(maze_data):
    assert speed.ratio_words(0.5) == "0.50 (its core shared)"
    assert speed.ratio_words(1.4) == "1.40 (more than one core!)"
    assert speed.ratio_words(1.0) == "1.00"


def test_the_jax_side_imports_no_herkit():
    source = (speed.HERE / "ogbench_jax.py").read_text()
    imported = {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.strip().startswith(("import ", "from "))
    }
    assert not imported & {"herkit", "torch", "gymnasium", "tyro", "common"}, imported


def test_the_jax_side_counts_matrix_products():
    jax = pytest.importorskip("jax")
    ogbench_jax = pytest.importorskip("ogbench_jax")

    def loss(w, x):
        return (x @ w).sum()

    x, w = jax.numpy.ones((8, 4)), jax.numpy.ones((4, 3))
    jaxpr = jax.make_jaxpr(jax.jit(jax.grad(loss)))(w, x).jaxpr
    assert ogbench_jax.matmul_flops(jaxpr) == 2 * 8 * 4 * 3 * 2  # forward, and the gradient's


@pytest.mark.slow("compiles OGBench's JAX update with XLA in a fresh process (about 10 s)")
def test_the_jax_side_times_ogbench_agents(maze_data):
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    pytest.importorskip("distrax")
    impls = os.environ.get("OGBENCH_IMPLS")
    if not impls:
        pytest.skip("set OGBENCH_IMPLS to the impls/ folder of OGBench's code")
    args = speed_args(maze_data, ogbench=impls, jax_python=sys.executable)
    rows = speed.run_worker(speed.worker_command("ogbench-jax", args, "gcbc", "2x16:8", 0))
    for way in ("update", "draw"):
        assert rows[way]["updates_per_s"] > 0
        assert 0 < rows[way]["cpu_per_wall"] <= speed.ONE_CORE[1]
    assert rows["flops"]["matmul_flops"] > 0 and rows["peak"]["gflops"] > 0
    assert rows["pinning"]["threads_pinned"] == rows["pinning"]["threads"]
