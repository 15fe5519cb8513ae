"""The margin sweep: how VD, false acceptance and the teacher's cost change with the margin
the teacher's recourse is made to (``docs/metrics.md``). Only the teacher generates here;
each student decides the teacher's counterfactuals and partial edits, so a margin costs one
counterfactual per task. A margin that asks more of the teacher's recourse is a baseline any
counterfactual-aware method has to beat: it buys validity with cost, not with a better model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from recourse.audit.paired import PARTIAL_FRACTIONS, RecourseColumns, Student, boundary_logits
from recourse.benchmark.bootstrap import BOOTSTRAP_SAMPLES, bootstrap_intervals
from recourse.benchmark.rows import NOISE_CONTROL, family_of
from recourse.benchmark.settings import BenchmarkSettings
from recourse.benchmark.tasks import attribute_groups, cached_teacher_part, chunk_bounds
from recourse.data import to_float_images
from recourse.generation import FaceGenerator
from recourse.metrics import decisions


@dataclass(frozen=True)
class SweepPoint:
    """One margin: the teacher's success and mean cost over S, and per student VD,
    false acceptance and the logit gap at the teacher's recourse."""

    margin: float
    teacher_success: float  # %, over N
    teacher_cost: float  # mean c(x, x'_f) over S
    s: int
    students: dict  # {name: {"vd", "fa_50", "fa_75", "logit_gap", "logit_lean"}}
    intervals: dict = field(default_factory=dict)  # {name: {metric: [low, high]}}, 95%, bootstrap over tasks

    def to_dict(self) -> dict:
        return asdict(self)


