"""``run_benchmark(config) -> BenchmarkResult``: every compressed variant against the
full-precision classifier, on accuracy, recourse (VD, CRG, DirSim per ``docs/metrics.md``),
cost and speed.

Runs on one process or several (Hugging Face Accelerate's ``PartialState``: each process
takes every K-th chunk of tasks, rank 0 gathers the records and builds the table).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from recourse.benchmark.rows import (
    BenchmarkRow, FamilyRow, VariantFacts, benchmark_rows, family_rows, model_decisions,
)
from recourse.benchmark.sweep import SweepPoint, sweep_points, sweep_records
from recourse.benchmark.tasks import FP32, BenchmarkSettings, task_records
from recourse.checkpoints import (
    CONFIG_FILE, WEIGHTS_FILE, CheckpointError, file_digest, folder_bytes, load_classifier, read_config,
)
from recourse.compression import METHODS, load_variant
from recourse.controls import matched_noise
from recourse.data import load_framed_split, to_float_images
from recourse.metrics import agreement, decisions
from recourse.paired import Student
from recourse.progress import Progress, silent
from recourse.paths import DEFAULT_CACHE, generator_dir, shown, teacher_dir, variants_dir

DEFINITIONS = "docs/metrics.md (VD = Validity Drop)"
NOISE_CONTROL = "fp32-noise"
NOISE_MATCH_IMAGES = 1000  # images the control's agreement is matched on
_VARIANT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class BenchmarkConfig:
    """A benchmark run: what to compute (``settings``) and where things are."""

    data: Path  # a CelebA-HQ or original CelebA folder
    out: Path  # benchmark.json, benchmark.md and the resumable cache go here
    split: str = "test"
    settings: BenchmarkSettings = BenchmarkSettings()
    variants: tuple[str, ...] = METHODS  # folders of variants_dir: a method's id, or a seed or ablation of it
    checkpoint: Path = field(default_factory=teacher_dir)
    variants_dir: Path = field(default_factory=variants_dir)
    generator: str = field(default_factory=lambda: str(generator_dir()))
    image_cache: Path | None = DEFAULT_CACHE  # decoded images
    command: str = ""  # recorded in the report

    def __post_init__(self) -> None:
        bad = [v for v in self.variants if not isinstance(v, str) or not _VARIANT_ID.match(v) or v in (FP32, NOISE_CONTROL)]
        if bad or not self.variants or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct folder names of {shown(self.variants_dir)} "
                             f"(e.g. {', '.join(METHODS[:3])}); got {', '.join(map(str, self.variants)) or 'none'}")


@dataclass(frozen=True)
class BenchmarkResult:
    """The table and how it was made."""

    date: str
    command: str
    split: str
    n: int
    attributes: tuple[str, ...]
    accuracy_images: int
    processes: int
    seconds: float
    settings: dict
    rows: tuple[BenchmarkRow, ...]
    definitions: str = DEFINITIONS
    families: tuple[FamilyRow, ...] = ()
    sweep: tuple[SweepPoint, ...] = ()

    def to_dict(self) -> dict:
        """JSON-ready: non-finite values (undefined metrics) are written as ``null``."""
        record = {
            "date": self.date, "command": self.command, "split": self.split, "n": self.n,
            "attributes": list(self.attributes), "accuracy_images": self.accuracy_images,
            "processes": self.processes, "seconds": self.seconds, "settings": self.settings,
            "definitions": self.definitions, "rows": [asdict(row) for row in self.rows],
        }
        if self.families:
            record["families"] = [asdict(family) for family in self.families]
        if self.sweep:
            # a sweep written before it had intervals is read and written back as it was
            record["sweep"] = [{k: v for k, v in asdict(point).items() if k != "intervals" or v} for point in self.sweep]
        return _finite(record)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "BenchmarkResult":
        """Read ``benchmark.json`` back, or raise ValueError saying what is wrong with it."""
        try:
            rows = tuple(BenchmarkRow(**row) for row in record["rows"])
            families = tuple(FamilyRow(**{**f, "variants": tuple(f["variants"]), "acc": tuple(f["acc"]),
                                          "agreement": tuple(f["agreement"])}) for f in record.get("families", ()))
            sweep = tuple(SweepPoint(**point) for point in record.get("sweep", ()))
            return cls(date=record["date"], command=record["command"], split=record["split"], n=int(record["n"]),
                       attributes=tuple(record["attributes"]), accuracy_images=int(record["accuracy_images"]),
                       processes=int(record["processes"]), seconds=float(record["seconds"]),
                       settings=dict(record["settings"]), rows=rows,
                       definitions=record.get("definitions", DEFINITIONS), families=families, sweep=sweep)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a benchmark record ({type(error).__name__}: {error})") from None


def _finite(value):
    """JSON has no NaN or infinity: an undefined value is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _load_students(config: BenchmarkConfig) -> tuple[dict[str, Student], dict[str, VariantFacts]]:
    students, facts = {}, {}
    for name in config.variants:
        directory = config.variants_dir / name
        if not (directory / CONFIG_FILE).is_file():
            raise CheckpointError(f"{shown(directory)}: variant not found; make it with "
                                  f"python -m scripts.make_variants --data PATH --only {name}")
        variant = load_variant(directory)
        details = {k: variant.details[k] for k in ("budget", "sparsity", "layer_bits", "layer_clip", "fine_tuning",
                                                   "recourse_objective", "storage", "activation_bits")
                   if k in variant.details}
        details["settings"] = asdict(variant.config)
        students[name] = Student.from_variant(name, variant)
        facts[name] = VariantFacts(variant.integer is not None, variant.bits_per_weight, variant.seconds,
                                   folder_bytes(directory), details, variant.config.method)
    return students, facts


