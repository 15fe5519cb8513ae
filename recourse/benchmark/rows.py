"""The benchmark's table: one row per model and one per family of seeds, with bootstrap
intervals, the seen/held-out attribute groups and paired differences on shared tasks."""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from recourse.benchmark.tasks import FP32, BenchmarkSettings, record_columns
from recourse.data import to_float_images
from recourse.metrics import agreement, both_valid, decisions, mean_accuracy, overhead
from recourse.paired import RecourseColumns, Student

RECOURSE_METRICS = ("vd", "crg", "dirsim", "fa_50", "fa_75", "logit_gap", "logit_lean")
# CRG and DirSim are defined on B; a paired difference takes them on the tasks both have in B
_ON_B = ("crg", "dirsim")
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


def summary_values(columns: RecourseColumns) -> dict[str, float]:
    values = columns.summary().to_dict()
    return {metric: values[metric] for metric in RECOURSE_METRICS}


def paired_difference(mine: RecourseColumns, theirs: RecourseColumns) -> dict[str, float]:
    """``mine − theirs`` per metric on the tasks both share: S is the teacher's (the same for
    both); CRG and DirSim over the tasks in both students' B."""
    shared = both_valid(mine.teacher_valid, mine.student_valid) & both_valid(theirs.teacher_valid, theirs.student_valid)
    full = {m: a - b for (m, a), b in zip(summary_values(mine).items(), summary_values(theirs).values())}
    on_b = summary_values(mine.select(shared)), summary_values(theirs.select(shared))
    return {m: (on_b[0][m] - on_b[1][m]) if m in _ON_B else full[m] for m in RECOURSE_METRICS}


def _percentiles(draws: dict[str, list[float]], level: float) -> dict[str, list[float]]:
    tail = (1 - level) / 2
    return {m: [float(torch.tensor(v).quantile(tail)), float(torch.tensor(v).quantile(1 - tail))] if v
            else [float("nan")] * 2 for m, v in draws.items()}


def _finite(value: float) -> bool:
    return value == value and abs(value) != float("inf")


