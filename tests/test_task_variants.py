"""The HER paper's variants of a goal task: one fixed goal, and its shaped reward."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.settings import HerSettings
from herkit.envs import make_goal_env
from herkit.envs.task_variants import FixedGoal, ShapedReward, reward_info_keys
from herkit.rundir.logs import read_progress
from herkit.training.build import make_run_env, make_vector_env, resolve_conventions
from herkit.training.loop import train
from runs import quiet

ROBOTICS = importlib.util.find_spec("gymnasium_robotics") is not None


def test_a_fixed_goal_is_every_episodes_goal_and_the_envs_own() -> None:
    env = FixedGoal(make_goal_env("herkit/PointReach-v0"), goal_seed=3)
    other = FixedGoal(make_goal_env("herkit/PointReach-v0"), goal_seed=3)
    goals = [env.reset(seed=seed)[0]["desired_goal"] for seed in range(5)]
    assert all(np.array_equal(goal, other.goal) for goal in goals)
    starts = {tuple(env.reset(seed=seed)[0]["achieved_goal"]) for seed in range(5)}
    assert len(starts) == 5  # the rest of the episode is drawn as before
    observation, reward, *_, info = env.step(np.zeros(2, np.float32))
    assert np.array_equal(observation["desired_goal"], env.goal)
    expected = env.unwrapped.compute_reward(observation["achieved_goal"], env.goal, info)
    assert reward == expected  # the env rewards the fixed goal, not the one it drew


def test_a_fixed_goal_on_an_env_that_hides_its_goal_is_refused() -> None:
    class Hidden(gym.Wrapper[Any, Any, Any, Any]):
        """PointReach whose goal lives where FixedGoal does not look."""

        def __init__(self) -> None:
            super().__init__(make_goal_env("herkit/PointReach-v0"))

        @property
        def unwrapped(self) -> Any:
            return self  # no goal attribute here

    with pytest.raises(ValueError, match=r"^fixed_goal: Hidden keeps its goal in none"):
        FixedGoal(Hidden())


@settings(max_examples=25, deadline=None)
@given(lam=st.sampled_from([0.0, 1.0]), p=st.sampled_from([1.0, 2.0]), seed=st.integers(0, 99))
def test_the_shaped_reward_is_the_papers_for_every_goal(lam: float, p: float, seed: int) -> None:
    """Step rewards, and rewards recomputed for other goals from the stored info, are
    lam * |g - ag|^p - |g - ag'|^p."""
    env = ShapedReward(make_goal_env("herkit/PointReach-v0"), lam, p)
    observation, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    before, infos, after, rewards = [], [], [], []
    for _ in range(6):
        before.append(observation["achieved_goal"])
        observation, reward, _, _, info = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        after.append(observation["achieved_goal"])
        infos.append(info)
        rewards.append(reward)
    goal = observation["desired_goal"]
    distance = (
        np.linalg.norm(goal - np.array(before), axis=1),
        np.linalg.norm(goal - np.array(after), axis=1),
    )
    np.testing.assert_allclose(
        rewards, lam * distance[0] ** p - distance[1] ** p, rtol=1e-5, atol=1e-6
    )
    others = rng.uniform(-1, 1, (6, 2))
    columns = {key: np.array([info[key] for info in infos]) for key in env.reward_info_keys}
    recomputed = env.compute_reward(np.array(after), others, columns)
    expected = (
        lam * np.linalg.norm(others - np.array(before), axis=1) ** p
        - np.linalg.norm(others - np.array(after), axis=1) ** p
    )
    np.testing.assert_allclose(recomputed, expected, rtol=1e-5, atol=1e-6)


def test_a_shaped_reward_without_its_info_field_names_it() -> None:
    env = ShapedReward(make_goal_env("herkit/PointReach-v0"), 1.0, 2.0)
    with pytest.raises(ValueError, match=r"previous_achieved_goal_0.*--info-keys"):
        env.compute_reward(np.zeros((2, 2)), np.ones((2, 2)), {})
    with pytest.raises(ValueError, match=r"^shaped_reward: \(lam, p\) must be finite"):
        ShapedReward(make_goal_env("herkit/PointReach-v0"), 1.0, 0.0)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(2, np.float32))


