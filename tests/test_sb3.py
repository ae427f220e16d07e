"""herkit.sb3.HerReplayBuffer: SB3's algorithms train through it, and its goals are right."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import herkit  # noqa: F401  (registers the herkit envs)
from herkit import Batch

pytest.importorskip("stable_baselines3", reason="install with: bash install.sh sb3")

from stable_baselines3 import DQN, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv
from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy
from test_her_buffer import ExtraKeys, image_of, proprio_of

from herkit.sb3 import HerReplayBuffer
from tagged import TaggedRun, check_n_step_batch, crashed, penalty, tag_reward
from test_her_relabel import check_batch

TAG_SPACE = gym.spaces.Dict(
    {
        key: gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
        for key in ("observation", "achieved_goal", "desired_goal")
    }
)


class TagRewardEnv:
    """The one thing the adapter asks of its VecEnv: the first env's compute_reward."""

    def has_attr(self, name: str) -> bool:
        return False

    def env_method(self, name: str, *args: Any, indices: Any = None) -> list[Any]:
        assert name == "compute_reward"
        return [tag_reward(*args)]


class ThroughSB3:
    """Feeds and samples an adapter the way SB3 does, for the tagged-episode checks."""

    def __init__(self, adapter: HerReplayBuffer) -> None:
        self.adapter = adapter
        self.n_envs = adapter.n_envs
        self.settings = adapter.buffer.settings
        self.storage = adapter.buffer.storage

    def __len__(self) -> int:
        return len(self.adapter.buffer)

    def add(
        self,
        obs,
        action,
        next_obs,
        terminated,
        truncated,
        info=None,
        reward=None,  # type: ignore[no-untyped-def]
        success=None,
    ) -> None:
        done = terminated | truncated
        infos: list[dict[str, Any]] = [
            {"TimeLimit.truncated": bool(t and not d)}
            for t, d in zip(truncated, terminated, strict=True)
        ]
        if success is not None:
            for item, reached in zip(infos, success, strict=True):
                item["is_success"] = bool(reached)
        if reward is None:  # the env's reward is its compute_reward
            reward = tag_reward(next_obs["achieved_goal"], obs["desired_goal"], None)
        self.adapter.add(obs, next_obs, action, reward, done, infos)

    def sample(self, batch_size: int) -> Batch:
        samples = self.adapter.sample(batch_size)
        obs = {key: value.numpy() for key, value in samples.observations.items()}
        nxt = {key: value.numpy() for key, value in samples.next_observations.items()}
        np.testing.assert_array_equal(nxt["desired_goal"], obs["desired_goal"])
        return Batch(
            observation=obs["observation"],
            action=samples.actions.numpy(),
            achieved_goal=obs["achieved_goal"],
            goal=obs["desired_goal"],
            next_observation=nxt["observation"],
            next_achieved_goal=nxt["achieved_goal"],
            reward=samples.rewards.numpy().ravel(),
            terminated=samples.dones.numpy().ravel(),
            discount=None if samples.discounts is None else samples.discounts.numpy().ravel(),
        )


def tagged_adapter(n_envs: int, rows: int, **kwargs: Any) -> tuple[HerReplayBuffer, TaggedRun]:
    adapter = HerReplayBuffer(
        rows * n_envs,
        TAG_SPACE,
        gym.spaces.Box(-1, 1, (1,)),
        TagRewardEnv(),
        "cpu",
        n_envs=n_envs,
        **kwargs,
    )
    return adapter, TaggedRun(ThroughSB3(adapter), next_offset=(0.0, 1.0, 0.0))  # type: ignore[arg-type]


episode_lists = st.lists(st.integers(1, 12), min_size=1, max_size=15)


