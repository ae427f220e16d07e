"""herkit's QRL (:mod:`herkit.agents.qrl`) against OGBench's ``impls/agents/qrl.py``
(commit 1d41409): the gradients of a first update equal those of a port of OGBench's losses,
written here line by line in torch from its JAX (flax's layers included) and independent of
herkit's classes, at the same parameters and batch; planted bugs make them differ; and
its distance learns the 1-D chain."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from test_offline_agents import CHAIN, chain_batch

from herkit import Batch
from herkit.agents import qrl
from herkit.agents.qrl import QRL, QRLAgent, QRLConfig

BOX_LOW, BOX_HIGH = -np.ones(2, np.float32), np.ones(2, np.float32)  # unit actions as given


# --- a port of OGBench's QRL (impls/agents/qrl.py, impls/utils/networks.py) ----------------


def dense(x: torch.Tensor, layer: dict[str, torch.Tensor]) -> torch.Tensor:
    """flax ``nn.Dense``: ``x @ kernel + bias``."""
    return x @ layer["kernel"] + layer["bias"]


def gelu(x: torch.Tensor) -> torch.Tensor:
    """``jax.nn.gelu`` (``approximate=True``, flax's ``nn.gelu``)."""
    cdf = 0.5 * (1.0 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x**3))))
    return x * cdf


def layer_norm(x: torch.Tensor, layer: dict[str, torch.Tensor]) -> torch.Tensor:
    """flax ``nn.LayerNorm()`` (epsilon 1e-6, the fast variance ``E[x^2] - E[x]^2``)."""
    mean = x.mean(dim=-1, keepdim=True)
    mean2 = (x * x).mean(dim=-1, keepdim=True)
    var = torch.clamp(mean2 - mean * mean, min=0.0)
    mul = torch.rsqrt(var + 1e-6) * layer["scale"]
    return (x - mean) * mul + layer["ln_bias"]


