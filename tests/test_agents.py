"""Tests of the goal-conditioned agents, their networks, normaliser and configs."""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
import tyro

from herkit import Batch
from herkit.agents import (
    Agent,
    DDPGAgent,
    DQNAgent,
    GoalAgent,
    Normalizer,
    SACAgent,
    make_agent,
)
from herkit.agents.base import ValueScale
from herkit.config import DDPGConfig, DQNConfig, OffPolicyConfig, SACConfig
from herkit.agents.settings import ALGOS, OFFLINE_ALGOS, default_agent_config
from herkit.agents.registry import agent_entry

OBS_DIM, GOAL_DIM, ACT_DIM, N_ACTIONS = 6, 3, 2, 4
LOW = np.array([-1.0, 0.0], np.float32)
HIGH = np.array([1.0, 3.0], np.float32)
SMALL = {"hidden": (32, 32), "batch_size": 64}

ONLINE_ALGOS = tuple(algo for algo in ALGOS if algo not in OFFLINE_ALGOS)
"""The agents that learn from their own experience: dqn, ddpg, td3 and sac."""
BOX_ALGOS = tuple(algo for algo in ONLINE_ALGOS if not agent_entry(algo).discrete)
"""The online agents of continuous actions: ddpg, td3 and sac."""


def small_config(algo: str, **changes: Any) -> Any:
    """The algorithm's default config with small networks."""
    return dataclasses.replace(default_agent_config(algo), **{**SMALL, **changes})


def space(algo: str) -> gymnasium.spaces.Space:
    if agent_entry(algo).discrete:
        return gymnasium.spaces.Discrete(N_ACTIONS)
    return gymnasium.spaces.Box(LOW, HIGH)


def agent_for(algo: str, seed: int = 0, **changes: Any) -> GoalAgent:
    config = small_config(algo, **changes)
    return make_agent(algo, config, OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), seed=seed)


def random_batch(
    algo: str, size: int = 64, seed: int = 0, reward: float | None = None, **extra: Any
) -> Batch:
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(size=shape).astype(np.float32)

    if algo == "dqn":
        action: np.ndarray = rng.integers(N_ACTIONS, size=size)
    else:
        action = rng.uniform(LOW, HIGH, size=(size, ACT_DIM)).astype(np.float32)
    rewards = -rng.integers(2, size=size).astype(np.float32) if reward is None else reward
    batch = Batch(
        observation=normal(size, OBS_DIM),
        action=action,
        reward=np.full(size, rewards, np.float32),
        next_observation=normal(size, OBS_DIM),
        goal=normal(size, GOAL_DIM),
        achieved_goal=normal(size, GOAL_DIM),
        next_achieved_goal=normal(size, GOAL_DIM),
        terminated=(rng.random(size) < 0.1).astype(np.float32),
        **extra,
    )
    if algo not in OFFLINE_ALGOS:
        return batch
    subgoals = {  # HIQL's (the other offline agents leave them)
        "low_actor_goal": normal(size, GOAL_DIM),
        "high_actor_target": normal(size, GOAL_DIM),
        "high_actor_target_observation": normal(size, OBS_DIM),
    }
    return dataclasses.replace(batch, **(subgoals | extra))


def host(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    """An update's metrics (device tensors) read to the host."""
    return {name: float(value) for name, value in metrics.items()}


def parameters(agent: GoalAgent) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": value.detach().clone()
        for name, net in agent._networks().items()
        for key, value in net.state_dict().items()
    }


def target_q_nets(agent: GoalAgent) -> list[Any]:
    """The last layers of the target Q network heads."""
    if isinstance(agent, DQNAgent):
        return [agent.q_target.net[-1]]
    assert isinstance(agent, DDPGAgent | SACAgent)
    heads: Any = agent.critic_target.heads
    return [head[-1] for head in heads]


# --- agents: update ---------------------------------------------------------------------


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_update_smoke(algo: str) -> None:
    agent = agent_for(algo)
    agent.update_normalizer(np.ones((5, OBS_DIM)), np.zeros((5, GOAL_DIM)))
    before = parameters(agent)
    batch = random_batch(algo)
    returned = agent.update(batch)
    assert all(v.shape == () and v.device == agent.device for v in returned.values())
    metrics = host(returned)
    assert all(math.isfinite(v) for v in metrics.values())
    assert {"critic_loss", "q_mean", "q_min", "q_max", "target_q_mean"} <= metrics.keys()
    assert metrics["q_min"] <= metrics["q_mean"] <= metrics["q_max"]
    if algo != "dqn":
        assert "actor_loss" in metrics
    if algo == "sac":
        assert metrics["alpha"] > 0 and "alpha_loss" in metrics and "entropy" in metrics
    after = parameters(agent)
    for name in before:
        if "center" not in name and "half_range" not in name:  # action-bound buffers
            assert not torch.equal(before[name], after[name]), f"{name} did not change"
    assert agent.priorities.shape == (64,) and agent.priorities.dtype == torch.float32
    assert bool((agent.priorities >= 0).all())
    assert metrics["td_abs_mean"] == pytest.approx(float(agent.priorities.mean()))


