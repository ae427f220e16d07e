"""Tests of herkit.envs: the goal envs, their registration and make_goal_env."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.mountain_car import MountainCarEnv
from gymnasium.utils.env_checker import check_env

from herkit.envs import (
    FETCH_IDS,
    HERKIT_IDS,
    BitFlipEnv,
    GoalEnv,
    GridWorldEnv,
    MountainCarGoalEnv,
    PointReachEnv,
    is_goal_env,
    make_goal_env,
    register_envs,
)

# (id, make kwargs): every herkit env with its defaults, and BitFlip's variants.
CASES = [
    ("herkit/BitFlip-v0", {}),
    ("herkit/BitFlip-v0", {"n_bits": 5}),
    ("herkit/BitFlip-v0", {"continuous": True}),
    ("herkit/BitFlip-v0", {"n_bits": 5, "continuous": True}),
    ("herkit/PointReach-v0", {}),
    ("herkit/GridWorld-v0", {}),
    ("herkit/GridWorld-v0", {"size": 3}),
    ("herkit/MountainCarGoal-v0", {}),
]
CASE_IDS = [f"{env_id}{kwargs or ''}" for env_id, kwargs in CASES]
TERMINATES_ON_SUCCESS = {
    "herkit/BitFlip-v0": True,
    "herkit/PointReach-v0": False,
    "herkit/GridWorld-v0": True,
    "herkit/MountainCarGoal-v0": True,
}
# A warning check_env gives for any wrapped env, which says nothing about the env itself.
WRAPPED = "is different from the unwrapped version"


def goal_env(env: gym.Env) -> GoalEnv[Any]:
    """The herkit goal env inside ``env``."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, GoalEnv)
    return unwrapped


