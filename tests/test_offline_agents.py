"""Tests of the offline goal-conditioned agents (GCBC, GCIVL, GCIQL), their configs and the
actor goals of a batch's network inputs."""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch

from herkit import Batch, HerReplayBuffer
from herkit.agents import GCBCAgent, GCIQLAgent, GCIVLAgent, OfflineAgent, make_agent
from herkit.agents.inputs import TorchBatch
from herkit.agents.settings import (
    ALGOS,
    OFFLINE_ALGOS,
    GCBCConfig,
    GCIQLConfig,
    GCIVLConfig,
    OfflineGCConfig,
    config_class,
    default_agent_config,
)
from herkit.agents.registry import agent_entry
from test_agents import ONLINE_ALGOS

OBS_DIM, GOAL_DIM = 4, 2
BOX = gymnasium.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
SMALL = {"hidden": (32, 32), "batch_size": 64}
AGENTS = {"gcbc": GCBCAgent, "gcivl": GCIVLAgent, "gciql": GCIQLAgent}
TARGETED = tuple(algo for algo in OFFLINE_ALGOS if agent_entry(algo).agent_class().TARGETS)
"""The offline agents with target networks (gcivl, gciql)."""
CHAIN = 25
"""States of the 1-D chain dataset."""


def agent_for(algo: str, seed: int = 0, action_space: Any = BOX, **changes: Any) -> Any:
    config = config_class(algo)(**{**SMALL, **changes})
    obs_dim, goal_dim = (1, 1) if action_space is not BOX else (OBS_DIM, GOAL_DIM)
    return make_agent(algo, config, obs_dim, goal_dim, action_space, (-1.0, 0.0), seed=seed)