def test_td3_delays_actor_and_target_updates() -> None:
    agent = agent_for("td3")
    assert isinstance(agent, DDPGAgent)
    for step in range(4):
        before = parameters(agent)
        metrics = agent.update(random_batch("td3", seed=step))
        after = parameters(agent)
        delayed = [name for name in before if "target" in name or name.startswith("actor.")]
        delayed = [name for name in delayed if "center" not in name and "half_range" not in name]
        changed = [not torch.equal(before[name], after[name]) for name in delayed]
        assert all(changed) if step % 2 == 0 else not any(changed)
        assert ("actor_loss" in metrics) == (step % 2 == 0)
        assert not torch.equal(before["critic.heads.0.0.weight"], after["critic.heads.0.0.weight"])


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
@pytest.mark.parametrize("clip_return", [True, False])
def test_targets_clipped_to_return_range(
    algo: str, clip_return: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewards -1, never terminated, target Q of -1000: targets stop at -1 / (1 - gamma)."""
    agent = agent_for(algo, clip_return=clip_return)
    with torch.no_grad():
        for layer in target_q_nets(agent):
            layer.weight.zero_()
            layer.bias.fill_(-1000.0)
    targets: list[torch.Tensor] = []
    td_target = agent._td_target

    def recording_td_target(batch: Any, next_value: torch.Tensor) -> torch.Tensor:
        targets.append(td_target(batch, next_value))
        return targets[-1]

    monkeypatch.setattr(agent, "_td_target", recording_td_target)
    batch = replace(random_batch(algo, reward=-1.0), terminated=np.zeros(64, np.float32))
    agent.update(batch)
    low = -1.0 / (1.0 - agent.config.gamma)
    if clip_return:
        assert targets[0].min().item() >= low - 1e-4
        assert targets[0].max().item() <= 0.0
    else:
        assert targets[0].min().item() < low - 100


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_zero_weights_leave_the_critic_unchanged(algo: str) -> None:
    agent = agent_for(algo)
    critic = agent.q if isinstance(agent, DQNAgent) else agent.critic  # type: ignore[attr-defined]
    before = [p.detach().clone() for p in critic.parameters()]
    agent.update(random_batch(algo, weights=np.zeros(64, np.float32)))
    assert all(torch.equal(a, b) for a, b in zip(before, critic.parameters(), strict=True))
    assert agent.priorities.shape == (64,) and agent.priorities.max() > 0


# --- agents: act ------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_act_shapes_dtypes_bounds(algo: str) -> None:
    agent = agent_for(algo)
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(7, OBS_DIM)) * 100
    goal = rng.normal(size=(7, GOAL_DIM)) * 100
    for deterministic in (True, False):
        for _ in range(5):
            action = agent.act(obs, goal, deterministic=deterministic)
            if algo == "dqn":
                assert action.dtype == np.int64 and action.shape == (7,)
                assert np.all((action >= 0) & (action < N_ACTIONS))
            else:
                assert action.dtype == np.float32 and action.shape == (7, ACT_DIM)
                assert np.all((action >= LOW) & (action <= HIGH))
    first = agent.act(obs, goal, deterministic=True)
    np.testing.assert_array_equal(first, agent.act(obs, goal, deterministic=True))
    explored = np.stack([agent.act(obs, goal, deterministic=False) for _ in range(20)])
    assert np.any(explored != first)


def test_dqn_action_start_and_exploration_rate() -> None:
    config = DQNConfig(hidden=(8,), epsilon=0.5)
    agent = make_agent("dqn", config, 2, 1, gymnasium.spaces.Discrete(3, start=-1), (-1, 0))
    obs, goal = np.zeros((4000, 2)), np.zeros((4000, 1))
    greedy = agent.act(obs, goal, deterministic=True)
    assert set(np.unique(greedy)) <= {-1, 0, 1} and len(np.unique(greedy)) == 1
    explored = agent.act(obs, goal, deterministic=False)
    # epsilon = 0.5 of uniform choices among 3 actions: 2/3 of them differ from greedy
    assert abs(np.mean(explored != greedy) - 0.5 * 2 / 3) < 0.03


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_seeding_is_reproducible_and_leaves_global_rng_alone(algo: str) -> None:
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()  # noqa: NPY002
    a, b = agent_for(algo, seed=3), agent_for(algo, seed=3)
    obs, goal = np.ones((3, OBS_DIM)), np.ones((3, GOAL_DIM))
    np.testing.assert_array_equal(a.act(obs, goal, False), b.act(obs, goal, False))
    assert host(a.update(random_batch(algo))) == host(b.update(random_batch(algo)))
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.random.get_state()[1].tolist() == numpy_state[1].tolist()  # type: ignore[index]  # noqa: NPY002
    c = agent_for(algo, seed=4)
    assert not np.array_equal(a.act(obs, goal, True), c.act(obs, goal, True))


# --- agents: state_dict -----------------------------------------------------------------


def only_plain_types(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str | int) and only_plain_types(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(only_plain_types(v) for v in value)
    return value is None or isinstance(value, torch.Tensor | str | int | float | bool)


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_state_dict_round_trip(algo: str, tmp_path: Path) -> None:
    agent = agent_for(algo, seed=0)
    agent.update_normalizer(np.random.default_rng(0).normal(size=(50, OBS_DIM)), np.ones((50, 3)))
    for seed in range(3):
        agent.update(random_batch(algo, seed=seed))
    state = agent.state_dict()
    assert only_plain_types(state)
    torch.save(state, tmp_path / "agent.pt")
    restored = agent_for(algo, seed=1)
    restored.load_state_dict(torch.load(tmp_path / "agent.pt", weights_only=True))

    obs = np.random.default_rng(2).normal(size=(5, OBS_DIM))
    goal = np.random.default_rng(3).normal(size=(5, GOAL_DIM))
    for deterministic in (True, False):
        np.testing.assert_array_equal(
            agent.act(obs, goal, deterministic), restored.act(obs, goal, deterministic)
        )
    batch = random_batch(algo, seed=9, weights=np.linspace(0.1, 1.0, 64, dtype=np.float32))
    for _ in range(2):
        assert host(agent.update(batch)) == host(restored.update(batch))
    torch.testing.assert_close(agent.priorities, restored.priorities, rtol=0, atol=0)


def test_load_state_dict_of_another_agent_raises() -> None:
    with pytest.raises(ValueError, match="DQNAgent"):
        agent_for("sac").load_state_dict(agent_for("dqn").state_dict())


# --- make_agent -------------------------------------------------------------------------


@pytest.mark.parametrize("algo", BOX_ALGOS)
def test_continuous_algo_rejects_discrete(algo: str) -> None:
    with pytest.raises(ValueError, match=rf"algo='{algo}'.*Box.*Discrete\(4\)"):
        make_agent(algo, None, OBS_DIM, GOAL_DIM, gymnasium.spaces.Discrete(4), (-1, 0))


def test_dqn_rejects_box() -> None:
    with pytest.raises(ValueError, match=r"algo='dqn'.*Discrete.*Box"):
        make_agent("dqn", None, OBS_DIM, GOAL_DIM, space("ddpg"), (-1, 0))


@pytest.mark.parametrize(
    ("algo", "config", "action_space", "reward_range", "match"),
    [
        ("ppo", None, gymnasium.spaces.Discrete(2), (-1, 0), "algo must be one of"),
        ("dqn", SACConfig(), gymnasium.spaces.Discrete(2), (-1, 0), "needs a DQNConfig"),
        ("td3", DDPGConfig(), gymnasium.spaces.Box(-1, 1, (2,)), (-1, 0), "twin_q=True"),
        ("sac", None, gymnasium.spaces.Box(-np.inf, np.inf, (2,)), (-1, 0), "finite bounds"),
        ("sac", None, gymnasium.spaces.Box(-1, 1, (2, 2)), (-1, 0), "1-D Box"),
        ("ddpg", None, gymnasium.spaces.Box(-1, 1, (2,)), (0, -1), "reward_range"),
    ],
)
def test_make_agent_errors(
    algo: str,
    config: Any,
    action_space: gymnasium.spaces.Space,
    reward_range: tuple[float, float],
    match: str,
) -> None:
    with pytest.raises(ValueError, match=match):
        make_agent(algo, config, OBS_DIM, GOAL_DIM, action_space, reward_range)


def test_make_agent_defaults() -> None:
    box = space("ddpg")
    td3 = make_agent("td3", None, OBS_DIM, GOAL_DIM, box, (-1, 0))
    assert isinstance(td3, DDPGAgent) and td3.config == DDPGConfig.td3()
    assert len(td3.critic.heads) == 2
    ddpg = make_agent("ddpg", None, OBS_DIM, GOAL_DIM, box, (-1, 0))
    assert isinstance(ddpg, Agent) and isinstance(agent_for("dqn"), Agent)
    assert isinstance(ddpg, DDPGAgent) and len(ddpg.critic.heads) == 1
    assert ddpg.return_bounds == pytest.approx((-50.0, 0.0))


@pytest.mark.parametrize(
    ("reward_range", "ends", "scale", "low", "high"),
    [
        ((-1.0, 0.0), False, 1.0, -50.0, 0.0),  # Fetch: unchanged
        ((-1.0, 0.0), True, 1.0, -50.0, 0.0),  # bit flipping: unchanged
        ((0.0, 1.0), False, 1.0, 0.0, 50.0),  # PointMaze going on past the goal
        ((0.0, 1.0), True, 50.0, 0.0, 50.0),  # PointMaze ending on success
        ((-10.0, 0.0), False, 0.1, -50.0, 0.0),  # scaled -1/0
        (None, True, 1.0, -math.inf, math.inf),  # unbounded: left alone
    ],
)
def test_value_scale_makes_one_step_of_delay_cost_one(
    reward_range: Any, ends: bool, scale: float, low: float, high: float
) -> None:
    values = ValueScale.of(reward_range, 0.98, ends_on_success=ends)
    assert (values.scale, values.low, values.high) == pytest.approx((scale, low, high))
    if reward_range is not None:
        assert values.high - values.low == pytest.approx(50.0)  # always 1 / (1 - gamma)


def test_critics_start_at_the_top_and_follow_a_change_of_scale() -> None:
    torch.manual_seed(0)
    x = torch.zeros(4, OBS_DIM + GOAL_DIM)
    agent = make_agent("dqn", None, OBS_DIM, GOAL_DIM, space("dqn"), (-1.0, 1.0))
    assert isinstance(agent, DQNAgent)
    before = agent.q(x)
    assert agent.values.high == pytest.approx(25.0)  # (-1, 1) going on: [-25, 25]
    agent.set_terminal_on_success(True)  # [-49.02, 0.98]: moved by the change of the low end
    assert agent.values.low == pytest.approx(-50 / 1.02)
    moved = agent.q(x) - before
    assert torch.allclose(moved, torch.full_like(moved, -50 / 1.02 + 25), atol=1e-4)
    assert torch.allclose(agent.q_target(x), agent.q(x), atol=1e-4)  # targets move too
    zero_one = make_agent(
        "sac", None, OBS_DIM, GOAL_DIM, space("sac"), (0.0, 1.0), terminal_on_success=True
    )
    assert isinstance(zero_one, SACAgent)
    q = zero_one.critic(x, torch.zeros(4, ACT_DIM))
    assert float(q.detach().mean()) == pytest.approx(
        50.0, abs=1.0
    )  # optimistic, as -1/0 starts at 0


# --- configs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (OffPolicyConfig, "hidden", ()),
        (OffPolicyConfig, "hidden", (64, 0)),
        (OffPolicyConfig, "lr", 0.0),
        (OffPolicyConfig, "gamma", 1.0),
        (OffPolicyConfig, "gamma", -0.1),
        (OffPolicyConfig, "polyak", 1.5),
        (OffPolicyConfig, "batch_size", 0),
        (OffPolicyConfig, "clip_obs", -1.0),
        (OffPolicyConfig, "clip_normalized", math.inf),
        (OffPolicyConfig, "clip_return", 1),
        (OffPolicyConfig, "grad_clip", 0.0),
        (OffPolicyConfig, "grad_clip_mode", "l1"),
        (OffPolicyConfig, "normalizer", "zca"),
        (DQNConfig, "epsilon", 1.5),
        (DQNConfig, "double_q", "yes"),
        (DDPGConfig, "action_l2", -1.0),
        (DDPGConfig, "random_eps", 2.0),
        (DDPGConfig, "policy_delay", 0),
        (DDPGConfig, "target_noise", math.nan),
        (SACConfig, "init_alpha", 0.0),
        (SACConfig, "target_entropy", math.nan),
        (SACConfig, "lr_alpha", -1e-3),
    ],
)
def test_bad_config_values(cls: type, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        cls(**{field: value})


def test_config_defaults_and_cli() -> None:
    assert OffPolicyConfig().hidden == (256, 256, 256) and DQNConfig().hidden == (256,)
    td3 = DDPGConfig.td3(hidden=(64,))
    assert (td3.twin_q, td3.policy_delay, td3.target_noise, td3.hidden) == (True, 2, 0.2, (64,))
    parsed = tyro.cli(DDPGConfig, args=["--hidden", "64", "64", "--grad-clip", "1.5"])
    assert parsed == DDPGConfig(hidden=(64, 64), grad_clip=1.5)


# --- normaliser -------------------------------------------------------------------------


def test_normalizer_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(1000, 4)) * np.array([1.0, 10.0, 0.001, 1.0])
    data[:, 3] = 7.0  # constant: std floored at eps
    norm = Normalizer(4)
    np.testing.assert_array_equal(norm.mean, 0.0)
    np.testing.assert_array_equal(norm.std, 1.0)
    for chunk in np.array_split(data, 7):
        norm.update(chunk)
    assert norm.count == 1000
    np.testing.assert_allclose(norm.mean, data.mean(0), rtol=1e-9, atol=1e-12)
    expected_std = np.maximum(data.std(0), 1e-2)
    np.testing.assert_allclose(norm.std, expected_std, rtol=1e-6)
    x = rng.normal(3.0, 30.0, size=(50, 4))
    expected = np.clip((x - data.mean(0)) / expected_std, -5, 5)
    np.testing.assert_allclose(norm.normalize(x), expected, rtol=1e-5, atol=1e-5)
    assert np.abs(norm.normalize(x)).max() == pytest.approx(5.0)
    assert norm.normalize(x).dtype == np.float32


def test_normalizer_clips_raw_inputs_and_sums_across_processes() -> None:
    norm = Normalizer(1, clip_obs=200.0, clip_normalized=1e9)
    norm.update(np.array([[1e6], [-1e6]]))
    np.testing.assert_allclose(norm.mean, [0.0])
    np.testing.assert_allclose(norm.std, [200.0])
    assert norm.normalize(np.array([1e9]))[0] == pytest.approx(1.0)
    a, b, both = Normalizer(2), Normalizer(2), Normalizer(2)
    x, y = np.arange(10.0).reshape(5, 2), np.ones((3, 2))
    a.update(x)
    b.update(y)
    both.update(np.concatenate([x, y]))
    merged = Normalizer(2)
    merged.load_state_dict(
        {key: a.state_dict()[key] + b.state_dict()[key] for key in ("sum", "sumsq", "count")}
    )
    np.testing.assert_allclose(merged.mean, both.mean)
    np.testing.assert_allclose(merged.std, both.std)


class MrlRunningMeanStd:
    """mrl's ``RunningMeanStd`` and ``MeanStdNormalizer`` as ``mrl/modules/normalizer.py``
    (spitis/mrl 97b3b638, lines 7-32 and 92-107) compute them, written here from that
    reading: a count of 1e-4 at mean 0 and variance 1, batches merged by the parallel
    algorithm, inputs clipped to +-200 before counting, ``(x - mean) / sqrt(var + 1e-8)``
    clipped to +-5."""

    def __init__(self, size: int) -> None:
        self.mean, self.var, self.count = np.zeros(size), np.ones(size), 1e-4

    def update(self, x: np.ndarray) -> None:
        x = np.clip(x, -200.0, 200.0)
        n, delta = len(x), x.mean(0) - self.mean
        total = self.count + n
        squares = self.var * self.count + x.var(0) * n + delta**2 * self.count * n / total
        self.mean, self.var, self.count = self.mean + delta * n / total, squares / total, total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        z = (np.clip(x, -200.0, 200.0) - self.mean) / np.sqrt(self.var + 1e-8)
        return np.clip(z, -5.0, 5.0)


def test_the_mrl_form_normalises_as_mrls_running_mean_std() -> None:
    rng = np.random.default_rng(1)
    data = rng.normal(1.3, 0.05, size=(600, 4)) * np.array([1.0, 100.0, 1e-3, 1.0])
    data[:, 3] = 0.42  # constant: mrl's std shrinks to its start's share and 1e-4
    data[5, 0] = 1e4  # clipped to 200 before it is counted
    x = rng.normal(1.3, 0.5, size=(50, 4))
    mrl, ours = MrlRunningMeanStd(4), Normalizer(4, form="mrl")
    np.testing.assert_allclose(ours.normalize(x), mrl.normalize(x), rtol=1e-6)  # the start
    assert ours.std == pytest.approx(np.sqrt(1 + 1e-8)) and ours.count == 0
    for chunk in np.array_split(data, [1, 2, 12, 100, 350]):  # one env step, then more
        mrl.update(chunk)
        ours.update(chunk)
        np.testing.assert_allclose(ours.mean, mrl.mean, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(ours.std, np.sqrt(mrl.var + 1e-8), rtol=1e-6)
        np.testing.assert_allclose(ours.normalize(x), mrl.normalize(x), rtol=1e-5, atol=1e-5)
        on_device = ours.normalize_tensor(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(on_device, mrl.normalize(x), rtol=1e-5, atol=1e-5)
    assert ours.count == 600  # the start is not counted, nor saved
    assert ours.state_dict()["count"] == 600.0
    baselines = Normalizer(4)
    baselines.update(data)
    assert baselines.std[3] == 1e-2 and ours.std[3] < 1e-3  # a floor, or none


@pytest.mark.parametrize("mode", ["norm", "value"])
def test_gradients_are_clipped_by_norm_or_by_value(mode: str) -> None:
    """mrl clips each gradient entry to +-grad_value_clipping (``torch.nn.utils.
    clip_grad_value_`` in ``mrl/algorithms/continuous_off_policy.py``, DDPG); by norm the
    network's whole gradient is scaled to the bound."""
    agent = agent_for("ddpg", grad_clip=1e-3, grad_clip_mode=mode)
    stepped: list[list[torch.Tensor]] = []
    for optimizer in (agent.critic_optimizer, agent.actor_optimizer):  # type: ignore[attr-defined]

        def record(step: Any = optimizer.step, params: Any = optimizer.param_groups[0]) -> Any:
            stepped.append([p.grad.clone() for p in params["params"] if p.grad is not None])
            return step()

        optimizer.step = record
    agent.update(random_batch("ddpg", reward=-1.0))
    assert len(stepped) == 2  # the critic's step, then the actor's
    for grads in stepped:
        flat = torch.cat([g.flatten() for g in grads])
        if mode == "value":
            assert float(flat.abs().max()) == pytest.approx(1e-3)  # clamped entries
            assert float(flat.norm()) > 1e-3
        else:
            assert float(flat.norm()) == pytest.approx(1e-3, rel=1e-3)
            assert float(flat.abs().max()) < 1e-3


def test_the_agent_builds_its_normalisers_in_the_form_asked() -> None:
    assert agent_for("ddpg").obs_normalizer.form == "baselines"
    agent = agent_for("ddpg", normalizer="mrl")
    assert agent.obs_normalizer.form == agent.goal_normalizer.form == "mrl"
    assert agent.obs_normalizer.std == pytest.approx(np.sqrt(1 + 1e-8))


# --- learning ---------------------------------------------------------------------------


def test_dqn_moves_q_toward_fixed_targets() -> None:
    """Every transition terminal, so targets are the rewards: Q regresses onto them."""
    agent = agent_for("dqn", hidden=(64,))
    batch = replace(random_batch("dqn", size=128, seed=5), terminated=np.ones(128, np.float32))
    agent.update_normalizer(batch.observation, batch.goal)
    metrics = [host(agent.update(batch)) for _ in range(200)]
    losses = [m["critic_loss"] for m in metrics]
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10])
    assert metrics[-1]["td_abs_mean"] < 0.5 * metrics[0]["td_abs_mean"]


