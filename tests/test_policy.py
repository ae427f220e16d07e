"""herkit.load_policy: a trained run's policy acts as the agent that trained did; `herkit
eval` plays it and leaves no env open."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import herkit
from herkit.rundir.checkpoint import CheckpointError
from herkit.rundir.paths import RunPaths
from herkit.training.loop import train
from herkit.training.run import TrainingRun
from runs import quiet


def train_and_keep_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **changes: Any
) -> tuple[Path, Any]:
    """Train briefly; return the run directory and the live agent of its last checkpoint."""
    kept: dict[str, Any] = {}
    checkpoint = TrainingRun.checkpoint

    def keep(run: TrainingRun) -> None:
        kept["agent"] = run.parts.agent
        checkpoint(run)

    monkeypatch.setattr(TrainingRun, "checkpoint", keep)
    run = tmp_path / "run"
    train(quiet(out=str(run), eval_every=300, eval_episodes=2, **changes))
    return run, kept["agent"]


def observations(env: gym.Env, n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` observations of ``env`` (random actions), stacked on a leading axis."""
    env.action_space.seed(seed)
    seen = []
    obs, _ = env.reset(seed=seed)
    for _ in range(n):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return {key: np.stack([o[key] for o in seen]) for key in seen[0]}


@pytest.mark.slow("trains an agent per algorithm")
@pytest.mark.parametrize(
    ("env_id", "algo"),
    [
        ("herkit/BitFlip-v0", "dqn"),
        ("herkit/PointReach-v0", "sac"),
        ("herkit/PointReach-v0", "td3"),
    ],
)
def test_loaded_policy_acts_as_the_trained_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env_id: str, algo: str
) -> None:
    small = {"hidden": (32, 32), "batch_size": 32}
    run, agent = train_and_keep_agent(
        monkeypatch,
        tmp_path,
        env_id=env_id,
        algo=algo,
        steps=600,
        warmup_steps=100,
        **{algo: small},
    )
    policy = herkit.load_policy(run)
    assert policy.env_id == env_id and policy.config.algo == algo and policy.env_steps == 600
    env = policy.make_env()
    batch = observations(env, 64, seed=3)
    expected = agent.act(batch["observation"], batch["desired_goal"], deterministic=True)
    actions = policy.act(batch)
    np.testing.assert_array_equal(actions, expected)
    assert len(actions) == 64 and all(env.action_space.contains(a) for a in actions)

    one = {key: value[5] for key, value in batch.items()}
    action = policy.act(one)
    alone = agent.act(one["observation"][None], one["desired_goal"][None], deterministic=True)
    if isinstance(env.action_space, gym.spaces.Discrete):
        assert isinstance(action, int) and action == alone[0] == expected[5]
    else:
        assert action.shape == env.action_space.shape
        np.testing.assert_array_equal(action, alone[0])
    assert env.action_space.contains(policy(one))  # callable, as SB3's predict

    obs, _ = env.reset(seed=0)
    for _ in range(3):  # it drives the env it was trained on
        obs, *_ = env.step(policy.act(obs))


def test_act_checks_its_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run, _ = train_and_keep_agent(monkeypatch, tmp_path, steps=300)
    policy = herkit.load_policy(run)
    with pytest.raises(ValueError, match="observation dict"):
        policy.act(np.zeros(15))
    with pytest.raises(ValueError, match=r"shape \(15,\)"):
        policy.act({"observation": np.zeros(7), "desired_goal": np.zeros(7)})
    extra = {"observation": np.zeros(15), "desired_goal": np.ones(15), "achieved_goal": 0, "x": 1}
    assert isinstance(policy.act(extra), int)  # other keys are ignored
    stochastic = {policy.act(extra, deterministic=False) for _ in range(200)}
    assert len(stochastic) > 1  # epsilon-greedy, as in training


def test_load_policy_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"has no config\.json"):
        herkit.load_policy(tmp_path)
    run, _ = train_and_keep_agent(monkeypatch, tmp_path, steps=300)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            herkit.load_policy(run, device="cuda")
    with pytest.raises(ValueError, match="not a torch device"):
        herkit.load_policy(run, device="gpu")
    agent_file = RunPaths(run).checkpoint / "agent.pt"
    agent_file.write_bytes(agent_file.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match=r"agent\.pt is missing, truncated or corrupted"):
        herkit.load_policy(run)


def test_import_herkit_registers_its_envs_cheaply_and_the_robotics_ones_on_first_use() -> None:
    code = (
        "import sys, gymnasium as gym, herkit\n"
        "gym.make('herkit/BitFlip-v0').reset(seed=0)\n"
        "heavy = {'torch', 'mujoco', 'gymnasium_robotics', 'matplotlib', 'plotly'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('gymnasium_robotics'):\n"
        "    from herkit.envs import make_goal_env, register_robotics_envs\n"
        "    assert make_goal_env('FetchReach-v4').spec.max_episode_steps == 50\n"
        "    assert register_robotics_envs()\n"
        "    gym.make('PointMaze_UMaze-v3').close()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    assert "Adroit" not in done.stderr  # gymnasium-robotics' import warning is kept quiet


@pytest.mark.parametrize("fails", [False, True])
def test_herkit_eval_closes_every_env_it_makes(
    monkeypatch: pytest.MonkeyPatch, train_once: Callable[..., Path], fails: bool
) -> None:
    """`herkit eval` closes the envs it makes (the evaluation envs and the one that says
    the env's tasks), after its episodes and when reading the tasks fails."""
    from herkit.training import build, evaluation

    run = train_once(steps=400, eval_every=200, eval_episodes=2)
    made: list[Any] = []
    closed: list[Any] = []

    def spied(make: Callable[..., Any]) -> Callable[..., Any]:
        def make_and_spy(*args: Any, **kwargs: Any) -> Any:
            env = make(*args, **kwargs)
            close = env.close

            def spy_close() -> None:
                closed.append(env)
                close()

            env.close = spy_close
            made.append(env)
            return env

        return make_and_spy

    def broken(env: Any) -> None:
        raise RuntimeError("the env's tasks could not be read")

    monkeypatch.setattr(build, "make_run_env", spied(build.make_run_env))
    monkeypatch.setattr(build, "make_vector_env", spied(build.make_vector_env))
    if fails:
        monkeypatch.setattr(evaluation, "evaluation_tasks", broken)
        with pytest.raises(RuntimeError, match="the env's tasks could not be read"):
            evaluation.evaluate_run(run, episodes=2, seed=0)
    else:
        assert evaluation.evaluate_run(run, episodes=2, seed=0)["episodes"] == 2
    vector = [env for env in made if isinstance(env, gym.vector.VectorEnv)]
    assert len(vector) == 1 and len(made) > 1  # the evaluation envs, the env of the tasks
    assert all(any(env is gone for gone in closed) for env in made)
