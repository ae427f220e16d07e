"""Tiny numpy-only raster drawing for the envs' ``render_mode="rgb_array"`` frames.

A frame is a ``uint8`` array of shape ``(height, width, 3)`` (RGB). Coordinates are pixel
coordinates with the origin at the top-left corner: ``x`` is the column and ``y`` the row,
and the pixel ``frame[row, col]`` has its centre at ``(x, y) = (col, row)``. Floats are
accepted everywhere. Every function draws in place, clips to the frame (shapes partly or
wholly outside it are fine) and works on whole pixel blocks at once (no Python loop per
pixel), so drawing is fast and deterministic.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BLACK",
    "BLUE",
    "DARK_GREY",
    "GREEN",
    "GREY",
    "LIGHT_GREY",
    "RED",
    "WHITE",
    "Color",
    "Frame",
    "blank",
    "draw_circle",
    "draw_line",
    "draw_polyline",
    "draw_rect",
    "fill_circle",
    "fill_polygon",
    "fill_rect",
    "round_up",
]

Color = tuple[int, int, int]
"""An RGB colour, each channel in ``[0, 255]``."""
Frame = NDArray[np.uint8]
"""An RGB image: a ``uint8`` array of shape ``(height, width, 3)``."""

WHITE: Color = (255, 255, 255)
"""White."""
BLACK: Color = (0, 0, 0)
"""Black."""
LIGHT_GREY: Color = (225, 225, 225)
"""Light grey (backgrounds, grid lines)."""
GREY: Color = (150, 150, 150)
"""Mid grey."""
DARK_GREY: Color = (70, 70, 70)
"""Dark grey (walls, outlines)."""
RED: Color = (220, 40, 40)
"""Red (not reached / wrong)."""
GREEN: Color = (40, 170, 60)
"""Green (goals, reached / right)."""
BLUE: Color = (40, 90, 220)
"""Blue (the agent)."""


def round_up(n: float, multiple: int = 16) -> int:
    """The smallest multiple of ``multiple`` that is ``>= n`` (and at least ``multiple``)."""
    return max(multiple, int(np.ceil(n / multiple)) * multiple)


def blank(height: int, width: int, color: Color = WHITE) -> Frame:
    """A new ``(height, width, 3)`` frame filled with ``color``."""
    if height < 1 or width < 1:
        raise ValueError(f"frame size must be positive, got {height}x{width}")
    frame = np.empty((int(height), int(width), 3), dtype=np.uint8)
    frame[:] = np.asarray(color, dtype=np.uint8)
    return frame


def _box(
    frame: Frame, x0: float, y0: float, x1: float, y1: float
) -> tuple[int, int, int, int] | None:
    """Integer ``(col0, row0, col1, row1)`` (exclusive ends) of a box clipped to the frame."""
    height, width = frame.shape[:2]
    col0, col1 = max(int(np.floor(x0)), 0), min(int(np.ceil(x1)), width)
    row0, row1 = max(int(np.floor(y0)), 0), min(int(np.ceil(y1)), height)
    if col0 >= col1 or row0 >= row1:
        return None
    return col0, row0, col1, row1


def fill_rect(frame: Frame, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
    """Fill the pixels with ``x0 <= col < x1`` and ``y0 <= row < y1`` (ends rounded)."""
    height, width = frame.shape[:2]
    col0, col1 = max(round(x0), 0), min(round(x1), width)
    row0, row1 = max(round(y0), 0), min(round(y1), height)
    if col0 < col1 and row0 < row1:
        frame[row0:row1, col0:col1] = color


def draw_rect(
    frame: Frame,
    x0: float,
    y0: float,
    x1: float,
    y1: float,
    color: Color,
    thickness: int = 1,
) -> None:
    """Outline the rectangle of :func:`fill_rect` with a border ``thickness`` pixels wide,
    drawn inside the rectangle."""
    t = max(int(thickness), 1)
    fill_rect(frame, x0, y0, x1, y0 + t, color)
    fill_rect(frame, x0, y1 - t, x1, y1, color)
    fill_rect(frame, x0, y0, x0 + t, y1, color)
    fill_rect(frame, x1 - t, y0, x1, y1, color)


def _disc(frame: Frame, cx: float, cy: float, outer: float, inner: float, color: Color) -> None:
    """Set the pixels at a distance in ``(inner, outer]`` of ``(cx, cy)`` (``[0, outer]`` for
    ``inner <= 0``)."""
    box = _box(frame, cx - outer, cy - outer, cx + outer + 1, cy + outer + 1)
    if box is None:
        return
    col0, row0, col1, row1 = box
    cols = np.arange(col0, col1) - cx
    rows = np.arange(row0, row1) - cy
    squared = rows[:, None] ** 2 + cols[None, :] ** 2
    mask = squared <= outer**2
    if inner > 0:
        mask &= squared > inner**2
    frame[row0:row1, col0:col1][mask] = color


def fill_circle(frame: Frame, cx: float, cy: float, radius: float, color: Color) -> None:
    """Fill the pixels whose centres lie within ``radius`` of ``(cx, cy)``."""
    _disc(frame, cx, cy, radius, 0.0, color)


def draw_circle(
    frame: Frame, cx: float, cy: float, radius: float, color: Color, thickness: int = 1
) -> None:
    """Draw a ring: the pixels at a distance in ``(radius - thickness, radius]`` of the centre."""
    _disc(frame, cx, cy, radius, radius - max(int(thickness), 1), color)


def fill_polygon(frame: Frame, xs: ArrayLike, ys: ArrayLike, color: Color) -> None:
    """Fill the convex polygon with vertices ``(xs[i], ys[i])`` (either winding order).

    A pixel is filled when its centre is inside the polygon or on its boundary.
    """
    px = np.asarray(xs, dtype=np.float64).ravel()
    py = np.asarray(ys, dtype=np.float64).ravel()
    if px.shape != py.shape or px.size < 3:
        raise ValueError("a polygon needs matching xs and ys with at least 3 vertices")
    box = _box(frame, px.min(), py.min(), px.max() + 1, py.max() + 1)
    if box is None:
        return
    col0, row0, col1, row1 = box
    cols = np.arange(col0, col1, dtype=np.float64)[None, :, None]
    rows = np.arange(row0, row1, dtype=np.float64)[:, None, None]
    ex, ey = np.roll(px, -1) - px, np.roll(py, -1) - py
    # Cross product of every edge with the vector from its start to every pixel centre.
    cross = ex * (rows - py) - ey * (cols - px)
    area = np.sum(px * np.roll(py, -1) - np.roll(px, -1) * py)
    sign = 1.0 if area >= 0 else -1.0
    mask = np.all(sign * cross >= -1e-9, axis=-1)
    frame[row0:row1, col0:col1][mask] = color


def draw_polyline(
    frame: Frame, xs: ArrayLike, ys: ArrayLike, color: Color, thickness: int = 1
) -> None:
    """Draw the line through the points ``(xs[i], ys[i])`` in order, ``thickness`` pixels wide.

    Every segment is sampled densely (at least two samples per pixel of its length) and a
    ``thickness x thickness`` square of pixels is set around each sample.
    """
    px = np.asarray(xs, dtype=np.float64).ravel()
    py = np.asarray(ys, dtype=np.float64).ravel()
    if px.shape != py.shape or px.size < 1:
        raise ValueError("a polyline needs matching, non-empty xs and ys")
    if px.size == 1:
        sx, sy = px, py
    else:
        dx, dy = np.diff(px), np.diff(py)
        counts = (2 * np.ceil(np.maximum(np.abs(dx), np.abs(dy)))).astype(np.int64) + 1
        segment = np.repeat(np.arange(counts.size), counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        along = (np.arange(segment.size) - first) / np.maximum(counts[segment] - 1, 1)
        sx = px[segment] + along * dx[segment]
        sy = py[segment] + along * dy[segment]
    width = max(int(thickness), 1)
    offsets = np.arange(width) - (width - 1) // 2
    cols = np.rint(sx).astype(np.int64)[:, None, None] + offsets[None, None, :]
    rows = np.rint(sy).astype(np.int64)[:, None, None] + offsets[None, :, None]
    cols, rows = (array.ravel() for array in np.broadcast_arrays(cols, rows))
    height, width = frame.shape[:2]  # the pixels that lie inside the frame
    inside = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    frame[rows[inside], cols[inside]] = color


def draw_line(
    frame: Frame,
    x0: float,
    y0: float,
    x1: float,
    y1: float,
    color: Color,
    thickness: int = 1,
) -> None:
    """Draw the segment from ``(x0, y0)`` to ``(x1, y1)`` (see :func:`draw_polyline`)."""
    draw_polyline(frame, [x0, x1], [y0, y1], color, thickness)
