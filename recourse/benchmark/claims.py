"""The family of claims: every paired difference the benchmark's table reports, with its
p-value corrected over all of them (Holm, Benjamini–Hochberg) and its Bonferroni interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

import recourse.benchmark.statistics as stats
from recourse.benchmark.rows import FamilyRow


@dataclass(frozen=True)
class Claim:
    """One paired difference of the family of claims, with its p-value corrected for the
    whole family (Holm: family-wise error; Benjamini–Hochberg: false discovery rate)."""

    family: str
    reference: str
    group: str
    metric: str
    difference: float
    low: float
    high: float
    p: float
    p_holm: float
    p_bh: float
    # Bonferroni's simultaneous interval (family-wise 95% over every tested claim): the
    # corrected interval to quote beside Holm's p, which rejects wherever it excludes zero.
    corrected_low: float = float("nan")
    corrected_high: float = float("nan")

    def holds(self, alpha: float = 0.05, correction: str = "holm") -> bool:
        return (self.p_holm if correction == "holm" else self.p_bh) < alpha


def claims(families: list[FamilyRow], alpha: float = 0.05) -> list[Claim]:
    """The family of claims: every paired difference the table reports (each family against
    each paired reference, in every group, on every metric), with Holm and
    Benjamini–Hochberg corrections over all of them together, and each one's Bonferroni
    interval at family-wise level ``1 − alpha``."""
    found, errors = [], []
    for family in families:
        for reference, groups in family.tests.items():
            for group, metrics in groups.items():
                for metric, test in metrics.items():
                    # the interval the test inverts, so a claim's interval and its p agree
                    difference = family.paired[reference][group][metric][0]
                    low, high = test["interval"]
                    found.append((family.family, reference, group, metric, _number(difference), _number(low),
                                  _number(high), _number(test["p"])))
                    errors.append((_number(test.get("se")), _number(test.get("df"))))
    p_values = [entry[-1] for entry in found]
    tested = sum(1 for p in p_values if p == p)
    corrected = [_corrected(entry[5], entry[6], se, df, alpha / max(tested, 1)) for entry, (se, df) in zip(found, errors)]
    return [Claim(*entry, p_holm=h, p_bh=q, corrected_low=c[0], corrected_high=c[1])
            for entry, h, q, c in zip(found, stats.holm(p_values), stats.benjamini_hochberg(p_values), corrected)]


def _corrected(low: float, high: float, standard_error: float, df: float, alpha: float) -> tuple[float, float]:
    """The two-sided ``1 − alpha`` interval around the centre of the test's 95% interval. A
    missing ``df`` with a finite error is the normal's (JSON writes infinity as null)."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(standard_error)):
        return float("nan"), float("nan")
    df = math.inf if df != df else df
    half = stats.student_t_quantile(1 - alpha / 2, df) * standard_error
    centre = (low + high) / 2
    return centre - half, centre + half


def _number(value: float | None) -> float:
    return float("nan") if value is None else value
