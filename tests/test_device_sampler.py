"""Sampling on the buffer's device with no host step (:class:`DeviceSampler`): every goal
traced back to its episode and step with the tagged-episode simulator, the env's reward
terms and flags kept, the same distribution as the host's sampler, and the bookkeeping
copy following adds, wrap-arounds and a restore. On CPU tensors here, CUDA where present."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit import Batch, HerReplayBuffer
from herkit.buffer.device_sampler import DeviceSampler, uniform_of, unsupported
from herkit.buffer.rules import ON_A_DEVICE
from herkit.buffer.settings import HerSettings
from tagged import TaggedRun, expected_env_terms, host, tag_reward, torch_tag_reward
from test_her_relabel import STRATEGIES, check_batch, make_buffer

TORCH_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def drawn(sampler: DeviceSampler, n: int, seed: int = 0) -> Batch:
    """A draw as a host :class:`Batch` (achieved goals from the tags of its observations)."""
    generator = torch.Generator(device=sampler.device)
    generator.manual_seed(seed)
    flags = sampler.prepare()
    got = sampler.draw(n, uniform_of(generator), **flags)
    assert got.weights is None and got.indices is None  # drawn uniformly
    assert got.achieved_goal is None  # no agent reads it: not drawn
    host = got.to_torch("cpu")
    obs, next_obs, goal, action, reward, terminated = (
        getattr(host, name).numpy()
        for name in ("observation", "next_observation", "goal", "action", "reward", "terminated")
    )
    return Batch(obs, action, reward, next_obs, goal, obs - [0, 1, 0], obs, terminated)


episode_lists = st.lists(st.integers(1, 12), min_size=1, max_size=15)


@settings(max_examples=40, deadline=None)
@given(
    strategy=st.sampled_from(STRATEGIES),
    n_envs=st.integers(1, 4),
    k=st.integers(1, 5),
    rows=st.integers(12, 30),
    lengths=st.lists(episode_lists, min_size=4, max_size=4),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(TORCH_DEVICES),
)
def test_drawn_goals_come_from_the_right_episode_and_steps(
    strategy: str,
    n_envs: int,
    k: int,
    rows: int,
    lengths: list[list[int]],
    seed: int,
    device: str,
) -> None:
    """Random episode lengths, several envs, many wrap-arounds of a small ring, open
    episodes sampled too; the device's copy of the bookkeeping follows every add."""
    buffer = make_buffer(rows * n_envs, n_envs, device, strategy=strategy, k=k, seed=seed)
    sampler = DeviceSampler(buffer)
    run = TaggedRun(buffer)
    for round_ in range(3):
        run.feed([ls * (round_ + 1) for ls in lengths[:n_envs]], end_open=round_ == 2)
        check_batch(run, strategy, "sample", batch=drawn(sampler, 512, seed + round_))


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    n_envs=st.integers(1, 3),
    strategy=st.sampled_from(STRATEGIES),
    mix=st.booleans(),
    terminal_on_success=st.booleans(),
    capacity=st.sampled_from([30, 300]),
    device=st.sampled_from(TORCH_DEVICES),
)
def test_drawn_rewards_and_flags_keep_the_envs_terms(
    lengths: list[int],
    n_envs: int,
    strategy: str,
    mix: bool,
    terminal_on_success: bool,
    capacity: int,
    device: str,
) -> None:
    """A sample's own goal gets what the env gave; a relabelled one its compute_reward
    plus the step's penalty, terminal after a crash or, where episodes end on success,
    when it is reached (the host's rules, tests/test_env_terms.py)."""
    terminal_on_success &= not mix  # a desired goal can be the step's own: see test_env_terms
    buffer = make_buffer(
        capacity,
        n_envs,
        device,
        strategy=strategy,
        goal_mix=(1, 2, 2) if mix else None,
        terminal_on_success=terminal_on_success,
        seed=3,
    )
    run = TaggedRun(buffer, env_terms=True)
    run.feed([lengths] * n_envs, steps=2 * sum(lengths) + 1)
    batch = drawn(DeviceSampler(buffer), 400)
    reward, terminal = expected_env_terms(run, batch, terminal_on_success)
    np.testing.assert_allclose(batch.reward, reward, atol=1e-6)
    np.testing.assert_array_equal(batch.terminated, terminal)


