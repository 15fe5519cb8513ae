"""The benchmark's table: one row per model, with bootstrap intervals and paired differences."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from recourse.benchmark.tasks import FP32, BenchmarkSettings, record_columns
from recourse.data import to_float_images
from recourse.metrics import agreement, decisions, mean_accuracy, overhead
from recourse.paired import RecourseColumns, Student

RECOURSE_METRICS = ("vd", "crg", "dirsim")
# Paired comparisons: the 4-bit post-training baseline, and mixed-precision QAT without the
# recourse term (against which cfq-qat isolates that term).
PAIRED_REFERENCES = ("ptq-int4", "mixedprec-qat")


@dataclass(frozen=True)
class VariantFacts:
    """What the table reports about a variant besides its recourse."""

    integer_kernels: bool
    bits_per_weight: float
    make_seconds: float
    size_bytes: int
    details: dict = field(default_factory=dict)  # budget, sparsity, bits per layer


@dataclass(frozen=True)
class BenchmarkRow:
    method: str
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
    intervals: dict = field(default_factory=dict)  # 95% bootstrap intervals of VD, CRG, DirSim
    paired: dict = field(default_factory=dict)  # {reference: {metric: [difference, low, high]}}


def bootstrap_intervals(columns: RecourseColumns, reference: RecourseColumns | None = None, samples: int = 2000,
                        seed: int = 0, level: float = 0.95) -> dict[str, list[float]]:
    """Percentile bootstrap over tasks: ``[low, high]`` of VD, CRG and DirSim, or, with
    ``reference``, of the paired difference ``columns − reference`` (the same resampled
    tasks for both, so what the two share does not count as noise)."""
    generator = torch.Generator().manual_seed(seed)
    draws: dict[str, list[float]] = {m: [] for m in RECOURSE_METRICS}
    for _ in range(samples):
        index = torch.randint(len(columns), (len(columns),), generator=generator)
        values = columns.select(index).summary().to_dict()
        base = reference.select(index).summary().to_dict() if reference is not None else None
        for metric in RECOURSE_METRICS:
            value = values[metric] - base[metric] if base else values[metric]
            if value == value and abs(value) != float("inf"):
                draws[metric].append(value)
    tail = (1 - level) / 2
    return {m: [float(torch.tensor(v).quantile(tail)), float(torch.tensor(v).quantile(1 - tail))] if v else [float("nan")] * 2
            for m, v in draws.items()}


@torch.no_grad()
def all_decisions(model: nn.Module, images: torch.Tensor, batch_size: int = 250) -> torch.Tensor:
    return torch.cat([decisions(model(to_float_images(images[i:i + batch_size]))) for i in range(0, len(images), batch_size)])


@torch.no_grad()
def median_latency_ms(model: nn.Module, batch: torch.Tensor, repeats: int) -> float:
    model(batch)  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model(batch)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def benchmark_rows(records: list[dict], teacher: nn.Module, students: dict[str, Student],
                   facts: dict[str, VariantFacts], images: torch.Tensor, labels: torch.Tensor, train_seconds: float,
                   teacher_size_bytes: int, settings: BenchmarkSettings) -> list[BenchmarkRow]:
    """One row for the teacher and one per student; accuracy on all of ``images``."""
    records = sorted(records, key=lambda r: r["task"])
    labels = labels.long()
    teacher_decisions = all_decisions(teacher, images)
    batch1, batch32 = to_float_images(images[:1]), to_float_images(images[:32])
    teacher_valid = sum(r["teacher_valid"] for r in records)
    rows = [BenchmarkRow(
        method=FP32, acc=mean_accuracy(teacher_decisions, labels), vd=None, crg=None, dirsim=None,
        success_rate=100.0 * teacher_valid / len(records), overhead=None,
        agreement=100.0, twin_integer_agreement=None, bits_per_weight=32.0, size_mb=teacher_size_bytes / 1e6,
        latency_batch1_ms=median_latency_ms(teacher, batch1, settings.latency_repeats),
        latency_batch32_ms=median_latency_ms(teacher, batch32, settings.latency_repeats),
        integer_kernels=False, n=len(records), s=teacher_valid, b=0,
    )]
    columns = {method: record_columns(records, method) for method in students}
    reference_seconds = facts["ptq-int8"].make_seconds if "ptq-int8" in facts else None
    for method, student in students.items():
        summary = columns[method].summary()
        student_decisions = all_decisions(student.decider, images)
        per_attribute = {}
        for attribute in settings.attributes:
            index = torch.tensor([r["attribute"] == attribute for r in records])
            if bool(index.any()):
                per_attribute[attribute] = columns[method].select(index).summary().to_dict()
        fact = facts[method]
        rows.append(BenchmarkRow(
            method=method, acc=mean_accuracy(student_decisions, labels), vd=summary.vd, crg=summary.crg,
            dirsim=summary.dirsim, success_rate=summary.success_rate,
            overhead=overhead(train_seconds, fact.make_seconds, reference_seconds) if reference_seconds is not None else None,
            agreement=agreement(teacher_decisions, student_decisions),
            twin_integer_agreement=agreement(all_decisions(student.twin, images), student_decisions),
            bits_per_weight=fact.bits_per_weight, size_mb=fact.size_bytes / 1e6,
            latency_batch1_ms=median_latency_ms(student.decider, batch1, settings.latency_repeats),
            latency_batch32_ms=median_latency_ms(student.decider, batch32, settings.latency_repeats),
            integer_kernels=fact.integer_kernels, n=summary.n, s=summary.s, b=summary.b,
            per_attribute=per_attribute, details=fact.details,
            intervals=bootstrap_intervals(columns[method]),
            paired={reference: _versus(columns[method], columns[reference]) for reference in PAIRED_REFERENCES
                    if reference in students and reference != method},
        ))
    return rows


def _versus(mine: RecourseColumns, theirs: RecourseColumns) -> dict:
    values, base = mine.summary().to_dict(), theirs.summary().to_dict()
    intervals = bootstrap_intervals(mine, theirs)
    return {m: [values[m] - base[m], *intervals[m]] for m in RECOURSE_METRICS}
