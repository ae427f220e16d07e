"""Offscreen OpenGL for MuJoCo envs (Fetch, PointMaze): which backend, and what to install.

MuJoCo reads ``MUJOCO_GL`` once, when it is first imported, and its default (GLFW) needs a
display; :func:`choose_mujoco_gl` picks EGL or OSMesa where this machine has them.
"""

from __future__ import annotations

import ctypes.util
import os

__all__ = ["GL_INSTALL_HINT", "choose_mujoco_gl"]

GL_INSTALL_HINT = (
    "install EGL (Debian/Ubuntu: apt install libegl1 libgl1-mesa-dri) or OSMesa "
    "(apt install libosmesa6, and set MUJOCO_GL=osmesa)"
)
"""What to install when MuJoCo has no offscreen OpenGL."""


def choose_mujoco_gl() -> str | None:
    """Set ``MUJOCO_GL`` for offscreen rendering where it is unset and there is no display:
    ``egl`` where libEGL is installed, else ``osmesa`` where libOSMesa is. Returns the value
    in effect (None: MuJoCo's own default, GLFW, which needs a display)."""
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        for backend, library in (("egl", "EGL"), ("osmesa", "OSMesa")):
            if ctypes.util.find_library(library):
                os.environ["MUJOCO_GL"] = backend
                break
    return os.environ.get("MUJOCO_GL")
