"""Property tests of the relabelling math: where every sampled goal came from."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from herkit import Batch, HerReplayBuffer
from herkit.buffer.device_sampler import DeviceSampler, uniform_of
from herkit.buffer.settings import HerSettings
from herkit.buffer.strategies import STRATEGIES as REGISTRY
from tagged import (
    DEVICES,
    RELABELLING,
    STRATEGY_NAMES,
    TaggedRun,
    check_n_step_batch,
    host,
    tag_reward,
    torch_tag_reward,
    with_needs,
)

STRATEGIES = STRATEGY_NAMES  # every strategy of the registry

GOAL_STEPS: dict[str, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
    "future": lambda t, length: (t, length - 1),
    "geom_future": lambda t, length: (t, length - 1),
    "final": lambda t, length: (length - 1, length - 1),
    "episode": lambda t, length: (np.zeros_like(t), length - 1),
}
"""Each in-episode strategy's lowest and highest goal step, inclusive, for transitions at
steps ``t`` of episodes that recorded ``length`` steps: what :func:`check_batch` holds every
relabelled goal to. A strategy added to the registry needs its line here."""


def test_every_in_episode_strategy_of_the_registry_has_its_goal_steps_checked() -> None:
    in_episode = {name for name, rule in REGISTRY.items() if rule.source == "episode"}
    assert set(GOAL_STEPS) == in_episode


def make_buffer(
    capacity: int, n_envs: int, device: str | None = None, **kwargs: object
) -> HerReplayBuffer:
    """A tagged-goal buffer; on ``device`` its rewards are computed there in torch."""
    return HerReplayBuffer(
        capacity,
        observation_shape=3,
        goal_shape=3,
        action_shape=1,
        reward_fn=tag_reward,
        n_envs=n_envs,
        device=device,
        torch_reward_fn=torch_tag_reward if device is not None else None,
        **with_needs(kwargs),  # type: ignore[arg-type]
    )


def check_batch(
    run: TaggedRun, strategy: str, relabel: str, batch_size: int = 512, batch: Batch | None = None
) -> None:
    """Every sampled transition and goal (of ``batch``, else of a sample of ``batch_size``)
    is traced back to its episode and step."""
    batch = host(run.buffer.sample(batch_size) if batch is None else batch)
    closed_only = relabel == "store"
    uid = batch.observation[:, 0].astype(int)
    step = batch.observation[:, 1].astype(int)
    env = batch.observation[:, 2].astype(int)
    # The transition is intact and may be sampled.
    np.testing.assert_array_equal(batch.next_achieved_goal, batch.observation)
    np.testing.assert_array_equal(batch.achieved_goal[:, :2], np.c_[uid, step - 1])
    np.testing.assert_array_equal(batch.next_observation, batch.observation + run.next_offset)
    for u in np.unique(uid):
        assert run.sampleable(int(u), closed_only), f"sampled dropped/open episode {u}"
        assert run.episodes[int(u)].env == env[uid == u][0]
    # Nothing that may be sampled is left out (no episode dropped before it is overwritten).
    whole = [ep.length for u, ep in run.episodes.items() if run.sampleable(u, closed_only)]
    assert len(run.buffer) == sum(whole)
    # The reward is recomputed for the goal actually used.
    expected_reward = -np.any(batch.goal != batch.next_achieved_goal, axis=1).astype(np.float32)
    np.testing.assert_array_equal(batch.reward, expected_reward)

    original = batch.goal[:, 0] < 0
    np.testing.assert_array_equal(batch.goal[original, 0], -1 - uid[original])
    relabelled = ~original
    rule = REGISTRY[strategy]
    if rule.source == "none":
        assert not relabelled.any()
        return
    goal_uid = batch.goal[relabelled, 0].astype(int)
    goal_step = batch.goal[relabelled, 1].astype(int)
    length = np.array([run.episodes[u].length for u in uid[relabelled]])
    t = step[relabelled]
    if rule.source == "buffer":  # random: any transition that may be sampled
        for u, s in zip(goal_uid, goal_step, strict=True):
            assert 0 <= s < run.episodes[int(u)].length
            if relabel == "sample":
                assert run.sampleable(int(u), closed_only=False)
        return
    np.testing.assert_array_equal(goal_uid, uid[relabelled], "goal from another episode")
    np.testing.assert_array_equal(batch.goal[relabelled, 2], env[relabelled])
    if rule.needs_end:  # only ended episodes have a final goal
        assert all(run.episodes[u].closed for u in uid[relabelled]), f"{strategy}: open episode"
    low, high = GOAL_STEPS[strategy](t, length)
    assert np.all((goal_step >= low) & (goal_step <= high)), strategy


episode_lists = st.lists(st.integers(1, 12), min_size=1, max_size=15)


@settings(max_examples=40, deadline=None)
@given(
    strategy=st.sampled_from(STRATEGIES),
    relabel=st.sampled_from(["sample", "store"]),
    n_envs=st.integers(1, 4),
    k=st.integers(1, 5),
    rows=st.integers(12, 30),
    lengths=st.lists(episode_lists, min_size=4, max_size=4),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(DEVICES),
)
def test_goals_come_from_the_right_episode_and_steps(
    strategy: str,
    relabel: str,
    n_envs: int,
    k: int,
    rows: int,
    lengths: list[list[int]],
    seed: int,
    device: str | None,
) -> None:
    """Random episode lengths, several envs, many wrap-arounds of a small ring; numpy
    storage or torch tensors on a device."""
    buffer = make_buffer(
        rows * n_envs, n_envs, device, strategy=strategy, k=k, relabel=relabel, seed=seed
    )
    run = TaggedRun(buffer)
    # Feed in several rounds, checking after each, so open episodes are sampled too.
    for round_ in range(3):
        run.feed([ls * (round_ + 1) for ls in lengths[:n_envs]], end_open=round_ == 2)
        if len(buffer) == 0:
            assert relabel == "store"
            with pytest.raises(ValueError, match="empty"):
                buffer.sample(4)
            continue
        check_batch(run, strategy, relabel)


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("relabel", ["sample", "store"])
def test_long_episodes_beside_one_step_ones_stay_until_overwritten(
    relabel: str, prioritized: bool
) -> None:
    """Two envs end an episode at every step, so episode ids are given again while the
    third env's overwritten slots still name the ids of its dropped episodes: those must
    drop nothing more (a whole episode was lost), nor bring a dropped one back."""
    buffer = make_buffer(48, 3, None, strategy="future", relabel=relabel, prioritized=prioritized)
    run = TaggedRun(buffer)
    for _ in range(6):
        run.feed([[1], [12], [1]])
        check_batch(run, "future", relabel)
        if prioritized:
            batch = buffer.sample(64)
            buffer.update_priorities(batch.indices, np.random.default_rng(0).random(64))


@settings(max_examples=20, deadline=None)
@given(
    strategy=st.sampled_from(RELABELLING),
    n_envs=st.integers(1, 3),
    lengths=st.lists(episode_lists, min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(DEVICES),
)
# one env's long episodes beside two envs' one-step ones: episode ids are given again
# while the long episodes' overwritten slots still name them
@example(strategy="future", n_envs=3, lengths=[[1], [8, 1, 1, 1, 6], [1]], seed=0, device=None)
def test_prioritized_sampling_obeys_the_same_rules(
    strategy: str, n_envs: int, lengths: list[list[int]], seed: int, device: str | None
) -> None:
    for relabel in ("sample", "store"):
        buffer = make_buffer(
            16 * n_envs,
            n_envs,
            device,
            strategy=strategy,
            relabel=relabel,
            prioritized=True,
            seed=seed,
        )
        run = TaggedRun(buffer)
        for round_ in range(3):
            run.feed(lengths[:n_envs], end_open=round_ == 2)
            if len(buffer):
                check_batch(run, strategy, relabel)
                batch = buffer.sample(64)
                buffer.update_priorities(batch.indices, np.random.default_rng(seed).random(64))


@pytest.mark.parametrize("relabel", ["sample", "store"])
@pytest.mark.parametrize(
    ("strategy", "k"),
    [(name, 4) for name in STRATEGIES] + [("future", 1), ("episode", 2), ("random", 3)],
)
def test_relabelled_fraction_is_k_over_k_plus_one(strategy: str, k: int, relabel: str) -> None:
    """Both modes relabel the same share, k/(k+1) for every strategy (none: 0), as the paper,
    OpenAI baselines and SB3 do."""
    buffer = make_buffer(4000, 2, strategy=strategy, k=k, relabel=relabel, seed=1)
    run = TaggedRun(buffer)
    rng = np.random.default_rng(0)
    run.feed([list(rng.integers(5, 40, 60)) for _ in range(2)], end_open=True)
    batch = buffer.sample(40_000)
    fraction = np.mean(batch.goal[:, 0] >= 0)
    expected = 0.0 if strategy == "none" else k / (k + 1)
    assert fraction == pytest.approx(expected, abs=0.012)


def geometric_fit(t: np.ndarray, goal_step: np.ndarray, length: int, gamma: float) -> float:
    """How far the offsets ``j = goal_step - t + 1`` of transitions at steps ``t`` of
    episodes of ``length`` steps lie from Geometric(1 - gamma) on 1, 2, ... cut at the
    episode's end (``j = length - t`` takes the tail's mass): the chi-square statistic over
    the offsets, in standard deviations of its law above its mean (bins expecting fewer than
    20 merged), so that about 0 fits and a few is already unlikely."""
    offsets = goal_step - t + 1
    assert np.all((offsets >= 1) & (offsets <= length - t))
    j = np.arange(1, length + 1)
    observed, expected = np.zeros(length), np.zeros(length)
    for start in np.unique(t):
        at = t == start
        room = length - start  # the largest offset: the episode's last step
        law = np.where(j < room, (1 - gamma) * gamma ** (j - 1), 0.0)
        law[room - 1] = gamma ** (room - 1)
        expected += at.sum() * law
        observed += np.bincount(offsets[at] - 1, minlength=length)
    keep = expected >= 20  # the rest in one bin
    expected = np.append(expected[keep], expected[~keep].sum())
    observed = np.append(observed[keep], observed[~keep].sum())
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    df = len(expected) - 1
    return (chi2 - df) / np.sqrt(2 * df)


@pytest.mark.parametrize("device", DEVICES)
def test_geom_future_offsets_follow_the_geometric_law_cut_at_the_episode_end(
    device: str | None,
) -> None:
    """geom_future's goal is ``next_achieved_goal[t + j - 1]``, ``j ~ Geometric(1 - gamma)``
    on 1, 2, ..., at most the episode's last (OGBench's geometric value goal, in future's
    steps): on the host and drawn on the device (:class:`DeviceSampler`), the offsets fit
    that law, their mean is the cut law's (about 1 / (1 - gamma) = 10 where the episode
    leaves room); future's uniform offsets (mean about 25 there) and a geometric law with
    another gamma fail the same fit by far."""
    gamma, length, episodes = 0.9, 60, 400
    buffer = make_buffer(
        2 * length * episodes, 2, device, strategy="geom_future", gamma=gamma, k=4, seed=5
    )
    assert buffer.settings.gamma == gamma
    TaggedRun(buffer).feed([[length] * episodes] * 2)
    if device is None:
        batch = buffer.sample(100_000)
        observation, goal = batch.observation, batch.goal
    else:  # device work only: the draw on the device's copy of the bookkeeping
        sampler, generator = DeviceSampler(buffer), torch.Generator(device=device)
        generator.manual_seed(5)
        drawn = sampler.draw(100_000, uniform_of(generator), **sampler.prepare())
        observation, goal = drawn.observation.cpu().numpy(), drawn.goal.cpu().numpy()
    relabelled = goal[:, 0] >= 0
    assert relabelled.mean() == pytest.approx(0.8, abs=0.01)
    np.testing.assert_array_equal(goal[relabelled, 0], observation[relabelled, 0])
    t = observation[relabelled, 1].astype(int)
    goal_step = goal[relabelled, 1].astype(int)
    assert geometric_fit(t, goal_step, length, gamma) < 4
    early = t < 10  # room for 50 steps ahead or more: the cut hardly matters
    offsets = goal_step[early] - t[early] + 1
    cut_mean = np.mean((1 - gamma ** (length - t[early])) / (1 - gamma))  # E min(j, room)
    spread = offsets.std() / np.sqrt(len(offsets))  # about 0.08
    assert abs(offsets.mean() - cut_mean) < 5 * spread and abs(offsets.mean() - 10) < 0.5
    # what the fit tells apart: future's uniform steps (mean about 26 there), and the law of
    # another discount (gamma 0.8: mean 5)
    uniform = t + (np.random.default_rng(0).random(len(t)) * (length - t)).astype(int)
    assert np.mean(uniform[early] - t[early] + 1) > 20
    assert geometric_fit(t, uniform, length, gamma) > 100
    assert geometric_fit(t, goal_step, length, 0.8) > 100


def test_geom_future_needs_a_discount_in_0_1() -> None:
    with pytest.raises(ValueError, match=r"strategy 'geom_future' needs gamma in \(0, 1\)"):
        HerSettings(strategy="geom_future")
    with pytest.raises(ValueError, match=r"needs gamma in \(0, 1\).*got gamma=1.0"):
        HerSettings(strategy="geom_future", gamma=1.0)
    assert HerSettings(strategy="geom_future", goal_mix=(1, 1, 1)).gamma is None  # future's


@pytest.mark.parametrize("relabel", ["sample", "store"])
def test_future_is_uniform_over_t_to_end_inclusive(relabel: str) -> None:
    """floor, not round: the first and last future steps get the same weight as the rest."""
    # Store mode fixes k goals per transition at episode end: many episodes make a pool of
    # draws large enough that resampling it shows the distribution, not the pool's noise.
    length, episodes = 7, 3000
    buffer = make_buffer(4 * length * episodes, 4, strategy="future", k=4, relabel=relabel, seed=3)
    run = TaggedRun(buffer)
    run.feed([[length] * episodes] * 4)
    batch = buffer.sample(200_000)
    relabelled = batch.goal[:, 0] >= 0
    t = batch.observation[relabelled, 1].astype(int)
    goal_step = batch.goal[relabelled, 1].astype(int)
    for start in (0, 3, 6):
        counts = np.bincount(goal_step[t == start], minlength=length)[start:]
        expected = counts.sum() / len(counts)
        assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected) + 1), counts


def test_sample_mode_uses_open_episodes_store_mode_waits_for_the_end() -> None:
    sample_mode = make_buffer(100, 1, strategy="future", seed=0)
    store_mode = make_buffer(100, 1, strategy="future", relabel="store", seed=0)
    runs = [TaggedRun(buffer) for buffer in (sample_mode, store_mode)]
    for run in runs:
        run.feed([[50]], steps=49)  # one episode, 49 steps in, still open
    assert len(sample_mode) == 49
    check_batch(runs[0], "future", "sample")
    assert len(store_mode) == 0
    with pytest.raises(ValueError, match="finish an episode"):
        store_mode.sample(8)


@pytest.mark.parametrize("strategy", RELABELLING)
def test_open_episodes_relabel_only_with_steps_they_have_recorded(strategy: str) -> None:
    """Sample mode, one closed episode and one open one: every relabelled goal of an open
    episode's transition is a step that episode has already recorded (future: at or after
    t), and final relabels none of them, while the closed episode's still are."""
    buffer = make_buffer(200, 1, strategy=strategy, k=4, seed=1)
    run = TaggedRun(buffer)
    run.feed([[12, 40]], steps=30)  # episode 0 closed after 12 steps, episode 1 open at 18
    assert run.episodes[0].closed and not run.episodes[1].closed
    batch = buffer.sample(4000)
    uid, t = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    relabelled = batch.goal[:, 0] >= 0
    goal_uid, goal_step = batch.goal[:, 0].astype(int), batch.goal[:, 1].astype(int)
    open_ = uid == 1
    assert relabelled[~open_].mean() > 0.3  # the closed episode is relabelled as usual
    rule = REGISTRY[strategy]
    if rule.needs_end:  # final
        assert not relabelled[open_].any()
        np.testing.assert_array_equal(goal_step[relabelled], 11)
        return
    assert relabelled[open_].mean() > 0.6
    mine = open_ & relabelled
    if rule.source == "episode":
        np.testing.assert_array_equal(goal_uid[mine], 1)
    recorded = np.where(goal_uid == 1, run.episodes[1].length, run.episodes[0].length)
    assert np.all(goal_step[relabelled] < recorded[relabelled])
    if rule.source == "episode":  # within the strategy's steps of the episode so far
        low, high = GOAL_STEPS[strategy](t[mine], np.full(mine.sum(), run.episodes[1].length))
        assert np.all((goal_step[mine] >= low) & (goal_step[mine] <= high))


