"""OGBench's CRL (:mod:`herkit.agents.crl`): its first update's gradients against a
functional transcription of OGBench's ``impls/agents/crl.py`` (commit 1d41409), planted
bugs that the comparison catches, the agent's contract, its config and goal mixes, and a
small learning check."""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from herkit import Batch, HerReplayBuffer
from herkit.agents import crl, make_agent
from herkit.agents.crl import CRL_ACTOR_GOALS, CRL_VALUE_GOALS, CRLAgent, CRLConfig
from herkit.agents.registry import agent_entry
from herkit.config.resolve import preset_config
from herkit.config.train import TrainConfig

OBS_DIM, GOAL_DIM, ACT_DIM = 5, 3, 2
UNIT_BOX = gymnasium.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)
WIDE_BOX = gymnasium.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
SMALL = {"hidden": (32, 32), "latent_dim": 16, "batch_size": 64}


def crl_agent(seed: int = 0, space: Any = UNIT_BOX, **changes: Any) -> CRLAgent:
    config = CRLConfig(**{**SMALL, **changes})
    return CRLAgent(config, OBS_DIM, GOAL_DIM, space.low, space.high, (-1.0, 0.0), seed=seed)


def crl_batch(seed: int = 0, size: int = 64, space: Any = UNIT_BOX) -> Batch:
    """Random transitions with a value goal and an actor goal each (CRL reads no reward)."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, OBS_DIM)).astype(np.float32)
    goal = rng.normal(size=(size, GOAL_DIM)).astype(np.float32)
    return Batch(
        observation=obs,
        action=rng.uniform(space.low, space.high, (size, ACT_DIM)).astype(np.float32),
        reward=-np.ones(size, np.float32),
        next_observation=obs + 0.1 * rng.normal(size=obs.shape).astype(np.float32),
        goal=goal,
        achieved_goal=obs[:, :GOAL_DIM],
        next_achieved_goal=obs[:, :GOAL_DIM],
        terminated=np.zeros(size, np.float32),
        actor_goal=rng.normal(size=goal.shape).astype(np.float32),
    )


# --- OGBench's losses, transcribed ----------------------------------------------------------
# impls/utils/networks.py (MLP, GCActor, GCBilinearValue) and impls/agents/crl.py
# (contrastive_loss, actor_loss with actor_loss='ddpgbc' and const_std=True, total_loss)
# as functions of parameter tensors, line by line; nothing of herkit's classes is used.


def flax_gelu(x: torch.Tensor) -> torch.Tensor:
    """``nn.gelu`` (flax's default: ``approximate=True``)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def flax_layer_norm(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``nn.LayerNorm()``: epsilon 1e-6, the variance as ``E[x^2] - E[x]^2`` (flax's fast
    variance)."""
    mean = x.mean(-1, keepdim=True)
    var = torch.clamp((x * x).mean(-1, keepdim=True) - mean * mean, min=0.0)
    return (x - mean) * torch.rsqrt(var + 1e-6) * scale + bias


def ogbench_mlp(x: torch.Tensor, layers: list[dict[str, torch.Tensor]], activate_final: bool):
    """``MLP``: ``Dense -> [gelu -> LayerNorm]`` per layer, the last activated only with
    ``activate_final``; a layer's dict holds ``kernel (in, out)``, ``bias`` and, with
    layer_norm, ``scale`` and ``ln_bias``."""
    for i, layer in enumerate(layers):
        x = x @ layer["kernel"] + layer["bias"]
        if i + 1 < len(layers) or activate_final:
            x = flax_gelu(x)
            if "scale" in layer:
                x = flax_layer_norm(x, layer["scale"], layer["ln_bias"])
    return x


def gc_bilinear_value(params, observations, goals, actions, latent_dim):
    """``GCBilinearValue(ensemble=True, value_exp=False)(..., info=True)``: ``(v, phi, psi)``."""
    phi_inputs = torch.cat([observations, actions], dim=-1)
    phi = torch.stack([ogbench_mlp(phi_inputs, head, False) for head in params["phi"]])
    psi = torch.stack([ogbench_mlp(goals, head, False) for head in params["psi"]])
    v = (phi * psi / math.sqrt(latent_dim)).sum(dim=-1)
    return v, phi, psi


def gc_actor_mode(params, observations, goals):
    """``GCActor(const_std=True)``: the mean of ``MultivariateNormalDiag(means, exp(0))``."""
    inputs = torch.cat([observations, goals], dim=-1)
    outputs = ogbench_mlp(inputs, params["actor_net"], activate_final=True)
    return outputs @ params["mean_net"]["kernel"] + params["mean_net"]["bias"]


def normal_diag_log_prob(loc: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``distrax.MultivariateNormalDiag(loc, scale_diag=ones).log_prob(x)``."""
    log_scale = torch.zeros_like(loc)
    z = (x - loc) / log_scale.exp()
    return (-0.5 * z**2 - log_scale - 0.5 * math.log(2 * math.pi)).sum(-1)