@settings(max_examples=30, deadline=None)
@given(
    strategy=st.sampled_from(["future", "final", "episode", "random"]),
    relabel=st.sampled_from(["sample", "store"]),
    n_envs=st.integers(1, 3),
    k=st.integers(1, 5),
    rows=st.integers(12, 30),
    lengths=st.lists(episode_lists, min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_tagged_goals_through_the_adapter(
    strategy: str, relabel: str, n_envs: int, k: int, rows: int, lengths: list[list[int]], seed: int
) -> None:
    """SB3's add/sample path obeys the same goal rules as herkit's buffer, wrap-around included."""
    adapter, run = tagged_adapter(
        n_envs, rows, n_sampled_goal=k, goal_selection_strategy=strategy, relabel=relabel, seed=seed
    )
    for round_ in range(3):
        run.feed([ls * (round_ + 1) for ls in lengths[:n_envs]], end_open=round_ == 2)
        if len(adapter.buffer) == 0:
            continue
        check_batch(run, strategy, relabel)  # type: ignore[arg-type]
        if round_ == 2:  # end_open truncates odd episodes too
            continue
        # SB3's dones: the env's terminal flag of a real sample; a timeout bootstraps.
        batch = run.buffer.sample(256)
        uid = batch.observation[:, 0].astype(int)
        step = batch.observation[:, 1].astype(int)
        real = batch.goal[:, 0] < 0
        ends = np.array(
            [
                run.episodes[u].closed and s == run.episodes[u].length - 1
                for u, s in zip(uid, step, strict=True)
            ]
        )
        terminal = ends & (uid % 2 == 1)  # the simulator terminates odd episodes, truncates even
        np.testing.assert_array_equal(batch.terminated[real], terminal[real])


@settings(max_examples=20, deadline=None)
@given(
    strategy=st.sampled_from(["future", "final", "episode", "random"]),
    relabel=st.sampled_from(["sample", "store"]),
    terminal_on_success=st.booleans(),
    keep_env_terms=st.sampled_from([None, True, False]),
    n_envs=st.integers(1, 3),
    lengths=st.lists(episode_lists, min_size=3, max_size=3),
)
def test_penalties_and_crashes_survive_the_adapter(
    strategy: str,
    relabel: str,
    terminal_on_success: bool,
    keep_env_terms: bool | None,
    n_envs: int,
    lengths: list[list[int]],
) -> None:
    """The env's reward reaches SB3 for a sample's own goal; a relabelled one gets
    compute_reward alone, as from SB3, and its penalty too with ``keep_env_terms=True``; a
    crash is terminal for every goal."""
    given = {} if keep_env_terms is None else {"keep_env_terms": keep_env_terms}
    adapter, run = tagged_adapter(
        n_envs,
        40,
        goal_selection_strategy=strategy,
        relabel=relabel,
        terminal_on_success=terminal_on_success,
        seed=0,
        **given,
    )
    run.env_terms = True
    run.feed([ls * 2 for ls in lengths[:n_envs]])
    if len(adapter.buffer) == 0:
        return
    batch = run.buffer.sample(256)
    uid, t = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    relabelled = batch.goal[:, 0] >= 0
    reached = np.all(batch.goal == batch.next_achieved_goal, axis=1)
    ended = np.array(
        [
            run.episodes[u].closed and s == run.episodes[u].length - 1
            for u, s in zip(uid, t, strict=True)
        ]
    ) & (uid % 2 == 1)
    kept = ~relabelled | bool(keep_env_terms)
    expected = np.where(relabelled & reached, 0.0, -1.0) + np.where(kept, penalty(uid, t), 0.0)
    np.testing.assert_allclose(batch.reward, expected, atol=1e-6)
    crash = ended & crashed(uid)
    terminal = np.where(relabelled, crash | reached, ended) if terminal_on_success else ended
    np.testing.assert_array_equal(batch.terminated, terminal)


def test_timeouts_are_terminal_without_timeout_handling() -> None:
    _, run = tagged_adapter(1, 40, handle_timeout_termination=False, seed=0)
    run.feed([[3, 4, 5]], end_open=False)
    batch = run.buffer.sample(512)
    uid = batch.observation[:, 0].astype(int)
    step = batch.observation[:, 1].astype(int)
    ends = np.array(
        [
            run.episodes[u].closed and s == run.episodes[u].length - 1
            for u, s in zip(uid, step, strict=True)
        ]
    )
    real = batch.goal[:, 0] < 0
    np.testing.assert_array_equal(batch.terminated[real], ends[real])


def test_a_reset_outside_the_buffer_ends_the_episode() -> None:
    """An env reset without a done (a new learn() call) starts a new episode in the buffer."""
    adapter, run = tagged_adapter(1, 40, seed=0)
    run.feed([[10]], steps=4)  # episode 0 is open at step 4
    run.current = []  # the simulator starts episode 1 without ending episode 0
    run.episodes[0].closed = True
    run.feed([[10]], steps=3)
    storage = adapter.buffer.storage
    lengths = storage.episode_length[: storage.next_episode]
    assert lengths[0] == 4, "the episode reset outside add was not ended"
    check_batch(run, "future", "sample")  # type: ignore[arg-type]


def test_non_finite_values_are_refused_naming_the_field_and_env() -> None:
    adapter, _ = tagged_adapter(2, 40, seed=0)
    obs = {key: np.zeros((2, 3), np.float32) for key in TAG_SPACE.spaces}
    bad = {key: value.copy() for key, value in obs.items()}
    bad["achieved_goal"][1, :2] = np.inf
    infos = [{"TimeLimit.truncated": False}] * 2
    with pytest.raises(
        ValueError,
        match=r"next_obs\['achieved_goal'\] holds 2 non-finite "
        r"values \(NaN or inf\) in env 1",
    ):
        adapter.add(obs, bad, np.zeros((2, 1)), np.zeros(2), np.zeros(2, bool), infos)
    with pytest.raises(ValueError, match="reward holds 1 non-finite value"):
        adapter.add(obs, obs, np.zeros((2, 1)), np.array([0.0, np.nan]), np.zeros(2, bool), infos)
    assert len(adapter.buffer) == 0
    adapter.add(obs, obs, np.zeros((2, 1)), np.zeros(2), np.zeros(2, bool), infos)
    assert len(adapter.buffer) == 2


def test_constructor_refuses_what_it_cannot_do() -> None:
    action = gym.spaces.Box(-1, 1, (1,))
    env = TagRewardEnv()
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        HerReplayBuffer(100, TAG_SPACE, action, env, optimize_memory_usage=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="buffer_size must be an int"):
        HerReplayBuffer(100.0, TAG_SPACE, action, env)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_envs must be in"):
        HerReplayBuffer(4, TAG_SPACE, action, env, n_envs=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="goal_selection_strategy"):
        HerReplayBuffer(100, TAG_SPACE, action, env, goal_selection_strategy="past")  # type: ignore[arg-type]
    missing = gym.spaces.Dict({k: v for k, v in TAG_SPACE.spaces.items() if k != "desired_goal"})
    with pytest.raises(ValueError, match=r"must be a Dict with the keys .* \(and any others\)"):
        HerReplayBuffer(100, missing, action, env)  # type: ignore[arg-type]
    enum = HerReplayBuffer(
        100, TAG_SPACE, action, env, goal_selection_strategy=GoalSelectionStrategy.FINAL
    )  # type: ignore[arg-type]
    assert enum.goal_selection_strategy == "final"


def test_import_without_stable_baselines3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)
    monkeypatch.delitem(sys.modules, "herkit.sb3")
    with pytest.raises(
        ImportError, match=r"herkit\.sb3 needs stable_baselines3, .*'herkit\[sb3\]'"
    ):
        importlib.import_module("herkit.sb3")


def test_prioritized_hook() -> None:
    adapter, run = tagged_adapter(1, 40, prioritized=True, seed=0)
    run.feed([[5]], steps=20)
    adapter.sample(8)
    assert adapter.last_weights is not None and adapter.last_weights.shape == (8, 1)
    assert adapter.last_indices is not None
    target = int(adapter.last_indices[0])
    everything = np.arange(len(adapter.buffer))
    adapter.update_priorities(everything, np.full(len(everything), 1e-6))
    adapter.update_priorities(np.array([target]), torch.tensor([100.0]))
    adapter.sample(64)
    assert np.mean(adapter.last_indices == target) > 0.9


def success_rate(model: Any, env_id: str, episodes: int, **kwargs: Any) -> float:
    env = gym.make(env_id, **kwargs)
    successes = 0.0
    for seed in range(episodes):
        obs, _ = env.reset(seed=1000 + seed)
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        successes += float(info["is_success"])
    return successes / episodes


@pytest.mark.slow("learning run through SB3")
def test_sb3_dqn_learns_bit_flipping_through_the_adapter() -> None:
    env = make_vec_env("herkit/BitFlip-v0", n_envs=1, env_kwargs={"n_bits": 8})
    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        learning_starts=100,
        exploration_fraction=0.3,
        buffer_size=50_000,
        batch_size=64,
        learning_rate=1e-3,
        target_update_interval=250,
        policy_kwargs={"net_arch": [64]},
        seed=0,
        device="cpu",
    )
    assert model.replay_buffer.buffer.terminal_on_success  # BitFlip declares it
    model.learn(6_000)
    assert success_rate(model, "herkit/BitFlip-v0", 50, n_bits=8) >= 0.9


