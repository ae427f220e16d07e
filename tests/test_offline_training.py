"""``herkit train ENV --dataset PATH``: gradient steps on a recorded dataset by the one
training loop, evaluated on the env's tasks, resumed, and continued online into the same
buffer; what an online run guarantees (threads, progress, signals, checkpoints, NaN checks)
is tested for these runs beside the online ones (test_run_failures.py)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from scripts import load_benchmark

from herkit.config import config_for
from herkit.agents.settings import OFFLINE_ALGOS, GCIVLConfig, config_class
from herkit.rundir.checkpoint import load_checkpoint

pytest.importorskip("ogbench")

ENV = "pointmaze-medium-navigate-v0"
SHORT = ("max_episode_steps=60",)  # evaluation episodes of 60 steps: seconds, not minutes
SMALL = {algo: config_class(algo)(hidden=(16, 16), batch_size=32) for algo in OFFLINE_ALGOS}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Three recorded episodes of 101 states, made as OGBench makes its navigate data."""
    path = tmp_path_factory.mktemp("data") / "pointmaze-medium-navigate-v0.npz"
    load_benchmark("offline_data").make_dataset("pointmaze-medium-v0", 3, 101, 0.5, 0, path)
    return path


def offline(dataset, out, algo="gcivl", **changes):
    values = dict(
        dataset=str(dataset),
        algo=algo,
        offline_steps=30,
        eval_every=15,
        eval_episodes=1,
        n_eval_envs=1,
        checkpoint_every=15,
        env_kwargs=SHORT,
        out=str(out),
        progress=False,
        tensorboard=False,
        buffer_size=500,
        warmup_steps=10,
        torch_threads=1,  # a run on a dataset takes every core: one is faster for these
    )
    values[algo] = SMALL.get(algo) or config_class(algo)(hidden=(16, 16), batch_size=32)
    return config_for(ENV, **(values | changes))


def rows(run) -> list[dict[str, str]]:
    with open(run / "progress.csv") as file:
        return list(csv.DictReader(file))


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_an_offline_run_trains_gradient_steps_and_evaluates_every_task(dataset, tmp_path, algo):
    from herkit.training.loop import train

    summary = train(offline(dataset, tmp_path / "run", algo))
    assert summary["updates"] == 30 and summary["env_steps"] == 0
    logged = rows(tmp_path / "run")
    assert [int(row["updates"]) for row in logged] == [15, 30]
    tasks = [float(logged[-1][f"success_task_{k}"]) for k in range(1, 6)]
    assert float(logged[-1]["success_rate"]) == pytest.approx(np.mean(tasks))
    assert (tmp_path / "run" / "curve.png").is_file()
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["dataset"] == str(dataset) and saved["algo"] == algo


