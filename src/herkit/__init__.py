"""herkit: Hindsight Experience Replay for goal-conditioned reinforcement learning.

Importing herkit registers its goal envs with gymnasium (``gym.make("herkit/BitFlip-v0")``)
and imports neither torch nor MuJoCo. gymnasium-robotics' ids (Fetch, PointMaze) are
registered when herkit first makes one (``herkit train FetchReach-v4``,
:func:`herkit.envs.make_goal_env`), or by :func:`herkit.envs.register_robotics_envs`
(or ``import gymnasium_robotics``) before ``gym.make``.

``train(config_for("FetchReach-v4", steps=20_000))`` is ``herkit train FetchReach-v4
--steps 20000`` from Python (:class:`TrainConfig` holds every setting), and
:func:`load_policy` loads a trained run's policy. These come from herkit's train extra and
are imported on first use.
"""

import importlib
from typing import TYPE_CHECKING, Any

from herkit.buffer import Batch, HerReplayBuffer, Strategy
from herkit.envs import register_envs

if TYPE_CHECKING:
    from herkit.config.run import config_for
    from herkit.config.train import TrainConfig
    from herkit.training.loop import train
    from herkit.training.policy import Policy, load_policy

__all__ = [
    "Batch",
    "HerReplayBuffer",
    "Policy",
    "Strategy",
    "TrainConfig",
    "config_for",
    "load_policy",
    "train",
]

_ON_FIRST_USE = {
    "Policy": "herkit.training.policy",
    "load_policy": "herkit.training.policy",
    "TrainConfig": "herkit.config.train",
    "config_for": "herkit.config.run",
    "train": "herkit.training.loop",
}
"""The names of the train extra (torch, tyro), and the module each is imported from."""
__version__ = "0.1.0"

register_envs()


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module 'herkit' has no attribute {name!r}")
    try:
        module = importlib.import_module(_ON_FIRST_USE[name])
    except ModuleNotFoundError as error:  # torch or tyro: herkit's train extra
        from herkit.extras import needs_extra

        raise ModuleNotFoundError(needs_extra(error, f"herkit.{name}"), name=error.name) from None
    return getattr(module, name)
