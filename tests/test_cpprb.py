"""Tests of herkit.cpprb.HindsightReplayBuffer, the drop-in for cpprb's HER buffer.

States are tagged ``[episode, step]`` (``next_obs`` is ``[episode, step + 0.5]``), the goal
function is the identity and original goals are ``[-1 - episode, -1]``, so every stored
``(obs, goal)`` pair says where its goal came from.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit.cpprb import HindsightReplayBuffer

STRATEGIES = ["future", "episode", "random", "final"]
ENV_DICT = {"obs": {"shape": 2}, "act": {"shape": 1}, "next_obs": {"shape": 2}}


def reward(next_obs: np.ndarray, act: np.ndarray, goal: np.ndarray) -> np.ndarray:
    return -1.0 * (next_obs != goal).any(axis=1)


def make(
    strategy: str = "future", k: int = 4, size: int = 10_000, max_len: int = 16, **kwargs
) -> HindsightReplayBuffer:
    kwargs.setdefault("prioritized", False)
    kwargs.setdefault("seed", 0)
    return HindsightReplayBuffer(
        size, ENV_DICT, max_len, reward, strategy=strategy, additional_goals=k, **kwargs
    )


def episode(ep: int, length: int) -> dict[str, np.ndarray]:
    steps = np.arange(length, dtype=np.float32)
    eps = np.full(length, ep, dtype=np.float32)
    return {
        "obs": np.stack([eps, steps], axis=1),
        "act": steps[:, None] * 10.0,
        "next_obs": np.stack([eps, steps + 0.5], axis=1),
    }


def original_goal(ep: int) -> list[float]:
    return [-1.0 - ep, -1.0]


def run_episode(rb: HindsightReplayBuffer, ep: int, length: int) -> None:
    rb.add(**episode(ep, length))
    rb.on_episode_end(original_goal(ep))


# ----------------------------------------------------------------- construction
def test_unknown_strategy_raises_listing_known_ones() -> None:
    for bad in ["none", "bogus", "FUTURE"]:
        with pytest.raises(ValueError, match="strategy") as info:
            make(strategy=bad)
        assert all(name in str(info.value) for name in STRATEGIES)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"size": 0}, ValueError, "size"),
        ({"max_len": 0}, ValueError, "max_episode_len"),
        ({"k": -1}, ValueError, "additional_goals"),
        ({"k": 1.5}, ValueError, "additional_goals"),
        ({"next_of": "obs"}, TypeError, "next_of"),
        ({"alpha": -1.0}, ValueError, "alpha"),
    ],
)
def test_constructor_validation(kwargs: dict, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        make(**kwargs)


@pytest.mark.parametrize("given", [{}, {"alpha": 0.7, "eps": 1e-3}])
def test_the_settings_record_holds_the_priorities_in_use(given: dict[str, float]) -> None:
    """``settings`` is the buffer's own: cpprb's eps default (1e-4), not HerSettings' own."""
    rb = make(prioritized=True, **given)
    assert (rb.settings.alpha, rb.settings.eps) == (rb.alpha, rb.eps)
    assert (rb.alpha, rb.eps) == (given.get("alpha", 0.6), given.get("eps", 1e-4))


@pytest.mark.parametrize("key", ["rew", "goal"])
def test_env_dict_must_not_define_rew_or_goal(key: str) -> None:
    with pytest.raises(ValueError, match=key):
        HindsightReplayBuffer(10, {**ENV_DICT, key: {}}, 4, reward)


def test_final_forces_one_additional_goal_and_size_accepts_1e6_style_float() -> None:
    rb = make("final", k=7, size=1e3)
    assert rb.additional_goals == 1
    assert rb.get_buffer_size() == 1000


# -------------------------------------------------------------------- adding
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_stored_size_grows_only_at_episode_end(strategy: str) -> None:
    rb = make(strategy, k=3)
    copies = 1 if strategy == "final" else 3
    data = episode(0, 5)
    for i in range(5):
        rb.add(**{key: v[i] for key, v in data.items()})
        assert rb.get_stored_size() == 0
    rb.on_episode_end(original_goal(0))
    assert rb.get_stored_size() == 5 * (1 + copies)
    rb.add(**episode(1, 3))
    assert rb.get_stored_size() == 5 * (1 + copies)
    rb.on_episode_end(original_goal(1))
    assert rb.get_stored_size() == 8 * (1 + copies)


