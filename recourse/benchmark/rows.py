"""The benchmark's table: one row per model and one per family of seeds, with bootstrap
intervals, the seen/held-out attribute groups and paired differences on shared tasks."""

from __future__ import annotations

import math
import re
import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from recourse.benchmark import statistics as stats
from recourse.benchmark.tasks import FP32, BenchmarkSettings, record_columns
from recourse.data import to_float_images
from recourse.metrics import agreement, both_valid, decisions, directional_similarity, mean_accuracy, overhead
from recourse.paired import RecourseColumns, Student

RECOURSE_METRICS = ("vd", "crg", "dirsim", "fa_50", "fa_75", "logit_gap", "logit_lean", "zero_edits", "dirsim_moved")
# CRG, DirSim and the zero-length share are defined on B; a paired difference takes them on
# the tasks both have in B (dirsim_moved: on those where both students' edits moved)
_ON_B = ("crg", "dirsim", "zero_edits")
# Shares of counted tasks: their intervals are also given by Wilson's score (never [0, 0])
PROPORTIONS = ("vd", "fa_50", "fa_75", "zero_edits")
NOISE_CONTROL = "fp32-noise"  # the noise draws' family: fp32-noise, fp32-noise-s1, ...
REFERENCE_PREFIX = "fp32-ref-"  # a second full-precision classifier's row: fp32-ref-<its folder>
GROUPS = ("all", "seen", "held_out")
# Paired comparisons, family against family: the 4-bit post-training baselines, and
# cfq-qat's no-recourse twin (same calibration and bits), which isolates the recourse term.
PAIRED_REFERENCES = ("ptq-int4", "ptq-int4-ends8", "cfq-qat-norecourse")
BOOTSTRAP_SAMPLES = 1000


def family_of(variant: str) -> str:
    """A variant's family: its id without a fine-tuning-seed suffix (``cfq-qat-s2`` → ``cfq-qat``)."""
    return re.sub(r"-s\d+$", "", variant)


@dataclass(frozen=True)
class VariantFacts:
    """What the table reports about a variant besides its recourse."""

    integer_kernels: bool
    bits_per_weight: float
    make_seconds: float
    size_bytes: int
    details: dict = field(default_factory=dict)  # budget, sparsity, bits per layer
    method: str = ""  # the compression method that made it


@dataclass(frozen=True)
class BenchmarkRow:
    method: str  # the row's model: a variant id (a folder of checkpoints/variants), fp32 or a control
    acc: float
    vd: float | None
    crg: float | None
    dirsim: float | None
    success_rate: float | None
    overhead: float | None
    agreement: float
    twin_integer_agreement: float | None  # the twin's decisions vs the integer model's
    bits_per_weight: float
    size_mb: float
    latency_batch1_ms: float
    latency_batch32_ms: float
    integer_kernels: bool
    n: int
    s: int
    b: int
    per_attribute: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    intervals: dict = field(default_factory=dict)  # 95% bootstrap intervals of the recourse metrics
    paired: dict = field(default_factory=dict)  # {reference: {metric: [difference, low, high]}}
    fa_50: float | None = None  # false acceptance at α = 0.5, %
    fa_75: float | None = None
    logit_gap: float | None = None  # mean |Δlogit| at x'_f
    logit_lean: float | None = None  # signed: positive leans towards the target
    compression: str = ""  # the method that made the variant
    family: str = ""
    groups: dict = field(default_factory=dict)  # {"seen" | "held_out": summary}
    # Added for issue 26; absent from the committed runs (written only when set):
    zero_edits: float | None = None  # % of B where the student's own edit is zero (it decides t at x)
    dirsim_moved: float | None = None  # DirSim over B without those
    proportions: dict = field(default_factory=dict)  # {metric: {"count", "n", "wilson": [low, high] in %}}
    paired_score: dict = field(default_factory=dict)  # {reference: {metric: [low, high]}}, Newcombe, in points


