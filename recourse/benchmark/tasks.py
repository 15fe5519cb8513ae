"""The benchmark's recourse tasks, computed in resumable chunks by the paired core.

Task ``i`` is image ``i`` of the split with attribute ``attributes[i % len(attributes)]``,
target ``1 − d^f_a(x)`` and seed ``counterfactual.seed + i``; a run takes the ``n`` tasks
from ``first_task`` on, so a second run on other faces is ``first_task = n``. The
attributes are the four the counterfactual-aware methods saw recourse points of
(``seen_attributes``) and eight held out; the table reports both groups separately. Each
chunk's teacher part and each student's part are cached separately, so an interrupted run
resumes, a rebuilt variant recomputes only its own part, and chunks can be shared between
processes. A chunk's result does not depend on which process computes it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from recourse.audit.paired import (
    PARTIAL_FRACTIONS, RecourseColumns, Student, boundary_logits, flip_targets, student_recourse,
)
from recourse.benchmark.semantic import JudgeReadings, is_judged, judge_calibration, judge_counterfactuals
from recourse.benchmark.settings import FP32, BenchmarkSettings
from recourse.caches import CacheMismatch, arrays_digest, check_fields, discard, json_digest, read_tensors, write_tensors
from recourse.data import to_float_images
from recourse.generation import FaceGenerator, generate

def chunk_bounds(settings: BenchmarkSettings, available: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of this run's tasks, given ``available`` images."""
    if settings.first_task >= available:
        raise ValueError(f"first_task {settings.first_task} is past the split's {available} images")
    stop = min(settings.first_task + settings.n, available)
    return [(start, min(start + settings.chunk_size, stop))
            for start in range(settings.first_task, stop, settings.chunk_size)]


def attribute_groups(first_task: int, count: int, settings: BenchmarkSettings) -> list[tuple[str, list[int]]]:
    """Rows of a chunk by attribute (task ``i`` has attribute ``i mod len(attributes)``)."""
    slots = [(first_task + k) % len(settings.attributes) for k in range(count)]
    return [(a, [k for k, s in enumerate(slots) if s == slot]) for slot, a in enumerate(settings.attributes)
            if slot in slots]


def _seeds(settings: BenchmarkSettings, first_task: int, rows: list[int]) -> tuple[int, ...]:
    return tuple(settings.counterfactual.seed + first_task + k for k in rows)


def teacher_part(images: torch.Tensor, first_task: int, teacher: nn.Module, settings: BenchmarkSettings,
                 generator: FaceGenerator | None) -> dict[str, torch.Tensor]:
    """Targets, teacher counterfactuals ``x'_f``, their validity and cost, the teacher's logit at
    ``x'_f`` and at the partial edits, and the judges' readings of ``x'_f`` (:func:`teacher_readings`),
    for one chunk."""
    counterfactuals = torch.empty_like(images)
    target, valid, cost, logit = (torch.zeros(len(images)) for _ in range(4))
    partial = torch.zeros(len(images), len(PARTIAL_FRACTIONS))
    for attribute, rows in attribute_groups(first_task, len(images), settings):
        chosen = flip_targets(teacher, images[rows], attribute)
        result = generate(images[rows], teacher, attribute, chosen, settings.counterfactual, generator,
                          _seeds(settings, first_task, rows))
        counterfactuals[rows], target[rows] = result.images, chosen.float()
        valid[rows], cost[rows] = result.valid.float(), result.cost.float()
        logit[rows], partial[rows] = boundary_logits(teacher, images[rows], result.images, attribute)
    part = {"counterfactuals": counterfactuals, "target": target, "valid": valid, "cost": cost, "logit": logit,
            "partial": partial}
    return {**part, **teacher_readings(images, first_task, part, settings)}


def teacher_readings(images: torch.Tensor, first_task: int, part: dict[str, torch.Tensor],
                     settings: BenchmarkSettings) -> dict[str, torch.Tensor]:
    """The judges' readings of a chunk's teacher counterfactuals ``part["counterfactuals"]``
    (:mod:`recourse.benchmark.semantic`), float64 ``(N,)`` each: the judge's score of ``x``
    (``judge_face``, which the students' readings reuse) and of ``x'_f``, seen (1 or 0) and the
    shift; NaN on the tasks whose attribute has no judge, which are not scored at all."""
    face, score, seen, shift = (torch.full((len(images),), math.nan, dtype=torch.float64) for _ in range(4))
    for attribute, rows in attribute_groups(first_task, len(images), settings):
        read = judge_counterfactuals(images[rows], part["counterfactuals"][rows], attribute,
                                     part["target"][rows].long())
        if read is not None:
            for column, values in ((face, read.before), (score, read.score), (seen, read.seen), (shift, read.shift)):
                column[rows] = torch.as_tensor(np.asarray(values, np.float64))
    return {"judge_face": face, "judge_score": score, "judge_seen": seen, "judge_shift": shift}