def test_on_episode_end_of_empty_episode_does_nothing() -> None:
    rb = make()
    rb.on_episode_end(original_goal(0))
    assert rb.get_stored_size() == 0


def test_exceeding_max_episode_len_raises_and_keeps_the_episode() -> None:
    rb = make("final", max_len=5)
    data = episode(0, 6)
    rb.add(**{k: v[:3] for k, v in data.items()})
    with pytest.raises(ValueError, match="max_episode_len"):
        rb.add(**{k: v[3:6] for k, v in data.items()})
    rb.add(**{k: v[3:5] for k, v in data.items()})
    with pytest.raises(ValueError, match="max_episode_len"):
        rb.add(**{k: v[5] for k, v in data.items()})
    rb.on_episode_end(original_goal(0))
    assert rb.get_stored_size() == 10
    stored = rb.get_all_transitions()
    np.testing.assert_array_equal(stored["obs"][:5], data["obs"][:5])
    np.testing.assert_array_equal(stored["obs"][5:], data["obs"][:5])
    np.testing.assert_array_equal(stored["goal"][5:], np.repeat(data["next_obs"][4:5], 5, 0))


def test_add_validation_names_the_key() -> None:
    rb = make()
    data = episode(0, 2)
    with pytest.raises(ValueError, match="act"):
        rb.add(obs=data["obs"], next_obs=data["next_obs"])
    with pytest.raises(ValueError, match="done"):
        rb.add(**data, done=np.zeros(2))
    with pytest.raises(ValueError, match=r"'obs'.*\(2,\).*\(2, 3\)"):
        rb.add(**{**data, "obs": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="different numbers"):
        rb.add(**{**data, "act": np.zeros((3, 1))})
    rb.on_episode_end(original_goal(0))
    assert rb.get_stored_size() == 0


def test_non_finite_values_are_refused_and_nothing_of_the_call_is_stored() -> None:
    rb = make(strategy="random")
    run_episode(rb, 0, 3)
    stored = rb.get_all_transitions()
    data = episode(1, 3)
    data["next_obs"][1, 0] = np.nan
    with pytest.raises(
        ValueError,
        match=r"'next_obs' holds 1 non-finite value \(NaN or inf\) in "
        r"transition 1: nothing of this add was stored",
    ):
        rb.add(**data)
    rb.add(**episode(1, 3))
    with pytest.raises(ValueError, match="goal holds 2 non-finite values"):
        rb.on_episode_end([np.inf, -np.inf])

    def poisoned(next_obs: np.ndarray, act: np.ndarray, goal: np.ndarray) -> np.ndarray:
        rewards = reward(next_obs, act, goal)
        return np.where(goal[:, 0] >= 0, np.nan, rewards)  # relabelled goals only

    rb.reward_func = poisoned
    with pytest.raises(ValueError, match="reward_func's reward holds"):
        rb.on_episode_end(original_goal(1))
    after = rb.get_all_transitions()
    assert rb.get_stored_size() == 3 * 5
    for key, values in stored.items():
        np.testing.assert_array_equal(after[key], values)


# ------------------------------------------------------------------- sampling
@pytest.mark.parametrize("prioritized", [False, True])
def test_sample_keys_shapes_and_dtypes(prioritized: bool) -> None:
    env = {"obs": {"shape": (2,)}, "act": {"dtype": np.int32}, "next_obs": {"shape": 2}}
    rb = HindsightReplayBuffer(100, env, 8, reward, prioritized=prioritized, seed=1)
    rb.add(obs=np.zeros((4, 2)), act=np.arange(4), next_obs=np.ones((4, 2)))
    rb.on_episode_end([1.0, 1.0])
    batch = rb.sample(7)
    expected = {"obs", "act", "next_obs", "rew", "goal"}
    if prioritized:
        expected |= {"weights", "indexes"}
    assert set(batch) == expected
    assert batch["obs"].shape == (7, 2) and batch["obs"].dtype == np.float32
    assert batch["act"].shape == (7, 1) and batch["act"].dtype == np.int32
    assert batch["rew"].shape == (7, 1) and batch["rew"].dtype == np.float32
    assert batch["goal"].shape == (7, 2) and batch["goal"].dtype == np.float32
    if prioritized:
        assert batch["weights"].shape == (7,) and batch["weights"].dtype == np.float32
        assert batch["indexes"].shape == (7,) and batch["indexes"].dtype == np.int64


def test_default_dtype_goal_func_and_goal_shape() -> None:
    rb = HindsightReplayBuffer(
        50,
        ENV_DICT,
        8,
        lambda s, a, g: -1.0 * (s[:, :1] != g).any(axis=1),
        goal_func=lambda s: s[:, 1:],
        goal_shape=1,
        strategy="final",
        default_dtype=np.float64,
        prioritized=False,
    )
    rb.add(**episode(0, 3))
    rb.on_episode_end(7.0)
    stored = rb.get_all_transitions()
    assert stored["obs"].dtype == np.float64 and stored["rew"].dtype == np.float64
    assert stored["goal"].shape == (6, 1)
    np.testing.assert_array_equal(stored["goal"][:, 0], [7, 7, 7, 2.5, 2.5, 2.5])


def test_sample_errors() -> None:
    rb = make()
    with pytest.raises(ValueError, match=r"empty.*on_episode_end"):
        rb.sample(4)
    rb.add(**episode(0, 2))
    with pytest.raises(ValueError, match="empty"):
        rb.sample(4)
    rb.on_episode_end(original_goal(0))
    for bad in [0, -3]:
        with pytest.raises(ValueError, match="batch_size"):
            rb.sample(bad)


# --------------------------------------------------------- relabelled goals
def check_tagged(stored: dict[str, np.ndarray], strategy: str, k: int, lengths: list[int]):
    """Check every stored row of episodes ``0..`` of ``lengths``, stored in order."""
    copies = 1 if strategy == "final" else k
    obs, goal, nxt, rew = stored["obs"], stored["goal"], stored["next_obs"], stored["rew"]
    assert rew.shape == (len(obs), 1)
    np.testing.assert_array_equal(rew[:, 0] == 0.0, (goal == nxt).all(axis=1))
    np.testing.assert_array_equal(rew[:, 0], reward(nxt, stored["act"], goal))
    np.testing.assert_array_equal(stored["act"][:, 0], obs[:, 1] * 10.0)
    row = 0
    seen: set[tuple[float, float]] = set()
    for ep, length in enumerate(lengths):
        block = slice(row, row + length * (1 + copies))
        row = block.stop
        ep_obs, ep_goal = obs[block], goal[block]
        seen |= {(float(ep), s + 0.5) for s in range(length)}
        assert (ep_obs[:, 0] == ep).all()
        # originals first, then the copies in the same step order
        np.testing.assert_array_equal(ep_obs[:, 1], np.tile(np.arange(length), 1 + copies))
        assert (ep_goal[:length] == original_goal(ep)).all()
        relabelled_obs, relabelled = ep_obs[length:], ep_goal[length:]
        step, goal_step = relabelled_obs[:, 1], relabelled[:, 1] - 0.5
        if strategy == "random":
            assert all((float(g[0]), float(g[1])) in seen for g in relabelled)
            continue
        assert (relabelled[:, 0] == ep).all()
        assert ((goal_step >= 0) & (goal_step < length)).all()
        if strategy == "future":
            assert (goal_step >= step).all()
        elif strategy == "final":
            assert (goal_step == length - 1).all()
    assert row == len(obs)


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=6),
    strategy=st.sampled_from(STRATEGIES),
    k=st.integers(0, 4),
    seed=st.integers(0, 2**16),
)
def test_tagged_goals_come_from_the_right_steps(
    lengths: list[int], strategy: str, k: int, seed: int
) -> None:
    rb = make(strategy, k=k, max_len=8, seed=seed)
    for ep, length in enumerate(lengths):
        run_episode(rb, ep, length)
    copies = 1 if strategy == "final" else k
    assert rb.get_stored_size() == sum(lengths) * (1 + copies)
    stored = rb.get_all_transitions()
    check_tagged(stored, strategy, k, lengths)
    originals = (stored["goal"][:, 1] == -1.0).mean()
    assert originals == pytest.approx(1 / (1 + copies))
    batch = rb.sample(16)
    assert set(map(tuple, batch["goal"])) <= set(map(tuple, stored["goal"]))


