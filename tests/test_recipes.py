"""The named recipes hold the values of the code they cite, field by field: each value below
is read from that code (openai/baselines at ea25b9e8, spitis/mrl at 97b3b638), with the
file and line it stands on, and compared with what ``--recipe NAME`` sets (a name under
``agent.`` is read from the agent the recipe's settings build)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from herkit.config.recipes import RECIPES
from herkit.config.resolve import run_directory
from herkit.config.run import config_for
from herkit.config.train import config_from_dict

WORKERS, ROLLOUTS, T = 19, 2, 50  # README.md:27-31 (mpirun -np 19 ... --num_env=2); Fetch's T
CYCLE_ENV_STEPS = WORKERS * ROLLOUTS * T  # her.py:41-46: each cycle, every env's episode ...
CYCLE_UPDATES = 40  # config.py:35 n_batches: ... then 40 updates, then update_target_net()
WORKER_BUFFER = 10**6  # config.py:26 buffer_size, per worker (ddpg.py:103 keeps it whole)

CITED: dict[str, dict[str, Any]] = {
    "baselines": {
        "n_envs": WORKERS * ROLLOUTS,
        "updates_per_step": CYCLE_UPDATES / CYCLE_ENV_STEPS,
        "warmup_steps": CYCLE_ENV_STEPS,  # the first updates follow the first cycle
        "random_steps": 0,
        "buffer_size": 5_000_000,  # every transition of a run kept, as each worker's 1M does
        "precision": "fp32",  # ddpg.py:89-92, float32 batches; networks in tf.layers' float32
        "ddpg.hidden": (256,) * 3,  # config.py:21-22 layers 3, hidden 256
        "ddpg.activation": "relu",  # util.py:57-72
        "ddpg.init": "xavier",  # util.py:62-66 xavier_initializer on every layer, output too;
        # tf.layers.dense's biases start at zero
        "ddpg.lr": 1e-3,  # config.py:24-25 Q_lr, pi_lr
        "ddpg.gamma": 1 - 1 / T,  # config.py:103
        "ddpg.polyak": 0.95,  # config.py:27
        "ddpg.target_every": CYCLE_UPDATES,  # her.py:46, once per cycle
        "ddpg.batch_size": WORKERS * 256,  # config.py:36, per worker; gradients all-reduced
        "ddpg.action_l2": 1.0,  # config.py:28
        "ddpg.noise_eps": 0.2,  # config.py:41
        "ddpg.random_eps": 0.3,  # config.py:40
        "ddpg.clip_obs": 200.0,  # config.py:29
        "ddpg.clip_normalized": 5.0,  # config.py:47 norm_clip
        "ddpg.clip_return": True,  # config.py:166-167, to [-1 / (1 - gamma), 0]
        "ddpg.step_order": "together",  # ddpg.py:249-257 _grads: Q and pi gradients in one
        # run at the same weights, then ddpg.py:259-261 _update: both Adam steps
        "her.strategy": "future",  # config.py:43
        "her.k": 4,  # config.py:44
        "agent.obs_normalizer.eps": 0.01,  # config.py:46 norm_eps, the std's floor
        "agent.goal_normalizer.eps": 0.01,  # (normalizer.py:57-60: std >= eps)
    },
    "mrl-push": {
        "n_envs": 12,  # continuous_off_policy.py:44 num_envs, which train_mega.py:44-46
        # replaces by max(cpu_count - 1, 1) (--num_envs: default None, :288): fixed here
        "updates_per_step": 1.0,  # :68 optimize_every 1
        "warmup_steps": 2500,  # :70 warm_up
        "random_steps": 5000,  # :71 initial_explore
        "buffer_size": 1_000_000,  # :72 replay_size
        "precision": "fp32",  # agent_base.py:270 torch.FloatTensor; no autocast in mrl
        "ddpg.hidden": (512,) * 3,  # train_mega.py:284 layers
        "ddpg.activation": "gelu",  # :36 activ, passed by train_mega.py (make_activ)
        "ddpg.actor_layer_norm": True,  # train_mega.py:153, 155 (nn.LayerNorm)
        "ddpg.critic_layer_norm": True,
        "ddpg.lr": 1e-3,  # :62-63 actor_lr, critic_lr
        "ddpg.gamma": 0.98,  # :61
        "ddpg.polyak": 1 - 0.05,  # :67 target_network_update_frac
        "ddpg.target_every": 40,  # :66 target_network_update_freq
        "ddpg.batch_size": 2000,  # :69
        "ddpg.action_l2": 0.1,  # :65 action_l2_regularization
        "ddpg.noise_eps": 0.1,  # :74 action_noise
        "ddpg.random_eps": 0.1,  # :75 eexplore
        "ddpg.clip_return": True,  # :73 clip_target_range (-50, 0)
        "ddpg.clip_obs": 200.0,  # train_mega.py:65 MeanStdNormalizer(): normalizer.py:93
        "ddpg.clip_normalized": 5.0,  # clip_before 200, clip_after 5 (normalizer.py:102, 107)
        "ddpg.init": "orthogonal",  # utils/networks.py:12-16 layer_init (FCBody :102-103),
        # output layers scaled by 0.1 (Actor :120, Critic :162)
        "ddpg.normalizer": "mrl",  # normalizer.py:93 epsilon 1e-8, :107 sqrt(var + eps);
        # RunningMeanStd's start, count 1e-4 at mean 0, var 1 (normalizer.py:9-12)
        "agent.obs_normalizer.form": "mrl",
        "agent.goal_normalizer.form": "mrl",
        "normalize_relabelled_goals": False,  # counted when acting only (algorithms/
        # continuous_off_policy.py:35-36, update=self.training); online_her_buffer.py:201-204
        # normalises sampled batches with update=False
        "ddpg.grad_clip": 5.0,  # :79 grad_value_clipping 5 (grad_norm_clipping -1, :17)
        "ddpg.grad_clip_mode": "value",  # algorithms/continuous_off_policy.py:283-284,
        # 309-310 clip_grad_value_, the critic's and the actor's
        "ddpg.step_order": "critic-first",  # algorithms/continuous_off_policy.py:274-286
        # steps the critic, :291-296 then takes the actor's loss with the stepped critic
        "her.goal_mix": (0.1, 0.4, 0.4, 0.1),  # :78 rfaab_1_4_3_1_1 with behavioural =
        # desired (test_mrl_push_mixes_goals_as_protoge_draws_them)
        "her.goal_mix_warmup": 25_000,  # :51 future_warm_up
    },
    "mrl-slide": {
        "n_envs": 8,  # experiments/benchmarks/her.txt:2, 4 --num_envs 8
        "updates_per_step": 0.5,  # :91 optimize_every 2
        "warmup_steps": 5000,  # :89 warm_up
        "random_steps": 10_000,  # :88 initial_explore
        "buffer_size": 2_500_000,  # :87 replay_size
        "precision": "fp32",  # agent_base.py:270
        "ddpg.hidden": (512,) * 3,  # train_her.py:87
        "ddpg.activation": "gelu",  # networks.py:91: train_her.py passes no activ (GELU)
        "ddpg.actor_layer_norm": True,  # train_her.py:54, 56
        "ddpg.critic_layer_norm": True,
        "ddpg.lr": 1e-3,  # :62-63, kept from protoge_config
        "ddpg.gamma": 0.98,  # :61
        "ddpg.polyak": 1 - 0.05,  # :67
        "ddpg.target_every": 10,  # :92 target_network_update_freq
        "ddpg.batch_size": 2000,  # :69, kept from protoge_config
        "ddpg.action_l2": 0.01,  # :90
        "ddpg.noise_eps": 0.1,  # :74
        "ddpg.random_eps": 0.2,  # :84 eexplore
        "ddpg.grad_clip": None,  # :85 grad_value_clipping -1 (grad_norm_clipping -1, :17)
        "ddpg.grad_clip_mode": "value",  # the kind mrl clips by, off here (algorithms/
        # continuous_off_policy.py:283: only when > 0)
        "ddpg.step_order": "critic-first",  # algorithms/continuous_off_policy.py:274-296
        "ddpg.clip_obs": 200.0,  # train_her.py:38 MeanStdNormalizer(): normalizer.py:93
        "ddpg.clip_normalized": 5.0,
        "ddpg.init": "orthogonal",  # utils/networks.py:12-16, 120, 162 (train_her.py:54-56)
        "ddpg.normalizer": "mrl",  # normalizer.py:93, 107, 9-12
        "agent.obs_normalizer.form": "mrl",
        "agent.goal_normalizer.form": "mrl",
        "normalize_relabelled_goals": False,  # train_her.py:36-39: the same ActorPolicy and
        # OnlineHERBuffer (algorithms/continuous_off_policy.py:35-36, online_her_buffer.py:202)
        "her.goal_mix": (0.2, 0.4, 0.4),  # :86 futureactual_2_2 (online_her_buffer.py:240-246)
        "her.goal_mix_warmup": 25_000,  # :51
    },
}


def field(config: Any, name: str) -> Any:
    if name.startswith("agent."):
        config, name = agent_of(config), name.removeprefix("agent.")
    for part in name.split("."):  # the run's agent settings by its algorithm's name
        config = (
            config.agent_config()
            if part == getattr(config, "algo", None)
            else (getattr(config, part))
        )
    return config


def agent_of(config: Any) -> Any:
    """The agent ``config`` trains on FetchPush's sizes (25 observations, 3 goals, 4 actions)."""
    import gymnasium

    from herkit.agents import make_agent

    box = gymnasium.spaces.Box(-1.0, 1.0, (4,))
    return make_agent(config.algo, config.agent_config(), 25, 3, box, (-1.0, 0.0), seed=0)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipe_holds_the_values_of_the_code_it_cites(recipe: str) -> None:
    config = config_for("FetchPush-v4", recipe=recipe)
    assert config.algo == "ddpg" and config.recipe == recipe
    for name, cited in CITED[recipe].items():
        assert field(config, name) == pytest.approx(cited), name
    mix = config.her.goal_mix
    assert mix is None or sum(mix) == pytest.approx(1.0)


