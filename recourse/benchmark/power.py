"""How many benchmark tasks a claim needs at the stated power (``recourse power``).

N at the stated power (default 80%) for paired proportions (VD, false acceptance: McNemar,
Connor 1987) and for paired means (CRG, DirSim, |Δlogit|: paired t), two-sided, at α divided
by the size of the family of claims (the Holm bound of the smallest p, so a claim that clears
it survives the correction).

    recourse power                       # the effects of the first run's review
    recourse power --family-size 50 \\
        --proportion "cfq-qat − no-recourse, FA¾" 9.6 16.7 0.42 \\
        --mean "cfq-qat − ptq-int4, DirSim" 1.0 6.0 0.95 \\
        --from-interval "cfq-qat − no-recourse, |Δlogit|" -0.26 -0.31 -0.21 180 1.0

A proportion is ``LABEL RATE_A RATE_B SHARE [DISCORDANCE]`` in percent, SHARE the fraction
of tasks in its denominator (S for VD; the partial edits the teacher still rejects for FA),
DISCORDANCE the percent of those where the two models differ (default: as if their errors
were independent, which over-states it for two models of one teacher: conservative). A mean
is ``LABEL DIFFERENCE SD SHARE``, SD the per-task sd of the paired differences (B for CRG and
DirSim); ``--from-interval LABEL DIFFERENCE LOW HIGH N SHARE`` infers that sd from a recorded
95% interval resting on N·SHARE tasks. Tasks needed = units needed / SHARE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recourse.benchmark.statistics import (
    independent_discordance, normal_quantile, pairs_for_mean_difference, pairs_for_paired_proportions,
)


@dataclass(frozen=True)
class Needed:
    """What one claim needs: units (pairs of the metric's denominator) and tasks."""

    label: str
    kind: str  # "proportion" or "mean"
    effect: float  # the difference to detect, in the metric's units
    assumption: str  # discordance or sd used
    units: int
    tasks: int


# The effects the first run's review quotes (first run, assets/archive/benchmark.json): FA¾ rests on
# the ~76 of 180 partial edits the teacher still rejects; S was all 180 tasks at margin 2.
DEFAULT_PROPORTIONS = (
    ("cfq-qat − cfq-qat-norecourse, FA¾", 9.6, 16.7, 76 / 180, None),
    ("cfq-qat − cfq-qat-norecourse, VD", 1.1, 2.0, 1.0, None),
    ("fp32-noise − ptq-int4, VD", 5.6, 5.0, 1.0, None),
)
DEFAULT_INTERVALS = (("cfq-qat − cfq-qat-norecourse, |Δlogit|", -0.26, -0.31, -0.21, 180, 1.0),)


def proportion(label: str, rate_a: float, rate_b: float, share: float, discordance: float | None,
               alpha: float, power: float) -> Needed:
    """Rates and discordance in percent."""
    first, second = rate_a / 100, rate_b / 100
    psi = independent_discordance(first, second) if discordance is None else discordance / 100
    units = pairs_for_paired_proportions(first - second, psi, alpha, power)
    note = f"discordance {100 * psi:.1f}%" + (" (independent errors)" if discordance is None else "")
    return Needed(label, "proportion", rate_a - rate_b, note, units, math.ceil(units / share))


def mean(label: str, difference: float, sd: float, share: float, alpha: float, power: float,
         note: str = "") -> Needed:
    units = pairs_for_mean_difference(difference, sd, alpha, power)
    return Needed(label, "mean", difference, note or f"sd {sd:.3g}", units, math.ceil(units / share))


def from_interval(label: str, difference: float, low: float, high: float, n: int, share: float, alpha: float,
                  power: float) -> Needed:
    """The per-unit sd a 95% interval implies, ``(high − low) / (2 · 1.96) · √(n · share)``."""
    sd = (high - low) / (2 * normal_quantile(0.975)) * math.sqrt(n * share)
    return mean(label, difference, sd, share, alpha, power, f"sd {sd:.3g} from [{low:g}, {high:g}] on {n * share:.0f}")
