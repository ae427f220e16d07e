"""Prioritized replay on the buffer's device: the torch sum tree agrees with the host's,
draws follow the priorities with the host's importance weights, the device's copy knows
which slots may be drawn through adds, wrap-arounds and dropped episodes, an update's TD
errors become priorities on the device, and a checkpoint saves what the device learnt.
On CPU tensors here, CUDA where present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_device_sampler import random_buffer

from herkit import Batch, HerReplayBuffer
from herkit.buffer.backend import NUMPY, array_ops
from herkit.buffer.device_sampler import DeviceSampler, uniform_of
from herkit.buffer.priority import SumTree, importance_weights
from tagged import TaggedRun
from test_her_relabel import check_batch, make_buffer

TORCH_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 300),
    writes=st.lists(
        st.lists(
            st.tuples(st.integers(0, 10_000), st.sampled_from([0.0, 0.5, 1.0, 3.25, 1e-6])),
            min_size=1,
            max_size=20,
        ),
        min_size=1,
        max_size=6,
    ),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(TORCH_DEVICES),
)
def test_the_device_tree_sums_and_searches_as_the_hosts(
    capacity: int, writes: list[list[tuple[int, float]]], seed: int, device: str
) -> None:
    """One tree: lazy on the host's numpy arrays, climbing at once on a device's tensors."""
    hosts, devices = SumTree(capacity), SumTree(capacity, array_ops(device), lazy=False)
    for batch in writes:
        chosen = {index % capacity: value for index, value in batch}  # one write per leaf
        leaves = np.array(list(chosen), np.int64)
        values = np.array(list(chosen.values()))
        hosts.set(leaves, values)
        devices.set(torch.as_tensor(leaves, device=device), torch.as_tensor(values, device=device))
        np.testing.assert_array_equal(numpy(devices.leaves), hosts.leaves)
        assert float(devices.total) == pytest.approx(hosts.total, rel=1e-12, abs=1e-15)
    if hosts.total <= 0:
        return
    masses = np.random.default_rng(seed).uniform(0, hosts.total, 500)
    found = numpy(devices.find(torch.as_tensor(masses, device=device)))
    np.testing.assert_array_equal(found, hosts.find(masses))
    assert np.all(hosts.leaves[found] > 0)
    edges = np.cumsum(hosts.leaves)  # a mass at a prefix's end (rounding) finds a live leaf
    at_edges = numpy(devices.find(torch.as_tensor(np.append(edges, edges[-1] * 2), device=device)))
    assert np.all(hosts.leaves[at_edges] > 0)
    rebuilt = SumTree(capacity, array_ops(device), lazy=False)
    rebuilt.load_leaves(devices.leaves)
    torch.testing.assert_close(rebuilt.tree, devices.tree, rtol=1e-12, atol=0)


def draw(sampler: DeviceSampler, n: int, seed: int = 0) -> tuple[Batch, np.ndarray, np.ndarray]:
    """A prioritized draw: the batch on the host, its importance weights and slots."""
    generator = torch.Generator(device=sampler.device)
    generator.manual_seed(seed)
    flags = sampler.prepare()
    got = sampler.draw(n, uniform_of(generator), **flags)
    assert got.discount is None and got.weights is not None and got.indices is not None
    obs, next_obs = numpy(got.observation), numpy(got.next_observation)
    batch = Batch(
        obs,
        numpy(got.action),
        numpy(got.reward),
        next_obs,
        numpy(got.goal),
        obs - [0, 1, 0],
        obs,
        numpy(got.terminated),
    )
    return batch, numpy(got.weights), numpy(got.indices)


def live(sampler: DeviceSampler) -> tuple[np.ndarray, np.ndarray]:
    """Which slots may be drawn: after the device's priorities, after the host's tree."""
    assert sampler.priorities is not None and sampler.buffer.sampler.tree is not None
    return numpy(sampler.priorities.tree.leaves) > 0, sampler.buffer.sampler.tree.leaves > 0


@settings(max_examples=30, deadline=None)
@given(
    n_envs=st.integers(1, 3),
    rows=st.integers(10, 25),
    lengths=st.lists(st.lists(st.integers(1, 10), min_size=1, max_size=8), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
    device=st.sampled_from(TORCH_DEVICES),
)
def test_the_device_draws_only_what_the_host_may_sample(
    n_envs: int, rows: int, lengths: list[list[int]], seed: int, device: str
) -> None:
    """Wrap-arounds of a small ring drop old episodes; the device's live slots follow the
    host's at every prepare, while updates give its priorities values of their own."""
    buffer = make_buffer(rows * n_envs, n_envs, device, prioritized=True, seed=seed)
    sampler = DeviceSampler(buffer)
    assert sampler.priorities is not None
    run = TaggedRun(buffer)
    rng = np.random.default_rng(seed)
    for round_ in range(4):
        run.feed([ls * (round_ + 1) for ls in lengths[:n_envs]], steps=rows // 2 + round_ * 7)
        batch, weights, slots = draw(sampler, 256, seed + round_)
        device_live, host_live = live(sampler)
        np.testing.assert_array_equal(device_live, host_live)
        assert np.all(host_live[slots])
        check_batch(run, "future", "sample", batch=batch)
        assert weights.max() == pytest.approx(1.0) and np.all(weights > 0)
        td = torch.as_tensor(rng.uniform(0, 5, len(slots)), device=device)
        sampler.reprioritize(torch.as_tensor(slots, device=device), td)


def test_draws_follow_the_priorities_with_the_hosts_weights() -> None:
    buffer = make_buffer(400, 2, "cpu", prioritized=True, alpha=1.0, eps=1e-12, seed=3)
    TaggedRun(buffer).feed([[6, 9], [7]], steps=150)
    sampler = DeviceSampler(buffer)
    sampler.prepare()
    slots = np.arange(300)
    td = np.where(slots % 3 == 0, 4.0, 1.0)  # a third of the slots 4x as likely
    sampler.reprioritize(torch.as_tensor(slots), torch.as_tensor(td))
    _, weights, drawn = draw(sampler, 60_000, seed=1)
    share = np.isin(drawn, slots[slots % 3 == 0]).mean()
    assert share == pytest.approx(4 * 100 / (4 * 100 + 200), abs=0.01)
    counts = np.bincount(drawn, minlength=300)
    assert counts.min() > 0  # stratified: every live slot is reached
    sampler.priorities_to_host()
    assert buffer.sampler.tree is not None
    tree = buffer.sampler.tree
    expected = importance_weights(NUMPY, tree.leaves[drawn], tree.total, buffer.settings.beta)
    np.testing.assert_allclose(weights, expected, rtol=1e-5)


def test_new_slots_take_the_largest_priority_and_dropped_ones_none() -> None:
    buffer = make_buffer(20, 1, "cpu", prioritized=True, alpha=1.0, eps=1e-12, seed=2)
    run = TaggedRun(buffer)
    run.feed([[5]], steps=10)
    sampler = DeviceSampler(buffer)
    sampler.prepare()
    assert sampler.priorities is not None
    sampler.reprioritize(torch.tensor([0, 1, 2]), torch.tensor([7.0, 0.5, 0.25]))
    assert float(sampler.priorities.max_priority) == pytest.approx(7.0)
    run.feed([[5]], steps=3)  # slots 10, 11, 12
    sampler.prepare()
    leaves = numpy(sampler.priorities.tree.leaves)
    np.testing.assert_allclose(leaves[[0, 1, 2]], [7.0, 0.5, 0.25])
    np.testing.assert_allclose(leaves[10:13], [7.0, 7.0, 7.0])
    run.feed([[5]], steps=8)  # wraps: slot 0 rewritten, the rest of its episode dropped
    sampler.prepare()
    device_live, host_live = live(sampler)
    np.testing.assert_array_equal(device_live, host_live)
    assert device_live[0] and not device_live[1:5].any()
    sampler.reprioritize(torch.tensor([3]), torch.tensor([9.0]))  # dropped: stays out
    assert numpy(sampler.priorities.tree.leaves)[3] == 0.0
    run.feed([[4]], steps=25)  # more than the ring holds between two prepares
    sampler.prepare()
    device_live, host_live = live(sampler)
    np.testing.assert_array_equal(device_live, host_live)
    leaves = numpy(sampler.priorities.tree.leaves)
    # the largest given so far (9, to a dropped slot: counted, as the host counts it)
    np.testing.assert_allclose(leaves[device_live], 9.0)
    assert float(sampler.priorities.max_priority) == pytest.approx(9.0)


def test_a_saved_buffer_keeps_the_priorities_learnt_on_the_device(tmp_path: Path) -> None:
    buffer = make_buffer(100, 2, "cpu", prioritized=True, seed=4)
    TaggedRun(buffer).feed([[4, 6], [5]], steps=30)
    sampler = DeviceSampler(buffer)
    _, _, slots = draw(sampler, 64)
    sampler.reprioritize(torch.as_tensor(slots), torch.linspace(0, 3, 64))
    sampler.priorities_to_host()
    buffer.save(tmp_path / "buffer.npz")
    restored = HerReplayBuffer.load(
        tmp_path / "buffer.npz",
        buffer.reward_fn,
        device="cpu",
        torch_reward_fn=buffer.torch_reward_fn,
    )
    follower = DeviceSampler(restored)
    follower.prepare()
    assert follower.priorities is not None and sampler.priorities is not None
    torch.testing.assert_close(follower.priorities.tree.tree, sampler.priorities.tree.tree)
    assert float(follower.priorities.max_priority) == float(sampler.priorities.max_priority)


@pytest.mark.parametrize("algo", ["dqn", "ddpg"])  # their updates draw no random numbers
def test_a_drawn_prioritized_update_weighs_its_loss_and_sets_the_priorities(algo: str) -> None:
    """The update on a draw by priority equals one on the same batch with its weights,
    and the drawn slots' priorities become ``(|TD error| + eps) ** alpha`` on the device."""
    from test_update_modes import no_host_reads

    from test_agents import agent_for, parameters

    buffer = random_buffer(algo, prioritized=True)
    sampler = DeviceSampler(buffer)
    assert sampler.priorities is not None
    drawing, given_ = agent_for(algo, seed=2), agent_for(algo, seed=2)
    drawing.attach_sampler(sampler.draw, 64, sampler.reprioritize)
    settings_ = buffer.settings
    for _ in range(3):
        twin = torch.Generator()
        twin.set_state(drawing.generator.get_state())
        flags = sampler.prepare()
        got = sampler.draw(64, uniform_of(twin), **flags)
        goal, slots = got.goal, got.indices
        batch = Batch(
            got.observation,
            got.action,
            got.reward,
            got.next_observation,
            goal,
            goal,
            goal,
            got.terminated,
            weights=got.weights,
        )
        with no_host_reads():
            drawing.update_drawn(flags)
        given_.update(batch)
        given_.generator.set_state(drawing.generator.get_state())
        expected = (numpy(given_.priorities).astype(np.float64) + settings_.eps) ** settings_.alpha
        leaves = numpy(sampler.priorities.tree.leaves)
        last = {int(slot): i for i, slot in enumerate(numpy(slots))}  # a slot drawn twice
        np.testing.assert_allclose(leaves[list(last)], expected[list(last.values())], rtol=1e-5)
    for (name, a), b in zip(parameters(drawing).items(), parameters(given_).values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=name)


@pytest.mark.slow("training runs, checkpointed and resumed")
def test_a_prioritized_run_that_draws_on_the_device_checkpoints_its_priorities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's drawn path with prioritized replay end to end (on CPU tensors): the
    checkpoint's buffer holds the priorities the device learnt."""
    import herkit.training.learner
    from herkit.rundir.paths import RunPaths
    from herkit.training.loop import train
    from runs import quiet

    samplers: list[DeviceSampler] = []
    init = DeviceSampler.__init__

    def kept(self: DeviceSampler, buffer: HerReplayBuffer) -> None:
        init(self, buffer)
        samplers.append(self)

    monkeypatch.setattr(DeviceSampler, "__init__", kept)
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
        prioritized=True,
    )
    summary = train(config)
    assert summary["updates"] >= 300 and len(samplers) == 1
    priorities = samplers[0].priorities
    assert priorities is not None
    device_leaves = numpy(priorities.tree.leaves)
    assert len(np.unique(device_leaves[device_leaves > 0])) > 100  # learnt, not the max
    saved = HerReplayBuffer.load(
        RunPaths(tmp_path / "run").checkpoint / "buffer.npz", samplers[0].buffer.reward_fn
    )
    assert saved.sampler.tree is not None
    np.testing.assert_allclose(saved.sampler.tree.leaves, device_leaves)


@pytest.mark.slow("compiles an update: a minute on two cores")
def test_a_compiled_drawn_prioritized_update_learns_what_the_eager_one_does() -> None:
    """torch.compile traces the draw by priority and the new priorities with the update."""
    from test_agents import agent_for, parameters

    learnt = []
    for mode in ("eager", "compiled"):
        buffer = random_buffer("ddpg", prioritized=True)
        sampler = DeviceSampler(buffer)
        agent = agent_for("ddpg", seed=2)
        agent.set_update_mode(mode)
        agent.attach_sampler(sampler.draw, 64, sampler.reprioritize)
        for _ in range(5):
            agent.update_drawn(sampler.prepare())
        sampler.priorities_to_host()
        assert buffer.sampler.tree is not None
        learnt.append((parameters(agent), buffer.sampler.tree.leaves.copy()))
    (eager, eager_leaves), (compiled, compiled_leaves) = learnt
    for (name, a), b in zip(eager.items(), compiled.values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
    np.testing.assert_allclose(compiled_leaves, eager_leaves, rtol=1e-4)
    assert len(np.unique(eager_leaves)) > 50