def test_ddpg_learns_a_one_step_bandit() -> None:
    """Reward -|a - g| for one step: the deterministic action learns to track the goal."""
    config = DDPGConfig(hidden=(64, 64), action_l2=0.0, noise_eps=0.3, random_eps=0.2)
    box = gymnasium.spaces.Box(-1.0, 1.0, (1,))
    agent = make_agent("ddpg", config, 1, 1, box, (-2.0, 0.0), seed=0)
    rng = np.random.default_rng(0)
    size = 128
    obs = np.zeros((size, 1), np.float32)
    agent.update_normalizer(obs, rng.uniform(-0.8, 0.8, size=(1000, 1)))
    for _ in range(300):
        goal = rng.uniform(-0.8, 0.8, size=(size, 1)).astype(np.float32)
        action = agent.act(obs, goal, deterministic=False)
        reward = -np.abs(action - goal)[:, 0]
        done = np.ones(size, np.float32)
        agent.update(Batch(obs, action, reward, obs, goal, goal, goal, done))
    goal = np.linspace(-0.8, 0.8, 33, dtype=np.float32)[:, None]
    error = np.abs(agent.act(np.zeros((33, 1)), goal, deterministic=True) - goal)
    assert error.mean() < 0.1


# --- recipe ingredients: LayerNorm, bfloat16, goal normaliser ------------------------


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_layer_norm_where_asked(algo: str) -> None:
    actor = {} if algo == "dqn" else {"actor_layer_norm": True}  # DQN: no actor, no flag
    agent = agent_for(algo, critic_layer_norm=False, **actor)
    norms = {
        name: sum(isinstance(m, torch.nn.LayerNorm) for m in net.modules())
        for name, net in agent._networks().items()
    }
    assert all(count == (2 if "actor" in name else 0) for name, count in norms.items()), norms
    agent = agent_for(algo, critic_layer_norm=True)
    for name, net in agent._networks().items():
        layers = [m for m in net.modules() if isinstance(m, torch.nn.LayerNorm)]
        heads = len(getattr(net, "heads", [None]))
        assert len(layers) == (0 if "actor" in name else 2 * heads), name
    mlp = next(
        m
        for m in agent._networks()["q" if algo == "dqn" else "critic"].modules()
        if isinstance(m, torch.nn.Sequential)
    )
    with torch.no_grad():
        for module in mlp:  # LayerNorms with weights other than their 1 and bias 0
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 2.0)
                module.bias.uniform_(-0.5, 0.5)
    x = torch.randn(5, mlp[0].in_features)
    layered = x
    for module in mlp:  # the layers in order
        layered = module(layered)
    torch.testing.assert_close(mlp(x), layered)  # the fused forward computes the same
    metrics = host(agent.update(random_batch(algo)))
    assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_bf16_autocast_keeps_parameters_outputs_and_losses_float32(algo: str) -> None:
    agent = agent_for(algo, hidden=(64, 64))
    agent.set_precision("bf16")
    batch = random_batch(algo)
    agent.update_normalizer(batch.observation, batch.goal)
    with agent._autocast():
        x = agent.inputs.host(batch.observation, batch.goal)
        net = agent._networks()["q" if algo == "dqn" else "critic"]
        out = net(x) if algo == "dqn" else net(x, torch.zeros(64, ACT_DIM))
    assert out.dtype == torch.float32  # the output layer runs in float32
    metrics = host(agent.update(batch))
    assert all(math.isfinite(v) for v in metrics.values())
    for net in agent._networks().values():
        assert all(p.dtype == torch.float32 for p in net.parameters())
    assert agent.act(batch.observation, batch.goal, deterministic=True).dtype in (
        np.float32,
        np.int64,
    )
    with pytest.raises(ValueError, match="precision must be"):
        agent.set_precision("fp16")