def rollout(
    env: gym.Env, seed: int, steps: int, policy: Callable[[dict[str, Any]], Any] | None = None
) -> list[tuple[Any, ...]]:
    """``steps`` transitions ``(obs, action, reward, next_obs, terminated, truncated, info)``,
    resetting (unseeded after the first reset) whenever an episode ends."""
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    transitions = []
    for _ in range(steps):
        action = env.action_space.sample() if policy is None else policy(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        transitions.append((obs, action, reward, next_obs, terminated, truncated, info))
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
    return transitions


def episode_length(env: gym.Env, seed: int, policy: Callable[[dict[str, Any]], Any]) -> int:
    """Steps of one episode under ``policy``; fails if the episode terminated."""
    obs, _ = env.reset(seed=seed)
    for step in range(1, 10_000):
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        assert not terminated
        if truncated:
            return step
    raise AssertionError("episode never ended")


# -- API conformance -------------------------------------------------------------------------


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_env_checker_passes_without_warnings(env_id: str, kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(env_id, **kwargs).unwrapped)
        check_env(gym.make(env_id, **kwargs))
    messages = [str(warning.message) for warning in caught]
    assert [message for message in messages if WRAPPED not in message] == []


@pytest.mark.parametrize(
    "env", [BitFlipEnv(4), PointReachEnv(), GridWorldEnv(4), MountainCarGoalEnv()], ids=repr
)
def test_env_checker_passes_on_directly_made_envs(env: gym.Env) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [str(warning.message) for warning in caught] == []


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_goal_env_api(env_id: str, kwargs: dict[str, Any]) -> None:
    env = gym.make(env_id, **kwargs)
    assert is_goal_env(env)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict)
    assert set(space.spaces) == {"observation", "achieved_goal", "desired_goal"}
    assert space["achieved_goal"] == space["desired_goal"]
    for key, subspace in space.spaces.items():
        assert isinstance(subspace, gym.spaces.Box), key
        assert subspace.dtype == np.float32, key
    obs, info = env.reset(seed=0)
    assert "is_success" in info
    assert all(value.dtype == np.float32 for value in obs.values())
    for *_, info in rollout(env, seed=0, steps=60):
        assert isinstance(info["is_success"], float)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_compute_reward_batched_equals_step_rewards(env_id: str, kwargs: dict[str, Any]) -> None:
    env = gym.make(env_id, **kwargs)
    transitions = rollout(env, seed=1, steps=300)
    achieved = np.stack([t[3]["achieved_goal"] for t in transitions])
    desired = np.stack([t[3]["desired_goal"] for t in transitions])
    rewards = np.array([t[2] for t in transitions], dtype=np.float32)
    infos = [t[6] for t in transitions]
    compute_reward = goal_env(env).compute_reward
    info_dict = {"is_success": np.array([info["is_success"] for info in infos])}
    for info in (infos, info_dict, None):
        batched = compute_reward(achieved, desired, info)
        assert batched.shape == rewards.shape
        assert batched.dtype == np.float32
        np.testing.assert_array_equal(batched, rewards)
    singles = [compute_reward(a, d, i) for a, d, i in zip(achieved, desired, infos, strict=True)]
    assert all(np.shape(single) == () for single in singles)
    np.testing.assert_array_equal(np.array(singles, dtype=np.float32), rewards)
    # Leading axes beyond one batch axis, and relabelled goals (a goal reached by itself).
    np.testing.assert_array_equal(compute_reward(achieved[None], desired[None], None)[0], rewards)
    np.testing.assert_array_equal(compute_reward(achieved, achieved, None), 0.0)
    assert set(np.unique(rewards)) <= {-1.0, 0.0}


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_success_and_termination(env_id: str, kwargs: dict[str, Any]) -> None:
    env = gym.make(env_id, **kwargs)
    transitions = rollout(env, seed=2, steps=400)
    for _, _, reward, _, terminated, _, info in transitions:
        assert info["is_success"] == (reward == 0.0)
        if TERMINATES_ON_SUCCESS[env_id]:
            assert terminated == bool(info["is_success"])
        else:
            assert not terminated


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_no_episode_starts_solved(env_id: str, kwargs: dict[str, Any]) -> None:
    env = gym.make(env_id, **kwargs)
    for seed in range(200):
        obs, info = env.reset(seed=seed)
        assert info["is_success"] == 0.0
        assert goal_env(env).compute_reward(obs["achieved_goal"], obs["desired_goal"], None) == -1


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_same_seed_same_rollout(env_id: str, kwargs: dict[str, Any]) -> None:
    first = rollout(gym.make(env_id, **kwargs), seed=3, steps=100)
    second = rollout(gym.make(env_id, **kwargs), seed=3, steps=100)
    for a, b in zip(first, second, strict=True):
        for key in ("observation", "achieved_goal", "desired_goal"):
            np.testing.assert_array_equal(a[0][key], b[0][key])
            np.testing.assert_array_equal(a[3][key], b[3][key])
        np.testing.assert_array_equal(a[1], b[1])
        assert (a[2], a[4], a[5], a[6]) == (b[2], b[4], b[5], b[6])
    env = gym.make(env_id, **kwargs)
    goals = {env.reset(seed=seed)[0]["desired_goal"].tobytes() for seed in range(20)}
    assert len(goals) > 1


def test_observations_are_fresh_arrays() -> None:
    env = gym.make("herkit/GridWorld-v0")
    obs, _ = env.reset(seed=0)
    assert not np.shares_memory(obs["observation"], obs["achieved_goal"])
    obs["desired_goal"][:] = -5
    next_obs, *_ = env.step(0)
    assert (next_obs["desired_goal"] >= 0).all()


# -- episode lengths -------------------------------------------------------------------------


def _bitflip_idle(obs: dict[str, Any]) -> int:
    """A bit to flip again and again without ever reaching the goal (``n_bits >= 2``).

    After an even number of flips the state is the start (not the goal); after an odd number
    the flipped bit is wrong if start and goal agree on it, and another bit is wrong if they
    agree on none (then bit 0 is flipped).
    """
    agree = np.flatnonzero(obs["achieved_goal"] == obs["desired_goal"])
    return int(agree[0]) if agree.size else 0


@pytest.mark.parametrize(
    ("kwargs", "length"), [({}, 15), ({"n_bits": 40}, 40), ({"n_bits": 6, "max_steps": 9}, 9)]
)
def test_bitflip_episode_length(kwargs: dict[str, Any], length: int) -> None:
    env = gym.make("herkit/BitFlip-v0", **kwargs)
    starts: list[np.ndarray] = []

    def policy(obs: dict[str, Any]) -> int:
        if not starts:
            starts.append(obs["achieved_goal"])
        return _bitflip_idle({"achieved_goal": starts[0], "desired_goal": obs["desired_goal"]})

    assert episode_length(env, seed=0, policy=policy) == length