class Numbers:
    """One stream of uniform numbers, for the host (as a numpy Generator's ``random``) and
    for a draw on the device (as ``uniform(n)`` tensors)."""

    def __init__(self, seed: int) -> None:
        self.values, self.used = np.random.default_rng(seed).random(1 << 16), 0

    def random(self, n: int) -> np.ndarray:
        self.used += n
        return self.values[self.used - n : self.used]

    def tensors(self, n: int) -> torch.Tensor:
        return torch.from_numpy(self.random(n).copy())


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=8), min_size=3, max_size=3),
    n_envs=st.integers(1, 3),
    strategy=st.sampled_from(STRATEGIES),
    mix=st.sampled_from([None, (1, 2, 2), (0, 1, 0), (1, 1, 0), (1, 4, 4, 1), (0, 1, 0, 1)]),
    warmup=st.sampled_from([0, 40]),
    terminal_on_success=st.booleans(),
    keep_env_terms=st.booleans(),
    threshold=st.sampled_from([None, -0.5]),
    prioritized=st.booleans(),
    capacity=st.sampled_from([60, 300]),  # 20 rows per env at least
    seed=st.integers(0, 2**16),
)
def test_given_the_same_numbers_the_device_draws_the_hosts_batch(
    lengths: list[list[int]],
    n_envs: int,
    strategy: str,
    mix: Any,
    warmup: int,
    terminal_on_success: bool,
    keep_env_terms: bool,
    threshold: float | None,
    prioritized: bool,
    capacity: int,
    seed: int,
) -> None:
    """The buffer's rules are one code: on the host's numpy bookkeeping and on the device's
    copy, with the same random numbers, every field of the batch is the same (every
    strategy and goal mix, the env's terms and flags, the reached rule, draws by priority,
    wrap-arounds and open episodes)."""
    buffer = make_buffer(
        capacity,
        n_envs,
        "cpu",
        strategy=strategy,
        goal_mix=mix,
        goal_mix_warmup=warmup if mix else 0,
        terminal_on_success=terminal_on_success,
        keep_env_terms=keep_env_terms,
        success_threshold=threshold,
        prioritized=prioritized,
        seed=3,
    )
    sampler = DeviceSampler(buffer)
    run = TaggedRun(buffer, env_terms=True)
    for round_ in range(2):
        run.feed([ls * (round_ + 1) for ls in lengths[:n_envs]], end_open=round_ == 1)
        assert_same_draws(buffer, sampler, seed + round_)


def assert_same_draws(buffer: HerReplayBuffer, sampler: DeviceSampler, seed: int) -> None:
    """The host's sample and the device's draw with the same uniform numbers are equal,
    field by field; by priority, the new priorities an update gives are set alike."""
    flags = sampler.prepare()
    rng = buffer.rng
    buffer.rng = Numbers(seed)  # type: ignore[assignment]
    on_host = host(buffer.sample(200))
    buffer.rng = rng
    got = sampler.draw(200, Numbers(seed).tensors, **flags)
    on_device = {name: value.numpy() for name, value in got.__dict__.items() if value is not None}
    on_device["indices"] = on_device.pop("slots", None)
    assert (on_host.actor_goal is None) == ("actor_goal" not in on_device)
    for name, value in on_device.items():
        if name == "weights":  # numpy's and torch's powers may differ in the last bit
            np.testing.assert_allclose(value, on_host.weights, rtol=1e-6)
        elif value is not None:
            np.testing.assert_array_equal(value, getattr(on_host, name), err_msg=name)
    if buffer.settings.prioritized:  # new priorities, as an update gives them, alike
        td = np.random.default_rng(seed).exponential(size=200)
        buffer.update_priorities(on_host.indices, td)
        sampler.reprioritize(torch.from_numpy(on_host.indices), torch.from_numpy(td))
        np.testing.assert_allclose(
            sampler.priorities.tree.leaves.numpy(), buffer.sampler.tree.leaves, rtol=1e-12
        )