def student_part(images: torch.Tensor, first_task: int, teacher: dict[str, torch.Tensor], student: Student,
                 settings: BenchmarkSettings, generator: FaceGenerator | None,
                 earlier: list[dict] | None = None) -> list[dict]:
    """The student's own recourse (same seeds), its view of the teacher's, and the judge's
    readings of its own recourse (None where the attribute has no judge), per task. ``earlier``:
    this part as cached without the judges' readings; its tasks without a judge are kept as
    they are (there is nothing to read) and only the others are made again."""
    records: list[dict] = [{} for _ in range(len(images))]
    for attribute, rows in attribute_groups(first_task, len(images), settings):
        if earlier is not None and not is_judged(attribute, images.shape[-1]):
            for k in rows:
                records[k] = {**earlier[k], **_judge_record(None, 0)}
            continue
        result = student_recourse(images[rows], attribute, teacher["target"][rows].long(),
                                  teacher["counterfactuals"][rows], student, settings.counterfactual, generator,
                                  _seeds(settings, first_task, rows),
                                  # "decider" stops where validity is scored, as the audit does;
                                  # "twin" reproduces the records made on the differentiable twin
                                  stop_on_decider=settings.student_stop == "decider")
        # the judge's score of x is the teacher part's where it has one (read once for every row)
        read = judge_counterfactuals(images[rows], result.counterfactuals, attribute, teacher["target"][rows].long(),
                                     before=teacher["judge_face"][rows].numpy() if "judge_face" in teacher else None)
        for position, k in enumerate(rows):
            records[k] = {"accepts_teacher": bool(result.accepts_teacher[position]),
                          "valid": bool(result.valid[position]), "cost": float(result.cost[position]),
                          "cosine": float(result.cosine[position]),
                          "logit": float(result.logit_on_teacher[position]),
                          "partial": [float(v) for v in result.partial_on_teacher[position]],
                          **_judge_record(read, position)}
    return records


def _judge_record(read: JudgeReadings | None, position: int) -> dict:
    """A task's judge readings as a student record keeps them (JSON: None where there is no judge,
    and for the score and shift where the judge found no face)."""
    if read is None:
        return {"judge_score": None, "judge_seen": None, "judge_shift": None}
    return {"judge_score": _finite_or_none(read.score[position]), "judge_seen": bool(read.seen[position]),
            "judge_shift": _finite_or_none(read.shift[position])}


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def cached_teacher_part(x: torch.Tensor, start: int, teacher: nn.Module, settings: BenchmarkSettings,
                        generator: FaceGenerator | None, cache_dir: Path, fingerprint: str) -> dict[str, torch.Tensor]:
    """:func:`teacher_part` of the chunk at ``start``, read from ``cache_dir`` when it was made
    with the same ``fingerprint``, else made and cached."""
    path = cache_dir / f"{FP32}-{start:06d}-{fingerprint}.safetensors"
    fields = {"tasks": len(x), "first_task": start, "fingerprint": fingerprint}
    part = _cached_teacher_part(path, fields, tuple(x.shape))
    if part is None:
        part = teacher_part(x, start, teacher, settings, generator)
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_tensors(path, part, fields)
    elif not _JUDGE_KEYS <= set(part):
        # cached without the judges' readings: its counterfactuals are read, none is made again
        part = {**part, **teacher_readings(x, start, part, settings)}
        write_tensors(path, part, fields)
    return part


