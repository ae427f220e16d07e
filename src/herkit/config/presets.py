"""Per-env defaults of ``herkit train``: :data:`PRESETS`, :data:`GPU_PRESETS` and
:func:`preset_values`.

A preset is a dict of :class:`~herkit.config.train.TrainConfig` fields for one env id, or for a
family of them by prefix (``Fetch``), where an item named after an algorithm
(``ddpg=DDPGConfig(batch_size=512)``) is that agent's settings on these envs (the agent
slot of a run with that ``--algo``; :meth:`~herkit.config.resolve.LayerStack.agent`): the paper's
bit-flipping setup, Fetch setups with baselines' network values tuned for 2 CPU cores
(``--recipe`` runs the cited codes' own, :mod:`herkit.config.recipes`), and what the herkit
envs and PointMaze solve with (docs/experiment-log.md). A run on a GPU (``--device cuda``)
takes the GPU preset of its env where there is one: the large-batch setup that a GPU can
afford and two CPU cores cannot.
"""

from __future__ import annotations

from typing import Any

from herkit.agents.ddpg_td3 import DDPGConfig
from herkit.agents.dqn import DQNConfig
from herkit.config.her import RunHerSettings

__all__ = ["GPU_PRESETS", "PRESETS", "preset_values"]

_GOAL_DQN = dict(
    algo="dqn",
    steps=10_000,
    warmup_steps=256,
    eval_every=1_000,
    checkpoint_every=10_000,
)
# Bit flipping explores more and learns more gently than the DQN defaults: with epsilon
# 0.2 the greedy policy of 50 bits gets stuck flipping one bit back and forth, so the
# achieved goals that hindsight relabels with never get far from the start
# (docs/experiment-log.md); these settings solve 50 bits and 15 bits as fast in wall time.
_BITFLIP = dict(
    _GOAL_DQN,
    updates_per_step=0.25,
    dqn=DQNConfig(batch_size=256, epsilon=0.5, polyak=0.99),
)
# Fetch on a CPU is a race in wall time. One env worker steps about 400-700 Fetch env
# steps/s on one core (most of it MuJoCo's physics) while the networks train on the other.
# Each loop iteration owes n_envs x updates_per_step updates (1 here, 2 for PickAndPlace),
# which run while the envs take their next step. The Fetch family: 16 envs, batch 512 at
# 1/16 update per env step (32 sampled transitions per env step).
# FetchPush: 48 envs, batch 2048 at 1/48 (43 per env step): fewer, larger updates cost less
# per sample, and it reached 0.9 on seeds 0, 1, 2 at 24.7, 27.7 and 19.4 minutes on 2
# cores, where the family's setting did on 1 seed of 3 within 30 minutes (docs/experiment-log.md,
# "Fetch tasks on 2 CPU cores"). Evaluations pause training: 20 episodes every 20,000 env
# steps cost a few per cent of the wall time.
_FETCH = dict(
    algo="ddpg",
    n_envs=16,
    steps=1_000_000,
    warmup_steps=1_000,
    random_steps=1_000,
    updates_per_step=0.0625,
    ddpg=DDPGConfig(batch_size=512),
    eval_every=20_000,
    eval_episodes=20,
    n_eval_envs=2,
    checkpoint_every=100_000,
)
# 48 envs stepped together and updates of batch 2048: Push's and PickAndPlace's shape.
_FETCH_48 = dict(_FETCH, n_envs=48, ddpg=DDPGConfig(batch_size=2048))
# OGBench's locomaze tasks, trained offline (--dataset): its protocol of 1M gradient steps,
# evaluated every 100,000 on each of the 5 tasks with 50 episodes (here 50 envs stepped
# together). An agent's own settings per dataset are its registry entry's (GCIQL's actor
# weight 0.003 on pointmaze, as OGBench tunes it: herkit.agents.settings).
_OGBENCH = dict(
    algo="gcivl",
    offline_steps=1_000_000,
    eval_every=100_000,
    eval_episodes=50,
    n_eval_envs=50,
    checkpoint_every=100_000,
)
PRESETS: dict[str, dict[str, Any]] = {
    "herkit/BitFlip-v0": _BITFLIP,
    "herkit/GridWorld-v0": dict(_GOAL_DQN, steps=30_000),
    # DQN+HER reaches 0.9 by 5,000-12,500 env steps on seeds 0-2 (docs/experiment-log.md).
    "herkit/MountainCarGoal-v0": dict(_GOAL_DQN, steps=50_000, eval_every=2_500),
    # herkit train herkit/PointReach-v0 --algo td3 is at 1.0 from 2,000 env steps (seed 0).
    "herkit/PointReach-v0": dict(algo="ddpg", steps=5_000, eval_every=500, warmup_steps=500),
    # gymnasium-robotics' PointMaze: 0/1 rewards, info["success"]; continuing_task=False
    # ends an episode on success (the env's own default runs on past the goal).
    "PointMaze": dict(
        algo="sac",
        env_kwargs=("continuing_task=False", "max_episode_steps=100"),
        steps=50_000,
        eval_every=2_000,
        eval_episodes=20,
        checkpoint_every=25_000,
    ),
    # batch 256, 0.5 updates per env step, 2 envs: >= 0.95 by 1,500 env steps on seeds 0-2
    # (docs/experiment-log.md); the budget is 3x that, a run ends soon after it is solved
    "FetchReach-v4": dict(
        _FETCH,
        n_envs=2,
        updates_per_step=0.5,
        ddpg=DDPGConfig(),
        steps=5_000,
        eval_every=500,
        eval_episodes=10,
    ),
    "FetchPush-v4": dict(_FETCH_48, updates_per_step=1 / 48),
    # 48 envs, 2 updates of batch 2048 per 48 env steps (85 sampled transitions per env
    # step): it held 0.9 at 1,000,000-1,020,000 env steps, 31.8 and 32.2 min on seeds 0 and
    # 1 on a 2-core Zen 4, where the family's setting levelled off near 0.6 (docs/results.md).
    "FetchPickAndPlace-v4": dict(_FETCH_48, updates_per_step=1 / 24),
    "Fetch": _FETCH,
    "pointmaze-": _OGBENCH,
    "antmaze-": _OGBENCH,
    "humanoidmaze-": _OGBENCH,
}
"""Per-env defaults of ``herkit train`` (a prefix such as ``Fetch`` covers its family)."""


