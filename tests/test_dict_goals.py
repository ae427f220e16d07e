"""Goals that are dicts (FlatGoals) and compute_rewards that take one goal at a time.

The envs are in tests/dict_goals.py: ``ColourReach`` has goals ``{"position": Box(2),
"colour": Discrete(3)}`` and a ``compute_reward`` that takes one dict pair at a time;
``OneAtATimeReach`` has Box goals and a one-at-a-time ``compute_reward``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from dict_goals import THRESHOLD, reach_reward
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit import HerReplayBuffer
from herkit.buffer import per_sample as per_sample_module
from herkit.buffer.conventions import probe_conventions
from herkit.buffer.goal_env import compute_reward_of, fresh_copy
from herkit.buffer.per_sample import (
    PerSampleReward,
    PerSampleRewardWarning,
    RewardRefused,
    per_sample,
)
from herkit.config import TrainConfig
from herkit.envs import FlatGoals, make_goal_env
from herkit.envs.goal_spaces import flat_goal_space, flatten_goal, unflatten_goals
from herkit.rundir.paths import RunPaths
from herkit.training.build import resolve_conventions
from herkit.training.loop import train
from runs import QUIET

COLOURS = "dict_goals:ColourReach-v0"
BATCHED_COLOURS = "dict_goals:BatchedColourReach-v0"
ONE_AT_A_TIME = "dict_goals:OneAtATimeReach-v0"
BROKEN = "dict_goals:BrokenReach-v0"


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No per-sample warning given yet in this process (each is given once)."""
    monkeypatch.setattr(per_sample_module, "_WARNED", set())


def per_sample_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The messages of the PerSampleRewardWarnings among ``caught``."""
    return [str(w.message) for w in caught if issubclass(w.category, PerSampleRewardWarning)]


# -- flattening ------------------------------------------------------------------------------


def _leaf() -> st.SearchStrategy[spaces.Space[Any]]:
    shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
    boxes = st.builds(
        lambda shape, dtype, low: spaces.Box(low, low + 5, shape, dtype),
        shapes,
        st.sampled_from([np.float32, np.float64, np.int32, np.int16]),
        st.integers(-3, 0),
    )
    return st.one_of(
        boxes,
        st.builds(spaces.Discrete, st.integers(1, 5), start=st.integers(-2, 2)),
        st.builds(spaces.MultiBinary, st.integers(1, 4)),
        st.builds(spaces.MultiDiscrete, st.lists(st.integers(1, 4), min_size=1, max_size=3)),
    )


GOAL_SPACES = st.recursive(
    _leaf(),
    lambda parts: st.one_of(
        st.dictionaries(st.sampled_from("abcde"), parts, min_size=1, max_size=3).map(spaces.Dict),
        st.lists(parts, min_size=1, max_size=3).map(lambda items: spaces.Tuple(tuple(items))),
    ),
    max_leaves=5,
).filter(lambda space: isinstance(space, (spaces.Dict, spaces.Tuple)))
"""Dict and Tuple goal spaces, nested, of every leaf kind that FlatGoals flattens."""


def same(a: Any, b: Any) -> bool:
    """Whether two goals are equal, leaf by leaf, with the same dtypes."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


