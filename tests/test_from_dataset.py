"""A buffer holding a recorded dataset (OGBench's layout, Minari's episodes), its states
once, and offline GCRL's value and actor goal mixes by OGBench's rules, traced with tagged
states: state row ``r`` of episode ``e`` is ``(e, r)``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit import HerReplayBuffer
from herkit.buffer.backend import NUMPY
from herkit.buffer.datasets import DatasetError, MissingDataset, check_dataset_file
from herkit.buffer.rules import future_state_steps


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
    assert np.array_equal(batch.achieved_goal, batch.observation)
    assert np.array_equal(batch.next_achieved_goal, batch.next_observation)
    assert np.array_equal(
        batch.action[:, 0], batch.observation[:, 0] * 100 + batch.observation[:, 1]
    )
    assert 2 not in batch.observation[:, 0]  # the one-row episode is dropped
    assert not batch.terminated.any()  # the layout's terminals are timeouts
    seen = {tuple(row) for row in batch.observation.astype(int)}
    assert seen == {(e, t) for e, n in enumerate([5, 3, 1, 4]) for t in range(n - 1)}


def test_the_states_are_held_once():
    """An antmaze-sized dataset (29-wide states, 8-wide actions) in at most 1.5x its bytes."""
    rng = np.random.default_rng(0)
    data = tagged([200] * 50)
    data["observations"] = rng.normal(size=(len(data["terminals"]), 29)).astype(np.float32)
    data["actions"] = rng.normal(size=(len(data["terminals"]), 8)).astype(np.float32)
    buffer = HerReplayBuffer.from_dataset(data, reward_fn, goal_size=2)
    recorded = buffer.recorded
    assert recorded is not None
    assert np.shares_memory(recorded.states["observation"], data["observations"])
    arrays = sum(value.nbytes for value in data.values())
    assert recorded.nbytes <= 1.5 * arrays  # states and actions once, ~26 bytes a transition
    assert buffer.storage.capacity == 0 and not buffer.storage.data["observation"].size


def test_a_last_episode_without_its_terminal_is_kept():
    buffer = HerReplayBuffer.from_dataset(tagged([3, 4], last_terminal=False), reward_fn)
    assert len(buffer) == 2 + 3


def test_the_value_mix_takes_current_future_and_random_states_with_ogbenchs_rewards():
    lengths = [40, 25, 60]  # states: 39, 24 and 59 transitions
    buffer = HerReplayBuffer.from_dataset(
        tagged(lengths), reward_fn, value_goals=(0.2, 0.5, 0.3), gamma=0.9, seed=1
    )
    batch = buffer.sample(40_000)
    ep, t = batch.observation[:, 0], batch.observation[:, 1]
    goal_ep, goal_t = batch.goal[:, 0], batch.goal[:, 1]
    same = (goal_ep == ep) & (goal_t == t)
    assert np.array_equal(batch.terminated == 1, same)  # reached: the goal's index is its own
    assert np.array_equal(batch.reward, np.where(same, 0.0, -1.0))
    # goals are states that have a transition: row 0 .. L-2 of an episode of L rows
    assert np.all(goal_t <= np.asarray(lengths)[goal_ep.astype(int)] - 2)
    ahead = (goal_ep == ep) & (goal_t > t)
    last = t == np.asarray(lengths)[ep.astype(int)] - 2  # a future goal is then itself
    # current 0.2, future 0.5 (ahead, or itself at the last transition), random 0.3
    n_states = sum(lengths) - 2 * len(lengths)
    expected_same = 0.2 + 0.5 * last.mean() + 0.3 / n_states
    assert abs(same.mean() - expected_same) < 0.012
    later = (np.asarray(lengths)[ep.astype(int)] - 2 - t) / n_states  # random, yet ahead
    assert abs(ahead.mean() - (0.5 * (1 - last.mean()) + 0.3 * later.mean())) < 0.012


def test_positive_rewards_without_gc_negative():
    buffer = HerReplayBuffer.from_dataset(
        tagged([30, 30]), reward_fn, value_goals=(0.5, 0.5, 0), gamma=0.9, gc_negative=False
    )
    batch = buffer.sample(2_000)
    assert np.array_equal(batch.reward, batch.terminated)
    assert 0.4 < batch.reward.mean() < 0.65


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(2, 30), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    future=st.sampled_from(["geometric", "uniform"]),
)
def test_future_goals_are_later_states_of_the_same_episode_up_to_its_last_transition(
    lengths, seed, future
):
    buffer = HerReplayBuffer.from_dataset(
        tagged(lengths),
        reward_fn,
        value_goals=(0, 1, 0),
        value_future=future,
        actor_goals=(0, 1, 0),
        gamma=0.8,
        seed=seed,
    )
    batch = buffer.sample(256)
    t = batch.observation[:, 1]
    last = np.asarray(lengths)[batch.observation[:, 0].astype(int)] - 2
    for goal in (batch.goal, batch.actor_goal):
        assert np.array_equal(goal[:, 0], batch.observation[:, 0])
        assert np.all((goal[:, 1] > t) | ((goal[:, 1] == t) & (t == last)))
        assert np.all(goal[:, 1] <= last)
    assert np.array_equal(batch.terminated == 1, t == last)  # only the last state's own


def test_geometric_steps_follow_the_discount_and_stop_at_the_last_transition():
    rng = np.random.default_rng(0)
    n = 200_000
    zeros, far = np.zeros(n, np.int64), np.full(n, 10**6)
    steps = future_state_steps(NUMPY, zeros, far, rng.random(n), "geometric", 0.9)
    assert steps.min() == 1
    assert abs((steps == 1).mean() - 0.1) < 0.005  # P(j = 1) = 1 - gamma
    assert abs(steps.mean() - 10) < 0.1  # E[j] = 1 / (1 - gamma)
    capped = future_state_steps(
        NUMPY, np.array([3]), np.array([5]), np.array([0.999]), "geometric", 0.9
    )
    assert capped[0] == 4  # the episode's last transition's state


def test_uniform_steps_round_as_ogbench_does():
    """``round(min(t + 1, L - 1) * d + (L - 1) * (1 - d))``: t + 1 .. L - 1, the two ends
    at half weight (t = 2 of 7 transitions: 3 and 6 at 1/6, 4 and 5 at 1/3)."""
    rng = np.random.default_rng(1)
    n = 300_000
    steps = future_state_steps(NUMPY, np.full(n, 2), np.full(n, 7), rng.random(n), "uniform", None)
    shares = np.bincount(steps, minlength=7)[3:] / n
    np.testing.assert_allclose(shares, [1 / 6, 1 / 3, 1 / 3, 1 / 6], atol=0.004)
    last = future_state_steps(NUMPY, np.array([6]), np.array([7]), np.array([0.3]), "uniform", None)
    assert last[0] == 6


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
    assert np.array_equal(batch.reward, reward_fn(batch.next_achieved_goal, batch.goal, {}))
    future = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, k=4, seed=2).sample(500)
    relabelled = future.goal[:, 1] != np.where(future.observation[:, 0] == 0, 5, 8)
    assert np.all(future.goal[relabelled, 1] > future.observation[relabelled, 1])
    stored = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, relabel="store", k=2)
    assert len(stored) == 13  # closed episodes may be sampled at once in store mode
    goal = stored.sample(300).goal
    assert goal.shape == (300, 2) and len(np.unique(goal[:, 1])) > 2
    prioritized = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, prioritized=True)
    batch = prioritized.sample(32)
    prioritized.update_priorities(batch.indices, np.ones(32))


def step(observation, achieved, desired):
    return {
        "observation": np.array(observation, np.float32),
        "achieved_goal": np.array(achieved, np.float32),
        "desired_goal": np.array(desired, np.float32),
    }


def test_steps_added_after_the_dataset_go_into_its_room_and_round_trip(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, **tagged([5, 5]))
    buffer = HerReplayBuffer.from_dataset(
        path, reward_fn, room=3, value_goals=(0.2, 0.5, 0.3), gamma=0.99, seed=3
    )
    for t in range(5):  # 5 steps into a ring of 3: the dataset is never dropped
        obs, nxt = step([7, t], [7, t], [7, 9]), step([7, t + 1], [7, t + 1], [7, 9])
        buffer.add(obs, np.array([1.0]), nxt, False, t % 2 == 1)
    assert len(buffer) == 8 + 3  # 8 recorded; the ring holds its last episode and the open one
    batch = buffer.sample(3_000)
    assert {0.0, 1.0, 7.0} == set(np.unique(batch.observation[:, 0]))
    online = batch.observation[:, 0] == 7
    assert set(np.unique(batch.observation[online, 1])) == {2.0, 3.0, 4.0}  # what it holds
    assert set(np.unique(batch.goal[batch.goal[:, 0] == 7, 1])) == {2.0, 3.0, 4.0}
    saved = tmp_path / "buffer.npz"
    buffer.save(saved)
    with np.load(saved) as kept:  # the states are not in it: the file's path and digest are
        assert not [name for name in kept.files if name.startswith("recorded.state")]
        assert len(kept["data.observation"]) == 3  # the ring's steps
        assert str(path.resolve()) in str(kept["meta"])
    loaded = HerReplayBuffer.load(saved, reward_fn)
    assert loaded.settings == buffer.settings
    a, b = buffer.sample(50), loaded.sample(50)
    for name in ("observation", "goal", "reward", "terminated", "action"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    np.savez(path, **tagged([5, 6]))  # another file at the same path
    with pytest.raises(DatasetError, match="not the file this buffer was built from"):
        HerReplayBuffer.load(saved, reward_fn)


def test_a_dataset_given_as_arrays_is_saved_with_its_states_once(tmp_path):
    buffer = HerReplayBuffer.from_dataset(tagged([6, 9]), reward_fn, strategy="none", seed=1)
    buffer.save(tmp_path / "buffer.npz")
    loaded = HerReplayBuffer.load(tmp_path / "buffer.npz", reward_fn)
    a, b = buffer.sample(40), loaded.sample(40)
    assert np.array_equal(a.observation, b.observation) and np.array_equal(a.goal, b.goal)


def test_a_dataset_without_room_refuses_new_steps():
    buffer = HerReplayBuffer.from_dataset(tagged([5, 5]), reward_fn)
    with pytest.raises(ValueError, match="no room for new steps: build it with"):
        buffer.add(
            step([7, 0], [7, 0], [7, 9]), np.zeros(1), step([7, 1], [7, 1], [7, 9]), False, False
        )
    assert len(buffer) == 8


def test_a_minari_dataset_keeps_the_env_rewards_and_its_goals():
    def episode(e: int, n: int) -> SimpleNamespace:
        states = np.stack([np.full(n + 1, e), np.arange(n + 1)], 1).astype(np.float32)
        obs = {
            "observation": states,
            "achieved_goal": states + 0.25,
            "desired_goal": np.repeat(states[-1:], n + 1, 0),
        }
        return SimpleNamespace(
            observations=obs,
            actions=np.ones((n, 2), np.float32),
            rewards=np.full(n, -5.0, np.float32),
            terminations=np.eye(n, dtype=bool)[-1],
            truncations=np.zeros(n, bool),
        )

    dataset = SimpleNamespace(iterate_episodes=lambda: iter([episode(0, 4), episode(1, 3)]))
    buffer = HerReplayBuffer.from_dataset(dataset, reward_fn, strategy="none", seed=0)
    batch = buffer.sample(300)
    assert len(buffer) == 7
    assert np.all(batch.reward == -5.0)
    np.testing.assert_array_equal(batch.achieved_goal, batch.observation + 0.25)
    np.testing.assert_array_equal(batch.next_achieved_goal, batch.next_observation + 0.25)
    last = batch.observation[:, 1] == np.where(batch.observation[:, 0] == 0, 3, 2)
    assert np.array_equal(batch.terminated == 1, last)
    assert np.array_equal(batch.goal[:, 1], np.where(batch.observation[:, 0] == 0, 4, 3))


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"observations": np.zeros((3, 2)), "actions": np.zeros((3, 2))}, "lacks terminals"),
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
            "observations hold non-finite values .NaN or inf. in 3 rows, the first at row 0",
        ),
        (
            {
                "observations": np.zeros((2, 2)),
                "actions": np.zeros((2, 2)),
                "terminals": np.ones(2),
            },
            "no episode of two states",
        ),
    ],
)
def test_bad_datasets_are_refused_by_name(arrays, words):
    with pytest.raises(DatasetError, match=words):
        HerReplayBuffer.from_dataset(arrays, reward_fn)


def test_bad_files_are_refused_in_one_line_naming_the_file(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("not arrays\n")
    noise = tmp_path / "noise.npz"
    noise.write_bytes(np.random.default_rng(0).bytes(4096))
    pickled = tmp_path / "pickled.npz"
    objects = np.empty(3, object)
    objects[:] = [{"a": 1}, None, 3]
    np.savez(pickled, observations=objects, actions=np.zeros((3, 2)), terminals=np.zeros(3))
    lacking = tmp_path / "lacking.npz"
    np.savez(lacking, observations=np.zeros((3, 2)))
    for path, words in (
        (text, "is not an .npz file .not a zip archive.: expected numpy's .npz of the arrays"),
        (noise, "is not an .npz file"),
        (
            pickled,
            "its array 'observations' holds Python objects .pickled data., which herkit "
            "never loads",
        ),
        (lacking, "lacks the array.s. actions, terminals .OGBench's layout"),
        (tmp_path / "none.npz", "no such file"),
    ):
        with pytest.raises(DatasetError, match=f"dataset '{path}'.*{words}") as caught:
            HerReplayBuffer.from_dataset(path, reward_fn)
        assert "\n" not in str(caught.value)
    with pytest.raises(MissingDataset):  # also a FileNotFoundError
        HerReplayBuffer.from_dataset(tmp_path / "none.npz", reward_fn)
    assert issubclass(MissingDataset, FileNotFoundError)


def test_small_capacities_and_bad_mixes_say_so():
    with pytest.raises(ValueError, match="do not fit in capacity 5"):
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
    batch = buffer.sample(30)
    assert batch.goal.shape == (30, 1)
    assert np.array_equal(batch.achieved_goal[:, 0], batch.observation[:, 0])


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(2, 40), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    k=st.integers(1, 30),
    future=st.sampled_from(["geometric", "uniform"]),
    random_share=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_hiqls_subgoals_are_the_states_k_on_up_to_the_goal_or_the_last(
    lengths, seed, k, future, random_share
):
    """OGBench's HGCDataset, state for state: the low actor's goal is the state at
    ``min(t + k, last)`` of the sample's episode; the high actor's target the state at
    ``min(t + k, its goal's step)`` for a future goal, ``min(t + k, last)`` for a random
    one (a random goal that lies ahead in the sample's episode may be either)."""
    buffer = HerReplayBuffer.from_dataset(
        tagged(lengths),
        reward_fn,
        value_goals=(0.2, 0.5, 0.3),
        actor_goals=(0, 1 - random_share, random_share),
        actor_future=future,
        subgoal_steps=k,
        gamma=0.9,
        seed=seed,
    )
    batch = buffer.sample(300)
    ep, t = batch.observation[:, 0], batch.observation[:, 1]
    last = np.asarray(lengths)[ep.astype(int)] - 2  # the episode's last transition's state
    low = batch.low_actor_goal
    assert np.array_equal(low[:, 0], ep)
    assert np.array_equal(low[:, 1], np.minimum(t + k, last))
    target = batch.high_actor_target
    assert np.array_equal(batch.high_actor_target_observation, target)  # one state: its goal
    assert np.array_equal(target[:, 0], ep)
    goal = batch.actor_goal
    ahead = (goal[:, 0] == ep) & ((goal[:, 1] > t) | ((goal[:, 1] == t) & (t == last)))
    to_goal, to_last = np.minimum(t + k, goal[:, 1]), np.minimum(t + k, last)
    if random_share == 0:  # every goal a future one of the episode
        assert ahead.all() and np.array_equal(target[:, 1], to_goal)
    else:  # a goal elsewhere is a random one
        assert np.array_equal(target[~ahead, 1], to_last[~ahead])
        either = (target[:, 1] == to_goal) | (target[:, 1] == to_last)
        assert either[ahead].all()
    if random_share == 1:
        assert np.array_equal(target[:, 1], to_last)
    if future == "uniform" and random_share == 0:  # OGBench's HGCDataset's bounds
        assert np.all(goal[:, 1] <= last)


def test_subgoals_need_actor_goals_and_a_whole_number_of_steps():
    with pytest.raises(ValueError, match="subgoal_steps needs actor_goals"):
        HerReplayBuffer.from_dataset(tagged([10]), reward_fn, subgoal_steps=5)
    with pytest.raises(ValueError, match="subgoal_steps must be an int >= 1"):
        HerReplayBuffer.from_dataset(
            tagged([10]), reward_fn, actor_goals=(0, 1, 0), subgoal_steps=0
        )
    with pytest.raises(ValueError, match="actor_goals with a geometric future needs gamma"):
        HerReplayBuffer.from_dataset(
            tagged([10]), reward_fn, actor_goals=(0, 1, 0), actor_future="geometric"
        )
    plain = HerReplayBuffer.from_dataset(tagged([10]), reward_fn, actor_goals=(0, 1, 0)).sample(4)
    assert plain.low_actor_goal is None and plain.high_actor_target is None
    assert plain.high_actor_target_observation is None


def test_geometric_actor_goals_follow_the_discount():
    """``actor_future="geometric"`` (OGBench's ``actor_geom_sample``): the actor's future
    goal ``j >= 1`` steps on with ``P(j = 1) = 1 - gamma``."""
    buffer = HerReplayBuffer.from_dataset(
        tagged([2000]), reward_fn, actor_goals=(0, 1, 0), actor_future="geometric", gamma=0.9
    )
    batch = buffer.sample(20_000)
    t = batch.observation[:, 1]
    inside = t < 1900  # far from the cap at the last state
    ahead = (batch.actor_goal[:, 1] - t)[inside]
    assert ahead.min() == 1
    assert abs((ahead == 1).mean() - 0.1) < 0.01
    assert abs(ahead.mean() - 10) < 0.3


# -- the forms of ogbench.load_dataset --------------------------------------------------------


@pytest.fixture(scope="module")
def ogbench_file(tmp_path_factory):
    """A pointmaze-medium file as OGBench's script writes it (12 episodes of 31 states, its
    keys, terminals on each last row), and OGBench's own loader."""
    pytest.importorskip("ogbench")
    from ogbench.utils import load_dataset
    from scripts import load_benchmark

    path = tmp_path_factory.mktemp("ogbench") / "pointmaze-medium-stitch-v0.npz"
    load_benchmark("offline_data").make_dataset("pointmaze-medium-v0", 12, 31, 0.5, 0, path)
    return path, load_dataset


@pytest.mark.parametrize("compact", [False, True], ids=["regular", "compact"])
def test_load_datasets_forms_hold_the_files_transitions(ogbench_file, tmp_path, compact):
    """``ogbench.load_dataset``'s output, saved, loads as the file it came from: every one of
    its 12 x 30 transitions (not 12 x 29), the same states, actions and draws."""
    path, load_dataset = ogbench_file
    form = load_dataset(str(path), compact_dataset=compact, add_info=True)
    assert ("valids" in form) == compact and ("next_observations" in form) != compact
    saved = tmp_path / "form.npz"
    np.savez(saved, **form)
    mix = {"value_goals": (0.2, 0.5, 0.3), "actor_goals": (0, 1, 0), "gamma": 0.99}
    for source in (saved, form):  # the file, or the arrays as load_dataset returns them
        raw = HerReplayBuffer.from_dataset(path, reward_fn, seed=3, **mix)
        read = HerReplayBuffer.from_dataset(source, reward_fn, seed=3, **mix)
        assert len(read) == len(raw) == 12 * 30
        mine, theirs = read.recorded, raw.recorded
        assert mine is not None and theirs is not None
        np.testing.assert_array_equal(mine.states["observation"], theirs.states["observation"])
        np.testing.assert_array_equal(mine.first_row, theirs.first_row)
        np.testing.assert_array_equal(mine.lengths, theirs.lengths)
        np.testing.assert_array_equal(mine.action[mine.state_row], theirs.action[theirs.state_row])
        a, b = read.sample(256), raw.sample(256)
        for field in ("observation", "action", "next_observation", "goal", "actor_goal"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    if not compact:  # each transition is a row of the form: (s, a, s') as OGBench gives it
        batch = HerReplayBuffer.from_dataset(saved, reward_fn, seed=1).sample(500)
        rows = {
            tuple(np.concatenate(row))
            for row in zip(
                form["observations"], form["actions"], form["next_observations"], strict=True
            )
        }
        drawn = np.concatenate([batch.observation, batch.action, batch.next_observation], 1)
        assert {tuple(row) for row in drawn} <= rows


def test_the_compact_forms_valids_not_its_terminals_end_the_episodes(ogbench_file):
    """In the compact form ``terminals`` are true on an episode's last two rows; read as a
    file's, they would cut every episode one transition short."""
    path, load_dataset = ogbench_file
    compact = load_dataset(str(path), compact_dataset=True)
    assert compact["terminals"].sum() == 2 * 12 and (compact["valids"] == 0).sum() == 12
    assert len(HerReplayBuffer.from_dataset(compact, reward_fn)) == 12 * 30
    without = {key: compact[key] for key in ("observations", "actions", "terminals")}
    assert len(HerReplayBuffer.from_dataset(without, reward_fn)) == 12 * 29  # the file's rule


def test_forms_that_are_not_episodes_are_refused_in_one_line(ogbench_file, tmp_path):
    path, load_dataset = ogbench_file
    regular = load_dataset(str(path))
    shuffled = {key: value[::-1] for key, value in regular.items()}
    both = regular | {"valids": np.ones(len(regular["terminals"]))}
    narrow = regular | {"next_observations": regular["next_observations"][:, :1]}
    for arrays, words in (
        (shuffled, "its next_observations are not its next rows' observations .row 1's"),
        (both, "holds both next_observations and valids, which no form of OGBench's has"),
        (narrow, r"next_observations must be shaped as observations \(360, 2\), got \(360, 1\)"),
    ):
        file = tmp_path / "bad.npz"
        np.savez(file, **arrays)
        for source in (file, arrays):
            with pytest.raises(DatasetError, match=words) as caught:
                HerReplayBuffer.from_dataset(source, reward_fn)
            assert "\n" not in str(caught.value)
    with pytest.raises(DatasetError, match=f"dataset '{tmp_path / 'bad.npz'}'"):
        check_dataset_file(tmp_path / "bad.npz")  # what the command line checks first


def test_regular_form_episodes_split_where_its_terminals_say():
    """Hand-written transitions of episodes of 3, 1 and 2 transitions (a last one without
    its terminal): each episode's last next observation becomes its last state."""
    data = tagged([4, 2, 3])
    keep = ~data["terminals"]
    regular = {
        "observations": data["observations"][keep],
        "actions": data["actions"][keep],
        "next_observations": data["observations"][np.flatnonzero(keep) + 1],
        "terminals": np.array([0, 0, 1, 1, 0, 0], np.float32),
    }
    buffer = HerReplayBuffer.from_dataset(regular, reward_fn)
    assert len(buffer) == 6 and buffer.recorded is not None
    np.testing.assert_array_equal(buffer.recorded.states["observation"], data["observations"])
    np.testing.assert_array_equal(buffer.recorded.lengths, [3, 1, 2])
