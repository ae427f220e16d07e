"""Goal environments (Gymnasium GoalEnv API) for hindsight experience replay.

Importing this package registers herkit's envs with gymnasium:

- ``herkit/BitFlip-v0``: :class:`BitFlipEnv`, the HER paper's bit flipping (``n_bits=15``);
- ``herkit/PointReach-v0``: :class:`PointReachEnv`, a 2-D point reaching a goal (50 steps);
- ``herkit/GridWorld-v0``: :class:`GridWorldEnv`, walking to a goal cell of an 8x8 grid;
- ``herkit/MountainCarGoal-v0``: :class:`MountainCarGoalEnv`, mountain car with a goal
  position (200 steps).

:func:`make_goal_env` makes any of these, any registered gymnasium goal env, ``module:Id``
ids and the gymnasium-robotics Fetch tasks, and refuses envs that are not goal envs; an
env whose goals are dicts comes wrapped in :class:`FlatGoals` (flat goals for the buffer,
its own dicts for its ``compute_reward``). :class:`SeededEpisodes` fixes an episode by its
reset seed where the env draws from numpy's global generator.
"""

from herkit.envs.bitflip import BitFlipEnv
from herkit.envs.core import GOAL_KEYS, GoalEnv
from herkit.envs.flat_goals import FlatGoals
from herkit.envs.grid_world import GridWorldEnv
from herkit.envs.mountain_car_goal import MountainCarGoalEnv
from herkit.envs.point_reach import PointReachEnv
from herkit.envs.registration import (
    FETCH_IDS,
    HERKIT_IDS,
    is_goal_env,
    make_goal_env,
    register_envs,
    register_robotics_envs,
)
from herkit.envs.seeding import SeededEpisodes

__all__ = [
    "FETCH_IDS",
    "GOAL_KEYS",
    "HERKIT_IDS",
    "BitFlipEnv",
    "FlatGoals",
    "GoalEnv",
    "GridWorldEnv",
    "MountainCarGoalEnv",
    "PointReachEnv",
    "SeededEpisodes",
    "is_goal_env",
    "make_goal_env",
    "register_envs",
    "register_robotics_envs",
]

register_envs()