NON_DEFAULT: dict[str, dict[str, Any]] = {
    "strategy": {"strategy": "episode"},
    "k": {"k": 2},
    "relabel": {"relabel": "store"},
    "goal_mix": {"goal_mix": (1, 2, 2)},
    "goal_mix_warmup": {"goal_mix": (1, 2, 2), "goal_mix_warmup": 40},
    "n_step": {"n_step": 3, "gamma": 0.9},
    "gamma": {"gamma": 0.9},
    "prioritized": {"prioritized": True},
    "alpha": {"prioritized": True, "alpha": 0.9},
    "beta": {"prioritized": True, "beta": 0.8},
    "eps": {"prioritized": True, "eps": 0.01},
    "terminal_on_success": {"terminal_on_success": True},
    "keep_env_terms": {"keep_env_terms": False},
    "success_threshold": {"success_threshold": -0.5},
    "info_keys": {"info_keys": ("step",)},
    "value_goals": {"value_goals": (0.2, 0.5, 0.3), "gamma": 0.9},
    "value_future": {"value_goals": (0.2, 0.5, 0.3), "value_future": "uniform"},
    "actor_goals": {"actor_goals": (0.1, 0.6, 0.3), "gamma": 0.9},
    "actor_future": {"actor_goals": (0.1, 0.6, 0.3), "actor_future": "geometric", "gamma": 0.9},
    "subgoal_steps": {"actor_goals": (0.1, 0.6, 0.3), "subgoal_steps": 3, "gamma": 0.9},
    "gc_negative": {"value_goals": (0.3, 0.4, 0.3), "gamma": 0.9, "gc_negative": False},
}
"""Every HER setting at a value other than its default (with the settings it needs)."""


@pytest.mark.parametrize("name", sorted(NON_DEFAULT))
def test_every_her_setting_is_drawn_on_the_device_as_on_the_host_or_refused_by_name(
    name: str,
) -> None:
    """Walks every field of HerSettings: a draw on the device serves it (the host's batch,
    given the same numbers) or refuses it, naming why (``ON_A_DEVICE``)."""
    assert set(NON_DEFAULT) == set(HerSettings.names()) == set(ON_A_DEVICE)
    changes = NON_DEFAULT[name]
    assert getattr(HerSettings(**changes), name) != getattr(HerSettings(), name)
    buffer = make_buffer(120, 2, "cpu", seed=3, **changes)
    why = ON_A_DEVICE[name]
    if why is not None:
        assert unsupported(buffer) == why
        with pytest.raises(ValueError, match=f"cannot sample on its device: {why}"):
            DeviceSampler(buffer)
        return
    assert unsupported(buffer) is None
    sampler = DeviceSampler(buffer)
    run = TaggedRun(buffer, env_terms=True)
    for round_, lengths in enumerate([[[3, 7], [5]], [[9, 2], [4, 6]]]):
        run.feed(lengths, end_open=round_ == 1, steps=40)
        assert_same_draws(buffer, sampler, 11 + round_)


def test_a_recorded_dataset_with_steps_after_it_draws_on_the_device_as_on_the_host() -> None:
    """OGBench's value and actor goals over a dataset held once and a ring after it."""
    episodes = [7, 12, 3, 9]
    states = np.concatenate(
        [np.stack([np.full(n, e), np.arange(n), np.zeros(n)], 1) for e, n in enumerate(episodes)]
    ).astype(np.float32)
    terminals = np.zeros(len(states), bool)
    terminals[np.cumsum(episodes) - 1] = True
    data = {"observations": states, "actions": states[:, :1], "terminals": terminals}
    buffer = HerReplayBuffer.from_dataset(
        data,
        tag_reward,
        room=40,
        device="cpu",
        torch_reward_fn=torch_tag_reward,
        value_goals=(0.2, 0.5, 0.3),
        actor_goals=(0, 1, 0),
        gamma=0.9,
        seed=2,
    )
    sampler = DeviceSampler(buffer)
    assert_same_draws(buffer, sampler, 5)  # the dataset alone
    TaggedRun(buffer, next_offset=(0.0, 1.0, 0.0)).feed([[4, 6]], steps=57)  # wraps its ring
    assert_same_draws(buffer, sampler, 6)
    drawn = sampler.draw(4000, Numbers(7).tensors, **sampler.prepare())
    assert drawn.actor_goal is not None
    observation = drawn.observation.numpy()
    assert {0.0, 1.0, 2.0, 3.0} <= set(np.unique(observation[:, 0]))  # recorded episodes
    assert (observation[:, 0] > 3).any()  # and steps added after them