def mlp_(params: list[dict], x: torch.Tensor, layer_norm_: bool, activate_final: bool = False):
    """OGBench's ``MLP``."""
    for i, layer in enumerate(params):
        x = dense(x, layer)
        if i + 1 < len(params) or activate_final:
            x = gelu(x)
            if layer_norm_:
                x = layer_norm(x, layer)
    return x


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``jax.nn.softplus``: ``logaddexp(x, 0)``."""
    return torch.logaddexp(x, torch.zeros_like(x))


def gc_iqe_value(params, observations, goals, dim_per_component, is_phi=False, info=False):
    """``GCIQEValue.__call__``."""
    alpha = torch.sigmoid(params["alpha"])
    if is_phi:
        phi_s = observations
        phi_g = goals
    else:
        phi_s = mlp_(params["phi"], observations, True)
        phi_g = mlp_(params["phi"], goals, True)

    x = torch.reshape(phi_s, (*phi_s.shape[:-1], -1, dim_per_component))
    y = torch.reshape(phi_g, (*phi_g.shape[:-1], -1, dim_per_component))
    valid = x < y
    xy = torch.cat(torch.broadcast_tensors(x, y), dim=-1)
    ixy = xy.argsort(dim=-1, stable=True)
    sxy = torch.take_along_dim(xy, ixy, dim=-1)
    neg_inc_copies = torch.take_along_dim(valid, ixy % dim_per_component, dim=-1) * torch.where(
        ixy < dim_per_component, -1, 1
    )
    neg_inp_copies = torch.cumsum(neg_inc_copies, dim=-1)
    neg_f = -1.0 * (neg_inp_copies < 0)
    neg_incf = torch.cat([neg_f[..., :1], neg_f[..., 1:] - neg_f[..., :-1]], dim=-1)
    components = (sxy * neg_incf).sum(dim=-1)
    # jnp.max shares the gradient among ties, as torch.amax does
    v = alpha * components.mean(dim=-1) + (1 - alpha) * components.amax(dim=-1)

    if info:
        return v, phi_s, phi_g
    return v


def gc_mrn_value(params, observations, goals, latent_dim, is_phi=False, info=False):
    """``GCMRNValue.__call__``."""
    if is_phi:
        phi_s = observations
        phi_g = goals
    else:
        phi_s = mlp_(params["phi"], observations, True)
        phi_g = mlp_(params["phi"], goals, True)

    sym_s = phi_s[..., : latent_dim // 2]
    sym_g = phi_g[..., : latent_dim // 2]
    asym_s = phi_s[..., latent_dim // 2 :]
    asym_g = phi_g[..., latent_dim // 2 :]
    squared_dist = ((sym_s - sym_g) ** 2).sum(dim=-1)
    quasi = torch.relu((asym_s - asym_g).amax(dim=-1))
    v = torch.sqrt(torch.clamp(squared_dist, min=1e-12)) + quasi

    if info:
        return v, phi_s, phi_g
    return v


def gc_actor(params, observations, goals):
    """``GCActor`` (``const_std``): the mean and the scale of its MultivariateNormalDiag."""
    inputs = torch.cat([observations, goals], dim=-1)
    outputs = mlp_(params["actor_net"], inputs, False, activate_final=True)
    means = dense(outputs, params["mean_net"])
    log_stds = torch.zeros_like(means)
    log_stds = torch.clamp(log_stds, -5, 2)
    return means, torch.exp(log_stds)


def mvn_diag_log_prob(loc, scale, x):
    """distrax ``MultivariateNormalDiag.log_prob``."""
    z = (x - loc) / scale
    return (-0.5 * z**2 - torch.log(scale) - 0.5 * math.log(2 * math.pi)).sum(dim=-1)


def ogbench_total_loss(config: QRLConfig, batch: dict, grad_params: dict, params: dict):
    """``QRLAgent.total_loss`` (IQE, ``actor_loss='ddpgbc'``, ``const_std``): the parts
    taken at ``grad_params`` are differentiated, those at ``params`` (OGBench's
    ``self.network.select(...)(...)`` without ``params=``) are not."""
    k = config.dim_per_component

    def value(p, *args, **kwargs):
        if config.quasimetric == "mrn":
            return gc_mrn_value(p["value"], *args, latent_dim=config.latent_dim, **kwargs)
        return gc_iqe_value(p["value"], *args, dim_per_component=k, **kwargs)

    # value_loss
    d_neg = value(grad_params, batch["observations"], batch["value_goals"])
    d_pos = value(grad_params, batch["observations"], batch["next_observations"])
    lam = torch.exp(grad_params["lam"]["log_value"])
    d_neg_loss = (100 * softplus(5 - d_neg / 100)).mean()
    d_pos_loss = (torch.relu(d_pos - 1) ** 2).mean()
    value_loss = d_neg_loss + d_pos_loss * lam.detach()
    lam_loss = lam * (config.eps - d_pos_loss.detach())
    value_total = value_loss + lam_loss

    # dynamics_loss
    _, ob_reps, next_ob_reps = value(
        grad_params, batch["observations"], batch["next_observations"], info=True
    )
    pred_next_ob_reps = ob_reps + mlp_(
        grad_params["dynamics"], torch.cat([ob_reps, batch["actions"]], dim=-1), True
    )
    dist1 = value(grad_params, next_ob_reps, pred_next_ob_reps, is_phi=True)
    dist2 = value(grad_params, pred_next_ob_reps, next_ob_reps, is_phi=True)
    dynamics_loss = (dist1 + dist2).mean() / 2

    # actor_loss (ddpgbc)
    loc, scale = gc_actor(grad_params["actor"], batch["observations"], batch["actor_goals"])
    q_actions = torch.clamp(loc, -1, 1)
    _, ob_reps, goal_reps = value(params, batch["observations"], batch["actor_goals"], info=True)
    pred_next_ob_reps = ob_reps + mlp_(
        params["dynamics"], torch.cat([ob_reps, q_actions], dim=-1), True
    )
    q = -value(params, pred_next_ob_reps, goal_reps, is_phi=True)
    q_loss = -q.mean() / (torch.abs(q).mean() + 1e-6).detach()
    log_prob = mvn_diag_log_prob(loc, scale, batch["actions"])
    bc_loss = -(config.alpha * log_prob).mean()
    actor_loss = q_loss + bc_loss

    return value_total + dynamics_loss + actor_loss


# --- the same parameters, laid out as OGBench's ----------------------------------------------


def mlp_layers(net: torch.nn.Module, leaf: dict[int, torch.Tensor]) -> list[dict]:
    """The Linear layers of a herkit MLP as flax's (``kernel = weight.T``), each with the
    LayerNorm after it, if any, as leaves of the port."""
    layers: list[dict] = []
    for module in net.modules():
        if isinstance(module, torch.nn.Linear):
            layers.append({"kernel": leaf[id(module.weight)].T, "bias": leaf[id(module.bias)]})
        elif isinstance(module, torch.nn.LayerNorm):
            layers[-1] |= {"scale": leaf[id(module.weight)], "ln_bias": leaf[id(module.bias)]}
    return layers


def ogbench_params(agent: QRLAgent, leaf: dict[int, torch.Tensor]) -> dict:
    actor = mlp_layers(agent.actor.net, leaf)
    return {
        "value": {"phi": mlp_layers(agent.value.phi, leaf)}
        | ({"alpha": leaf[id(agent.value.alpha)]} if hasattr(agent.value, "alpha") else {}),
        "dynamics": mlp_layers(agent.dynamics, leaf),
        "actor": {"actor_net": actor[:-1], "mean_net": actor[-1]},
        "lam": {"log_value": leaf[id(agent.lam.log_value)]},
    }


def trained(agent: QRLAgent) -> dict[str, torch.nn.Parameter]:
    return {
        f"{name}.{key}": param
        for name in ("actor", *agent.TRAINED)
        for key, param in getattr(agent, name).named_parameters()
    }


def qrl_batch(seed: int, size: int, dim: int) -> Batch:
    """Random transitions whose goals are states (OGBench's), actions in the unit box."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, dim)).astype(np.float32)
    return Batch(
        observation=obs,
        action=rng.uniform(-1, 1, (size, 2)).astype(np.float32),
        reward=-np.ones(size, np.float32),
        next_observation=obs + 0.1 * rng.normal(size=obs.shape).astype(np.float32),
        goal=rng.normal(size=(size, dim)).astype(np.float32),
        achieved_goal=obs,
        next_achieved_goal=obs,
        terminated=np.zeros(size, np.float32),
        actor_goal=rng.normal(size=(size, dim)).astype(np.float32),
    )


def gradient_gap(config: QRLConfig, seed: int = 0, size: int = 128, dim: int = 5) -> float:
    """The largest ``|herkit's gradient - the port's|`` over every trained parameter (lam's
    included) of a first update on one batch."""
    agent = QRLAgent(config, dim, dim, BOX_LOW, BOX_HIGH, None, seed=seed)
    params = trained(agent)
    leaves = {name: p.detach().clone().requires_grad_(True) for name, p in params.items()}
    fixed = {name: p.detach().clone() for name, p in params.items()}
    by_id = {id(p): leaves[name] for name, p in params.items()}
    fixed_by_id = {id(p): fixed[name] for name, p in params.items()}
    batch = qrl_batch(seed, size, dim)
    arrays = {
        "observations": batch.observation,
        "next_observations": batch.next_observation,
        "actions": batch.action,
        "value_goals": batch.goal,
        "actor_goals": batch.actor_goal,
    }
    port_batch = {key: torch.from_numpy(value) for key, value in arrays.items()}
    loss = ogbench_total_loss(
        config, port_batch, ogbench_params(agent, by_id), ogbench_params(agent, fixed_by_id)
    )
    port = dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))
    agent.update(batch)
    gaps = []
    for name, param in params.items():  # a gradient herkit lacks counts as zeros
        grad = torch.zeros_like(port[name]) if param.grad is None else param.grad
        gaps.append(float((grad - port[name]).abs().max()))
    return max(gaps)