def test_an_offline_run_says_gradient_steps_tasks_and_goal_mixes(
    dataset, tmp_path, capsys, monkeypatch
):
    """Its start lines, config.json, summary.json, curve and report: gradient steps,
    episodes per task and the goal mixes it draws, not HER's strategy and k; summary.json
    gives OGBench's figure, the mean of the last three evaluations, per task too."""
    import herkit.training.outputs as outputs
    from herkit.rundir.settings import load_run_config
    from herkit.training.loop import train

    titles = []

    class Titled(outputs.Presenter):
        def __init__(self, run_dir, title):
            titles.append(title)
            super().__init__(run_dir, title)

    monkeypatch.setattr(outputs, "Presenter", Titled)
    run = tmp_path / "run"
    config = offline(dataset, run, offline_steps=60)  # evaluations at 15, 30, 45, 60
    summary = train(config)
    said = capsys.readouterr().err
    assert (
        "herkit: evaluation: 1 episode of each of 5 tasks every 15 gradient steps on the "
        "dataset\n" in said
    )
    assert titles == [f"{ENV} gcivl"]  # the curve's: no HER
    saved = json.loads((run / "config.json").read_text())
    assert list(saved["her"])[:4] == ["value_goals", "value_future", "actor_goals", "gc_negative"]
    assert saved["her"]["value_goals"] == [0.2, 0.5, 0.3]  # OGBench's, written out
    assert saved["her"]["actor_goals"] == [0.0, 1.0, 0.0]
    assert not {"strategy", "k", "relabel", "goal_mix", "n_step", "gamma"} & set(saved["her"])
    assert load_run_config(run).her == config.her  # read back: the agent's own mixes
    assert json.loads((run / "summary.json").read_text()) == summary
    assert "strategy" not in summary
    assert (summary["value_goals"], summary["actor_goals"]) == ([0.2, 0.5, 0.3], [0.0, 1.0, 0.0])
    logged = rows(run)[-3:]
    assert summary["success_rate_last3_at"] == [30, 45, 60]
    assert summary["success_rate_last3"] == pytest.approx(
        np.mean([float(row["success_rate"]) for row in logged]), abs=1e-4
    )
    assert summary["success_rate"] == float(logged[-1]["success_rate"])
    tasks = [f"success_task_{k}" for k in range(1, 6)]
    assert summary["success_rate_by_task"] == [float(logged[-1][task]) for task in tasks]
    assert summary["success_rate_last3_by_task"] == pytest.approx(
        [np.mean([float(row[task]) for row in logged]) for task in tasks], abs=1e-4
    )
    report = (run / "report.html").read_text()
    assert "goals <b>value goals 0.2 0.5 0.3, actor goals 0 1 0</b>" in report
    assert "HER strategy" not in report


