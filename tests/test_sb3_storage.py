"""herkit.sb3's storage attributes and info dicts read as SB3's own buffer's do."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("stable_baselines3", reason="install with: bash install.sh sb3")

import stable_baselines3

from herkit.sb3 import HerReplayBuffer, InfoFieldsChosen

SPACE = gym.spaces.Dict(
    {
        key: gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
        for key in ("observation", "achieved_goal", "desired_goal")
    }
)
ACTION = gym.spaces.Box(-1, 1, (2,))
EPISODE_ARRAYS = ("dones", "timeouts", "ep_start", "ep_length", "_current_ep_start")


class NoRewardEnv:
    """A VecEnv stand-in for buffers that are filled and read: its compute_reward is minus
    the distance (the rewards stored are the ones given to ``add``)."""

    def has_attr(self, name: str) -> bool:
        return False

    def env_method(self, name: str, achieved: Any, desired: Any, infos: Any, indices: Any) -> Any:
        return [-np.abs(achieved - desired).sum(-1)]


def steps(n_envs: int, ends: list[list[int]], seed: int) -> list[tuple[Any, ...]]:
    """SB3 ``add`` arguments for a run whose env ``e`` ends its episodes as ``ends[e]``
    says: 0 goes on, 1 terminates, 2 is cut by the time limit."""
    rng = np.random.default_rng(seed)
    n_steps = len(ends[0])
    result = []
    obs = {key: rng.normal(size=(n_envs, 3)).astype(np.float32) for key in SPACE.spaces}
    for t in range(n_steps):
        nxt = {key: rng.normal(size=(n_envs, 3)).astype(np.float32) for key in SPACE.spaces}
        nxt["desired_goal"] = obs["desired_goal"].copy()
        code = np.array([ends[e][t] for e in range(n_envs)])
        infos = [{"TimeLimit.truncated": bool(c == 2), "is_success": bool(c == 1)} for c in code]
        action = rng.uniform(-1, 1, (n_envs, 2)).astype(np.float32)
        reward = rng.normal(size=n_envs).astype(np.float32)
        result.append((obs, nxt, action, reward, code > 0, infos))
        # After an end, SB3's VecEnv hands over the reset observation of a new episode.
        obs = {key: value.copy() for key, value in nxt.items()}
        fresh = rng.normal(size=(n_envs, 3)).astype(np.float32)
        for key in SPACE.spaces:
            obs[key][code > 0] = fresh[code > 0]
    return result


@settings(max_examples=40, deadline=None)
@given(
    n_envs=st.integers(1, 3),
    rows=st.integers(6, 14),
    n_steps=st.integers(1, 40),
    handle_timeouts=st.booleans(),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_storage_attributes_match_sb3s_buffer(
    n_envs: int, rows: int, n_steps: int, handle_timeouts: bool, seed: int, data: Any
) -> None:
    """Fed the same steps (episodes ending and wrapping around the ring), herkit's adapter
    shows the arrays of SB3's HerReplayBuffer, with SB3's shapes and values."""
    longest = rows // 2  # SB3's buffer cannot hold an episode longer than itself
    ends = []
    for _ in range(n_envs):
        codes = data.draw(
            st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=n_steps, max_size=n_steps)
        )
        run = 0
        for t, code in enumerate(codes):
            run = 0 if code else run + 1
            if run >= longest:
                codes[t], run = 2, 0
        ends.append(codes)
    kwargs = {"n_envs": n_envs, "handle_timeout_termination": handle_timeouts}
    theirs = stable_baselines3.HerReplayBuffer(rows * n_envs, SPACE, ACTION, None, "cpu", **kwargs)
    ours = HerReplayBuffer(rows * n_envs, SPACE, ACTION, NoRewardEnv(), "cpu", **kwargs)  # type: ignore[arg-type]
    for step in steps(n_envs, ends, seed):
        theirs.add(*step)
        ours.add(*step)
    assert (ours.buffer_size, ours.pos, ours.full) == (theirs.buffer_size, theirs.pos, theirs.full)
    for key in SPACE.spaces:
        np.testing.assert_array_equal(ours.observations[key], theirs.observations[key])
        np.testing.assert_array_equal(ours.next_observations[key], theirs.next_observations[key])
    np.testing.assert_array_equal(ours.actions, theirs.actions)
    np.testing.assert_array_equal(ours.rewards, theirs.rewards)
    for name in EPISODE_ARRAYS:
        mine, sb3 = getattr(ours, name), getattr(theirs, name)
        assert (mine.shape, mine.dtype) == (sb3.shape, sb3.dtype), name
        np.testing.assert_array_equal(mine, sb3, err_msg=name)


def test_truncating_marks_the_last_steps_as_sb3_does() -> None:
    ends = [[0, 0, 1, 0, 0], [0, 0, 0, 0, 2]]
    theirs = stable_baselines3.HerReplayBuffer(40, SPACE, ACTION, None, "cpu", n_envs=2)
    ours = HerReplayBuffer(40, SPACE, ACTION, NoRewardEnv(), "cpu", n_envs=2)  # type: ignore[arg-type]
    for step in steps(2, ends, 0):
        theirs.add(*step)
        ours.add(*step)
    for buffer in (theirs, ours):
        with pytest.warns(UserWarning, match="last trajectory in the replay buffer will be trunc"):
            buffer.truncate_last_trajectory()
    for name in EPISODE_ARRAYS:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing open: no warning, nothing changes
        ours.truncate_last_trajectory()
    np.testing.assert_array_equal(ours.dones, theirs.dones)


def test_writing_a_derived_array_says_why_it_cannot() -> None:
    ours = HerReplayBuffer(40, SPACE, ACTION, NoRewardEnv(), "cpu", n_envs=2)  # type: ignore[arg-type]
    for step in steps(2, [[0, 1, 0], [0, 0, 2]], 0):
        ours.add(*step)
    for name in EPISODE_ARRAYS:
        with pytest.raises(ValueError, match="episode table and read-only"):
            getattr(ours, name)[0] = 1
    with pytest.raises(ValueError, match="rewards are read-only"):
        ours.rewards[0, 0] = 3.0
    with pytest.raises(ValueError, match="write observations\\['desired_goal'\\]"):
        ours.next_observations["desired_goal"][0] = 0.0
    assert ours.dones.sum() == 2 and (ours.dones * 2).sum() == 4  # arithmetic still works
    ours.observations["observation"][0, 1] = 7.0  # the views of stored data are writable
    assert (ours.buffer.storage.data["observation"][1] == 7.0).all()
    with pytest.raises(AttributeError):
        ours.dones = np.zeros((20, 2))  # type: ignore[misc]


class InfoRewardEnv:
    """A VecEnv stand-in whose ``compute_reward`` reads a numeric and a nested info field,
    as SB3 hands them over: an array of info dicts."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def has_attr(self, name: str) -> bool:
        return False

    def env_method(self, name: str, achieved: Any, desired: Any, infos: Any, indices: Any) -> Any:
        self.seen.append(infos)
        return [reward_from_infos(achieved, desired, infos)]


