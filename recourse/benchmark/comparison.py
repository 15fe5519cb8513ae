"""One family of seeds (or noise draws) against another: the same analysis in either order.

A family's number is the mean over its seeds of the metric, and comparing family A with family
B tests ``mean_A − mean_B`` on the tasks they share, with

    se² = v_tasks + s²_A / k_A + s²_B / k_B

``v_tasks`` the variance of that difference over a bootstrap of the tasks (the same resampled
tasks on both sides, every seed of each), ``s²`` a side's variance over its ``k`` seeds (no term
for a side of one seed), and Welch–Satterthwaite's degrees of freedom (the task term counted as
normal). Swapping A and B negates the difference and leaves the standard error, the degrees of
freedom, the p-value and the TOST verdict as they were, to the last bit: which side is called
the reference changes nothing.

Why a run's ``analysis`` says which comparison it used: under
:data:`~recourse.benchmark.settings.LEGACY_ANALYSIS`
(:func:`recourse.benchmark.bootstrap.paired_tests`) seed ``k`` of the left family meets seed
``k mod K`` of the right one, so a one-seed family meets only seed 0 of a three-seed reference
and the order of the two sides changes the answer (ptq-int4 − cfq-qat-norecourse −4.28, the
reverse +4.15). The records made with it keep the numbers they were written with;
:data:`~recourse.benchmark.settings.ANALYSIS`, the default, uses this module.

Tasks shared by two families: for the metrics on B (CRG, DirSim, the zero-length share), those
that every seed of both families has in B; for DirSim over moved tasks, those of them where
every seed's edit moved. The other metrics count every task (their denominators, S and the
teacher-rejected partial edits, are the teacher's).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import torch

import recourse.benchmark.statistics as stats
from recourse.audit.paired import RecourseColumns
from recourse.benchmark.bootstrap import PairedTest, finite_mean, resampled, task_weights_drawn
from recourse.benchmark.proportions import newcombe_of_tables, terms_cells
from recourse.benchmark.terms import PROPORTIONS, RECOURSE_METRICS, mean_of, moved, shared_terms
from recourse.metrics import both_valid

Terms = dict[str, tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class Comparison:
    """Family A against family B, per metric: the test, Newcombe's interval of a share's
    difference, which metrics repeat an earlier one (the same per-task numbers on the same
    tasks, on every seed of both sides: DirSim over moved tasks where every shared task moved),
    and which compare 0 with 0 (a numerator of 0 on every task of every seed: nothing to test)."""

    tests: dict[str, PairedTest]
    score_intervals: dict[str, list[float]] = field(default_factory=dict)
    same_as: dict[str, str] = field(default_factory=dict)
    degenerate: tuple[str, ...] = ()

    def flags(self, metric: str) -> dict:
        """What a record says of ``metric`` besides its test (only what is set)."""
        flags: dict = {}
        if metric in self.same_as:
            flags["same_as"] = self.same_as[metric]
        if metric in self.degenerate:
            flags["degenerate"] = True
        return flags


def common_masks(columns: list[RecourseColumns]) -> tuple[torch.Tensor, torch.Tensor]:
    """The tasks every one of ``columns`` has in B, and those of them where every edit moved."""
    shared = torch.ones(len(columns[0]), dtype=torch.bool)
    for c in columns:
        shared &= both_valid(c.teacher_valid, c.student_valid)
    both_moved = shared.clone()
    for c in columns:
        both_moved &= moved(c)
    return shared, both_moved


def _seed_variance(values: list[float]) -> tuple[float, int]:
    """``s² / k`` of a side's finite per-seed values, with ``k``; 0 for fewer than two."""
    finite = [v for v in values if math.isfinite(v)]
    return (statistics.variance(finite) / len(finite), len(finite)) if len(finite) > 1 else (0.0, len(finite))