def ratio_terms(columns: RecourseColumns, b_mask: torch.Tensor | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Every recourse metric is a ratio of sums over tasks, ``Σ num / Σ den`` (× 100 for the
    percentages): per metric, the per-task ``(num, den)``. ``b_mask`` replaces B (paired
    differences take CRG and DirSim on the tasks both students have in B). With every
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
    return terms


def _shared_terms(columns: RecourseColumns, shared: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """:func:`ratio_terms` of a paired difference: CRG and DirSim on the ``shared`` tasks."""
    full, on_shared = ratio_terms(columns), ratio_terms(columns, shared)
    return {metric: (on_shared if metric in _ON_B else full)[metric] for metric in RECOURSE_METRICS}


def _resampled(terms: dict[str, tuple[torch.Tensor, torch.Tensor]], counts: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each metric for each row of ``counts`` ``(draws, N)``: NaN where its denominator is 0."""
    values = {}
    for metric, (numerator, denominator) in terms.items():
        top, bottom = counts @ numerator, counts @ denominator
        values[metric] = torch.where(bottom > 0, top / bottom.clamp_min(1e-300), torch.full_like(top, float("nan")))
    return values


def _task_counts(tasks: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    """How often each task is drawn in each of ``draws`` resamples ``(draws, tasks)``."""
    index = torch.randint(tasks, (draws, tasks), generator=generator)
    return torch.zeros(draws, tasks, dtype=torch.float64).scatter_add_(1, index, torch.ones(draws, tasks, dtype=torch.float64))


def bootstrap_intervals(columns: RecourseColumns, reference: RecourseColumns | None = None,
                        samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = 0.95) -> dict[str, list[float]]:
    """Percentile bootstrap over tasks: ``[low, high]`` of each recourse metric, or, with
    ``reference``, of the paired difference ``columns − reference`` on shared tasks (the same
    resampled tasks for both, so what the two share does not count as noise)."""
    return seed_bootstrap([columns], [reference] if reference is not None else None, samples, seed, level)


def seed_bootstrap(seeds: list[RecourseColumns], references: list[RecourseColumns] | None = None,
                   samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = 0.95) -> dict[str, list[float]]:
    """Two-level percentile bootstrap of the mean over seeds: each draw resamples the seeds,
    then the tasks (the same tasks for every seed). With ``references``, of the paired
    difference, seed ``k`` against reference seed ``k`` (or the only one), on shared tasks."""
    generator = torch.Generator().manual_seed(seed)
    tasks = len(seeds[0])
    if tasks == 0:
        return {m: [float("nan")] * 2 for m in RECOURSE_METRICS}
    chosen = torch.randint(len(seeds), (samples, len(seeds)), generator=generator) if len(seeds) > 1 \
        else torch.zeros(samples, 1, dtype=torch.long)
    counts = _task_counts(tasks, samples, generator)
    per_seed = []  # {metric: (samples,)} for each seed
    for k, mine in enumerate(seeds):
        if references is None:
            per_seed.append(_resampled(ratio_terms(mine), counts))
            continue
        theirs = references[k % len(references)]
        shared = both_valid(mine.teacher_valid, mine.student_valid) & both_valid(theirs.teacher_valid, theirs.student_valid)
        a, b = (_resampled(_shared_terms(side, shared), counts) for side in (mine, theirs))
        per_seed.append({metric: a[metric] - b[metric] for metric in RECOURSE_METRICS})
    draws = {}
    for metric in RECOURSE_METRICS:
        table = torch.stack([values[metric] for values in per_seed], dim=1)  # (samples, seeds)
        picked = table.gather(1, chosen)
        finite = torch.isfinite(picked)
        mean = torch.where(finite, picked, torch.zeros_like(picked)).sum(1) / finite.sum(1).clamp_min(1)
        draws[metric] = mean[finite.any(1)].tolist()
    return _percentiles(draws, level)


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
                per_attribute[attribute] = columns[name].select(index).summary().to_dict()
        fact = facts[name]
        rows.append(BenchmarkRow(
            method=name, acc=mean_accuracy(student_decisions, labels), vd=summary.vd, crg=summary.crg,
            dirsim=summary.dirsim, success_rate=summary.success_rate,
            overhead=overhead(train_seconds, fact.make_seconds, int8) if int8 is not None else None,
            agreement=agreement(teacher_decisions, student_decisions),
            twin_integer_agreement=agreement(twin_decisions, student_decisions),
            bits_per_weight=fact.bits_per_weight, size_mb=fact.size_bytes / 1e6,
            latency_batch1_ms=median_latency_ms(student.decider, batch1, settings.latency_repeats),
            latency_batch32_ms=median_latency_ms(student.decider, batch32, settings.latency_repeats),
            integer_kernels=fact.integer_kernels, n=summary.n, s=summary.s, b=summary.b,
            per_attribute=per_attribute, details=fact.details,
            intervals=bootstrap_intervals(columns[name], samples=settings.bootstrap_samples),
            paired={reference: _versus(columns[name], columns[reference], settings.bootstrap_samples)
                    for reference in references if family_of(name) != reference},
            fa_50=summary.fa_50, fa_75=summary.fa_75, logit_gap=summary.logit_gap, logit_lean=summary.logit_lean,
            compression=fact.method, family=family_of(name),
            groups={group: columns[name].select(mask).summary().to_dict() for group, mask in masks.items()
                    if group != "all" and bool(mask.any())},
        ))
    return rows


def family_rows(rows: list[BenchmarkRow], records: list[dict], settings: BenchmarkSettings) -> list[FamilyRow]:
    """One row per family of seeds (a family of one seed too), in the order of ``rows``."""
    records = sorted(records, key=lambda r: r["task"])
    masks = group_masks(records, settings)
    members: dict[str, list[BenchmarkRow]] = {}
    for row in rows:
        if row.method != FP32:
            members.setdefault(row.family, []).append(row)
    columns = {row.method: record_columns(records, row.method) for family in members.values() for row in family}
    result = []
    for family, family_members in members.items():
        metrics, paired = {}, {}
        for group, mask in masks.items():
            if not bool(mask.any()):
                continue
            seeds = [columns[row.method].select(mask) for row in family_members]
            values = [summary_values(c) for c in seeds]
            intervals = seed_bootstrap(seeds, samples=settings.bootstrap_samples)
            metrics[group] = {m: {"mean": _mean([v[m] for v in values]), "sd": _sd([v[m] for v in values]),
                                  "low": intervals[m][0], "high": intervals[m][1]} for m in RECOURSE_METRICS}
            for reference in PAIRED_REFERENCES:
                if reference in members and reference != family:
                    theirs = [columns[row.method].select(mask) for row in members[reference]]
                    differences = [paired_difference(mine, theirs[k % len(theirs)]) for k, mine in enumerate(seeds)]
                    bounds = seed_bootstrap(seeds, theirs, settings.bootstrap_samples)
                    paired.setdefault(reference, {})[group] = {
                        m: [_mean([d[m] for d in differences]), *bounds[m]] for m in RECOURSE_METRICS}
        result.append(FamilyRow(
            family=family, variants=tuple(r.method for r in family_members), compression=family_members[0].compression,
            bits_per_weight=_mean([r.bits_per_weight for r in family_members]),
            acc=(_mean([r.acc for r in family_members]), _sd([r.acc for r in family_members])),
            agreement=(_mean([r.agreement for r in family_members]), _sd([r.agreement for r in family_members])),
            metrics=metrics, paired=paired))
    return result


def _mean(values: list[float]) -> float:
    finite = [v for v in values if _finite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def _sd(values: list[float]) -> float:
    finite = [v for v in values if _finite(v)]
    return statistics.stdev(finite) if len(finite) > 1 else float("nan")


def _versus(mine: RecourseColumns, theirs: RecourseColumns, samples: int) -> dict:
    difference = paired_difference(mine, theirs)
    intervals = bootstrap_intervals(mine, theirs, samples)
    return {m: [difference[m], *intervals[m]] for m in RECOURSE_METRICS}
