"""Env conventions found out from the env: reward range, success signal, ends on success.

The envs here are written in the test, with conventions herkit's own envs do not have:
0/1 rewards with ``info["success"]`` (and no ``is_success``), an extra observation key,
no declaration of ending on success, dense ``-distance`` rewards without any success
signal, a reward wrapper that ``compute_reward`` does not know, and a reward that needs
info.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from herkit.agents import make_agent
from herkit.buffer import conventions as conventions_module
from herkit.buffer.conventions import GoalConventions, SuccessSignal, probe_conventions
from herkit.buffer.settings import HerSettings
from herkit.config import DQNConfig, TrainConfig, preset_config
from herkit.envs import HERKIT_IDS, make_goal_env
from herkit.envs.point_reach import PointReachEnv
from herkit.rundir.paths import RunPaths
from herkit.rundir.settings import load_run_config
from herkit.training.build import resolve_conventions
from herkit.training.loop import train
from runs import QUIET


class ZeroOneFlipEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """Bit flipping as PointMaze scores it: reward 1 on success and 0 otherwise, success
    in ``info["success"]``, the episode ends on success (not declared), and the
    observation has a key that goal envs need not have."""

    def __init__(self, n_bits: int = 10) -> None:
        self.n_bits = n_bits
        bits = gym.spaces.Box(0.0, 1.0, (n_bits,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {
                "observation": bits,
                "achieved_goal": bits,
                "desired_goal": bits,
                "steps_left": gym.spaces.Box(0.0, np.inf, (1,), np.float32),
            }
        )
        self.action_space = gym.spaces.Discrete(n_bits)

    def compute_reward(self, achieved: Any, desired: Any, info: Any) -> np.ndarray:
        return np.all(np.asarray(achieved) == np.asarray(desired), axis=-1).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        self._goal = self._state.copy()
        while np.array_equal(self._goal, self._state):
            self._goal = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        self._t = 0
        return self._obs(), {"success": False}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        self._state[int(action)] = 1.0 - self._state[int(action)]
        self._t += 1
        reward = float(self.compute_reward(self._state, self._goal, None))
        success = reward == 1.0
        return self._obs(), reward, success, self._t >= self.n_bits, {"success": success}

    def _obs(self) -> dict[str, np.ndarray]:
        left = np.array([self.n_bits - self._t], np.float32)
        state = self._state.copy()
        return {
            "observation": state,
            "achieved_goal": state.copy(),
            "desired_goal": self._goal.copy(),
            "steps_left": left,
        }


class ZeroOneReachEnv(PointReachEnv):
    """PointReach scored as PointMaze is: reward 1 on success, 0 otherwise, success in
    ``info["success"]`` only, the episode ends on success, and an extra observation key."""

    terminates_on_success = None  # type: ignore[assignment]  # declares nothing

    def __init__(self) -> None:
        super().__init__()
        extra = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.observation_space = gym.spaces.Dict({**self.observation_space.spaces, "extra": extra})

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        return 1.0 + super().compute_reward(achieved_goal, desired_goal, info)

    def is_success(self, achieved_goal: Any, desired_goal: Any) -> Any:
        return self.compute_reward(achieved_goal, desired_goal) == 1.0

    def reset(self, **kwargs: Any) -> Any:
        obs, _ = super().reset(**kwargs)
        return {**obs, "extra": np.ones(1, np.float32)}, {"success": False}

    def step(self, action: Any) -> Any:
        obs, _, _, truncated, _ = super().step(action)
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"]))
        success = reward == 1.0
        return (
            {**obs, "extra": np.ones(1, np.float32)},
            reward,
            success,
            truncated,
            {"success": success},
        )


class DenseReachEnv(PointReachEnv):
    """PointReach with a ``-distance`` reward and no success signal at all."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        delta = np.asarray(achieved_goal, np.float64) - np.asarray(desired_goal, np.float64)
        return -np.linalg.norm(delta, axis=-1).astype(np.float32)

    def step(self, action: Any) -> Any:
        obs, _, terminated, truncated, _ = super().step(action)
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"]))
        return obs, reward, terminated, truncated, {}


