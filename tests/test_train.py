"""The training loop: learning with and without HER, run files, checkpoints and resume."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from herkit.agents.registry import agent_entry, algo_names
from herkit.config.train import TrainConfig
from herkit.rundir.checkpoint import CheckpointError, load_checkpoint
from herkit.rundir.logs import read_progress
from herkit.rundir.paths import RunPaths
from herkit.rundir.settings import load_run_config
from herkit.training.loop import train
from runs import quiet


@pytest.mark.slow("learning runs: HER and plain DQN on 15 bits")
def test_her_solves_15_bits_where_plain_dqn_fails(tmp_path: Path) -> None:
    """The paper's claim (Fig. 1): DQN fails on bit flipping above ~13 bits, DQN+HER solves it."""
    budget = dict(steps=6_000, eval_every=6_000, eval_episodes=50, seed=1)
    her = train(quiet(out=str(tmp_path / "her"), **budget))
    plain = train(quiet(out=str(tmp_path / "plain"), strategy="none", **budget))
    assert her["success_rate"] >= 0.9, her
    assert plain["success_rate"] <= 0.1, plain


@pytest.mark.slow("a training run per algorithm")
@pytest.mark.parametrize(
    ("env_id", "algo"),
    [
        *(
            ("herkit/GridWorld-v0" if agent_entry(algo).discrete else "herkit/PointReach-v0", algo)
            for algo in algo_names(offline=False)
        ),
        ("herkit/BitFlip-v0", "sac"),
    ],
)
def test_every_algorithm_runs_the_loop(tmp_path: Path, env_id: str, algo: str) -> None:
    changes: dict[str, Any] = {}
    if env_id == "herkit/BitFlip-v0":
        changes["env_kwargs"] = ("continuous=True", "n_bits=4")
    small = {"hidden": (32, 32), "batch_size": 16}
    config = quiet(
        env_id=env_id,
        algo=algo,
        steps=240,
        warmup_steps=64,
        updates_per_step=1.0,
        eval_every=120,
        eval_episodes=3,
        n_envs=2,
        prioritized=algo == "td3",
        relabel="store" if algo == "sac" else "sample",
        out=str(tmp_path / "run"),
        **{algo: small},
        **changes,
    )
    summary = train(config)
    assert summary["env_steps"] == 240 and summary["updates"] > 100
    rows = read_progress(tmp_path / "run")
    assert [int(row["env_steps"]) for row in rows] == [120, 240]
    assert "critic_loss" in rows[-1] and np.isfinite(float(rows[-1]["critic_loss"]))
    paths = RunPaths(tmp_path / "run")
    for path in (paths.config, paths.summary, paths.curve, paths.checkpoint / "state.json"):
        assert path.exists(), path.relative_to(paths.root)


@pytest.mark.slow("a training run per algorithm, checkpointed and resumed")
@pytest.mark.parametrize("algo", ["dqn", "td3"])
def test_recipe_ingredients_run_the_loop(tmp_path: Path, algo: str) -> None:
    """Goal mix, n-step returns, LayerNorm, the goal normaliser fed sampled goals and
    bfloat16 together, through training, checkpoint and resume."""
    env_id = "herkit/BitFlip-v0" if algo == "dqn" else "herkit/PointReach-v0"
    small = {"hidden": (32, 32), "batch_size": 32, "critic_layer_norm": True}
    if algo != "dqn":
        small["actor_layer_norm"] = True
    run = tmp_path / "run"
    config = quiet(
        env_id=env_id,
        algo=algo,
        steps=300,
        warmup_steps=64,
        eval_every=150,
        eval_episodes=2,
        goal_mix=(1.0, 2.0, 2.0),
        goal_mix_warmup=100,
        n_step=3,
        normalize_relabelled_goals=True,
        precision="bf16",
        out=str(run),
        **{algo: small},
    )
    summary = train(config)
    assert summary["env_steps"] == 300 and summary["strategy"] == "mix1:2:2"
    assert summary["updates"] >= (300 - 64) * config.updates_per_step - 1
    saved = json.loads(RunPaths(run).config.read_text())
    assert saved["precision"] == "bf16" and saved["her"]["n_step"] == 3
    assert saved["her"]["goal_mix"] == [0.2, 0.4, 0.4] and saved["her"]["goal_mix_warmup"] == 100
    resumed = train(dataclasses.replace(config, steps=450), resume=True)
    assert resumed["env_steps"] == 450