# On a GPU the learner can afford what two CPU cores cannot: the networks, batch, schedule
# and goal mix of mrl's best_slide_config, not that recipe whole (ReLU where mrl has GELU,
# targets moved after every update where mrl moves them every 10; ``--recipe mrl-slide``
# is the whole): 3 x 512 networks with LayerNorm, batch 2048, one update per 2 env steps,
# goals mixed 1 : 2 : 2 from the real, future and desired goals after 25,000 future-only
# transitions, an action penalty of 0.01 and 20 % random actions; 32 envs stepped by the
# host's other cores, the buffer on the GPU (bf16 compiled-captured updates, as auto decides
# for a run of this size on one GPU).
# Untested on a GPU as a whole preset; the GPU check (benchmarks/gpu_check.sh) times it.
_FETCH_GPU = dict(
    _FETCH,
    n_envs=32,
    updates_per_step=0.5,
    ddpg=DDPGConfig(
        hidden=(512, 512, 512),
        batch_size=2048,
        actor_layer_norm=True,
        critic_layer_norm=True,
        action_l2=0.01,
        random_eps=0.2,
    ),
    her=RunHerSettings(goal_mix=(1.0, 2.0, 2.0), goal_mix_warmup=25_000),
    eval_episodes=50,
    n_eval_envs=10,
    checkpoint_every=200_000,
)
GPU_PRESETS: dict[str, dict[str, Any]] = {
    "FetchReach-v4": PRESETS["FetchReach-v4"],  # solved in seconds on a CPU already
    "Fetch": _FETCH_GPU,
}
"""Per-env defaults of ``herkit train`` on a GPU (``--device cuda``), where they differ."""


def preset_values(env_id: str, gpu: bool = False) -> dict[str, Any]:
    """The preset of ``env_id``: the longest matching key of :data:`GPU_PRESETS` on a
    ``gpu`` (where one matches), else of :data:`PRESETS` (a ``module:Id`` matches by its
    id); {} when it has none."""
    name = env_id.split(":")[-1]
    for table in (GPU_PRESETS, PRESETS) if gpu else (PRESETS,):
        matches = [key for key in table if name == key or name.startswith(key)]
        if matches:
            return dict(table[max(matches, key=len)])
    return {}
