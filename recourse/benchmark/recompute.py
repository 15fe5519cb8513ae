"""A run's statistics recomputed from its saved per-task columns alone, and compared with its
record: every student row's recourse fields, every family row and the family of claims.

Nothing here loads a model or a face: the columns file (:mod:`recourse.benchmark.saved_columns`)
and the record's settings are all it reads, so anyone can re-run the bootstrap, the paired
tests and the corrections of a published run, or see that a record and its columns disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from recourse.benchmark.claims import Claim, claims
from recourse.benchmark.rows import FamilyRow, columns_family_rows, row_recourse
from recourse.benchmark.run import BenchmarkResult, placement_fields
from recourse.benchmark.saved_columns import SavedColumns, file_sha256, read_columns
from recourse.benchmark.settings import FP32, BenchmarkSettings, recorded_analysis

TOLERANCE = 1e-9


@dataclass(frozen=True)
class Recomputed:
    """The statistics of a record recomputed from its columns."""

    rows: dict[str, dict]  # {row: row_recourse(...)}
    families: tuple[FamilyRow, ...]
    claims: tuple[Claim, ...]
    analysis: str
    placements: dict = field(default_factory=dict)  # recourse.benchmark.run.placement_fields


def columns_path(record_path: Path, result: BenchmarkResult) -> Path:
    """The columns file a record names, beside it; ValueError where it names none."""
    if not result.columns.get("file"):
        raise ValueError(f"{record_path}: the run saved no per-task columns to recompute its claims from")
    return Path(record_path).parent / result.columns["file"]


def recompute(result: BenchmarkResult, saved: SavedColumns) -> Recomputed:
    """Every row's recourse fields, the family rows and the claims of ``result`` from ``saved``,
    with the record's settings and the analysis its numbers were made with."""
    analysis = recorded_analysis(result.settings)
    settings = replace(BenchmarkSettings.from_record(result.settings), analysis=analysis)
    students = [row for row in result.rows if row.method != FP32]
    absent = [row.method for row in students if row.method not in saved.rows]
    if absent:
        raise ValueError(f"the columns file lacks the rows {', '.join(absent)}")
    attributes = list(saved.attributes)
    rows = {row.method: row_recourse(row.method, saved.rows, attributes, settings, saved.semantic)
            for row in students}
    families = tuple(columns_family_rows(list(result.rows), saved.rows, attributes, settings, saved.semantic))
    found = claims(list(families), analysis=analysis, registered=settings.primary_family)
    return Recomputed(rows, families, tuple(found), analysis, placement_fields(saved, settings))


def differences(result: BenchmarkResult, again: Recomputed, tolerance: float = TOLERANCE) -> list[str]:
    """Where the record and the recomputation differ by more than ``tolerance`` (absolute, or
    relative to the larger value), one line each; [] where they agree. The recomputation is
    written as the record is (the same fields left out where unset), then compared field by field."""
    rows = tuple(replace(row, **again.rows[row.method]) if row.method in again.rows else row for row in result.rows)
    placed = {"noise_families": {}, "retrained_seeds": (), "placements": {}, "placement_claims": (), **again.placements}
    rebuilt = replace(result, rows=rows, families=again.families, claims=again.claims, **placed).to_dict()
    found: list[str] = []
    _compare(result.to_dict(), rebuilt, "record", tolerance, found)
    return found


def check_run(record_path: Path, tolerance: float = TOLERANCE) -> tuple[BenchmarkResult, Recomputed, list[str]]:
    """Read a record and its columns file, check the file's SHA-256 against the record's, and
    recompute: returns the record, the recomputation and every disagreement (the digest's too)."""
    import json

    result = BenchmarkResult.from_dict(json.loads(Path(record_path).read_text()))
    path = columns_path(Path(record_path), result)
    problems = []
    digest = file_sha256(path)
    if digest != result.columns.get("sha256"):
        problems.append(f"{path.name}: SHA-256 {digest}, the record says {result.columns.get('sha256')}")
    again = recompute(result, read_columns(path))
    return result, again, problems + differences(result, again, tolerance)


def _compare(recorded, recomputed, where: str, tolerance: float, found: list[str]) -> None:
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        for key in [*recorded, *(k for k in recomputed if k not in recorded)]:  # in the record's order
            if key not in recorded or key not in recomputed:
                found.append(f"{where}.{key}: only in the {'recomputation' if key in recomputed else 'record'}")
            else:
                _compare(recorded[key], recomputed[key], f"{where}.{key}", tolerance, found)
    elif isinstance(recorded, list) and isinstance(recomputed, list):
        if len(recorded) != len(recomputed):
            found.append(f"{where}: {len(recorded)} in the record, {len(recomputed)} recomputed")
        for k, (a, b) in enumerate(zip(recorded, recomputed)):
            _compare(a, b, f"{where}[{k}]", tolerance, found)
    elif not _same(recorded, recomputed, tolerance):
        found.append(f"{where}: recorded {recorded!r}, recomputed {recomputed!r}")


def _same(a, b, tolerance: float) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    return a == b