@dataclass(frozen=True)
class FamilyRow:
    """A method's result over its fine-tuning seeds: mean and sd across seeds, and 95%
    intervals from a bootstrap over seeds and tasks, for all tasks and each group."""

    family: str
    variants: tuple[str, ...]
    compression: str
    bits_per_weight: float
    acc: tuple[float, float]  # mean, sd over seeds
    agreement: tuple[float, float]
    metrics: dict  # {group: {metric: {"mean", "sd", "low", "high"}}}
    paired: dict = field(default_factory=dict)  # {reference: {group: {metric: [difference, low, high]}}}
    # Added for issue 26; absent from the committed runs (written only when set):
    wilson: dict = field(default_factory=dict)  # {group: {metric: [low, high]}}, at the seeds' mean count, %
    tests: dict = field(default_factory=dict)  # {reference: {group: {metric: {"p", "se", "score_interval"?}}}}
    equivalence: dict = field(default_factory=dict)  # {floor: {group: {metric: Equivalence.to_dict()}}}


NEW_ROW_FIELDS = ("zero_edits", "dirsim_moved", "proportions", "paired_score")
NEW_FAMILY_FIELDS = ("wilson", "tests", "equivalence")


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


def _percentiles(draws: dict[str, list[float]], level: float) -> dict[str, list[float]]:
    tail = (1 - level) / 2
    return {m: [float(torch.tensor(v).quantile(tail)), float(torch.tensor(v).quantile(1 - tail))] if v
            else [float("nan")] * 2 for m, v in draws.items()}


def _finite(value: float) -> bool:
    return value == value and abs(value) != float("inf")


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


