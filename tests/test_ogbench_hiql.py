"""HIQL against OGBench's: the first update's gradients of every parameter equal those of a
functional transcription of OGBench's ``impls/agents/hiql.py`` (commit 1d41409) written
here, apart from herkit's class (its networks as flax computes them, its three losses, which
parameters each call differentiates: ``params=grad_params`` or the network's own); planted
bugs make them differ; acting is OGBench's ``sample_actions``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
import torch

from herkit import Batch, HerReplayBuffer
from herkit.agents import hiql
from herkit.agents.hiql import HIQLAgent, HIQLConfig

OBS_DIM = 3
"""OGBench's goals are states: observations and goals of one size."""
ACT_DIM = 2
HIDDEN = (32, 32)
TOLERANCE = 1e-6
"""The largest |difference| of a gradient entry allowed, in float32."""


def agent_of(seed: int = 0, **changes: Any) -> HIQLAgent:
    config = HIQLConfig(
        hidden=HIDDEN, batch_size=64, low_alpha=2.0, high_alpha=5.0, rep_dim=6, **changes
    )
    box = np.ones(ACT_DIM, np.float32)
    return HIQLAgent(config, OBS_DIM, OBS_DIM, -box, box, (-1.0, 0.0), seed=seed)


def ogbench_batch(seed: int = 0, size: int = 64) -> dict[str, torch.Tensor]:
    """A batch as OGBench's HGCDataset gives it (goals and targets are states)."""
    rng = np.random.default_rng(seed)

    def states() -> torch.Tensor:
        return torch.as_tensor(rng.normal(size=(size, OBS_DIM)), dtype=torch.float32)

    success = torch.as_tensor(rng.random(size) < 0.2, dtype=torch.float32)
    return {
        "observations": states(),
        "next_observations": states(),
        "actions": torch.as_tensor(rng.uniform(-1, 1, (size, ACT_DIM)), dtype=torch.float32),
        "rewards": success - 1.0,
        "masks": 1.0 - success,
        "value_goals": states(),
        "low_actor_goals": states(),
        "high_actor_goals": states(),
        "high_actor_targets": states(),
    }


def herkit_batch(b: dict[str, torch.Tensor]) -> Batch:
    """The same batch as herkit's buffer gives it."""
    array = {name: value.numpy() for name, value in b.items()}
    return Batch(
        observation=array["observations"],
        action=array["actions"],
        reward=array["rewards"],
        next_observation=array["next_observations"],
        goal=array["value_goals"],
        achieved_goal=array["observations"],
        next_achieved_goal=array["next_observations"],
        terminated=1.0 - array["masks"],
        actor_goal=array["high_actor_goals"],
        low_actor_goal=array["low_actor_goals"],
        high_actor_target=array["high_actor_targets"],
        high_actor_target_observation=array["high_actor_targets"],
    )


# --- OGBench's HIQL, transcribed ---------------------------------------------------------


def dense_layers(module: torch.nn.Module) -> list[dict[str, torch.Tensor]]:
    """An MLP's parameters as flax holds them: per Dense its kernel ``(in, out)`` and bias,
    and the LayerNorm after it (scale, bias), if any."""
    layers: list[dict[str, torch.Tensor]] = []
    for sub in module.modules():
        if isinstance(sub, torch.nn.Linear):
            layers.append({"kernel": sub.weight.detach().T.clone(), "bias": sub.bias.detach()})
        elif isinstance(sub, torch.nn.LayerNorm):
            layers[-1] |= {"scale": sub.weight.detach(), "ln_bias": sub.bias.detach()}
    return [{name: value.clone() for name, value in layer.items()} for layer in layers]


def ogbench_params(agent: HIQLAgent) -> dict[str, Any]:
    """``network.params``: modules_goal_rep, modules_value (an ensemble of 2),
    modules_target_value, modules_low_actor, modules_high_actor."""
    return {
        "goal_rep": dense_layers(agent.goal_rep),
        "value": [dense_layers(head) for head in agent.value.heads],
        "target_value": [dense_layers(head) for head in agent.value_target.heads],
        "low_actor": dense_layers(agent.low_actor),
        "high_actor": dense_layers(agent.high_actor),
    }


