"""The benchmark: every compressed variant against the full-precision classifier, on
accuracy, recourse (VD, CRG, DirSim per ``metrics.md``), cost and speed.

Tasks: test image ``i`` (the first ``n``) with attribute ``attributes[i % len(attributes)]``,
target ``1 − d^f_a(x)`` and seed ``counterfactual.seed + i``. Tasks are processed in fixed
chunks; each chunk's teacher part and each student's part are cached, so an interrupted run
resumes, a rebuilt variant recomputes only its own part, and the chunks can be shared
between processes (Hugging Face Accelerate: each process takes
every K-th chunk, rank 0 gathers the records and computes the table). A chunk's result
does not depend on which process computes it.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from recourse.counterfactual import CounterfactualConfig, FaceGenerator, attribute_index, generate
from recourse.evaluation import to_float_images
from recourse.metrics import (agreement, both_valid, decisions, direction_cosines, mean_accuracy, overhead,
                              recourse_gap, success_rate, validity_drop)

FP32 = "fp32"


@dataclass(frozen=True)
class BenchmarkSettings:
    n: int = 500
    attributes: tuple[str, ...] = ("Smiling", "Young", "Male", "Eyeglasses")
    chunk_size: int = 20
    counterfactual: CounterfactualConfig = CounterfactualConfig()
    latency_repeats: int = 15

    def __post_init__(self) -> None:
        if self.n < 1 or self.chunk_size < 1 or self.latency_repeats < 1:
            raise ValueError(f"n, chunk_size and latency_repeats must be >= 1, got {self.n}, "
                             f"{self.chunk_size}, {self.latency_repeats}")
        for attribute in self.attributes:
            attribute_index(attribute)
        if not self.attributes:
            raise ValueError("at least one attribute is needed")

    def fingerprint(self, inputs: dict[str, str]) -> str:
        """Identifies what a cached part was computed with (these settings and ``inputs``)."""
        text = json.dumps({"settings": asdict(self), "inputs": inputs}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Student:
    """A variant as the benchmark sees it."""

    method: str
    twin: nn.Module  # guides the student's counterfactuals
    decider: nn.Module  # gives the student's decisions: integer kernels where they exist
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


# ---------------------------------------------------------------------------------------
# Per-task records
# ---------------------------------------------------------------------------------------


def _attribute_groups(first_task: int, count: int, settings: BenchmarkSettings) -> list[tuple[str, list[int]]]:
    """Rows of a chunk by attribute (task ``i`` has attribute ``i mod len(attributes)``)."""
    slots = [(first_task + k) % len(settings.attributes) for k in range(count)]
    return [(a, [k for k, s in enumerate(slots) if s == slot]) for slot, a in enumerate(settings.attributes)
            if slot in slots]


def teacher_chunk(images: torch.Tensor, first_task: int, teacher: nn.Module, settings: BenchmarkSettings,
                  generator: FaceGenerator | None) -> dict[str, torch.Tensor]:
    """Targets, teacher counterfactuals ``x'_f``, their validity and cost for one chunk."""
    counterfactuals = torch.empty_like(images)
    target, valid, cost = (torch.zeros(len(images)) for _ in range(3))
    for attribute, rows in _attribute_groups(first_task, len(images), settings):
        index = attribute_index(attribute)
        with torch.no_grad():
            chosen = (torch.sigmoid(teacher(images[rows])[:, index]) < 0.5).long()
        seeds = tuple(settings.counterfactual.seed + first_task + k for k in rows)
        result = generate(images[rows], teacher, attribute, chosen, settings.counterfactual, generator, seeds)
        counterfactuals[rows], target[rows] = result.images, chosen.float()
        valid[rows], cost[rows] = result.valid.float(), result.cost.float()
    return {"counterfactuals": counterfactuals, "target": target, "valid": valid, "cost": cost}


