"""Videos of a policy: frames from an env's ``rgb_array`` rendering, labelled, written as
MP4 (imageio's ffmpeg plugin) or GIF (Pillow).

MuJoCo envs (Fetch, PointMaze) render offscreen through EGL or OSMesa, as
:func:`herkit.envs.offscreen.choose_mujoco_gl` sets up before gymnasium-robotics is
imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from herkit.envs.offscreen import GL_INSTALL_HINT

__all__ = [
    "VIDEO_SUFFIXES",
    "RenderError",
    "check_video_path",
    "label_frames",
    "render_frame",
    "write_video",
]

VIDEO_SUFFIXES = (".mp4", ".gif")
"""The video formats :func:`write_video` writes, by file suffix."""


class RenderError(ValueError):
    """An env could not draw a frame (no ``rgb_array`` mode, or no offscreen OpenGL)."""


def render_frame(env: Any) -> np.ndarray:
    """``env.render()`` of an env made with ``render_mode="rgb_array"`` (a vector env's first
    sub-env), as a ``(H, W, 3)`` uint8 array.

    Raises:
        RenderError: the env has no ``rgb_array`` mode, or MuJoCo has no offscreen OpenGL
            (the message names the system packages to install).
    """
    if getattr(env, "render_mode", None) != "rgb_array":
        raise RenderError(
            f"{_name(env)} does not render frames: it needs render_mode='rgb_array' "
            f"(its render modes: {env.metadata.get('render_modes', [])})"
        )
    try:
        frame = env.render()
    except Exception as error:
        if "mujoco" not in type(error).__module__ and "GL" not in str(error):
            raise
        gl = os.environ.get("MUJOCO_GL", "glfw (MuJoCo's default, needs a display)")
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        raise RenderError(
            f"MuJoCo cannot render offscreen with MUJOCO_GL={gl} ({first}); {GL_INSTALL_HINT}"
        ) from None
    if isinstance(frame, (tuple, list)):  # a vector env: one frame per sub-env
        frame = frame[0]
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise RenderError(f"{_name(env)} rendered shape {frame.shape}, not (H, W, 3)")
    return frame.astype(np.uint8, copy=False)


def label_frames(frames: Sequence[np.ndarray], text: str, success: bool | None) -> list[np.ndarray]:
    """``frames`` with a banner on top: ``text``, on green for a success, red for a
    failure, grey where success is unknown."""
    from PIL import Image, ImageDraw, ImageFont

    colour = {True: (30, 140, 60), False: (180, 40, 40), None: (90, 90, 90)}[success]
    out = []
    for frame in frames:
        height = max(16, frame.shape[0] // 16)
        font = ImageFont.load_default(size=int(height * 0.7))
        image = Image.fromarray(np.ascontiguousarray(frame))
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, frame.shape[1], height), fill=colour)
        draw.text((height // 4, height // 2), text, fill=(255, 255, 255), font=font, anchor="lm")
        out.append(np.asarray(image))
    return out


def check_video_path(path: str | Path, flag: str = "--video") -> Path:
    """``path`` as a Path, checked to end in one of :data:`VIDEO_SUFFIXES`."""
    path = Path(path)
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        raise ValueError(
            f"{flag} {str(path)!r}: the file must end in {' or '.join(VIDEO_SUFFIXES)}"
        )
    if path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a directory; give a file name")
    return path


def write_video(path: str | Path, frames: Sequence[np.ndarray], fps: float) -> Path:
    """Write ``frames`` (equal ``(H, W, 3)`` uint8 arrays) as an MP4 or GIF, by suffix.

    MP4 is H.264 (yuv420p, so browsers play it): frames are padded to even sizes.
    """
    path = check_video_path(path)
    if not frames:
        raise ValueError("no frames to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    stack = np.stack([np.asarray(frame, dtype=np.uint8) for frame in frames])
    import imageio.v3 as iio

    if path.suffix.lower() == ".gif":
        iio.imwrite(path, stack, extension=".gif", duration=1000 / fps, loop=0)
    else:
        pad_h, pad_w = stack.shape[1] % 2, stack.shape[2] % 2
        stack = np.pad(stack, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
        iio.imwrite(
            path,
            stack,
            plugin="FFMPEG",
            fps=fps,
            codec="libx264",
            macro_block_size=1,
            pixelformat="yuv420p",
        )
    return path


def _name(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env).__name__