def test_terminal_on_success_marks_relabelled_successes_terminal() -> None:
    buffer = make_buffer(200, 1, strategy="future", k=4, terminal_on_success=True, seed=0)
    run = TaggedRun(buffer)
    run.feed([[10] * 10])
    batch = buffer.sample(4000)
    relabelled = batch.goal[:, 0] >= 0
    success = batch.reward == 0
    np.testing.assert_array_equal(batch.terminated[relabelled], success[relabelled])
    # Original goals keep the env's flag: odd episodes terminated at their last step.
    uid = batch.observation[~relabelled, 0].astype(int)
    last = batch.observation[~relabelled, 1].astype(int) == 9
    np.testing.assert_array_equal(batch.terminated[~relabelled], (uid % 2 == 1) & last)


def test_info_fields_reach_the_reward_function() -> None:
    seen: dict[str, np.ndarray] = {}

    def reward_from_info(achieved: np.ndarray, desired: np.ndarray, info: dict) -> np.ndarray:
        seen.update(info)
        return -info["step"].astype(np.float32)

    buffer = HerReplayBuffer(
        100,
        observation_shape=3,
        goal_shape=3,
        action_shape=1,
        reward_fn=reward_from_info,
        info_keys=("step",),
        seed=0,
    )
    TaggedRun(buffer).feed([[5, 5, 5]])
    batch = buffer.sample(64)
    np.testing.assert_array_equal(seen["step"], batch.observation[:, 1])
    np.testing.assert_array_equal(batch.reward, -batch.observation[:, 1])


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    n_envs=st.integers(1, 3),
    capacity=st.integers(30, 80),
    weights=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)).filter(any)
    | st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)).filter(
        any
    ),
    device=st.sampled_from(DEVICES),
)
def test_goal_mix_goals_come_from_their_source(
    lengths: list[int],
    n_envs: int,
    capacity: int,
    weights: tuple[int, ...],
    device: str | None,
) -> None:
    """Each goal of a mix is the sample's own goal, an achieved goal of its episode at or
    after its step, the desired goal of a transition still stored, or (with an achieved
    share) the achieved goal after the action of a transition still stored."""
    buffer = make_buffer(capacity, n_envs, device, goal_mix=weights, seed=3)
    run = TaggedRun(buffer)
    run.feed([lengths] * n_envs, steps=sum(lengths) + 2)
    batch = host(buffer.sample(400))
    uid, step = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    goal_uid, goal_step = batch.goal[:, 0].astype(int), batch.goal[:, 1].astype(int)
    own = goal_uid == -1 - uid
    future = (goal_uid == uid) & (goal_step >= step)
    desired = goal_uid < 0  # a real goal: own, or another stored transition's
    achieved = (goal_uid >= 0) & ~future  # an achieved goal, not a future one of its episode
    assert np.all(own | future | desired | achieved)
    assert np.all(goal_step[future] < [run.episodes[u].length for u in uid[future]])
    for u in np.unique(-1 - goal_uid[desired]):
        assert run.sampleable(int(u), closed_only=False), f"goal of dropped episode {u}"
    tags = zip(goal_uid[achieved], goal_step[achieved], batch.goal[achieved, 2], strict=True)
    for u, s, e in tags:
        episode = run.episodes[int(u)]
        assert run.sampleable(int(u), closed_only=False), f"goal of dropped episode {u}"
        assert 0 <= s < episode.length and e == episode.env  # a recorded next achieved goal
    reached = np.all(batch.goal == batch.next_achieved_goal, axis=1)
    assert np.all(future[reached])  # only a goal of its own step can be reached
    np.testing.assert_array_equal(batch.reward, -(~reached).astype(np.float32))
    real, fut, other = weights[:3]
    stored_achieved = weights[3] if len(weights) == 4 else 0
    if stored_achieved == 0:
        assert not achieved.any()
    if fut == 0 and stored_achieved == 0:
        assert not future.any()
    if real == 0 and other == 0 and stored_achieved == 0:
        assert future.all()