def task_records(images: torch.Tensor, teacher: nn.Module, students: dict[str, Student],
                 settings: BenchmarkSettings, generator: FaceGenerator | None, cache_dir: Path,
                 fingerprints: dict[str, str], rank: int = 0, world: int = 1,
                 progress: Callable[[int, int], None] | None = None, kept_dir: Path | None = None) -> list[dict]:
    """This process's share of the task records (every ``world``-th chunk from ``rank``).
    The teacher's part of each chunk and each student's part are cached separately (keyed
    by ``fingerprints["fp32"]`` and ``fingerprints[method]``). With ``kept_dir``, the parts
    that hold no picture go there instead: each student's, and the teacher's without its
    counterfactuals (:func:`teacher_summary`). That folder is small enough to commit, so a run
    longer than a session goes on in the next: a chunk whose students' parts are all kept needs
    no counterfactual of the teacher; one that lacks some makes the teacher's part again and,
    where its counterfactuals are not those the kept parts were made against, those parts too."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    if kept_dir is not None:
        kept_dir.mkdir(parents=True, exist_ok=True)
    chunks = chunk_bounds(settings, len(images))[rank::world]
    records: list[dict] = []
    for done, (start, stop) in enumerate(chunks):
        x = to_float_images(images[start:stop])
        parts_dir = kept_dir or cache_dir
        paths = {method: parts_dir / f"{method}-{start:06d}-{fingerprints[method]}.json" for method in students}
        fields = {method: {"method": method, "tasks": stop - start, "first_task": start,
                           "fingerprint": fingerprints[method]} for method in students}
        parts = {method: _cached_student_part(paths[method], fields[method]) for method in students}
        complete = all(part is not None and all(_JUDGE_RECORD_KEYS <= set(r) for r in part) for part in parts.values())
        fp32 = None
        if kept_dir is not None and complete:
            fp32 = kept_teacher_summary(kept_dir, x, start, fingerprints[FP32])
        if fp32 is None:
            fp32 = cached_teacher_part(x, start, teacher, settings, generator, cache_dir, fingerprints[FP32])
            if kept_dir is not None and not keep_teacher_summary(kept_dir, fp32, x, start, fingerprints[FP32]):
                parts = {method: None for method in students}  # made against other counterfactuals
        chunk = [{"task": start + k, "attribute": a, "target": int(fp32["target"][k]),
                  "teacher_valid": bool(fp32["valid"][k]), "teacher_cost": float(fp32["cost"][k]),
                  "teacher_logit": float(fp32["logit"][k]), "teacher_partial": [float(v) for v in fp32["partial"][k]],
                  **_teacher_judge_record(fp32, k, a), "students": {}}
                 for a, rows in attribute_groups(start, stop - start, settings) for k in rows]
        chunk.sort(key=lambda r: r["task"])
        for method, student in students.items():
            part = parts[method]
            if part is None or not all(_JUDGE_RECORD_KEYS <= set(r) for r in part):
                # none, or one cached without the judges' readings: made, or completed
                part = student_part(x, start, fp32, student, settings, generator, earlier=part)
                path = paths[method]
                path.with_suffix(".tmp").write_text(json.dumps({**fields[method], "sha256": json_digest(part),
                                                                "records": part}))
                path.with_suffix(".tmp").replace(path)
            for record, values in zip(chunk, part):
                record["students"][method] = values
        records += chunk
        if progress:
            progress(done + 1, len(chunks))
    return records


def _summary_path(kept_dir: Path, start: int, fingerprint: str) -> Path:
    return kept_dir / f"{FP32}-{start:06d}-{fingerprint}.summary.safetensors"


def teacher_summary(part: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The teacher's part without its counterfactuals (pictures of real faces): what a chunk's
    task records read when every student's part is already made."""
    return {name: tensor for name, tensor in part.items() if name != "counterfactuals"}


def keep_teacher_summary(kept_dir: Path, part: dict[str, torch.Tensor], x: torch.Tensor, start: int,
                         fingerprint: str) -> bool:
    """Keep the teacher's summary with the digest of its counterfactuals; False where one was
    kept before for other counterfactuals (the kept students' parts were made against those)."""
    digest = arrays_digest({"counterfactuals": part["counterfactuals"].contiguous()})
    path = _summary_path(kept_dir, start, fingerprint)
    earlier = kept_teacher_summary(kept_dir, x, start, fingerprint, with_digest=True)
    if earlier is not None and earlier[1] == digest:
        return True
    write_tensors(path, teacher_summary(part), {"tasks": len(x), "first_task": start, "fingerprint": fingerprint,
                                                "counterfactuals_sha256": digest})
    return earlier is None


def kept_teacher_summary(kept_dir: Path, x: torch.Tensor, start: int, fingerprint: str, with_digest: bool = False):
    """The kept teacher summary of the chunk at ``start`` (with its counterfactuals' digest where
    asked), or None where there is none that matches."""
    path = _summary_path(kept_dir, start, fingerprint)
    if not path.is_file():
        return None
    try:
        summary, metadata = read_tensors(path, {"tasks": len(x), "first_task": start, "fingerprint": fingerprint})
        if set(summary) not in (_TEACHER_KEYS - {"counterfactuals"}, (_TEACHER_KEYS - {"counterfactuals"}) | _JUDGE_KEYS) \
                or any(len(tensor) != len(x) for tensor in summary.values()):
            raise CacheMismatch("its tensors are not a teacher summary of this chunk")
    except CacheMismatch as error:
        discard(path, str(error))
        return None
    return (summary, metadata.get("counterfactuals_sha256")) if with_digest else summary