@pytest.mark.parametrize("algo", ALGOS)
def test_a_bf16_update_trains_every_parameter_of_its_networks(algo: str) -> None:
    """Targets computed under no_grad with a network that is trained in the same update
    (double DQN's argmax, SAC's next action, GCIQL's next value): the cast of a weight made
    there must not be reused without its gradient (an autocast cache did so until
    pytorch/pytorch#165068)."""
    agent = agent_for(algo)
    agent.set_precision("bf16")
    with agent._autocast():
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_cache_enabled()
    batch = random_batch(algo)
    agent.update_normalizer(batch.observation, batch.goal)
    trained = [
        f"{name}.{key}"
        for name, net in agent._networks().items()
        if not name.endswith("_target")
        for key, _ in net.named_parameters()
    ]
    before = parameters(agent)
    agent.update(batch)
    after = parameters(agent)
    for key in trained:
        assert not torch.equal(before[key], after[key]), f"{algo}: {key} unchanged"


def test_bf16_and_fp32_updates_agree_closely() -> None:
    """The same update in both precisions: the Q values differ by bf16 rounding only."""
    fp32, bf16 = agent_for("ddpg", hidden=(256, 256)), agent_for("ddpg", hidden=(256, 256))
    bf16.set_precision("bf16")
    batch = random_batch("ddpg", size=256, seed=2)
    for agent in (fp32, bf16):
        agent.update_normalizer(batch.observation, batch.goal)
        agent.update(batch)
    x = fp32.inputs.host(batch.observation, batch.goal)
    unit = torch.zeros(256, ACT_DIM)
    with torch.no_grad():
        q32 = fp32.critic(x, unit)
        with bf16._autocast():
            q16 = bf16.critic(x, unit)
    assert q16.dtype == torch.float32
    assert (q16 - q32).abs().max() < 0.05 * q32.abs().max() + 1e-3


