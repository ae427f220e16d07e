"""Checks of settings' values that raise a ValueError naming the setting and what was
expected (used by the config dataclasses' ``__post_init__``)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["check_bool", "check_float", "check_int", "is_number"]


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_float(
    name: str, value: Any, low: float, high: float = math.inf, open_low: bool = False
) -> None:
    """Require a finite real number in ``[low, high]`` (``(low, high]`` if ``open_low``)."""
    ok = is_number(value) and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ValueError(
            f"{name} must be a finite number in {bracket}{low}, {high}], got {value!r}"
        )


def check_int(name: str, value: Any, minimum: int) -> None:
    """Require an int (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def check_bool(name: str, value: Any) -> None:
    """Require a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