def test_baselines_and_herkit_keep_every_transition_of_a_fetch_run() -> None:
    """Each of baselines' 19 workers keeps 1M transitions (replay_buffer.py:18: 20,000
    episodes of T = 50) and stores its 2 envs' episodes, 1/19 of the run's env steps
    (her.py:41-43): no run below 19M env steps overwrites one. herkit's one buffer of 5M
    keeps every transition of a run up to 5M env steps, past every Fetch budget; runs
    longer than that would differ."""
    for env_id in ("FetchPush-v4", "FetchSlide-v4", "FetchPickAndPlace-v4"):
        config = config_for(env_id, recipe="baselines")
        assert config.steps / WORKERS <= (WORKER_BUFFER // T) * T
        assert config.steps <= config.buffer_size < WORKERS * WORKER_BUFFER


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_a_recipe_trains_in_float32_unless_told(recipe: str) -> None:
    """A recipe's run never takes bfloat16 where the machine would (--precision auto):
    the codes it cites train in float32; --precision bf16 still asks for it."""
    assert config_for("FetchPush-v4", recipe=recipe).precision == "fp32"
    assert config_for("FetchPush-v4", recipe=recipe, precision="bf16").precision == "bf16"
    assert config_for("FetchPush-v4").precision == "auto"


def rfaab(mode: str) -> dict[str, float]:
    """The goal shares of an mrl ``rfaab_R_F_A_A_B`` mode, as parse_hindsight_mode computes
    them (online_her_buffer.py:261-267: each weight over their sum) and sample() draws them
    (:119-120: np.random.multinomial, whose last share, real's, is what the others leave)."""
    real, future, actual, achieved, behavioural = (float(w) for w in mode.split("_")[1:])
    total = real + future + actual + achieved + behavioural
    shares = {
        "future": future / total,
        "actual": actual / total,
        "achieved": achieved / total,
        "behavioural": behavioural / total,
    }
    return {"real": 1.0 - sum(shares.values())} | shares


def test_mrl_push_mixes_goals_as_protoge_draws_them() -> None:
    """protoge's ``rfaab_1_4_3_1_1`` (continuous_off_policy.py:78) is real 0.1, future 0.4,
    actual 0.3, achieved 0.1 and behavioural 0.1. train_mega.py builds no ag_curiosity
    without --ag_curiosity (default None, :306; :79), so a transition's behavioural goal is
    its desired goal (online_her_buffer.py:84-85, stored as ``bg``, :88-89), and the
    behavioural share draws the ``bg`` of a transition chosen uniformly from the buffer
    (shared_buffer.py:82-83) as the actual share draws its ``dg`` (:46-47): desired 0.4. The
    achieved share draws the ``ag`` of a transition chosen uniformly from the buffer, any
    episode's (shared_buffer.py:64-65), ``ag`` being the achieved goal of its next state
    (online_her_buffer.py:75-78): herkit's fourth weight, the random strategy's goal. The
    real share keeps the stored ``bg`` (online_her_buffer.py:128-129), the desired goal."""
    shares = rfaab("rfaab_1_4_3_1_1")
    assert shares == pytest.approx(
        {"real": 0.1, "future": 0.4, "actual": 0.3, "achieved": 0.1, "behavioural": 0.1}
    )
    desired = shares["actual"] + shares["behavioural"]  # bg == dg without curiosity
    mix = config_for("FetchPush-v4", recipe="mrl-push").her.goal_mix
    assert mix == pytest.approx((shares["real"], shares["future"], desired, shares["achieved"]))


def test_mrl_push_runs_the_configs_envs_on_every_machine() -> None:
    """train_mega.py:44-46 runs max(cpu_count - 1, 1) envs unless --num_envs is given (its
    default None, :288; add_config_args cannot add the config's --num_envs over it, the
    clash swallowed, misc.py:97-104), so mrl's count follows the machine: the config's 12
    (continuous_off_policy.py:44) is that rule on 13 CPUs. The recipe runs 12 everywhere,
    one setup for every machine; --n-envs gives the rule's count of another."""

    def train_mega_envs(cpus: int, num_envs: int | None = None) -> int:
        return max(cpus - 1, 1) if num_envs is None else num_envs

    assert config_for("FetchPush-v4", recipe="mrl-push").n_envs == train_mega_envs(13) == 12
    assert config_for("FetchPush-v4", recipe="mrl-push", n_envs=train_mega_envs(2)).n_envs == 1
    assert config_for("FetchSlide-v4", recipe="mrl-slide").n_envs == train_mega_envs(2, 8)


def test_mrl_feeds_its_normalisers_only_the_steps_it_acts_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mrl counts the observation and goal its policy acts on, when it acts (algorithms/
    continuous_off_policy.py:35-36), never a sampled or relabelled goal (online_her_buffer.py:
    201-204): a short run of the recipe (small networks) feeds the normalisers, in mrl's
    form, each env step's observation and desired goal as the policy saw them, and nothing
    else."""
    from herkit.agents.base import GoalAgent
    from herkit.training.loop import train

    acted: list[tuple[np.ndarray, np.ndarray]] = []
    fed: list[tuple[np.ndarray, np.ndarray]] = []
    act, feed = GoalAgent.act, GoalAgent.update_normalizer

    def spy_act(self: GoalAgent, observation: Any, goal: Any, *args: Any, **kw: Any) -> Any:
        if not kw.get("deterministic", args[0] if args else False):  # not an evaluation
            acted.append((np.array(observation), np.array(goal)))
        return act(self, observation, goal, *args, **kw)

    def spy_feed(self: GoalAgent, observation: Any, goal: Any) -> None:
        fed.append((np.array(observation), np.array(goal)))
        feed(self, observation, goal)

    def no_goals(self: GoalAgent, goal: Any) -> None:
        raise AssertionError("a sampled goal was counted")

    monkeypatch.setattr(GoalAgent, "act", spy_act)
    monkeypatch.setattr(GoalAgent, "update_normalizer", spy_feed)
    monkeypatch.setattr(GoalAgent, "update_goal_normalizer", no_goals)
    # the recipe's settings on a fast env (--recipe itself is for the Fetch tasks)
    recipe = config_for("herkit/PointReach-v0", **RECIPES["mrl-push"])
    config = dataclasses.replace(
        recipe,
        n_envs=2,
        steps=80,
        warmup_steps=20,
        random_steps=0,
        buffer_size=1_000,
        eval_every=80,
        eval_episodes=1,
        progress=False,
        tensorboard=False,
        out=str(tmp_path / "run"),
        agent=dataclasses.replace(recipe.agent_config(), hidden=(16,), batch_size=16),
        her=dataclasses.replace(recipe.her, goal_mix_warmup=0),
    )
    summary = train(config)
    assert summary["env_steps"] == 80 and summary["updates"] > 0
    assert len(acted) == len(fed) == 40  # 40 iterations of 2 envs
    for (obs, goal), (fed_obs, fed_goal) in zip(acted, fed, strict=True):
        np.testing.assert_array_equal(fed_obs, obs)
        np.testing.assert_array_equal(fed_goal, goal)


def test_a_recipe_replaces_the_learning_settings_and_keeps_the_budget() -> None:
    preset = config_for("FetchSlide-v4")
    slide = config_for("FetchSlide-v4", recipe="mrl-slide")
    assert (slide.steps, slide.eval_every, slide.eval_episodes) == (
        preset.steps,
        preset.eval_every,
        preset.eval_episodes,
    )
    assert slide.agent != preset.agent and slide.n_envs != preset.n_envs
    changed = config_for("FetchSlide-v4", recipe="mrl-slide", seed=3, n_envs=4)
    assert changed.n_envs == 4 and changed.agent == slide.agent  # a flag changes one setting
    assert run_directory(changed).name.startswith("FetchSlide-v4-mrl-slide-ddpg-mix1-2-2-s3-")
    assert run_directory(slide).name == "FetchSlide-v4-mrl-slide-ddpg-mix1-2-2-s0"
    assert config_from_dict(slide.to_dict()) == slide


def test_a_recipe_not_named_is_refused() -> None:
    with pytest.raises(ValueError, match="recipe must be one of baselines, mrl-push, mrl-slide"):
        config_for("FetchPush-v4", recipe="openai")
    with pytest.raises(ValueError, match="recipe must be one of"):
        dataclasses.replace(config_for("FetchPush-v4"), recipe="mrl")


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_herkit_train_runs_the_recipe_it_is_given(
    recipe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``herkit train ENV --recipe NAME`` trains with the recipe's settings (they equal the
    preset the flags are read against, so they must not be lost as "unchanged")."""
    import herkit.training.loop as loop
    from herkit.cli import main

    trained: list[Any] = []

    def fake_train(config: Any, resume: bool = False) -> dict[str, Any]:
        trained.append(config)
        run = str(tmp_path / "run")
        return {"success_rate": 0.0, "env_steps": 0, "updates": 0, "run_dir": run, "dataset": None}

    monkeypatch.setattr(loop, "train", fake_train)
    assert main(["train", "FetchPush-v4", "--recipe", recipe, "--seed", "2"]) == 0
    assert trained[0] == config_for("FetchPush-v4", recipe=recipe, seed=2)
    assert trained[0].recipe == recipe and trained[0].n_envs == RECIPES[recipe]["n_envs"]


def test_a_runs_first_line_names_its_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from herkit.training.startup import _announce

    conventions = SimpleNamespace(task=None, describe=lambda: "", warnings=[])
    config = config_for("FetchPush-v4", recipe="baselines")
    _announce(config, conventions, False, Path("run"), "plan", {}, False, 1)  # type: ignore[arg-type]
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(
        "herkit: training FetchPush-v4 with ddpg (HER future, recipe baselines)"
    )


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipe_is_refused_in_one_line_on_a_task_it_was_not_written_for(
    recipe: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bit flipping with --recipe baselines was half applied (38 envs, DQN): refused, and
    the line names what the recipe was written for."""
    from herkit.cli import main

    code = main(["train", "herkit/BitFlip-v0", "--recipe", recipe, "--steps", "10"])
    said = capsys.readouterr().err
    assert code == 2 and said.count("\n") == 1, said
    assert said.startswith(f"herkit: error: --recipe {recipe} was written for "), said
    assert "Fetch" in said and "'herkit/BitFlip-v0'" in said and "without --recipe" in said
    with pytest.raises(ValueError, match=f"--recipe {recipe} was written for"):
        config_for("herkit/PointReach-v0", recipe=recipe)


def test_help_under_a_recipe_says_whose_defaults_it_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from herkit.cli import main

    try:
        main(["train", "FetchPush-v4", "--recipe", "baselines", "--help"])
    except SystemExit:
        pass
    shown = " ".join(capsys.readouterr().out.split())
    assert "FetchPush-v4's preset with the settings of --recipe baselines over it" in shown
    assert "(default: 4864)" in shown  # the recipe's batch (19 x 256)
    assert "--recipe {baselines,mrl-push,mrl-slide}" in shown  # the names, no None