def test_point_reach_episode_length() -> None:
    env = gym.make("herkit/PointReach-v0")
    assert env.spec is not None and env.spec.max_episode_steps == 50
    assert episode_length(env, seed=0, policy=lambda obs: np.zeros(2, dtype=np.float32)) == 50


def test_grid_world_episode_length() -> None:
    phase = [0]

    def dither(obs: dict[str, Any]) -> int:
        # Step back and forth: up/down if the goal is in the agent's row, else left/right
        # (which never changes the row), so the agent never reaches the goal.
        same_row = abs(obs["achieved_goal"][0] - obs["desired_goal"][0]) < 1e-6
        phase[0] = 1 - phase[0]
        return phase[0] if same_row else 2 + phase[0]

    for size in (8, 3):
        env = gym.make("herkit/GridWorld-v0", size=size)
        assert episode_length(env, seed=size, policy=dither) == 4 * size


def test_mountain_car_goal_episode_length() -> None:
    env = gym.make("herkit/MountainCarGoal-v0", goal_low=0.4, goal_high=0.5)
    assert episode_length(env, seed=0, policy=lambda obs: 1) == 200


def test_mountain_car_fixed_goal() -> None:
    env = gym.make("herkit/MountainCarGoal-v0", goal_low=0.5, goal_high=0.5)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        assert obs["desired_goal"].tolist() == [0.5]
        assert -0.6 <= obs["achieved_goal"][0] <= -0.4


# -- solvability (an expert reaches every goal within the episode) ---------------------------


def _successes(env: gym.Env, policy: Callable[[dict[str, Any]], Any], episodes: int) -> int:
    successes = 0
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs))
            if info["is_success"]:
                successes += 1
                break
            if terminated or truncated:
                break
    return successes


def test_experts_solve_every_episode() -> None:
    def flip_wrong_bit(obs: dict[str, Any]) -> int:
        return int(np.flatnonzero(obs["achieved_goal"] != obs["desired_goal"])[0])

    def flip_wrong_bits(obs: dict[str, Any]) -> np.ndarray:
        wrong = obs["achieved_goal"] != obs["desired_goal"]
        return np.where(wrong, 1.0, -1.0).astype(np.float32)

    def toward(obs: dict[str, Any]) -> np.ndarray:
        delta = (obs["desired_goal"] - obs["achieved_goal"]) / 0.1
        return np.clip(delta, -1, 1).astype(np.float32)

    def grid_greedy(obs: dict[str, Any]) -> int:
        d_row, d_col = obs["desired_goal"] - obs["achieved_goal"]
        if abs(d_row) > 1e-6:
            return 1 if d_row > 0 else 0
        return 3 if d_col > 0 else 2

    def pump(obs: dict[str, Any]) -> int:
        return 2 if obs["observation"][1] >= 0 else 0

    assert _successes(gym.make("herkit/BitFlip-v0"), flip_wrong_bit, 20) == 20
    assert _successes(gym.make("herkit/BitFlip-v0", continuous=True), flip_wrong_bits, 20) == 20
    assert _successes(gym.make("herkit/PointReach-v0"), toward, 20) == 20
    assert _successes(gym.make("herkit/GridWorld-v0"), grid_greedy, 20) == 20
    assert _successes(gym.make("herkit/MountainCarGoal-v0"), pump, 50) == 50


# -- env-specific behaviour ------------------------------------------------------------------


def test_bitflip_actions() -> None:
    env = BitFlipEnv(n_bits=6)
    obs, _ = env.reset(seed=0)
    obs2, *_ = env.step(np.int64(2))
    changed = np.flatnonzero(obs["observation"] != obs2["observation"])
    assert changed.tolist() == [2]
    np.testing.assert_array_equal(obs2["observation"], obs2["achieved_goal"])
    assert set(np.unique(obs2["observation"])) <= {0.0, 1.0}

    env = BitFlipEnv(n_bits=6, continuous=True)
    obs, _ = env.reset(seed=0)
    action = np.array([0.5, -0.5, 0.0, 1.0, -1.0, 0.01], dtype=np.float32)
    obs2, *_ = env.step(action)
    changed = np.flatnonzero(obs["observation"] != obs2["observation"])
    assert changed.tolist() == [0, 3, 5]