def sweep_records(images: torch.Tensor, teacher: nn.Module, students: dict[str, Student], settings: BenchmarkSettings,
                  generator: FaceGenerator | None, cache_dir: Path, fingerprint: Callable[[BenchmarkSettings], str],
                  rank: int = 0, world: int = 1, progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """This process's share of ``(margin, chunk)`` pairs: the teacher's part (cached like the
    benchmark's, keyed by ``fingerprint(settings at that margin)``) and the students' logits."""
    jobs = [(margin, start, stop) for margin in settings.margins
            for start, stop in chunk_bounds(settings, len(images))][rank::world]
    records: list[dict] = []
    for done, (margin, start, stop) in enumerate(jobs):
        at_margin = replace(settings, counterfactual=replace(settings.counterfactual, margin=margin))
        x = to_float_images(images[start:stop])
        part = cached_teacher_part(x, start, teacher, at_margin, generator, cache_dir, fingerprint(at_margin))
        views = {}
        for name, student in students.items():
            logit = torch.zeros(len(x))
            partial = torch.zeros(len(x), len(PARTIAL_FRACTIONS))
            for attribute, rows in attribute_groups(start, stop - start, settings):
                logit[rows], partial[rows] = boundary_logits(student.decider, x[rows], part["counterfactuals"][rows],
                                                             attribute)
            views[name] = (logit, partial)
        for k in range(stop - start):
            records.append({
                "margin": margin, "task": start + k, "target": int(part["target"][k]),
                "teacher_valid": bool(part["valid"][k]), "teacher_cost": float(part["cost"][k]),
                "teacher_logit": float(part["logit"][k]), "teacher_partial": part["partial"][k].tolist(),
                "students": {name: {"logit": float(v[0][k]), "partial": v[1][k].tolist()} for name, v in views.items()}})
        if progress:
            progress(done + 1, len(jobs))
    return records


SWEPT_METRICS = ("vd", "fa_50", "fa_75", "logit_gap", "logit_lean")


def _columns(chosen: list[dict], name: str) -> RecourseColumns:
    """The sweep's tasks as paired-recourse columns of one student. The student does not
    generate in the sweep, so its own recourse (B, CRG, DirSim) is empty."""
    def column(values: list, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype)

    def partial(values: list) -> torch.Tensor:
        return column(values).view(-1, len(PARTIAL_FRACTIONS))

    target = column([r["target"] for r in chosen], torch.long)
    logit = column([r["students"][name]["logit"] for r in chosen])
    nothing = torch.zeros(len(chosen), dtype=torch.float64)
    return RecourseColumns(
        target=target, teacher_valid=column([r["teacher_valid"] for r in chosen], torch.bool),
        student_accepts_teacher=decisions(logit) == target, student_valid=nothing.bool(),
        teacher_cost=column([r["teacher_cost"] for r in chosen]), student_cost=nothing, cosine=nothing,
        teacher_logit=column([r["teacher_logit"] for r in chosen]), student_logit=logit,
        teacher_partial=partial([r["teacher_partial"] for r in chosen]),
        student_partial=partial([r["students"][name]["partial"] for r in chosen]))


# The rule that picks the table's margin on validation, fixed before the test run
# (docs/metrics.md): the smallest swept margin at which the noise control's VD, the mean
# over its noise draws, is at most this many percent.
NOISE_VD_LIMIT = 5.0


def noise_control_vd(point: SweepPoint) -> float | None:
    """The noise control's VD (%) at a sweep point: the mean over its draws (``fp32-noise``,
    ``fp32-noise-s1``, …), as the table reports a family; None where the sweep has none. A noise
    floor matched to another variant (``fp32-noise@ptq-int8``, a family of its own) is not read:
    the rule was fixed on the noise control alone."""
    draws = [values["vd"] for name, values in point.students.items() if family_of(name) == NOISE_CONTROL]
    return sum(draws) / len(draws) if draws else None


def chosen_margin(points: list[SweepPoint], limit: float = NOISE_VD_LIMIT, every_draw: bool = False) -> float | None:
    """The smallest swept margin at which :func:`noise_control_vd` is at most ``limit`` (with
    ``every_draw``, the stricter reading: each draw's VD is)."""
    def passes(point: SweepPoint) -> bool:
        draws = [values["vd"] for name, values in point.students.items() if family_of(name) == NOISE_CONTROL]
        return bool(draws) and (max(draws) if every_draw else sum(draws) / len(draws)) <= limit

    passing = [p.margin for p in points if passes(p)]
    return min(passing) if passing else None


def sweep_points(records: list[dict], margins: tuple[float, ...], samples: int = BOOTSTRAP_SAMPLES) -> list[SweepPoint]:
    """One point per margin, with 95% bootstrap intervals over tasks of each student's values."""
    points = []
    for margin in margins:
        chosen = sorted((r for r in records if r["margin"] == margin), key=lambda r: r["task"])
        valid = torch.tensor([r["teacher_valid"] for r in chosen], dtype=torch.bool)
        cost = torch.tensor([r["teacher_cost"] for r in chosen], dtype=torch.float64)
        students, intervals = {}, {}
        for name in chosen[0]["students"] if chosen else ():
            columns = _columns(chosen, name)
            summary = columns.summary().to_dict()
            bounds = bootstrap_intervals(columns, samples=samples)
            students[name] = {metric: summary[metric] for metric in SWEPT_METRICS}
            intervals[name] = {metric: bounds[metric] for metric in SWEPT_METRICS}
        s = int(valid.sum())
        points.append(SweepPoint(margin=margin, teacher_success=100.0 * s / max(len(chosen), 1),
                                 teacher_cost=float(cost[valid].mean()) if s else float("nan"), s=s,
                                 students=students, intervals=intervals))
    return points


# The sweep read as curves (docs/metrics.md, "VD as a curve"): over the swept margins, each
# row's VD, false acceptance at α = 0.75 and signed Δlogit at the teacher's recourse, beside
# the noise draws' mean and min–max. One margin is a point of a curve that depends on where the
# table's margin was set; the curve says whether a row stays off the noise band at every margin.
CURVE_METRICS = ("vd", "fa_75", "logit_lean")


@dataclass(frozen=True)
class SweepCurve:
    """One row's (or one family's mean) ``metric`` at each swept margin; NaN where undefined
    (an empty S at that margin)."""

    name: str
    metric: str
    margins: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class NoiseBand:
    """The noise draws' ``metric`` at each swept margin: the mean over the draws and their
    smallest and largest value (NaN where no draw has one)."""

    metric: str
    draws: tuple[str, ...]
    margins: tuple[float, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


def _value(point: SweepPoint, name: str, metric: str) -> float:
    """A row's recorded value at a point as a float: JSON's null (undefined) and a missing row are NaN."""
    value = point.students.get(name, {}).get(metric)
    return float(value) if value is not None else float("nan")


def _swept_rows(points: list[SweepPoint]) -> list[str]:
    """The rows every point has, in the sweep's order."""
    return [name for name in (points[0].students if points else ()) if all(name in p.students for p in points)]


def noise_draws(points: list[SweepPoint]) -> list[str]:
    """The noise control's draws the sweep has (``fp32-noise``, ``fp32-noise-s1``, …); a matched
    noise floor's draws are a family's curve like any other row's, not the band."""
    return [name for name in _swept_rows(points) if family_of(name) == NOISE_CONTROL]


def row_curves(points: list[SweepPoint], metric: str) -> list[SweepCurve]:
    """Every swept row's curve but the noise draws' (drawn as their band), in the sweep's order."""
    margins = tuple(p.margin for p in points)
    return [SweepCurve(name, metric, margins, tuple(_value(p, name, metric) for p in points))
            for name in _swept_rows(points) if family_of(name) != NOISE_CONTROL]


def family_curves(points: list[SweepPoint], metric: str) -> list[SweepCurve]:
    """Each family's curve, the mean over its rows (seeds) at each margin, as the table reports
    a family; the noise draws left out (their band)."""
    members: dict[str, list[str]] = {}
    for curve in row_curves(points, metric):
        members.setdefault(family_of(curve.name), []).append(curve.name)
    margins = tuple(p.margin for p in points)
    return [SweepCurve(family, metric, margins, tuple(_mean([_value(p, name, metric) for name in names])
                                                      for p in points))
            for family, names in members.items()]


def noise_band(points: list[SweepPoint], metric: str) -> NoiseBand | None:
    """The noise draws' mean and min–max at each margin; None where the sweep has no draw."""
    draws = noise_draws(points)
    if not draws:
        return None
    values = [[v for v in (_value(p, name, metric) for name in draws) if v == v] for p in points]
    return NoiseBand(metric, tuple(draws), tuple(p.margin for p in points), tuple(_mean(v) for v in values),
                     tuple(min(v) if v else float("nan") for v in values),
                     tuple(max(v) if v else float("nan") for v in values))


def has_noise_spread(points: list[SweepPoint]) -> bool:
    """Whether the sweep's curves have a band to be read against: two noise draws or more (new
    runs make three). The committed cone-walk runs made one and keep their sweep table alone."""
    return len(noise_draws(points)) >= 2


def outside_band(curve: SweepCurve, band: NoiseBand) -> tuple[tuple[float, int], ...]:
    """The margins where ``curve`` leaves the noise draws' min–max, each with its side (+1
    above the band, −1 below); margins where either is undefined are left out."""
    return tuple((margin, 1 if value > high else -1)
                 for margin, value, low, high in zip(curve.margins, curve.values, band.low, band.high)
                 if value == value and low == low and not low <= value <= high)


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v == v]
    return sum(finite) / len(finite) if finite else float("nan")