def test_the_goal_mix_draws_real_future_and_desired_goals_in_its_proportions() -> None:
    buffer = make_buffer(900, 3, "cpu", goal_mix=(1, 2, 2), goal_mix_warmup=0, seed=5)
    run = TaggedRun(buffer)
    run.feed([[6, 10, 14]] * 3, steps=250)
    batch = drawn(DeviceSampler(buffer), 30_000)
    uid, step = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    own = (batch.goal[:, 0] == -1 - uid) & (batch.goal[:, 1] == 0)
    future = batch.goal[:, 0] == uid
    desired = ~own & ~future
    assert np.all(batch.goal[future, 1] >= step[future])
    other = -1 - batch.goal[desired, 0].astype(int)  # a desired goal's episode
    assert all(run.sampleable(int(u), closed_only=False) for u in np.unique(other))
    # 1 : 2 : 2, though a desired draw of the sample's own episode counts as its own goal
    assert abs(future.mean() - 0.4) < 0.015 and abs(own.mean() - 0.2) < 0.02


def test_the_goal_mix_draws_achieved_goals_of_any_stored_transition() -> None:
    """mrl's protoge mix on the device: real 0.1, future 0.4, desired 0.4, achieved 0.1,
    the achieved goals those after the action of a transition drawn from the whole buffer."""
    buffer = make_buffer(900, 3, "cpu", goal_mix=(1, 4, 4, 1), seed=5)
    run = TaggedRun(buffer)
    run.feed([[6, 10, 14]] * 3, steps=250)
    batch = drawn(DeviceSampler(buffer), 40_000)
    uid, step = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    goal_uid, goal_step = batch.goal[:, 0].astype(int), batch.goal[:, 1].astype(int)
    achieved = (goal_uid >= 0) & ((goal_uid != uid) | (goal_step < step))  # not a future one
    assert all(run.sampleable(int(u), closed_only=False) for u in np.unique(goal_uid[achieved]))
    assert np.all(goal_step[achieved] < [run.episodes[u].length for u in goal_uid[achieved]])
    envs = [run.episodes[int(u)].env for u in goal_uid[achieved]]
    np.testing.assert_array_equal(batch.goal[achieved, 2], envs)  # of that episode's env
    # 0.1 less the few drawn from the sample's own episode at or after its step
    assert 0.085 < achieved.mean() < 0.105
    assert abs((goal_uid < 0).mean() - 0.5) < 0.02  # real 0.1 and desired 0.4


def test_the_goal_mix_waits_for_its_warm_up() -> None:
    buffer = make_buffer(900, 1, "cpu", goal_mix=(1, 0, 4), goal_mix_warmup=10_000, seed=5)
    TaggedRun(buffer).feed([[8]], steps=80)
    batch = drawn(DeviceSampler(buffer), 2_000)
    assert np.all(batch.goal[:, 0] == batch.observation[:, 0])  # future goals only


def test_a_restored_buffer_is_copied_to_the_device_whole(tmp_path: Path) -> None:
    buffer = make_buffer(60, 2, "cpu", seed=1)
    run = TaggedRun(buffer)
    run.feed([[5, 7], [9]], steps=40)
    buffer.save(tmp_path / "buffer.npz")
    saved = copy.deepcopy(run.episodes), run.rows_written
    sampler = DeviceSampler(buffer)
    drawn(sampler, 64)
    restored = HerReplayBuffer.load(
        tmp_path / "buffer.npz",
        buffer.reward_fn,
        device="cpu",
        torch_reward_fn=buffer.torch_reward_fn,
    )
    run.buffer = restored
    follower = DeviceSampler(restored)
    check_batch(run, "future", "sample", batch=drawn(follower, 512))
    for _ in range(3):  # then wraps around, followed step by step
        run.feed([[3], [4]], steps=11)
        check_batch(run, "future", "sample", batch=drawn(follower, 512))
    restored.storage.restore(*buffer.storage.state())  # back to the saved state, under it
    run.episodes, run.rows_written = saved
    check_batch(run, "future", "sample", batch=drawn(follower, 512))


