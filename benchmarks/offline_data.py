"""OGBench's pointmaze datasets made as OGBench's ``data_gen_scripts/generate_locomaze.py``
makes them, without downloading them: ``pointmaze-{medium,large,giant,teleport}-{navigate,
stitch}-v0`` (:data:`DATASETS`, with the episode counts and lengths of OGBench's
``data_gen_scripts/commands.sh``).

The behaviour policy is OGBench's scripted oracle: the unit vector to the centre of the
neighbouring cell nearest the goal cell by BFS (the goal cell's own centre inside it; the
BFS knows no teleports), plus Gaussian noise of std ``noise``, clipped to ``[-1, 1]``.
Episodes are ``steps`` rows from a uniform free cell (with OGBench's quarter-cell noise).
A ``navigate`` episode's goals are uniform vertex cells (not corridor cells), redrawn
whenever reached; a ``stitch`` episode has one goal, a uniform cell 4 cells away by BFS
(its start cell where none is), and stays there once reached. Goals carry the same noise.
The files hold OGBench's keys; ``episodes // 10`` more go to the ``-val`` file. Unlike
OGBench's script, every draw is seeded from ``seed``.

    python benchmarks/offline.py data pointmaze-large-stitch-v0
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from herkit.envs.ogbench_maze import make_ogbench_env

KEYS = ("observations", "actions", "terminals", "qpos", "qvel")
"""The keys of an OGBench locomaze .npz file, in its order."""

MOVES = ((-1, 0), (0, -1), (1, 0), (0, 1))
"""Neighbouring cells as (di, dj): up, left, down, right (i is the row, along y)."""

Kind = Literal["navigate", "stitch"]
"""How an episode's goals are drawn (see the module's docstring)."""

STITCH_CELLS = 4
"""A stitch episode's goal cell is this many cells from its start by BFS (OGBench's
``adj_steps``)."""


@dataclass(frozen=True)
class Recipe:
    """How OGBench makes one dataset: its script's flags, as a line of its
    ``data_gen_scripts/commands.sh`` (commit 1d41409) gives them."""

    line: int
    """The line of ``commands.sh`` that makes the dataset."""
    env: str
    """The env (``--env_name``)."""
    kind: Kind
    """``--dataset_type``."""
    episodes: int
    """``--num_episodes`` (the ``-val`` file holds a tenth more)."""
    steps: int
    """``--max_episode_steps``: the rows (states) of each episode."""
    noise: float = 0.5
    """``--noise``: the std of the Gaussian noise on each action."""


DATASETS: dict[str, Recipe] = {
    "pointmaze-medium-navigate-v0": Recipe(14, "pointmaze-medium-v0", "navigate", 1000, 1001),
    "pointmaze-large-navigate-v0": Recipe(16, "pointmaze-large-v0", "navigate", 1000, 1001),
    "pointmaze-giant-navigate-v0": Recipe(18, "pointmaze-giant-v0", "navigate", 500, 2001),
    "pointmaze-teleport-navigate-v0": Recipe(20, "pointmaze-teleport-v0", "navigate", 1000, 1001),
    "pointmaze-medium-stitch-v0": Recipe(22, "pointmaze-medium-v0", "stitch", 5000, 201),
    "pointmaze-large-stitch-v0": Recipe(24, "pointmaze-large-v0", "stitch", 5000, 201),
    "pointmaze-giant-stitch-v0": Recipe(26, "pointmaze-giant-v0", "stitch", 5000, 201),
    "pointmaze-teleport-stitch-v0": Recipe(28, "pointmaze-teleport-v0", "stitch", 5000, 201),
}
"""OGBench's pointmaze datasets by name, each as its line of ``commands.sh`` makes it."""


