"""HerSettings is the one record of the HER settings: the training settings, the strategy
names and the facades agree with it, and a bad value is named."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import pytest

from herkit.buffer.settings import HerSettings
from herkit.buffer.strategies import Strategy, StrategyName
from herkit.config.train import TrainConfig

NOT_TRAINING_SETTINGS = {"gamma", "alpha", "beta", "eps", "keep_env_terms"}
"""HerSettings fields that are not a flag of ``herkit train``: the agent's discount, and the
priority exponents and floor (the paper's values)."""


def test_the_strategy_names_are_the_strategies() -> None:
    assert list(get_args(StrategyName)) == [strategy.value for strategy in Strategy]


def test_every_other_her_setting_is_a_training_setting_with_the_same_default() -> None:
    her = {field.name: field for field in dataclasses.fields(HerSettings)}
    train = {field.name: field for field in dataclasses.fields(TrainConfig)}
    assert set(her) - set(train) == NOT_TRAINING_SETTINGS
    assert set(HerSettings.names()) == set(her)
    for name in set(her) - NOT_TRAINING_SETTINGS:
        if name == "terminal_on_success":  # a run asks the env (None); a bare buffer does not
            assert (her[name].default, train[name].default) == (False, None)
        else:
            assert her[name].default == train[name].default, name


def test_a_run_hands_its_settings_to_the_buffer() -> None:
    config = TrainConfig(strategy="episode", k=2, n_step=3, prioritized=True, info_keys=("x",))
    settings = config.her_settings()
    assert (settings.strategy, settings.k, settings.n_step, settings.prioritized) == (
        Strategy.EPISODE, 2, 3, True,
    )  # fmt: skip
    assert settings.info_keys == ("x",) and settings.gamma == config.agent_config().gamma


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"strategy": "futur"}, "strategy"), ({"k": -1}, "k"), ({"k": 1.5}, "k"),
     ({"relabel": "later"}, "relabel"), ({"n_step": 0}, "n_step"),
     ({"n_step": 3}, "gamma"), ({"goal_mix": (1.0, 1.0)}, "goal_mix"),
     ({"goal_mix_warmup": 5}, "goal_mix")],
)  # fmt: skip
def test_a_bad_setting_is_named(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HerSettings(**changes)