def test_the_bookkeeping_is_copied_again_only_when_it_or_the_ending_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the buffer does not know yet whether a reached goal ends an episode, a
    prepare with nothing added copies nothing; the ending decided, the next one does."""
    from herkit.buffer.ending import Ending

    buffer = make_buffer(60, 2, "cpu", seed=1)
    TaggedRun(buffer).feed([[5, 7], [9]], steps=20)
    assert buffer.terminal_on_success is None
    sampler = DeviceSampler(buffer)
    copies = 0
    take_changes = buffer.storage.take_changes

    def counted() -> np.ndarray | None:
        nonlocal copies
        copies += 1
        return take_changes()

    monkeypatch.setattr(buffer.storage, "take_changes", counted)
    assert sampler.prepare()["terminal_on_success"] is False and copies == 1
    sampler.prepare()
    assert copies == 1  # nothing added, the ending still unknown
    buffer.set_ending(Ending.given(True))
    assert sampler.prepare()["terminal_on_success"] is True and copies == 2
    sampler.prepare()
    assert copies == 2
    TaggedRun(buffer).feed([[3], [4]], steps=1)
    sampler.prepare()
    assert copies == 3  # a step added


def test_what_cannot_be_drawn_on_the_device_says_why() -> None:
    assert unsupported(make_buffer(60, 1, None)) == "its data is on the host"
    assert unsupported(make_buffer(60, 1, "cpu", prioritized=True)) is None
    assert unsupported(make_buffer(60, 1, "cpu", relabel="store")) == "store-time relabelling"
    assert unsupported(make_buffer(60, 1, "cpu", n_step=3, gamma=0.9)) == "n-step returns"
    assert unsupported(make_buffer(60, 1, "cpu")) is None
    with pytest.raises(ValueError, match="cannot sample on its device: n-step returns"):
        DeviceSampler(make_buffer(60, 1, "cpu", n_step=3, gamma=0.9))
    with pytest.raises(ValueError, match="empty buffer"):
        DeviceSampler(make_buffer(60, 1, "cpu")).prepare()


# --- drawn within the update -------------------------------------------------------------


def random_buffer(algo: str, **kwargs: object) -> HerReplayBuffer:
    """A buffer on CPU tensors for the agents of ``test_agents`` (``algo``'s actions), with
    120 steps of random observations of 2 envs, episodes of 10 steps."""
    buffer = HerReplayBuffer(
        2_000,
        observation_shape=6,
        goal_shape=3,
        action_shape=() if algo == "dqn" else 2,
        action_dtype=np.int64 if algo == "dqn" else np.float32,
        reward_fn=tag_reward,
        torch_reward_fn=torch_tag_reward,
        device="cpu",
        n_envs=2,
        seed=4,
        **kwargs,  # type: ignore[arg-type]
    )
    rng = np.random.default_rng(0)
    for t in range(120):
        obs = {
            key: rng.normal(size=(2, 6 if key == "observation" else 3)).astype(np.float32)
            for key in ("observation", "achieved_goal", "desired_goal")
        }
        action = rng.integers(4, size=2) if algo == "dqn" else rng.uniform(-1, 1, (2, 2))
        buffer.add(obs, action, obs, np.zeros(2, bool), np.full(2, t % 10 == 9))
    return buffer


@pytest.mark.parametrize("algo", ["dqn", "ddpg"])  # their updates draw no random numbers
def test_an_update_drawn_within_the_step_equals_one_on_the_same_batch(algo: str) -> None:
    from test_update_modes import no_host_reads

    from test_agents import agent_for, parameters

    sampler = DeviceSampler(random_buffer(algo))
    drawing, given = agent_for(algo, seed=2), agent_for(algo, seed=2)
    drawing.attach_sampler(sampler.draw, 64)
    for agent in (drawing, given):
        agent.log_updates()
    for _ in range(3):
        twin = torch.Generator()
        twin.set_state(drawing.generator.get_state())
        flags = sampler.prepare()
        got = sampler.draw(64, uniform_of(twin), **flags)
        obs, next_obs, goal = got.observation, got.next_observation, got.goal
        action, reward, terminated = got.action, got.reward, got.terminated
        batch = Batch(obs, action, reward, next_obs, goal, goal, goal, terminated)
        with no_host_reads():
            drawing.update_drawn(flags, count_goals=True)
        given.update(batch, count_goals=True)
        given.generator.set_state(drawing.generator.get_state())
    for (name, a), b in zip(parameters(drawing).items(), parameters(given).values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=name)
    drawn_rows, given_rows = drawing.update_metrics(), given.update_metrics()
    assert [row.keys() for row in drawn_rows] == [row.keys() for row in given_rows]
    for drawn_row, given_row in zip(drawn_rows, given_rows, strict=True):
        assert drawn_row == pytest.approx(given_row)  # approx takes one flat dict


@pytest.mark.slow("a training run")
def test_a_run_that_draws_on_the_device_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's drawn path end to end (on CPU tensors; on a GPU captured runs take it)."""
    import herkit.training.learner
    from herkit.rundir.paths import RunPaths
    from herkit.training.loop import train
    from runs import quiet

    prepared: list[int] = []
    prepare = DeviceSampler.prepare

    def counted(self: DeviceSampler) -> dict:
        prepared.append(1)
        return prepare(self)

    monkeypatch.setattr(DeviceSampler, "prepare", counted)
    monkeypatch.setattr(herkit.training.learner, "draws_on_device", lambda agent, buffer: True)
    config = quiet(
        env_id="herkit/PointReach-v0",
        algo="td3",
        steps=600,
        warmup_steps=200,
        eval_every=300,
        buffer_device="device",
        out=str(tmp_path / "run"),
        update_mode="eager",
    )
    summary = train(config)
    assert len(prepared) == summary["updates"] >= 300
    rows = RunPaths(tmp_path / "run").updates.read_text().splitlines()
    assert len(rows) > 5 and "critic_loss" in rows[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize("algo", ["ddpg", "td3", "sac"])
@pytest.mark.parametrize("prioritized", [False, True])
def test_a_captured_drawn_update_learns_what_the_eager_drawn_one_does(
    algo: str, prioritized: bool
) -> None:
    """Sampling and update in one graph (by priority: the new priorities too): the same
    parameters and priorities as eager, drawn alike."""
    from test_update_modes import assert_same_learning

    from herkit.agents import make_agent
    from test_agents import parameters

    agents = []
    for mode in ("eager", "captured"):
        buffer = HerReplayBuffer(
            4_000,
            observation_shape=6,
            goal_shape=3,
            action_shape=2,
            reward_fn=tag_reward,
            torch_reward_fn=torch_tag_reward,
            device="cuda",
            n_envs=4,
            seed=4,
            goal_mix=(1, 2, 2),
            terminal_on_success=True,
            prioritized=prioritized,
        )
        rng = np.random.default_rng(0)
        for t in range(300):
            obs = {
                key: rng.normal(size=(4, 6 if key == "observation" else 3)).astype(np.float32)
                for key in ("observation", "achieved_goal", "desired_goal")
            }
            buffer.add(
                obs, rng.uniform(-1, 1, (4, 2)), obs, np.zeros(4, bool), np.full(4, t % 25 == 24)
            )
        sampler = DeviceSampler(buffer)
        box = gymnasium.spaces.Box(-1.0, 1.0, (2,))
        agent = make_agent(algo, None, 6, 3, box, (-1.0, 0.0), "cuda", seed=7)
        agent.set_update_mode(mode)
        agent.attach_sampler(sampler.draw, 256, sampler.reprioritize)
        agent.log_updates()
        agent.update_normalizer(np.zeros((1, 6)), np.zeros((1, 3)))
        for _ in range(12):
            agent.update_drawn(sampler.prepare(), count_goals=True)
        sampler.priorities_to_host()
        leaves = None if buffer.sampler.tree is None else buffer.sampler.tree.leaves.copy()
        agents.append((agent, agent.update_metrics(), leaves))
    (eager, rows_eager, leaves_eager), (captured, rows_captured, leaves_captured) = agents
    assert parameters(eager).keys() == parameters(captured).keys()
    assert_same_learning(eager, captured, rows_eager, rows_captured, tol=2e-3)
    if prioritized:
        np.testing.assert_allclose(leaves_captured, leaves_eager, rtol=2e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_captured_run_on_the_gpu_trains(tmp_path: Path) -> None:
    from herkit.rundir.paths import RunPaths
    from herkit.training.loop import train
    from runs import quiet

    config = quiet(
        env_id="herkit/PointReach-v0",
        algo="td3",
        steps=2_000,
        warmup_steps=200,
        eval_every=500,
        device="cuda",
        buffer_device="device",
        update_mode="captured",
        out=str(tmp_path / "run"),
    )
    summary = train(config)
    assert summary["updates"] > 1000 and summary["success_rate"] >= 0.0
    assert "captured" in RunPaths(tmp_path / "run").config.read_text()


@pytest.mark.parametrize("future", ["uniform", "geometric"])
def test_hiqls_subgoals_are_drawn_on_the_device_as_on_the_host_in_the_ring_too(
    future: str,
) -> None:
    """HIQL's subgoals over a dataset held once and a ring after it that wraps, host and
    device alike; in the ring (tags: observation ``(uid, t, e)``, its achieved goal
    ``(uid, t - 1, e)``), the low goal is the state at ``min(t + k, last)`` of the sample's
    episode (its last recorded step while open), the target at ``min(t + k, goal step)``."""
    episodes, k = [7, 12, 3, 9], 4
    states = np.concatenate(
        [np.stack([np.full(n, e), np.arange(n), np.zeros(n)], 1) for e, n in enumerate(episodes)]
    ).astype(np.float32)
    terminals = np.zeros(len(states), bool)
    terminals[np.cumsum(episodes) - 1] = True
    data = {"observations": states, "actions": states[:, :1], "terminals": terminals}
    buffer = HerReplayBuffer.from_dataset(
        data,
        tag_reward,
        room=40,
        device="cpu",
        torch_reward_fn=torch_tag_reward,
        value_goals=(0.2, 0.5, 0.3),
        actor_goals=(0, 0.5, 0.5),
        actor_future=future,
        subgoal_steps=k,
        gamma=0.9,
        seed=2,
    )
    sampler = DeviceSampler(buffer)
    assert_same_draws(buffer, sampler, 5)  # the dataset alone
    run = TaggedRun(buffer, next_offset=(0.0, 1.0, 0.0))
    run.feed([[4, 6, 11]], steps=57)  # wraps its ring, its last episode open
    assert_same_draws(buffer, sampler, 6)
    batch = host(buffer.sample(4000))
    ring = batch.observation[:, 0] > 3  # the dataset's episodes are 0 .. 3
    assert ring.any() and (~ring).any()
    uid, t = batch.observation[ring, 0].astype(int), batch.observation[ring, 1].astype(int)
    last = np.array([run.episodes[u].length - 1 for u in uid])
    low, target = batch.low_actor_goal[ring], batch.high_actor_target[ring]
    target_obs, goal = batch.high_actor_target_observation[ring], batch.actor_goal[ring]
    assert np.array_equal(low[:, 0], uid) and np.array_equal(target[:, 0], uid)
    np.testing.assert_array_equal(low[:, 1] + 1, np.minimum(t + k, last))  # goal tags: t - 1
    np.testing.assert_array_equal(target_obs[:, :2], np.stack([target[:, 0], target[:, 1] + 1], 1))
    ahead = (goal[:, 0] == uid) & (goal[:, 1] + 1 > t)
    to_goal, to_last = np.minimum(t + k, goal[:, 1] + 1), np.minimum(t + k, last)
    assert np.array_equal(target[~ahead, 1] + 1, to_last[~ahead])
    reached = target[ahead, 1] + 1
    assert np.all((reached == to_goal[ahead]) | (reached == to_last[ahead]))
    assert (ahead & (to_goal < to_last)).any()  # the cap at the goal is seen
