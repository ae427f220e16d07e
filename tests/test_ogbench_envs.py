"""OGBench's locomaze envs as GoalEnvs (herkit.envs.ogbench_maze) and the OGBench-layout
point-maze datasets of benchmarks/offline_data.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scripts import load_benchmark

from herkit.envs.ogbench_maze import OGBENCH_MAZE_ID, OGBenchGoalEnv, make_ogbench_env

MEDIUM_TASKS_XY = [  # (start, goal) xy of pointmaze-medium's evaluation tasks 1..5
    ((0, 0), (20, 20)),
    ((0, 20), (20, 0)),
    ((8, 16), (4, 12)),
    ((16, 20), (0, 20)),
    ((20, 4), (0, 0)),
]


@pytest.fixture(scope="module")
def data_script():
    pytest.importorskip("ogbench")
    return load_benchmark("offline_data")


def test_the_id_pattern_takes_ogbench_locomaze_ids_only() -> None:
    for name in ("pointmaze-medium-navigate-v0", "antmaze-large-v0", "humanoidmaze-giant-v0"):
        assert OGBENCH_MAZE_ID.match(name)
    for name in ("PointMaze_UMaze-v3", "visual-antmaze-medium-v0", "herkit/PointReach-v0"):
        assert not OGBENCH_MAZE_ID.match(name)


def test_without_ogbench_the_error_names_the_offline_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ogbench", None)  # import ogbench fails
    with pytest.raises(ModuleNotFoundError, match=r"herkit\[offline\]") as caught:
        make_ogbench_env("pointmaze-medium-navigate-v0")
    assert "\n" not in str(caught.value)


def test_the_wrapper_gives_goal_spaces_tasks_and_rewards() -> None:
    pytest.importorskip("ogbench")
    env = make_ogbench_env("pointmaze-medium-navigate-v0")
    space = env.observation_space
    assert set(space.spaces) == {"observation", "achieved_goal", "desired_goal"}
    for key in space.spaces:
        assert space[key].shape == (2,) and space[key].dtype == np.float64
    assert env.goal_tolerance == 1.0 and env.terminates_on_success
    assert env.evaluation_tasks == tuple({"task_id": k} for k in range(1, 6))
    assert OGBenchGoalEnv.__init__.__doc__ is not None
    # batched on any leading shape; at most the tolerance in xy is a success
    achieved = np.zeros((3, 4, 2))
    desired = np.zeros((3, 4, 2))
    desired[0, :, 0] = 1.0  # exactly the tolerance
    desired[1, :, 1] = 1.001
    rewards = env.compute_reward(achieved, desired, None)
    assert rewards.shape == (3, 4)
    assert (rewards[0] == 0).all() and (rewards[1] == -1).all() and (rewards[2] == 0).all()
    assert env.compute_reward(np.zeros(2), np.array([3.0, 0.0]), {}) == -1.0
    for task, (start, goal) in enumerate(MEDIUM_TASKS_XY, start=1):
        obs, info = env.reset(seed=task, options={"task_id": task})
        assert np.abs(obs["desired_goal"] - goal).max() <= 1.0 + 1e-9
        assert np.abs(obs["observation"] - start).max() <= 1.0 + 1e-6
        np.testing.assert_array_equal(obs["desired_goal"], info["goal"])
        np.testing.assert_array_equal(obs["achieved_goal"], obs["observation"])
        assert info["is_success"] == 0.0


def test_make_goal_env_builds_ogbench_mazes() -> None:
    pytest.importorskip("ogbench")
    from herkit.buffer.goal_env import env_ending
    from herkit.envs import is_goal_env, make_goal_env

    env = make_goal_env("pointmaze-medium-v0", terminate_at_goal=False)
    assert isinstance(env, OGBenchGoalEnv) and is_goal_env(env)
    assert env.spec is not None and env.spec.max_episode_steps == 1000
    assert not env.terminates_on_success and env_ending(env).ends is False
    assert env_ending(make_goal_env("pointmaze-medium-navigate-v0")).ends is True
    with pytest.raises(ValueError, match="pointmaze-medium-v0"):
        make_goal_env("pointmaze-mediun-v0")


def test_the_noise_free_oracle_reaches_every_medium_task(data_script) -> None:
    """Its rewards and is_success agree with the env's success at every step, batched too."""
    env = make_ogbench_env("pointmaze-medium-v0")
    maze = data_script.Maze(env.unwrapped)
    for task in range(1, 6):
        obs, _ = env.reset(seed=task, options={"task_id": task})
        goal_cell = maze.cell(obs["desired_goal"])
        achieved, successes = [], []
        for _ in range(1000):
            action = maze.direction(obs["observation"], goal_cell, obs["desired_goal"])
            obs, reward, terminated, truncated, info = env.step(action.astype(np.float32))
            assert reward == (0.0 if info["success"] else -1.0) and not truncated
            assert info["is_success"] == info["success"]
            achieved.append(obs["achieved_goal"])
            successes.append(info["success"])
            if terminated:
                break
        assert successes[-1] == 1.0, f"task {task} not reached in 1000 steps"
        goals = np.broadcast_to(obs["desired_goal"], (len(achieved), 2))
        rewards = env.compute_reward(np.array(achieved), goals, None)
        np.testing.assert_array_equal(rewards, np.array(successes) - 1.0)


