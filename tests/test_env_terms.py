"""What the env said survives relabelling: reward terms that compute_reward lacks (a
penalty), terminations for another reason than the goal (a crash), and the env's own
success test for relabelled goals (see herkit.buffer.env_terms)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit import HerReplayBuffer
from herkit.buffer import conventions as conventions_module
from herkit.buffer.conventions import GoalConventions
from herkit.buffer.env_terms import RewardAudit
from herkit.config.train import TrainConfig
from herkit.envs.point_reach import PointReachEnv
from herkit.rundir.paths import RunPaths
from herkit.training.loop import train
from runs import QUIET
from tagged import (
    DEVICES,
    STRATEGY_NAMES,
    TaggedRun,
    crashed,
    expected_env_terms,
    host,
    penalty,
    tag_reward,
    torch_tag_reward,
    with_needs,
)


def tagged_buffer(capacity: int, n_envs: int, device: str | None, **kwargs: Any) -> HerReplayBuffer:
    return HerReplayBuffer(
        capacity,
        observation_shape=3,
        goal_shape=3,
        action_shape=1,
        reward_fn=tag_reward,
        n_envs=n_envs,
        device=device,
        torch_reward_fn=torch_tag_reward if device is not None else None,
        **with_needs(kwargs),
    )


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    n_envs=st.integers(1, 3),
    strategy=st.sampled_from(STRATEGY_NAMES),
    mode=st.sampled_from(["sample", "store", "mix"]),
    terminal_on_success=st.booleans(),
    keep_env_terms=st.booleans(),
    prioritized=st.booleans(),
    capacity=st.sampled_from([30, 300]),
    device=st.sampled_from(DEVICES),
)
def test_penalties_and_crashes_survive_every_strategy_and_mode(
    lengths: list[int],
    n_envs: int,
    strategy: str,
    mode: str,
    terminal_on_success: bool,
    keep_env_terms: bool,
    prioritized: bool,
    capacity: int,
    device: str | None,
) -> None:
    """Every sample's reward and terminal flag, checked against an explicit computation
    from the tags: its own goal gets what the env gave; a relabelled goal gets its
    compute_reward plus the step's penalty (``keep_env_terms=False``: without it), and is
    terminal after a crash or, where episodes end on success, when it is reached."""
    if mode == "mix" and terminal_on_success:
        # a "desired" draw may give a step its own goal back, which the tagged env (whose
        # goals are never reached) reports reached at a success ending: no consistent env
        terminal_on_success = False
    if mode == "mix":
        # such a draw is a relabelled sample (compute_reward alone without keep_env_terms),
        # which the tags cannot tell from a sample that kept its own goal
        keep_env_terms = True
    buffer = tagged_buffer(
        capacity,
        n_envs,
        device,
        strategy=strategy,
        relabel="store" if mode == "store" else "sample",
        goal_mix=(1, 2, 2) if mode == "mix" else None,
        prioritized=prioritized,
        terminal_on_success=terminal_on_success,
        keep_env_terms=keep_env_terms,
        seed=3,
    )
    run = TaggedRun(buffer, env_terms=True)
    run.feed([lengths] * n_envs, steps=2 * sum(lengths) + 1)
    if len(buffer) == 0:
        return
    batch = host(buffer.sample(400))
    reward, terminal = expected_env_terms(run, batch, terminal_on_success, keep_env_terms)
    np.testing.assert_allclose(batch.reward, reward, atol=1e-6)
    np.testing.assert_array_equal(batch.terminated, terminal)
    uid, env = batch.observation[:, 0].astype(int), batch.observation[:, 2].astype(int)
    own_goal = np.stack([-1 - uid, np.zeros_like(uid), env], axis=1)
    relabelled = np.any(batch.goal != own_goal, axis=1)
    if strategy == "none" and mode != "mix":
        assert not relabelled.any()


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    n_envs=st.integers(1, 3),
    n_step=st.integers(2, 4),
    strategy=st.sampled_from(["future", "episode", "random"]),
    relabel=st.sampled_from(["sample", "store"]),
    terminal_on_success=st.booleans(),
    device=st.sampled_from(DEVICES),
)
def test_n_step_returns_keep_each_steps_penalty_and_stop_at_a_crash(
    lengths: list[int],
    n_envs: int,
    n_step: int,
    strategy: str,
    relabel: str,
    terminal_on_success: bool,
    device: str | None,
) -> None:
    gamma = 0.9
    buffer = tagged_buffer(
        80,
        n_envs,
        device,
        strategy=strategy,
        relabel=relabel,
        n_step=n_step,
        gamma=gamma,
        terminal_on_success=terminal_on_success,
        seed=2,
    )
    run = TaggedRun(buffer, env_terms=True)
    run.feed([lengths] * n_envs, steps=sum(lengths) + 2)
    if len(buffer) == 0:
        return
    batch = host(buffer.sample(200))
    for i in range(len(batch)):
        uid, t0, env = (int(v) for v in batch.observation[i])
        episode = run.episodes[uid]
        relabelled = batch.goal[i, 0] >= 0
        reward, m, terminal = 0.0, 0, False
        for j in range(n_step):
            t = t0 + j
            if t >= episode.length:
                break
            reached = relabelled and np.array_equal(batch.goal[i], [uid, t, env])
            reward += gamma**j * ((0.0 if reached else -1.0) + float(penalty(uid, t)))
            m += 1
            ended = episode.closed and t == episode.length - 1 and uid % 2 == 1
            if relabelled and terminal_on_success:
                terminal = (ended and bool(crashed(uid))) or reached
            else:
                terminal = ended
            if terminal:
                break
        assert batch.reward[i] == pytest.approx(reward, abs=1e-4), i
        assert batch.discount[i] == pytest.approx(gamma**m), i
        assert batch.terminated[i] == float(terminal), i


def dense_reward(achieved: np.ndarray, desired: np.ndarray, info: object) -> np.ndarray:
    return -np.linalg.norm(np.asarray(achieved) - np.asarray(desired), axis=-1)


def feed_dense(
    buffer: HerReplayBuffer, rng: np.random.Generator, episodes: int, radius: float
) -> dict[str, np.ndarray]:
    """Random-walk episodes in 2-D with a -distance reward, a -2 penalty and a crash where
    the walker leaves the unit box, success (and the end) within ``radius`` of the goal.
    The observation holds the row written; returns every row's records."""
    keys = ("desired", "next", "reward", "term", "success", "crash")
    rows: dict[str, list[Any]] = {key: [] for key in keys}
    row = 0
    for _ in range(episodes):
        position, goal = rng.uniform(-0.8, 0.8, 2), rng.uniform(-0.8, 0.8, 2)
        for _ in range(12):
            moved = position + rng.normal(0, 0.3, 2)
            distance = float(np.linalg.norm(moved - goal))
            crash = bool(np.any(np.abs(moved) > 1))
            success = distance < radius
            reward = -distance - 2.0 * crash
            terminated = crash or success
            obs = {"observation": [row, 0.0], "achieved_goal": position, "desired_goal": goal}
            nxt = {"observation": [row, 1.0], "achieved_goal": moved, "desired_goal": goal}
            buffer.add(obs, [0.0], nxt, terminated, False, reward=reward, success=success)
            values = (goal, moved, reward, terminated, success, crash)
            for key, value in zip(keys, values, strict=True):
                rows[key].append(value)
            row += 1
            position = moved
            if terminated:
                break
        else:
            buffer.end_episodes()
    return {key: np.asarray(value) for key, value in rows.items()}