def test_future_and_episode_goal_steps_are_uniform() -> None:
    length, k = 5, 400
    for strategy, low in [("future", 2), ("episode", 0)]:
        rb = make(strategy, k=k, size=length * (k + 1), max_len=length)
        run_episode(rb, 0, length)
        stored = rb.get_all_transitions()
        relabelled = (stored["obs"][length:, 1] == 2) & (stored["goal"][length:, 0] == 0)
        goal_steps = stored["goal"][length:][relabelled, 1] - 0.5
        counts = np.bincount(goal_steps.astype(int), minlength=length)
        assert (counts[:low] == 0).all()
        share = counts[low:] / k
        assert np.allclose(share, 1 / (length - low), atol=0.08), (strategy, counts)


def test_random_goals_can_come_from_earlier_episodes() -> None:
    rb = make("random", k=4)
    for ep in range(4):
        run_episode(rb, ep, 6)
    stored = rb.get_all_transitions()
    last = stored["obs"][:, 0] == 3
    relabelled = last & (stored["goal"][:, 1] != -1.0)
    assert (stored["goal"][relabelled, 0] < 3).any()


def test_random_goals_include_the_episode_just_stored() -> None:
    rb = make("random", k=8)
    run_episode(rb, 0, 6)  # only this episode's originals are stored when goals are drawn
    goals = rb.get_all_transitions()["goal"][6:]
    assert sorted(set(goals[:, 1] - 0.5)) == list(range(6))


