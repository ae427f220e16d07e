"""herkit's replay buffer against its peers: ``python benchmarks/buffer.py``.

    python benchmarks/buffer.py                  # herkit, SB3 and cpprb on the same data
    python benchmarks/buffer.py --no-peers       # herkit alone, as `herkit bench buffer`
    python benchmarks/buffer.py --help           # every setting (stored sizes, capacity, ...)

``herkit bench buffer``'s measurement, then the same data in this process to SB3's
``HerReplayBuffer`` (one transition per ``add``, as its algorithms add) and cpprb's
``HindsightReplayBuffer`` (plain and prioritized; given ``capacity * (k + 1)`` rows, as it
stores ``k + 1`` per transition). Ratios are peer / herkit's ``relabel="sample"`` buffer.
Needs the ``bench`` extra; results: docs/benchmarks.md.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import tyro

from herkit.bench import (
    ACTION_DIM,
    GOAL_DIM,
    OBSERVATION_DIM,
    POOL_EPISODES,
    BufferBenchConfig,
    Episodes,
    bench_buffer,
    fetch_reward,
    fill,
    measure,
    run_buffer_bench,
)

PEER_PACKAGES = ("stable_baselines3", "cpprb")
PEER_HINT = "pip install -e '.[bench]'"
DESCRIPTION = (
    "herkit's replay buffer against SB3's and cpprb's on the same FetchPush-shaped data "
    "(herkit bench buffer's measurement, then the peers'; --no-peers: herkit alone)."
)


@dataclass(frozen=True)
class PeerBenchConfig(BufferBenchConfig):
    """``herkit bench buffer``'s settings, and whether to time the peers too."""

    peers: bool = True
    """Also time SB3's and cpprb's HER buffers on the same data, in this process ([bench])."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.peers, bool):
            raise ValueError(f"peers must be a bool, got {self.peers!r}")
        if self.peers:
            missing = [name for name in PEER_PACKAGES if importlib.util.find_spec(name) is None]
            if missing:
                raise ValueError(
                    f"peers=True needs {', '.join(missing)}, which is not installed: {PEER_HINT}"
                )


# -- the same data as each peer's add calls -------------------------------------------------------


def sb3_steps(data: Episodes) -> list[tuple[Any, ...]]:
    """Argument tuples of SB3's ``HerReplayBuffer.add`` (1 env), as SB3 algorithms pass."""
    steps = []
    for e in range(POOL_EPISODES):
        goal = data.desired_goal[e]
        for t in range(data.length):
            obs, next_obs = (
                {
                    "observation": data.observation[e, i],
                    "achieved_goal": data.achieved_goal[e, i],
                    "desired_goal": goal,
                }
                for i in (t, t + 1)
            )
            reward = fetch_reward(next_obs["achieved_goal"], goal)
            last = t == data.length - 1
            info: dict[str, Any] = {"is_success": float(reward[0] == 0)}
            if last:
                info["TimeLimit.truncated"] = True
            steps.append((obs, next_obs, data.action[e, t], reward, np.array([last]), [info]))
    return steps


def cpprb_steps(data: Episodes) -> list[tuple[dict[str, np.ndarray], np.ndarray | None]]:
    """Per step (1 env): cpprb ``add`` keywords (its state: observation and achieved goal),
    and the goal for ``on_episode_end`` after an episode's last step (else ``None``)."""
    state = np.concatenate([data.observation, data.achieved_goal], axis=-1)
    steps = []
    for e in range(POOL_EPISODES):
        for t in range(data.length):
            end = data.desired_goal[e, 0] if t == data.length - 1 else None
            steps.append(
                ({"obs": state[e, t], "act": data.action[e, t], "next_obs": state[e, t + 1]}, end)
            )
    return steps


# -- the peers ------------------------------------------------------------------------------------


def import_peers() -> tuple[Any, Any, Any, Any]:
    """SB3's ``HerReplayBuffer`` and ``DummyVecEnv``, cpprb's ``HindsightReplayBuffer`` and
    gymnasium (an ImportError with the install command)."""
    try:
        from cpprb import HindsightReplayBuffer
        from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
        from stable_baselines3.common.vec_env import DummyVecEnv
    except ImportError as error:
        raise ImportError(
            f"the peer benchmark needs stable-baselines3 and cpprb ({error}): {PEER_HINT}"
        ) from error
    import gymnasium

    return SB3HerReplayBuffer, DummyVecEnv, HindsightReplayBuffer, gymnasium


def goal_env_class(gymnasium: Any) -> type:
    """A FetchPush-shaped GoalEnv that SB3's HerReplayBuffer can call ``compute_reward`` on."""
    spaces = gymnasium.spaces

    class FetchShapedGoalEnv(gymnasium.Env):
        """Never stepped by the benchmark: it provides spaces and ``compute_reward``."""

        def __init__(self) -> None:
            box = spaces.Box(-np.inf, np.inf, dtype=np.float32, shape=(OBSERVATION_DIM,))
            goal = spaces.Box(-np.inf, np.inf, dtype=np.float32, shape=(GOAL_DIM,))
            self.observation_space = spaces.Dict(
                {"observation": box, "achieved_goal": goal, "desired_goal": goal}
            )
            self.action_space = spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)

        def _obs(self) -> dict[str, np.ndarray]:
            return {key: space.sample() for key, space in self.observation_space.spaces.items()}

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            return self._obs(), {}

        def step(self, action: Any) -> Any:
            obs = self._obs()
            reward = float(fetch_reward(obs["achieved_goal"], obs["desired_goal"]))
            return obs, reward, False, False, {}

        def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
            return fetch_reward(achieved_goal, desired_goal, info)

    return FetchShapedGoalEnv


