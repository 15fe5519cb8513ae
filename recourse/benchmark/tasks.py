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

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from recourse.audit.paired import (
    PARTIAL_FRACTIONS, RecourseColumns, Student, boundary_logits, flip_targets, student_recourse,
)
from recourse.benchmark.semantic import JudgeReadings, RegisteredFamily, is_judged, judge_counterfactuals
from recourse.caches import CacheMismatch, arrays_digest, check_fields, discard, json_digest, read_tensors, write_tensors
from recourse.data import DEFAULT_ATTRIBUTES, HELD_OUT_ATTRIBUTES, attribute_index, to_float_images
from recourse.generation import CounterfactualConfig, FaceGenerator, generate
from recourse.validation import check_int

FP32 = "fp32"
STUDENT_STOPS = ("decider", "twin")
SEED_LEVELS = ("parametric", "resample")
TASK_WEIGHTS = ("multinomial", "dirichlet")
# "On the noise floor" means a paired difference against the noise control within these
# margins by TOST: half a typical 4-bit VD and FA, a tenth of a logit, a fifth of a typical
# CRG, 2 points of DirSim (docs/metrics.md). Stated before the final run, recorded with it.
EQUIVALENCE_MARGINS: tuple[tuple[str, float], ...] = (
    ("vd", 2.0), ("fa_75", 5.0), ("logit_gap", 0.1), ("crg", 0.02), ("dirsim_moved", 2.0))
# The analysis version: how a run's families are compared and its claims counted
# (recourse.benchmark.comparison; docs/metrics.md, "Analysis versions"). LEGACY_ANALYSIS: seed k
# of a family against seed k mod K of the other (so the two orders differ), every test a claim,
# TOST apart. ANALYSIS, the default: family means in either order, claims without duplicates or
# 0-against-0, TOST inside the correction families. A run records its version, so that every
# record keeps the numbers it was written with.
LEGACY_ANALYSIS = "v1"
ANALYSIS = "v2"
ANALYSES = (LEGACY_ANALYSIS, ANALYSIS)
# The versions as records written before they had names spell them (a record format: kept so
# that those records read back).
DATED_ANALYSES = {"2026-12-02": LEGACY_ANALYSIS, "2026-12-03": ANALYSIS}
# The value a record that lacks one of these settings was made with (BenchmarkSettings.from_record).
LEGACY_SETTINGS = {"student_stop": "twin", "noise_draws": 1, "noise_match_split": None, "seed_level": "resample",
                   "task_weights": "multinomial", "equivalence_margins": (), "analysis": LEGACY_ANALYSIS,
                   "matched_noise": ()}
# the generation settings' likewise: the cone walk, and edits over the whole frame
LEGACY_COUNTERFACTUAL = {"method": "pca-walk-cone", "region_mask": False}