def offline_batch(seed: int = 0, size: int = 64, actor_goal: bool = True) -> Batch:
    """Random transitions with rewards success - 1 for their value goal, terminated = success,
    and HIQL's subgoals."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, OBS_DIM)).astype(np.float32)
    goal = rng.normal(size=(size, GOAL_DIM)).astype(np.float32)
    success = (rng.random(size) < 0.2).astype(np.float32)
    subgoals = rng.normal(size=(3, size, GOAL_DIM)).astype(np.float32)
    return Batch(
        observation=obs,
        action=rng.uniform(BOX.low, BOX.high, (size, 2)).astype(np.float32),
        reward=success - 1.0,
        next_observation=obs + 0.1 * rng.normal(size=obs.shape).astype(np.float32),
        goal=goal,
        achieved_goal=obs[:, :GOAL_DIM],
        next_achieved_goal=obs[:, :GOAL_DIM],
        terminated=success,
        actor_goal=rng.normal(size=goal.shape).astype(np.float32) if actor_goal else None,
        low_actor_goal=subgoals[0],
        high_actor_target=subgoals[1],
        high_actor_target_observation=np.concatenate([subgoals[2], subgoals[1]], axis=1),
    )


def host(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    return {name: float(value) for name, value in metrics.items()}


def parameters(agent: Any) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": value.detach().clone()
        for name, net in agent._networks().items()
        for key, value in net.state_dict().items()
    }


# --- configs -------------------------------------------------------------------------------


def test_the_offline_algos_are_registered() -> None:
    assert {"gcbc", "gcivl", "gciql"} <= set(OFFLINE_ALGOS) < set(ALGOS)
    assert {"dqn", "ddpg", "td3", "sac"} <= set(ONLINE_ALGOS)
    for algo, cls in (("gcbc", GCBCConfig), ("gcivl", GCIVLConfig), ("gciql", GCIQLConfig)):
        assert config_class(algo) is cls and type(default_agent_config(algo)) is cls
        config = None if algo == "gcbc" else cls(**SMALL)  # None: the defaults (3 x 512)
        assert isinstance(make_agent(algo, config, OBS_DIM, GOAL_DIM, BOX, None), AGENTS[algo])


def test_defaults_are_ogbench_s() -> None:
    for config in (GCBCConfig(), GCIVLConfig(), GCIQLConfig()):
        assert config.hidden == (512, 512, 512) and config.lr == 3e-4
        assert config.batch_size == 1024 and config.gamma == 0.99
        assert math.isclose(1 - config.polyak, 0.005)
        assert config.critic_layer_norm and not config.actor_layer_norm
        assert config.activation == "gelu" and not config.clip_return
    assert (GCIVLConfig().expectile, GCIVLConfig().alpha) == (0.9, 10.0)
    assert (GCIQLConfig().expectile, GCIQLConfig().alpha) == (0.9, 0.3)
    assert GCIQLConfig.pointmaze().alpha == 0.003
    assert GCIQLConfig.pointmaze(hidden=(8,)).hidden == (8,)


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (GCIVLConfig, "expectile", 1.0),
        (GCIQLConfig, "expectile", 0.0),
        (GCIVLConfig, "alpha", -1.0),
        (GCIQLConfig, "alpha", math.nan),
        (GCBCConfig, "activation", "tanh"),
        (GCBCConfig, "actor_init_scale", 0.0),
        (GCIQLConfig, "lr", 0.0),
        (OfflineGCConfig, "hidden", ()),
    ],
)
def test_a_bad_value_raises_naming_the_field(cls: Any, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        cls(**{field: value})


# --- inputs ----------------------------------------------------------------------------


def test_actor_goals_become_actor_inputs_and_old_batches_stay_as_they_were() -> None:
    agent = agent_for("gcivl")
    agent.update_normalizer(
        np.random.default_rng(1).normal(3, 2, (50, OBS_DIM)),
        np.random.default_rng(2).normal(-1, 3, (50, GOAL_DIM)),
    )
    batch = offline_batch()
    with_actor = agent.inputs.prepare(batch, 1.0)
    without = agent.inputs.prepare(Batch(**{**batch.__dict__, "actor_goal": None}), 1.0)
    assert without.actor_x is None and without.next_actor_x is None
    for name in ("x", "next_x", "reward", "not_done"):
        assert torch.equal(getattr(with_actor, name), getattr(without, name))
    expected = agent.inputs.host(batch.observation, batch.actor_goal)
    assert with_actor.actor_x is not None and with_actor.next_actor_x is not None
    assert torch.equal(with_actor.actor_x, expected)
    assert torch.equal(
        with_actor.next_actor_x, agent.inputs.host(batch.next_observation, batch.actor_goal)
    )
    on_torch = agent.inputs.prepare(batch.to_torch(), 1.0)  # a batch of tensors
    assert on_torch.actor_x is not None and torch.allclose(on_torch.actor_x, expected)
    # the old positional layout still builds one, without actor inputs
    old = TorchBatch(*without[:7])
    assert old.actor_x is None and old.next_actor_x is None


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_every_network_computes_as_flax_does(algo: str) -> None:
    """OGBench's JAX layers: GELU's tanh approximation and LayerNorm's epsilon 1e-6 (flax's
    defaults), LayerNorm after the activation, in every network the agent trains."""
    agent = agent_for(algo, actor_layer_norm=True)
    modules = [module for net in agent._networks().values() for module in net.modules()]
    gelus = [module for module in modules if isinstance(module, torch.nn.GELU)]
    norms = [module for module in modules if isinstance(module, torch.nn.LayerNorm)]
    assert gelus and norms
    assert {gelu.approximate for gelu in gelus} == {"tanh"}
    assert {norm.eps for norm in norms} == {1e-6}
    x = torch.linspace(-4, 4, 101)
    flax_gelu = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert torch.allclose(gelus[0](x), flax_gelu, atol=1e-6)
    for net in agent._networks().values():
        layers = [m for m in net.modules() if isinstance(m, (torch.nn.GELU, torch.nn.LayerNorm))]
        assert all(isinstance(a, torch.nn.GELU) for a in layers[::2]), "LayerNorm after GELU"


# --- updates ---------------------------------------------------------------------------


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_an_update_gives_every_metric_finite_and_moves_the_networks(algo: str) -> None:
    agent = agent_for(algo)
    before = parameters(agent)
    metrics = agent.update(offline_batch())
    assert set(metrics) == set(type(agent).METRICS)
    assert all(math.isfinite(value) for value in host(metrics).values())
    assert agent.priorities.shape == (64,)
    assert bool(torch.isfinite(agent.priorities).all())
    if algo == "gcbc":
        assert not bool(agent.priorities.any())
    else:  # a value V, or a distance d(s, g) (QRL's value is -d)
        value = "v" if "v_min" in metrics else "d_neg"
        low, mean, high = (float(metrics[f"{value}_{stat}"]) for stat in ("min", "mean", "max"))
        assert low <= mean <= high
        assert (float(metrics["td_abs_mean"]) > 0) == (algo != "crl")  # CRL: no TD target
    # a target moves towards its online network as it was before the step: not at first
    agent.update(offline_batch(1))
    after = parameters(agent)
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    for name in agent._networks():
        assert any(key.startswith(f"{name}.") for key in changed), f"{name} did not move"


def test_gcbc_loss_is_the_negative_log_likelihood_of_the_actions() -> None:
    agent = agent_for("gcbc")
    batch = offline_batch()
    inputs = agent.inputs.prepare(batch, 1.0)
    with torch.no_grad():
        mean = agent.actor(inputs.actor_x)
    unit = agent.actor.unscale(torch.as_tensor(batch.action))
    expected = (0.5 * (unit - mean).square().sum(-1) + math.log(2 * math.pi)).mean()
    assert math.isclose(float(agent.update(batch)["actor_loss"]), float(expected), rel_tol=1e-5)


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_a_batch_without_actor_goals_gives_the_actor_the_value_goal(algo: str) -> None:
    batch = offline_batch()
    given = agent_for(algo).update(Batch(**{**batch.__dict__, "actor_goal": batch.goal.copy()}))
    without = agent_for(algo).update(Batch(**{**batch.__dict__, "actor_goal": None}))
    other = agent_for(algo).update(batch)
    assert host(given) == host(without)
    assert host(other)["actor_loss"] != host(without)["actor_loss"]


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_a_state_dict_round_trip_acts_and_updates_alike(algo: str) -> None:
    agent = agent_for(algo, seed=1)
    agent.update_normalizer(offline_batch(5).observation, offline_batch(6).goal)
    for seed in range(3):
        agent.update(offline_batch(seed))
    copy = agent_for(algo, seed=2)
    copy.load_state_dict(agent.state_dict())
    batch = offline_batch(9)
    for deterministic in (True, False):
        mine = agent.act(batch.observation, batch.goal, deterministic)
        theirs = copy.act(batch.observation, batch.goal, deterministic)
        np.testing.assert_array_equal(mine, theirs)
    assert host(agent.update(batch)) == host(copy.update(batch))
    after, copied = parameters(agent), parameters(copy)
    assert all(torch.equal(after[name], copied[name]) for name in after)


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_acting_stays_in_the_box_and_deterministic_acting_is_the_clipped_mean(algo: str) -> None:
    agent = agent_for(algo)
    obs, goal = offline_batch().observation, offline_batch().goal
    with torch.no_grad():  # push the mean far out of the box
        agent.actor.net.output_layer.bias.fill_(5.0)
    np.testing.assert_array_equal(
        agent.act(obs, goal, deterministic=True), np.tile(BOX.high, (64, 1))
    )
    explore = agent.act(obs, goal)
    assert explore.dtype == np.float32 and explore.shape == (64, 2)
    assert np.all(explore >= BOX.low) and np.all(explore <= BOX.high)
    with torch.no_grad():
        agent.actor.net.output_layer.bias.fill_(0.0)
        agent.actor.net.output_layer.weight.fill_(0.0)
    np.testing.assert_allclose(
        agent.act(obs, goal, deterministic=True), np.tile((BOX.low + BOX.high) / 2, (64, 1))
    )
    spread = agent.act(obs, goal)
    assert len(np.unique(spread[:, 0])) > 10  # a Gaussian of std 1 in the unit box


def learn_in_mode(algo: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list]:
    """An offline agent after 5 updates on batches with actor goals, its step run as
    ``mode`` runs it (``replayed``: as a captured graph is replayed, on a CPU)."""
    from python_state import ReplayDouble

    from herkit.agents import updates

    agent = agent_for(algo, seed=4)
    if mode == "replayed":
        monkeypatch.setattr(
            updates.torch, "compile", lambda step, **_: ReplayDouble(step, lambda: [agent])
        )
        mode = "compiled"
    agent.set_update_mode(mode)
    agent.log_updates()
    for seed in range(5):
        agent.update(offline_batch(seed).to_torch())
    return agent, agent.update_metrics()


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_offline_updates_replayed_as_a_graph_learn_what_eager_ones_do(
    algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step of a compiled or captured update (a batch of device tensors with its actor goals),
    replayed with Python state put back after each call: no state of the step is Python's."""
    from test_update_modes import assert_same_learning

    eager, rows_eager = learn_in_mode(algo, "eager", monkeypatch)
    replayed, rows_replayed = learn_in_mode(algo, "replayed", monkeypatch)
    assert_same_learning(eager, replayed, rows_eager, rows_replayed, tol=1e-5)
    if algo != "gcbc":  # the actor learned from the actor goals, not the value goals
        without = agent_for(algo, seed=4)
        for seed in range(5):
            without.update(offline_batch(seed, actor_goal=False).to_torch())
        name = "high_actor" if hasattr(eager, "high_actor") else "actor"  # HIQL's takes them
        assert not torch.equal(
            getattr(without, name).net.output_layer.weight,
            getattr(eager, name).net.output_layer.weight,
        )