def maze_cells(maze_map: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The free cells ``(n, 2)`` of ``maze_map`` (1 = wall) and its vertex cells: the free
    cells other than straight corridor cells."""
    free = maze_map == 0
    cells = np.argwhere(free)
    vertices = []
    for i, j in cells:
        vertical = free[i - 1, j] and free[i + 1, j] and not free[i, j - 1] and not free[i, j + 1]
        across = free[i, j - 1] and free[i, j + 1] and not free[i - 1, j] and not free[i + 1, j]
        if not (vertical or across):
            vertices.append((i, j))
    return cells, np.array(vertices, dtype=np.int64).reshape(-1, 2)


def cell_distances(maze_map: np.ndarray) -> np.ndarray:
    """``distances[gi, gj, i, j]``: the BFS distance in cells from free cell ``(gi, gj)`` to
    ``(i, j)`` through free cells (``rows * cols`` where unreachable, and for walls)."""
    rows, cols = maze_map.shape
    free = maze_map == 0
    far = rows * cols
    distances = np.full((rows, cols, rows, cols), far, dtype=np.int64)
    for gi, gj in np.argwhere(free):
        distance = distances[gi, gj]
        distance[gi, gj] = 0
        queue = deque([(gi, gj)])
        while queue:
            i, j = queue.popleft()
            for di, dj in MOVES:
                ni, nj = i + di, j + dj
                if 0 <= ni < rows and 0 <= nj < cols and free[ni, nj] and distance[ni, nj] == far:
                    distance[ni, nj] = distance[i, j] + 1
                    queue.append((ni, nj))
    return distances


def subgoal_table(maze_map: np.ndarray, distances: np.ndarray | None = None) -> np.ndarray:
    """``table[gi, gj, i, j]``: the cell the oracle heads for from ``(i, j)`` with the goal
    in ``(gi, gj)``: the first of :data:`MOVES`' neighbours strictly nearer by BFS distance
    than the best so far (OGBench's ``get_oracle_subgoal``), else itself."""
    rows, cols = maze_map.shape
    free = maze_map == 0
    if distances is None:
        distances = cell_distances(maze_map)
    table = np.empty((rows, cols, rows, cols, 2), dtype=np.int64)
    table[...] = np.stack(np.indices((rows, cols)), axis=-1)  # stay: walls, goal, unreachable
    for gi, gj in np.argwhere(free):
        distance = distances[gi, gj]
        for i, j in np.argwhere(free):
            best = (i, j)
            for di, dj in MOVES:
                ni, nj = i + di, j + dj
                inside = 0 <= ni < rows and 0 <= nj < cols
                if inside and free[ni, nj] and distance[ni, nj] < distance[best]:
                    best = (ni, nj)
            table[gi, gj, i, j] = best
    return table


class Maze:
    """Cell geometry of an OGBench maze env (``env.unwrapped``): cell ``(i, j)`` has its
    centre at ``xy = (j * unit - offset_x, i * unit - offset_y)``."""

    def __init__(self, base: Any) -> None:
        self.map = np.asarray(base.maze_map)
        self.unit = float(base._maze_unit)
        self.offset = np.array([base._offset_x, base._offset_y], dtype=np.float64)
        self.noise = float(base._noise) * self.unit / 4  # OGBench's noise on start and goal
        self.cells, self.vertices = maze_cells(self.map)
        self.distances = cell_distances(self.map)
        self.table = subgoal_table(self.map, self.distances)

    def stitch_goals(self, start: np.ndarray) -> np.ndarray:
        """The cells ``(n, 2)`` a stitch episode from cell ``start`` may aim for: those
        :data:`STITCH_CELLS` cells away by BFS; ``start`` alone where there are none."""
        found = np.argwhere(self.distances[start[0], start[1]] == STITCH_CELLS)
        return found if len(found) else np.asarray(start, dtype=np.int64).reshape(1, 2)

    def centre(self, ij: np.ndarray) -> np.ndarray:
        """The xy of the centre of cell ``ij = (i, j)``."""
        return np.array([ij[1], ij[0]], dtype=np.float64) * self.unit - self.offset

    def cell(self, xy: np.ndarray) -> tuple[int, int]:
        """The cell ``(i, j)`` holding position ``xy``."""
        j, i = np.floor((xy + self.offset + 0.5 * self.unit) / self.unit).astype(np.int64)
        return int(i), int(j)

    def jittered(self, ij: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A position in cell ``ij``: its centre plus uniform noise of ``self.noise`` per axis."""
        return self.centre(ij) + rng.uniform(-1.0, 1.0, 2) * self.noise

    def direction(
        self, xy: np.ndarray, goal_cell: tuple[int, int], goal_xy: np.ndarray | None = None
    ) -> np.ndarray:
        """The oracle's noise-free action at ``xy``: the unit vector to the centre of the
        cell it heads for (to ``goal_xy`` in the goal cell, where given)."""
        gi, gj = goal_cell
        i, j = self.cell(xy)
        if not (0 <= i < self.map.shape[0] and 0 <= j < self.map.shape[1]):
            return np.zeros(2)
        if goal_xy is not None and (i, j) == (gi, gj):
            offset = np.asarray(goal_xy, dtype=np.float64) - xy
        else:
            offset = self.centre(self.table[gi, gj, i, j]) - xy
        return offset / (np.linalg.norm(offset) + 1e-6)


def make_env(env_id: str, steps: int) -> Any:
    """OGBench's env ``env_id`` as its script makes it for data (not herkit's GoalEnv)."""
    if not env_id.startswith("pointmaze-"):
        raise ValueError(f"{env_id}: the scripted oracle drives the point mazes (pointmaze-*) only")
    return make_ogbench_env(env_id, terminate_at_goal=False, max_episode_steps=steps).env


def collect(
    env_id: str, episodes: int, steps: int, noise: float, seed: int, kind: Kind = "navigate"
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``episodes`` episodes of ``steps`` rows with ``kind``'s goals: the arrays of
    :data:`KEYS`, and each row's goal."""
    if kind not in ("navigate", "stitch"):
        raise ValueError(f"kind must be 'navigate' or 'stitch', got {kind!r}")
    rng = np.random.default_rng(seed)
    env = make_env(env_id, steps)
    base = env.unwrapped
    maze = Maze(base)
    rows = episodes * steps
    obs_dim = env.observation_space.shape[0]
    nq, nv = base.model.nq, base.model.nv
    data = {
        "observations": np.empty((rows, obs_dim), np.float32),
        "actions": np.empty((rows, 2), np.float32),
        "terminals": np.zeros(rows, bool),
        "qpos": np.empty((rows, nq), np.float32),
        "qvel": np.empty((rows, nv), np.float32),
    }
    goals = np.empty((rows, 2), np.float64)
    # The env draws from numpy's global generator too (start, goal and teleport noise):
    # seeded from ours for the run, and left as it was after it.
    saved = np.random.get_state()  # noqa: NPY002
    np.random.seed(int(rng.integers(2**31)))  # noqa: NPY002
    try:
        row = 0
        for _ in range(episodes):
            start = maze.cells[rng.integers(len(maze.cells))]
            if kind == "navigate":
                goal_cell = maze.vertices[rng.integers(len(maze.vertices))]
            else:
                near = maze.stitch_goals(start)
                goal_cell = near[rng.integers(len(near))]
            options = {"task_info": {"init_ij": tuple(start), "goal_ij": tuple(goal_cell)}}
            env.reset(seed=int(rng.integers(2**31)), options=options)
            goal_xy = maze.jittered(goal_cell, rng)
            base.set_goal(goal_xy=goal_xy)
            base.set_xy(maze.jittered(start, rng))
            ob = base.get_ob()
            shakes = rng.normal(0.0, noise, (steps, 2)) if noise > 0 else np.zeros((steps, 2))
            goal = (int(goal_cell[0]), int(goal_cell[1]))
            for t in range(steps):
                action = np.clip(maze.direction(base.get_xy(), goal) + shakes[t], -1.0, 1.0)
                next_ob, _, terminated, truncated, info = env.step(action)
                data["observations"][row] = ob
                data["actions"][row] = action
                data["qpos"][row] = info["prev_qpos"]
                data["qvel"][row] = info["prev_qvel"]
                goals[row] = goal_xy
                if (terminated or truncated) != (t == steps - 1):
                    raise RuntimeError(f"{env_id}: episode ended at step {t + 1} of {steps}")
                data["terminals"][row] = t == steps - 1
                if info["success"] and kind == "navigate":  # a new goal, in a vertex cell
                    goal_cell = maze.vertices[rng.integers(len(maze.vertices))]
                    goal = (int(goal_cell[0]), int(goal_cell[1]))
                    goal_xy = maze.jittered(goal_cell, rng)
                    base.set_goal(goal_xy=goal_xy)
                ob = next_ob
                row += 1
    finally:
        np.random.set_state(saved)  # noqa: NPY002
        env.close()
    return data, goals


def val_path(path: Path) -> Path:
    """The validation file beside ``path``: ``x.npz`` -> ``x-val.npz``."""
    return path.with_name(f"{path.stem}-val{path.suffix or '.npz'}")


def make_dataset(
    env_id: str,
    episodes: int,
    steps: int,
    noise: float,
    seed: int,
    path: str | Path,
    kind: Kind = "navigate",
) -> dict[str, Any]:
    """Write ``episodes`` episodes of ``kind`` to ``path`` and ``episodes // 10`` more to its
    ``-val`` file; the paths, rows, goals reached (arrivals at a goal: a stitch episode's
    agent may leave its goal and come back), episodes that reached a goal, seconds and env
    steps per second."""
    path = Path(path)
    val_episodes = episodes // 10
    started = time.perf_counter()
    data, goals = collect(env_id, episodes + val_episodes, steps, noise, seed, kind)
    seconds = time.perf_counter() - started
    split = episodes * steps
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{key: data[key][:split] for key in KEYS})
    written = [str(path)]
    if val_episodes:
        np.savez_compressed(val_path(path), **{key: data[key][split:] for key in KEYS})
        written.append(str(val_path(path)))
    inside = ~data["terminals"][:-1]  # rows t and t + 1 of one episode
    at_goal = (np.linalg.norm(data["observations"][1:] - goals[:-1], axis=1) <= 1.0) & inside
    arrived = at_goal.copy()
    arrived[1:] &= ~at_goal[:-1]  # the first step at a goal, not each step there
    rows = len(goals)
    episode = np.arange(rows - 1) // steps
    return {
        "paths": written,
        "rows": rows,
        "goals_reached": int(arrived.sum()),
        "episodes_at_a_goal": len(np.unique(episode[at_goal])),
        "seconds": seconds,
        "steps_per_s": rows / seconds,
    }


def make_named(name: str, seed: int, path: str | Path, **changes: Any) -> dict[str, Any]:
    """Make the dataset ``name`` of :data:`DATASETS` (``changes``: fields of its
    :class:`Recipe` to change) at ``path`` with :func:`make_dataset`."""
    if name not in DATASETS:
        raise ValueError(f"no recipe for the dataset {name!r}: one of {', '.join(DATASETS)}")
    recipe = DATASETS[name]
    recipe = Recipe(**(vars(recipe) | {k: v for k, v in changes.items() if v is not None}))
    return make_dataset(
        recipe.env, recipe.episodes, recipe.steps, recipe.noise, seed, path, recipe.kind
    )
