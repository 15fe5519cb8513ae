"""The bootstrap of the benchmark's recourse metrics: percentile intervals over tasks and over
fine-tuning seeds (two levels), and the paired tests built on its draws (standard error and
degrees of freedom of a paired difference, Satterthwaite)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import torch

import recourse.benchmark.statistics as stats
from recourse.audit.paired import RecourseColumns
from recourse.benchmark.terms import (
    RECOURSE_METRICS, mean_of, paired_difference, ratio_terms, shared_masks, shared_terms, summary_values,
)

BOOTSTRAP_SAMPLES = 1000


def _percentiles(draws: dict[str, list[float]], level: float) -> dict[str, list[float]]:
    tail = (1 - level) / 2
    return {m: [float(torch.tensor(v).quantile(tail)), float(torch.tensor(v).quantile(1 - tail))] if v
            else [float("nan")] * 2 for m, v in draws.items()}


def resampled(terms: dict[str, tuple[torch.Tensor, torch.Tensor]], counts: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each metric for each row of ``counts`` ``(draws, N)``: NaN where its denominator is 0."""
    values = {}
    for metric, (numerator, denominator) in terms.items():
        top, bottom = counts @ numerator, counts @ denominator
        values[metric] = torch.where(bottom > 0, top / bottom.clamp_min(1e-300), torch.full_like(top, float("nan")))
    return values


def task_weights_drawn(tasks: int, draws: int, generator: torch.Generator, task_weights: str) -> torch.Tensor:
    """The task level's weights ``(draws, tasks)``: how often each task is drawn
    (``multinomial``) or its Dirichlet weight (``dirichlet``)."""
    if task_weights == "dirichlet":
        return stats.dirichlet_weights(tasks, draws, generator)
    return stats.multinomial_counts(tasks, draws, generator)


def finite_mean(table: torch.Tensor) -> torch.Tensor:
    """The mean of each row of ``table`` ``(draws, seeds)`` over its finite values; NaN where
    it has none (a resample where no seed's value is defined)."""
    finite = torch.isfinite(table)
    mean = torch.where(finite, table, torch.zeros_like(table)).sum(1) / finite.sum(1).clamp_min(1)
    return torch.where(finite.any(1), mean, torch.full_like(mean, float("nan")))


def bootstrap_intervals(columns: RecourseColumns, reference: RecourseColumns | None = None,
                        samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = 0.95,
                        task_weights: str = "multinomial") -> dict[str, list[float]]:
    """Percentile bootstrap over tasks: ``[low, high]`` of each recourse metric, or, with
    ``reference``, of the paired difference ``columns − reference`` on shared tasks (the same
    resampled tasks for both, so what the two share does not count as noise)."""
    return seed_bootstrap([columns], [reference] if reference is not None else None, samples, seed, level,
                          task_weights=task_weights)


def seed_bootstrap(seeds: list[RecourseColumns], references: list[RecourseColumns] | None = None,
                   samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = 0.95,
                   seed_level: str = "resample", task_weights: str = "multinomial") -> dict[str, list[float]]:
    """Two-level percentile bootstrap of the mean over seeds (:func:`seed_draws`)."""
    return _percentiles(seed_draws(seeds, references, samples, seed, seed_level, task_weights), level)


def seed_draws(seeds: list[RecourseColumns], references: list[RecourseColumns] | None = None,
               samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, seed_level: str = "resample",
               task_weights: str = "multinomial") -> dict[str, list[float]]:
    """Bootstrap draws of the mean over seeds, per metric (undefined draws left out). The task
    level resamples the tasks (``multinomial``) or reweights them (``dirichlet``, the
    Bayesian bootstrap), the same tasks for every seed. The seed level either resamples the
    seeds (``resample``: with 3 seeds only 10 distinct draws) or adds ``s/√k · t_{k−1}`` to
    each draw (``parametric``, :func:`statistics.seed_level_draws`, ``s`` the seeds' sd of the
    metric on all tasks). With ``references``, of the paired difference, seed ``k`` against
    reference seed ``k`` (or the only one), on shared tasks: the pairing of
    :data:`~recourse.benchmark.settings.LEGACY_ANALYSIS`, which depends on the order of the two
    sides; :data:`~recourse.benchmark.settings.ANALYSIS` compares families with
    :func:`recourse.benchmark.comparison.compare_families`."""
    generator = torch.Generator().manual_seed(seed)
    if len(seeds[0]) == 0:
        return {m: [] for m in RECOURSE_METRICS}
    means, point = _task_level(seeds, references, samples, generator, seed_level, task_weights)
    draws = {}
    for metric in RECOURSE_METRICS:
        mean = means[metric]
        if seed_level == "parametric" and len(seeds) > 1:
            mean = mean + stats.seed_level_draws([p[metric] for p in point], samples, generator)
        draws[metric] = mean[torch.isfinite(mean)].tolist()
    return draws