def test_goal_mix_shares() -> None:
    buffer = make_buffer(4_000, 2, goal_mix=(1, 2, 2), seed=0)
    run = TaggedRun(buffer)
    run.feed([[50, 30, 40]] * 2, steps=1_500)
    batch = buffer.sample(20_000)
    uid = batch.observation[:, 0].astype(int)
    goal_uid = batch.goal[:, 0].astype(int)
    future = goal_uid == uid
    other = (goal_uid < 0) & (goal_uid != -1 - uid)
    # real goals of the sample's own episode come from the real share and from the few
    # "desired" draws that land in that episode; future draws are always of the episode
    assert abs(future.mean() - 0.4) < 0.015
    assert abs(other.mean() - 0.4) < 0.02
    assert abs((~future & ~other).mean() - 0.2) < 0.02


def test_goal_mix_with_achieved_goals_shares() -> None:
    """mrl's protoge mix (real 0.1, future 0.4, desired 0.4, achieved 0.1): the achieved
    goals are those after the action of transitions drawn from the whole buffer, any
    episode's (the random strategy's goals)."""
    buffer = make_buffer(4_000, 2, goal_mix=(1, 4, 4, 1), seed=0)
    assert buffer.settings.goal_mix == pytest.approx((0.1, 0.4, 0.4, 0.1))
    run = TaggedRun(buffer)
    run.feed([[50, 30, 40]] * 2, steps=1_500)
    batch = buffer.sample(40_000)
    uid, step = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
    goal_uid, goal_step = batch.goal[:, 0].astype(int), batch.goal[:, 1].astype(int)
    future = (goal_uid == uid) & (goal_step >= step)
    achieved = (goal_uid >= 0) & ~future
    other = (goal_uid < 0) & (goal_uid != -1 - uid)
    # an achieved draw of the sample's own episode at or after its step looks like a future
    # goal (about 0.1 * 40 / 3,000 of the samples): the other achieved draws are 0.1
    assert abs(achieved.mean() - 0.1) < 0.006 and abs(future.mean() - 0.4) < 0.01
    assert abs(other.mean() - 0.4) < 0.015
    assert len(np.unique(goal_uid[achieved])) > 50  # from many episodes
    assert HerSettings(goal_mix=(1, 2, 2, 0)).goal_mix == HerSettings(goal_mix=(1, 2, 2)).goal_mix