def sac(env: Any, **kwargs: Any) -> SAC:
    return SAC(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        learning_starts=200,
        buffer_size=50_000,
        gamma=0.95,
        batch_size=128,
        learning_rate=1e-3,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
        device="cpu",
        **kwargs,
    )


@pytest.mark.slow("learning run through SB3")
def test_sb3_sac_learns_point_reach_with_two_envs() -> None:
    model = sac(make_vec_env("herkit/PointReach-v0", n_envs=2, seed=0), gradient_steps=-1)
    model.learn(3_000)
    assert model.replay_buffer.buffer.n_envs == 2
    assert success_rate(model, "herkit/PointReach-v0", 50) >= 0.8


@pytest.mark.slow("SB3 learning with subprocess envs")
def test_subprocess_envs_and_save_load_round_trip(tmp_path: Path) -> None:
    # Worker processes import herkit (and so register its envs) through the "module:" prefix.
    env = make_vec_env("herkit:herkit/PointReach-v0", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    try:
        model = sac(env)
        model.learn(300)
        model.save(tmp_path / "model")
        model.save_replay_buffer(tmp_path / "buffer")
        before = model.replay_buffer
        loaded = SAC.load(tmp_path / "model", env=env, device="cpu")
        loaded.load_replay_buffer(tmp_path / "buffer", truncate_last_traj=False)
        after = loaded.replay_buffer
        assert isinstance(after, HerReplayBuffer) and after.env is env
        assert (after.pos, after.full, after.size()) == (before.pos, before.full, before.size())
        for name, column in before.buffer.storage.data.items():
            np.testing.assert_array_equal(after.buffer.storage.data[name], column)
        # Same stored data and generator: the same batches, rewards from the worker env.
        one, two = before.sample(64), after.sample(64)
        for key in one.observations:
            torch.testing.assert_close(one.observations[key], two.observations[key])
        torch.testing.assert_close(one.rewards, two.rewards)
        assert set(np.unique(two.rewards.numpy())) <= {-1.0, 0.0}
        # truncate_last_traj=True (SB3's default) ends the open episodes.
        loaded.load_replay_buffer(tmp_path / "buffer")
        assert not loaded.replay_buffer.buffer.storage.open_lengths().any()
        loaded.learn(100, reset_num_timesteps=False)
    finally:
        env.close()


def test_vec_normalize_normalises_sampled_observations() -> None:
    from stable_baselines3.common.vec_env import VecNormalize

    env = VecNormalize(make_vec_env("herkit/PointReach-v0", n_envs=1, seed=0), clip_obs=3.0)
    model = sac(env)
    model.learn(300)
    adapter = model.replay_buffer
    state = adapter.buffer.rng.bit_generator.state
    raw = adapter.sample(64)
    adapter.buffer.rng.bit_generator.state = state  # the same draws again
    normalised = adapter.sample(64, env=env)
    expected = env.normalize_obs({key: value.numpy() for key, value in raw.observations.items()})
    for key, value in expected.items():
        np.testing.assert_allclose(normalised.observations[key].numpy(), value, rtol=1e-6)
        assert normalised.observations[key].abs().max() <= 3.0


@pytest.mark.parametrize("algo", ["TD3", "DDPG"])
def test_other_sb3_algorithms_train_through_the_adapter(algo: str) -> None:
    import stable_baselines3

    env = make_vec_env("herkit/PointReach-v0", n_envs=2, seed=0)
    model = getattr(stable_baselines3, algo)(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"goal_selection_strategy": "random", "n_sampled_goal": 2},
        learning_starts=100,
        buffer_size=10_000,
        policy_kwargs={"net_arch": [32, 32]},
        seed=0,
        device="cpu",
    )
    model.learn(400)
    assert model.replay_buffer.size() == 200 and model._n_updates > 0
    assert model.replay_buffer.buffer.settings.strategy.value == "random"


