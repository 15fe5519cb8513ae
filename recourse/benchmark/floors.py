"""The scale a direction metric is read on: between its two floors (``docs/metrics.md``).

DirSim and CRG compare a row's own recourse with the teacher's, and neither 100 nor 0 is
reachable: the teacher against itself, re-run with fresh noise, does not reach DirSim 100,
and an independently retrained full-precision model does not fall to 0. So each is read
between two measured floors:

- the **top** floor, ``fp32-rerun``: the teacher as a student whose own recourse is made with
  fresh noise (every seed moved by :data:`RERUN_SEED_OFFSET`): how far the generator's noise
  alone moves a recourse;
- the **bottom** floor, the ``fp32-ref`` family: independently retrained full-precision
  classifiers (``--reference-models``, one row per folder), their mean, with their sd over the
  seeds as the bottom's spread: what a model that shares only the recipe gives.

A row's position is ``(value − bottom) / (top − bottom)``: 1 at the top floor, 0 at the bottom
one, in either direction of the metric (CRG's top is its smallest value, DirSim's its largest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from recourse.benchmark.rows import REFERENCE_PREFIX
from recourse.benchmark.terms import mean_of, sd_of

RERUN_FLOOR = "fp32-rerun"  # the top floor's row: the teacher re-run with fresh noise
# Added to every seed of the re-run's own recourse. Larger than any task index (CelebA has
# 202,599 photos), so no seed of the teacher's own recourse (counterfactual seed + task) is reused.
RERUN_SEED_OFFSET = 1_000_003
FLOOR_METRICS = ("dirsim", "crg")  # the direction metrics, read between their floors


@dataclass(frozen=True)
class ScalePosition:
    """A value on a metric's floor scale: ``position`` = (value − bottom) / (top − bottom), and
    the position with the bottom moved by its sd either way (``low`` ≤ ``high``; NaN where the
    bottom has no spread: one reference seed). NaN where the value or the scale is undefined."""

    value: float
    position: float
    low: float
    high: float


@dataclass(frozen=True)
class FloorScale:
    """One metric's two floors: ``top`` (the teacher re-run with fresh noise) and ``bottom``
    (the mean over ``references`` independently retrained full-precision seeds, ``bottom_sd``
    their sd; NaN with one)."""

    metric: str
    top: float
    bottom: float
    bottom_sd: float
    references: int

    def position(self, value: float | None) -> ScalePosition:
        """Where ``value`` lies between the floors (None: an undefined value, NaN throughout)."""
        value = _finite_or_nan(value)
        low, high = (scale_position(value, self.top, self.bottom + shift) for shift in (-self.bottom_sd,
                                                                                          self.bottom_sd))
        if low != low or high != high:
            low = high = math.nan
        return ScalePosition(value, scale_position(value, self.top, self.bottom), min(low, high), max(low, high))


def scale_position(value: float, top: float, bottom: float) -> float:
    """``(value − bottom) / (top − bottom)``: 1 at the top floor, 0 at the bottom; NaN where a
    term is not finite or the two floors coincide (no scale to read a value on)."""
    if not all(math.isfinite(v) for v in (value, top, bottom)) or top == bottom:
        return math.nan
    return (value - bottom) / (top - bottom)


def floor_scale(metric: str, top: float | None, references: Sequence[float | None]) -> FloorScale | None:
    """The scale of ``metric`` from the top floor's value and each reference seed's; None where
    either floor is missing or undefined (a run without the re-run or without references)."""
    bottom_values = [v for v in map(_finite_or_nan, references) if v == v]
    top = _finite_or_nan(top)
    if top != top or not bottom_values:
        return None
    return FloorScale(metric, top, mean_of(bottom_values), sd_of(bottom_values), len(bottom_values))


def is_reference(method: str) -> bool:
    """A row of an independently retrained full-precision classifier (the bottom floor's seeds)."""
    return method.startswith(REFERENCE_PREFIX)


def direction_scales(rows: Sequence) -> dict[str, FloorScale]:
    """Each of :data:`FLOOR_METRICS`' scale from a run's rows (anything with ``method`` and the
    metrics as attributes: :class:`recourse.benchmark.rows.BenchmarkRow`): the ``fp32-rerun``
    row is the top, every reference row a seed of the bottom. Empty where a floor is missing:
    such a run keeps its rendering."""
    top = next((row for row in rows if row.method == RERUN_FLOOR), None)
    references = [row for row in rows if is_reference(row.method)]
    if top is None or not references:
        return {}
    scales = {metric: floor_scale(metric, getattr(top, metric), [getattr(row, metric) for row in references])
              for metric in FLOOR_METRICS}
    return {metric: scale for metric, scale in scales.items() if scale is not None}


def _finite_or_nan(value: float | None) -> float:
    """A recorded value as a float: None (JSON's null for an undefined metric) and infinities are NaN."""
    return float(value) if value is not None and math.isfinite(value) else math.nan