def test_goal_mix_warmup_takes_future_goals_until_it_ends(tmp_path: object) -> None:
    """Until ``goal_mix_warmup`` transitions are added every goal is a future achieved goal
    of the sample's episode; from then on the mix (here with no future share) applies."""
    buffer = make_buffer(1_000, 2, goal_mix=(1, 0, 1), goal_mix_warmup=60, seed=0)
    run = TaggedRun(buffer)

    def future_share() -> float:
        batch = host(buffer.sample(500))
        uid, step = batch.observation[:, 0].astype(int), batch.observation[:, 1].astype(int)
        goal_uid, goal_step = batch.goal[:, 0].astype(int), batch.goal[:, 1].astype(int)
        return float(np.mean((goal_uid == uid) & (goal_step >= step)))

    run.feed([[10, 10, 10]] * 2, steps=29)  # 58 transitions
    assert future_share() == 1.0
    run.feed([[10, 10, 10]] * 2, steps=1)  # 60
    assert future_share() == 0.0
    from pathlib import Path

    path = Path(str(tmp_path)) / "buffer.npz"
    buffer.save(path)
    assert HerReplayBuffer.load(path, tag_reward).settings.goal_mix_warmup == 60
    with pytest.raises(ValueError, match="goal_mix_warmup=5 needs goal_mix"):
        make_buffer(10, 1, goal_mix_warmup=5)
    with pytest.raises(ValueError, match="goal_mix_warmup must be an int >= 0"):
        make_buffer(10, 1, goal_mix=(1, 1, 1), goal_mix_warmup=-1)