# ------------------------------------------------------------------ the ring
def test_ring_wraps_around_oldest_first_and_keeps_rows_intact() -> None:
    rb = make("final", k=1, size=10, max_len=4)
    for ep in range(3):
        run_episode(rb, ep, 3)  # 6 rows each: 18 in all
    assert rb.get_stored_size() == 10
    stored = rb.get_all_transitions()
    reference = make("final", k=1, size=100, max_len=4)
    for ep in range(3):
        run_episode(reference, ep, 3)
    expected = reference.get_all_transitions()
    for key in expected:
        np.testing.assert_array_equal(stored[key], expected[key][-10:], err_msg=key)
    # a batch bigger than the ring keeps its last rows
    small = make("final", k=1, size=4, max_len=4)
    run_episode(small, 0, 3)
    np.testing.assert_array_equal(small.get_all_transitions()["goal"], expected["goal"][2:6])


def test_get_all_transitions_shuffle_and_clear() -> None:
    rb = make("episode", k=2, prioritized=True)
    run_episode(rb, 0, 4)
    ordered = rb.get_all_transitions()
    shuffled = rb.get_all_transitions(shuffle=True)
    assert not np.array_equal(shuffled["obs"], ordered["obs"])
    rows = sorted(map(tuple, np.concatenate([ordered["obs"], ordered["goal"]], axis=1)))
    rows_shuffled = np.concatenate([shuffled["obs"], shuffled["goal"]], axis=1)
    assert sorted(map(tuple, rows_shuffled)) == rows
    rb.update_priorities([0], [50.0])
    rb.add(**episode(1, 2))
    rb.clear()
    assert rb.get_stored_size() == 0 and rb.get_max_priority() == 1.0
    with pytest.raises(ValueError, match="empty"):
        rb.sample(1)
    run_episode(rb, 2, 3)
    assert rb.get_stored_size() == 9
    assert (rb.get_all_transitions()["obs"][:, 0] == 2).all()
    assert (rb.sample(32)["weights"] == 1.0).all()


def test_same_seed_same_buffer() -> None:
    a, b = make("future", seed=3), make("future", seed=3)
    for rb in (a, b):
        run_episode(rb, 0, 8)
    np.testing.assert_array_equal(a.get_all_transitions()["goal"], b.get_all_transitions()["goal"])


