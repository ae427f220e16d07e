"""HerReplayBuffer: bad input, prioritized replay, dtypes, save/load, env construction."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from herkit import Batch, HerReplayBuffer
from herkit.buffer.goal_env import GOAL_KEYS
from herkit.buffer.settings import HerSettings
from tagged import TaggedRun, tag_reward


def make(capacity: int = 100, **kwargs: Any) -> HerReplayBuffer:
    options: dict[str, Any] = dict(
        observation_shape=3, goal_shape=3, action_shape=1, reward_fn=tag_reward, seed=0
    )
    options.update(kwargs)
    return HerReplayBuffer(capacity, **options)


def step(n_envs: int = 1, obs_dtype: Any = np.float32) -> dict[str, Any]:
    obs = {
        "observation": np.zeros((n_envs, 3), obs_dtype),
        "achieved_goal": np.zeros((n_envs, 3), np.float32),
        "desired_goal": np.ones((n_envs, 3), np.float32),
    }
    return dict(
        obs=obs,
        action=np.zeros((n_envs, 1), np.float32),
        next_obs=obs,
        terminated=np.zeros(n_envs, bool),
        truncated=np.zeros(n_envs, bool),
    )


def snapshot(buffer: HerReplayBuffer) -> tuple[Any, ...]:
    arrays, counters = buffer.storage.state()
    leaves = None if buffer.sampler.tree is None else buffer.sampler.tree.leaves.copy()
    return {k: v.copy() for k, v in arrays.items()}, counters, leaves


def assert_same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert a[0].keys() == b[0].keys()
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key], err_msg=key)
    assert a[1] == b[1]
    if a[2] is not None:
        np.testing.assert_array_equal(a[2], b[2])


# -- bad input ------------------------------------------------------------------------------

BAD_CONSTRUCTION = [
    (dict(strategy="futur"), "strategy must be one of"),
    (dict(k=-1), "k must be an int >= 0"),
    (dict(k=2.5), "k must be an int >= 0"),
    (dict(relabel="later"), "relabel must be"),
    (dict(n_envs=0), "n_envs must be an int >= 1"),
    (dict(capacity=0), "capacity must be an int >= 1"),
    (dict(capacity=3, n_envs=4), "capacity must be >= n_envs"),
    (dict(reward_fn=None), "reward_fn must be callable"),
    (dict(alpha=-1.0), "alpha and beta"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_CONSTRUCTION)
def test_bad_construction_names_the_argument(kwargs: dict[str, Any], message: str) -> None:
    capacity = kwargs.pop("capacity", 100)
    with pytest.raises(ValueError, match=message):
        make(capacity, **kwargs)


def _with(field: str, value: Any) -> dict[str, Any]:
    args = step()
    if "." in field:
        outer, key = field.split(".")
        args[outer] = {**args[outer], key: value}
    else:
        args[field] = value
    return args


BAD_ADDS = [
    (
        _with("obs.observation", np.zeros((1, 4), np.float32)),
        r"obs\['observation'\] must have shape",
    ),
    (
        _with("obs.observation", np.zeros((2, 3), np.float32)),
        r"obs\['observation'\] must have shape",
    ),
    (_with("obs.desired_goal", np.zeros((1, 2), np.float32)), r"obs\['desired_goal'\]"),
    (_with("next_obs.achieved_goal", np.zeros(5)), r"next_obs\['achieved_goal'\]"),
    (_with("action", np.zeros((1, 2))), "action must have shape"),
    (_with("action", np.array([["a"]])), "action must have a dtype"),
    (_with("obs.observation", np.full((1, 3), 1 + 2j)), "dtype that casts to float32"),
    (_with("terminated", np.zeros(3, bool)), "terminated must have shape"),
    (_with("truncated", np.array(["no"])), "truncated must be bool or numeric"),
    ({**step(), "obs": {"observation": np.zeros((1, 3))}}, "obs must be a GoalEnv observation"),
    ({**step(), "next_obs": [1, 2, 3]}, "next_obs must be a GoalEnv observation"),
]


@pytest.mark.parametrize(("args", "message"), BAD_ADDS)
def test_rejected_add_names_the_argument_and_changes_nothing(
    args: dict[str, Any], message: str
) -> None:
    buffer = make(prioritized=True)
    for _ in range(3):
        buffer.add(**step())
    before = snapshot(buffer)
    with pytest.raises(ValueError, match=message):
        buffer.add(**args)
    assert_same(before, snapshot(buffer))
    buffer.add(**step())  # and it still works
    assert len(buffer) == 4


def test_integer_storage_rejects_floats() -> None:
    buffer = make(observation_dtype=np.uint8)
    with pytest.raises(ValueError, match="dtype that casts to uint8"):
        buffer.add(**step(obs_dtype=np.float32))


def test_missing_info_key_is_rejected_before_writing() -> None:
    buffer = make(info_keys=("is_success",))
    with pytest.raises(ValueError, match="info must hold the stored key 'is_success'"):
        buffer.add(**step(), info={})
    assert len(buffer) == 0


def test_episode_longer_than_capacity_is_rejected_and_buffer_kept() -> None:
    buffer = make(capacity=10, n_envs=2)  # 5 rows per env
    for _ in range(5):
        buffer.add(**step(n_envs=2))
    before = snapshot(buffer)
    with pytest.raises(ValueError, match="capacity // n_envs = 5"):
        buffer.add(**step(n_envs=2))
    assert_same(before, snapshot(buffer))
    done = step(n_envs=2) | {"truncated": np.ones(2, bool)}
    with pytest.raises(ValueError, match="an episode reached 6 steps"):
        buffer.add(**done)


@pytest.mark.parametrize("batch_size", [0, -3, 2.0, True])
def test_bad_batch_size(batch_size: Any) -> None:
    buffer = make()
    buffer.add(**step())
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        buffer.sample(batch_size)


def test_sampling_an_empty_buffer_says_so() -> None:
    with pytest.raises(ValueError, match="cannot sample from an empty buffer"):
        make().sample(8)


@pytest.mark.parametrize(
    "reward_fn",
    [
        lambda ag, g, info: np.zeros((len(ag), 1)),
        lambda ag, g, info: 0.0,
        lambda ag, g, info: np.zeros(len(ag) + 1),
    ],
)
def test_reward_fn_of_the_wrong_shape(reward_fn: Any) -> None:
    buffer = make(reward_fn=reward_fn)
    with pytest.raises(ValueError, match=r"reward_fn must return one reward per transition"):
        buffer.add(**step())  # the step's own reward is computed as it is stored
    assert len(buffer) == 0 and buffer.storage.rows_written == 0


def test_bad_priority_updates() -> None:
    buffer = make(prioritized=True)
    TaggedRun(buffer).feed([[5, 5]])
    batch = buffer.sample(4)
    with pytest.raises(ValueError, match="one value per index"):
        buffer.update_priorities(batch.indices, np.ones(3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        buffer.update_priorities(batch.indices, np.array([1.0, np.nan, 1.0, 1.0]))
    with pytest.raises(ValueError, match="indices must lie in"):
        buffer.update_priorities(np.array([10**6]), np.ones(1))
    with pytest.raises(ValueError, match="prioritized=True"):
        make().update_priorities(batch.indices, np.ones(4))


@pytest.mark.parametrize("relabel", ["sample", "store"])
def test_end_episodes_closes_open_episodes(relabel: str) -> None:
    buffer = make(100, n_envs=2, relabel=relabel, strategy="final")
    run = TaggedRun(buffer)
    run.feed([[20], [20]], steps=6)  # both envs 6 steps into open episodes
    buffer.end_episodes(np.array([True, False]))
    assert len(buffer) == (6 if relabel == "store" else 12)
    # The ended episode's final goal is its step 5, not a later step of a new episode.
    batch = buffer.sample(2000)
    env0 = (batch.observation[:, 2] == 0) & (batch.goal[:, 0] >= 0)
    assert env0.any() and np.all(batch.goal[env0, 1] == 5)
    with pytest.raises(ValueError, match=r"mask must have shape \(2,\)"):
        buffer.end_episodes(np.ones(3, bool))


# -- prioritized replay ---------------------------------------------------------------------


@pytest.mark.parametrize("relabel", ["sample", "store"])
def test_priorities_steer_sampling_and_weights(relabel: str) -> None:
    buffer = make(200, prioritized=True, relabel=relabel, alpha=1.0, beta=1.0, eps=1e-9)
    TaggedRun(buffer).feed([[10] * 5])
    fresh = buffer.sample(512)
    assert fresh.weights is not None and np.allclose(fresh.weights, 1.0)  # all at max priority
    leaves = buffer.sampler.tree.leaves  # type: ignore[union-attr]
    live = np.flatnonzero(leaves > 0)
    buffer.update_priorities(live, np.full(len(live), 1e-3))
    favourite = live[7]
    buffer.update_priorities(np.array([favourite]), np.array([1e3]))
    batch = buffer.sample(2000)
    assert np.mean(batch.indices == favourite) > 0.95
    assert batch.weights.max() == pytest.approx(1.0)
    rare = batch.indices != favourite
    if rare.any():  # beta=1: weights undo the sampling bias exactly
        assert batch.weights[~rare].max() == pytest.approx(1e-6, rel=1e-3)
    # New transitions come in at the running max priority.
    assert buffer.sampler.max_priority == pytest.approx(1e3)


def test_dropped_transitions_get_zero_priority_and_ignore_updates() -> None:
    buffer = make(12, prioritized=True)
    run = TaggedRun(buffer)
    run.feed([[4, 4, 4]])
    old = buffer.sample(64)
    run.feed([[5]])  # slots 0-4: overwrites episode 1 and slot 4 of episode 2, dropped whole
    leaves = buffer.sampler.tree.leaves  # type: ignore[union-attr]
    dropped = np.isin(np.arange(12), [5, 6, 7])  # what is left of episode 2
    assert np.all(leaves[dropped] == 0) and np.all(leaves[~dropped] > 0)
    buffer.update_priorities(old.indices, np.full(64, 5.0))
    assert np.all(buffer.sampler.tree.leaves[dropped] == 0)  # type: ignore[union-attr]


# -- dtypes, shapes, envs -------------------------------------------------------------------


def test_uint8_images_stay_uint8_and_discrete_actions_stay_int() -> None:
    buffer = HerReplayBuffer(
        50,
        observation_shape=(8, 8, 3),
        goal_shape=2,
        action_shape=(),
        observation_dtype=np.uint8,
        action_dtype=np.int64,
        reward_fn=lambda ag, g, info: -np.any(ag != g, axis=-1).astype(np.float32),
        seed=0,
    )
    image = np.full((8, 8, 3), 255, np.uint8)
    goal = np.zeros(2, np.float32)
    obs = {"observation": image, "achieved_goal": goal, "desired_goal": goal}
    for t in range(10):  # unbatched transitions are accepted with n_envs=1
        buffer.add(obs, np.int64(t % 4), obs, False, t == 9)
    batch = buffer.sample(16)
    assert batch.observation.dtype == np.uint8 and batch.observation.shape == (16, 8, 8, 3)
    assert batch.action.dtype == np.int64 and batch.action.shape == (16,)
    assert batch.reward.dtype == np.float32 and batch.terminated.dtype == np.float32
    assert buffer.storage.data["observation"].nbytes == 50 * 8 * 8 * 3


def test_to_torch_keeps_shapes_and_dtypes() -> None:
    torch = pytest.importorskip("torch")
    buffer = make(prioritized=True)
    TaggedRun(buffer).feed([[5, 5]])
    batch = buffer.sample(8)
    tensors = batch.to_torch("cpu")
    assert isinstance(tensors, Batch) and len(tensors) == 8
    assert tensors.observation.dtype == torch.float32 and tensors.indices.dtype == torch.int64
    np.testing.assert_array_equal(tensors.goal.numpy(), batch.goal)
    assert make().__class__ is HerReplayBuffer


class TinyGoalEnv(gym.Env):
    """A 2-D goal env: the smallest thing with the GoalEnv API."""

    def __init__(self) -> None:
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._pos = np.zeros(2, np.float32)
        self._goal = np.zeros(2, np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self._pos, "achieved_goal": self._pos, "desired_goal": self._goal}

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        self._pos = np.zeros(2, np.float32)
        self._goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action: np.ndarray) -> Any:
        self._pos = np.clip(self._pos + 0.1 * action, -1, 1).astype(np.float32)
        reward = float(self.compute_reward(self._pos, self._goal, {}))
        return self._obs(), reward, reward == 0.0, False, {"is_success": reward == 0.0}

    def compute_reward(self, achieved: Any, desired: Any, info: Any) -> Any:
        return -(np.linalg.norm(achieved - desired, axis=-1) > 0.1).astype(np.float32)


@pytest.mark.parametrize("vector", [None, "sync", "async"])
def test_from_env_reads_spaces_and_reward(vector: str | None) -> None:
    if vector is None:
        env: Any = TinyGoalEnv()
    elif vector == "sync":
        env = gym.vector.SyncVectorEnv([TinyGoalEnv] * 3)
    else:
        env = gym.vector.AsyncVectorEnv([TinyGoalEnv] * 2)
    buffer = HerReplayBuffer.from_env(env, 1000, strategy="future", k=4, seed=0)
    n_envs = getattr(env, "num_envs", 1)
    assert buffer.n_envs == n_envs
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        action = env.action_space.sample()
        next_obs, _, terminated, truncated, info = env.step(action)
        buffer.add(obs, action, next_obs, terminated, truncated, info)
        obs = next_obs
    env.close()
    batch = buffer.sample(64)
    expected = TinyGoalEnv().compute_reward(batch.next_achieved_goal, batch.goal, {})
    np.testing.assert_array_equal(batch.reward, expected)


def test_from_env_rejects_a_non_goal_env() -> None:
    with pytest.raises(ValueError, match="env must be a GoalEnv"):
        HerReplayBuffer.from_env(gym.make("CartPole-v1"), 100)


# -- save / load ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relabel", "prioritized", "strategy"),
    [
        ("sample", False, "future"),
        ("sample", True, "random"),
        ("store", True, "episode"),
        ("store", False, "final"),
    ],
)
def test_save_load_round_trips_exactly(
    tmp_path: Path, relabel: str, prioritized: bool, strategy: str
) -> None:
    buffer = make(60, n_envs=3, relabel=relabel, prioritized=prioritized, strategy=strategy, k=2)
    run = TaggedRun(buffer)
    run.feed([[3, 7, 2], [5, 5], [4, 9, 1]])  # wraps, leaves episodes open
    if prioritized:
        batch = buffer.sample(32)
        buffer.update_priorities(batch.indices, np.arange(32.0))
    path = tmp_path / "buffer.npz"
    buffer.save(path)
    assert not list(tmp_path.glob("*.tmp"))
    loaded = HerReplayBuffer.load(path, reward_fn=tag_reward)
    assert_same(snapshot(buffer), snapshot(loaded))
    assert loaded.sampler.max_priority == buffer.sampler.max_priority and len(loaded) == len(buffer)
    # Same RNG state and bookkeeping: the two evolve identically from here on.
    twin = copy.deepcopy(run)
    twin.buffer = loaded
    for a_run in (run, twin):
        a_run.feed([[4, 4], [6], [2, 3]])
    assert_same(snapshot(buffer), snapshot(loaded))
    a, b = buffer.sample(128), loaded.sample(128)
    for field in ("observation", "goal", "reward", "terminated", "weights"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_a_saved_buffer_is_sized_to_what_it_holds_not_to_its_capacity(tmp_path: Path) -> None:
    """A million-transition buffer holding 500: its file holds those 500 and their episodes
    (the episode table and the priorities of the whole capacity are not written)."""
    sizes = {}
    for capacity in (1_000, 1_000_000):
        buffer = make(capacity, n_envs=1, prioritized=True)
        TaggedRun(buffer).feed([[10]], steps=500)
        buffer.save(tmp_path / f"{capacity}.npz")
        sizes[capacity] = (tmp_path / f"{capacity}.npz").stat().st_size
    assert sizes[1_000_000] < 1.1 * sizes[1_000] < 100_000


@pytest.mark.parametrize("prioritized", [False, True])
def test_a_file_of_the_previous_format_with_the_whole_table_loads(
    tmp_path: Path, prioritized: bool
) -> None:
    """Format 2 wrote the whole episode table and every leaf of the priorities."""
    import json

    buffer = make(60, n_envs=3, prioritized=prioritized, strategy="future", k=2)
    TaggedRun(buffer).feed([[3, 7, 2], [5, 5], [4, 9, 1]])  # wraps, leaves episodes open
    buffer.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["format"] = 2
    storage = buffer.storage
    arrays["episode_start"], arrays["episode_length"] = (
        storage.episode_start,
        storage.episode_length,
    )
    for name in ("episode_ids", "episode_starts", "episode_lengths"):
        del arrays[name]
    if prioritized:
        assert buffer.sampler.tree is not None
        arrays["priorities"] = np.asarray(buffer.sampler.tree.leaves)
    np.savez(tmp_path / "old.npz", meta=np.array(json.dumps(meta)), **arrays)
    old = HerReplayBuffer.load(tmp_path / "old.npz", reward_fn=tag_reward)
    new = HerReplayBuffer.load(tmp_path / "new.npz", reward_fn=tag_reward)
    assert_same(snapshot(old), snapshot(new))
    a, b = old.sample(128), new.sample(128)
    for field in ("observation", "goal", "reward", "terminated", "weights"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_load_rejects_a_file_that_is_not_a_buffer(tmp_path: Path) -> None:
    path = tmp_path / "junk.npz"
    path.write_bytes(b"not an npz at all")
    with pytest.raises(ValueError, match="is not a herkit buffer file"):
        HerReplayBuffer.load(path, reward_fn=tag_reward)


# -- from_env: what the env declares ---------------------------------------------------------


def test_from_env_takes_ending_on_success_as_the_env_declares_it() -> None:
    """Bit flipping ends on success: relabelled goals that are reached are terminal, as in
    herkit train (a buffer that left this False bootstrapped past every reached goal)."""
    env = gym.make("herkit/BitFlip-v0", n_bits=4)
    buffer = HerReplayBuffer.from_env(env, 2_000, seed=0)
    assert buffer.terminal_on_success is True
    assert buffer.sources["terminal_on_success"] == ("declared by BitFlipEnv.terminates_on_success")
    assert "terminal_on_success=True (declared by BitFlipEnv" in repr(buffer)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(400):
        action = rng.integers(4)
        next_obs, _, terminated, truncated, _ = env.step(action)
        buffer.add(obs, np.array(action), next_obs, terminated, truncated)
        obs = env.reset()[0] if terminated or truncated else next_obs
    batch = buffer.sample(2_048)
    reached = np.all(batch.next_achieved_goal == batch.goal, axis=1)
    assert reached.any() and np.all(batch.terminated[reached])


@pytest.mark.parametrize("how", ["keyword", "settings"])
def test_from_env_keeps_the_ending_given_by_keyword_or_in_settings(how: str) -> None:
    """The caller's terminal_on_success wins over what the env declares, given either way
    (given in ``settings``, it was once silently replaced by the declaration)."""
    env = gym.make("herkit/BitFlip-v0", n_bits=4)  # declares that it ends on success
    given: dict[str, Any] = (
        {"terminal_on_success": False}
        if how == "keyword"
        else {"settings": HerSettings(k=2, terminal_on_success=False)}
    )
    buffer = HerReplayBuffer.from_env(env, 1_000, probe=False, **given)
    assert buffer.terminal_on_success is False
    assert buffer.sources["terminal_on_success"] == "given"
    undecided = HerReplayBuffer.from_env(env, 1_000, probe=False, settings=HerSettings(k=2))
    assert undecided.terminal_on_success is True and undecided.settings.k == 2


class Silent(gym.Env):  # type: ignore[type-arg]
    """An env of another library: BitFlip (which ends on success) declaring nothing."""

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        self.env = env
        self.observation_space, self.action_space = env.observation_space, env.action_space

    def reset(self, **kwargs: Any) -> Any:
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        return self.env.step(action)

    def compute_reward(self, achieved: Any, desired: Any, info: Any) -> Any:
        return self.env.unwrapped.compute_reward(achieved, desired, info)  # type: ignore[attr-defined]


def silent_bitflip(**kwargs: Any) -> Silent:
    """A registered maker of :class:`Silent` bit flipping: its spec makes fresh copies."""
    return Silent(gym.make("herkit/BitFlip-v0", **kwargs))


gym.register("herkit-tests/SilentBitFlip-v0", entry_point=silent_bitflip)


class Untouchable(gym.Env):  # type: ignore[type-arg]
    """All that SB3's and cpprb's buffers ever use of an env, its spaces and compute_reward;
    stepping, resetting or rendering it raises (a real robot, a costly simulator)."""

    def __init__(self) -> None:
        box = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def compute_reward(self, achieved: Any, desired: Any, info: Any) -> Any:
        return -(np.linalg.norm(achieved - desired, axis=-1) > 0.1).astype(np.float32)

    def reset(self, **kwargs: Any) -> Any:
        raise RuntimeError("this env must not be reset by a buffer")

    def step(self, action: Any) -> Any:
        raise RuntimeError("this env must not be stepped by a buffer")

    def render(self) -> Any:
        raise RuntimeError("this env must not be rendered by a buffer")


gym.register("herkit-tests/Untouchable-v0", entry_point=Untouchable)


@pytest.mark.parametrize("made", [False, True])
def test_from_env_never_acts_in_the_env_it_is_given(made: bool) -> None:
    """Without a spec nothing can be probed; with one, the fresh copy raises as well: either
    way the buffer is built from what the env declares, and says why."""
    env = gym.make("herkit-tests/Untouchable-v0") if made else Untouchable()
    buffer = HerReplayBuffer.from_env(env, 1_000, seed=0)
    why = buffer.sources["reward_range"]
    if made:
        assert why.startswith("not probed: a fresh copy made from its spec")
        assert "raised RuntimeError: this env must not be reset by a buffer" in why
    else:
        assert why == "not probed: the env has no spec to make a fresh copy from"
    assert buffer.terminal_on_success is None  # decided by the data, as it arrives
    assert "not probed" in repr(buffer)
    zeros = {key: np.zeros((1, 3), np.float32) for key in GOAL_KEYS}
    buffer.add(zeros, np.zeros((1, 2), np.float32), zeros, [False], [True])
    assert len(buffer.sample(4)) == 4


def test_from_env_finds_what_an_env_does_not_declare_as_herkit_train_does() -> None:
    """The probe's random steps on a fresh copy show the silent env's successes ending their
    episodes, and find its reward range and success key; the sources say so; the buffer
    agrees with the conventions ``herkit train`` would use."""
    from herkit.buffer.conventions import probe_conventions

    env = gym.make("herkit-tests/SilentBitFlip-v0", n_bits=4)
    buffer = HerReplayBuffer.from_env(env, 100)
    assert buffer.terminal_on_success is True
    assert buffer.sources["terminal_on_success"] == (
        "probe: in the random steps, a success ended its episode"
    )
    assert buffer.conventions is not None
    assert buffer.conventions.reward_range == (-1.0, 0.0)
    assert buffer.conventions.success_key == "is_success"
    assert buffer.conventions == probe_conventions(
        gym.make("herkit-tests/SilentBitFlip-v0", n_bits=4), env.unwrapped.compute_reward
    )
    shown = repr(buffer)
    assert "reward_range=(-1.0, 0.0) (probe: compute_reward takes the values -1, 0)" in shown
    assert "success_key='is_success' (the env's info has 'is_success')" in shown


def test_from_env_probes_a_copy_and_leaves_the_users_env_as_it_was() -> None:
    env, twin = gym.make("herkit/PointReach-v0"), gym.make("herkit/PointReach-v0")
    env.reset(seed=3)
    twin.reset(seed=3)
    HerReplayBuffer.from_env(env, 100)
    action = np.full(2, 0.5, dtype=np.float32)
    ours, theirs = env.step(action)[0], twin.step(action)[0]
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key])


def test_an_ending_left_unknown_is_decided_by_the_first_success_added(tmp_path: Path) -> None:
    env = Silent(gym.make("herkit/BitFlip-v0", n_bits=4))
    buffer = HerReplayBuffer.from_env(env, 1_000, probe=False, seed=0)
    assert buffer.terminal_on_success is None
    assert buffer.conventions is not None and buffer.conventions.reward_range is None
    assert "reward_range=None (not probed)" in repr(buffer)
    buffer.save(tmp_path / "unknown.npz")
    loaded = HerReplayBuffer.load(tmp_path / "unknown.npz", env.compute_reward)
    assert loaded.terminal_on_success is None
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    while buffer.terminal_on_success is None:
        action = rng.integers(4)
        next_obs, _, terminated, truncated, info = env.step(action)
        buffer.add(
            obs, np.array(action), next_obs, terminated, truncated, info, success=info["is_success"]
        )
        assert buffer.terminal_on_success is (True if info["is_success"] else None)
        obs = env.reset()[0] if terminated or truncated else next_obs
    assert buffer.sources["terminal_on_success"] == (
        "observed at the first success added, a success ended its episode"
    )


def test_from_env_keeps_what_is_given() -> None:
    env = gym.make("herkit/PointReach-v0")
    given = HerReplayBuffer.from_env(env, 100, terminal_on_success=True)
    assert given.terminal_on_success is True and given.sources["terminal_on_success"] == "given"
    built = HerReplayBuffer(
        100,
        observation_shape=2,
        goal_shape=2,
        action_shape=2,
        reward_fn=lambda achieved, desired, info: -np.ones(len(achieved)),
    )
    assert built.sources == {} and built.conventions is None


# -- observation keys beyond the GoalEnv's three ----------------------------------------------


class ExtraKeys(gym.ObservationWrapper):  # type: ignore[type-arg]
    """PointReach with an image-like uint8 key and a proprioception key, both functions of
    the observation, so that a sample's extras can be checked against its observation."""

    def __init__(self, env: gym.Env, side: int = 8) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        space = env.observation_space
        dim = space["observation"].shape[0]  # type: ignore[index]
        self.side = side
        self.observation_space = gym.spaces.Dict(
            {
                **space.spaces,  # type: ignore[attr-defined]
                "image": gym.spaces.Box(0, 255, (3, side, side), np.uint8),
                "proprio": gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32),
            }
        )

    def observation(self, obs: dict[str, Any]) -> dict[str, Any]:
        return obs | {
            "image": image_of(obs["observation"], self.side),
            "proprio": proprio_of(obs["observation"]),
        }