def sigmoid_binary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``optax.sigmoid_binary_cross_entropy``."""
    log_p = F.logsigmoid(logits)
    log_not_p = F.logsigmoid(-logits)
    return -labels * log_p - (1.0 - labels) * log_not_p


def ogbench_contrastive_loss(batch, grad_params, latent_dim):
    batch_size = batch["observations"].shape[0]
    actions = batch["actions"]
    _v, phi, psi = gc_bilinear_value(
        grad_params["critic"], batch["observations"], batch["value_goals"], actions, latent_dim
    )
    logits = torch.einsum("eik,ejk->ije", phi, psi) / math.sqrt(phi.shape[-1])
    # logits.shape is (B, B, e) with one term for positive pair and (B - 1) terms for negative
    I = torch.eye(batch_size)  # noqa: E741 (OGBench's name)
    contrastive_loss = torch.stack(
        [sigmoid_binary_cross_entropy(logits[..., e], I) for e in range(logits.shape[-1])],
        dim=-1,
    )  # jax.vmap(..., in_axes=-1, out_axes=-1)
    return torch.mean(contrastive_loss)


def ogbench_actor_loss(batch, grad_params, params, alpha, latent_dim):
    """DDPG+BC with ``const_std``; the critic is called without ``params=grad_params``: its
    parameters are constants of the loss (``params``, detached)."""
    mode = gc_actor_mode(grad_params["actor"], batch["observations"], batch["actor_goals"])
    q_actions = torch.clip(mode, -1, 1)
    q1, q2 = gc_bilinear_value(
        params["critic"], batch["observations"], batch["actor_goals"], q_actions, latent_dim
    )[0]
    q = torch.minimum(q1, q2)
    # Normalize Q values by the absolute mean to make the loss scale invariant.
    q_loss = -q.mean() / (torch.abs(q).mean() + 1e-6).detach()
    log_prob = normal_diag_log_prob(mode, batch["actions"])
    bc_loss = -(alpha * log_prob).mean()
    return q_loss + bc_loss


def ogbench_total_loss(batch, grad_params, params, alpha, latent_dim):
    critic_loss = ogbench_contrastive_loss(batch, grad_params, latent_dim)
    actor_loss = ogbench_actor_loss(batch, grad_params, params, alpha, latent_dim)
    return critic_loss + actor_loss


# --- herkit's parameters as OGBench's tree ---------------------------------------------------


def flax_layers(net: torch.nn.Module, leaf: Any) -> list[dict[str, torch.Tensor]]:
    """The Dense (and LayerNorm) parameters of an ``nn.Sequential`` of herkit's in order,
    each through ``leaf`` (a kernel is a weight transposed: flax's ``(in, out)``)."""
    layers: list[dict[str, torch.Tensor]] = []
    for name, module in net.named_children():
        if isinstance(module, torch.nn.Linear):
            layers.append(
                {"kernel": leaf(f"{name}.weight").t(), "bias": leaf(f"{name}.bias"), "_": name}
            )
        elif isinstance(module, torch.nn.LayerNorm):
            layers[-1] |= {"scale": leaf(f"{name}.weight"), "ln_bias": leaf(f"{name}.bias")}
    for layer in layers:
        del layer["_"]
    return layers


def ogbench_params(agent: CRLAgent, leaves: dict[str, torch.Tensor]) -> dict[str, Any]:
    """OGBench's parameter tree of ``agent``'s networks, its leaves taken from ``leaves``
    (by herkit's parameter names)."""

    def prefix(name: str) -> Any:
        return lambda key: leaves[f"{name}.{key}"]

    actor = flax_layers(agent.actor.net, prefix("actor.net"))
    critic = {
        part: [
            flax_layers(head, prefix(f"critic.{part}.{i}"))
            for i, head in enumerate(getattr(agent.critic, part))
        ]
        for part in ("phi", "psi")
    }
    return {"actor": {"actor_net": actor[:-1], "mean_net": actor[-1]}, "critic": critic}


def trained_parameters(agent: CRLAgent) -> dict[str, torch.nn.Parameter]:
    return {
        f"{name}.{key}": param
        for name in ("actor", "critic")
        for key, param in getattr(agent, name).named_parameters()
    }


def max_gradient_difference(seed: int, alpha: float, **changes: Any) -> float:
    """The largest ``|herkit - OGBench|`` over every entry of every trained parameter's
    gradient of the first update of a fresh agent (fp32); AssertionError where a gradient
    differs by more than 1e-6."""
    agent = crl_agent(seed=seed, alpha=alpha, **changes)
    batch = crl_batch(seed + 100, size=agent.config.batch_size)
    params = {name: p.detach().clone() for name, p in trained_parameters(agent).items()}
    grad_leaves = {name: p.clone().requires_grad_(True) for name, p in params.items()}
    ogbench_batch = {
        "observations": torch.as_tensor(batch.observation),
        "actions": torch.as_tensor(batch.action),  # a unit box: OGBench's actions as they are
        "value_goals": torch.as_tensor(batch.goal),
        "actor_goals": torch.as_tensor(batch.actor_goal),
    }
    loss = ogbench_total_loss(
        ogbench_batch,
        ogbench_params(agent, grad_leaves),
        ogbench_params(agent, params),
        alpha,
        agent.config.latent_dim,
    )
    names = list(grad_leaves)
    grads = torch.autograd.grad(loss, [grad_leaves[n] for n in names])
    expected = dict(zip(names, grads, strict=True))
    agent.update(batch)  # its gradients stay on the parameters after the step
    worst = 0.0
    for name, param in trained_parameters(agent).items():
        assert param.grad is not None, f"{name} has no gradient"
        diff = float((param.grad - expected[name]).abs().max())
        assert diff <= 1e-6, f"{name}: gradients differ by {diff:.3g}"
        worst = max(worst, diff)
    return worst


@pytest.mark.parametrize(
    ("seed", "alpha", "changes"),
    [
        (0, 0.1, {}),
        (1, 0.03, {"hidden": (64, 64, 64), "latent_dim": 64, "batch_size": 128}),
    ],
)
def test_first_update_gradients_are_ogbench_s(
    seed: int, alpha: float, changes: dict[str, Any]
) -> None:
    worst = max_gradient_difference(seed, alpha, **changes)
    print(f"max |herkit - OGBench| over every gradient entry: {worst:.3g}")
    assert worst <= 1e-6


def _logits_unscaled(phi: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    return torch.bmm(phi, psi.transpose(1, 2))


def _labels_shifted(logits: torch.Tensor) -> torch.Tensor:
    positives = logits.roll(1, dims=2).diagonal(dim1=1, dim2=2)
    return F.softplus(logits).mean() - positives.sum() / logits.numel()


def _q_not_stopped(q: torch.Tensor, log_prob: torch.Tensor, alpha: float) -> Any:
    return -q.mean() / (q.abs().mean() + 1e-6), -(alpha * log_prob).mean()


def _alpha_doubled(q: torch.Tensor, log_prob: torch.Tensor, alpha: float) -> Any:
    return -q.mean() / (q.detach().abs().mean() + 1e-6), -(2 * alpha * log_prob).mean()


@pytest.mark.parametrize(
    ("name", "planted"),
    [
        ("contrastive_logits", _logits_unscaled),
        ("contrastive_loss", _labels_shifted),
        ("ddpg_bc_loss", _q_not_stopped),
        ("ddpg_bc_loss", _alpha_doubled),
    ],
)
def test_a_planted_bug_fails_the_comparison(
    name: str, planted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crl, name, planted)
    with pytest.raises(AssertionError, match="gradients differ"):
        max_gradient_difference(0, 0.1)


# --- config and goals ---------------------------------------------------------------------


def test_defaults_are_ogbench_s_and_pointmaze_s() -> None:
    config = CRLConfig()
    assert (config.hidden, config.latent_dim, config.lr) == ((512,) * 3, 512, 3e-4)
    assert (config.batch_size, config.gamma, config.alpha) == (1024, 0.99, 0.1)
    assert config.critic_layer_norm and not config.actor_layer_norm
    assert config.activation == "gelu" and not config.normalize_inputs
    assert config.actor_init_scale == 1e-2
    entry = agent_entry("crl")
    assert entry.config is CRLConfig and entry.offline and entry.agent_class() is CRLAgent
    assert entry.preset_config("pointmaze-medium-navigate-v0") == CRLConfig(alpha=0.03)
    assert entry.preset_config("antmaze-medium-navigate-v0") == CRLConfig()
    # value goals: future states, geometric; actor goals: future states, uniform
    assert CRL_VALUE_GOALS == entry.value_goals == (0.0, 1.0, 0.0)
    assert CRL_ACTOR_GOALS == entry.actor_goals == (0.0, 1.0, 0.0)


def test_a_crl_run_draws_crl_s_goals_and_pointmaze_s_alpha() -> None:
    settings = TrainConfig(algo="crl").her_settings()
    assert settings.value_goals == CRL_VALUE_GOALS and settings.value_future == "geometric"
    assert settings.actor_goals == CRL_ACTOR_GOALS and settings.gamma == 0.99
    given = TrainConfig(algo="crl").with_her(value_goals=(0.2, 0.5, 0.3)).her_settings()
    assert given.value_goals == (0.2, 0.5, 0.3)
    assert TrainConfig(algo="gciql").her_settings().value_goals == (0.2, 0.5, 0.3)
    preset = preset_config("pointmaze-medium-navigate-v0", algo="crl")
    assert preset.agent_config() == CRLConfig(alpha=0.03)
    assert preset.her_settings().value_goals == CRL_VALUE_GOALS
    agent = make_agent("crl", CRLConfig(**SMALL), OBS_DIM, GOAL_DIM, UNIT_BOX, None)
    assert isinstance(agent, CRLAgent)


@pytest.mark.parametrize(
    ("field", "value"), [("latent_dim", 0), ("alpha", -0.1), ("batch_size", 1), ("lr", 0.0)]
)
def test_a_bad_value_raises_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        CRLConfig(**{field: value})


def test_the_networks_are_ogbench_s() -> None:
    """Two heads of phi(s, a) and psi(g), 3 x 512 -> 512 by default, flax's layers (GELU's
    tanh form, LayerNorm eps 1e-6 after each hidden activation), fan-avg init, zero biases;
    no target network."""
    agent = crl_agent(hidden=(64, 64, 64), latent_dim=24)
    assert set(agent._networks()) == {"actor", "critic"}
    assert len(agent.critic.phi) == len(agent.critic.psi) == 2
    for part, in_dim in (("phi", OBS_DIM + ACT_DIM), ("psi", GOAL_DIM)):
        for head in getattr(agent.critic, part):
            linears = [m for m in head if isinstance(m, torch.nn.Linear)]
            assert [(m.in_features, m.out_features) for m in linears] == [
                (in_dim, 64),
                (64, 64),
                (64, 64),
                (64, 24),
            ]
            assert all(not m.bias.any() for m in linears)
            bound = math.sqrt(6 / (64 + 24))  # Glorot uniform at scale 1, the output too
            top = float(linears[-1].weight.detach().abs().max())
            assert 0.8 * bound < top <= bound
            kinds = [type(m).__name__ for m in head]
            assert kinds == ["Linear", "GELU", "LayerNorm"] * 3 + ["Linear"]
            assert {m.eps for m in head if isinstance(m, torch.nn.LayerNorm)} == {1e-6}
            assert {m.approximate for m in head if isinstance(m, torch.nn.GELU)} == {"tanh"}
    heads = agent.critic.phi
    assert not torch.equal(heads[0][0].weight, heads[1][0].weight)  # drawn apart
    actor = [type(m).__name__ for m in agent.actor.net]
    assert actor == ["Linear", "GELU"] * 3 + ["Linear"]  # OGBench's actor: no LayerNorm


# --- the agent's contract -----------------------------------------------------------------


def test_an_update_gives_every_metric_finite_and_moves_every_network() -> None:
    agent = crl_agent(space=WIDE_BOX)
    before = {k: v.detach().clone() for k, v in trained_parameters(agent).items()}
    metrics = agent.update(crl_batch(space=WIDE_BOX))
    assert set(metrics) == set(CRLAgent.METRICS)
    values = {name: float(value) for name, value in metrics.items()}
    assert all(math.isfinite(value) for value in values.values())
    assert values["v_min"] <= values["v_mean"] <= values["v_max"]
    assert 0 <= values["binary_accuracy"] <= 1 and 0 <= values["categorical_accuracy"] <= 1
    assert values["actor_loss"] == pytest.approx(values["q_loss"] + values["bc_loss"])
    assert agent.priorities.shape == (64,) and not bool(agent.priorities.any())
    after = trained_parameters(agent)
    for net in ("actor.", "critic.phi.0", "critic.phi.1", "critic.psi.0", "critic.psi.1"):
        assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith(net)), net


def test_a_state_dict_round_trip_acts_and_updates_alike() -> None:
    agent = crl_agent(seed=1, space=WIDE_BOX)
    for seed in range(3):
        agent.update(crl_batch(seed, space=WIDE_BOX))
    copy = crl_agent(seed=2, space=WIDE_BOX)
    copy.load_state_dict(agent.state_dict())
    batch = crl_batch(9, space=WIDE_BOX)
    for deterministic in (True, False):
        np.testing.assert_array_equal(
            agent.act(batch.observation, batch.goal, deterministic),
            copy.act(batch.observation, batch.goal, deterministic),
        )
    mine, theirs = agent.update(batch), copy.update(batch)
    assert {k: float(v) for k, v in mine.items()} == {k: float(v) for k, v in theirs.items()}
    copied = trained_parameters(copy)
    for name, param in trained_parameters(agent).items():
        assert torch.equal(param, copied[name]), name


def test_acting_stays_in_the_box() -> None:
    agent = crl_agent(space=WIDE_BOX)
    batch = crl_batch(space=WIDE_BOX)
    with torch.no_grad():  # the mean far out of the box
        agent.actor.net.output_layer.bias.fill_(5.0)
    np.testing.assert_array_equal(
        agent.act(batch.observation, batch.goal, deterministic=True),
        np.tile(WIDE_BOX.high, (64, 1)),
    )
    explore = agent.act(batch.observation, batch.goal)
    assert explore.dtype == np.float32 and explore.shape == (64, ACT_DIM)
    assert np.all(explore >= WIDE_BOX.low) and np.all(explore <= WIDE_BOX.high)


def test_a_batch_without_actor_goals_gives_the_actor_the_value_goal() -> None:
    batch = crl_batch()
    same = Batch(**{**batch.__dict__, "actor_goal": batch.goal.copy()})
    without = Batch(**{**batch.__dict__, "actor_goal": None})
    given, none = crl_agent().update(same), crl_agent().update(without)
    assert {k: float(v) for k, v in given.items()} == {k: float(v) for k, v in none.items()}


# --- learning -------------------------------------------------------------------------------

CHAIN = 25


def chain_buffer(gamma: float) -> HerReplayBuffer:
    """Random walks on states 0..CHAIN-1 (observation one-hot, the goal the observation),
    actions -1 and +1, 40 episodes of 60 steps, drawn with CRL's goal mixes."""
    rng = np.random.default_rng(0)
    one_hot = np.eye(CHAIN, dtype=np.float32)
    observations, actions, terminals = [], [], []
    for _ in range(40):
        state = int(rng.integers(0, CHAIN))
        for step in range(61):
            action = float(rng.choice([-1.0, 1.0]))
            observations.append(one_hot[state])
            actions.append([action])
            terminals.append(step == 60)
            state = int(np.clip(state + action, 0, CHAIN - 1))
    data = {
        "observations": np.asarray(observations),
        "actions": np.asarray(actions, np.float32),
        "terminals": np.asarray(terminals),
    }
    return HerReplayBuffer.from_dataset(
        data,
        lambda achieved, desired, info: np.zeros(len(achieved), np.float32),
        value_goals=CRL_VALUE_GOALS,
        actor_goals=CRL_ACTOR_GOALS,
        gamma=gamma,
        seed=1,
    )


def test_crl_ranks_a_near_goal_above_a_far_one_and_the_step_towards_it_first() -> None:
    """After 400 updates on random walks of a chain (future goals at geometric offsets,
    gamma 0.5), the critic's Q (mean of its heads) of a state 1 step away beats that of
    one 6 steps away (both actions), and the step towards a goal 2 states up beats the
    step away from it."""
    gamma = 0.5
    buffer = chain_buffer(gamma)
    space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    config = CRLConfig(hidden=(32, 32), latent_dim=16, lr=3e-3, batch_size=64, gamma=gamma)
    agent = CRLAgent(config, CHAIN, CHAIN, space.low, space.high, None, seed=0)
    for _ in range(400):
        agent.update(buffer.sample(64))
    one_hot = torch.eye(CHAIN)
    state = torch.arange(4, 15)

    def q(ahead: int, action: float) -> torch.Tensor:
        with torch.no_grad():
            q = agent.critic(one_hot[state], one_hot[state + ahead], torch.full((11, 1), action))
        return q[0].mean(dim=0)

    near, far = q(1, 1.0) + q(1, -1.0), q(6, 1.0) + q(6, -1.0)
    assert bool((near > far + 1.0).all()), (near, far)
    up, down = q(2, 1.0), q(2, -1.0)
    assert bool((up > down).all()), (up, down)
