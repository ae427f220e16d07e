"""Every setting in one place: a training run's (:class:`TrainConfig`,
:mod:`~herkit.config.train`), the agents' (:mod:`~herkit.agents.settings`), the per-env presets
(:mod:`~herkit.config.presets`), which settings change learning
(:mod:`~herkit.config.learning`), and a
run's settings made for an env as ``herkit train`` makes them (:mod:`~herkit.config.run`).
Each config is a frozen dataclass whose field docstrings are the command line's help.
"""

from herkit.config import crl as _crl  # noqa: F401  (registers --algo crl)
from herkit.config import hiql as _hiql  # noqa: F401  (registers --algo hiql)
from herkit.config import qrl as _qrl  # noqa: F401  (registers --algo qrl)
from herkit.agents.settings import DDPGConfig, DQNConfig, OffPolicyConfig, SACConfig
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
