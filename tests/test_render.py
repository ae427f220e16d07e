"""Tests of the envs' ``render_mode="rgb_array"`` frames and of herkit.envs.drawing."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from herkit.envs import (
    HERKIT_IDS,
    BitFlipEnv,
    GoalEnv,
    GridWorldEnv,
    MountainCarGoalEnv,
    PointReachEnv,
    bitflip,
    drawing,
    grid_world,
    mountain_car_goal,
    point_reach,
)

# (id, make kwargs): every herkit env with its defaults, and variants that change frame sizes.
CASES = [
    *[(env_id, {}) for env_id in HERKIT_IDS],
    ("herkit/BitFlip-v0", {"n_bits": 1, "max_steps": 4}),
    ("herkit/BitFlip-v0", {"n_bits": 5, "continuous": True}),
    ("herkit/BitFlip-v0", {"n_bits": 40}),
    ("herkit/BitFlip-v0", {"n_bits": 300}),
    ("herkit/GridWorld-v0", {"size": 3}),
    ("herkit/GridWorld-v0", {"size": 100}),
    ("herkit/PointReach-v0", {"distance_threshold": 0.3}),
]
CASE_IDS = [f"{env_id}{kwargs or ''}" for env_id, kwargs in CASES]
CLASSES = [BitFlipEnv, PointReachEnv, GridWorldEnv, MountainCarGoalEnv]
# A warning check_env gives for any wrapped env, which says nothing about the env itself.
WRAPPED = "is different from the unwrapped version"


def make(env_id: str, **kwargs: Any) -> tuple[gym.Env, Any]:
    """``gym.make(env_id, render_mode="rgb_array", **kwargs)`` and its unwrapped goal env."""
    env = gym.make(env_id, render_mode="rgb_array", **kwargs)
    assert isinstance(env.unwrapped, GoalEnv)
    return env, env.unwrapped


def frame_of(env: gym.Env) -> np.ndarray:
    """``env.render()``, checked to be an RGB frame."""
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    return frame


def is_color(pixels: np.ndarray, color: drawing.Color) -> np.ndarray:
    """Where the ``(..., 3)`` array ``pixels`` has exactly the colour ``color``."""
    return np.all(pixels == np.asarray(color, dtype=np.uint8), axis=-1)


def centroid(frame: np.ndarray, color: drawing.Color) -> tuple[float, float]:
    """Mean ``(x, y)`` (column, row) of the pixels of colour ``color`` (there must be some)."""
    rows, cols = np.nonzero(is_color(frame, color))
    assert rows.size > 0, f"no pixel of colour {color}"
    return float(cols.mean()), float(rows.mean())


def state_changing_action(env: gym.Env) -> Callable[[], Any]:
    """An action (as a function of the current state) that moves the env visibly."""
    unwrapped = env.unwrapped
    if isinstance(unwrapped, BitFlipEnv):
        if unwrapped.continuous:
            return lambda: np.array([1.0] + [-1.0] * (unwrapped.n_bits - 1), dtype=np.float32)
        return lambda: 0
    if isinstance(unwrapped, PointReachEnv):
        return lambda: -np.sign(unwrapped._position).astype(np.float32)  # toward the centre
    if isinstance(unwrapped, GridWorldEnv):
        return lambda: 0 if unwrapped._agent[0] > 0 else 1  # up, or down from the top row
    return lambda: 0  # mountain car: push left (several steps needed, see below)


def set_other_goal(unwrapped: Any) -> None:
    """Replace the goal of ``unwrapped`` by a different one (the state stays as it is)."""
    if isinstance(unwrapped, BitFlipEnv):
        unwrapped._goal = (1.0 - unwrapped._goal).astype(np.float32)
    elif isinstance(unwrapped, PointReachEnv):
        unwrapped._goal = (-0.5 * np.sign(unwrapped._goal + 0.01)).astype(np.float32)
    elif isinstance(unwrapped, GridWorldEnv):
        unwrapped._goal = (unwrapped.size - 1) - unwrapped._goal
    else:
        goal = -1.0 if unwrapped._goal[0] > -0.3 else 0.4
        unwrapped._goal = np.array([goal], dtype=np.float32)


# -- every env -------------------------------------------------------------------------------


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_frames_are_rgb_uint8_with_sides_multiple_of_16(
    env_id: str, kwargs: dict[str, Any]
) -> None:
    env, _ = make(env_id, **kwargs)
    env.reset(seed=0)
    frame = frame_of(env)
    height, width, _ = frame.shape
    assert height % 16 == 0 and width % 16 == 0
    assert 16 <= height <= 512 and 16 <= width <= 2048
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) >= 3  # not a blank frame


def test_frame_sizes() -> None:
    sizes = {}
    for env_id in HERKIT_IDS:
        env, _ = make(env_id)
        env.reset(seed=0)
        sizes[env_id] = frame_of(env).shape[:2]
    assert sizes == {
        "herkit/BitFlip-v0": (112, 512),
        "herkit/PointReach-v0": (256, 256),
        "herkit/GridWorld-v0": (256, 256),
        "herkit/MountainCarGoal-v0": (256, 384),
    }
    assert [frame_of_bits(n).shape[1] for n in (4, 31, 40)] == [160, 1024, 992]


def frame_of_bits(n_bits: int) -> np.ndarray:
    """A frame of a reset ``BitFlipEnv(n_bits)``."""
    env = BitFlipEnv(n_bits, render_mode="rgb_array")
    env.reset(seed=0)
    return frame_of(env)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_frame_changes_with_the_state(env_id: str, kwargs: dict[str, Any]) -> None:
    env, unwrapped = make(env_id, **kwargs)
    obs, _ = env.reset(seed=1)
    before = frame_of(env)
    action = state_changing_action(env)
    steps = 20 if isinstance(unwrapped, MountainCarGoalEnv) else 1
    for _ in range(steps):
        next_obs, *_ = env.step(action())
    assert not np.array_equal(obs["observation"], next_obs["observation"])
    assert not np.array_equal(frame_of(env), before)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_same_state_same_frame_and_rendering_leaves_the_rng_alone(
    env_id: str, kwargs: dict[str, Any]
) -> None:
    first, first_unwrapped = make(env_id, **kwargs)
    second, _ = make(env_id, **kwargs)
    first.reset(seed=2)
    second.reset(seed=2)
    actions = []
    for _ in range(5):
        rng_state = first_unwrapped.np_random.bit_generator.state
        frame = frame_of(first)
        np.testing.assert_array_equal(frame_of(first), frame)  # rendering twice
        assert first_unwrapped.np_random.bit_generator.state == rng_state
        np.testing.assert_array_equal(frame_of(second), frame)  # another env, same state
        actions.append(first.action_space.sample())
        _, _, terminated, truncated, _ = first.step(actions[-1])
        second.step(actions[-1])
        if terminated or truncated:
            break
    # The same steps without rendering leave the env's RNG where rendering left it.
    unrendered, _ = make(env_id, **kwargs)
    unrendered.reset(seed=2)
    for action in actions:
        unrendered.step(action)
    rendered_obs, _ = first.reset()
    unrendered_obs, _ = unrendered.reset()
    for key, value in rendered_obs.items():
        np.testing.assert_array_equal(value, unrendered_obs[key])


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_goal_is_visible(env_id: str, kwargs: dict[str, Any]) -> None:
    env, unwrapped = make(env_id, **kwargs)
    obs, _ = env.reset(seed=4)
    before = frame_of(env)
    set_other_goal(unwrapped)
    assert not np.array_equal(unwrapped._obs()["desired_goal"], obs["desired_goal"])
    assert not np.array_equal(frame_of(env), before)


@pytest.mark.parametrize("env_id", HERKIT_IDS)
def test_render_modes(env_id: str) -> None:
    env = gym.make(env_id)
    env.reset(seed=0)
    assert env.render() is None
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0)
    assert isinstance(env.render(), str)
    assert env.metadata["render_modes"] == ["ansi", "rgb_array"]
    assert env.metadata["render_fps"] > 0
    # gymnasium's frame collection wraps rgb_array envs.
    env = gym.make(env_id, render_mode="rgb_array_list")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 2
    assert all(frame.dtype == np.uint8 and frame.ndim == 3 for frame in frames)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_bad_render_mode_names_both_modes(cls: type) -> None:
    for mode in ("human", "rgb", "RGB_ARRAY"):
        with pytest.raises(ValueError, match=r"'ansi'.*'rgb_array'"):
            cls(render_mode=mode)
    frame = cls(render_mode="rgb_array").render()  # also before the first reset
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8


@pytest.mark.parametrize("env_id", HERKIT_IDS)
def test_bad_render_mode_through_gym_make(env_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium warns about the unknown mode first
        with pytest.raises(ValueError, match="rgb_array"):
            gym.make(env_id, render_mode="rgb")


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=CASE_IDS)
def test_env_checker_passes_with_rgb_array(env_id: str, kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(env_id, render_mode="rgb_array", **kwargs).unwrapped)
        check_env(gym.make(env_id, render_mode="rgb_array", **kwargs))
    messages = [str(warning.message) for warning in caught]
    assert [message for message in messages if WRAPPED not in message] == []


# -- per env ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n_bits", [1, 6, 15, 40])
def test_bitflip_squares_show_the_bits(n_bits: int) -> None:
    env = BitFlipEnv(n_bits, render_mode="rgb_array")
    env.reset(seed=5)
    for index in range(n_bits):
        frame = frame_of(env)
        state_on = [
            is_color(frame[center(env._square(0, i))], bitflip.STATE_ON) for i in range(n_bits)
        ]
        goal_on = [
            is_color(frame[center(env._square(1, i))], bitflip.GOAL_ON) for i in range(n_bits)
        ]
        assert sum(state_on) == int(env._state.sum())
        assert sum(goal_on) == int(env._goal.sum())
        np.testing.assert_array_equal(state_on, env._state == 1)
        np.testing.assert_array_equal(goal_on, env._goal == 1)
        for i in range(n_bits):  # the outline: green where the bit matches the goal, else red
            x0, y0, _, y1 = env._square(0, i)
            outline = frame[(y0 + y1) // 2, x0]
            matches = env._state[i] == env._goal[i]
            assert is_color(outline, bitflip.MATCH if matches else bitflip.MISMATCH)
        # Every 1 bit is one filled square of the same area.
        ones = int(env._state.sum())
        filled = int(is_color(frame, bitflip.STATE_ON).sum())
        assert (filled == 0) == (ones == 0)
        if ones:
            assert filled % ones == 0
        env.step(np.int64(index))


def center(box: tuple[int, int, int, int]) -> tuple[int, int]:
    """The ``(row, col)`` index of the centre pixel of the box ``(x0, y0, x1, y1)``."""
    x0, y0, x1, y1 = box
    return (y0 + y1) // 2, (x0 + x1) // 2


def test_bitflip_success_is_all_green() -> None:
    env = BitFlipEnv(8, render_mode="rgb_array")
    env.reset(seed=6)
    assert is_color(frame_of(env), bitflip.MISMATCH).any()
    env._state = env._goal.copy()
    frame = frame_of(env)
    assert not is_color(frame, bitflip.MISMATCH).any()
    assert is_color(frame, bitflip.MATCH).any()


def test_point_reach_point_and_goal() -> None:
    env = PointReachEnv(distance_threshold=0.2, render_mode="rgb_array")
    env.reset(seed=7)
    size = point_reach.FRAME_SIZE
    # The point: at the frame's centre for (0, 0), y up.
    env._goal = np.array([0.8, -0.8], dtype=np.float32)
    for position, near in [
        ((0.0, 0.0), (size / 2, size / 2)),
        ((1.0, 1.0), (size - point_reach.MARGIN, point_reach.MARGIN)),
        ((-1.0, -1.0), (point_reach.MARGIN, size - point_reach.MARGIN)),
        ((-1.0, 1.0), (point_reach.MARGIN, point_reach.MARGIN)),
    ]:
        env._position = np.array(position)
        frame = frame_of(env)
        x, y = env._pixel(env._position)
        assert is_color(frame[round(y), round(x)], point_reach.POINT_COLOR)
        np.testing.assert_allclose(centroid(frame, point_reach.POINT_COLOR), near, atol=2.0)
    # The goal: a red circle of radius distance_threshold around the goal.
    goal_x, goal_y = env._pixel(env._goal)
    rows, cols = np.nonzero(is_color(frame, point_reach.GOAL_COLOR))
    distances = np.hypot(cols - goal_x, rows - goal_y)
    radius = 0.2 * (size - 1 - 2 * point_reach.MARGIN) / 2
    assert radius - 2.5 <= distances.max() <= radius + 0.5
    assert not is_color(frame, point_reach.REACHED_COLOR).any()
    # Reached: the circle turns green, with the point inside it.
    env._position = env._goal.astype(np.float64) + 0.1
    frame = frame_of(env)
    assert not is_color(frame, point_reach.GOAL_COLOR).any()
    assert is_color(frame, point_reach.REACHED_COLOR).any()
    x, y = env._pixel(env._position)
    assert is_color(frame[round(y), round(x)], point_reach.POINT_COLOR)


@pytest.mark.parametrize("size", [2, 3, 8, 20])
def test_grid_world_agent_goal_and_walls(size: int) -> None:
    env = GridWorldEnv(size, render_mode="rgb_array")
    env.reset(seed=8)
    env._agent = np.array([0, 0])
    env._goal = np.array([size - 1, size - 1])
    frame = frame_of(env)
    side = frame.shape[0]
    assert frame.shape[:2] == (side, side)
    # The border wall surrounds the grid.
    wall = grid_world.WALL
    for edge in (frame[:wall], frame[-wall:], frame[:, :wall], frame[:, -wall:]):
        assert is_color(edge, grid_world.WALL_COLOR).all()
    # The agent in the top-left cell, the goal in the bottom-right one.
    agent_x, agent_y = centroid(frame, grid_world.AGENT_COLOR)
    goal_x, goal_y = centroid(frame, grid_world.GOAL_COLOR)
    assert agent_x < side / 2 and agent_y < side / 2
    assert goal_x > side / 2 and goal_y > side / 2
    assert is_color(frame[center(env._cell_box(0, 0))], grid_world.AGENT_COLOR)
    assert is_color(frame[center(env._cell_box(size - 1, size - 1))], grid_world.GOAL_COLOR)
    # A move right (column + 1) moves the agent's disc right by one cell.
    env.step(np.int64(3))
    moved_x, moved_y = centroid(frame_of(env), grid_world.AGENT_COLOR)
    cell = env._cell_box(0, 1)[0] - env._cell_box(0, 0)[0]
    assert moved_x - agent_x == pytest.approx(cell, abs=0.5)
    assert moved_y == pytest.approx(agent_y, abs=0.5)


def test_mountain_car_hill_car_and_flag() -> None:
    env = MountainCarGoalEnv(render_mode="rgb_array")
    env.reset(seed=9)
    env._goal = np.array([0.3], dtype=np.float32)
    xs = [-1.0, -0.5, 0.0, 0.5]
    car_x = []
    for position in xs:
        env._position = position
        frame = frame_of(env)
        x, y = env._pixel(position, mountain_car_goal.hill_height(position))
        cx, cy = centroid(frame, mountain_car_goal.CAR_COLOR)
        # The car sits on the hill at its position (its body's centre 12.5 pixels above it).
        assert 8 < np.hypot(cx - x, cy - y) < 18 and cy < y
        car_x.append(cx)
    assert car_x == sorted(car_x)
    # The hill: gymnasium's height function, the ground under it.
    assert np.allclose(
        mountain_car_goal.hill_height([-np.pi / 6, 0.5]), [0.1, 0.55 + 0.45 * np.sin(1.5)]
    )
    for position in (-1.1, -0.8, 0.55):
        x, y = env._pixel(position, mountain_car_goal.hill_height(position))
        column = frame[:, round(x)]
        assert is_color(column[round(y)], mountain_car_goal.HILL_COLOR)
        assert is_color(column[round(y) + 6 :], mountain_car_goal.GROUND).all()
        assert is_color(column[: round(y) - 40], mountain_car_goal.SKY).all()
    # The flag at the goal, above the success window on the hill.
    goal_x, goal_y = env._pixel(0.3, mountain_car_goal.hill_height(0.3))
    rows, cols = np.nonzero(is_color(frame, mountain_car_goal.FLAG_COLOR))
    assert abs(cols.min() - goal_x) <= 2 and rows.max() < goal_y
    for position, color in [
        (0.27, mountain_car_goal.WINDOW_COLOR),
        (0.33, mountain_car_goal.WINDOW_COLOR),
        (0.2, mountain_car_goal.HILL_COLOR),
        (0.4, mountain_car_goal.HILL_COLOR),
    ]:
        x, y = env._pixel(position, mountain_car_goal.hill_height(position))
        assert is_color(frame[round(y), round(x)], color)


# -- drawing ---------------------------------------------------------------------------------


def test_drawing_primitives() -> None:
    assert [drawing.round_up(n) for n in (0, 1, 16, 17, 250)] == [16, 16, 16, 32, 256]
    frame = drawing.blank(32, 48)
    assert frame.shape == (32, 48, 3) and frame.dtype == np.uint8
    assert is_color(frame, drawing.WHITE).all()
    with pytest.raises(ValueError):
        drawing.blank(0, 16)
    # Rectangles clip to the frame.
    drawing.fill_rect(frame, -5, -5, 10, 4, drawing.BLACK)
    assert is_color(frame, drawing.BLACK).sum() == 10 * 4
    drawing.fill_rect(frame, 100, 100, 200, 200, drawing.BLACK)  # wholly outside
    assert is_color(frame, drawing.BLACK).sum() == 40
    frame = drawing.blank(32, 48)
    drawing.draw_rect(frame, 10, 10, 20, 20, drawing.RED, 2)
    assert is_color(frame, drawing.RED).sum() == 100 - 36
    # A disc has about pi r^2 pixels, a ring lies between its radii.
    frame = drawing.blank(64, 64)
    drawing.fill_circle(frame, 30.0, 30.0, 10.0, drawing.BLUE)
    assert abs(is_color(frame, drawing.BLUE).sum() - np.pi * 100) < 20
    frame = drawing.blank(64, 64)
    drawing.draw_circle(frame, 30.0, 30.0, 10.0, drawing.BLUE, 2)
    rows, cols = np.nonzero(is_color(frame, drawing.BLUE))
    distances = np.hypot(cols - 30.0, rows - 30.0)
    assert distances.min() > 8.0 and distances.max() <= 10.0
    # A triangle of half a 20 x 20 square, in either winding order.
    for xs in ([0, 20, 0], [0, 0, 20]):
        frame = drawing.blank(32, 32)
        ys = [0, 0, 20] if xs[1] == 20 else [0, 20, 0]
        drawing.fill_polygon(frame, xs, ys, drawing.GREEN)
        assert abs(is_color(frame, drawing.GREEN).sum() - 231) <= 21
    # A steep line has no gaps: one pixel in every row it spans.
    frame = drawing.blank(64, 64)
    drawing.draw_line(frame, 3.0, 2.0, 17.0, 60.0, drawing.BLACK)
    rows, _ = np.nonzero(is_color(frame, drawing.BLACK))
    assert set(rows.tolist()) == set(range(2, 61))
    frame = drawing.blank(64, 64)
    drawing.draw_polyline(frame, [0, 30, 63], [10, 50, 10], drawing.BLACK, thickness=3)
    cols = np.nonzero(is_color(frame, drawing.BLACK).any(axis=0))[0]
    assert set(cols.tolist()) == set(range(64))
