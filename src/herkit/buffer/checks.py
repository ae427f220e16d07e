"""Checks of one value that raise a ValueError naming the argument and what was expected.

Every setting of herkit is checked by these, from the buffer's arguments to the command
line's flags, so that a wrong value fails where it was given, in the same words.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_bool", "check_float", "check_int", "is_number"]


def is_number(value: Any) -> bool:
    """A finite int or float (numpy's too; not a bool)."""
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(value)
    )


def check_int(name: str, value: Any, minimum: int, whole_floats: bool = False) -> int:
    """``value`` as an int of at least ``minimum`` (numpy's ints too, and with
    ``whole_floats`` a float such as ``1e6``); a ValueError naming ``name`` otherwise."""
    whole = whole_floats and isinstance(value, float) and value.is_integer()
    integral = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not (integral or whole) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_float(
    name: str, value: Any, low: float, high: float = math.inf, open_low: bool = False
) -> float:
    """``value`` as a float in ``[low, high]`` (``(low, high]`` if ``open_low``); a
    ValueError naming ``name`` otherwise."""
    ok = is_number(value) and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ValueError(
            f"{name} must be a finite number in {bracket}{low}, {high}], got {value!r}"
        )
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value``, which must be a bool; a ValueError naming ``name`` otherwise."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return value
