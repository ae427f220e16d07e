"""herkit: Hindsight Experience Replay for goal-conditioned reinforcement learning.

Importing herkit registers its goal envs with gymnasium (``gym.make("herkit/BitFlip-v0")``)
and imports neither torch nor MuJoCo. gymnasium-robotics' ids (Fetch, PointMaze) are
registered when herkit first makes one (``herkit train FetchReach-v4``,
:func:`herkit.envs.make_goal_env`), or by :func:`herkit.envs.register_robotics_envs`
(or ``import gymnasium_robotics``) before ``gym.make``. :func:`load_policy` loads a
trained run's policy; it imports torch on first use.
"""

from typing import TYPE_CHECKING, Any

from herkit.buffer import Batch, HerReplayBuffer, Strategy
from herkit.envs import register_envs

if TYPE_CHECKING:
    from herkit.training.policy import Policy, load_policy

__all__ = ["Batch", "HerReplayBuffer", "Policy", "Strategy", "load_policy"]
__version__ = "0.1.0"

register_envs()


def __getattr__(name: str) -> Any:
    if name in ("Policy", "load_policy"):
        try:
            from herkit.training import policy
        except ModuleNotFoundError as error:  # torch: herkit's train extra
            from herkit.extras import needs_extra

            raise ModuleNotFoundError(
                needs_extra(error, f"herkit.{name}"), name=error.name
            ) from None
        return getattr(policy, name)
    raise AttributeError(f"module 'herkit' has no attribute {name!r}")
