"""HerSettings is the one record of the HER settings: the training settings, the strategy
names and the facades agree with it, and a bad value is named."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest

from herkit.buffer.settings import HerSettings, Strategy, StrategyName
from herkit.buffer.strategies import STRATEGIES
from herkit.config.her import RunHerSettings
from herkit.config.train import TrainConfig, config_from_dict
from runs import herkit_command


def test_the_strategy_names_are_the_strategies() -> None:
    assert list(get_args(StrategyName)) == [strategy.value for strategy in Strategy]
    assert [strategy.value for strategy in Strategy] == list(STRATEGIES)  # the registry's


def test_the_buffer_guide_says_what_every_strategy_does() -> None:
    """A strategy added to the registry needs its line in the guide's list."""
    guide = (Path(__file__).parents[1] / "docs" / "guide-buffer.md").read_text()
    listed = guide.split("- **Strategies**", 1)[1].split("\n- **", 1)[0]
    for name in STRATEGIES:
        assert f"`{name}` (" in listed, name


def test_a_run_holds_the_buffers_settings_with_their_defaults() -> None:
    her = TrainConfig().her
    assert isinstance(her, HerSettings) and her.values() == HerSettings().values()
    flags = {field.name.replace("_", "-") for field in dataclasses.fields(HerSettings)}
    env = os.environ | {"COLUMNS": "200"}
    shown = subprocess.run(
        herkit_command("train", "--help"), capture_output=True, text=True, env=env, check=True
    ).stdout
    shown_flags = set(re.findall(r"--([a-z-]+)", shown))
    assert flags - shown_flags == {"gamma", "actor-future", "subgoal-steps"}  # the agent's


def test_a_run_hands_its_settings_to_the_buffer() -> None:
    her = RunHerSettings(strategy="episode", k=2, n_step=3, prioritized=True, info_keys=("x",))
    config = TrainConfig(her=her)
    settings = config.her_settings()
    assert type(settings) is HerSettings
    assert settings.values() == her.values() | {"gamma": config.agent_config().gamma}
    assert config.with_her(k=5).her_settings().k == 5


def test_a_runs_discount_is_the_agents() -> None:
    with pytest.raises(ValueError, match=r"her.gamma must be None.*--ALGO.gamma"):
        TrainConfig(her=HerSettings(n_step=3, gamma=0.9))
    assert TrainConfig(her=HerSettings(k=2)).her.k == 2  # the buffer's record is taken too
    subgoals = HerSettings(actor_goals=(0, 1, 0), subgoal_steps=5)  # HIQL's, by its settings
    with pytest.raises(ValueError, match=r"her.subgoal_steps must be None.*--hiql.subgoal-steps"):
        TrainConfig(her=subgoals)


def test_a_strategy_that_reads_gamma_gets_the_agents() -> None:
    """geom_future reads gamma: a run's settings hold none (the flag is the agent's), its
    buffer gets the agent's, and a discount outside (0, 1) is refused there by name."""
    config = TrainConfig(her=RunHerSettings(strategy="geom_future"))
    assert config.her.gamma is None and config.her.strategy == "geom_future"
    assert config.her_settings().gamma == config.agent_config().gamma
    with pytest.raises(ValueError, match=r"'geom_future' needs gamma in \(0, 1\).*--ALGO.gamma"):
        config.her.buffer_settings(1.0)


def test_a_config_json_of_the_flat_form_loads() -> None:
    config = config_from_dict(
        {
            "strategy": "final",
            "k": 2,
            "terminal_on_success": True,
            "goal_mix": None,
            "info_keys": ["x"],
        }
    )
    assert (config.her.strategy, config.her.k, config.her.terminal_on_success) == (
        Strategy.FINAL,
        2,
        True,
    )
    assert config.her.info_keys == ("x",) and config_from_dict(config.to_dict()) == config


def test_a_config_json_of_dqn_with_the_actors_layer_norm_loads() -> None:
    """DQN has no actor, so no actor_layer_norm: a config.json written while it had the
    (unused) flag loads without it."""
    values = TrainConfig().to_dict()
    assert "actor_layer_norm" not in values["dqn"]
    values["dqn"]["actor_layer_norm"] = False
    assert config_from_dict(values) == TrainConfig()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"strategy": "futur"}, "strategy"),
        ({"k": -1}, "k"),
        ({"k": 1.5}, "k"),
        ({"relabel": "later"}, "relabel"),
        ({"n_step": 0}, "n_step"),
        ({"n_step": 3}, "gamma"),
        ({"goal_mix": (1.0, 1.0)}, "goal_mix"),
        ({"goal_mix_warmup": 5}, "goal_mix"),
    ],
)
def test_a_bad_setting_is_named(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HerSettings(**changes)
