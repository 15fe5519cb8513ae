"""The shares among the recourse metrics (VD, false acceptance, zero-length recourses): their
counts, Wilson intervals, and Newcombe's paired score intervals of their differences."""

from __future__ import annotations

import torch

import recourse.benchmark.statistics as stats
from recourse.audit.paired import RecourseColumns
from recourse.benchmark.terms import PROPORTIONS, ratio_terms, shared_masks, shared_terms


def proportion_counts(columns: RecourseColumns) -> dict[str, tuple[float, float]]:
    """``(count, trials)`` of each share among the recourse metrics (VD over S, false
    acceptance over the teacher-rejected partial edits, zero-length recourses over B)."""
    terms = ratio_terms(columns)
    return {m: (float(terms[m][0].sum()) / 100, float(terms[m][1].sum())) for m in PROPORTIONS}


def proportion_intervals(columns: RecourseColumns) -> dict[str, dict]:
    """Each share's count, trials and Wilson interval (in %)."""
    result = {}
    for metric, (count, trials) in proportion_counts(columns).items():
        result[metric] = {"count": round(count), "n": round(trials),
                          "wilson": stats.wilson_interval(count, trials).as_list(100.0)}
    return result


def paired_cells(mine: RecourseColumns, theirs: RecourseColumns) -> dict[str, tuple[int, int, int, int]]:
    """Per share, the 2×2 table of the paired tasks: (both, only mine, only theirs, neither)
    counted over the tasks both share the denominator of (S, the teacher-rejected partial
    edits, the tasks both have in B)."""
    shared, both_moved = shared_masks(mine, theirs)
    return terms_cells(shared_terms(mine, shared, both_moved), shared_terms(theirs, shared, both_moved))


Terms = dict[str, tuple[torch.Tensor, torch.Tensor]]


def terms_cells(a: Terms, b: Terms) -> dict[str, tuple[int, int, int, int]]:
    """:func:`paired_cells` from the two sides' ratio terms (:func:`recourse.benchmark.terms.ratio_terms`),
    over the tasks where both count a trial."""
    cells = {}
    for metric in PROPORTIONS:
        counted = (a[metric][1] > 0) & (b[metric][1] > 0)
        first, second = a[metric][0][counted] > 0, b[metric][0][counted] > 0
        cells[metric] = (int((first & second).sum()), int((first & ~second).sum()), int((~first & second).sum()),
                         int((~first & ~second).sum()))
    return cells


def score_intervals(seeds: list[RecourseColumns], references: list[RecourseColumns]) -> dict[str, list[float]]:
    """Newcombe's paired interval (in points) of each share's difference, from the 2×2 cells
    averaged over the seed pairs: unlike the bootstrap it does not collapse to [0, 0] where
    the two models never differ on the tasks. Seed ``k`` against reference seed ``k mod K``:
    the pairing of :data:`~recourse.benchmark.settings.LEGACY_ANALYSIS`
    (:data:`~recourse.benchmark.settings.ANALYSIS` averages over every pair of seeds,
    :mod:`recourse.benchmark.comparison`)."""
    return newcombe_of_tables([paired_cells(mine, references[k % len(references)]) for k, mine in enumerate(seeds)])


def newcombe_of_tables(tables: list[dict[str, tuple[int, int, int, int]]]) -> dict[str, list[float]]:
    """Newcombe's interval (in points) of each share's difference at the 2×2 cells averaged
    over ``tables`` (one per pair of seeds). The cells are whole counts, so their sums do not
    depend on the order of the pairs."""
    result = {}
    for metric in PROPORTIONS:
        cells = [sum(t[metric][i] for t in tables) / len(tables) for i in range(4)]
        result[metric] = stats.newcombe_paired_interval(*cells).as_list(100.0)
    return result
