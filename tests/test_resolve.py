"""A run's settings resolved once (herkit.config.resolve): each layer's precedence, the env
probed once, and the provenance written beside the config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from herkit.agents.ddpg_td3 import DDPGConfig
from herkit.agents.dqn import DQNConfig
from herkit.config.her import RunHerSettings
from herkit.config.resolve import resolve
from herkit.config.train import TrainConfig


def test_a_flag_beats_the_recipe_which_beats_the_preset_which_beats_the_default() -> None:
    def n_envs(recipe: str | None = None, **flags: Any) -> tuple[int, str]:
        found = resolve("FetchPush-v4", recipe, flags, probe=False)
        return found.config.n_envs, found.provenance["n_envs"]

    assert resolve("herkit/NoPreset-v0", probe=False).config.n_envs == TrainConfig.n_envs
    assert resolve("herkit/NoPreset-v0", probe=False).provenance["n_envs"] == "default"
    assert n_envs() == (48, "preset")
    assert n_envs("baselines") == (38, "recipe")
    assert n_envs("baselines", n_envs=5) == (5, "flag")
    assert n_envs(n_envs=48) == (48, "flag")  # typed, even as the preset's: the user's


def test_the_layers_hold_for_the_agents_and_the_her_settings_too() -> None:
    def setting(path: str, recipe: str | None = None, **flags: Any) -> tuple[Any, str]:
        found = resolve("FetchPush-v4", recipe, flags, probe=False)
        prefix, _, name = path.partition(".")
        holder = found.config.her if prefix == "her" else found.config.agent_config()
        return getattr(holder, name), found.provenance[path]

    assert setting("ddpg.batch_size") == (2048, "preset")
    assert setting("ddpg.batch_size", "baselines") == (19 * 256, "recipe")
    assert setting("ddpg.batch_size", "baselines", **{"ddpg.batch_size": 64}) == (64, "flag")
    assert setting("ddpg.lr") == (DDPGConfig().lr, "default")
    assert setting("her.goal_mix", "mrl-push")[1] == "recipe"
    assert setting("her.k", **{"her.k": 8}) == (8, "flag")
    # a whole block given (config_for's ddpg=...) sets every one of its settings
    block = resolve("FetchPush-v4", flags={"ddpg": DDPGConfig(batch_size=32)}, probe=False)
    assert block.config.agent_config() == DDPGConfig(batch_size=32)
    assert block.provenance["ddpg.lr"] == "flag"


def test_the_envs_layer_fills_what_is_left_to_it_and_yields_to_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = resolve("herkit/BitFlip-v0")
    assert found.config.reward_range == (-1.0, 0.0) and found.provenance["reward_range"] == "env"
    assert found.config.her.terminal_on_success is True
    assert found.provenance["her.terminal_on_success"] == "env"
    given = resolve("herkit/BitFlip-v0", flags={"reward_range": (-2.0, 0.0)})
    assert given.config.reward_range == (-2.0, 0.0) and given.provenance["reward_range"] == "flag"
    assert given.conventions is not None and given.conventions.reward_range == (-2.0, 0.0)
    # the algorithm: the env's where the preset's does not fit, the flag's where given
    fallback = resolve("ledger:Ledger-v0")
    assert (fallback.config.algo, fallback.provenance["algo"]) == ("sac", "env")
    assert "training with --algo sac" in capsys.readouterr().err
    typed = resolve("ledger:Ledger-v0", flags={"algo": "td3"})
    assert (typed.config.algo, typed.provenance["algo"]) == ("td3", "flag")
    line = found.describe()
    assert line.startswith("preset: algo=dqn") and "env probe: reward_range=-1x0" in line


def test_the_her_settings_check_what_needs_a_discount_with_the_agents_own() -> None:
    # no stand-in discount: a run's HER settings wait for the agent's gamma
    her = RunHerSettings(strategy="geom_future")
    assert her.gamma is None
    with pytest.raises(ValueError, match=r"needs gamma in \(0, 1\).*got gamma=0.0"):
        TrainConfig(her=her, agent=DQNConfig(gamma=0.0))
    assert TrainConfig(her=her, agent=DQNConfig(gamma=0.9)).her_settings().gamma == 0.9


def count_envs_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the envs made from now on (every env of a run is made by make_run_env)."""
    import herkit.config.probe as probe

    made: list[str] = []
    real = probe.make_goal_env

    def counted(env_id: str, **kwargs: Any) -> Any:
        made.append(env_id)
        return real(env_id, **kwargs)

    monkeypatch.setattr(probe, "make_goal_env", counted)
    return made


def test_the_env_is_made_once_to_resolve_a_run_and_the_run_takes_that_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = count_envs_made(monkeypatch)
    resolution = resolve("herkit/BitFlip-v0", flags={"steps": 20})
    assert made == ["herkit/BitFlip-v0"]
    settled = resolve(resolution.config)  # as the run's start asks: the probe handed over
    assert made == ["herkit/BitFlip-v0"]
    assert settled.config == resolution.config and settled.conventions == resolution.conventions
    assert settled.provenance == resolution.provenance
    resolve(resolution.config)  # handed over once: a second run probes its env itself
    assert len(made) == 2


@pytest.mark.slow("a whole herkit train run in this process")
def test_a_run_makes_its_env_once_before_its_envs_and_writes_the_provenance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from herkit.cli import main
    from herkit.rundir.settings import load_run_config

    made = count_envs_made(monkeypatch)
    run = tmp_path / "run"
    args = ["train", "herkit/BitFlip-v0", "--steps", "20", "--eval-episodes", "1"]
    assert main([*args, "--out", str(run), "--no-progress", "--no-tensorboard"]) == 0
    # one probe (action space, conventions, evaluation tasks), one training env, one
    # evaluation env: nothing made twice to decide the settings
    assert made == ["herkit/BitFlip-v0"] * 3
    saved = json.loads((run / "config.json").read_text())
    assert saved["provenance"]["steps"] == "flag"
    assert saved["provenance"]["reward_range"] == "env"
    assert saved["provenance"]["dqn.epsilon"] == "preset"
    assert saved["provenance"]["torch_threads"] == "machine"
    assert "seed" not in saved["provenance"]  # a default
    assert load_run_config(run).steps == 20  # the provenance is no setting


def test_a_train_command_stacks_its_layers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``herkit train`` reads the lower layers of its env once: its flags' defaults (every
    agent's block), its --help and its resolution take that one stack."""
    import herkit.config.resolve as resolve_module
    import herkit.training.loop as loop
    from herkit.cli import main

    stacked: list[str] = []
    real = resolve_module._stack

    def counted(*args: Any, **kwargs: Any) -> Any:
        stacked.append(args[1])  # the algorithm stacked for
        return real(*args, **kwargs)

    trained: list[TrainConfig] = []

    def fake_train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
        trained.append(config)
        return {"success_rate": 0.0, "env_steps": 0, "run_dir": str(config.out)}

    monkeypatch.setattr(resolve_module, "_stack", counted)
    monkeypatch.setattr(loop, "train", fake_train)
    args = ["train", "herkit/PointReach-v0", "--algo", "td3", "--td3.lr", "0.01", "--k", "2"]
    assert main(args) == 0
    assert stacked == ["td3"]  # once, for the run's agent
    config = trained[0]
    assert (config.algo, config.agent_config().lr, config.her.k) == ("td3", 0.01, 2)