def _shared_terms(columns: RecourseColumns, shared: torch.Tensor,
                  both_moved: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """:func:`ratio_terms` of a paired difference: CRG and DirSim on the ``shared`` tasks,
    ``dirsim_moved`` on the shared tasks where both edits moved."""
    full, on_shared = ratio_terms(columns), ratio_terms(columns, shared, both_moved)
    return {metric: (on_shared if metric in (*_ON_B, "dirsim_moved") else full)[metric] for metric in RECOURSE_METRICS}


def _shared_masks(mine: RecourseColumns, theirs: RecourseColumns) -> tuple[torch.Tensor, torch.Tensor]:
    shared = both_valid(mine.teacher_valid, mine.student_valid) & both_valid(theirs.teacher_valid, theirs.student_valid)
    return shared, shared & moved(mine) & moved(theirs)


def _resampled(terms: dict[str, tuple[torch.Tensor, torch.Tensor]], counts: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each metric for each row of ``counts`` ``(draws, N)``: NaN where its denominator is 0."""
    values = {}
    for metric, (numerator, denominator) in terms.items():
        top, bottom = counts @ numerator, counts @ denominator
        values[metric] = torch.where(bottom > 0, top / bottom.clamp_min(1e-300), torch.full_like(top, float("nan")))
    return values


def _task_counts(tasks: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    """How often each task is drawn in each of ``draws`` resamples ``(draws, tasks)``."""
    return stats.multinomial_counts(tasks, draws, generator)


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
    reference seed ``k`` (or the only one), on shared tasks."""
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
    # drawn in this order so that the committed runs' intervals are reproduced exactly
    chosen = torch.randint(len(seeds), (samples, len(seeds)), generator=generator) if resample \
        else torch.arange(len(seeds)).expand(samples, len(seeds))
    if task_weights == "dirichlet":
        counts = stats.dirichlet_weights(tasks, samples, generator)
    else:
        counts = _task_counts(tasks, samples, generator)
    per_seed = []  # {metric: (samples,)} for each seed
    point = []  # {metric: value on all tasks} for each seed
    for k, mine in enumerate(seeds):
        if references is None:
            per_seed.append(_resampled(ratio_terms(mine), counts))
            point.append(summary_values(mine))
            continue
        theirs = references[k % len(references)]
        shared, both_moved = _shared_masks(mine, theirs)
        a, b = (_resampled(_shared_terms(side, shared, both_moved), counts) for side in (mine, theirs))
        per_seed.append({metric: a[metric] - b[metric] for metric in RECOURSE_METRICS})
        point.append(paired_difference(mine, theirs))
    means = {}
    for metric in RECOURSE_METRICS:
        table = torch.stack([values[metric] for values in per_seed], dim=1)  # (samples, seeds)
        picked = table.gather(1, chosen)
        finite = torch.isfinite(picked)
        mean = torch.where(finite, picked, torch.zeros_like(picked)).sum(1) / finite.sum(1).clamp_min(1)
        means[metric] = torch.where(finite.any(1), mean, torch.full_like(mean, float("nan")))
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
        return 2.0 * (1.0 - stats.student_t_cdf(abs(self.difference) / self.standard_error, self.df))

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
    """:class:`PairedTest` of each metric's mean paired difference over seeds."""
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
        tests[metric] = PairedTest(_mean(values), math.sqrt(total) if total == total else float("nan"), df)
    return tests


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
    shared, both_moved = _shared_masks(mine, theirs)
    a, b = _shared_terms(mine, shared, both_moved), _shared_terms(theirs, shared, both_moved)
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
    the two models never differ on the tasks."""
    tables = [paired_cells(mine, references[k % len(references)]) for k, mine in enumerate(seeds)]
    result = {}
    for metric in PROPORTIONS:
        cells = [sum(t[metric][i] for t in tables) / len(tables) for i in range(4)]
        result[metric] = stats.newcombe_paired_interval(*cells).as_list(100.0)
    return result


@torch.no_grad()
def all_decisions(model: nn.Module, images: torch.Tensor, batch_size: int = 250) -> torch.Tensor:
    return torch.cat([decisions(model(to_float_images(images[i:i + batch_size]))) for i in range(0, len(images), batch_size)])


@dataclass(frozen=True)
class Decisions:
    """A model's 40 decisions on every image: what it decides with (the integer model
    where there is one) and its float twin."""

    decider: torch.Tensor
    twin: torch.Tensor


def model_decisions(students: dict[str, Student], images: torch.Tensor) -> dict[str, Decisions]:
    """Decisions of each student on ``images`` (the table's Acc, agreement and twin/integer
    agreement); separate from the table so that processes can share the work."""
    decided = {}
    for name, student in students.items():
        decider = all_decisions(student.decider, images)
        twin = decider if student.twin is student.decider else all_decisions(student.twin, images)
        decided[name] = Decisions(decider, twin)
    return decided


@torch.no_grad()
def median_latency_ms(model: nn.Module, batch: torch.Tensor, repeats: int) -> float:
    model(batch)  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model(batch)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def group_masks(records: list[dict], settings: BenchmarkSettings) -> dict[str, torch.Tensor]:
    """Task masks of the groups: all tasks, the seen attributes, the held-out ones."""
    seen = torch.tensor([r["attribute"] in settings.seen_attributes for r in records])
    return {"all": torch.ones(len(records), dtype=torch.bool), "seen": seen, "held_out": ~seen}


def benchmark_rows(records: list[dict], teacher: nn.Module, students: dict[str, Student],
                   facts: dict[str, VariantFacts], images: torch.Tensor, labels: torch.Tensor, train_seconds: float,
                   teacher_size_bytes: int, settings: BenchmarkSettings,
                   decided: dict[str, Decisions] | None = None) -> list[BenchmarkRow]:
    """One row for the teacher and one per student; accuracy on all of ``images``, from
    ``decided`` (:func:`model_decisions`) where given."""
    records = sorted(records, key=lambda r: r["task"])
    labels = labels.long()
    decided = decided if decided is not None else model_decisions(students, images)
    teacher_decisions = all_decisions(teacher, images)
    batch1, batch32 = to_float_images(images[:1]), to_float_images(images[:32])
    teacher_valid = sum(r["teacher_valid"] for r in records)
    rows = [BenchmarkRow(
        method=FP32, acc=mean_accuracy(teacher_decisions, labels), vd=None, crg=None, dirsim=None,
        success_rate=100.0 * teacher_valid / len(records), overhead=None,
        agreement=100.0, twin_integer_agreement=None, bits_per_weight=32.0, size_mb=teacher_size_bytes / 1e6,
        latency_batch1_ms=median_latency_ms(teacher, batch1, settings.latency_repeats),
        latency_batch32_ms=median_latency_ms(teacher, batch32, settings.latency_repeats),
        integer_kernels=False, n=len(records), s=teacher_valid, b=0, compression=FP32, family=FP32,
    )]
    columns = {name: record_columns(records, name) for name in students}
    masks = group_masks(records, settings)
    int8 = next((f.make_seconds for f in facts.values() if f.method == "ptq-int8"), None)
    references = [name for name in students if name in PAIRED_REFERENCES]  # their seed-0 rows
    for name, student in students.items():
        summary = columns[name].summary()
        student_decisions, twin_decisions = decided[name].decider, decided[name].twin
        per_attribute = {}
        for attribute in settings.attributes:
            index = torch.tensor([r["attribute"] == attribute for r in records])
            if bool(index.any()):
                per_attribute[attribute] = summary_dict(columns[name].select(index))
        fact = facts[name]
        rows.append(BenchmarkRow(
            method=name, acc=mean_accuracy(student_decisions, labels), vd=summary.vd, crg=summary.crg,
            dirsim=summary.dirsim, success_rate=summary.success_rate,
            # a foreign model's making time is not known here: no overhead
            overhead=overhead(train_seconds, fact.make_seconds, int8) if int8 is not None and fact.method != "foreign"
            else None,
            agreement=agreement(teacher_decisions, student_decisions),
            twin_integer_agreement=agreement(twin_decisions, student_decisions),
            bits_per_weight=fact.bits_per_weight, size_mb=fact.size_bytes / 1e6,
            latency_batch1_ms=median_latency_ms(student.decider, batch1, settings.latency_repeats),
            latency_batch32_ms=median_latency_ms(student.decider, batch32, settings.latency_repeats),
            integer_kernels=fact.integer_kernels, n=summary.n, s=summary.s, b=summary.b,
            per_attribute=per_attribute, details=fact.details,
            intervals=bootstrap_intervals(columns[name], samples=settings.bootstrap_samples,
                                          task_weights=settings.task_weights),
            paired={reference: _versus(columns[name], columns[reference], settings.bootstrap_samples,
                                       settings.task_weights)
                    for reference in references if family_of(name) != reference},
            fa_50=summary.fa_50, fa_75=summary.fa_75, logit_gap=summary.logit_gap, logit_lean=summary.logit_lean,
            compression=fact.method, family=family_of(name),
            groups={group: summary_dict(columns[name].select(mask)) for group, mask in masks.items()
                    if group != "all" and bool(mask.any())},
            zero_edits=direction_values(columns[name])["zero_edits"],
            dirsim_moved=direction_values(columns[name])["dirsim_moved"],
            proportions=proportion_intervals(columns[name]),
            paired_score={reference: score_intervals([columns[name]], [columns[reference]])
                          for reference in references if family_of(name) != reference},
        ))
    return rows


def is_floor(family: str) -> bool:
    """The rows that measure what any slightly different model gives: the noise control's
    draws and a second full-precision classifier."""
    return family == NOISE_CONTROL or family.startswith(REFERENCE_PREFIX)


def family_rows(rows: list[BenchmarkRow], records: list[dict], settings: BenchmarkSettings) -> list[FamilyRow]:
    """One row per family of seeds (a family of one seed too), in the order of ``rows``:
    mean and sd over seeds, intervals (the seed level and task weights of ``settings``),
    Wilson intervals of the shares, and paired differences against the references with
    their p-values and Newcombe intervals, and TOST against each floor row."""
    records = sorted(records, key=lambda r: r["task"])
    masks = group_masks(records, settings)
    members: dict[str, list[BenchmarkRow]] = {}
    for row in rows:
        if row.method != FP32:
            members.setdefault(row.family, []).append(row)
    columns = {row.method: record_columns(records, row.method) for family in members.values() for row in family}
    levels = {"seed_level": settings.seed_level, "task_weights": settings.task_weights}
    margins = dict(settings.equivalence_margins)
    result = []
    for family, family_members in members.items():
        metrics, paired, wilson, tests, equivalence = {}, {}, {}, {}, {}
        for group, mask in masks.items():
            if not bool(mask.any()):
                continue
            seeds = [columns[row.method].select(mask) for row in family_members]
            values = [summary_values(c) for c in seeds]
            intervals = seed_bootstrap(seeds, samples=settings.bootstrap_samples, **levels)
            metrics[group] = {m: {"mean": _mean([v[m] for v in values]), "sd": _sd([v[m] for v in values]),
                                  "low": intervals[m][0], "high": intervals[m][1]} for m in RECOURSE_METRICS}
            counts = [proportion_counts(c) for c in seeds]
            wilson[group] = {m: stats.wilson_interval(_mean([c[m][0] for c in counts]),
                                                      _mean([c[m][1] for c in counts])).as_list(100.0)
                             for m in PROPORTIONS}
            floors = [f for f in members if is_floor(f) and f != family] if margins else []
            for reference in dict.fromkeys([r for r in PAIRED_REFERENCES if r in members] + floors):
                if reference == family:
                    continue
                theirs = [columns[row.method].select(mask) for row in members[reference]]
                differences = [paired_difference(mine, theirs[k % len(theirs)]) for k, mine in enumerate(seeds)]
                bounds = seed_bootstrap(seeds, theirs, settings.bootstrap_samples, **levels)
                means = {m: _mean([d[m] for d in differences]) for m in RECOURSE_METRICS}
                tested = paired_tests(seeds, theirs, settings.bootstrap_samples, settings.task_weights)
                scores = score_intervals(seeds, theirs)
                tested = {m: t.at_least(scores[m]) if m in scores else t for m, t in tested.items()}
                if reference in PAIRED_REFERENCES:
                    paired.setdefault(reference, {})[group] = {m: [means[m], *bounds[m]] for m in RECOURSE_METRICS}
                    tests.setdefault(reference, {})[group] = {
                        m: {"p": tested[m].p, "se": tested[m].standard_error, "df": tested[m].df,
                            "interval": tested[m].interval(),
                            **({"score_interval": scores[m]} if m in scores else {})} for m in RECOURSE_METRICS}
                if reference in floors:
                    equivalence.setdefault(reference, {})[group] = {
                        m: tested[m].tost(margin).to_dict() for m, margin in margins.items()}
        result.append(FamilyRow(
            family=family, variants=tuple(r.method for r in family_members), compression=family_members[0].compression,
            bits_per_weight=_mean([r.bits_per_weight for r in family_members]),
            acc=(_mean([r.acc for r in family_members]), _sd([r.acc for r in family_members])),
            agreement=(_mean([r.agreement for r in family_members]), _sd([r.agreement for r in family_members])),
            metrics=metrics, paired=paired, wilson=wilson, tests=tests, equivalence=equivalence))
    return result


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


def _mean(values: list[float]) -> float:
    finite = [v for v in values if _finite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def _sd(values: list[float]) -> float:
    finite = [v for v in values if _finite(v)]
    return statistics.stdev(finite) if len(finite) > 1 else float("nan")


def _versus(mine: RecourseColumns, theirs: RecourseColumns, samples: int, task_weights: str = "multinomial") -> dict:
    difference = paired_difference(mine, theirs)
    intervals = bootstrap_intervals(mine, theirs, samples, task_weights=task_weights)
    return {m: [difference[m], *intervals[m]] for m in RECOURSE_METRICS}