def test_goal_mix_is_checked_and_saved(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="goal_mix must be 3 or 4 weights"):
        make_buffer(10, 1, goal_mix=(1, 2))
    with pytest.raises(ValueError, match="goal_mix must be 3 or 4 weights"):
        make_buffer(10, 1, goal_mix=(0, 0, 0))
    with pytest.raises(ValueError, match="goal_mix must be 3 or 4 weights"):
        make_buffer(10, 1, goal_mix=(0, 0, 0, 0))
    with pytest.raises(ValueError, match="goal_mix must be 3 or 4 weights"):
        make_buffer(10, 1, goal_mix=(1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="relabel='sample'"):
        make_buffer(10, 1, goal_mix=(1, 1, 1), relabel="store")
    buffer = make_buffer(100, 1, goal_mix=(1, 2, 2), seed=0)
    TaggedRun(buffer).feed([[5, 7]])
    from pathlib import Path

    path = Path(str(tmp_path)) / "buffer.npz"
    buffer.save(path)
    loaded = HerReplayBuffer.load(path, tag_reward)
    assert loaded.settings.goal_mix == buffer.settings.goal_mix == (0.2, 0.4, 0.4)
    np.testing.assert_array_equal(loaded.sample(64).goal, buffer.sample(64).goal)


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    n_envs=st.integers(1, 3),
    n_step=st.integers(2, 5),
    strategy=st.sampled_from(STRATEGIES),
    relabel=st.sampled_from(["sample", "store"]),
    terminal_on_success=st.booleans(),
    extra_steps=st.integers(0, 4),
    device=st.sampled_from(DEVICES),
)
def test_n_step_returns_are_recomputed_for_the_goal_at_every_step(
    lengths: list[int],
    n_envs: int,
    n_step: int,
    strategy: str,
    relabel: str,
    terminal_on_success: bool,
    extra_steps: int,
    device: str | None,
) -> None:
    """Each n-step sample sums the rewards of its goal over its episode's next steps, and
    stops at the first terminal step, at the episode's end or at its last recorded step."""
    gamma = 0.9
    buffer = make_buffer(
        60,
        n_envs,
        device,
        strategy=strategy,
        relabel=relabel,
        n_step=n_step,
        gamma=gamma,
        terminal_on_success=terminal_on_success,
        seed=1,
    )
    run = TaggedRun(buffer)
    run.feed([lengths] * n_envs, steps=sum(lengths) + extra_steps)
    if len(buffer) == 0:
        return
    batch = host(buffer.sample(300))
    check_n_step_batch(run, batch, n_step, gamma, terminal_on_success)
    # the first step's transition itself is unchanged
    np.testing.assert_array_equal(batch.next_achieved_goal, batch.observation)