def test_an_offline_agent_refuses_her_relabelling_in_one_line(dataset, tmp_path, capsys):
    """--strategy, --k, --goal-mix, ... would be silently unused by an offline agent: refused,
    naming its goal mixes; a preset's (Fetch on a GPU) is no setting of its run."""
    from herkit.cli import main
    from herkit.config.resolve import preset_config
    from herkit.config.train import config_from_dict

    args = ["train", ENV, "--dataset", str(dataset), "--offline-steps", "10"]
    assert main([*args, "--strategy", "final", "--k", "2", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == (
        "herkit: error: --strategy and --k set HER's relabelling, which gcivl (an offline "
        "agent) does not use: it draws its goals from OGBench's goal mixes, --value-goals and "
        "--actor-goals (see herkit train --help)"
    )
    assert not (tmp_path / "r").exists()
    old = offline(dataset, tmp_path / "old").to_dict()  # as config.json held it before
    old["her"] |= {"strategy": "final", "k": 2, "value_goals": None, "actor_goals": None}
    assert config_from_dict(old) == offline(dataset, tmp_path / "old")  # it never acted
    for algo in OFFLINE_ALGOS:  # the GPU preset's goal mix is for its online agents
        assert preset_config("FetchPush-v4", "cuda", algo=algo).her.goal_mix is None
    assert preset_config("FetchPush-v4", "cuda").her.goal_mix == (0.2, 0.4, 0.4)


def test_standardised_inputs_count_every_state_of_the_dataset(dataset, tmp_path):
    from herkit.rundir.checkpoint import load_agent_state
    from herkit.training.loop import train

    standardised = GCIVLConfig(hidden=(16, 16), batch_size=32, normalize_inputs=True)
    train(offline(dataset, tmp_path / "run", gcivl=standardised))
    counted = load_agent_state(tmp_path / "run")["agent"]["obs_normalizer"]["count"]
    assert counted == 3 * 101  # every state of its 3 episodes of 101, once
    raw = train(offline(dataset, tmp_path / "raw"))
    assert raw["updates"] == 30
    assert load_agent_state(tmp_path / "raw")["agent"]["obs_normalizer"]["count"] == 0


def test_herkit_eval_plays_each_task_of_an_offline_run(dataset, tmp_path, capsys):
    """N episodes of each task, the same ones every time; the text says which checkpoint,
    the mean over the tasks and each task's rate."""
    from herkit.cli import main
    from herkit.training.evaluation import evaluate_run
    from herkit.training.loop import train

    train(offline(dataset, tmp_path / "run", "gcbc", offline_steps=15))
    result = evaluate_run(tmp_path / "run", episodes=2, seed=0)
    assert result["episodes"] == 10 and len(result["tasks"]) == 5
    assert result["episodes_per_task"] == 2 and result["updates"] == 15
    assert result["success_rate"] == pytest.approx(np.mean(result["tasks"]), abs=1e-4)
    assert evaluate_run(tmp_path / "run", episodes=2, seed=0) == result
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run"), "--episodes", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "(deterministic, checkpoint at 15 gradient steps on the dataset)" in lines[0]
    assert "success rate (mean over the tasks)" in lines[0]
    assert lines[0].endswith("over 2 episodes of each of 5 tasks (10)")
    assert lines[1:] == [
        f"  task {k}: success rate {rate:.3f}" for k, rate in enumerate(result["tasks"], 1)
    ]


@pytest.mark.slow("three offline runs")
def test_an_offline_run_resumes_and_refuses_what_it_has_done(dataset, tmp_path):
    from herkit.rundir.directory import check_new_run_dir
    from herkit.training.loop import train

    run = tmp_path / "run"
    train(offline(dataset, run))
    summary = train(offline(dataset, run, offline_steps=45), resume=True)
    assert summary["updates"] == 45
    assert [int(row["updates"]) for row in rows(run)] == [15, 30, 45]
    with pytest.raises(ValueError, match="already trained 45 gradient steps on its dataset"):
        train(offline(dataset, run, offline_steps=45), resume=True)
    with pytest.raises(ValueError) as refused:  # the same run again: how it goes on
        check_new_run_dir(run, offline(dataset, run, offline_steps=45))
    assert str(refused.value) == (
        f"run directory {str(run)!r} already holds this run, finished at 45 gradient steps on "
        f"the dataset: train it further with --resume {run} --offline-steps N (N above 45), go "
        f"on online with --resume {run} --steps N, or train into another --out DIR "
        "(--overwrite replaces it)"
    )


@pytest.mark.slow("an offline run, then online in the env")
def test_online_steps_go_on_in_the_env_with_the_recorded_data_kept(dataset, tmp_path):
    from herkit.training.loop import train

    run = tmp_path / "run"
    train(offline(dataset, run, algo="gciql"))
    _, before = load_checkpoint(run, lambda a, d, i: np.zeros(len(a)))
    recorded = len(before)
    # the warm-up of an online run (1,000 env steps here) is no wait for one that has learned
    summary = train(offline(dataset, run, algo="gciql", steps=40, warmup_steps=1000), resume=True)
    assert summary["env_steps"] == 40 and summary["updates"] == 30 + 40
    assert summary["success_rate_last3_at"] == [15, 30, 40]  # the online phase's (env steps)
    _, after = load_checkpoint(run, lambda a, d, i: np.zeros(len(a)))
    assert len(after) == recorded + 40
    assert after.recorded is not None and before.recorded is not None
    assert before.storage.capacity == 0 and after.storage.capacity == 500  # room to go online
    for name in ("observation", "action", "next_observation"):
        a = after.storage.take(name, after.storage.capacity + np.arange(recorded))
        assert np.array_equal(a, before.storage.take(name, np.arange(recorded)))
    assert after.settings.value_goals == (0.2, 0.5, 0.3)  # OGBench's mix, online too
    online = [row for row in rows(run) if float(row["env_steps"]) > 0]
    assert [int(row["env_steps"]) for row in online] == [15, 30, 40]
    assert int(online[0]["updates"]) == 30 + 15  # counted on from the offline steps
    assert "success_task_5" in online[0]
    saved = json.loads((run / "config.json").read_text())
    assert saved["dataset"] == str(dataset) and saved["steps"] == 40


def test_bad_offline_settings_say_what_is_expected(dataset, tmp_path):
    from herkit.training.loop import train

    with pytest.raises(FileNotFoundError, match="no such file"):
        train(offline(tmp_path / "none.npz", tmp_path / "a"))
    with pytest.raises(ValueError, match="'gcivl' is an offline agent: it trains on a recorded"):
        train(config_for(ENV, out=str(tmp_path / "c")))
    ddpg = config_for(
        ENV, dataset=str(dataset), algo="ddpg", offline_steps=10, out=str(tmp_path / "d")
    )
    with pytest.raises(ValueError, match=r"--dataset trains an offline agent \(--algo gcbc"):
        train(ddpg)
    with pytest.raises(ValueError, match="offline_steps=10 are gradient steps on a dataset"):
        train(config_for("herkit/PointReach-v0", offline_steps=10, out=str(tmp_path / "e")))
    assert not (tmp_path / "c").exists() and not (tmp_path / "e").exists()


@pytest.mark.slow("herkit train subprocesses")
def test_the_command_line_trains_offline(dataset, tmp_path):
    run = tmp_path / "cli"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "herkit",
            "train",
            ENV,
            "--dataset",
            str(dataset),
            "--algo",
            "gcbc",
            "--offline-steps",
            "20",
            "--eval-every",
            "20",
            "--eval-episodes",
            "1",
            "--n-eval-envs",
            "1",
            "--env-kwargs",
            *SHORT,
            "--gcbc.hidden",
            "16",
            "16",
            "--gcbc.batch-size",
            "32",
            "--out",
            str(run),
            "--no-progress",
            "--no-tensorboard",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "with gcbc on " in done.stderr and ": 20 gradient steps on it, in" in done.stderr
    from herkit.runtime.cores import available_cores

    cores = available_cores()
    plural = "s" if cores > 1 else ""
    assert "machine: 1 env in the trainer process, torch on 1 thread" in done.stderr
    assert (
        f"(chosen for {cores} CPU core{plural}, nothing stepping beside it, an update too "
        "small to share)"
    ) in done.stderr  # 16 x 16 at batch 32: one thread, busy or idle
    assert "at 20 gradient steps; run directory" in done.stderr
    assert done.stderr.rstrip().endswith(  # what goes on from here: offline, or online
        f"or herkit train --resume {run} --offline-steps 40 (train twice as long on the dataset) "
        "or --steps 100000 (go on online in the env)"
    )


def test_an_offline_command_makes_the_env_once_and_reads_its_dataset_once(
    dataset, tmp_path, monkeypatch
):
    import herkit.buffer.datasets as datasets
    import herkit.config.probe as probe
    import herkit.envs
    from herkit.cli import main

    made: list[str] = []
    real = herkit.envs.make_goal_env

    def counted(env_id, **kwargs):
        made.append(env_id)
        return real(env_id, **kwargs)

    monkeypatch.setattr(probe, "make_goal_env", counted)
    monkeypatch.setattr(herkit.envs, "make_goal_env", counted)
    read: list[str] = []
    real_read = datasets._read_npz

    def counted_read(path):
        read.append(path)
        return real_read(path)

    monkeypatch.setattr(datasets, "_read_npz", counted_read)
    args = ["train", ENV, "--dataset", str(dataset), "--algo", "gcbc", "--offline-steps", "2"]
    args += ["--eval-every", "2", "--eval-episodes", "1", "--n-eval-envs", "1"]
    args += ["--env-kwargs", *SHORT, "--gcbc.hidden", "16", "--gcbc.batch-size", "32"]
    args += ["--torch-threads", "1", "--no-progress", "--no-tensorboard"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    # the probe (which also says the dataset's shapes fit), the training and evaluation envs
    assert made == [ENV] * 3
    assert read == [str(dataset)]  # read once: the command line's check hands it to the run