def reward_from_infos(achieved: np.ndarray, desired: np.ndarray, infos: Any) -> np.ndarray:
    scale = np.array([info["scale"] for info in infos])
    bonus = np.array([info.get("bonus", {"value": 0.0})["value"] for info in infos])
    return -scale * np.abs(achieved - desired).sum(-1) + bonus


def info_of(env: int, t: int) -> dict[str, Any]:
    """The info of step ``t`` of env ``env``: a numeric field, a nested one every third step,
    and every seventh step without the numeric field at all."""
    info: dict[str, Any] = {
        "scale": float(1 + env + t % 4),
        "TimeLimit.truncated": False,
        "flag": bool(t % 2),
    }
    if t % 3 == 0:
        info["bonus"] = {"value": float(t)}
    if t % 7 == 6:
        del info["scale"]
        info["scale"] = np.float32(2.5)  # of another kind: the whole info is kept
    return info


def test_copy_info_dict_hands_compute_reward_every_field() -> None:
    env = InfoRewardEnv()
    kwargs = {"n_envs": 2, "copy_info_dict": True, "seed": 0}
    ours = HerReplayBuffer(400, SPACE, ACTION, env, "cpu", **kwargs)  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    with pytest.warns(InfoFieldsChosen) as notices:
        for t in range(60):
            obs = {key: rng.normal(size=(2, 3)).astype(np.float32) for key in SPACE.spaces}
            obs["observation"][:, 0] = [0, 1]  # the tag: env and step
            obs["observation"][:, 1] = t
            nxt = {key: rng.normal(size=(2, 3)).astype(np.float32) for key in SPACE.spaces}
            nxt["desired_goal"] = obs["desired_goal"]
            infos = [info_of(e, t) for e in range(2)]
            reward = reward_from_infos(nxt["achieved_goal"], obs["desired_goal"], infos)
            done = np.array([t % 10 == 9] * 2)
            ours.add(obs, nxt, rng.uniform(-1, 1, (2, 2)), reward, done, infos)
    assert len(notices) == 1
    assert "scale (float64), TimeLimit.truncated (bool), flag (bool)" in str(notices[0].message)
    assert "bonus" in str(notices[0].message)
    samples = ours.sample(512)
    obs = {key: value.numpy() for key, value in samples.observations.items()}
    nxt = {key: value.numpy() for key, value in samples.next_observations.items()}
    env_of, t_of = obs["observation"][:, 0].astype(int), obs["observation"][:, 1].astype(int)
    infos = [info_of(e, t) for e, t in zip(env_of, t_of, strict=True)]
    expected = reward_from_infos(nxt["achieved_goal"], obs["desired_goal"], infos)
    np.testing.assert_allclose(samples.rewards.numpy().ravel(), expected, rtol=1e-5)
    relabelled = env.seen[-1]  # the infos of the last compute_reward call, as SB3 passes them
    assert isinstance(relabelled, np.ndarray) and relabelled.dtype == object
    some = next(info for info in relabelled if "bonus" in info)
    assert isinstance(some["flag"], bool) and isinstance(some["scale"], float)
    assert set(some) == {"scale", "TimeLimit.truncated", "flag", "bonus"}


def test_a_step_with_the_wrong_infos_changes_nothing() -> None:
    ours = HerReplayBuffer(40, SPACE, ACTION, NoRewardEnv(), "cpu", n_envs=2, copy_info_dict=True)  # type: ignore[arg-type]
    good = steps(2, [[0, 0], [0, 0]], 0)
    with pytest.warns(InfoFieldsChosen):
        ours.add(*good[0])
    before = {key: value.copy() for key, value in ours.buffer.storage.data.items()}
    extras = ours._infos.extras.copy()  # type: ignore[union-attr]
    obs, nxt, action, reward, done, infos = good[1]
    with pytest.raises(ValueError, match="one dict per env"):
        ours.add(obs, nxt, action, reward, done, infos[:1])
    with pytest.raises(ValueError, match="action"):
        ours.add(obs, nxt, action[:, :1], reward, done, infos)
    for key, value in before.items():
        np.testing.assert_array_equal(ours.buffer.storage.data[key], value)
    assert all(a is b for a, b in zip(ours._infos.extras, extras, strict=True))  # type: ignore[union-attr]
    assert ours.pos == 1
    ours.add(*good[1])
    assert ours.pos == 2