def test_n_step_needs_gamma() -> None:
    with pytest.raises(ValueError, match="n_step > 1 needs gamma"):
        make_buffer(10, 1, n_step=3)
    with pytest.raises(ValueError, match="n_step must be an int >= 1"):
        make_buffer(10, 1, n_step=0)


BATCH_FIELDS = (
    "observation",
    "action",
    "reward",
    "next_observation",
    "goal",
    "achieved_goal",
    "next_achieved_goal",
    "terminated",
    "discount",
    "weights",
    "indices",
)


DEVICE_OPTIONS: list[dict[str, object]] = [
    *({"strategy": name} for name in STRATEGIES),
    {"strategy": "episode", "k": 2},
    {"strategy": "future", "relabel": "store"},
    {"strategy": "random", "relabel": "store"},
    {"goal_mix": (1, 2, 2)},
    {"n_step": 3, "gamma": 0.9, "terminal_on_success": True},
    {"strategy": "final", "prioritized": True, "relabel": "store"},
    {"strategy": "future", "prioritized": True, "terminal_on_success": True},
]


@settings(max_examples=30, deadline=None)
@given(
    options=st.sampled_from(DEVICE_OPTIONS),
    n_envs=st.integers(1, 3),
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(DEVICES[1:]),
    torch_reward=st.booleans(),
)
def test_a_buffer_on_a_device_samples_what_the_numpy_buffer_samples(
    options: dict[str, object],
    n_envs: int,
    lengths: list[int],
    seed: int,
    device: str,
    torch_reward: bool,
) -> None:
    """Same seed, same data: every field of every batch is equal, whether the rewards are
    computed in torch on the device or by the numpy reward_fn on host copies."""
    on_host = make_buffer(40 * n_envs, n_envs, seed=seed, **options)
    on_device = make_buffer(40 * n_envs, n_envs, device, seed=seed, **options)
    if not torch_reward:
        on_device.rewards.torch_reward_fn = None
    runs = [TaggedRun(on_host), TaggedRun(on_device)]
    for round_ in range(3):
        for run in runs:
            run.feed([lengths] * n_envs, steps=17, end_open=round_ == 2)
        if len(on_host) == 0:
            continue
        expected, got = on_host.sample(64), on_device.sample(64)
        for name in BATCH_FIELDS:
            value = getattr(got, name)
            if getattr(expected, name) is None:
                assert value is None, name
                continue
            if name != "indices":
                assert isinstance(value, torch.Tensor) and value.device.type == device, name
            np.testing.assert_array_equal(host(got).__dict__[name], getattr(expected, name))
        if options.get("prioritized"):
            priorities = np.random.default_rng(seed).random(64)
            on_host.update_priorities(expected.indices, priorities)
            on_device.update_priorities(got.indices, priorities)