def test_point_reach_moves_and_clips() -> None:
    env = PointReachEnv()
    env.reset(seed=0)
    env._position = np.array([0.0, 0.95])
    obs, *_ = env.step(np.array([0.5, 1.0], dtype=np.float32))
    np.testing.assert_allclose(obs["achieved_goal"], [0.05, 1.0], atol=1e-6)
    np.testing.assert_allclose(obs["observation"], [0.05, 1.0, 0.05, 0.05], atol=1e-6)
    obs, *_ = env.step(np.array([5.0, 0.0], dtype=np.float32))  # clipped to a full step
    np.testing.assert_allclose(obs["achieved_goal"], [0.15, 1.0], atol=1e-6)
    assert env.compute_reward([0.0, 0.0], [0.0, 0.049], None) == 0.0
    assert env.compute_reward([0.0, 0.0], [0.0, 0.051], None) == -1.0


def test_grid_world_walls_and_goal_cells() -> None:
    env = GridWorldEnv(size=4)
    env.reset(seed=0)
    env._agent = np.array([0, 0])
    obs, *_ = env.step(np.int64(0))  # up into the wall
    obs, *_ = env.step(np.int64(2))  # left into the wall
    np.testing.assert_array_equal(obs["observation"], [0.0, 0.0])
    obs, *_ = env.step(np.int64(1))
    obs, *_ = env.step(np.int64(3))
    np.testing.assert_allclose(obs["observation"], [1 / 3, 1 / 3])
    cells = np.array([[0, 0], [0, 1 / 3], [1 / 3, 0], [1.0, 1.0]], dtype=np.float32)
    rewards = env.compute_reward(cells[:, None], cells[None, :], None)
    np.testing.assert_array_equal(rewards, np.eye(4) - 1)


def test_mountain_car_goal_follows_gymnasium_dynamics() -> None:
    ours = MountainCarGoalEnv()
    theirs = MountainCarEnv()
    ours.reset(seed=0)
    theirs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(300):
        position, velocity = rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07)
        action = int(rng.integers(3))
        ours._position, ours._velocity = position, velocity
        theirs.state = (position, velocity)
        obs, *_ = ours.step(np.int64(action))
        expected, *_ = theirs.step(action)
        np.testing.assert_allclose(obs["observation"], expected, rtol=1e-6)
    assert ours.compute_reward([0.3], [0.349], None) == 0.0
    assert ours.compute_reward([0.3], [0.351], None) == -1.0
    assert ours.compute_reward(np.zeros((2, 3, 1)), np.zeros((2, 3, 1)), None).shape == (2, 3)


def test_invalid_arguments() -> None:
    for make in (
        lambda: BitFlipEnv(n_bits=0),
        lambda: BitFlipEnv(n_bits=4, max_steps=0),
        lambda: GridWorldEnv(size=1),
        lambda: PointReachEnv(distance_threshold=0.0),
        lambda: MountainCarGoalEnv(goal_low=0.5, goal_high=0.4),
        lambda: MountainCarGoalEnv(goal_low=-0.5, goal_high=-0.5),  # always at the start
        lambda: MountainCarGoalEnv(goal_low=-0.64, goal_high=-0.36),
        lambda: BitFlipEnv(render_mode="human"),
    ):
        with pytest.raises(ValueError):
            make()


def test_ansi_render() -> None:
    for env_id in HERKIT_IDS:
        env = gym.make(env_id, render_mode="ansi")
        env.reset(seed=0)
        assert isinstance(env.render(), str)


# -- registration and make_goal_env ----------------------------------------------------------


def test_register_envs_is_idempotent() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        register_envs()
        register_envs()
    assert caught == []
    assert all(env_id in gym.registry for env_id in HERKIT_IDS)


@pytest.mark.parametrize("env_id", HERKIT_IDS)
def test_make_goal_env_herkit_ids(env_id: str) -> None:
    env = make_goal_env(env_id)
    assert is_goal_env(env)
    assert env.spec is not None and env.spec.id == env_id