def test_the_medium_maze_cells_and_oracle_table(data_script) -> None:
    env = make_ogbench_env("pointmaze-medium-v0")
    maze = data_script.Maze(env.unwrapped)
    assert len(maze.cells) == 26 and len(maze.vertices) == 21
    assert (3, 3) not in {tuple(cell) for cell in maze.vertices}  # a horizontal corridor
    # from (1, 1) towards (6, 6): (1, 2) and (2, 1) are both 9 cells away, and down comes
    # before right; in the goal cell the oracle heads for its centre
    assert tuple(maze.table[6, 6, 1, 1]) == (2, 1)
    assert tuple(maze.table[6, 6, 6, 6]) == (6, 6)
    np.testing.assert_allclose(maze.centre(np.array([6, 6])), [20.0, 20.0])
    assert maze.cell(np.array([20.9, 19.1])) == (6, 6)


def test_a_small_dataset_has_ogbench_layout(data_script, tmp_path) -> None:
    path = tmp_path / "pointmaze-medium-navigate-v0.npz"
    made = data_script.make_dataset("pointmaze-medium-v0", 3, 201, 0.5, 0, path)
    assert made["paths"] == [str(path)] and made["rows"] == 603  # 3 // 10: no -val file
    data = dict(np.load(path))
    assert list(data) == ["observations", "actions", "terminals", "qpos", "qvel"]
    for key, width in (("observations", 2), ("actions", 2), ("qpos", 2), ("qvel", 2)):
        assert data[key].dtype == np.float32 and data[key].shape == (603, width)
    assert data["terminals"].dtype == bool and data["terminals"].shape == (603,)
    np.testing.assert_array_equal(np.flatnonzero(data["terminals"]), [200, 401, 602])
    np.testing.assert_array_equal(data["observations"], data["qpos"])
    actions, obs = data["actions"], data["observations"]
    assert np.abs(actions).max() <= 1.0 and np.abs(actions).max() == 1.0  # noise clipped
    moves = np.diff(obs, axis=0)[~data["terminals"][:-1]]
    allowed = 0.2 * np.abs(actions[:-1][~data["terminals"][:-1]])
    assert (np.abs(moves) <= allowed + 1e-4).all()  # at most 0.2 * action, less at walls
    assert np.mean(np.abs(moves - np.sign(moves) * allowed) < 1e-4) > 0.5  # mostly free


def test_the_val_file_holds_a_tenth_of_the_episodes(data_script, tmp_path) -> None:
    path = tmp_path / "d.npz"
    made = data_script.make_dataset("pointmaze-medium-v0", 10, 11, 0.5, 1, path)
    assert made["paths"] == [str(path), str(tmp_path / "d-val.npz")]
    assert len(np.load(path)["terminals"]) == 110
    val = np.load(tmp_path / "d-val.npz")
    np.testing.assert_array_equal(np.flatnonzero(val["terminals"]), [10])


def test_goals_are_redrawn_in_vertex_cells_after_each_success(data_script) -> None:
    data, goals = data_script.collect("pointmaze-medium-v0", 2, 301, 0.5, 3)
    again, _ = data_script.collect("pointmaze-medium-v0", 2, 301, 0.5, 3)
    for key in data:  # seeded: the same data again
        np.testing.assert_array_equal(data[key], again[key])
    inside = ~data["terminals"][:-1]  # row t and t + 1 in one episode
    next_obs = data["observations"][1:].astype(np.float64)
    reached = np.linalg.norm(next_obs - goals[:-1], axis=1) <= 1.0
    redrawn = (goals[1:] != goals[:-1]).any(axis=1)
    assert (reached & inside).sum() >= 2
    np.testing.assert_array_equal(redrawn[inside], reached[inside])
    maze = data_script.Maze(make_ogbench_env("pointmaze-medium-v0").unwrapped)
    vertices = {tuple(cell) for cell in maze.vertices}
    assert all(maze.cell(goal) in vertices for goal in goals)