@pytest.mark.slow("torch.compile compiles each offline agent's update: about a minute each")
@pytest.mark.skipif(
    __import__("shutil").which("g++") is None, reason="torch.compile on a CPU needs g++"
)
@pytest.mark.parametrize("algo", [a for a in OFFLINE_ALGOS if agent_entry(a).value_goals])
def test_a_compiled_offline_update_learns_what_the_eager_one_does(
    algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_update_modes import assert_same_learning

    eager, rows_eager = learn_in_mode(algo, "eager", monkeypatch)
    compiled, rows_compiled = learn_in_mode(algo, "compiled", monkeypatch)
    assert_same_learning(eager, compiled, rows_eager, rows_compiled, tol=1e-4)


def test_an_offline_update_drawn_on_the_device_equals_one_on_the_same_batch() -> None:
    """Value and actor goals drawn within the step (a dataset held on CPU tensors) give
    the update of the same batch given as it is."""
    from herkit.buffer.device_sampler import DeviceSampler, uniform_of

    rng = np.random.default_rng(0)
    rows = 30 * 20
    terminals = np.zeros(rows, bool)
    terminals[29::30] = True
    data = {
        "observations": rng.normal(size=(rows, OBS_DIM)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (rows, 2)).astype(np.float32),
        "terminals": terminals,
    }
    buffer = HerReplayBuffer.from_dataset(
        data,
        lambda a, d, i: np.zeros(len(a), np.float32),
        goal_size=GOAL_DIM,
        device="cpu",
        torch_reward_fn=lambda a, d, i: torch.zeros(len(a)),
        value_goals=(0.2, 0.5, 0.3),
        actor_goals=(0, 1, 0),
        gamma=0.99,
        seed=1,
    )
    sampler = DeviceSampler(buffer)
    drawing, given = agent_for("gcivl", seed=2), agent_for("gcivl", seed=2)
    drawing.attach_sampler(sampler.draw, 64)
    for _ in range(3):
        twin = torch.Generator()
        twin.set_state(drawing.generator.get_state())
        flags = sampler.prepare()
        got = sampler.draw(64, uniform_of(twin), **flags)
        assert got.actor_goal is not None and not torch.equal(got.actor_goal, got.goal)
        batch = Batch(
            got.observation,
            got.action,
            got.reward,
            got.next_observation,
            got.goal,
            got.goal,
            got.goal,
            got.terminated,
            actor_goal=got.actor_goal,
        )
        drawing.update_drawn(flags)
        given.update(batch)
        given.generator.set_state(drawing.generator.get_state())
    for name, value in parameters(drawing).items():
        torch.testing.assert_close(parameters(given)[name], value, rtol=1e-6, atol=1e-6, msg=name)


@pytest.mark.parametrize("algo", OFFLINE_ALGOS)
def test_unknown_update_modes_are_refused(algo: str) -> None:
    agent = agent_for(algo)
    with pytest.raises(ValueError, match="update_mode"):
        agent.set_update_mode("fast")
    assert agent.update_mode == "eager"


def test_offline_agents_take_rewards_as_given() -> None:
    agent = make_agent(
        "gcivl", GCIVLConfig(**SMALL), OBS_DIM, GOAL_DIM, BOX, (0.0, 1.0), terminal_on_success=True
    )
    assert isinstance(agent, OfflineAgent)
    assert agent.values.scale == 1.0 and agent.return_bounds == (-math.inf, math.inf)
    clipped = agent_for("gcivl", clip_return=True)
    assert clipped.return_bounds == pytest.approx((-1 / (1 - clipped.config.gamma), 0.0))


# --- learning ----------------------------------------------------------------------------


def test_gcbc_imitates_a_goal_dependent_action() -> None:
    """a = clip(2 (g - s)) on a 2-D box: learned from the actor goals (the value goals are
    noise) to a small fraction of the actions' variance."""
    rng = np.random.default_rng(0)
    space = gymnasium.spaces.Box(-2.0, 2.0, (2,), np.float32)
    config = GCBCConfig(hidden=(32, 32), lr=1e-3, batch_size=128)
    agent = make_agent("gcbc", config, 2, 2, space, None, seed=0)

    def draw(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        state = rng.uniform(-1, 1, (size, 2)).astype(np.float32)
        goal = rng.uniform(-1, 1, (size, 2)).astype(np.float32)
        return state, goal, np.clip(2 * (goal - state), -2, 2).astype(np.float32)

    state, goal, action = draw(500)
    assert np.mean((agent.act(state, goal, True) - action) ** 2) > 1.0
    for _ in range(300):
        s, g, a = draw(128)
        noise = rng.uniform(-1, 1, g.shape).astype(np.float32)
        agent.update(
            Batch(
                s,
                a,
                np.zeros(128, np.float32),
                s,
                noise,
                s,
                s,
                np.zeros(128, np.float32),
                actor_goal=g,
            )
        )
    assert np.mean((agent.act(state, goal, True) - action) ** 2) < 0.1


def chain_batch(rng: np.random.Generator, size: int) -> Batch:
    """A random walk on states 0..CHAIN-1 (observation s / CHAIN), actions -1 and +1 (unit
    box), value goals the current state (20 %) or uniform; OGBench's reward and mask."""
    state = rng.integers(0, CHAIN, size)
    action = rng.choice([-1.0, 1.0], size)
    next_state = np.clip(state + action.astype(int), 0, CHAIN - 1)
    goal = np.where(rng.random(size) < 0.2, state, rng.integers(0, CHAIN, size))
    success = (state == goal).astype(np.float32)

    def obs(v: np.ndarray) -> np.ndarray:
        return (v[:, None] / CHAIN).astype(np.float32)

    return Batch(
        obs(state),
        action[:, None].astype(np.float32),
        success - 1.0,
        obs(next_state),
        obs(goal),
        obs(state),
        obs(next_state),
        success,
        actor_goal=obs(rng.integers(0, CHAIN, size)),
    )


def chain_agent(algo: str, updates: int) -> Any:
    space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    config = config_class(algo)(hidden=(32, 32), lr=1e-3, polyak=0.9, batch_size=128)
    agent = make_agent(algo, config, 1, 1, space, (-1.0, 0.0), seed=0)
    states = np.arange(CHAIN)[:, None] / CHAIN
    agent.update_normalizer(states, states)
    rng = np.random.default_rng(0)
    for _ in range(updates):
        agent.update(chain_batch(rng, 128))
    return agent


def chain_inputs(agent: Any, state: np.ndarray, goal: np.ndarray) -> torch.Tensor:
    return agent.inputs.host(state[:, None] / CHAIN, goal[:, None] / CHAIN)


def test_gcivl_values_a_goal_one_step_away_above_one_twenty_steps_away() -> None:
    agent = chain_agent("gcivl", 300)
    state = np.arange(5)
    with torch.no_grad():
        near = agent.value(chain_inputs(agent, state, state + 1)).mean(dim=0)
        far = agent.value(chain_inputs(agent, state, state + 20)).mean(dim=0)
    assert bool((near > far + 1.0).all()), (near, far)


@pytest.mark.slow("a learning check")
def test_gciql_prefers_the_action_towards_the_goal() -> None:
    agent = chain_agent("gciql", 600)
    up = torch.ones(5, 1)
    low, high = np.arange(5), np.arange(20, 25)
    with torch.no_grad():
        ahead = chain_inputs(agent, low, low + 10)  # the goal is up the chain
        behind = chain_inputs(agent, high, high - 10)  # the goal is down the chain
        q_ahead = (
            agent.critic(ahead, up).min(dim=0).values - agent.critic(ahead, -up).min(dim=0).values
        )
        q_behind = (
            agent.critic(behind, -up).min(dim=0).values - agent.critic(behind, up).min(dim=0).values
        )
        v_near = agent.value(chain_inputs(agent, low, low + 1))[0]
        v_far = agent.value(chain_inputs(agent, low, low + 20))[0]
    assert bool((q_ahead > 0).all()) and bool((q_behind > 0).all()), (q_ahead, q_behind)
    assert bool((v_near > v_far).all())


@pytest.mark.parametrize("algo", TARGETED)
def test_an_offline_agents_targets_move_every_target_every_th_update(algo: str) -> None:
    agent = agent_for(algo, target_every=2)
    targets = [net for name, net in agent._networks().items() if "target" in name]
    moved = []
    for update in range(6):
        before = [p.detach().clone() for net in targets for p in net.parameters()]
        agent.update(offline_batch(seed=update))
        after = [p.detach() for net in targets for p in net.parameters()]
        moved.append(any(not torch.equal(a, b) for a, b in zip(before, after, strict=True)))
    assert moved == [False, True, False, True, False, True]