def flax_gelu(x: torch.Tensor) -> torch.Tensor:
    """``nn.gelu`` (flax's default, approximate=True: the tanh form)."""
    return torch.nn.functional.gelu(x, approximate="tanh")


def flax_layer_norm(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``nn.LayerNorm()`` (epsilon 1e-6)."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:], scale, bias, eps=1e-6)


def mlp(
    layers: list[dict[str, torch.Tensor]], x: torch.Tensor, activate_final: bool
) -> torch.Tensor:
    """OGBench's ``MLP``: Dense, then (but after the last unless activate_final) GELU and,
    where it has one, LayerNorm."""
    for i, layer in enumerate(layers):
        x = torch.nn.functional.linear(x, layer["kernel"].T, layer["bias"])
        if i + 1 < len(layers) or activate_final:
            x = flax_gelu(x)
            if "scale" in layer:
                x = flax_layer_norm(x, layer["scale"], layer["ln_bias"])
    return x


def gc_actor(layers: list[dict[str, torch.Tensor]], inputs: torch.Tensor) -> torch.Tensor:
    """``GCActor``'s mean: ``actor_net`` (MLP, activate_final) then ``mean_net`` (Dense)."""
    hidden = mlp(layers[:-1], inputs, activate_final=True)
    return torch.nn.functional.linear(hidden, layers[-1]["kernel"].T, layers[-1]["bias"])


def log_prob(mean: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``MultivariateNormalDiag(mean, exp(0)).log_prob(x)``."""
    return (-0.5 * (x - mean).square() - 0.5 * math.log(2 * math.pi)).sum(-1)


class OGBenchHIQL:
    """``HIQLAgent``'s losses; ``params`` (differentiated) and ``network`` (the same values,
    detached) stand for ``grad_params`` and ``self.network.params``."""

    def __init__(self, params: dict[str, Any], network: dict[str, Any], config: dict) -> None:
        self.params, self.network, self.config = params, network, config

    def goal_rep(self, p: dict[str, Any], x: torch.Tensor) -> torch.Tensor:
        x = mlp(p["goal_rep"], x, activate_final=False)
        return x / torch.linalg.norm(x, dim=-1, keepdim=True) * math.sqrt(x.shape[-1])

    def value(self, p: dict[str, Any], name: str, obs: torch.Tensor, goals: torch.Tensor):
        # GCValue(gc_encoder=GCEncoder(state_encoder=Identity(), concat_encoder=goal_rep))
        inputs = torch.cat([obs, self.goal_rep(p, torch.cat([obs, goals], -1))], -1)
        return [mlp(head, inputs, activate_final=False).squeeze(-1) for head in p[name]]

    @staticmethod
    def expectile_loss(adv, diff, expectile):
        weight = torch.where(adv >= 0, expectile, 1 - expectile)
        return weight * diff**2

    def value_loss(self, batch):
        c, net, grad = self.config, self.network, self.params
        next_v1_t, next_v2_t = self.value(
            net, "target_value", batch["next_observations"], batch["value_goals"]
        )
        next_v_t = torch.minimum(next_v1_t, next_v2_t)
        q = batch["rewards"] + c["discount"] * batch["masks"] * next_v_t
        v1_t, v2_t = self.value(net, "target_value", batch["observations"], batch["value_goals"])
        v_t = (v1_t + v2_t) / 2
        adv = q - v_t
        q1 = batch["rewards"] + c["discount"] * batch["masks"] * next_v1_t
        q2 = batch["rewards"] + c["discount"] * batch["masks"] * next_v2_t
        v1, v2 = self.value(grad, "value", batch["observations"], batch["value_goals"])
        value_loss1 = self.expectile_loss(adv, q1 - v1, c["expectile"]).mean()
        value_loss2 = self.expectile_loss(adv, q2 - v2, c["expectile"]).mean()
        return value_loss1 + value_loss2

    def low_actor_loss(self, batch):
        c, net, grad = self.config, self.network, self.params
        v1, v2 = self.value(net, "value", batch["observations"], batch["low_actor_goals"])
        nv1, nv2 = self.value(net, "value", batch["next_observations"], batch["low_actor_goals"])
        adv = (nv1 + nv2) / 2 - (v1 + v2) / 2
        exp_a = torch.minimum(torch.exp(adv * c["low_alpha"]), torch.tensor(100.0))
        goal_reps = self.goal_rep(
            grad, torch.cat([batch["observations"], batch["low_actor_goals"]], -1)
        )
        if not c["low_actor_rep_grad"]:
            goal_reps = goal_reps.detach()
        # GCActor(gc_encoder=GCEncoder(Identity(), concat_encoder=goal_rep)), goal_encoded
        mean = gc_actor(grad["low_actor"], torch.cat([batch["observations"], goal_reps], -1))
        return -(exp_a * log_prob(mean, batch["actions"])).mean()

    def high_actor_loss(self, batch):
        c, net, grad = self.config, self.network, self.params
        v1, v2 = self.value(net, "value", batch["observations"], batch["high_actor_goals"])
        nv1, nv2 = self.value(net, "value", batch["high_actor_targets"], batch["high_actor_goals"])
        adv = (nv1 + nv2) / 2 - (v1 + v2) / 2
        exp_a = torch.minimum(torch.exp(adv * c["high_alpha"]), torch.tensor(100.0))
        # no gc_encoder: concat(observations, goals)
        mean = gc_actor(
            grad["high_actor"], torch.cat([batch["observations"], batch["high_actor_goals"]], -1)
        )
        target = self.goal_rep(
            net, torch.cat([batch["observations"], batch["high_actor_targets"]], -1)
        )
        return -(exp_a * log_prob(mean, target)).mean()

    def total_loss(self, batch):
        return self.value_loss(batch) + self.low_actor_loss(batch) + self.high_actor_loss(batch)


def leaves(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in leaves(tree[key])]
    if isinstance(tree, list):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def ogbench_gradients(agent: HIQLAgent, batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    """OGBench's gradient of the total loss at ``agent``'s parameters, as a tree like
    :func:`ogbench_params` (the target's: zero, as OGBench's)."""
    params = ogbench_params(agent)
    network = {name: value for name, value in params.items()}
    grad = ogbench_params(agent)
    for leaf in leaves(grad):
        leaf.requires_grad_(True)
    config = dataclasses.asdict(agent.config) | {"discount": agent.config.gamma}
    loss = OGBenchHIQL(grad, network, config).total_loss(batch)
    flat = leaves(grad)
    grads = torch.autograd.grad(loss, flat, allow_unused=True)
    for leaf, g in zip(flat, grads, strict=True):
        leaf.grad = torch.zeros_like(leaf) if g is None else g
    return grad


def herkit_gradients(agent: HIQLAgent) -> dict[str, Any]:
    """The gradients herkit's update left on its parameters, as a tree like
    :func:`ogbench_params`."""

    def layers(module: torch.nn.Module) -> list[dict[str, torch.Tensor]]:
        out: list[dict[str, torch.Tensor]] = []
        for sub in module.modules():
            if isinstance(sub, torch.nn.Linear):
                kernel = (
                    torch.zeros_like(sub.weight.T) if sub.weight.grad is None else sub.weight.grad.T
                )
                bias = torch.zeros_like(sub.bias) if sub.bias.grad is None else sub.bias.grad
                out.append({"kernel": kernel, "bias": bias})
            elif isinstance(sub, torch.nn.LayerNorm):
                out[-1] |= {"scale": sub.weight.grad, "ln_bias": sub.bias.grad}
        return out

    return {
        "goal_rep": layers(agent.goal_rep),
        "value": [layers(head) for head in agent.value.heads],
        "target_value": [
            [{k: torch.zeros_like(v) for k, v in layer.items()} for layer in dense_layers(head)]
            for head in agent.value_target.heads
        ],
        "low_actor": layers(agent.low_actor),
        "high_actor": layers(agent.high_actor),
    }


def largest_difference(agent: HIQLAgent, seed: int = 0) -> float:
    """Max |herkit's - OGBench's| over every gradient entry of the first update, each
    leaf's in units of ``1 + max |OGBench's gradient|`` of that leaf: float32 rounding
    grows with the gradient (herkit's GELU computes flax's function in another order
    than the port's ``torch.gelu``; the entries of size 27 differ by 7e-6)."""
    batch = ogbench_batch(seed)
    expected = ogbench_gradients(agent, batch)
    agent.update(herkit_batch(batch))
    got = herkit_gradients(agent)
    mine, theirs = leaves(got), [leaf.grad for leaf in leaves(expected)]
    assert len(mine) == len(theirs)
    assert any(float(t.abs().max()) > 0 for t in theirs)
    return max(
        float((m - t).abs().max() / (1 + t.abs().max())) for m, t in zip(mine, theirs, strict=True)
    )


# --- the comparisons -----------------------------------------------------------------------


@pytest.mark.parametrize("rep_grad", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_first_update_gradients_are_ogbenchs(rep_grad: bool, seed: int) -> None:
    torch.set_num_threads(1)
    agent = agent_of(seed, low_actor_rep_grad=rep_grad)
    difference = largest_difference(agent, seed)
    print(f"HIQL rep_grad={rep_grad} seed={seed}: max |gradient difference| = {difference:.3g}")
    assert difference <= TOLERANCE


def test_the_representation_reaches_every_loss_as_ogbenchs_does() -> None:
    """Without low_actor_rep_grad the representation learns from the value alone; with it
    from the low actor too (the high actor's target never teaches it)."""
    batch = ogbench_batch()
    without, with_grad = agent_of(), agent_of(low_actor_rep_grad=True)
    without.update(herkit_batch(batch))
    with_grad.update(herkit_batch(batch))
    first = next(iter(without.goal_rep.parameters())).grad
    second = next(iter(with_grad.goal_rep.parameters())).grad
    assert first is not None and second is not None and not torch.equal(first, second)


PLANTED = {
    "no length normalisation": lambda agent, mp: mp.setattr(hiql, "length_normalize", lambda x: x),
    "the representation's length 1": lambda agent, mp: mp.setattr(
        hiql, "length_normalize", lambda x: x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    ),
    "the low actor at the high actor's temperature": lambda agent, mp: mp.setattr(
        agent, "config", dataclasses.replace(agent.config, low_alpha=agent.config.high_alpha)
    ),
    "the low advantage's sign flipped": lambda agent, mp: mp.setattr(
        agent, "config", _unchecked(agent.config, low_alpha=-agent.config.low_alpha)
    ),
    "the high advantage's sign flipped": lambda agent, mp: mp.setattr(
        agent, "config", _unchecked(agent.config, high_alpha=-agent.config.high_alpha)
    ),
}


def _unchecked(config: HIQLConfig, **changes: Any) -> HIQLConfig:
    """``config`` with ``changes`` that its checks would refuse."""
    copy = dataclasses.replace(config)
    for name, value in changes.items():
        object.__setattr__(copy, name, value)
    return copy


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_planted_bug_fails_the_comparison(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    agent = agent_of()
    batch = ogbench_batch()
    expected = ogbench_gradients(agent, batch)  # OGBench's, before the bug
    PLANTED[bug](agent, monkeypatch)
    agent.update(herkit_batch(batch))
    mine = leaves(herkit_gradients(agent))
    theirs = [leaf.grad for leaf in leaves(expected)]
    difference = max(float((m - t).abs().max()) for m, t in zip(mine, theirs, strict=True))
    print(f"planted bug {bug!r}: max |gradient difference| = {difference:.3g}")
    assert difference > 1e3 * TOLERANCE


def test_the_target_moves_towards_the_value_before_the_step() -> None:
    agent = agent_of(polyak=0.9)
    agent.update(herkit_batch(ogbench_batch(0)))  # the target starts as the value: unmoved
    before_value = [p.detach().clone() for p in agent.value.parameters()]
    before_target = [p.detach().clone() for p in agent.value_target.parameters()]
    agent.update(herkit_batch(ogbench_batch(1)))
    for target, value, old in zip(
        agent.value_target.parameters(), before_value, before_target, strict=True
    ):
        torch.testing.assert_close(target, 0.9 * old + 0.1 * value, rtol=1e-6, atol=1e-7)


def test_one_adam_steps_every_parameter() -> None:
    agent = agent_of()
    assert list(agent._optimizers()) == ["network"]
    stepped = {id(p) for group in agent.optimizer.param_groups for p in group["params"]}
    for name in ("goal_rep", "value", "low_actor", "high_actor"):
        assert all(id(p) in stepped for p in getattr(agent, name).parameters()), name
    assert not any(id(p) in stepped for p in agent.value_target.parameters())


def test_networks_are_ogbenchs() -> None:
    agent = agent_of()
    rep = agent.config.rep_dim
    phi = dense_layers(agent.goal_rep)
    assert [layer["kernel"].shape[1] for layer in phi] == [*HIDDEN, rep]
    assert phi[0]["kernel"].shape[0] == 2 * OBS_DIM  # [s; g]
    assert all("scale" in layer for layer in phi[:-1]) and "scale" not in phi[-1]
    heads = [dense_layers(head) for head in agent.value.heads]
    assert len(heads) == 2 and heads[0][0]["kernel"].shape[0] == OBS_DIM + rep  # s || phi
    low, high = dense_layers(agent.low_actor), dense_layers(agent.high_actor)
    assert low[0]["kernel"].shape[0] == OBS_DIM + rep and low[-1]["kernel"].shape[1] == ACT_DIM
    assert high[0]["kernel"].shape[0] == 2 * OBS_DIM and high[-1]["kernel"].shape[1] == rep
    assert not any("scale" in layer for layer in low + high)  # OGBench's actors: no LayerNorm
    x = torch.randn(5, 2 * OBS_DIM)
    norms = torch.linalg.vector_norm(agent.goal_rep(x), dim=-1)
    torch.testing.assert_close(norms, torch.full((5,), math.sqrt(rep)))
    # OGBench's fan-avg init: the actors' output layers small, biases zero
    assert float(agent.low_actor.net.output_layer.weight.detach().abs().max()) < 0.1
    assert all(not bool(layer["bias"].any()) for layer in phi + low + high)


def test_acting_is_ogbenchs_sample_actions() -> None:
    """Deterministic: the high actor's mean, length-normalised, the low actor's mean
    towards it, clipped; exploring: a sample at each level, in the box."""
    agent = agent_of()
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(7, OBS_DIM)).astype(np.float32)
    goal = rng.normal(size=(7, OBS_DIM)).astype(np.float32)
    with torch.no_grad():
        agent.low_actor.net.output_layer.weight.mul_(300.0)  # means beyond the box too
        z = agent.high_actor(torch.cat([torch.from_numpy(obs), torch.from_numpy(goal)], -1))
        z = z / torch.linalg.vector_norm(z, dim=-1, keepdim=True) * math.sqrt(z.shape[-1])
        mean = agent.low_actor(torch.cat([torch.from_numpy(obs), z], -1))
    expected = mean.clamp(-1, 1).numpy()
    np.testing.assert_allclose(agent.act(obs, goal, deterministic=True), expected, atol=1e-6)
    explored = agent.act(obs, goal)
    assert np.all(np.abs(explored) <= 1) and not np.allclose(explored, expected)


def test_an_update_drawn_on_the_device_equals_one_on_the_same_batch() -> None:
    """Subgoals drawn within the step (a dataset on CPU tensors) give the update of the
    same batch given as it is."""
    from herkit.buffer.device_sampler import DeviceSampler, uniform_of

    rng = np.random.default_rng(0)
    rows = 40 * 15
    terminals = np.zeros(rows, bool)
    terminals[39::40] = True
    data = {
        "observations": rng.normal(size=(rows, OBS_DIM)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (rows, ACT_DIM)).astype(np.float32),
        "terminals": terminals,
    }
    buffer = HerReplayBuffer.from_dataset(
        data,
        lambda a, d, i: np.zeros(len(a), np.float32),
        device="cpu",
        torch_reward_fn=lambda a, d, i: torch.zeros(len(a)),
        value_goals=(0.2, 0.5, 0.3),
        actor_goals=(0, 1, 0),
        subgoal_steps=5,
        gamma=0.99,
        seed=1,
    )
    sampler = DeviceSampler(buffer)
    drawing, given = agent_of(2), agent_of(2)
    drawing.attach_sampler(sampler.draw, 64)
    for _ in range(3):
        twin = torch.Generator()
        twin.set_state(drawing.generator.get_state())
        flags = sampler.prepare()
        got = sampler.draw(64, uniform_of(twin), **flags)
        assert got.low_actor_goal is not None and got.high_actor_target is not None
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
            low_actor_goal=got.low_actor_goal,
            high_actor_target=got.high_actor_target,
            high_actor_target_observation=got.high_actor_target_observation,
        )
        drawing.update_drawn(flags)
        given.update(batch)
        given.generator.set_state(drawing.generator.get_state())
    for mine, theirs in zip(
        drawing.state_dict()["networks"].values(),
        given.state_dict()["networks"].values(),
        strict=True,
    ):
        for name, value in mine.items():
            torch.testing.assert_close(theirs[name], value, rtol=1e-6, atol=1e-6, msg=name)


def test_a_batch_without_subgoals_is_refused_by_name() -> None:
    batch = dataclasses.replace(herkit_batch(ogbench_batch()), low_actor_goal=None)
    with pytest.raises(ValueError, match="subgoal_steps"):
        agent_of().update(batch)


def test_pointmaze_settings_are_ogbenchs() -> None:
    """The entry's presets are ``impls/hyperparameters.sh``'s HIQL lines for pointmaze, its
    goal mixes and subgoals ``get_config``'s, handed to the buffer."""
    from herkit.agents.registry import agent_entry
    from herkit.config.resolve import preset_config
    from herkit.config.train import TrainConfig

    entry = agent_entry("hiql")
    config = preset_config("pointmaze-medium-navigate-v0", algo="hiql").agent
    assert config == entry.preset_config("pointmaze-teleport-navigate-v0")
    assert (config.high_alpha, config.low_alpha, config.subgoal_steps) == (3.0, 3.0, 25)
    assert (config.expectile, config.rep_dim, config.gamma) == (0.7, 10, 0.99)
    assert (config.hidden, config.lr, config.batch_size) == ((512, 512, 512), 3e-4, 1024)
    assert math.isclose(1 - config.polyak, 0.005) and not config.low_actor_rep_grad
    assert entry.preset_config("pointmaze-giant-navigate-v0").gamma == 0.995
    assert hiql.HIQL_VALUE_GOALS == (0.2, 0.5, 0.3) and hiql.HIQL_ACTOR_GOALS == (0, 1, 0)
    assert (entry.value_goals, entry.actor_goals) == (hiql.HIQL_VALUE_GOALS, hiql.HIQL_ACTOR_GOALS)
    run = TrainConfig(algo="hiql", agent=HIQLConfig(subgoal_steps=7, actor_geom_sample=True))
    settings = run.her_settings()
    assert (settings.subgoal_steps, settings.actor_future) == (7, "geometric")
    assert (settings.value_goals, settings.actor_goals) == ((0.2, 0.5, 0.3), (0, 1, 0))
    assert TrainConfig(algo="hiql").her_settings().actor_future == "uniform"
    assert TrainConfig(algo="gciql").her_settings().subgoal_steps is None
    for field, value in (("subgoal_steps", 0), ("rep_dim", 0), ("low_alpha", -1.0)):
        with pytest.raises(ValueError, match=field):
            HIQLConfig(**{field: value})


def test_the_transcriptions_layers_compute_flaxs_formulas() -> None:
    """``nn.gelu``: ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``; ``nn.LayerNorm``:
    ``(x - mean) / sqrt(var + 1e-6) * scale + bias``."""
    x = torch.linspace(-5, 5, 201, dtype=torch.float64).reshape(3, 67)
    tanh_form = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    torch.testing.assert_close(flax_gelu(x), tanh_form, rtol=1e-12, atol=1e-12)
    scale, bias = torch.rand(67, dtype=torch.float64), torch.rand(67, dtype=torch.float64)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    expected = (x - mean) / torch.sqrt(var + 1e-6) * scale + bias
    torch.testing.assert_close(flax_layer_norm(x, scale, bias), expected, rtol=1e-12, atol=1e-12)