class WeightedReachEnv(PointReachEnv):
    """A reward that needs ``info["weight"]``: compute_reward fails on an info without it
    (``None``, from PointReach's own success test, counts as weight 1)."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        weight = 1.0 if info is None else info["weight"]
        return super().compute_reward(achieved_goal, desired_goal) * weight

    def step(self, action: Any) -> Any:
        obs, _, terminated, truncated, info = super().step(action)
        info["weight"] = 2.0
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], info))
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Any:
        obs, info = super().reset(**kwargs)
        return obs, {**info, "weight": 2.0}


for _name, _cls in [
    ("ZeroOneFlip", ZeroOneFlipEnv),
    ("ZeroOneReach", ZeroOneReachEnv),
    ("DenseReach", DenseReachEnv),
    ("WeightedReach", WeightedReachEnv),
]:
    if f"test/{_name}-v0" not in gym.registry:
        gym.register(f"test/{_name}-v0", entry_point=_cls, max_episode_steps=50)


def probe(env_id: str, **kwargs: Any) -> GoalConventions:
    env = make_goal_env(env_id, **kwargs)
    try:
        return probe_conventions(env, env.unwrapped.compute_reward, seed=0)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", HERKIT_IDS)
def test_probe_of_every_bundled_env(env_id: str) -> None:
    found = probe(env_id)
    assert found.reward_range == (-1.0, 0.0)
    assert found.success_key == "is_success" and found.success_reward == 0.0
    ends = env_id != "herkit/PointReach-v0"  # the others end their episodes on success
    assert found.terminal_on_success is ends
    assert "declared" in found.sources["terminal_on_success"]
    assert not found.warnings


def test_probe_of_a_zero_one_env_with_info_success_and_extra_keys() -> None:
    found = probe("test/ZeroOneFlip-v0", n_bits=4)  # 4 bits: random steps do succeed
    assert found.reward_range == (0.0, 1.0) and found.success_reward == 1.0
    assert found.success_key == "success"
    assert found.terminal_on_success is True
    assert "a success ended its episode" in found.sources["terminal_on_success"]


def test_probe_of_a_dense_reward_without_success_signal() -> None:
    found = probe("test/DenseReach-v0")
    assert found.reward_range is None  # unbounded: no clipping rather than wrong clipping
    assert found.success_key is None and found.success_reward is None
    assert any("no success signal" in warning for warning in found.warnings)
    config, _ = resolve_conventions(TrainConfig("test/DenseReach-v0", algo="ddpg"))
    agent = make_agent("ddpg", None, 4, 2, gym.spaces.Box(-1, 1, (2,)), config.reward_range)
    assert agent.return_bounds == (-math.inf, math.inf)


def test_probe_reports_step_rewards_that_compute_reward_does_not_give() -> None:
    env = gym.wrappers.TransformReward(make_goal_env("herkit/PointReach-v0"), lambda r: 10 * r)
    found = probe_conventions(env, env.unwrapped.compute_reward, seed=0)  # type: ignore[attr-defined]
    assert any("differs from compute_reward" in warning for warning in found.warnings)


def test_reward_that_needs_info_works_through_info_keys() -> None:
    env = make_goal_env("test/WeightedReach-v0")
    reward_fn = env.unwrapped.compute_reward  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="info_keys"):
        probe_conventions(env, reward_fn, seed=0)
    found = probe_conventions(env, reward_fn, info_keys=("weight",), seed=0)
    assert found.reward_range == (-2.0, 0.0) and not found.warnings
    with pytest.raises(ValueError, match="no such key"):
        probe_conventions(env, reward_fn, info_keys=("mass",), seed=0)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "reward_range", "key", "terminal"),
    [
        ("FetchReach-v4", {}, (-1.0, 0.0), "is_success", False),
        ("FetchPush-v4", {}, (-1.0, 0.0), "is_success", None),  # no success at random
        ("FetchReachDense-v4", {}, None, "is_success", False),
        ("PointMaze_UMaze-v3", {"continuing_task": False}, (0.0, 1.0), "success", True),
        ("PointMaze_UMaze-v3", {}, (0.0, 1.0), "success", False),
    ],
)
def test_probe_of_gymnasium_robotics_envs(
    env_id: str, kwargs: dict, reward_range: Any, key: str, terminal: bool | None
) -> None:
    pytest.importorskip("gymnasium_robotics", reason="needs herkit[robotics]")
    found = probe(env_id, **kwargs)
    assert (found.reward_range, found.success_key) == (reward_range, key)
    assert found.terminal_on_success is terminal


def test_success_signal_reads_each_convention() -> None:
    goals = {"achieved_goal": np.array([[1.0], [2.0]]), "desired_goal": np.array([[1.0], [0.0]])}
    info = {"is_success": np.array([0.0, 1.0]), "success": np.array([True, False])}
    assert SuccessSignal("is_success")(info, goals).tolist() == [0.0, 1.0]
    assert SuccessSignal("success")(info, goals).tolist() == [1.0, 0.0]

    def reward(a: np.ndarray, d: np.ndarray, i: Any) -> np.ndarray:
        return -(a != d)[:, 0].astype(float)

    assert SuccessSignal("compute_reward", reward, 0.0)(info, goals).tolist() == [1.0, 0.0]
    assert SuccessSignal(None)(info, goals) is None
    with pytest.raises(ValueError, match="success_key"):
        SuccessSignal("solved")


def zero_one_config(tmp_path: Path, name: str, **changes: Any) -> TrainConfig:
    """herkit's defaults, with the bit-flipping preset's DQN settings and a short budget."""
    values: dict[str, Any] = dict(
        env_id="test/ZeroOneFlip-v0",
        env_kwargs=("n_bits=10",),
        algo="dqn",
        steps=5_000,
        warmup_steps=256,
        updates_per_step=0.25,
        eval_every=5_000,
        eval_episodes=50,
        seed=0,
        agent=DQNConfig(batch_size=256, epsilon=0.5, polyak=0.99),
        out=str(tmp_path / name),
        **QUIET,
    )
    return TrainConfig(**(values | changes))


@pytest.mark.slow("learning runs: 0/1 rewards, and with Fetch's clipping")
def test_zero_one_rewards_learn_by_default_and_fail_with_fetch_clipping(tmp_path: Path) -> None:
    """0/1 rewards, success in info["success"], episodes that end on success: herkit's
    defaults find the range [0, 1] and DDPG+HER solves the reach; forcing Fetch's (-1, 0)
    (the old default) clips every target to <= 0, and nothing is learned."""

    def config(name: str, **changes: Any) -> TrainConfig:
        preset = preset_config("herkit/PointReach-v0")  # DDPG, as for PointReach
        return dataclasses.replace(
            preset,
            env_id="test/ZeroOneReach-v0",
            steps=2_500,
            eval_every=2_500,
            eval_episodes=20,
            out=str(tmp_path / name),
            **QUIET,
            **changes,
        )

    learned = train(config("probed"))
    assert learned["success_rate"] >= 0.9, learned
    saved = json.loads(RunPaths(tmp_path / "probed").config.read_text())
    assert saved["reward_range"] == [0.0, 1.0] and saved["success_key"] == "success"
    assert saved["her"]["terminal_on_success"] is True

    clipped = train(config("fetch", reward_range=(-1.0, 0.0)))
    assert clipped["success_rate"] <= 0.1, clipped


@pytest.mark.slow("learning runs: 0/1 against -1/0 rewards")
def test_zero_one_bit_flipping_learns_as_minus_one_zero_does(tmp_path: Path) -> None:
    """DQN on 0/1 bit flipping: the reward scale (ValueScale) makes it learn like -1/0."""
    learned = train(zero_one_config(tmp_path, "flip"))
    assert learned["success_rate"] >= 0.9, learned


def test_ending_on_success_is_decided_at_the_first_success_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no success in the probe and no declaration, the loop decides at the first
    success it sees, records it in config.json, and switches the buffer."""
    real_probe = conventions_module.probe_conventions

    def short_probe(*args: Any, **kwargs: Any) -> GoalConventions:
        return real_probe(*args, **{**kwargs, "steps": 1})

    monkeypatch.setattr("herkit.config.probe.probe_conventions", short_probe)
    config = zero_one_config(tmp_path, "online", steps=1_500, eval_every=1_500, eval_episodes=5)
    resolved, found = resolve_conventions(config)
    assert found.terminal_on_success is None and resolved.her.terminal_on_success is None
    train(config)
    saved = json.loads(RunPaths(tmp_path / "online").config.read_text())
    assert saved["her"]["terminal_on_success"] is True
    assert saved["conventions"]["sources"]["terminal_on_success"].startswith("observed at")
    assert load_run_config(tmp_path / "online").her.terminal_on_success is True