def test_check_precision() -> None:
    from herkit.runtime.precision import check_precision

    cpu = torch.device("cpu")
    for precision in ("auto", "fp32", "bf16"):
        check_precision(precision, cpu)
    with pytest.raises(ValueError, match="precision must be"):
        check_precision("half", cpu)


def test_bf16_is_native_only_where_the_cpu_has_its_units(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.runtime.precision
    from herkit.bench import environment_info

    cpu = torch.device("cpu")
    zen4 = frozenset({"avx2", "avx512f", "avx512_bf16", "sse2"})
    zen3 = frozenset({"avx2", "sse2"})
    for flags, native, units in (
        (zen4, True, ["avx2", "avx512f", "avx512_bf16"]),
        (zen3, False, ["avx2"]),
    ):
        monkeypatch.setattr(herkit.runtime.precision, "cpu_flags", lambda flags=flags: flags)
        monkeypatch.setattr("herkit.bench.table.cpu_flags", lambda flags=flags: flags)
        assert herkit.runtime.precision.fast_bf16(cpu) is native
        assert environment_info()["vector_units"] == units


def test_goal_normalizer_fed_goals_alone() -> None:
    agent = agent_for("ddpg")
    goals = np.random.default_rng(0).normal(3.0, 2.0, size=(1000, GOAL_DIM))
    agent.update_goal_normalizer(goals)
    assert agent.obs_normalizer.count == 0
    np.testing.assert_allclose(agent.goal_normalizer.mean, goals.mean(0), rtol=1e-6)


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_n_step_discount_replaces_gamma(algo: str) -> None:
    """A zero discount bootstraps nothing, exactly as a terminal step does."""
    terminal, zero_discount = agent_for(algo, seed=4), agent_for(algo, seed=4)
    batch = random_batch(algo, seed=6)
    ones, zeros = np.ones(len(batch), np.float32), np.zeros(len(batch), np.float32)
    for agent, changed in (
        (terminal, {"terminated": ones}),
        (zero_discount, {"terminated": zeros, "discount": zeros}),
    ):
        agent.update_normalizer(batch.observation, batch.goal)
        agent.update(replace(batch, **changed))
    for name, value in parameters(terminal).items():
        torch.testing.assert_close(value, parameters(zero_discount)[name], msg=name)


def test_a_network_saves_each_parameter_once_and_loads_older_states() -> None:
    """The output layer is one entry of the state dict (it was two, ``_last.*`` beside its
    index); a state written that way still loads."""
    from herkit.agents.networks import mlp

    net = mlp(4, (8, 8), 2)
    state = net.state_dict()
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    older = dict(state) | {"_last.weight": state["4.weight"], "_last.bias": state["4.bias"]}
    net.load_state_dict(older)
    assert net.output_layer is net[4]


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_the_targets_move_after_every_target_every_th_update(algo: str) -> None:
    """Polyak applied once per ``target_every`` updates, after the last of them (as
    baselines moves its targets after a cycle's updates); TD3 counts its delayed actor
    steps, with which its targets move."""
    every = 3
    agent = agent_for(algo, target_every=every)
    targets = [net for name, net in agent._networks().items() if "target" in name]
    assert targets

    def weights() -> list[torch.Tensor]:
        return [p.detach().clone() for net in targets for p in net.parameters()]

    moved = []
    for update in range(4 * every * 2):
        before = weights()
        agent.update(random_batch(algo, seed=update))
        if any(not torch.equal(a, b) for a, b in zip(before, weights(), strict=True)):
            moved.append(update)
    delay = agent.config.policy_delay if algo == "td3" else 1
    assert moved == [delay * (m * every - 1) for m in range(1, len(moved) + 1)], moved
    assert len(moved) == 4 * 2 // delay


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_every_network_takes_the_activation_asked(algo: str) -> None:
    """ReLU by default (baselines'), GELU where asked (mrl's Fetch networks)."""
    for activation, kind in (("relu", torch.nn.ReLU), ("gelu", torch.nn.GELU)):
        agent = agent_for(algo, activation=activation)
        for name, net in agent._networks().items():
            used = {type(m) for m in net.modules()} & {torch.nn.ReLU, torch.nn.GELU}
            assert used == {kind}, (name, activation, used)
    with pytest.raises(ValueError, match="activation must be 'relu' or 'gelu', got 'tanh'"):
        agent_for(algo, activation="tanh")


# --- baselines' initialisation and order of steps (DDPG and TD3) ----------------------


def online_layers(agent: Any) -> list[torch.nn.Linear]:
    """The Linear layers of the actor and every critic head, output layers included."""
    nets = [agent.actor, agent.critic]
    return [m for net in nets for m in net.modules() if isinstance(m, torch.nn.Linear)]


@pytest.mark.parametrize("algo", ["ddpg", "td3"])
def test_xavier_init_starts_every_layer_as_baselines(algo: str) -> None:
    """baselines' nn() (her/util.py:62-66) gives every dense layer, the outputs too,
    xavier_initializer's weights (uniform within sqrt(6 / (fan_in + fan_out))) and
    tf.layers.dense's zero biases; the default keeps PyTorch's (within 1 / sqrt(fan_in))."""
    xavier, default = agent_for(algo, init="xavier"), agent_for(algo)
    assert len(online_layers(xavier)) == 3 * (1 + (2 if algo == "td3" else 1))
    for layer in online_layers(xavier):
        fan_out, fan_in = layer.weight.shape
        largest = float(layer.weight.detach().abs().max())
        assert 1 / math.sqrt(fan_in) < largest <= math.sqrt(6 / (fan_in + fan_out))
        assert torch.count_nonzero(layer.bias) == 0
    for layer in online_layers(default):
        bound = 1 / math.sqrt(layer.in_features)
        weight, bias = layer.weight.detach(), layer.bias.detach()
        assert float(weight.abs().max()) <= bound and float(bias.abs().max()) <= bound
        assert torch.count_nonzero(layer.bias) == len(layer.bias)
    for online, target in (
        (xavier.actor, xavier.actor_target),
        (xavier.critic, xavier.critic_target),
    ):
        for a, b in zip(online.parameters(), target.parameters(), strict=True):
            assert torch.equal(a, b)
    with pytest.raises(ValueError, match="init must be one of torch, xavier, orthogonal, got 'he'"):
        DDPGConfig(init="he")  # type: ignore[arg-type]


@pytest.mark.parametrize("algo", ["ddpg", "td3"])
def test_orthogonal_init_starts_every_layer_as_mrl(algo: str) -> None:
    """mrl's layer_init (utils/networks.py:12-16): orthogonal weights, zero biases, the
    actor's and critics' output layers scaled by 0.1 (:120, :162); LayerNorm untouched."""
    agent = agent_for(algo, init="orthogonal", actor_layer_norm=True, critic_layer_norm=True)
    outputs = {id(agent.actor.net.output_layer)} | {
        id(head.output_layer) for head in agent.critic.heads
    }
    layers = online_layers(agent)
    assert len(layers) == 3 * (1 + (2 if algo == "td3" else 1))
    for layer in layers:
        weight = layer.weight.detach().double()
        rows, columns = weight.shape
        gram = weight @ weight.T if rows <= columns else weight.T @ weight
        scale = 0.1 if id(layer) in outputs else 1.0
        eye = torch.eye(min(rows, columns), dtype=torch.float64)
        assert torch.allclose(gram, scale**2 * eye, atol=1e-5)
        assert torch.count_nonzero(layer.bias) == 0
    norms = [m for m in agent.critic.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(bool((m.weight == 1).all()) for m in norms)
    for a, b in zip(agent.critic.parameters(), agent.critic_target.parameters(), strict=True):
        assert torch.equal(a, b)


def one_update_gradients(
    algo: str, step_order: str, mode: str = "eager", device: str = "cpu", before: int = 0
) -> dict[str, Any]:
    """One update of an agent, after ``before`` others: the gradients it gave the actor and
    the critic, and the actor loss's gradient taken by hand with the critic before the
    update and after it."""
    config = small_config(algo, step_order=step_order)
    agent: Any = make_agent(algo, config, OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), device, 1)
    agent.set_update_mode(mode)
    batch = random_batch(algo, seed=0)
    agent.update_normalizer(batch.observation, batch.goal)
    for seed in range(1, before + 1):
        agent.update(random_batch(algo, seed=seed))
    actor, critic = copy.deepcopy(agent.actor), copy.deepcopy(agent.critic)
    x = agent.inputs.prepare(batch, agent.values.scale).x
    agent.update(batch)

    def actor_gradient(critic: Any) -> list[torch.Tensor]:
        pi = actor(x)  # the actor before the update; its loss as ddpg.py:376-377
        loss = -critic(x, pi)[0].mean() + agent.config.action_l2 * pi.square().mean()
        return list(torch.autograd.grad(loss, list(actor.parameters())))

    return {
        "actor": [p.grad for p in agent.actor.parameters()],
        "critic": [p.grad for p in agent.critic.parameters()],
        "actor with the critic before": actor_gradient(critic),
        "actor with the critic after": actor_gradient(agent.critic),
    }


def assert_same_gradients(got: list[torch.Tensor], expected: list[torch.Tensor]) -> None:
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def assert_orders_differ(gradients: dict[str, Any]) -> None:
    """The critic's step moves the actor's gradient far more than the tolerance: the two
    orders are told apart."""
    before, after = (
        gradients["actor with the critic before"],
        gradients["actor with the critic after"],
    )
    assert max(float((a - b).abs().max()) for a, b in zip(before, after, strict=True)) > 1e-4


@pytest.mark.parametrize("algo", ["ddpg", "td3"])
def test_step_order_together_takes_both_gradients_at_the_same_weights(algo: str) -> None:
    """baselines' _grads (her/ddpg.py:249-257) takes the critic's and the actor's gradients
    in one run, then _update (:259-261) steps both: the actor's gradient is the one of the
    critic before its step. critic-first (the default) takes it after the critic's step."""
    together = one_update_gradients(algo, "together")
    first = one_update_gradients(algo, "critic-first")
    assert_orders_differ(together)
    assert_same_gradients(together["actor"], together["actor with the critic before"])
    assert_same_gradients(first["actor"], first["actor with the critic after"])
    assert_same_gradients(together["critic"], first["critic"])  # both at the weights before
    with pytest.raises(ValueError, match="step_order must be one of critic-first, together"):
        DDPGConfig(step_order="actor-first")  # type: ignore[arg-type]


def test_step_order_together_steps_the_critic_alone_between_td3_actor_steps() -> None:
    agent = agent_for("td3", step_order="together")
    for seed in range(4):
        before = parameters(agent)
        agent.update(random_batch("td3", seed=seed))
        after = parameters(agent)
        actor_moved = not torch.equal(before["actor.net.0.weight"], after["actor.net.0.weight"])
        critic_moved = not torch.equal(
            before["critic.heads.0.0.weight"], after["critic.heads.0.0.weight"]
        )
        assert (actor_moved, critic_moved) == (seed % 2 == 0, True)


def test_the_compiled_updates_gelu_is_flaxs_to_float_precision() -> None:
    """``x / (1 + exp(-2z))``, the tanh form of GELU that compiled updates use: within
    float32 rounding of the float64 function, its gradient too, and exact in float64."""
    from herkit.agents.networks import _TanhGelu

    x64 = torch.linspace(-12, 12, 20_001, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.gelu(x64, approximate="tanh").sum().backward()
    x32 = x64.detach().float().requires_grad_()
    y32 = _TanhGelu.apply(x32)
    y32.sum().backward()
    reference = torch.nn.functional.gelu(x64.detach(), approximate="tanh")
    assert (y32.double() - reference).abs().max() < 1e-6
    assert x64.grad is not None and x32.grad is not None
    assert (x32.grad.double() - x64.grad).abs().max() < 5e-7
    assert not torch.isnan(_TanhGelu.apply(torch.tensor([-1e4, 1e4]))).any()  # exp capped
    assert torch.autograd.gradcheck(_TanhGelu.apply, (x64.detach()[::500].requires_grad_(),))