MAZES = ("medium", "large", "giant", "teleport")


@pytest.mark.parametrize("maze", MAZES)
def test_the_oracle_heads_where_ogbenchs_oracle_subgoal_does(data_script, maze) -> None:
    """herkit's table of the oracle's next cell against OGBench's own ``get_oracle_subgoal``
    (a BFS per call) at random positions and goals of every pointmaze, the teleport maze's
    cell that no corridor reaches among them; and the cells a stitch episode may aim for
    against the BFS map OGBench computes from the start."""
    base = data_script.make_env(f"pointmaze-{maze}-v0", 10).unwrapped
    maze_ = data_script.Maze(base)
    rng = np.random.default_rng(0)
    for _ in range(60):
        start = maze_.cells[rng.integers(len(maze_.cells))]
        goal = maze_.cells[rng.integers(len(maze_.cells))]
        xy, goal_xy = maze_.jittered(start, rng), maze_.jittered(goal, rng)
        subgoal, _ = base.get_oracle_subgoal(xy, goal_xy)
        want = (subgoal - xy) / (np.linalg.norm(subgoal - xy) + 1e-6)
        got = maze_.direction(xy, (int(goal[0]), int(goal[1])))
        np.testing.assert_allclose(got, want, atol=1e-12)
    for start in maze_.cells:
        _, bfs = base.get_oracle_subgoal(maze_.centre(start), maze_.centre(start))
        theirs = {tuple(cell) for cell in np.argwhere(bfs == data_script.STITCH_CELLS)}
        mine = {tuple(cell) for cell in maze_.stitch_goals(start)}
        assert mine == (theirs or {tuple(start)})


def test_the_teleport_maze_is_ogbenchs_id_and_holds_a_cell_only_a_teleport_reaches(
    data_script,
) -> None:
    import gymnasium

    assert "pointmaze-teleport-v0" in gymnasium.registry  # the env id OGBench registers
    env = make_ogbench_env("pointmaze-teleport-stitch-v0")  # its datasets' ids make it
    assert env.unwrapped._maze_type == "teleport"
    maze = data_script.Maze(env.unwrapped)
    alone = [tuple(c) for c in maze.cells if (maze.distances[c[0], c[1]] < 100).sum() == 1]
    assert alone == [(1, 7)]  # a teleport's way out, walled in
    assert [tuple(c) for c in maze.stitch_goals(np.array([1, 7]))] == [(1, 7)]


def test_a_stitch_dataset_keeps_one_goal_four_cells_away_per_episode(data_script) -> None:
    episodes, steps = 6, 51
    data, goals = data_script.collect("pointmaze-large-v0", episodes, steps, 0.5, 2, "stitch")
    assert data["terminals"].sum() == episodes and data["terminals"][steps - 1]
    maze = data_script.Maze(make_ogbench_env("pointmaze-large-v0").unwrapped)
    for episode in range(episodes):
        rows = slice(episode * steps, (episode + 1) * steps)
        assert (goals[rows] == goals[rows][0]).all()  # never redrawn, even when reached
        start = maze.cell(data["observations"][rows][0].astype(np.float64))
        goal = maze.cell(goals[rows][0])
        assert maze.distances[start][goal] == data_script.STITCH_CELLS
    again, _ = data_script.collect("pointmaze-large-v0", episodes, steps, 0.5, 2, "stitch")
    np.testing.assert_array_equal(again["observations"], data["observations"])
    with pytest.raises(ValueError, match="kind must be 'navigate' or 'stitch', got 'explore'"):
        data_script.collect("pointmaze-large-v0", 1, 5, 0.5, 0, "explore")


def test_a_dataset_is_made_by_its_name_with_its_recipe(data_script, tmp_path) -> None:
    recipe = data_script.DATASETS["pointmaze-giant-navigate-v0"]
    assert (recipe.env, recipe.kind, recipe.episodes, recipe.steps) == (
        "pointmaze-giant-v0",
        "navigate",
        500,
        2001,
    )
    path = tmp_path / "giant.npz"
    made = data_script.make_named("pointmaze-teleport-stitch-v0", 0, path, episodes=10, steps=21)
    assert made["rows"] == 11 * 21 and made["paths"] == [str(path), str(tmp_path / "giant-val.npz")]
    assert made["episodes_at_a_goal"] <= 11
    with pytest.raises(ValueError, match="no recipe for the dataset 'pointmaze-tiny-v0'"):
        data_script.make_named("pointmaze-tiny-v0", 0, path)