def image_of(observation: Any, side: int = 8) -> np.ndarray:
    """A uint8 image whose pixels are a function of the observation (batched or not)."""
    value = np.clip(np.asarray(observation)[..., 0] * 40 + 128, 0, 255).astype(np.uint8)
    return np.broadcast_to(value[..., None, None, None], (*value.shape, 3, side, side)).copy()


def proprio_of(observation: Any) -> np.ndarray:
    return (2 * np.asarray(observation, dtype=np.float32) + 1).astype(np.float32)


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("n_step", [1, 3])
def test_extra_keys_are_stored_and_returned_with_their_own_transition(
    device: str | None, n_step: int, tmp_path: Path
) -> None:
    env = ExtraKeys(gym.make("herkit/PointReach-v0"))
    buffer = HerReplayBuffer.from_env(env, 2_000, seed=0, device=device, n_step=n_step, gamma=0.9)
    assert set(buffer.extra_keys) == {"image", "proprio"}
    assert buffer.extra_keys["image"].dtype == np.uint8
    obs, _ = env.reset(seed=0)
    for _ in range(300):
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, info = env.step(action)
        buffer.add(obs, action, next_obs, terminated, truncated, info, reward=reward)
        obs = env.reset()[0] if terminated or truncated else next_obs
    for sampled in (
        buffer,
        HerReplayBuffer.load(save(buffer, tmp_path), buffer.reward_fn, device=device),
    ):
        batch = sampled.sample(128).to_torch()
        assert batch.extras is not None and batch.next_extras is not None
        observation, after = batch.observation.numpy(), batch.next_observation.numpy()
        assert batch.extras["image"].dtype == torch.uint8
        np.testing.assert_array_equal(batch.extras["image"].numpy(), image_of(observation))
        np.testing.assert_array_equal(batch.next_extras["image"].numpy(), image_of(after))
        np.testing.assert_array_equal(batch.extras["proprio"].numpy(), proprio_of(observation))
        np.testing.assert_array_equal(batch.next_extras["proprio"].numpy(), proprio_of(after))