def test_a_buffer_relabels_shaped_rewards_from_the_stored_field() -> None:
    env = ShapedReward(make_goal_env("herkit/PointReach-v0"), 1.0, 1.0)
    buffer = HerReplayBuffer.from_env(
        env, 2_000, settings=HerSettings(info_keys=reward_info_keys(env), k=4), seed=0
    )
    observation, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        following, reward, terminated, truncated, info = env.step(action)
        buffer.add(observation, action, following, terminated, truncated, info, reward=reward)
        observation = following if not (terminated or truncated) else env.reset()[0]
    batch = buffer.sample(512)  # the stored field is each step's achieved goal before it
    expected = np.linalg.norm(batch.goal - batch.achieved_goal, axis=1) - np.linalg.norm(
        batch.goal - batch.next_achieved_goal, axis=1
    )
    np.testing.assert_allclose(batch.reward, expected, rtol=1e-5, atol=1e-6)


def test_a_run_with_both_variants_gives_them_to_every_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = quiet(
        env_id="herkit/PointReach-v0",
        algo="td3",
        steps=200,
        warmup_steps=50,
        eval_every=100,
        eval_episodes=2,
        fixed_goal=True,
        shaped_reward=(1.0, 2.0),
        seed=4,
        td3={"hidden": (16, 16), "batch_size": 16},
        out=str(tmp_path / "run"),
    )
    keys = ("previous_achieved_goal_0", "previous_achieved_goal_1")
    assert resolve_conventions(config)[0].her.info_keys == keys  # relabelling has them
    goals = []
    for env in (make_run_env(config), make_run_env(config, render_mode="rgb_array")):
        goals.append(env.reset(seed=11)[0]["desired_goal"])
        env.close()
    envs = make_vector_env(config, 2, seed_offset=100, workers=0)
    goals += list(envs.reset(seed=12)[0]["desired_goal"])
    envs.close()
    assert all(np.array_equal(goal, goals[0]) for goal in goals)
    train(config)
    assert [int(row["env_steps"]) for row in read_progress(tmp_path / "run")] == [100, 200]
    said = capsys.readouterr().err
    assert "PointReach-v0, one goal for every episode, shaped reward lambda=1 p=2 with" in said


def test_goal_seed_picks_the_fixed_goal_apart_from_the_training_seed() -> None:
    def goal_of(**settings: Any) -> np.ndarray:
        env = make_run_env(quiet(env_id="herkit/PointReach-v0", fixed_goal=True, **settings))
        goal = env.reset(seed=99)[0]["desired_goal"]
        env.close()
        return goal

    reset_of_seed_7 = make_goal_env("herkit/PointReach-v0").reset(seed=7)[0]["desired_goal"]
    assert np.array_equal(goal_of(seed=7), reset_of_seed_7)  # by default: the run's seed
    assert np.array_equal(goal_of(seed=1, goal_seed=7), reset_of_seed_7)
    assert np.array_equal(goal_of(seed=2, goal_seed=7), reset_of_seed_7)  # one goal, 2 seeds
    assert not np.array_equal(goal_of(seed=1, goal_seed=8), reset_of_seed_7)


def test_bad_variant_settings_are_named() -> None:
    with pytest.raises(ValueError, match=r"^shaped_reward must be LAM P"):
        quiet(shaped_reward=(1.0, -2.0))
    with pytest.raises(ValueError, match=r"fixed_goal"):
        quiet(fixed_goal="yes")
    with pytest.raises(ValueError, match=r"^goal_seed is the seed of --fixed-goal's goal"):
        quiet(goal_seed=3)
    with pytest.raises(ValueError, match=r"^goal_seed must be an int >= 0, got -1"):
        quiet(fixed_goal=True, goal_seed=-1)
    lam_zero = quiet(env_id="herkit/PointReach-v0", algo="td3", shaped_reward=(0.0, 1.0))
    assert resolve_conventions(lam_zero)[0].her.info_keys == ()  # lam 0 reads no info


@pytest.mark.skipif(not ROBOTICS, reason="needs the robotics extra")
def test_fetch_push_takes_a_fixed_goal_for_its_success() -> None:
    env = FixedGoal(make_goal_env("FetchPush-v4"), goal_seed=0)
    env.reset(seed=5)
    assert np.array_equal(env.unwrapped.goal, env.goal)
    observation, reward, _, _, info = env.step(np.zeros(4, np.float32))
    distance = np.linalg.norm(observation["achieved_goal"] - env.goal)
    assert info["is_success"] == (distance < 0.05) and reward == -float(distance >= 0.05)
    env.close()
