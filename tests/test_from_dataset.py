"""A buffer filled from recorded trajectories (OGBench's layout, Minari's episodes) and
offline GCRL's value and actor goal mixes, traced with tagged states."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit import HerReplayBuffer
from herkit.buffer.offline_goals import geometric_steps


def reward_fn(achieved, desired, info):
    return -(np.abs(achieved - desired).max(axis=-1) > 0.5).astype(np.float32)


def tagged(rows_per_episode: list[int], last_terminal: bool = True) -> dict[str, np.ndarray]:
    """OGBench arrays whose state row r of episode e is ``(e, r)``."""
    obs = np.concatenate(
        [np.stack([np.full(n, e), np.arange(n)], 1) for e, n in enumerate(rows_per_episode)]
    ).astype(np.float32)
    terminals = np.zeros(len(obs), bool)
    terminals[np.cumsum(rows_per_episode) - 1] = True
    if not last_terminal:
        terminals[-1] = False
    actions = obs[:, :1] * 100 + obs[:, 1:]  # the action names its row too
    return {"observations": obs, "actions": actions, "terminals": terminals}


def test_episodes_become_transitions_of_consecutive_states():
    buffer = HerReplayBuffer.from_dataset(tagged([5, 3, 1, 4]), reward_fn, seed=0)
    assert len(buffer) == 4 + 2 + 3  # an episode of L rows has L - 1 transitions
    batch = buffer.sample(500)
    assert np.array_equal(batch.next_observation[:, 0], batch.observation[:, 0])
    assert np.array_equal(batch.next_observation[:, 1], batch.observation[:, 1] + 1)
    assert np.array_equal(
        batch.action[:, 0], batch.observation[:, 0] * 100 + batch.observation[:, 1]
    )
    assert not batch.observation[:, 0].__contains__(2)  # the one-row episode is dropped
    assert not batch.terminated.any()  # the layout's terminals are timeouts


def test_a_last_episode_without_its_terminal_is_kept():
    buffer = HerReplayBuffer.from_dataset(tagged([3, 4], last_terminal=False), reward_fn)
    assert len(buffer) == 2 + 3


def test_the_value_mix_takes_current_future_and_random_states_with_ogbench_rewards():
    lengths = [40, 25, 60]
    buffer = HerReplayBuffer.from_dataset(
        tagged(lengths), reward_fn, value_goals=(0.2, 0.5, 0.3), gamma=0.9, seed=1
    )
    batch = buffer.sample(20_000)
    ep, t = batch.observation[:, 0], batch.observation[:, 1]
    goal_ep, goal_t = batch.goal[:, 0], batch.goal[:, 1]
    current = (goal_ep == ep) & (goal_t == t)
    assert np.array_equal(batch.terminated == 1, current)  # reached only at the current state
    assert np.array_equal(batch.reward, np.where(current, 0.0, -1.0))
    # goals are states of stored episodes: row 0 .. L-1 of each
    assert np.all(goal_t <= np.asarray(lengths)[goal_ep.astype(int)] - 1)
    ahead = (goal_ep == ep) & (goal_t > t)
    # current 0.2 (+ random hits of the same state), future 0.5, random 0.3
    assert abs(current.mean() - 0.2) < 0.02
    assert abs(ahead.mean() - (0.5 + 0.3 * 0.3)) < 0.04  # random states may lie ahead too


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(2, 30), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    future=st.sampled_from(["geometric", "uniform"]),
)
def test_future_goals_come_from_later_states_of_the_same_episode(lengths, seed, future):
    buffer = HerReplayBuffer.from_dataset(
        tagged(lengths), reward_fn, value_goals=(0, 1, 0), value_future=future,
        actor_goals=(0, 1, 0), gamma=0.8, seed=seed,
    )  # fmt: skip
    batch = buffer.sample(256)
    for goal in (batch.goal, batch.actor_goal):
        assert np.array_equal(goal[:, 0], batch.observation[:, 0])
        assert np.all(goal[:, 1] > batch.observation[:, 1])
        assert np.all(goal[:, 1] <= np.asarray(lengths)[goal[:, 0].astype(int)] - 1)
    assert not batch.terminated.any()


def test_geometric_steps_follow_the_discount():
    rng = np.random.default_rng(0)
    n = 200_000
    steps = geometric_steps(np.zeros(n, np.int64), np.full(n, 10**6), rng.random(n), 0.9)
    ahead = steps + 1  # j >= 1 states ahead
    assert ahead.min() == 1
    assert abs((ahead == 1).mean() - 0.1) < 0.005  # P(j = 1) = 1 - gamma
    assert abs(ahead.mean() - 10) < 0.1  # E[j] = 1 / (1 - gamma)
    capped = geometric_steps(np.array([3]), np.array([5]), np.array([0.999999]), 0.9)
    assert capped[0] == 4  # the episode's last next state


def test_actor_goals_ride_along_with_the_strategies():
    buffer = HerReplayBuffer.from_dataset(tagged([10, 10]), reward_fn, actor_goals=(0, 1, 0))
    batch = buffer.sample(64)
    assert batch.actor_goal.shape == batch.goal.shape
    assert HerReplayBuffer.from_dataset(tagged([10]), reward_fn).sample(4).actor_goal is None


def test_the_desired_goal_is_the_episodes_last_state_and_strategies_apply():
    buffer = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, strategy="none")
    batch = buffer.sample(200)
    last = np.where(batch.observation[:, 0] == 0, 5, 8)
    assert np.array_equal(batch.goal[:, 1], last)
    stored = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, relabel="store", k=2)
    assert len(stored) == 13  # closed episodes may be sampled at once in store mode
    assert stored.sample(32).goal.shape == (32, 2)
    prioritized = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, prioritized=True)
    batch = prioritized.sample(32)
    prioritized.update_priorities(batch.indices, np.ones(32))


def test_online_steps_go_on_after_the_recorded_episodes(tmp_path):
    buffer = HerReplayBuffer.from_dataset(
        tagged([5, 5]), reward_fn, capacity=100, value_goals=(0.2, 0.5, 0.3), gamma=0.99
    )
    obs = {"observation": np.array([7.0, 0]), "achieved_goal": np.array([7.0, 0]),
           "desired_goal": np.array([7.0, 3])}  # fmt: skip
    nxt = dict(obs, observation=np.array([7.0, 1]), achieved_goal=np.array([7.0, 1]))
    buffer.add(obs, np.array([1.0]), nxt, False, True)
    assert len(buffer) == 9
    path = tmp_path / "buffer.npz"
    buffer.save(path)
    loaded = HerReplayBuffer.load(path, reward_fn)
    assert loaded.settings == buffer.settings
    a, b = buffer.sample(50), loaded.sample(50)
    assert np.array_equal(a.goal, b.goal) and np.array_equal(a.reward, b.reward)
    assert 7.0 in set(buffer.sample(2000).observation[:, 0])


def test_a_minari_dataset_keeps_the_env_rewards():
    def episode(e: int, n: int) -> SimpleNamespace:
        states = np.stack([np.full(n + 1, e), np.arange(n + 1)], 1).astype(np.float32)
        obs = {"observation": states, "achieved_goal": states,
               "desired_goal": np.repeat(states[-1:], n + 1, 0)}  # fmt: skip
        return SimpleNamespace(
            observations=obs, actions=np.ones((n, 2), np.float32),
            rewards=np.full(n, -5.0, np.float32), terminations=np.eye(n, dtype=bool)[-1],
            truncations=np.zeros(n, bool),
        )  # fmt: skip

    dataset = SimpleNamespace(iterate_episodes=lambda: iter([episode(0, 4), episode(1, 3)]))
    buffer = HerReplayBuffer.from_dataset(dataset, reward_fn, strategy="none", seed=0)
    batch = buffer.sample(300)
    assert len(buffer) == 7
    assert np.all(batch.reward == -5.0)
    last = batch.observation[:, 1] == np.where(batch.observation[:, 0] == 0, 3, 2)
    assert np.array_equal(batch.terminated == 1, last)


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"observations": np.zeros((3, 2)), "actions": np.zeros((3, 2))}, "lacks ['terminals']"),
        (
            {
                "observations": np.zeros((3, 2)),
                "actions": np.zeros((2, 2)),
                "terminals": np.zeros(3),
            },
            "one row per state",
        ),
        (
            {
                "observations": np.full((3, 2), np.nan),
                "actions": np.zeros((3, 2)),
                "terminals": np.zeros(3),
            },
            "observations hold 6 non-finite",
        ),
        (
            {
                "observations": np.zeros((2, 2)),
                "actions": np.zeros((2, 2)),
                "terminals": np.ones(2),
            },
            "no episode of two rows",
        ),
    ],
)
def test_bad_datasets_are_refused_by_name(arrays, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        HerReplayBuffer.from_dataset(arrays, reward_fn)


def test_a_missing_file_and_a_small_capacity_say_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file"):
        HerReplayBuffer.from_dataset(tmp_path / "none.npz", reward_fn)
    with pytest.raises(ValueError, match="do not fit"):
        HerReplayBuffer.from_dataset(tagged([5, 5]), reward_fn, capacity=5)
    with pytest.raises(ValueError, match="value_goals must be 3 weights"):
        HerReplayBuffer.from_dataset(tagged([5]), reward_fn, value_goals=(1, 1), gamma=0.9)
    with pytest.raises(ValueError, match="geometric future needs gamma"):
        HerReplayBuffer.from_dataset(tagged([5]), reward_fn, value_goals=(0, 1, 0))


def test_an_npz_file_loads_as_its_arrays(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, qpos=np.zeros((9, 2)), **tagged([4, 5]))
    buffer = HerReplayBuffer.from_dataset(path, reward_fn, goal_size=1)
    assert len(buffer) == 7
    assert buffer.sample(3).goal.shape == (3, 1)