def _teacher_judge_record(part: dict[str, torch.Tensor], k: int, attribute: str) -> dict:
    """Task ``k``'s teacher readings as a task record keeps them (None where not judged), and
    whether the judge already sees the face itself on the target's side (``teacher_judge_face_seen``,
    at the judge's calibrated threshold; None where not judged or no face was found in it)."""
    seen = float(part["judge_seen"][k])
    face = float(part["judge_face"][k])
    face_seen = None
    if not math.isnan(seen) and math.isfinite(face):
        from recourse.instruments.calibration import seen as seen_by

        face_seen = bool(seen_by(np.array([face]), judge_calibration(attribute).threshold, int(part["target"][k]))[0])
    return {"teacher_judge_seen": None if math.isnan(seen) else bool(seen),
            "teacher_judge_score": _finite_or_none(part["judge_score"][k]),
            "teacher_judge_shift": _finite_or_none(part["judge_shift"][k]),
            "teacher_judge_face_seen": face_seen}


# Cached parts are checked before use: a part whose key, task count or checksum does not
# match (edited, truncated, copied from another run, an older format) is recomputed.
_TEACHER_KEYS = {"counterfactuals", "target", "valid", "cost", "logit", "partial"}
_STUDENT_TYPES = {"accepts_teacher": bool, "valid": bool, "cost": float, "cosine": float, "logit": float,
                  "partial": list}
# The judges' readings. A cached part without them is completed:
# the teacher's by reading its cached counterfactuals, a student's by making its judged tasks again.
_JUDGE_KEYS = {"judge_face", "judge_score", "judge_seen", "judge_shift"}
_JUDGE_RECORD_TYPES = {"judge_score": float, "judge_seen": bool, "judge_shift": float}  # or None
_JUDGE_RECORD_KEYS = set(_JUDGE_RECORD_TYPES)


def _cached_teacher_part(path: Path, fields: dict, shape: tuple[int, ...]) -> dict[str, torch.Tensor] | None:
    if not path.is_file():
        return None
    try:
        part, _ = read_tensors(path, fields)
        if set(part) not in (_TEACHER_KEYS, _TEACHER_KEYS | _JUDGE_KEYS) or \
                tuple(part["counterfactuals"].shape) != shape or \
                tuple(part["partial"].shape) != (shape[0], len(PARTIAL_FRACTIONS)) or \
                any(tuple(part[k].shape) != shape[:1] for k in set(part) - {"counterfactuals", "partial"}):
            raise CacheMismatch("its tensors are not a teacher part of this chunk")
        return part
    except CacheMismatch as error:
        discard(path, str(error))
        return None


def _cached_student_part(path: Path, fields: dict) -> list[dict] | None:
    if not path.is_file():
        return None
    try:
        try:
            stored = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CacheMismatch(f"unreadable: {error}") from None
        if not isinstance(stored, dict):
            raise CacheMismatch("not a checked part (an older format)")
        check_fields(stored, fields)
        records = stored.get("records")
        if not isinstance(records, list) or json_digest(records) != stored.get("sha256"):
            raise CacheMismatch("its content does not match its checksum")
        if len(records) != fields["tasks"] or not all(
                isinstance(r, dict) and set(r) in (set(_STUDENT_TYPES), set(_STUDENT_TYPES) | _JUDGE_RECORD_KEYS)
                and all(type(r[k]) is t or (t is float and type(r[k]) is int) for k, t in _STUDENT_TYPES.items())
                and all(r[k] is None or type(r[k]) is t or (t is float and type(r[k]) is int)
                        for k, t in _JUDGE_RECORD_TYPES.items() if k in r)
                and len(r["partial"]) == len(PARTIAL_FRACTIONS)
                and all(type(v) in (float, int) for v in r["partial"])
                for r in records):
            raise CacheMismatch("its records are not a student part of this chunk")
        return records
    except CacheMismatch as error:
        discard(path, str(error))
        return None


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
        teacher_logit=torch.tensor([r["teacher_logit"] for r in records], dtype=torch.float64),
        student_logit=torch.tensor([s["logit"] for s in student], dtype=torch.float64),
        teacher_partial=torch.tensor([r["teacher_partial"] for r in records], dtype=torch.float64).view(-1, len(PARTIAL_FRACTIONS)),
        student_partial=torch.tensor([s["partial"] for s in student], dtype=torch.float64).view(-1, len(PARTIAL_FRACTIONS)),
    )