@dataclass(frozen=True)
class BenchmarkSettings:
    """Everything that changes the benchmark's recourse numbers."""

    n: int = 500
    first_task: int = 0  # tasks first_task … first_task + n − 1
    attributes: tuple[str, ...] = (*DEFAULT_ATTRIBUTES, *HELD_OUT_ATTRIBUTES)
    seen_attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES  # those of the recourse points
    margins: tuple[float, ...] = ()  # the margin sweep (teacher recourse only); empty: none
    noise_control: str | None = "ptq-int4"  # the variant whose agreement the noise control matches; None: no control
    bootstrap_samples: int = 1000  # resamples of every interval
    chunk_size: int = 20
    counterfactual: CounterfactualConfig = CounterfactualConfig()
    latency_repeats: int = 15
    # Where the student's own edit x'_g stops: on the model whose decisions are scored
    # ("decider", the integer model where there is one, as the audit does) or on its
    # differentiable twin ("twin", that of a record without this setting; LEGACY_SETTINGS).
    student_stop: str = "decider"
    noise_draws: int = 3  # noise controls (fp32-noise, fp32-noise-s1, ...): one family of draws
    noise_match_split: str | None = "val"  # the split the control's sigma is matched on; None: the run's own images
    # Variants that get a noise floor of their own: noise_draws draws matched to that
    # variant's agreement (rows fp32-noise@<variant>, fp32-noise-s1@<variant>, ...), against which
    # its TOST is read instead of against the noise control, matched to noise_control's
    # agreement only. The noise control stays (the sweep's band and margin rule read it alone);
    # noise_control itself needs none (its floor is the noise control). Empty: none.
    matched_noise: tuple[str, ...] = ()
    seed_level: str = "parametric"  # "parametric" (s/√k · t_{k−1}) or "resample" (the seeds resampled)
    task_weights: str = "multinomial"  # the task level: "multinomial" (ordinary bootstrap) or "dirichlet" (Bayesian)
    # TOST margins of "on the noise floor" (stated before the run; docs/metrics.md); empty: no test
    equivalence_margins: tuple[tuple[str, float], ...] = EQUIVALENCE_MARGINS
    analysis: str = ANALYSIS  # how families are compared and claims counted (ANALYSES); no chunk depends on it
    # The registered primary family (recourse.benchmark.semantic), read from its file
    # before the run: its claims are corrected by Holm over exactly themselves and every other
    # claim is secondary. None: the claims on all tasks are the primary family, those of the
    # attribute groups the secondary one (recourse.benchmark.claims). No chunk depends on it.
    primary_family: RegisteredFamily | None = None

    def __post_init__(self) -> None:
        # a record's older spelling of its analysis reads as the version it names
        object.__setattr__(self, "analysis", analysis_version(self.analysis))
        check_int("n", self.n, 1, 1_000_000)  # CelebA has 202,599 photos
        check_int("first_task", self.first_task, 0, 1_000_000)
        check_int("chunk_size", self.chunk_size, 1, 10_000)
        check_int("latency_repeats", self.latency_repeats, 1, 10_000)
        check_int("bootstrap_samples", self.bootstrap_samples, 10, 100_000)
        if not isinstance(self.attributes, tuple) or not self.attributes:
            raise ValueError(f"attributes must be a non-empty tuple of names, got {self.attributes!r}")
        for attribute in self.attributes:
            if not isinstance(attribute, str):
                raise ValueError(f"attribute names must be strings, got {attribute!r}")
            attribute_index(attribute)
        if len(set(self.attributes)) != len(self.attributes):
            raise ValueError(f"attributes must not repeat, got {', '.join(self.attributes)}")
        if not isinstance(self.seen_attributes, tuple):
            raise ValueError(f"seen_attributes must be a tuple of attribute names, got {self.seen_attributes!r}")
        for attribute in self.seen_attributes:
            attribute_index(attribute)
        if not isinstance(self.margins, tuple) or len(self.margins) > 20 or len(set(self.margins)) != len(self.margins):
            raise ValueError(f"margins must be a tuple of at most 20 distinct margins, got {self.margins!r}")
        for margin in self.margins:
            CounterfactualConfig(margin=margin)  # the same bounds as a margin of the generator
        if not isinstance(self.counterfactual, CounterfactualConfig):
            raise ValueError(f"counterfactual must be a CounterfactualConfig, got {type(self.counterfactual).__name__}")
        if self.student_stop not in STUDENT_STOPS:
            raise ValueError(f"student_stop must be one of {', '.join(STUDENT_STOPS)}, got {self.student_stop!r}")
        check_int("noise_draws", self.noise_draws, 1, 100)
        if self.noise_match_split not in (None, "train", "val", "test"):
            raise ValueError(f"noise_match_split must be train, val, test or None, got {self.noise_match_split!r}")
        if not isinstance(self.matched_noise, tuple) or len(self.matched_noise) > 100 or \
                not all(isinstance(v, str) and v for v in self.matched_noise) or \
                len(set(self.matched_noise)) != len(self.matched_noise):
            raise ValueError(f"matched_noise must be a tuple of distinct variant names, got {self.matched_noise!r}")
        if self.seed_level not in SEED_LEVELS:
            raise ValueError(f"seed_level must be one of {', '.join(SEED_LEVELS)}, got {self.seed_level!r}")
        if self.task_weights not in TASK_WEIGHTS:
            raise ValueError(f"task_weights must be one of {', '.join(TASK_WEIGHTS)}, got {self.task_weights!r}")
        if not isinstance(self.equivalence_margins, tuple) or not all(
                isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], (int, float)) and 0 < pair[1] < float("inf") for pair in self.equivalence_margins):
            raise ValueError(f"equivalence_margins must be a tuple of (metric, positive margin), "
                             f"got {self.equivalence_margins!r}")
        if self.analysis not in ANALYSES:
            raise ValueError(f"analysis must be one of {', '.join(ANALYSES)}, got {self.analysis!r}")
        if self.primary_family is not None and not isinstance(self.primary_family, RegisteredFamily):
            raise ValueError(f"primary_family must be a RegisteredFamily, got {type(self.primary_family).__name__}")

    @classmethod
    def from_record(cls, recorded: dict) -> "BenchmarkSettings":
        """The settings a ``benchmark.json`` recorded. A setting it does not name takes the
        value the run was made with (:data:`LEGACY_SETTINGS`, :data:`LEGACY_COUNTERFACTUAL`), so
        that every record keeps meaning what it meant: the cone walk, the twin's stop, one noise
        draw matched on the run's own images (and no noise floor matched to another variant),
        the seeds resampled, and the statistics of :data:`LEGACY_ANALYSIS` (so that the command
        rebuilt from it, ``recourse.cli.reproduction``, names that analysis and gives back the
        record's numbers)."""
        values = {**LEGACY_SETTINGS, **recorded}
        values["counterfactual"] = CounterfactualConfig(**{**LEGACY_COUNTERFACTUAL, **values.get("counterfactual", {})})
        for name in ("attributes", "seen_attributes", "margins", "matched_noise"):
            values[name] = tuple(values[name])
        values["equivalence_margins"] = tuple((str(m), float(v)) for m, v in values["equivalence_margins"])
        if values.get("primary_family") is not None:
            values["primary_family"] = RegisteredFamily.from_dict(values["primary_family"])
        return cls(**values)

    def student_inputs(self) -> dict[str, str]:
        """What keys a student's cached part besides the teacher's inputs and its weights: the
        stop, where it is not the twin's (so that the parts cached on the twin keep their keys)."""
        return {} if self.student_stop == "twin" else {"student_stop": self.student_stop}

    def fingerprint(self, inputs: dict[str, str]) -> str:
        """Identifies what a cached part was computed with (these settings and ``inputs``).
        What does not change a chunk's content is left out: which tasks and how many (task
        ``i`` is the same in any run that has it, so a run can be extended, cut or shifted),
        the sweep's margins, the controls' choice (each noise draw keys its own part by its
        details), the latency repeats and the statistics."""
        ignored = ("n", "first_task", "margins", "noise_control", "latency_repeats", "bootstrap_samples",
                   # a student's stop keys its own part (student_inputs); the noise draws key
                   # theirs by their details; the rest only changes the table, not a chunk
                   "student_stop", "noise_draws", "noise_match_split", "matched_noise", "seed_level",
                   "task_weights", "equivalence_margins", "analysis", "primary_family")
        settings = {k: v for k, v in asdict(self).items() if k not in ignored}
        text = json.dumps({"settings": settings, "inputs": inputs}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def analysis_version(value: str) -> str:
    """The analysis version ``value`` names: one of :data:`ANALYSES`, or the date by which a
    record written before the versions had names spells it (:data:`DATED_ANALYSES`). Any other
    value is returned as it is, for the caller to refuse."""
    return DATED_ANALYSES.get(value, value) if isinstance(value, str) else value


def recorded_analysis(settings: dict) -> str:
    """The analysis version a record's statistics were made with: its ``analysis``, or
    :data:`LEGACY_ANALYSIS` where it names none."""
    return analysis_version(settings.get("analysis", LEGACY_ANALYSIS))


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
                  **_teacher_judge_record(fp32, k), "students": {}}
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


def _teacher_judge_record(part: dict[str, torch.Tensor], k: int) -> dict:
    """Task ``k``'s teacher readings as a task record keeps them (None where not judged)."""
    seen = float(part["judge_seen"][k])
    return {"teacher_judge_seen": None if math.isnan(seen) else bool(seen),
            "teacher_judge_score": _finite_or_none(part["judge_score"][k]),
            "teacher_judge_shift": _finite_or_none(part["judge_shift"][k])}


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
