"""The recourse metrics of a set of benchmark tasks (``docs/metrics.md``): their values, the
direction metrics with the zero-length recourses counted apart, paired differences on shared
tasks, and each metric as a ratio of per-task sums (the form :mod:`recourse.benchmark.bootstrap`
resamples)."""

from __future__ import annotations

import statistics

import torch

from recourse.audit.paired import RecourseColumns
from recourse.metrics import both_valid, decisions, directional_similarity

RECOURSE_METRICS = ("vd", "crg", "dirsim", "fa_50", "fa_75", "logit_gap", "logit_lean", "zero_edits", "dirsim_moved")
# CRG, DirSim and the zero-length share are defined on B; a paired difference takes them on
# the tasks both have in B (dirsim_moved: on those where both students' edits moved)
_ON_B = ("crg", "dirsim", "zero_edits")
# Shares of counted tasks: their intervals are also given by Wilson's score (never [0, 0])
PROPORTIONS = ("vd", "fa_50", "fa_75", "zero_edits")


def moved(columns: RecourseColumns) -> torch.Tensor:
    """Tasks where the student's own edit changed the image. Where it did not (the student
    already decides the target at x), its direction is undefined, not "cos = 0"."""
    return columns.student_cost > 0


def direction_values(columns: RecourseColumns) -> dict[str, float]:
    """The zero-length share of B (%) and DirSim over the rest of B: the direction metric
    with the zero-length recourses counted apart."""
    in_b = both_valid(columns.teacher_valid, columns.student_valid)
    zero, rest = in_b & ~moved(columns), in_b & moved(columns)
    b = int(in_b.sum())
    return {"zero_edits": 100.0 * int(zero.sum()) / b if b else float("nan"),
            "dirsim_moved": directional_similarity(columns.cosine, rest)}


def summary_dict(columns: RecourseColumns) -> dict:
    """The summary's values with the direction metrics and the zero-length count."""
    in_b = both_valid(columns.teacher_valid, columns.student_valid)
    return {**columns.summary().to_dict(), **direction_values(columns),
            "zero_edit_count": int((in_b & ~moved(columns)).sum())}


def summary_values(columns: RecourseColumns) -> dict[str, float]:
    values = {**columns.summary().to_dict(), **direction_values(columns)}
    return {metric: values[metric] for metric in RECOURSE_METRICS}


def paired_difference(mine: RecourseColumns, theirs: RecourseColumns) -> dict[str, float]:
    """``mine − theirs`` per metric on the tasks both share: S is the teacher's (the same for
    both); CRG and DirSim over the tasks in both students' B."""
    shared = both_valid(mine.teacher_valid, mine.student_valid) & both_valid(theirs.teacher_valid, theirs.student_valid)
    full = {m: a - b for (m, a), b in zip(summary_values(mine).items(), summary_values(theirs).values())}
    on_b = summary_values(mine.select(shared)), summary_values(theirs.select(shared))
    both_moved = shared & moved(mine) & moved(theirs)
    on_moved = summary_values(mine.select(both_moved)), summary_values(theirs.select(both_moved))
    return {m: (on_b[0][m] - on_b[1][m]) if m in _ON_B else (on_moved[0][m] - on_moved[1][m]) if m == "dirsim_moved"
            else full[m] for m in RECOURSE_METRICS}


def ratio_terms(columns: RecourseColumns, b_mask: torch.Tensor | None = None,
                moved_mask: torch.Tensor | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Every recourse metric is a ratio of sums over tasks, ``Σ num / Σ den`` (× 100 for the
    percentages): per metric, the per-task ``(num, den)``. ``b_mask`` replaces B (paired
    differences take CRG and DirSim on the tasks both students have in B; ``moved_mask``
    replaces B's moved tasks of ``dirsim_moved``, for the same reason). With every
    task counted once this gives :meth:`RecourseColumns.summary`; with bootstrap counts, a
    resample's value, so thousands of resamples are one matrix product."""
    in_s = columns.teacher_valid.bool()
    in_b = both_valid(columns.teacher_valid, columns.student_valid) if b_mask is None else b_mask
    s, b = in_s.double(), in_b.double()
    difference = columns.student_logit - columns.teacher_logit
    towards = torch.where(columns.target.bool(), 1.0, -1.0).double()
    terms = {
        "vd": (100 * (in_s & ~columns.student_accepts_teacher.bool()).double(), s),
        "crg": (b * (columns.student_cost - columns.teacher_cost).abs(), b * columns.teacher_cost),
        "dirsim": (100 * b * columns.cosine, b),
    }
    for k, name in enumerate(("fa_50", "fa_75")):
        rejected = in_s & (decisions(columns.teacher_partial[:, k]) != columns.target)
        accepted = decisions(columns.student_partial[:, k]) == columns.target
        terms[name] = (100 * (rejected & accepted).double(), rejected.double())
    terms["logit_gap"] = (s * difference.abs(), s)
    terms["logit_lean"] = (s * difference * towards, s)
    still = (~moved(columns)).double()
    terms["zero_edits"] = (100 * b * still, b)
    on_moved = b * (1 - still) if moved_mask is None else moved_mask.double()
    terms["dirsim_moved"] = (100 * on_moved * columns.cosine, on_moved)
    return terms


def shared_terms(columns: RecourseColumns, shared: torch.Tensor,
                  both_moved: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """:func:`ratio_terms` of a paired difference: CRG and DirSim on the ``shared`` tasks,
    ``dirsim_moved`` on the shared tasks where both edits moved."""
    full, on_shared = ratio_terms(columns), ratio_terms(columns, shared, both_moved)
    return {metric: (on_shared if metric in (*_ON_B, "dirsim_moved") else full)[metric] for metric in RECOURSE_METRICS}


def shared_masks(mine: RecourseColumns, theirs: RecourseColumns) -> tuple[torch.Tensor, torch.Tensor]:
    """The tasks both students have in B, and those of them where both students' edits moved."""
    shared = both_valid(mine.teacher_valid, mine.student_valid) & both_valid(theirs.teacher_valid, theirs.student_valid)
    return shared, shared & moved(mine) & moved(theirs)


def _finite(value: float) -> bool:
    return value == value and abs(value) != float("inf")


def mean_of(values: list[float]) -> float:
    """The mean of the finite ``values`` (NaN where there are none)."""
    finite = [v for v in values if _finite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def sd_of(values: list[float]) -> float:
    """The sample standard deviation of the finite ``values`` (NaN with fewer than two)."""
    finite = [v for v in values if _finite(v)]
    return statistics.stdev(finite) if len(finite) > 1 else float("nan")