def _task_level(seeds: list[RecourseColumns], references: list[RecourseColumns] | None, samples: int,
                generator: torch.Generator, seed_level: str, task_weights: str
                ) -> tuple[dict[str, torch.Tensor], list[dict[str, float]]]:
    """Per metric, ``(samples,)`` draws of the mean over seeds with the tasks resampled (and,
    for ``resample``, the seeds too; NaN where no seed's value is defined), and each seed's
    value on all tasks."""
    tasks = len(seeds[0])
    resample = seed_level == "resample" and len(seeds) > 1
    # drawn in this order so that the intervals recorded under LEGACY_ANALYSIS are reproduced exactly
    chosen = torch.randint(len(seeds), (samples, len(seeds)), generator=generator) if resample \
        else torch.arange(len(seeds)).expand(samples, len(seeds))
    counts = task_weights_drawn(tasks, samples, generator, task_weights)
    per_seed = []  # {metric: (samples,)} for each seed
    point = []  # {metric: value on all tasks} for each seed
    for k, mine in enumerate(seeds):
        if references is None:
            per_seed.append(resampled(ratio_terms(mine), counts))
            point.append(summary_values(mine))
            continue
        theirs = references[k % len(references)]
        shared, both_moved = shared_masks(mine, theirs)
        a, b = (resampled(shared_terms(side, shared, both_moved), counts) for side in (mine, theirs))
        per_seed.append({metric: a[metric] - b[metric] for metric in RECOURSE_METRICS})
        point.append(paired_difference(mine, theirs))
    means = {}
    for metric in RECOURSE_METRICS:
        table = torch.stack([values[metric] for values in per_seed], dim=1)  # (samples, seeds)
        means[metric] = finite_mean(table.gather(1, chosen))
    return means, point


@dataclass(frozen=True)
class PairedTest:
    """A paired difference's standard error and degrees of freedom, from the bootstrap over
    tasks (all seeds, normal) and the seeds' spread ``s²/k`` (t with ``k − 1``), combined by
    Satterthwaite. Not the sd of the parametric draws: with 3 seeds their t₂ tail has no
    variance."""

    difference: float
    standard_error: float
    df: float

    @property
    def p(self) -> float:
        if not (math.isfinite(self.difference) and math.isfinite(self.standard_error)):
            return float("nan")
        if self.standard_error <= 0:
            return 1.0 if self.difference == 0 else 0.0
        # the lower tail: ``1 − cdf`` would round a p below 1e-16 to 0, and Holm's order needs it
        return 2.0 * stats.student_t_cdf(-abs(self.difference) / self.standard_error, self.df)

    def tost(self, margin: float) -> stats.Equivalence:
        return stats.tost(self.difference, self.standard_error, margin, self.df)

    def interval(self, level: float = 0.95) -> list[float]:
        """The interval this test inverts: ``difference ± t_{df} · se``."""
        if not math.isfinite(self.standard_error):
            return [float("nan")] * 2
        half = stats.student_t_quantile(0.5 + level / 2, self.df) * self.standard_error
        return [self.difference - half, self.difference + half]

    def at_least(self, score_interval: list[float]) -> "PairedTest":
        """With the standard error no smaller than Newcombe's score interval implies: where
        the two models never differ on the tasks the bootstrap's is 0, and a TOST or p-value
        would then claim certainty that the number of tasks does not give."""
        low, high = score_interval
        floor = (high - low) / (2 * stats.normal_quantile(0.975)) if math.isfinite(high - low) else 0.0
        if not floor > self.standard_error:
            return self
        return PairedTest(self.difference, floor, math.inf)


def paired_tests(seeds: list[RecourseColumns], references: list[RecourseColumns], samples: int,
                 task_weights: str = "multinomial", seed: int = 1) -> dict[str, PairedTest]:
    """:class:`PairedTest` of each metric's mean paired difference over seeds, seed ``k``
    against reference seed ``k mod K``: the pairing of
    :data:`~recourse.benchmark.settings.LEGACY_ANALYSIS`, so that the records made with it
    recompute as written. It is not symmetric (a one-seed family meets only seed 0
    of a three-seed reference); :func:`recourse.benchmark.comparison.compare_families` is."""
    generator = torch.Generator().manual_seed(seed)
    means, point = _task_level(seeds, references, samples, generator, "parametric", task_weights)
    tests = {}
    for metric in RECOURSE_METRICS:
        draws = means[metric][torch.isfinite(means[metric])]
        task_variance = float(draws.var()) if len(draws) > 1 else float("nan")
        values = [p[metric] for p in point if math.isfinite(p[metric])]
        seed_variance = statistics.variance(values) / len(values) if len(values) > 1 else 0.0
        total = task_variance + seed_variance
        df = total * total / (seed_variance * seed_variance / (len(values) - 1)) if seed_variance > 0 else math.inf
        tests[metric] = PairedTest(mean_of(values), math.sqrt(total) if total == total else float("nan"), df)
    return tests