def welch_test(difference: float, task_variance: float, left: tuple[float, int],
               right: tuple[float, int]) -> PairedTest:
    """The test of ``difference`` with the task level's variance and each side's ``(s²/k, k)``:
    standard error and Welch–Satterthwaite's degrees of freedom (the task term normal, a side
    without a seed term adds none). The two seed terms are summed first, so the order of the
    sides does not move a bit."""
    seeds = left[0] + right[0]
    total = task_variance + seeds
    parts = [v * v / (k - 1) for v, k in (left, right) if v > 0]
    spread = parts[0] + parts[1] if len(parts) == 2 else sum(parts)
    df = total * total / spread if spread > 0 else math.inf
    return PairedTest(difference, math.sqrt(total) if total == total else float("nan"), df)


def _score_floor(interval: list[float]) -> float:
    """The task-level standard error Newcombe's 95% interval implies (its width / 3.92)."""
    low, high = interval
    return (high - low) / (2 * stats.normal_quantile(0.975)) if math.isfinite(high - low) else 0.0


def family_test(values: list[list[float]], difference_draws: torch.Tensor,
                score_interval: list[float] | None = None) -> PairedTest:
    """Two families' test from their seeds' ``values`` (``[left, right]``) and the task bootstrap's
    draws of the difference of their means: the draws' variance (where the metric is a share, at
    least what Newcombe's ``score_interval`` says the tasks can show) plus each side's seed spread."""
    finite = difference_draws[torch.isfinite(difference_draws)]
    task_variance = float(finite.var()) if len(finite) > 1 else float("nan")
    if score_interval is not None and task_variance == task_variance:
        task_variance = max(task_variance, _score_floor(score_interval) ** 2)
    return welch_test(mean_of(values[0]) - mean_of(values[1]), task_variance,
                      _seed_variance(values[0]), _seed_variance(values[1]))


def _same_as(metric: str, earlier: tuple[str, ...], terms: list[Terms]) -> str | None:
    """The first of ``earlier`` whose per-task numerators and denominators are ``metric``'s on
    every seed of both sides (and a share where it is one): the same claim twice."""
    for other in earlier:
        if (other in PROPORTIONS) == (metric in PROPORTIONS) and all(
                torch.equal(t[metric][0], t[other][0]) and torch.equal(t[metric][1], t[other][1]) for t in terms):
            return other
    return None


def compare_families(left: list[RecourseColumns], right: list[RecourseColumns], samples: int,
                     task_weights: str = "multinomial", seed: int = 1) -> Comparison:
    """Family ``left`` against family ``right`` (their seeds' columns on the same tasks), every
    metric: see the module's docstring. The resampled tasks depend on ``seed`` and the number of
    tasks only, so both orders see the same resamples."""
    shared, both_moved = common_masks([*left, *right])
    sides = [[shared_terms(c, shared, both_moved) for c in family] for family in (left, right)]
    everyone = [*sides[0], *sides[1]]
    counts = task_weights_drawn(len(shared), samples, torch.Generator().manual_seed(seed), task_weights)
    once = torch.ones(1, len(shared), dtype=torch.float64)
    point = [[{m: float(v[0]) for m, v in resampled(t, once).items()} for t in side] for side in sides]
    draws = [[resampled(t, counts) for t in side] for side in sides]
    scores = newcombe_of_tables([terms_cells(a, b) for a in sides[0] for b in sides[1]])
    tests, same_as, degenerate = {}, {}, []
    for index, metric in enumerate(RECOURSE_METRICS):
        values = [[p[metric] for p in side] for side in point]
        means = [finite_mean(torch.stack([d[metric] for d in side], dim=1)) for side in draws]
        tests[metric] = family_test(values, means[0] - means[1], scores.get(metric))
        twin = _same_as(metric, RECOURSE_METRICS[:index], everyone)
        if twin is not None:
            same_as[metric] = twin
        if all(bool((t[metric][0] == 0).all()) for t in everyone):
            degenerate.append(metric)
    return Comparison(tests, {m: scores[m] for m in PROPORTIONS}, same_as, tuple(degenerate))