# ----------------------------------------------------------- prioritized
def test_fresh_rows_have_weight_one_and_uniform_sampling() -> None:
    rb = make("final", k=1, prioritized=True)
    run_episode(rb, 0, 5)
    batch = rb.sample(1000)
    assert (batch["weights"] == 1.0).all()
    counts = np.bincount(batch["indexes"], minlength=10)
    assert (counts == 100).all()  # stratified sampling over equal priorities


def test_update_priorities_changes_sampling_and_weights() -> None:
    rb = make("final", k=1, prioritized=True, alpha=0.6, eps=1e-4)
    run_episode(rb, 0, 5)
    rb.update_priorities(np.arange(10), np.full(10, 0.01))
    rb.update_priorities([3], [1e6])
    assert rb.get_max_priority() == pytest.approx(1e6)
    batch = rb.sample(2000, beta=0.5)
    assert (batch["indexes"] == 3).mean() > 0.99
    leaves = (np.array([0.01] * 3 + [1e6] + [0.01] * 6) + 1e-4) ** 0.6
    expected = (10 * leaves[batch["indexes"]] / leaves.sum()) ** -0.5
    np.testing.assert_allclose(batch["weights"], expected / expected.max(), rtol=1e-5)
    assert (batch["weights"] <= 1.0).all()

    rb.update_priorities(np.arange(10), np.arange(1, 11, dtype=float))
    batch = rb.sample(5000, beta=0.4)
    probs = (np.arange(1, 11) + 1e-4) ** 0.6
    probs /= probs.sum()
    freq = np.bincount(batch["indexes"], minlength=10) / 5000
    np.testing.assert_allclose(freq, probs, atol=0.01)
    assert batch["weights"].max() == pytest.approx(1.0)
    np.testing.assert_allclose(batch["weights"][batch["indexes"] == 0], 1.0)  # rarest, largest


def test_new_rows_get_the_max_priority() -> None:
    rb = make("final", k=1, prioritized=True)
    run_episode(rb, 0, 5)
    rb.update_priorities(np.arange(10), np.full(10, 0.001))
    rb.update_priorities([0], [20.0])
    run_episode(rb, 1, 5)
    batch = rb.sample(1000)
    new_rows = (batch["indexes"] >= 10).mean()
    assert new_rows > 0.85  # 10 rows at priority 20 vs one at 20 and nine near 0


def test_priority_errors() -> None:
    plain = make()
    run_episode(plain, 0, 2)
    with pytest.raises(ValueError, match="without prioritized"):
        plain.update_priorities([0], [1.0])
    with pytest.raises(ValueError, match="without prioritized"):
        plain.get_max_priority()
    rb = make(prioritized=True)
    run_episode(rb, 0, 2)  # 10 rows
    with pytest.raises(ValueError, match="indexes"):
        rb.update_priorities([0, 1], [1.0])
    with pytest.raises(ValueError, match="priorities"):
        rb.update_priorities([0], [-1.0])
    with pytest.raises(ValueError, match="priorities"):
        rb.update_priorities([0], [np.nan])
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        rb.update_priorities([10], [1.0])
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        rb.update_priorities([-1], [1.0])
    assert rb.get_max_priority() == 1.0


def test_cpprb_semantics_for_what_the_env_said() -> None:
    """cpprb's add takes no reward: every reward is reward_func's, and an env_dict field such
    as ``done`` is copied as given to every relabelled copy (a crash stays terminal)."""
    rb = HindsightReplayBuffer(
        100, {**ENV_DICT, "done": {}}, 8, reward, strategy="future", additional_goals=2, seed=0
    )
    data = episode(0, 4)
    done = np.array([0.0, 0.0, 0.0, 1.0])
    rb.add(**data, done=done)
    rb.on_episode_end(original_goal(0))
    stored = rb.get_all_transitions()
    step = stored["obs"][:, 1].astype(int)
    np.testing.assert_array_equal(stored["done"].ravel(), done[step])
    expected = reward(stored["next_obs"], stored["act"], stored["goal"]).reshape(-1, 1)
    np.testing.assert_array_equal(stored["rew"], expected)