# -- n-step returns ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    strategy=st.sampled_from(["future", "final", "episode", "random"]),
    relabel=st.sampled_from(["sample", "store"]),
    terminal_on_success=st.booleans(),
    n_envs=st.integers(1, 3),
    n_steps=st.integers(2, 5),
    lengths=st.lists(episode_lists, min_size=3, max_size=3),
)
def test_n_step_returns_through_the_adapter_are_the_relabelled_goals(
    strategy: str,
    relabel: str,
    terminal_on_success: bool,
    n_envs: int,
    n_steps: int,
    lengths: list[list[int]],
) -> None:
    """SB3's samples carry n-step sums of the relabelled goal's rewards and their
    ``discounts``, cut at a crash, at a reached goal where episodes end on success, at the
    episode's end and at its last recorded step (the same explicit check as herkit's own)."""
    gamma = 0.9
    adapter, run = tagged_adapter(
        n_envs,
        50,
        goal_selection_strategy=strategy,
        relabel=relabel,
        seed=0,
        terminal_on_success=terminal_on_success,
        n_steps=n_steps,
        gamma=gamma,
    )
    run.feed([ls * 2 for ls in lengths[:n_envs]])
    if len(adapter.buffer) == 0:
        return
    check_n_step_batch(run, run.buffer.sample(256), n_steps, gamma, terminal_on_success)