def test_a_buffer_on_a_device_saves_and_loads_anywhere(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "buffer.npz"
    on_device = make_buffer(50, 2, "cpu", strategy="future", seed=0)
    TaggedRun(on_device).feed([[4, 6], [5]])
    on_device.save(path)
    on_host = HerReplayBuffer.load(path, tag_reward)
    again = HerReplayBuffer.load(path, tag_reward, device="cpu", torch_reward_fn=torch_tag_reward)
    assert on_host.device is None and again.device == torch.device("cpu")
    expected = on_device.sample(32)
    for loaded in (on_host, again):
        batch = host(loaded.sample(32))
        np.testing.assert_array_equal(batch.goal, host(expected).goal)
        np.testing.assert_array_equal(batch.reward, host(expected).reward)
        loaded.rng = np.random.default_rng(0)  # both continue from the same state below
    np.testing.assert_array_equal(host(again.sample(8)).goal, on_host.sample(8).goal)


def test_torch_reward_fn_must_return_one_reward_per_sample() -> None:
    buffer = make_buffer(20, 1, "cpu", seed=0)
    buffer.rewards.torch_reward_fn = lambda achieved, desired, info: achieved.sum()
    TaggedRun(buffer).feed([[3]])
    with pytest.raises(ValueError, match="torch_reward_fn must return one reward"):
        buffer.sample(4)