def save(buffer: HerReplayBuffer, folder: Path) -> Path:
    path = folder / "extras.npz"
    buffer.save(path)
    return path


def test_extra_keys_are_checked_like_the_others() -> None:
    env = ExtraKeys(gym.make("herkit/PointReach-v0"))
    buffer = HerReplayBuffer.from_env(env, 100, probe=False)
    obs, _ = env.reset(seed=0)
    action = env.action_space.sample()
    next_obs = env.step(action)[0]
    bad = next_obs | {"proprio": np.array([0, np.nan, 1, np.nan], np.float32)}
    with pytest.raises(ValueError, match=r"next_obs\['proprio'\] holds 2 non-finite values"):
        buffer.add(obs, action, bad, False, False)
    with pytest.raises(ValueError, match=r"next_obs.*'image'"):
        buffer.add(obs, action, {k: v for k, v in next_obs.items() if k != "image"}, False, False)
    assert len(buffer) == 0
    with pytest.raises(ValueError, match=r"extra_keys names the observation keys beyond"):
        HerReplayBuffer.from_env(env, 100, probe=False, extra_keys={"observation": ((2,), "f4")})
    with pytest.raises(ValueError, match=r"extra_keys\['x'\] must be \(shape, dtype\)"):
        HerReplayBuffer.from_env(env, 100, probe=False, extra_keys={"x": 3})
    plain = HerReplayBuffer.from_env(env, 100, probe=False, extra_keys={})
    plain.add(obs, action, next_obs, False, False)
    assert plain.sample(4).extras is None