def test_a_summary_gives_the_mean_of_the_last_three_evaluations_of_its_phase() -> None:
    """OGBench's figure: the last three evaluations' mean (of those there are where fewer),
    the steps they were made at, and per task where the env has tasks; a curve names HER
    only where the run relabels."""
    from herkit.training.state import last_evaluations

    offline = [
        {"env_steps": "0", "updates": str(n), "success_rate": rate, "success_task_1": task}
        for n, rate, task in ((10, "0.1", "0"), (20, "0.2", "0.5"), (30, "0.6", "1"))
    ]
    assert last_evaluations(offline) == {
        "success_rate_last3": 0.3,
        "success_rate_last3_at": [10, 20, 30],
        "success_rate_by_task": [1.0],
        "success_rate_last3_by_task": [0.5],
    }
    online = [{"env_steps": "500", "updates": "900", "success_rate": "0.25"}]
    assert last_evaluations(online) == {
        "success_rate_last3": 0.25,
        "success_rate_last3_at": [500],
    }
    assert last_evaluations([]) == {}
    assert TrainConfig().method_name() == "dqn+HER"
    assert TrainConfig().with_her(strategy="none").method_name() == "dqn"
    assert TrainConfig(algo="gcivl").method_name() == "gcivl"


@pytest.mark.slow("learning runs: HER and its control to a success target")
def test_her_learns_one_fixed_goal_because_relabelled_goals_are_normalised(
    tmp_path: Path,
) -> None:
    """Mountain car with the flag as its only goal: the goal normaliser must see the
    relabelled goals, else the goal statistics sit on the one goal, every relabelled goal
    is clipped to the normaliser's bound, and DQN+HER learns nothing in the same budget."""
    budget = dict(
        env_id="herkit/MountainCarGoal-v0",
        env_kwargs=("goal_low=0.5", "goal_high=0.5"),
        strategy="future",
        steps=25_000,
        eval_every=25_000,
        eval_episodes=20,
        seed=0,
    )
    fixed = train(quiet(out=str(tmp_path / "default"), **budget))
    unfixed = train(quiet(out=str(tmp_path / "env"), normalize_relabelled_goals=False, **budget))
    assert fixed["success_rate"] >= 0.9, fixed
    assert unfixed["success_rate"] <= 0.1, unfixed


@pytest.mark.slow("learning runs: 5-bit flipping to a success target, twice")
def test_target_success_stops_when_evaluations_in_a_row_reach_it(tmp_path: Path) -> None:
    """The run stops at the first evaluation where the mean of the last 3 reaches the
    target (as progress.csv shows), not at one lucky evaluation; summary.json says so."""
    config = quiet(
        env_kwargs=("n_bits=5",),
        steps=20_000,
        eval_every=500,
        target_success=0.9,
        out=str(tmp_path),
    )
    summary = train(config)
    assert summary["env_steps"] < 20_000
    assert summary["solved_at_env_steps"] == summary["env_steps"]
    assert summary["target_rule"] == "the mean success of 3 evaluations in a row >= 0.9"
    assert summary["solved_at_wall_s"] > 0
    rates = [float(row["success_rate"]) for row in progress_rows(tmp_path)]
    means = [sum(rates[i - 2 : i + 1]) / 3 for i in range(2, len(rates))]
    assert means[-1] >= 0.9 and all(mean < 0.9 for mean in means[:-1])
    first = train(
        quiet(
            env_kwargs=("n_bits=5",),
            steps=20_000,
            eval_every=500,
            target_success=0.9,
            target_evaluations=1,
            out=str(tmp_path / "one"),
        )
    )
    assert first["target_rule"] == "the first evaluation with success >= 0.9"
    one = [float(row["success_rate"]) for row in progress_rows(tmp_path / "one")]
    assert one[-1] >= 0.9 and all(rate < 0.9 for rate in one[:-1])