def test_make_goal_env_passes_kwargs_and_module_syntax() -> None:
    env = make_goal_env("herkit.envs:herkit/BitFlip-v0", n_bits=5)
    assert isinstance(env.unwrapped, BitFlipEnv)
    assert env.unwrapped.observation_space["observation"].shape == (5,)
    # gymnasium accepts the same id.
    assert isinstance(gym.make("herkit.envs:herkit/BitFlip-v0").unwrapped, BitFlipEnv)


def test_make_goal_env_unknown_id() -> None:
    with pytest.raises(ValueError, match=r"'NoSuchEnv-v0'.*herkit/BitFlip-v0"):
        make_goal_env("NoSuchEnv-v0")
    with pytest.raises(ValueError, match=r"did you mean herkit/BitFlip-v0"):
        make_goal_env("herkit/BitFlip-v7")
    with pytest.raises(ValueError, match="no_such_module"):
        make_goal_env("no_such_module:Foo-v0")


class NeedsMissingPackage(BitFlipEnv):
    """An old version of an env, made with a package that is gone (as FetchPush-v1 needs
    mujoco-py)."""

    def __init__(self, **kwargs: Any) -> None:
        raise gym.error.DependencyNotInstalled("No module named 'old_sim'. (HINT: install it)")


def test_an_unknown_id_suggests_the_newest_version_of_what_is_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import herkit.envs.registration as registration

    for version, entry in ((1, NeedsMissingPackage), (3, BitFlipEnv)):
        monkeypatch.setitem(
            gym.registry,
            f"Gadget-v{version}",
            gym.envs.registration.EnvSpec(f"Gadget-v{version}", entry_point=entry),
        )
    monkeypatch.setattr(registration, "register_robotics_envs", lambda: True)  # installed
    with pytest.raises(ValueError) as installed:
        make_goal_env("Gadgt-v1")
    message = str(installed.value)
    assert message.startswith("unknown env id 'Gadgt-v1' (did you mean Gadget-v3?); "), message
    assert "pip install" not in message and "gymnasium-robotics adds Fetch tasks" in message
    monkeypatch.setattr(registration, "register_robotics_envs", lambda: False)  # not importable
    with pytest.raises(ValueError) as missing:
        make_goal_env("Gadget-v9")
    message = str(missing.value)
    assert message.startswith("unknown env id 'Gadget-v9' (did you mean Gadget-v3?); "), message
    assert message.endswith("and PointMaze need pip install 'herkit[robotics]'")
    with pytest.raises(ValueError) as old, warnings.catch_warnings():  # registered, but its
        warnings.simplefilter("ignore")  # package is gone (gymnasium: "out of date")
        make_goal_env("Gadget-v1")
    assert str(old.value) == (
        "cannot make 'Gadget-v1': No module named 'old_sim' (its current version is Gadget-v3)"
    )


def test_make_goal_env_rejects_non_goal_envs() -> None:
    with pytest.raises(ValueError, match="'CartPole-v1' is not a goal env"):
        make_goal_env("CartPole-v1")


def test_is_goal_env() -> None:
    assert is_goal_env(BitFlipEnv())
    assert is_goal_env(gym.make("herkit/PointReach-v0"))
    assert not is_goal_env(gym.make("CartPole-v1"))
    vector = gym.vector.SyncVectorEnv([lambda: gym.make("herkit/GridWorld-v0")] * 2)
    assert is_goal_env(vector)


def test_fetch_without_gymnasium_robotics(monkeypatch: pytest.MonkeyPatch) -> None:
    for env_id in [key for key in gym.registry if key.startswith("Fetch")]:
        monkeypatch.delitem(gym.registry, env_id)  # as if never registered (restored after)
    monkeypatch.setitem(sys.modules, "gymnasium_robotics", None)  # import fails
    for env_id in FETCH_IDS:
        with pytest.raises(ValueError, match=r"pip install 'herkit\[robotics\]'"):
            make_goal_env(env_id)


def test_fetch_reach() -> None:
    pytest.importorskip(
        "gymnasium_robotics", reason="gymnasium-robotics not installed (herkit[robotics])"
    )
    env = make_goal_env("FetchReach-v4")
    fetch: Any = env.unwrapped
    assert is_goal_env(env)
    assert env.spec is not None and env.spec.max_episode_steps == 50
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, reward, _, _, info = env.step(env.action_space.sample())
        assert "is_success" in info
        expected = fetch.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
        assert reward == expected
    env.close()
