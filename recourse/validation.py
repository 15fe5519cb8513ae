"""Checks for the numbers in settings objects, so that every config refuses bad values on
construction with one kind of message.

NaN passes every ``<`` and ``>=`` comparison by failing it silently (``nan < 0`` is false),
so a range check alone lets it through; these checks test finiteness first. Booleans are
refused where a number is expected (``True`` is an ``int`` to Python, never to a user).
"""

from __future__ import annotations

import argparse
import math
from numbers import Integral, Real
from pathlib import Path

from PIL import Image

from recourse.locations import writable_file, writable_folder


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


# --- the command line's inputs ----------------------------------------------------------


def finite_float(text: str) -> float:
    """An argparse type: a finite number (``float`` alone accepts ``nan`` and ``inf``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


# commands whose --out is one file (the others write a folder there): a picture, or text
_FILE_OUTPUTS = ("counterfactual",)
_TEXT_OUTPUTS = ("claims",)


def check_outputs(args: argparse.Namespace) -> None:
    """Every output of a command can be written, or a ValueError: checked before any data or
    model is loaded, so that a bad path fails at once rather than after the work."""
    if getattr(args, "json", None):
        writable_file(args.json)
    if getattr(args, "out", None):
        if args.command in _TEXT_OUTPUTS:
            writable_file(args.out)
        elif args.command in _FILE_OUTPUTS:
            extension = Path(args.out).suffix.lower()
            if Image.registered_extensions().get(extension) not in Image.SAVE:
                raise ValueError(f"cannot write {args.out}: give a picture file name such as cf.png")
            writable_file(args.out)
        else:
            writable_folder(args.out)
    if getattr(args, "cache_dir", None) and not getattr(args, "no_cache", True):
        writable_folder(args.cache_dir)