@pytest.mark.parametrize("declared", [True, False])
def test_dense_reward_relabelled_goals_use_the_envs_success_test(declared: bool) -> None:
    """A -distance reward: a relabelled goal is reached (and terminal) within the env's
    success radius, declared or learned from the env's success flags; crashes stay
    terminal and keep their penalty for every goal."""
    radius = 0.4
    buffer = HerReplayBuffer(
        5_000,
        observation_shape=2,
        goal_shape=2,
        action_shape=1,
        reward_fn=dense_reward,
        terminal_on_success=True,
        success_threshold=-radius if declared else None,
        seed=0,
    )
    records = feed_dense(buffer, np.random.default_rng(0), episodes=300, radius=radius)
    threshold = buffer.reached_threshold()
    assert threshold is not None
    if declared:
        assert threshold == -radius and "declared" in buffer.success_rule()
    else:  # the smallest reward of a reported success: just above -radius
        assert -radius < threshold < -radius + 0.02 and "learned" in buffer.success_rule()
    batch = buffer.sample(4_000)
    row = batch.observation[:, 0].astype(int)
    own = np.all(batch.goal == records["desired"][row], axis=1)
    goal_reward = dense_reward(records["next"][row], batch.goal, None)
    penalised = records["crash"][row]
    # a step that ended in the goal counts as a success, even if it also hit a wall
    crash = records["term"][row] & ~records["success"][row]
    expected_reward = np.where(own, records["reward"][row], goal_reward - 2.0 * penalised)
    expected_terminal = np.where(own, records["term"][row], crash | (goal_reward >= threshold))
    np.testing.assert_allclose(batch.reward, expected_reward, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(batch.terminated, expected_terminal.astype(np.float32))
    assert (~own & expected_terminal & ~crash).any() and (~own & crash).any()
    audit = buffer.audit
    assert audit.differing == int(records["crash"].sum()) > 0
    assert audit.extra_low == pytest.approx(-2.0) and audit.extra_high == 0.0


def test_the_audit_counts_every_step_and_learns_only_a_separating_threshold() -> None:
    audit = RewardAudit()
    goal = np.array([-1.0, 0.0, -1.0])
    extra = audit.observe(goal + np.array([0.0, 0.0, -5.0]), goal, np.array([False, True, False]))
    np.testing.assert_array_equal(extra, np.array([0.0, 0.0, -5.0], np.float32))
    assert (audit.steps, audit.differing, audit.first_differing_step) == (3, 1, 2)
    assert audit.learned_threshold() == 0.0  # -1/0: reached means 0
    audit.observe(goal, goal + 1e-9, np.array([False, False, False]))  # within tolerance
    assert audit.differing == 1 and audit.steps == 6
    audit.observe(np.array([0.5]), np.array([0.5]), np.array([False]))  # a failure above
    assert audit.learned_threshold() is None  # success is not a threshold on the reward
    assert RewardAudit.from_dict(json.loads(json.dumps(audit.to_dict()))) == audit
    assert "at 1 of 7 steps" in audit.describe() and "adds the difference" in audit.describe()


def test_env_rewards_and_the_audit_survive_save_and_load(tmp_path: Path) -> None:
    buffer = tagged_buffer(100, 2, None, seed=0)
    TaggedRun(buffer, env_terms=True).feed([[4, 6]] * 2)
    buffer.save(tmp_path / "b.npz")
    loaded = HerReplayBuffer.load(tmp_path / "b.npz", tag_reward)
    assert loaded.audit == buffer.audit and loaded.audit.differing > 0
    np.testing.assert_array_equal(loaded.sample(64).reward, buffer.sample(64).reward)


def test_a_buffer_file_of_the_previous_format_loads_with_compute_reward(tmp_path: Path) -> None:
    """Files written before the env's rewards were kept hold no reward columns: they load
    with compute_reward's rewards (what sampling gave them then)."""
    buffer = tagged_buffer(100, 1, None, seed=0)
    TaggedRun(buffer).feed([[4, 6]])
    buffer.save(tmp_path / "b.npz")
    with np.load(tmp_path / "b.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["format"] = 1
    del meta["audit"], meta["config"]["success_threshold"]
    for name in ("data.reward", "data.reward_extra", "data.success"):
        del arrays[name]
    np.savez(tmp_path / "old.npz", meta=np.array(json.dumps(meta)), **arrays)  # type: ignore[arg-type]
    loaded = HerReplayBuffer.load(tmp_path / "old.npz", tag_reward)
    np.testing.assert_array_equal(loaded.sample(64).reward, buffer.sample(64).reward)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"reward": np.zeros(3)}, r"reward must have shape \(2,\)"),
        ({"reward": np.array([0.0, np.nan])}, "reward holds 1 non-finite value .* in env 1"),
        ({"reward": np.array(["a", "b"])}, "reward must be numeric"),
        ({"success": np.zeros(3)}, r"success must have shape \(2,\)"),
    ],
)
def test_bad_env_rewards_are_refused_and_nothing_is_stored(
    changes: dict[str, Any], match: str
) -> None:
    buffer = tagged_buffer(100, 2, None)
    goal = np.zeros((2, 3), np.float32)
    obs = {"observation": goal, "achieved_goal": goal, "desired_goal": goal}
    step = {
        "obs": obs,
        "action": np.zeros((2, 1)),
        "next_obs": obs,
        "terminated": np.zeros(2, bool),
        "truncated": np.zeros(2, bool),
    }
    with pytest.raises(ValueError, match=match):
        buffer.add(**step, **changes)
    assert buffer.storage.rows_written == 0 and buffer.audit.steps == 0
    with pytest.raises(ValueError, match="success_threshold must be a finite number"):
        tagged_buffer(100, 1, None, success_threshold=float("nan"))