def test_one_step_samples_carry_no_discounts() -> None:
    adapter, run = tagged_adapter(1, 40, seed=0)
    run.feed([[5]], steps=20)
    assert adapter.sample(8).discounts is None


def test_n_steps_need_the_algorithms_gamma() -> None:
    action, env = gym.spaces.Box(-1, 1, (1,)), TagRewardEnv()
    with pytest.raises(ValueError, match=r"n_steps=3 needs gamma, the algorithm's discount"):
        HerReplayBuffer(100, TAG_SPACE, action, env, n_steps=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_steps must be an int >= 1, got 0"):
        HerReplayBuffer(100, TAG_SPACE, action, env, n_steps=0, gamma=0.9)  # type: ignore[arg-type]
    point = gym.make("herkit/PointReach-v0")
    kwargs = {"replay_buffer_class": HerReplayBuffer, "device": "cpu", "buffer_size": 1_000}
    with pytest.warns(UserWarning, match=r"gamma=0.98, but SAC discounts with gamma=0.99"):
        SAC(
            "MultiInputPolicy",
            point,
            gamma=0.99,
            **kwargs,
            replay_buffer_kwargs={"n_steps": 3, "gamma": 0.98},
        )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SAC(
            "MultiInputPolicy",
            point,
            gamma=0.98,
            **kwargs,
            replay_buffer_kwargs={"n_steps": 3, "gamma": 0.98},
        )


@pytest.mark.parametrize("algo", ["DQN", "SAC", "TD3", "DDPG"])
def test_sb3_algorithms_train_on_n_step_samples(algo: str) -> None:
    """Each algorithm trains on batches whose ``discounts`` (what SB3 bootstraps with in
    place of ``gamma``) are ``gamma ** m`` with m up to ``n_steps``."""
    import stable_baselines3

    env_id = "herkit/BitFlip-v0" if algo == "DQN" else "herkit/PointReach-v0"
    env = make_vec_env(env_id, n_envs=2, seed=0, env_kwargs={"n_bits": 4} if algo == "DQN" else {})
    model = getattr(stable_baselines3, algo)(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        gamma=0.9,
        replay_buffer_kwargs={"n_steps": 3, "gamma": 0.9},
        learning_starts=100,
        buffer_size=10_000,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    seen: list[Any] = []
    sample = model.replay_buffer.sample

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(sample(*args, **kwargs))
        return seen[-1]

    model.replay_buffer.sample = recording  # type: ignore[method-assign]
    model.learn(300)
    assert model._n_updates > 0 and seen
    discounts = torch.cat([batch.discounts for batch in seen])
    assert discounts.shape[1] == 1 and torch.all(discounts <= 0.9 + 1e-6)
    assert torch.any(discounts < 0.9**2 + 1e-6), "some samples summed more than one step"


# -- observation keys beyond the GoalEnv's three ----------------------------------------------


@pytest.mark.slow("SB3 learning")
def test_extra_observation_keys_reach_sb3_and_survive_save_load(tmp_path: Path) -> None:
    """An image-like key (SB3's policy reads it with its CNN) and a proprioception key are
    stored, returned with their own transition, exposed in SB3's storage attributes and
    round-tripped by save_replay_buffer / load_replay_buffer."""
    env = make_vec_env(
        lambda: ExtraKeys(gym.make("herkit/PointReach-v0"), side=36), n_envs=2, seed=0
    )
    model = SAC(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        learning_starts=100,
        buffer_size=2_000,
        batch_size=32,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    model.learn(300)
    assert model._n_updates > 0
    for replay in (model.replay_buffer, reloaded(model, tmp_path)):
        batch = replay.sample(64)
        obs = {key: value.numpy() for key, value in batch.observations.items()}
        nxt = {key: value.numpy() for key, value in batch.next_observations.items()}
        np.testing.assert_array_equal(obs["image"], image_of(obs["observation"], 36))
        np.testing.assert_array_equal(nxt["image"], image_of(nxt["observation"], 36))
        np.testing.assert_array_equal(obs["proprio"], proprio_of(obs["observation"]))
        np.testing.assert_array_equal(nxt["proprio"], proprio_of(nxt["observation"]))
        assert replay.observations["image"].shape == (1_000, 2, 3, 36, 36)
        assert replay.next_observations["proprio"].shape == (1_000, 2, 4)
        assert replay.observations["image"].dtype == np.uint8


def reloaded(model: Any, folder: Path) -> Any:
    model.save_replay_buffer(folder / "replay.pkl")
    state = model.replay_buffer.buffer.rng.bit_generator.state
    model.replay_buffer = None
    model.load_replay_buffer(folder / "replay.pkl")
    assert model.replay_buffer.buffer.rng.bit_generator.state == state
    return model.replay_buffer


# -- episodes that end on success ---------------------------------------------------------------


def relabelled_reached_terminal(run: TaggedRun) -> tuple[bool, bool]:
    """Whether, in a sample, relabelled samples that reach their goal short of their
    episode's end are terminal (all of them), and whether there are any."""
    batch = run.buffer.sample(1024)
    uid, t = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    last = np.array([t_ == run.episodes[u].length - 1 for u, t_ in zip(uid, t, strict=True)])
    relabelled_reached = (
        (batch.goal[:, 0] >= 0) & np.all(batch.goal == batch.next_achieved_goal, axis=1) & ~last
    )
    return bool(batch.terminated[relabelled_reached].all()), bool(relabelled_reached.any())


@pytest.mark.parametrize("penalties", [False, True])
def test_an_env_that_declares_nothing_keeps_sb3s_flags_unless_penalties_meet_success_ends(
    penalties: bool,
) -> None:
    """Episodes that end at a success (uid % 4 == 3) in an env that does not say so: SB3's
    flags are kept, a reached relabelled goal bootstraps, unless the env's rewards carry a
    term compute_reward lacks: then a reached relabelled goal ends the sample (on parking
    this learned far more; herkit.buffer.ending.sb3_ending)."""
    adapter, run = tagged_adapter(1, 200, seed=0)
    assert adapter.buffer.terminal_on_success is False  # SB3's flags until seen
    run.env_terms, run.penalties = True, penalties
    run.feed([[3, 4, 5, 6]] * 1, steps=18)  # episodes 0-3: the success ending comes last
    terminal, seen = relabelled_reached_terminal(run)
    assert seen and terminal == penalties
    assert adapter.buffer.terminal_on_success is penalties
    source = adapter.buffer.sources["terminal_on_success"]
    assert source.startswith("observed at the first success" if penalties else "SB3's flags")


def test_an_env_that_never_ends_at_a_success_keeps_sb3s_flags() -> None:
    adapter, run = tagged_adapter(1, 200, seed=0)
    run.env_terms = True
    run.feed([[3, 4, 5]], steps=12)  # episodes 0-2: none ends at a success
    terminal, seen = relabelled_reached_terminal(run)
    assert seen and not terminal and not adapter.buffer.terminal_on_success


def test_a_maze_that_is_not_continuing_ends_on_success_through_sb3() -> None:
    pytest.importorskip("gymnasium_robotics", reason="install with: bash install.sh robotics")
    env = make_vec_env("PointMaze_UMaze-v3", n_envs=1, env_kwargs={"continuing_task": False})
    adapter = HerReplayBuffer(100, env.observation_space, env.action_space, env, "cpu")
    assert adapter.buffer.terminal_on_success is True
    looping = make_vec_env("PointMaze_UMaze-v3", n_envs=1, env_kwargs={"continuing_task": True})
    assert not HerReplayBuffer(
        100, looping.observation_space, looping.action_space, looping, "cpu"
    ).buffer.terminal_on_success