def progress_rows(run_dir: Path) -> list[dict[str, str]]:
    import csv

    with open(RunPaths(run_dir).progress) as file:
        return list(csv.DictReader(file))


@pytest.mark.slow("a training run")
def test_config_round_trips_through_config_json(tmp_path: Path) -> None:
    config = quiet(
        out=str(tmp_path),
        steps=64,
        warmup_steps=32,
        eval_every=64,
        eval_episodes=2,
        precision="auto",
    )
    train(config)
    # config.json holds what the run used: the env's conventions filled in, the precision,
    # threads and env workers that auto chose, and its directory
    on_disk = json.loads(RunPaths(tmp_path).config.read_text())
    assert on_disk["precision"] in ("fp32", "bf16") and on_disk["torch_threads"] >= 1
    assert on_disk["env_workers"] == 0  # one env steps in the trainer process
    assert on_disk["precision"] in on_disk["machine"]["precision"]
    resolved = dataclasses.replace(
        config.with_her(terminal_on_success=True),
        reward_range=(-1.0, 0.0),
        success_key="is_success",
        precision=on_disk["precision"],
        update_mode=on_disk["update_mode"],
        torch_threads=on_disk["torch_threads"],
        env_workers=0,
    )
    assert load_run_config(tmp_path) == resolved
    assert on_disk["dqn"]["hidden"] == [256] and on_disk["algo"] == "dqn"
    assert on_disk["out"] == str(tmp_path)
    assert on_disk["conventions"]["success_key"] == "is_success"
    assert (
        "BitFlipEnv.terminates_on_success"
        in on_disk["conventions"]["sources"]["terminal_on_success"]
    )


@pytest.mark.slow("training runs, checkpointed and resumed")
def test_checkpoint_round_trip_restores_agent_and_buffer(tmp_path: Path) -> None:
    config = quiet(
        out=str(tmp_path),
        steps=300,
        warmup_steps=64,
        updates_per_step=1.0,
        eval_every=300,
        eval_episodes=2,
    )
    train(config)
    agent_state, buffer = load_checkpoint(tmp_path, lambda a, g, i: np.zeros(len(a)))
    state = agent_state["loop"]
    assert state["env_steps"] == 300 and state["updates"] == 300 - 64 + 1
    assert len(buffer) == 300
    assert all(isinstance(v, torch.Tensor) for v in agent_state["agent"]["networks"]["q"].values())


def test_damaged_checkpoint_gives_a_clear_error(tmp_path: Path) -> None:
    config = quiet(out=str(tmp_path), steps=128, warmup_steps=32, eval_every=128, eval_episodes=2)
    train(config)
    checkpoint = RunPaths(tmp_path).checkpoint
    buffer_file = checkpoint / "buffer.npz"
    buffer_file.write_bytes(buffer_file.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"buffer\.npz is missing, truncated or corrupted"):
        train(dataclasses.replace(config, steps=256), resume=True)
    (checkpoint / "state.json").write_text("{")
    with pytest.raises(CheckpointError, match=r"unreadable state\.json"):
        load_checkpoint(tmp_path, lambda a, g, i: np.zeros(len(a)))


def test_bad_train_config_values_name_the_field() -> None:
    for changes, message in [
        ({"steps": 0}, "steps must be an int >= 1"),
        ({"target_success": 1.5}, "target_success must be"),
        ({"env_kwargs": ("n_bits",)}, "KEY=VALUE"),
        ({"device": "tpu"}, "device must be"),
        ({"updates_per_step": 0.0}, "updates_per_step"),
    ]:
        with pytest.raises(ValueError, match=message):
            TrainConfig(**changes)
