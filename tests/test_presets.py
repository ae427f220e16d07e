"""Per-env presets: which preset an env id gets, and that each one is a valid config."""

from __future__ import annotations

import json

import pytest

from herkit.config.presets import GPU_PRESETS, PRESETS, preset_values
from herkit.config.resolve import preset_config, run_directory
from herkit.config.run import config_for
from herkit.config.train import TrainConfig, config_from_dict


@pytest.mark.parametrize(
    ("env_id", "key"),
    [
        ("FetchPush-v4", "FetchPush-v4"),
        ("gymnasium_robotics:FetchPush-v4", "FetchPush-v4"),
        ("FetchPickAndPlace-v4", "FetchPickAndPlace-v4"),
        ("FetchSlide-v4", "Fetch"),
        ("FetchReach-v4", "FetchReach-v4"),
        ("PointMaze_UMaze-v3", "PointMaze"),
        ("herkit/BitFlip-v0", "herkit/BitFlip-v0"),
    ],
)
def test_an_env_id_gets_its_longest_matching_preset(env_id: str, key: str) -> None:
    assert preset_values(env_id) == PRESETS[key]


@pytest.mark.parametrize(
    ("env_id", "key"),
    [
        ("FetchPush-v4", "Fetch"),
        ("FetchSlide-v4", "Fetch"),
        ("FetchReach-v4", "FetchReach-v4"),
    ],
)
def test_on_a_gpu_an_env_gets_its_gpu_preset_where_it_has_one(env_id: str, key: str) -> None:
    assert preset_values(env_id, gpu=True) == GPU_PRESETS[key]
    assert preset_values("herkit/BitFlip-v0", gpu=True) == PRESETS["herkit/BitFlip-v0"]
    config = preset_config(env_id, "cuda")
    assert config.device == "cuda" and config.n_envs == GPU_PRESETS[key]["n_envs"]
    assert preset_config(env_id, "cuda:1").device == "cuda:1"
    values = dict(PRESETS[max((k for k in PRESETS if env_id.startswith(k)), key=len)])
    agent = values.pop(values["algo"])  # the preset's agent's settings: the agent slot
    assert preset_config(env_id) == TrainConfig(env_id=env_id, agent=agent, **values)


def test_the_command_line_takes_the_gpu_preset_with_device_cuda() -> None:
    from herkit.flags.train import parse_train

    config = config_for("FetchPush-v4", device="cuda", steps=1000)
    assert config.agent_config().hidden == (512, 512, 512)
    assert config.her.goal_mix == (0.2, 0.4, 0.4)
    assert config.device == "cuda" and config.steps == 1000
    preset = preset_config("FetchPush-v4", "cuda")
    parsed = parse_train(["FetchPush-v4", "--device", "cuda"], default=preset)
    assert parsed == preset
    # the GPU preset's own settings are not news to a GPU run's default name
    assert str(run_directory(config)) == "runs/FetchPush-v4-ddpg-mix1-2-2-s0"


def test_an_env_without_a_preset_gets_the_generic_defaults() -> None:
    assert preset_values("CartPole-v1") == {}
    assert preset_config("CartPole-v1") == TrainConfig(env_id="CartPole-v1")


def test_preset_values_are_a_copy_the_caller_may_change() -> None:
    values = preset_values("FetchPush-v4")
    values["n_envs"] = 1
    assert PRESETS["FetchPush-v4"]["n_envs"] != 1


@pytest.mark.parametrize(
    ("key", "device"),
    [(key, "cpu") for key in sorted(PRESETS)] + [(key, "cuda") for key in sorted(GPU_PRESETS)],
)
def test_every_preset_is_a_valid_config_that_survives_config_json(key: str, device: str) -> None:
    config = preset_config(key, device)  # validated on construction
    assert config_from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize("key", sorted(k for k, v in PRESETS.items() if v.get("n_envs", 1) > 1))
def test_presets_with_several_envs_owe_a_whole_update_per_loop_iteration(key: str) -> None:
    # the envs step while the networks update only where each iteration owes an update
    config = preset_config(key)
    owed = config.n_envs * config.updates_per_step
    assert owed >= 1.0, f"{key}: {config.n_envs} envs x {config.updates_per_step} = {owed}"
    assert owed == round(owed), f"{key}: {owed} updates per iteration is not a whole number"


def test_config_for_merges_env_kwargs_into_the_presets_and_keeps_the_rest() -> None:
    config = config_for("PointMaze_UMaze-v3", env_kwargs=("max_episode_steps=50",), steps=10)
    assert config.env_kwargs == ("continuing_task=False", "max_episode_steps=50")
    assert config.steps == 10 and config.algo == "sac"
    assert config.eval_episodes == preset_config("PointMaze_UMaze-v3").eval_episodes


def test_config_for_picks_an_algorithm_that_fits_the_action_space_unless_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert config_for("herkit/PointReach-v0").algo == "ddpg"  # its preset's, which fits
    assert capsys.readouterr().err == ""
    # no preset: the generic defaults train DQN, which Ledger's Box actions cannot take
    assert config_for("ledger:Ledger-v0").algo == "sac"
    said = capsys.readouterr().err
    assert "ledger:Ledger-v0 has a continuous action space: training with --algo sac" in said
    assert config_for("ledger:Ledger-v0", algo="td3").algo == "td3"  # given: kept
    # discrete: DQN fits (the env is probed once, its conventions too: here without a fault)
    assert config_for("faulty:FaultyBitFlip-v0", env_kwargs=("fault=none",)).algo == "dqn"


def test_fetchreach_ends_soon_after_it_is_solved() -> None:
    """FetchReach is >= 0.95 by 1,500 env steps on seeds 0-2 (docs/experiment-log.md): its
    preset's budget is a few times that, not minutes of a solved task."""
    from herkit.config import config_for

    config = config_for("FetchReach-v4")
    assert 1_500 < config.steps <= 4 * 1_500 and config.eval_every <= 1_500