def test_given_settings_win_over_the_probe() -> None:
    config = TrainConfig(
        "herkit/PointReach-v0",
        algo="ddpg",
        reward_range=(-2.0, 0.0),
        her=HerSettings(terminal_on_success=True),
        success_key="compute_reward",
    )
    resolved, found = resolve_conventions(config)
    assert resolved.reward_range == (-2.0, 0.0) and resolved.her.terminal_on_success is True
    assert found.sources["terminal_on_success"].startswith("given")
    assert resolved.success_key == "compute_reward" and found.success_reward == 0.0
    assert found.sources["reward_range"].startswith("given")
    with pytest.raises(ValueError, match="needs a sparse reward"):
        resolve_conventions(TrainConfig("test/DenseReach-v0", success_key="compute_reward"))


def test_training_with_a_reward_that_needs_info(tmp_path: Path) -> None:
    """--info-keys stores the field, so relabelled rewards are the env's; without it the run
    stops at the start with a message naming info_keys, and leaves no run directory."""

    def config(name: str, **changes: Any) -> TrainConfig:
        return TrainConfig(
            "test/WeightedReach-v0",
            algo="ddpg",
            steps=200,
            warmup_steps=100,
            eval_every=200,
            eval_episodes=2,
            out=str(tmp_path / name),
            **QUIET,
            **changes,
        )

    with pytest.raises(ValueError, match="info_keys"):
        train(config("without"))
    assert not (tmp_path / "without").exists()
    summary = train(config("with", her=HerSettings(info_keys=("weight",))))
    assert summary["env_steps"] == 200
    saved = json.loads(RunPaths(tmp_path / "with").config.read_text())
    assert saved["reward_range"] == [-2.0, 0.0] and saved["her"]["info_keys"] == ["weight"]


class ScalarRewardEnv(PointReachEnv):
    """A compute_reward that takes one goal pair only (not batched)."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> Any:
        delta = np.asarray(achieved_goal) - np.asarray(desired_goal)
        return -float(np.linalg.norm(delta) >= self.distance_threshold)


def test_a_compute_reward_that_is_not_batched_is_refused_clearly() -> None:
    env = ScalarRewardEnv()
    with pytest.raises(ValueError, match="batched on the leading axis"):
        probe_conventions(env, env.compute_reward, seed=0)
