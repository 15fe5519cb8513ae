"""Checks for the numbers in settings objects, so that every config refuses bad values on
construction with one kind of message.

NaN passes every ``<`` and ``>=`` comparison by failing it silently (``nan < 0`` is false),
so a range check alone lets it through; these checks test finiteness first. Booleans are
refused where a number is expected (``True`` is an ``int`` to Python, never to a user).
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> None:
    """``value`` is an integer in ``[low, high]``, or raise a ValueError quoting it."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    _check_range(name, value, low, high)


def check_float(name: str, value: object, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> None:
    """``value`` is a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``),
    or raise a ValueError quoting it."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if low_open and low is not None and value <= low:
        raise ValueError(f"{name} must be > {low}, got {value!r}")
    _check_range(name, value, low, high)


def _check_range(name: str, value: float, low: float | None, high: float | None) -> None:
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}")