def student_chunk(images: torch.Tensor, first_task: int, teacher_part: dict[str, torch.Tensor], student: Student,
                  settings: BenchmarkSettings, generator: FaceGenerator | None) -> list[dict]:
    """The student's own counterfactuals (same seeds) and its view of the teacher's."""
    records: list[dict] = [{} for _ in range(len(images))]
    for attribute, rows in _attribute_groups(first_task, len(images), settings):
        index = attribute_index(attribute)
        target = teacher_part["target"][rows].long()
        seeds = tuple(settings.counterfactual.seed + first_task + k for k in rows)
        result = generate(images[rows], student.twin, attribute, target, settings.counterfactual, generator, seeds)
        teacher_counterfactuals = teacher_part["counterfactuals"][rows]
        with torch.no_grad():
            accepts = decisions(student.decider(teacher_counterfactuals))[:, index] == target
            valid = decisions(student.decider(result.images))[:, index] == target
        cosines = direction_cosines(teacher_counterfactuals - images[rows], result.images - images[rows])
        for position, k in enumerate(rows):
            records[k] = {"accepts_teacher": bool(accepts[position]), "valid": bool(valid[position]),
                          "cost": float(result.cost[position]), "cosine": float(cosines[position])}
    return records


def task_records(images: torch.Tensor, teacher: nn.Module, students: dict[str, Student],
                 settings: BenchmarkSettings, generator: FaceGenerator | None, cache_dir: Path,
                 fingerprints: dict[str, str], rank: int = 0, world: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """This process's share of the task records. The teacher's part of each chunk and each
    student's part are cached separately (keyed by ``fingerprints["fp32"]`` and
    ``fingerprints[method]``), so a rebuilt variant recomputes only its own records."""
    from safetensors.torch import load_file, save_file

    cache_dir.mkdir(parents=True, exist_ok=True)
    n = min(settings.n, len(images))
    starts = list(range(0, n, settings.chunk_size))[rank::world]
    records: list[dict] = []
    for done, start in enumerate(starts):
        stop = min(start + settings.chunk_size, n)
        x = to_float_images(images[start:stop])
        teacher_path = cache_dir / f"fp32-{start:06d}-{fingerprints['fp32']}.safetensors"
        if teacher_path.is_file():
            teacher_part = load_file(str(teacher_path))
        else:
            teacher_part = teacher_chunk(x, start, teacher, settings, generator)
            save_file(teacher_part, str(teacher_path.with_suffix(".tmp")))
            teacher_path.with_suffix(".tmp").replace(teacher_path)
        chunk = [{"task": start + k, "attribute": a, "target": int(teacher_part["target"][k]),
                  "teacher_valid": bool(teacher_part["valid"][k]), "teacher_cost": float(teacher_part["cost"][k]),
                  "students": {}}
                 for a, rows in _attribute_groups(start, stop - start, settings) for k in rows]
        chunk.sort(key=lambda r: r["task"])
        for method, student in students.items():
            path = cache_dir / f"{method}-{start:06d}-{fingerprints[method]}.json"
            if path.is_file():
                part = json.loads(path.read_text())
            else:
                part = student_chunk(x, start, teacher_part, student, settings, generator)
                path.with_suffix(".tmp").write_text(json.dumps(part))
                path.with_suffix(".tmp").replace(path)
            for record, values in zip(chunk, part):
                record["students"][method] = values
        records += chunk
        if progress:
            progress(done + 1, len(starts))
    return records


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------


def _columns(records: list[dict], method: str) -> dict[str, torch.Tensor]:
    student = [r["students"][method] for r in records]
    return {
        "teacher_valid": torch.tensor([r["teacher_valid"] for r in records], dtype=torch.bool),
        "teacher_cost": torch.tensor([r["teacher_cost"] for r in records], dtype=torch.float64),
        "accepts": torch.tensor([s["accepts_teacher"] for s in student], dtype=torch.bool),
        "valid": torch.tensor([s["valid"] for s in student], dtype=torch.bool),
        "cost": torch.tensor([s["cost"] for s in student], dtype=torch.float64),
        "cosine": torch.tensor([s["cosine"] for s in student], dtype=torch.float64),
    }


def _summary(c: dict[str, torch.Tensor]) -> dict:
    vd, s_size = validity_drop(c["teacher_valid"], c["accepts"])
    mask = both_valid(c["teacher_valid"], c["valid"])
    dirsim = 100.0 * float(c["cosine"][mask].mean()) if bool(mask.any()) else float("nan")
    return {"vd": vd, "crg": recourse_gap(c["teacher_cost"], c["cost"], mask), "dirsim": dirsim,
            "success_rate": success_rate(c["valid"]), "n": len(mask), "s": s_size, "b": int(mask.sum())}


def recourse_summary(records: list[dict], method: str) -> dict:
    """VD, CRG, DirSim, success rate, N, |S| and |B| of one student over ``records``."""
    return _summary(_columns(records, method))


RECOURSE_METRICS = ("vd", "crg", "dirsim")
# Paired comparisons: the 4-bit post-training baseline, and mixed-precision QAT without the
# recourse term (against which cfq-qat isolates that term).
PAIRED_REFERENCES = ("ptq-int4", "mixedprec-qat")


def bootstrap_intervals(records: list[dict], method: str, reference: str | None = None, samples: int = 2000,
                        seed: int = 0, level: float = 0.95) -> dict[str, list[float]]:
    """Percentile bootstrap over tasks: ``[low, high]`` of VD, CRG and DirSim of ``method``,
    or, with ``reference``, of the paired difference ``method − reference`` (the same
    resampled tasks for both, so what the two share does not count as noise)."""
    mine = _columns(records, method)
    theirs = _columns(records, reference) if reference else None
    generator = torch.Generator().manual_seed(seed)
    draws: dict[str, list[float]] = {m: [] for m in RECOURSE_METRICS}
    for _ in range(samples):
        index = torch.randint(len(records), (len(records),), generator=generator)
        values = _summary({k: v[index] for k, v in mine.items()})
        base = _summary({k: v[index] for k, v in theirs.items()}) if theirs else None
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


def benchmark_rows(records: list[dict], teacher: nn.Module, students: dict[str, Student], images: torch.Tensor,
                   labels: torch.Tensor, train_seconds: float, teacher_size_bytes: int,
                   settings: BenchmarkSettings) -> list[BenchmarkRow]:
    """One row for the teacher and one per student; accuracy on all of ``images``."""
    records = sorted(records, key=lambda r: r["task"])
    labels = labels.long()
    teacher_decisions = all_decisions(teacher, images)
    batch1, batch32 = to_float_images(images[:1]), to_float_images(images[:32])
    rows = [BenchmarkRow(
        method=FP32, acc=mean_accuracy(teacher_decisions, labels), vd=None, crg=None, dirsim=None,
        success_rate=100.0 * sum(r["teacher_valid"] for r in records) / len(records), overhead=None,
        agreement=100.0, twin_integer_agreement=None, bits_per_weight=32.0, size_mb=teacher_size_bytes / 1e6,
        latency_batch1_ms=median_latency_ms(teacher, batch1, settings.latency_repeats),
        latency_batch32_ms=median_latency_ms(teacher, batch32, settings.latency_repeats),
        integer_kernels=False, n=len(records), s=sum(r["teacher_valid"] for r in records), b=0,
    )]
    reference = students["ptq-int8"].make_seconds if "ptq-int8" in students else None
    for method, student in students.items():
        student_decisions = all_decisions(student.decider, images)
        twin_agreement = agreement(all_decisions(student.twin, images), student_decisions)
        summary = recourse_summary(records, method)
        per_attribute = {a: recourse_summary([r for r in records if r["attribute"] == a], method)
                         for a in settings.attributes if any(r["attribute"] == a for r in records)}
        rows.append(BenchmarkRow(
            method=method, acc=mean_accuracy(student_decisions, labels), vd=summary["vd"], crg=summary["crg"],
            dirsim=summary["dirsim"], success_rate=summary["success_rate"],
            overhead=overhead(train_seconds, student.make_seconds, reference) if reference is not None else None,
            agreement=agreement(teacher_decisions, student_decisions), twin_integer_agreement=twin_agreement,
            bits_per_weight=student.bits_per_weight,
            size_mb=student.size_bytes / 1e6,
            latency_batch1_ms=median_latency_ms(student.decider, batch1, settings.latency_repeats),
            latency_batch32_ms=median_latency_ms(student.decider, batch32, settings.latency_repeats),
            integer_kernels=student.integer_kernels, n=summary["n"], s=summary["s"], b=summary["b"],
            per_attribute=per_attribute, details=student.details,
            intervals=bootstrap_intervals(records, method),
            paired={reference: _versus(records, method, summary, reference) for reference in PAIRED_REFERENCES
                    if reference in students and reference != method},
        ))
    return rows


def _versus(records: list[dict], method: str, summary: dict, reference: str) -> dict:
    base = recourse_summary(records, reference)
    intervals = bootstrap_intervals(records, method, reference)
    return {m: [summary[m] - base[m], *intervals[m]] for m in RECOURSE_METRICS}


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "—"
    if value != value:  # NaN: undefined (empty S or B)
        return "n/a"
    return f"{value:.{digits}f}{suffix}"


def markdown_table(rows: list[BenchmarkRow]) -> str:
    header = ("| method | Acc % | VD % ↓ | CRG ↓ | DirSim % ↑ | student success % | Overhead | agreement % "
              "| twin/integer % | bits/weight | size MB | batch-1 ms | batch-32 ms | N | \\|S\\| | \\|B\\| |")
    lines = [header, "|" + "---|" * 16]
    for row in rows:
        kernels = "" if row.integer_kernels or row.method == FP32 else " (fake-quant)"
        lines.append(
            f"| {row.method} | {row.acc:.2f} | {_number(row.vd, 1)} | {_number(row.crg, 3)} | {_number(row.dirsim, 1)} "
            f"| {_number(row.success_rate, 1)} | {_number(row.overhead, 3, '×')} | {row.agreement:.2f} "
            f"| {_number(row.twin_integer_agreement, 2)} "
            f"| {row.bits_per_weight:.2f} | {row.size_mb:.2f} | {row.latency_batch1_ms:.2f}{kernels} "
            f"| {row.latency_batch32_ms:.1f}{kernels} | {row.n} | {row.s} | {'—' if row.method == FP32 else row.b} |")
    return "\n".join(lines)


def per_attribute_table(rows: list[BenchmarkRow]) -> str:
    attributes = list(next((r.per_attribute for r in rows if r.per_attribute), {}))
    lines = ["| method | " + " | ".join(f"{a} VD / CRG / DirSim" for a in attributes) + " |",
             "|---|" + "---|" * len(attributes)]
    for row in rows:
        if not row.per_attribute:
            continue
        cells = [f"{_number(v['vd'], 1)} / {_number(v['crg'], 3)} / {_number(v['dirsim'], 1)}"
                 for v in row.per_attribute.values()]
        lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def intervals_table(rows: list[BenchmarkRow]) -> str:
    """95% bootstrap intervals of VD, CRG and DirSim per method."""
    lines = ["| method | VD % [95% CI] | CRG [95% CI] | DirSim % [95% CI] |", "|---|---|---|---|"]
    for row in rows:
        if row.intervals:
            lines.append(f"| {row.method} | {_number(row.vd, 1)} {_interval(row.intervals['vd'], 1)} "
                         f"| {_number(row.crg, 3)} {_interval(row.intervals['crg'], 3)} "
                         f"| {_number(row.dirsim, 1)} {_interval(row.intervals['dirsim'], 1)} |")
    return "\n".join(lines)


def paired_table(rows: list[BenchmarkRow], reference: str) -> str:
    """Paired differences ``method − reference`` with their 95% bootstrap intervals."""
    lines = [f"| method − {reference} | ΔVD % | ΔCRG | ΔDirSim % |", "|---|---|---|---|"]
    for row in rows:
        versus = row.paired.get(reference)
        if versus:
            cells = [f"{_number(versus[m][0], d)} {_interval(versus[m][1:], d)}" for m, d in (("vd", 1), ("crg", 3), ("dirsim", 1))]
            lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _interval(values: list, digits: int) -> str:
    return f"[{_number(values[0], digits)}, {_number(values[1], digits)}]"


def markdown_report(rows: list[BenchmarkRow], heading: str) -> str:
    """``benchmark.md``: the table, its intervals, the paired comparisons, per attribute."""
    methods = {row.method for row in rows}
    paired = "".join(f"\n\nPaired with {reference} on the same tasks (95% bootstrap intervals):\n\n"
                     + paired_table(rows, reference) for reference in PAIRED_REFERENCES if reference in methods)
    return (f"{heading}\n\n{markdown_table(rows)}\n\nUncertainty (percentile bootstrap over tasks, 2,000 "
            f"resamples):\n\n{intervals_table(rows)}{paired}\n\nPer attribute (VD % / CRG / DirSim %):\n\n"
            f"{per_attribute_table(rows)}\n")