SMALL = QRLConfig(hidden=(128, 128, 128), latent_dim=128, batch_size=128)
POINTMAZE = dataclasses.replace(QRL.preset_config("pointmaze-medium-navigate-v0"), hidden=(64, 64))
"""OGBench's pointmaze settings (alpha 0.0003), smaller networks."""


def test_the_first_update_has_ogbenchs_gradients() -> None:
    gaps = {
        "3 x 128, latent 128": gradient_gap(SMALL),
        "3 x 512, latent 512 (OGBench's)": gradient_gap(QRLConfig(), seed=1, size=256),
        "pointmaze's alpha": gradient_gap(POINTMAZE, seed=2),
        "MRN": gradient_gap(QRLConfig(hidden=(128, 128), latent_dim=128, quasimetric="mrn")),
    }
    print("max |herkit - OGBench port| per gradient entry:", gaps)
    assert max(gaps.values()) <= 1e-6, gaps


def _iqe_without_max(x, y, k, alpha):
    return ORIGINAL["iqe"](x, y, k, torch.ones_like(alpha))  # the mean of components only


def _lam_sign_flipped(d_neg, d_pos, lam, eps):
    losses = ORIGINAL["value_losses"](d_neg, d_pos, lam, eps)
    d_pos_loss = losses["d_pos_loss"].detach()
    return losses | {"lam_loss": lam * (d_pos_loss - eps)}


def _no_eps(d_neg, d_pos, lam, eps):
    return ORIGINAL["value_losses"](d_neg, d_pos, lam, 0.0)


ORIGINAL = {"iqe": qrl.iqe, "value_losses": qrl.value_losses}
BUGS = {
    "IQE reduced by the mean alone": ("iqe", _iqe_without_max),
    "the multiplier's loss of the opposite sign": ("value_losses", _lam_sign_flipped),
    "the constraint without its margin eps": ("value_losses", _no_eps),
    "the actor's loss trains the dynamics": (
        "call_frozen",
        lambda module, *args: module(*args),
    ),
}