class CrashReachEnv(PointReachEnv):
    """PointReach with walls: touching one costs -5 on top of compute_reward and ends the
    episode (a crash); reaching the goal ends it too. compute_reward knows nothing of it."""

    terminates_on_success = True

    def step(self, action: Any) -> Any:
        obs, reward, _, truncated, info = super().step(action)
        crash = bool(np.any(np.abs(obs["achieved_goal"]) >= 0.95))
        info["crashed"] = crash
        return obs, reward - 5.0 * crash, crash or bool(info["is_success"]), truncated, info


if "test/CrashReach-v0" not in gym.registry:
    gym.register("test/CrashReach-v0", entry_point=CrashReachEnv, max_episode_steps=50)


@pytest.mark.slow("training runs")
@pytest.mark.parametrize("probe_steps", [200, 1])
def test_training_reports_the_envs_extra_terms_once_and_records_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    probe_steps: int,
) -> None:
    """The probe's random steps may see a crash (then it says so, and widens the reward
    range) or not (then training says so at the first one, and that Q targets are
    clipped to a range the env's rewards leave); config.json counts every step."""
    real_probe = conventions_module.probe_conventions

    def probe(*args: Any, **kwargs: Any) -> GoalConventions:
        return real_probe(*args, **{**kwargs, "steps": probe_steps})

    monkeypatch.setattr("herkit.config.probe.probe_conventions", probe)
    train(
        TrainConfig(
            "test/CrashReach-v0",
            algo="ddpg",
            steps=1_500,
            warmup_steps=200,
            eval_every=1_500,
            eval_episodes=2,
            out=str(tmp_path / "run"),
            **QUIET,
        )
    )
    said = capsys.readouterr()
    text = said.out + said.err
    assert text.count("herkit keeps the env's reward for each step's own goal") == 1
    if probe_steps == 200:  # the probe saw a crash: the range holds the penalty
        assert "rewards [-6, 0]" in text and "outside the range" not in text
    else:
        assert "steps so far (first at step" in text
        assert text.count("outside the range [-1, 0] that Q targets are clipped to") == 1
    saved = json.loads(RunPaths(tmp_path / "run").config.read_text())
    terms = saved["conventions"]["env_terms"]
    assert terms["steps"] == 1_500 and 0 < terms["differing"] < 1_500
    assert terms["extra_low"] == -5.0 and terms["extra_high"] == 0.0
    assert terms["learned_success_threshold"] == 0.0 or terms["successes"] == 0
    assert terms["success_rule"].startswith("reward_fn")
