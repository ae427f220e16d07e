"""A run's settings: a training run's (:class:`TrainConfig`, :mod:`~herkit.config.train`),
the per-env presets (:mod:`~herkit.config.presets`), which settings change learning
(:mod:`~herkit.config.learning`), and a run's settings made for an env as ``herkit train``
makes them (:mod:`~herkit.config.run`); each agent's settings are in its module of
:mod:`herkit.agents`.
Each config is a frozen dataclass whose field docstrings are the command line's help.
"""

from herkit.agents.ddpg_td3 import DDPGConfig
from herkit.agents.dqn import DQNConfig
from herkit.agents.sac import SACConfig
from herkit.agents.settings import OffPolicyConfig
from herkit.config.resolve import preset_config
from herkit.config.run import config_for
from herkit.config.train import TrainConfig

__all__ = [
    "DDPGConfig",
    "DQNConfig",
    "OffPolicyConfig",
    "SACConfig",
    "TrainConfig",
    "config_for",
    "preset_config",
]