def noise_control(teacher: torch.nn.Module, students: dict[str, Student], facts: dict[str, VariantFacts],
                  images: torch.Tensor, matched_to: str, size_bytes: int) -> tuple[Student, VariantFacts]:
    """The teacher with weight noise at ``matched_to``'s agreement with the teacher (on the
    first :data:`NOISE_MATCH_IMAGES` images), as a student row."""
    sample = to_float_images(images[:NOISE_MATCH_IMAGES])
    with torch.no_grad():
        target = agreement(decisions(teacher(sample)), decisions(students[matched_to].decider(sample)))
    control = matched_noise(teacher, sample, target)
    details = {"sigma": round(control.sigma, 6), "matched_to": matched_to, "target_agreement": round(target, 3),
               "agreement_on_matching_images": round(control.agreement, 3), "seed": control.seed,
               "matching_images": len(sample)}
    return (Student(NOISE_CONTROL, control.model, control.model),
            VariantFacts(False, 32.0, 0.0, size_bytes, details, "control"))


def run_benchmark(config: BenchmarkConfig, progress: Progress = silent) -> BenchmarkResult | None:
    """Run (or resume) the benchmark; writes ``benchmark.json`` under ``config.out``
    (:func:`recourse.render.benchmark.write_markdown` adds ``benchmark.md``). Returns the result on the main process and ``None`` on the others.
    ``progress(stage, done, total)`` reports the loading of images and the tasks."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    from recourse.generation import load_generator
    started = time.perf_counter()
    state = PartialState(cpu=True)
    settings = config.settings
    teacher = load_classifier(config.checkpoint)
    students, facts = _load_students(config)
    teacher_bytes = folder_bytes(Path(config.checkpoint))
    generator = load_generator(config.generator)
    with state.main_process_first():  # one process decodes and caches the images
        split = load_framed_split(Path(config.data), config.split, teacher.config.resolution, config.image_cache,
                                  lambda done, total: progress(f"loading {config.split}", done, total))
    images, labels = torch.as_tensor(split.images), torch.as_tensor(split.labels)
    teacher_inputs = {FP32: file_digest(Path(config.checkpoint) / WEIGHTS_FILE),
                      "generator": file_digest(Path(config.generator)), "split": config.split,
                      "data": str(Path(config.data).resolve())}
    fingerprints = {FP32: settings.fingerprint(teacher_inputs)}
    for name in config.variants:
        fingerprints[name] = settings.fingerprint(
            {**teacher_inputs, name: file_digest(config.variants_dir / name / WEIGHTS_FILE)})
    if settings.noise_control in students:
        control, fact = noise_control(teacher, students, facts, images, settings.noise_control, teacher_bytes)
        students[NOISE_CONTROL], facts[NOISE_CONTROL] = control, fact
        fingerprints[NOISE_CONTROL] = settings.fingerprint(
            {**teacher_inputs, NOISE_CONTROL: json.dumps(fact.details, sort_keys=True)})
    stage = f"benchmark tasks (process {state.process_index + 1}/{state.num_processes})"

    def chunks(done: int, total: int) -> None:
        progress(stage, done * settings.chunk_size, total * settings.chunk_size)

    records = task_records(images, teacher, students, settings, generator, config.out / "cache", fingerprints,
                           state.process_index, state.num_processes, chunks)
    records = gather_object(records) if state.num_processes > 1 else records
    sweep: list[dict] = []
    if settings.margins:
        def sweep_chunks(done: int, total: int) -> None:
            progress(f"margin sweep (process {state.process_index + 1}/{state.num_processes})", done, total)

        sweep = sweep_records(images, teacher, students, settings, generator, config.out / "cache",
                              lambda at_margin: at_margin.fingerprint(teacher_inputs), state.process_index,
                              state.num_processes, sweep_chunks)
        sweep = gather_object(sweep) if state.num_processes > 1 else sweep
    # every process decides the test images with its share of the models; rank 0 builds the table
    # (and times the models on its own, once the others are done)
    names = list(students)[state.process_index::state.num_processes]
    decided = model_decisions({name: students[name] for name in names}, images)
    if state.num_processes > 1:
        decided = {name: d for share in gather_object([decided]) for name, d in share.items()}
    result = None
    if state.is_main_process:
        train_seconds = float(read_config(config.checkpoint).get("training_seconds", 0.0))
        rows = benchmark_rows(records, teacher, students, facts, images, labels, train_seconds, teacher_bytes,
                              settings, decided)
        result = BenchmarkResult(
            date=datetime.date.today().isoformat(), command=config.command, split=config.split, n=len(records),
            attributes=settings.attributes, accuracy_images=len(images), processes=state.num_processes,
            seconds=round(time.perf_counter() - started, 1), settings=asdict(settings), rows=tuple(rows),
            families=tuple(family_rows(rows, records, settings)),
            sweep=tuple(sweep_points(sweep, settings.margins, settings.bootstrap_samples)))
        config.out.mkdir(parents=True, exist_ok=True)
        (config.out / "benchmark.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    state.wait_for_everyone()
    return result