def bench_peers(config: BufferBenchConfig, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """SB3's and cpprb's buffers timed on herkit's data: rows as
    :func:`herkit.bench.run_buffer_bench`'s, without ratios yet."""
    sb3_buffer_class, dummy_vec_env, cpprb_buffer_class, gymnasium = import_peers()
    rng = np.random.default_rng(config.seed)
    data = Episodes.generate(config.episode_length, 1, rng)
    rows = []

    # SB3 samples with numpy's global generator: seed it, and put it back afterwards.
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(config.seed)  # noqa: NPY002
    try:
        env = dummy_vec_env([goal_env_class(gymnasium)])
        sb3 = sb3_buffer_class(
            config.capacity,
            env.observation_space,
            env.action_space,
            env=env,
            device="cpu",
            n_envs=1,
            n_sampled_goal=config.k,
            goal_selection_strategy="future",
        )
        row = measure(
            "sb3",
            "sample",
            partial(fill, sb3.add, sb3_steps(data)),
            sb3.size,
            partial(sb3.sample, config.batch_size),
            config,
            progress,
        )
        rows.append(row | {"relabel": "sample", "prioritized": False})
        del sb3, env
    finally:
        np.random.set_state(state)  # noqa: NPY002

    state_dim = OBSERVATION_DIM + GOAL_DIM

    def goal_of(states: np.ndarray) -> np.ndarray:
        return states[..., OBSERVATION_DIM:]

    def cpprb_reward(next_states: np.ndarray, action: np.ndarray, goal: np.ndarray) -> Any:
        return fetch_reward(goal_of(next_states), goal)

    copies = config.k + 1
    steps = cpprb_steps(data)
    for prioritized in (False, True):
        cpprb = cpprb_buffer_class(
            config.capacity * copies,
            {
                "obs": {"shape": state_dim},
                "act": {"shape": ACTION_DIM},
                "next_obs": {"shape": state_dim},
            },
            config.episode_length,
            cpprb_reward,
            goal_func=goal_of,
            goal_shape=(GOAL_DIM,),
            strategy="future",
            additional_goals=config.k,
            prioritized=prioritized,
        )

        def add(kwargs: dict[str, np.ndarray], goal: Any, cpprb: Any = cpprb) -> None:
            cpprb.add(**kwargs)
            if goal is not None:
                cpprb.on_episode_end(goal)

        row = measure(
            "cpprb",
            f"store x{copies}" + (" + PER" if prioritized else ""),
            partial(fill, add, steps),
            partial(_real_transitions, cpprb, copies),
            partial(cpprb.sample, config.batch_size),
            config,
            progress,
        )
        rows.append(row | {"relabel": "store", "prioritized": prioritized})
        del cpprb
        gc.collect()
    return rows


def _real_transitions(cpprb: Any, copies: int) -> int:
    """Real transitions in a cpprb HER buffer, which stores ``copies`` rows for each."""
    return int(cpprb.get_stored_size()) // copies


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Set each peer row's ``add_vs_herkit`` and ``sample_vs_herkit``: peer / herkit's
    relabel=sample buffer with the same ``prioritized`` (or ``None``)."""
    baseline: dict[bool, dict[str, Any]] = {}
    for row in rows:  # the first of each: the plain strategy, not a goal mix
        if row["buffer"] == "herkit" and row["relabel"] == "sample":
            baseline.setdefault(row["prioritized"], row)
    for row in rows:
        base = baseline.get(row["prioritized"])
        if row["buffer"] == "herkit" or base is None:
            row["add_vs_herkit"] = row["sample_vs_herkit"] = None
            continue
        row["add_vs_herkit"] = row["add_per_s"] / base["add_per_s"]
        row["sample_vs_herkit"] = {
            size: ms / base["sample_ms"][size] for size, ms in row["sample_ms"].items()
        }


def run_with_peers(
    config: BufferBenchConfig, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """herkit's rows (:func:`herkit.bench.run_buffer_bench`), then, with ``peers``, SB3's
    and cpprb's with their ratios to herkit."""
    report = progress if progress is not None else (lambda line: None)
    peers = isinstance(config, PeerBenchConfig) and config.peers
    if peers:
        import_peers()  # fail before spending minutes on herkit
    rows = run_buffer_bench(config, report)
    if peers:
        rows += bench_peers(config, report)
    add_ratios(rows)
    return rows


def main(args: Sequence[str] | None = None) -> None:
    """Parse ``args`` (default: the command line), run, print the tables, write ``--json-out``."""
    bench_buffer(tyro.cli(PeerBenchConfig, args=args, description=DESCRIPTION), run=run_with_peers)


if __name__ == "__main__":
    main()