@pytest.mark.parametrize("bug", BUGS)
def test_a_planted_bug_changes_the_gradients(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name, planted = BUGS[bug]
    monkeypatch.setattr(qrl, name, planted)
    gap = gradient_gap(QRLConfig(hidden=(64, 64), latent_dim=64))
    assert gap > 1e-4, (bug, gap)


def test_mrn_is_the_euclidean_part_plus_the_largest_positive_difference() -> None:
    x = torch.tensor([[0.0, 0.0, 1.0, 2.0]])
    y = torch.tensor([[3.0, 4.0, 0.5, 3.0]])
    assert torch.allclose(qrl.mrn(x, y), torch.tensor([5.0 + 0.5]))
    assert torch.allclose(qrl.mrn(y, x), torch.tensor([5.0 + 1.0]))


def test_iqe_measures_the_union_of_the_intervals_of_each_component() -> None:
    x = torch.tensor([[0.0, 1.0, 5.0, 2.0]])  # component 1: [0, 2] u [1, 3]; 2: [5, 6]
    y = torch.tensor([[2.0, 3.0, 6.0, 1.0]])  # and [2, 1] empty
    for alpha, expected in ((1.0, (3.0 + 1.0) / 2), (0.0, 3.0)):
        assert torch.allclose(qrl.iqe(x, y, 2, torch.tensor(alpha)), torch.tensor([expected]))
    assert float(qrl.iqe(x, x, 2, torch.tensor(0.5))) == 0.0


def test_qrl_places_a_goal_one_step_away_nearer_than_one_twenty_steps_away() -> None:
    config = QRLConfig(hidden=(32, 32), latent_dim=16, lr=1e-3, batch_size=128)
    space_low, space_high = -np.ones(1, np.float32), np.ones(1, np.float32)
    agent = QRLAgent(config, 1, 1, space_low, space_high, None, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(100):
        agent.update(chain_batch(rng, 128))
    state = np.arange(5)
    with torch.no_grad():
        near = agent.value(*chain_tensors(state, state + 1))
        far = agent.value(*chain_tensors(state, state + 20))
    assert bool((near + 1 < far).all()), (near, far)  # about 1 and 5 after 100 updates


def chain_tensors(state: np.ndarray, goal: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    def column(v: np.ndarray) -> torch.Tensor:
        return torch.from_numpy((v[:, None] / CHAIN).astype(np.float32))

    return column(state), column(goal)


def test_narrower_goals_take_their_own_phi_and_need_inputs_as_they_are() -> None:
    agent = QRLAgent(QRLConfig(hidden=(16,), latent_dim=16), 4, 2, BOX_LOW, BOX_HIGH, None)
    assert agent.value.phi_goal is not None
    assert agent.value.phi_goal.output_layer.in_features == 16
    with pytest.raises(ValueError, match="normalize_inputs"):
        QRLAgent(QRLConfig(normalize_inputs=True), 4, 2, BOX_LOW, BOX_HIGH, None)
    shared = QRLAgent(QRLConfig(hidden=(16,), latent_dim=16), 4, 4, BOX_LOW, BOX_HIGH, None)
    assert shared.value.phi_goal is None


def test_defaults_are_ogbenchs() -> None:
    config = QRLConfig()
    assert config.hidden == (512, 512, 512) and config.latent_dim == 512
    assert (config.quasimetric, config.dim_per_component, config.eps) == ("iqe", 8, 0.05)
    assert (config.alpha, config.lr, config.batch_size) == (0.003, 3e-4, 1024)
    assert config.critic_layer_norm and not config.actor_layer_norm
    with pytest.raises(ValueError, match="dim_per_component"):
        QRLConfig(latent_dim=12)
    with pytest.raises(ValueError, match="eps"):
        QRLConfig(eps=-1.0)


def test_a_qrl_run_draws_random_value_goals_and_takes_pointmazes_alpha() -> None:
    from herkit.config.resolve import preset_config
    from herkit.config.train import TrainConfig

    settings = TrainConfig(algo="qrl").her_settings()
    assert (settings.value_goals, settings.actor_goals) == ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0))
    assert TrainConfig(algo="gciql").her_settings().value_goals == (0.2, 0.5, 0.3)
    pointmaze = preset_config("pointmaze-medium-navigate-v0", algo="qrl").agent_config()
    assert isinstance(pointmaze, QRLConfig) and pointmaze.alpha == 0.0003
    assert preset_config("antmaze-medium-navigate-v0", algo="qrl").agent_config().alpha == 0.003
