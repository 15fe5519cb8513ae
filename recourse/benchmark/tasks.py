"""The benchmark's recourse tasks, computed in resumable chunks by the paired core.

Task ``i`` is test image ``i`` (the first ``n``) with attribute ``attributes[i % len(attributes)]``,
target ``1 − d^f_a(x)`` and seed ``counterfactual.seed + i``. Each chunk's teacher part and
each student's part are cached separately, so an interrupted run resumes, a rebuilt
variant recomputes only its own part, and chunks can be shared between processes. A
chunk's result does not depend on which process computes it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from recourse.data import DEFAULT_ATTRIBUTES, attribute_index, to_float_images
from recourse.generation import CounterfactualConfig, FaceGenerator, generate
from recourse.paired import RecourseColumns, Student, flip_targets, student_recourse

FP32 = "fp32"


@dataclass(frozen=True)
class BenchmarkSettings:
    """Everything that changes the benchmark's recourse numbers."""

    n: int = 500
    attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES
    chunk_size: int = 20
    counterfactual: CounterfactualConfig = CounterfactualConfig()
    latency_repeats: int = 15

    def __post_init__(self) -> None:
        if self.n < 1 or self.chunk_size < 1 or self.latency_repeats < 1:
            raise ValueError(f"n, chunk_size and latency_repeats must be >= 1, got {self.n}, "
                             f"{self.chunk_size}, {self.latency_repeats}")
        if not self.attributes:
            raise ValueError("at least one attribute is needed")
        for attribute in self.attributes:
            attribute_index(attribute)

    def fingerprint(self, inputs: dict[str, str]) -> str:
        """Identifies what a cached part was computed with (these settings and ``inputs``)."""
        text = json.dumps({"settings": asdict(self), "inputs": inputs}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def attribute_groups(first_task: int, count: int, settings: BenchmarkSettings) -> list[tuple[str, list[int]]]:
    """Rows of a chunk by attribute (task ``i`` has attribute ``i mod len(attributes)``)."""
    slots = [(first_task + k) % len(settings.attributes) for k in range(count)]
    return [(a, [k for k, s in enumerate(slots) if s == slot]) for slot, a in enumerate(settings.attributes)
            if slot in slots]


def _seeds(settings: BenchmarkSettings, first_task: int, rows: list[int]) -> tuple[int, ...]:
    return tuple(settings.counterfactual.seed + first_task + k for k in rows)


def teacher_part(images: torch.Tensor, first_task: int, teacher: nn.Module, settings: BenchmarkSettings,
                 generator: FaceGenerator | None) -> dict[str, torch.Tensor]:
    """Targets, teacher counterfactuals ``x'_f``, their validity and cost for one chunk."""
    counterfactuals = torch.empty_like(images)
    target, valid, cost = (torch.zeros(len(images)) for _ in range(3))
    for attribute, rows in attribute_groups(first_task, len(images), settings):
        chosen = flip_targets(teacher, images[rows], attribute)
        result = generate(images[rows], teacher, attribute, chosen, settings.counterfactual, generator,
                          _seeds(settings, first_task, rows))
        counterfactuals[rows], target[rows] = result.images, chosen.float()
        valid[rows], cost[rows] = result.valid.float(), result.cost.float()
    return {"counterfactuals": counterfactuals, "target": target, "valid": valid, "cost": cost}


def student_part(images: torch.Tensor, first_task: int, teacher: dict[str, torch.Tensor], student: Student,
                 settings: BenchmarkSettings, generator: FaceGenerator | None) -> list[dict]:
    """The student's own recourse (same seeds) and its view of the teacher's, per task."""
    records: list[dict] = [{} for _ in range(len(images))]
    for attribute, rows in attribute_groups(first_task, len(images), settings):
        result = student_recourse(images[rows], attribute, teacher["target"][rows].long(),
                                  teacher["counterfactuals"][rows], student, settings.counterfactual, generator,
                                  _seeds(settings, first_task, rows))
        for position, k in enumerate(rows):
            records[k] = {"accepts_teacher": bool(result.accepts_teacher[position]),
                          "valid": bool(result.valid[position]), "cost": float(result.cost[position]),
                          "cosine": float(result.cosine[position])}
    return records


def task_records(images: torch.Tensor, teacher: nn.Module, students: dict[str, Student],
                 settings: BenchmarkSettings, generator: FaceGenerator | None, cache_dir: Path,
                 fingerprints: dict[str, str], rank: int = 0, world: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """This process's share of the task records (every ``world``-th chunk from ``rank``).
    The teacher's part of each chunk and each student's part are cached separately (keyed
    by ``fingerprints["fp32"]`` and ``fingerprints[method]``)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    n = min(settings.n, len(images))
    starts = list(range(0, n, settings.chunk_size))[rank::world]
    records: list[dict] = []
    for done, start in enumerate(starts):
        stop = min(start + settings.chunk_size, n)
        x = to_float_images(images[start:stop])
        path = cache_dir / f"{FP32}-{start:06d}-{fingerprints[FP32]}.safetensors"
        if path.is_file():
            fp32 = load_file(str(path))
        else:
            fp32 = teacher_part(x, start, teacher, settings, generator)
            save_file(fp32, str(path.with_suffix(".tmp")))
            path.with_suffix(".tmp").replace(path)
        chunk = [{"task": start + k, "attribute": a, "target": int(fp32["target"][k]),
                  "teacher_valid": bool(fp32["valid"][k]), "teacher_cost": float(fp32["cost"][k]),
                  "students": {}}
                 for a, rows in attribute_groups(start, stop - start, settings) for k in rows]
        chunk.sort(key=lambda r: r["task"])
        for method, student in students.items():
            path = cache_dir / f"{method}-{start:06d}-{fingerprints[method]}.json"
            if path.is_file():
                part = json.loads(path.read_text())
            else:
                part = student_part(x, start, fp32, student, settings, generator)
                path.with_suffix(".tmp").write_text(json.dumps(part))
                path.with_suffix(".tmp").replace(path)
            for record, values in zip(chunk, part):
                record["students"][method] = values
        records += chunk
        if progress:
            progress(done + 1, len(starts))
    return records


def record_columns(records: list[dict], method: str) -> RecourseColumns:
    """The per-task columns of one student from the task records."""
    student = [r["students"][method] for r in records]
    return RecourseColumns(
        target=torch.tensor([r["target"] for r in records], dtype=torch.long),
        teacher_valid=torch.tensor([r["teacher_valid"] for r in records], dtype=torch.bool),
        student_accepts_teacher=torch.tensor([s["accepts_teacher"] for s in student], dtype=torch.bool),
        student_valid=torch.tensor([s["valid"] for s in student], dtype=torch.bool),
        teacher_cost=torch.tensor([r["teacher_cost"] for r in records], dtype=torch.float64),
        student_cost=torch.tensor([s["cost"] for s in student], dtype=torch.float64),
        cosine=torch.tensor([s["cosine"] for s in student], dtype=torch.float64),
    )