@settings(max_examples=60, deadline=None)
@given(GOAL_SPACES, st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_unflatten_of_flatten_gives_each_goal_back(space: Any, seed: int, n: int) -> None:
    space.seed(seed)
    goals = [space.sample() for _ in range(n)]
    flat = np.stack([flatten_goal(space, goal) for goal in goals])
    assert flat.dtype == flat_goal_space(space).dtype and flat_goal_space(space).contains(flat[0])
    batch = unflatten_goals(space, flat)
    for i, goal in enumerate(goals):
        back = per_sample_module.row(batch, i)
        assert same(back, goal), (back, goal)
        assert same(back, spaces.unflatten(space, flat[i]))  # as gymnasium reads it


def test_a_float32_goal_with_a_discrete_part_is_float32_and_others_float64() -> None:
    position = spaces.Box(-1, 1, (2,), np.float32)
    assert flat_goal_space(spaces.Dict(a=position, b=spaces.Discrete(3))).dtype == np.float32
    wide = spaces.Dict(a=spaces.Box(-1, 1, (2,), np.float64), b=spaces.Discrete(3))
    assert flat_goal_space(wide).dtype == np.float64


# -- the wrapper -----------------------------------------------------------------------------


def test_make_goal_env_flattens_dict_goals_and_keeps_the_envs_dicts(fresh_warnings: None) -> None:
    env = make_goal_env(COLOURS)
    assert isinstance(env, FlatGoals)
    space: Any = env.observation_space
    assert space["desired_goal"] == spaces.Box(
        np.array([0, 0, 0, -1, -1], np.float32), 1.0, (5,), np.float32
    )
    obs, _ = env.reset(seed=3)
    assert space.contains(obs)
    goal = env.unflatten_goal(obs["desired_goal"])
    assert same(goal, env.unwrapped.goal)  # type: ignore[attr-defined]
    achieved, desired = obs["achieved_goal"], obs["desired_goal"]
    assert env.compute_reward(achieved, achieved, {}) == 0.0  # one pair: the env's own call
    batch = np.stack([achieved, desired, achieved])
    with pytest.warns(PerSampleRewardWarning, match="a batch of 3 goals failed"):
        rewards = env.compute_reward(batch, np.stack([achieved] * 3), {})
    assert rewards.tolist() == [
        0.0,
        env.unwrapped.compute_reward(  # type: ignore[attr-defined]
            goal, env.unflatten_goal(achieved, "achieved_goal"), {}
        ),
        0.0,
    ]
    assert env.compute_reward(batch.reshape(1, 3, 5), batch.reshape(1, 3, 5)).shape == (1, 3)
    copy, how = fresh_copy(env)  # the probe's copy is flattened too
    assert isinstance(copy, FlatGoals), how
    copy.close()


def test_a_compute_reward_that_takes_batched_dicts_is_called_once_per_batch(
    fresh_warnings: None,
) -> None:
    env = make_goal_env(BATCHED_COLOURS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = probe_conventions(env, compute_reward_of(env), seed=0)
    assert env.get_wrapper_attr("env_reward").batched is True
    assert found.reward_range == (-1.0, 0.0) and not per_sample_warnings(caught)


def test_relabelled_rewards_are_the_envs_compute_reward_of_its_own_dicts(
    fresh_warnings: None,
) -> None:
    env = make_goal_env(COLOURS)
    own = env.unwrapped.compute_reward  # type: ignore[attr-defined]
    goal_space = env.get_wrapper_attr("goal_spaces")["desired_goal"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        buffer = HerReplayBuffer.from_env(env, capacity=2_000, strategy="future", k=4, seed=0)
        obs, _ = env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(200):
            action = env.action_space.sample()
            next_obs, reward, terminated, truncated, info = env.step(action)
            buffer.add(obs, action, next_obs, terminated, truncated, info, reward=reward)
            obs = next_obs if not (terminated or truncated) else env.reset()[0]
        batch = buffer.sample(512)
    expected = [
        own(spaces.unflatten(goal_space, achieved), spaces.unflatten(goal_space, goal), {})
        for achieved, goal in zip(batch.next_achieved_goal, batch.goal, strict=True)
    ]
    assert batch.reward.tolist() == expected
    assert set(expected) == {0.0, -1.0}
    found = per_sample_warnings(caught)
    assert len(found) == 1, found  # the probe, the buffer's first add and sampling: once
    assert "ColourReach.compute_reward takes one goal at a time" in found[0]
    assert "µs each" in found[0] and "\n" not in found[0]


@pytest.mark.slow("a short training run per env")
@pytest.mark.parametrize("env_id", [COLOURS, ONE_AT_A_TIME])
def test_training_on_dict_goals_or_one_goal_at_a_time_runs(env_id: str, tmp_path: Path) -> None:
    config = TrainConfig(
        env_id,
        algo="sac",
        steps=300,
        warmup_steps=100,
        eval_every=300,
        eval_episodes=2,
        out=str(tmp_path / "run"),
        **QUIET,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerSampleRewardWarning)
        summary = train(config)
    assert summary["env_steps"] == 300 and 0.0 <= summary["success_rate"] <= 1.0
    saved = json.loads(RunPaths(tmp_path / "run").config.read_text())
    assert saved["conventions"]["reward_range"] == [-1.0, 0.0]


# -- one goal at a time (Box goals) ----------------------------------------------------------


def test_a_box_goal_compute_reward_that_takes_one_goal_is_called_per_sample(
    fresh_warnings: None,
) -> None:
    env = make_goal_env(ONE_AT_A_TIME)
    with pytest.warns(PerSampleRewardWarning, match="OneAtATimeReach.compute_reward takes one"):
        buffer = HerReplayBuffer.from_env(env, capacity=1_000, seed=0)
    obs, _ = env.reset(seed=1)
    for _ in range(40):
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, info = env.step(action)
        buffer.add(obs, action, next_obs, terminated, truncated, info, reward=reward)
        obs = next_obs
    batch = buffer.sample(256)
    expected = [
        reach_reward(a, g) for a, g in zip(batch.next_achieved_goal, batch.goal, strict=True)
    ]
    assert batch.reward.tolist() == expected and 0.0 in expected


def test_the_warning_is_given_once_per_function(fresh_warnings: None) -> None:
    def one_goal(achieved: Any, desired: Any, info: Any) -> float:
        return -float(np.linalg.norm(achieved - desired) > THRESHOLD)

    goals = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = PerSampleReward(one_goal), PerSampleReward(one_goal)
        first(goals, goals[::-1], {})
        second(goals, goals[::-1], {})
        first(goals, goals, {})
    assert len(per_sample_warnings(caught)) == 1
    assert first.batched is False and second.batched is False
    assert first.cost_per_sample_s is not None and first.cost_per_sample_s > 0


def test_a_batched_result_that_disagrees_with_single_calls_is_not_trusted(
    fresh_warnings: None,
) -> None:
    def wrong_when_batched(achieved: Any, desired: Any, info: Any) -> Any:
        if np.ndim(achieved) == 2:
            return np.zeros(len(achieved))  # the right shape, the wrong rewards
        return -float(np.linalg.norm(achieved - desired) > THRESHOLD)

    reward = PerSampleReward(wrong_when_batched)
    goals = np.random.default_rng(0).uniform(-1, 1, (20, 2))
    with pytest.warns(PerSampleRewardWarning, match="differ from those of one goal at a time"):
        rewards = reward(goals, goals[::-1], None)
    assert rewards.tolist() == [reach_reward(a, d) for a, d in zip(goals, goals[::-1], strict=True)]


def test_a_vectorised_reward_passes_through_and_is_not_wrapped_twice() -> None:
    env = make_goal_env("herkit/PointReach-v0")
    reward = compute_reward_of(env)
    assert isinstance(reward, PerSampleReward) and per_sample(reward) is reward
    goals = np.random.default_rng(0).uniform(-1, 1, (8, 2)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerSampleRewardWarning)
        assert reward(goals, goals, {}).tolist() == [0.0] * 8
    assert reward.batched is True
    flat = make_goal_env(COLOURS)
    own = flat.get_wrapper_attr("compute_reward")
    assert isinstance(flat, FlatGoals) and compute_reward_of(flat) == own  # takes batches


# -- refusals --------------------------------------------------------------------------------


def test_the_buffer_refuses_dict_goals_naming_the_cause_and_the_wrapper() -> None:
    env = gym.make(COLOURS)
    with pytest.raises(ValueError, match=r"Dict spaces .*FlatGoals\(env\)") as refused:
        HerReplayBuffer.from_env(env, capacity=100)
    assert "\n" not in str(refused.value)
    HerReplayBuffer.from_env(FlatGoals(env), capacity=100, probe=False)  # the fix works


def test_a_compute_reward_that_fails_on_one_goal_is_refused_with_its_own_error() -> None:
    with pytest.raises(RewardRefused, match=r"fails on one goal pair \(KeyError: 'weight'\)"):
        resolve_conventions(TrainConfig(BROKEN, algo="sac"))
    env = make_goal_env(ONE_AT_A_TIME)
    raw = env.unwrapped.compute_reward  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"takes one goal at a time.*per_sample"):
        probe_conventions(env, raw, seed=0)  # a reward_fn passed as it is: not wrapped


def test_flat_goals_refuses_goals_it_cannot_flatten_or_that_differ() -> None:
    class Goals(gym.Env[Any, Any]):
        def __init__(self, achieved: spaces.Space[Any], desired: spaces.Space[Any]) -> None:
            self.observation_space = spaces.Dict(
                observation=spaces.Box(-1, 1, (1,)), achieved_goal=achieved, desired_goal=desired
            )
            self.action_space = spaces.Discrete(2)

        def compute_reward(self, achieved: Any, desired: Any, info: Any) -> float:
            return 0.0

    text = spaces.Dict(name=spaces.Text(5))
    with pytest.raises(ValueError, match=r"\['achieved_goal'\]\['name'\] is a Text space"):
        FlatGoals(Goals(text, text))
    one, two = spaces.Dict(a=spaces.Discrete(3)), spaces.Dict(a=spaces.Discrete(4))
    with pytest.raises(ValueError, match="must have the same parts"):
        FlatGoals(Goals(one, two))
