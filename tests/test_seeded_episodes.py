"""An episode is a function of its reset seed, whatever the env draws from: its own
generator, numpy's global one (OGBench's mazes) or its action space; in one process or in
worker processes. An evaluation seeds each episode by its key and index alone, so its
episodes are distinct and the same evaluation plays the same episodes again."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from herkit.config.train import TrainConfig
from herkit.envs.seeding import SeededEpisodes, seeded_episodes
from herkit.envs.workers import WorkerVectorEnv
from herkit.training.evaluation import episode_seeds, evaluate


class GlobalDraws(gym.Env):
    """An env that draws from numpy's global generator at reset and at every step, and
    from its action space at reset (as OGBench's mazes do), and shows what it drew."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,))
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.drawn = [np.random.uniform(), float(self.action_space.sample()[0]), 0.0]  # noqa: NPY002
        return np.array(self.drawn), {}

    def step(self, action: Any) -> Any:
        self.drawn = [self.drawn[0], self.drawn[1], np.random.uniform()]  # noqa: NPY002
        return np.array(self.drawn), 0.0, False, False, {}


def play(env: gym.Env, seed: int, steps: int) -> list[list[float]]:
    return [env.reset(seed=seed)[0].tolist()] + [
        env.step(np.zeros(1))[0].tolist() for _ in range(steps)
    ]


def test_an_episode_is_its_seeds_whatever_else_draws_from_numpy_between() -> None:
    env = SeededEpisodes(GlobalDraws(), every_step=True)
    first = play(env, seed=3, steps=4)
    np.random.seed(0)  # noqa: NPY002  (someone else's use of the global generator)
    np.random.uniform(size=7)  # noqa: NPY002
    assert play(env, seed=3, steps=4) == first
    assert play(env, seed=4, steps=4) != first
    steps = [row[2] for row in first[1:]]
    assert len(set(steps)) == len(steps)  # each step its own draw
    bare = GlobalDraws()  # the control: a reset seed fixes nothing of what it draws
    assert play(bare, seed=3, steps=4) != play(bare, seed=3, steps=4)


def test_envs_stepped_in_turn_in_one_process_draw_their_own_numbers() -> None:
    alone = play(SeededEpisodes(GlobalDraws(), every_step=True), seed=3, steps=5)
    a, b = (SeededEpisodes(GlobalDraws(), every_step=True) for _ in range(2))
    rows = [a.reset(seed=3)[0].tolist()]
    b.reset(seed=9)
    for _ in range(5):
        b.step(np.zeros(1))
        rows.append(a.step(np.zeros(1))[0].tolist())
    assert rows == alone


def test_an_unseeded_reset_goes_on_from_the_last_seeded_one() -> None:
    env, other = (SeededEpisodes(GlobalDraws()) for _ in range(2))
    for each in (env, other):
        each.reset(seed=5)
    assert env.reset()[0].tolist() == other.reset()[0].tolist()
    assert env.reset()[0].tolist() != env.reset(seed=5)[0].tolist()


def seedings(env: gym.Env) -> list[SeededEpisodes]:
    """The :class:`SeededEpisodes` among the wrappers of ``env``."""
    found = []
    while isinstance(env, gym.Wrapper):
        found += [env] if isinstance(env, SeededEpisodes) else []
        env = env.env
    return found


def test_a_run_wraps_each_env_once() -> None:
    pytest.importorskip("ogbench")
    from herkit.config.probe import make_run_env

    env = make_run_env(TrainConfig(env_id="herkit/PointReach-v0"))
    assert isinstance(env, SeededEpisodes) and not env.every_step
    assert seeded_episodes(env) is env
    teleport = seedings(make_run_env(TrainConfig(env_id="pointmaze-teleport-navigate-v0")))
    assert len(teleport) == 1 and teleport[0].every_step  # it draws while it steps
    medium = seedings(make_run_env(TrainConfig(env_id="pointmaze-medium-navigate-v0")))
    assert len(medium) == 1 and not medium[0].every_step


def maze_start(seed: int, task: int = 1) -> list[float]:
    """The first observation and goal of OGBench's medium maze reset with ``seed``."""
    from herkit.envs.ogbench_maze import make_ogbench_env

    env = make_ogbench_env("pointmaze-medium-navigate-v0")
    obs, _ = env.reset(seed=seed, options={"task_id": task})
    return [*obs["observation"].tolist(), *obs["desired_goal"].tolist()]


def test_an_ogbench_maze_episode_is_a_function_of_its_reset_seed() -> None:
    pytest.importorskip("ogbench")
    import ogbench

    start = maze_start(7)
    np.random.uniform()  # noqa: NPY002  (moves numpy's global generator)
    assert maze_start(7) == start and maze_start(8) != start
    assert maze_start(7, task=3) != start
    bare = ogbench.make_env_and_datasets("pointmaze-medium-navigate-v0", env_only=True)
    starts = [bare.reset(seed=7, options={"task_id": 1})[1]["goal"].tolist() for _ in range(2)]
    assert starts[0] != starts[1]  # the control: OGBench's own env ignores the seed


class Recorder:
    """A policy that stands still and keeps every observation it is shown."""

    def __init__(self) -> None:
        self.shown: list[np.ndarray] = []

    def act(self, observation: np.ndarray, goal: np.ndarray, deterministic: bool = True) -> Any:
        self.shown.append(np.concatenate([observation, goal], axis=1))
        return np.zeros((len(observation), 2), np.float32)


@pytest.mark.parametrize("workers", [0, 2])
def test_an_evaluation_plays_distinct_episodes_fixed_by_their_seeds(workers: int) -> None:
    """Six episodes on four envs of OGBench's maze (two workers: envs 0 and 2 start as
    copies of one process): the first four episodes start where their seeds say, in env
    order, all six are distinct, and the evaluation again plays them again."""
    pytest.importorskip("ogbench")
    from herkit.buffer.conventions import SuccessSignal
    from herkit.training.build import make_vector_env

    config = TrainConfig(
        env_id="pointmaze-medium-navigate-v0", env_kwargs=("max_episode_steps=20",)
    )
    envs = make_vector_env(config, 4, seed_offset=0, workers=workers)
    assert isinstance(envs, WorkerVectorEnv) and envs.workers == workers
    seeds = episode_seeds((0, 10_000, 0, 500, 0), 6)
    expected = [maze_start(seed) for seed in seeds]
    assert len({tuple(start) for start in expected}) == 6
    try:
        agent = Recorder()
        options = {"task_id": 1}
        result = evaluate(agent, envs, seeds, SuccessSignal("is_success"), options=options)  # type: ignore[arg-type]
        again = Recorder()
        repeated = evaluate(again, envs, seeds, SuccessSignal("is_success"), options=options)  # type: ignore[arg-type]
    finally:
        envs.close()
    assert agent.shown[0].tolist() == expected[:4]
    shown = {tuple(row) for step in agent.shown for row in step.tolist()}
    assert all(tuple(start) in shown for start in expected)
    assert result == repeated and len(result.lengths) == 6
    assert all(np.array_equal(x, y) for x, y in zip(agent.shown, again.shown, strict=True))


def test_episode_seeds_are_a_function_of_the_key_and_the_index() -> None:
    seeds = episode_seeds((1, 10_000, 0, 2000, 3), 50)
    assert episode_seeds((1, 10_000, 0, 2000, 3), 10) == seeds[:10]
    assert len(set(seeds)) == 50
    assert set(seeds).isdisjoint(episode_seeds((1, 10_000, 0, 2500, 3), 50))
    assert set(seeds).isdisjoint(episode_seeds((1, 10_000, 0, 2000, 4), 50))
    with pytest.raises(ValueError, match="non-negative"):
        episode_seeds((1, -1), 2)
