"""A buffer whose data lives on a torch device: rewards in torch, agents fed tensors, the
training loop end to end. Runs on CPU tensors here and on CUDA where there is a GPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import herkit  # noqa: F401  (registers the envs)
from herkit.agents import Normalizer
from herkit.envs import make_goal_env
from herkit.envs.torch_rewards import GoalDistanceReward, torch_reward_of
from herkit.rundir.checkpoint import load_checkpoint
from herkit.training.build import buffer_placement
from herkit.training.loop import train
from runs import quiet
from tagged import DEVICES, host
from test_agents import agent_for, parameters, random_batch

TORCH_DEVICES = [device for device in DEVICES if device is not None]
HERKIT_ENVS = [
    "herkit/BitFlip-v0",
    "herkit/PointReach-v0",
    "herkit/GridWorld-v0",
    "herkit/MountainCarGoal-v0",
]


def goal_pairs(env: gym.Env, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Goals from the env's own episodes, paired with each other and with near copies
    (so that distances land on both sides of any threshold)."""
    goals = []
    for episode in range(8):
        obs, _ = env.reset(seed=seed + episode)
        goals += [obs["achieved_goal"], obs["desired_goal"]]
        for _ in range(10):
            obs, *_ = env.step(env.action_space.sample())
            goals.append(obs["achieved_goal"])
    goals_array = np.array(goals)
    rng = np.random.default_rng(seed)
    achieved = goals_array[rng.integers(len(goals_array), size=n)]
    desired = goals_array[rng.integers(len(goals_array), size=n)]
    near = rng.random(n) < 0.5
    jitter = rng.normal(scale=0.03, size=achieved.shape).astype(achieved.dtype)
    desired[near] = (achieved + jitter * (achieved.dtype.kind == "f"))[near]
    return achieved, desired


def robotics_ids() -> list[str]:
    if importlib.util.find_spec("gymnasium_robotics") is None:
        return []
    return ["FetchReach-v4", "FetchPush-v4"]


@pytest.mark.parametrize("env_id", HERKIT_ENVS + robotics_ids())
def test_torch_rewards_equal_the_envs_numpy_rewards(env_id: str) -> None:
    env = make_goal_env(env_id)
    torch_reward = torch_reward_of(env)
    assert torch_reward is not None
    achieved, desired = goal_pairs(env, 2_000, seed=0)
    expected = env.unwrapped.compute_reward(achieved, desired, {})  # type: ignore[attr-defined]
    got = torch_reward(torch.from_numpy(achieved), torch.from_numpy(desired), {})
    assert got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), expected)
    assert 0 < (expected == 0).mean() < 1, "the pairs should straddle the threshold"


def test_goal_distance_reward_dense_and_unknown_envs() -> None:
    a, b = torch.zeros(3, 2), torch.tensor([[3.0, 4.0], [0.0, 0.0], [0.5, 0.0]])
    assert GoalDistanceReward(0.5, sparse=False)(a, b).tolist() == [-5.0, 0.0, -0.5]
    assert GoalDistanceReward(0.5)(a, b).tolist() == [-1.0, 0.0, 0.0]
    assert GoalDistanceReward(0.5, inclusive=True)(a, b).tolist() == [-1.0, 0.0, -1.0]
    assert torch_reward_of(gym.make("CartPole-v1")) is None


def test_normalize_tensor_matches_numpy() -> None:
    normalizer = Normalizer(4)
    rng = np.random.default_rng(0)
    normalizer.update(rng.normal(3.0, 2.0, size=(500, 4)))
    x = rng.normal(3.0, 6.0, size=(64, 4)).astype(np.float32)
    expected = normalizer.normalize(x)
    got = normalizer.normalize_tensor(torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
    normalizer.update(rng.normal(-3.0, 1.0, size=(500, 4)))  # new statistics are picked up
    np.testing.assert_allclose(
        normalizer.normalize_tensor(torch.from_numpy(x)).numpy(),
        normalizer.normalize(x),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("algo", ["dqn", "ddpg", "sac"])
@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_agents_learn_the_same_from_tensor_batches(algo: str, device: str) -> None:
    on_host, on_device = agent_for(algo, seed=3), agent_for(algo, seed=3)
    for agent in (on_host, on_device):
        agent.update_normalizer(
            np.random.default_rng(1).normal(size=(100, 6)),
            np.random.default_rng(2).normal(size=(100, 3)),
        )
    for step in range(3):
        batch = random_batch(algo, seed=step, weights=np.ones(64, np.float32))
        expected = on_host.update(batch)
        got = on_device.update(batch.to_torch(device))
        assert got.keys() == expected.keys()
        for name in expected:
            # a metric may be a 0-d tensor on the device, which approx does not take
            assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-4, abs=1e-5), (
                name
            )
    for name, value in parameters(on_host).items():
        torch.testing.assert_close(parameters(on_device)[name], value, rtol=1e-4, atol=1e-5)
    on_device.update_goal_normalizer(torch.zeros(5, 3))  # tensors go to the host statistics


def test_buffer_placement_choices() -> None:
    envs = gym.make_vec("herkit/BitFlip-v0", num_envs=1, vectorization_mode="sync")
    assert buffer_placement("host", "cpu", envs) == {"device": None, "torch_reward_fn": None}
    assert buffer_placement("auto", "cpu", envs)["device"] is None  # auto: GPUs only
    placed = buffer_placement("device", "cpu", envs)
    assert placed["device"] == "cpu" and callable(placed["torch_reward_fn"])


@pytest.mark.slow("learning run, resumed")
def test_training_with_the_buffer_on_a_device_learns_and_resumes(tmp_path: Path) -> None:
    """15-bit flipping with the buffer in torch tensors: it learns as the numpy run does
    (test_train's budget), and its checkpoint resumes and loads onto either placement."""
    device = TORCH_DEVICES[-1]
    budget = dict(steps=6_000, eval_every=6_000, eval_episodes=50, seed=1)
    result = train(quiet(out=str(tmp_path), buffer_device="device", device=device, **budget))
    assert result["success_rate"] >= 0.9, result
    reward = torch_reward_of(gym.make("herkit/BitFlip-v0"))
    _, on_device = load_checkpoint(
        tmp_path, lambda a, g, i: np.zeros(len(a)), device, None, device, reward
    )
    _, on_host = load_checkpoint(tmp_path, lambda a, g, i: np.zeros(len(a)))
    assert on_device.device == torch.device(device) and on_host.device is None
    np.testing.assert_array_equal(host(on_device.sample(16)).goal, on_host.sample(16).goal)
    resumed = train(
        quiet(
            out=str(tmp_path), buffer_device="device", device=device, **{**budget, "steps": 6_500}
        ),
        resume=True,
    )
    assert resumed["env_steps"] == 6_500
