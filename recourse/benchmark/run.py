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
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from recourse.audit.paired import Student
from recourse.benchmark.claims import Claim, claims
from recourse.benchmark.floors import RERUN_FLOOR, RERUN_SEED_OFFSET
from recourse.benchmark.rows import (
    NEW_FAMILY_FIELDS, NEW_ROW_FIELDS, NOISE_CONTROL, REFERENCE_PREFIX, BenchmarkRow, FamilyRow, VariantFacts,
    benchmark_rows, family_of, family_rows, matched_noise_draw, model_decisions,
)
from recourse.benchmark.saved_columns import COLUMNS_FILE, columns_of_records, write_columns
from recourse.benchmark.sweep import SweepPoint, sweep_points, sweep_records
from recourse.benchmark.tasks import FP32, BenchmarkSettings, recorded_analysis, task_records
from recourse.benchmark.weight_noise_floor import NoiseControl, matched_noise, noise_at
from recourse.caches import arrays_digest, json_digest
from recourse.checkpoints import (
    CONFIG_FILE, WEIGHTS_FILE, CheckpointError, file_digest, folder_bytes, load_classifier, read_config,
)
from recourse.compression import METHODS, load_variant
from recourse.data import load_framed_split, to_float_images
from recourse.locations import DEFAULT_CACHE, generator_dir, shown, teacher_dir, variants_dir
from recourse.metrics import agreement, decisions
from recourse.progress import Progress, silent

DEFINITIONS = "docs/metrics.md (VD = Validity Drop)"
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
    # Other full-precision classifiers (checkpoint folders), each a reference row
    # fp32-ref-<folder name>: what an independently trained model scores against the teacher.
    reference_models: tuple[Path, ...] = ()
    # Model cards of an auditor's own models (recourse.foreign), each a row named after its
    # card, audited against the teacher; quantized ones are also timed against their float
    # original of the same runtime (recourse.benchmark.latency).
    models: tuple[Path, ...] = ()
    # The top floor of the direction metrics (recourse.benchmark.floors): a row fp32-rerun, the
    # teacher whose own recourse is made again with fresh noise. Off: no such row.
    rerun_floor: bool = False
    # Where the parts that hold no picture are kept (recourse.benchmark.tasks.task_records): a
    # folder to commit, from which a run longer than a session goes on in the next. None: in out.
    kept: Path | None = None

    def __post_init__(self) -> None:
        bad = [v for v in self.variants if not isinstance(v, str) or not _VARIANT_ID.match(v) or v in (FP32, RERUN_FLOOR)
               or v.startswith((NOISE_CONTROL, REFERENCE_PREFIX))]
        if bad or not self.variants or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct folder names of {shown(self.variants_dir)} "
                             f"(e.g. {', '.join(METHODS[:3])}); got {', '.join(map(str, self.variants)) or 'none'}")
        names = [reference_name(Path(folder)) for folder in self.reference_models]
        if len(set(names)) != len(names) or not all(_VARIANT_ID.match(n) for n in names):
            raise ValueError(f"reference models must be folders with distinct, plain names; got "
                             f"{', '.join(map(str, self.reference_models))}")
        if len(set(map(str, self.models))) != len(self.models):
            raise ValueError(f"model cards must be distinct; got {', '.join(map(str, self.models))}")
        # a family's TOST reads the one matched floor of its family (rows.family_floors)
        matched = [family_of(v) for v in self.settings.matched_noise if v in self.variants]
        if len(set(matched)) != len(matched):
            raise ValueError(f"matched noise floors: at most one variant per family (seeds are one family); got "
                             f"{', '.join(self.settings.matched_noise)}")


def reference_name(folder: Path) -> str:
    """The row of a reference classifier: ``fp32-ref-`` and its folder's name."""
    return REFERENCE_PREFIX + Path(folder).name


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
    claims: tuple[Claim, ...] = ()  # the family of claims with corrected p-values
    latency: tuple[dict, ...] = ()  # recourse.benchmark.latency.LatencyComparison.to_dict() of --models
    # the per-task columns saved beside the record ({"file": name beside it, "sha256"}), from
    # which recourse recompute-claims recomputes its statistics; {} where none were saved
    columns: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: non-finite values (undefined metrics) are written as ``null``. Fields a
        record may lack are left out where unset, so that such a record reads back as written."""
        record = {
            "date": self.date, "command": self.command, "split": self.split, "n": self.n,
            "attributes": list(self.attributes), "accuracy_images": self.accuracy_images,
            "processes": self.processes, "seconds": self.seconds, "settings": self.settings,
            "definitions": self.definitions, "rows": [_set_only(asdict(row), NEW_ROW_FIELDS) for row in self.rows],
        }
        if self.families:
            record["families"] = [_set_only(asdict(family), NEW_FAMILY_FIELDS) for family in self.families]
        if self.claims:
            record["claims"] = [asdict(claim) for claim in self.claims]
        if self.latency:
            record["latency"] = [dict(row) for row in self.latency]
        if self.columns:
            record["columns"] = dict(self.columns)
        if self.sweep:
            # a sweep recorded without intervals is written back without them
            record["sweep"] = [{k: v for k, v in asdict(point).items() if k != "intervals" or v} for point in self.sweep]
        return json_ready(record)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "BenchmarkResult":
        """Read ``benchmark.json`` back, or raise ValueError saying what is wrong with it."""
        try:
            rows = tuple(BenchmarkRow(**row) for row in record["rows"])
            families = tuple(FamilyRow(**{**f, "variants": tuple(f["variants"]), "acc": tuple(f["acc"]),
                                          "agreement": tuple(f["agreement"])}) for f in record.get("families", ()))
            # an undefined value (an empty S at that margin) is NaN in memory and null in JSON
            sweep = tuple(SweepPoint(**{**point, "students": {name: {k: _number(v) for k, v in values.items()}
                                                              for name, values in point["students"].items()}})
                          for point in record.get("sweep", ()))
            found = tuple(Claim(**{k: _number(v) for k, v in c.items()}) for c in record.get("claims", ()))
            if found and "corrected_low" not in record["claims"][0] and any(f.tests for f in families):
                # claims recorded without corrected intervals: those of the record's own analysis
                found = tuple(claims(list(families), analysis=recorded_analysis(record["settings"])))
            return cls(date=record["date"], command=record["command"], split=record["split"], n=int(record["n"]),
                       attributes=tuple(record["attributes"]), accuracy_images=int(record["accuracy_images"]),
                       processes=int(record["processes"]), seconds=float(record["seconds"]),
                       settings=dict(record["settings"]), rows=rows,
                       definitions=record.get("definitions", DEFINITIONS), families=families, sweep=sweep,
                       claims=found, latency=tuple(record.get("latency", ())), columns=dict(record.get("columns", {})))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a benchmark record ({type(error).__name__}: {error})") from None


def _set_only(record: dict, added: tuple[str, ...]) -> dict:
    """``record`` without the ``added`` fields that are unset (None or empty)."""
    return {k: v for k, v in record.items() if k not in added or v not in (None, {}, [], ())}


def _number(value):
    """A claim's field as read back: JSON's null (an undefined p) is NaN again."""
    return float("nan") if value is None else value


def json_ready(value):
    """As a record writes it: JSON has no NaN or infinity (an undefined value is written as
    null), and tuples are lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def _load_students(config: BenchmarkConfig) -> tuple[dict[str, Student], dict[str, VariantFacts]]:
    students, facts = {}, {}
    for name in config.variants:
        directory = config.variants_dir / name
        if not (directory / CONFIG_FILE).is_file():
            raise CheckpointError(f"{shown(directory)}: variant not found; make it with "
                                  f"python -m scripts.chores.make_variants --data PATH --only {name}")
        variant = load_variant(directory)
        details = {k: variant.details[k] for k in ("budget", "sparsity", "layer_bits", "layer_clip", "fine_tuning",
                                                   "recourse_objective", "storage", "activation_bits")
                   if k in variant.details}
        details["settings"] = asdict(variant.config)
        students[name] = Student.from_variant(name, variant)
        facts[name] = VariantFacts(variant.integer is not None, variant.bits_per_weight, variant.seconds,
                                   folder_bytes(directory), details, variant.config.method)
    return students, facts


def noise_controls(teacher: torch.nn.Module, students: dict[str, Student], matching: torch.Tensor, matched_to: str,
                   size_bytes: int, draws: int = 1, matching_split: str | None = None, own_floor: bool = False,
                   memo: Path | None = None) -> dict[str, tuple[Student, VariantFacts]]:
    """The teacher with weight noise at ``matched_to``'s agreement with the teacher, as
    student rows: one per noise draw (``fp32-noise``, ``fp32-noise-s1``, ...: a family, so
    the table averages them like fine-tuning seeds), each draw's sigma matched by itself on
    the first :data:`NOISE_MATCH_IMAGES` of ``matching`` (from ``matching_split``; None: the
    run's own images). ``own_floor``: ``matched_to``'s own noise
    floor (``fp32-noise@<matched_to>``, ``fp32-noise-s1@<matched_to>``, ...;
    :func:`recourse.benchmark.rows.matched_noise_draw`) rather than the noise control. ``memo``: the
    folder where each draw's sigma is kept (:func:`remembered_noise`)."""
    sample = to_float_images(matching[:NOISE_MATCH_IMAGES])
    with torch.no_grad():
        target = agreement(decisions(teacher(sample)), decisions(students[matched_to].decider(sample)))
    controls = {}
    for draw in range(draws):
        control = remembered_noise(teacher, sample, target, draw, memo)
        details = {"sigma": round(control.sigma, 6), "matched_to": matched_to, "target_agreement": round(target, 3),
                   "agreement_on_matching_images": round(control.agreement, 3), "seed": control.seed,
                   "matching_images": len(sample)}
        # a draw matched on the run's own images names no split: its details, which key its
        # cached parts, stay those its records were made with
        if matching_split is not None:
            details["matching_split"] = matching_split
        if own_floor:
            name = matched_noise_draw(matched_to, draw)
        else:
            name = NOISE_CONTROL if draw == 0 else f"{NOISE_CONTROL}-s{draw}"
        controls[name] = (Student(name, control.model, control.model),
                          VariantFacts(False, 32.0, 0.0, size_bytes, details, "control"))
    return controls


def remembered_noise(teacher: torch.nn.Module, sample: torch.Tensor, target: float, seed: int,
                     memo: Path | None) -> NoiseControl:
    """:func:`recourse.benchmark.weight_noise_floor.matched_noise`, its sigma kept in the folder ``memo``: a run that
    goes on in a later session measures the kept sigma once instead of bisecting again (each
    process of a run bisected every draw on 3,000 faces: some 20 minutes of both cores). Keyed by
    the teacher's weights, the matching faces, the target and the seed; where the kept sigma's
    agreement is not the kept one, it bisects again."""
    if memo is None:
        return matched_noise(teacher, sample, target, seed=seed)
    key = json_digest({"teacher": arrays_digest(teacher.state_dict()), "images": arrays_digest({"images": sample}),
                       "target": target, "seed": seed})
    path = memo / f"noise-sigma-{key[:24]}.json"
    try:
        kept = json.loads(path.read_text())
        control = noise_at(teacher, sample, target, float(kept["sigma"]), seed)
        if control.agreement == kept["agreement"]:
            return control
    except (OSError, ValueError, KeyError, TypeError):
        pass
    control = matched_noise(teacher, sample, target, seed=seed)
    memo.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")  # written whole, then named: another process never reads half
    partial.write_text(json.dumps({"sigma": control.sigma, "agreement": control.agreement, "target": target,
                                   "seed": seed, "key": key}))
    partial.replace(path)
    return control


def rerun_row(teacher: torch.nn.Module, size_bytes: int) -> tuple[Student, VariantFacts]:
    """The top floor as a student row (``fp32-rerun``): the teacher guides, stops and decides its
    own recourse, each seed moved by :data:`RERUN_SEED_OFFSET`, so the only thing that differs
    from the teacher's ``x'_f`` is the generator's noise."""
    return (Student(RERUN_FLOOR, teacher, teacher, seed_offset=RERUN_SEED_OFFSET),
            VariantFacts(False, 32.0, 0.0, size_bytes, {"seed_offset": RERUN_SEED_OFFSET}, "control"))


def rerun_fingerprint(settings: BenchmarkSettings, teacher_inputs: dict[str, str]) -> str:
    """The re-run's cache key: the teacher's inputs and its seed offset, so it never shares a key
    with the teacher's part (whose recourse it repeats with other seeds)."""
    return settings.fingerprint({**teacher_inputs, RERUN_FLOOR: f"seed_offset={RERUN_SEED_OFFSET}"})


def reference_rows(folders: tuple[Path, ...]) -> dict[str, tuple[Student, VariantFacts, str]]:
    """Each other full-precision classifier as a student row (its own float model guides,
    stops and decides), with the digest of its weights that keys its cached parts. The rows
    are one family, ``fp32-ref`` (:func:`recourse.benchmark.rows.family_of`): the bottom floor,
    its folders read as seeds."""
    rows = {}
    for folder in map(Path, folders):
        model = load_classifier(folder)
        details = {"checkpoint": shown(folder), "weights_digest": file_digest(folder / WEIGHTS_FILE)}
        rows[reference_name(folder)] = (Student(reference_name(folder), model, model),
                                        VariantFacts(False, 32.0, 0.0, folder_bytes(folder), details, "reference"),
                                        details["weights_digest"])
    return rows


def foreign_rows(cards: tuple[Path, ...], generator) -> dict[str, tuple[Student, VariantFacts, str]]:
    """Each model card as a student row named after its card: a differentiable model guides,
    stops and decides; a black box decides with its own runtime and guides with gradients
    estimated in ``generator``'s face basis (recourse.foreign.pairs). Returns the rows with
    the digest of their weights, which keys their cached parts."""
    from recourse.foreign.adapter import ForeignClassifier
    from recourse.foreign.loaders import load_foreign
    from recourse.foreign.pairs import BLACK_BOX_COMPONENTS, differentiable, edit_basis

    basis = None
    rows: dict[str, tuple[Student, VariantFacts, str]] = {}
    for card in map(Path, cards):
        model = ForeignClassifier(load_foreign(card))
        name = model.card.name
        if not _VARIANT_ID.match(name or "") or name in rows or name == FP32:
            raise ValueError(f"{shown(card)}: a benchmark row needs a distinct plain card name "
                             f"(letters, digits, . _ -), got {name!r}")
        if not model.differentiable and basis is None:
            basis = edit_basis(generator)
        twin = differentiable(model, basis, seed=1)
        digest = file_digest(model.card.weights_path)
        details = {"card": shown(card), "runtime": model.loaded.runtime, "quantized": model.loaded.quantized,
                   "differentiable": model.loaded.differentiable, "weights_digest": digest,
                   "attributes": list(model.supported_attributes)}
        if not model.differentiable:
            details["black_box_components"] = int(basis.shape[0]) if basis is not None else BLACK_BOX_COMPONENTS
        # an int8 quantizer's output (ONNX Runtime's and torchao's here); the card does not say its bits
        bits = 8.0 if model.loaded.quantized else 32.0
        rows[name] = (Student(name, twin, model), VariantFacts(model.loaded.quantized, bits, 0.0,
                                                               model.card.weights_path.stat().st_size, details,
                                                               "foreign"), digest)
    return rows


def _teacher_inputs(config: BenchmarkConfig) -> dict[str, str]:
    """What every row's cached parts depend on: the teacher's and the generator's weights, the split and the data."""
    return {FP32: file_digest(Path(config.checkpoint) / WEIGHTS_FILE),
            "generator": file_digest(Path(config.generator)), "split": config.split,
            "data": str(Path(config.data).resolve())}


def _variant_fingerprints(config: BenchmarkConfig, teacher_inputs: dict[str, str]) -> dict[str, str]:
    """The cache keys of the teacher's row and of each variant's."""
    settings = config.settings
    fingerprints = {FP32: settings.fingerprint(teacher_inputs)}
    for name in config.variants:
        fingerprints[name] = settings.fingerprint(
            {**teacher_inputs, name: file_digest(config.variants_dir / name / WEIGHTS_FILE), **settings.student_inputs()})
    return fingerprints


def _add_noise_controls(config: BenchmarkConfig, state, progress: Progress, teacher: torch.nn.Module,
                        images: torch.Tensor, teacher_bytes: int, teacher_inputs: dict[str, str],
                        students: dict[str, Student], facts: dict[str, VariantFacts],
                        fingerprints: dict[str, str]) -> None:
    """The noise controls' rows added to ``students``, ``facts`` and ``fingerprints`` where the
    settings match them to one of the variants: the noise control, then each matched noise floor
    (``settings.matched_noise``) of a variant the run has, each keyed by its details (its sigma,
    the variant it is matched to, its seed). The noise control's own variant gets no second
    floor: the noise control is matched to its agreement already."""
    settings = config.settings
    matched = [v for v in settings.matched_noise if v in students and v != settings.noise_control]
    if settings.noise_control not in students and not matched:
        return
    matching = images
    if settings.noise_match_split is not None:  # faces apart from the tasks: matching sees none of them
        with state.main_process_first():
            matching = torch.as_tensor(load_framed_split(
                Path(config.data), settings.noise_match_split, teacher.config.resolution, config.image_cache,
                lambda done, total: progress(f"loading {settings.noise_match_split}", done, total)).images)
    memo = config.kept or config.out / "noise-sigmas"  # the kept folder travels to the next session with the parts
    controls = {}
    if settings.noise_control in students:
        controls.update(noise_controls(teacher, students, matching, settings.noise_control, teacher_bytes,
                                       settings.noise_draws, settings.noise_match_split, memo=memo))
    for variant in matched:
        controls.update(noise_controls(teacher, students, matching, variant, teacher_bytes, settings.noise_draws,
                                       settings.noise_match_split, own_floor=True, memo=memo))
    for name, (control, fact) in controls.items():
        students[name], facts[name] = control, fact
        fingerprints[name] = settings.fingerprint(
            {**teacher_inputs, NOISE_CONTROL: json.dumps(fact.details, sort_keys=True)})


def _add_other_models(config: BenchmarkConfig, generator, teacher_inputs: dict[str, str],
                      students: dict[str, Student], facts: dict[str, VariantFacts],
                      fingerprints: dict[str, str]) -> dict[str, tuple[Student, VariantFacts, str]]:
    """The reference classifiers' rows, then the model cards' rows, added to ``students``,
    ``facts`` and ``fingerprints``; returns the model cards' rows."""
    settings = config.settings
    for name, (reference, fact, digest) in reference_rows(config.reference_models).items():
        students[name], facts[name] = reference, fact
        fingerprints[name] = settings.fingerprint({**teacher_inputs, name: digest})
    foreign = foreign_rows(config.models, generator)
    for name, (student, fact, digest) in foreign.items():
        if name in students:
            raise ValueError(f"{fact.details['card']}: its name {name!r} is already a row; rename the card")
        students[name], facts[name] = student, fact
        fingerprints[name] = settings.fingerprint({**teacher_inputs, name: digest, **settings.student_inputs(),
                                                   "black_box_components": str(fact.details.get("black_box_components"))})
    return foreign


def _gathered_tasks(config: BenchmarkConfig, state, progress: Progress, images: torch.Tensor,
                    teacher: torch.nn.Module, students: dict[str, Student], generator,
                    fingerprints: dict[str, str]) -> list:
    """Every process's share of the task records, gathered."""
    from accelerate.utils import gather_object

    settings = config.settings
    stage = f"benchmark tasks (process {state.process_index + 1}/{state.num_processes})"

    def chunks(done: int, total: int) -> None:
        progress(stage, done * settings.chunk_size, total * settings.chunk_size)

    records = task_records(images, teacher, students, settings, generator, config.out / "cache", fingerprints,
                           state.process_index, state.num_processes, chunks, kept_dir=config.kept)
    return gather_object(records) if state.num_processes > 1 else records


def _gathered_sweep(config: BenchmarkConfig, state, progress: Progress, images: torch.Tensor,
                    teacher: torch.nn.Module, students: dict[str, Student], generator,
                    teacher_inputs: dict[str, str]) -> list[dict]:
    """Every process's share of the margin sweep's records, gathered (none without margins)."""
    from accelerate.utils import gather_object

    settings = config.settings
    sweep: list[dict] = []
    if settings.margins:
        def sweep_chunks(done: int, total: int) -> None:
            progress(f"margin sweep (process {state.process_index + 1}/{state.num_processes})", done, total)

        sweep = sweep_records(images, teacher, students, settings, generator, config.out / "cache",
                              lambda at_margin: at_margin.fingerprint(teacher_inputs), state.process_index,
                              state.num_processes, sweep_chunks)
        sweep = gather_object(sweep) if state.num_processes > 1 else sweep
    return sweep


def _gathered_decisions(state, students: dict[str, Student], images: torch.Tensor) -> dict:
    """Every model's decisions on the test images: each process decides them with its share of the models."""
    from accelerate.utils import gather_object

    names = list(students)[state.process_index::state.num_processes]
    decided = model_decisions({name: students[name] for name in names}, images)
    if state.num_processes > 1:
        decided = {name: d for share in gather_object([decided]) for name, d in share.items()}
    return decided


def _benchmark_result(config: BenchmarkConfig, state, started: float, records: list, sweep: list[dict],
                      teacher: torch.nn.Module, students: dict[str, Student], facts: dict[str, VariantFacts],
                      images: torch.Tensor, labels: torch.Tensor, teacher_bytes: int, decided: dict,
                      foreign: dict[str, tuple[Student, VariantFacts, str]]) -> BenchmarkResult:
    """The table, its families and claims, and the model cards' latency (rank 0 only)."""
    settings = config.settings
    train_seconds = float(read_config(config.checkpoint).get("training_seconds", 0.0))
    rows = benchmark_rows(records, teacher, students, facts, images, labels, train_seconds, teacher_bytes,
                          settings, decided)
    families = family_rows(rows, records, settings)
    from recourse.benchmark.latency import compare_latency

    latency = compare_latency({name: student.decider for name, (student, _, _) in foreign.items()},
                              to_float_images(images[:32]), settings.latency_repeats)
    return BenchmarkResult(
        date=datetime.date.today().isoformat(), command=config.command, split=config.split, n=len(records),
        attributes=settings.attributes, accuracy_images=len(images), processes=state.num_processes,
        seconds=round(time.perf_counter() - started, 1), settings=asdict(settings), rows=tuple(rows),
        families=tuple(families),
        claims=tuple(claims(families, analysis=settings.analysis, registered=settings.primary_family)),
        latency=tuple(row.to_dict() for row in latency),
        sweep=tuple(sweep_points(sweep, settings.margins, settings.bootstrap_samples)))


def run_benchmark(config: BenchmarkConfig, progress: Progress = silent) -> BenchmarkResult | None:
    """Run (or resume) the benchmark; writes ``benchmark.json`` under ``config.out``, and beside
    it every student row's per-task columns (:data:`COLUMNS_FILE`, named in the record with its
    SHA-256) from which its statistics can be recomputed
    (:func:`recourse.render.benchmark.write_markdown` adds ``benchmark.md``). Returns the result on the main process and ``None`` on the others.
    ``progress(stage, done, total)`` reports the loading of images and the tasks."""
    from accelerate import PartialState

    from recourse.generation import load_generator
    started = time.perf_counter()
    state = PartialState(cpu=True)
    teacher = load_classifier(config.checkpoint)
    students, facts = _load_students(config)
    teacher_bytes = folder_bytes(Path(config.checkpoint))
    generator = load_generator(config.generator)
    with state.main_process_first():  # one process decodes and caches the images
        split = load_framed_split(Path(config.data), config.split, teacher.config.resolution, config.image_cache,
                                  lambda done, total: progress(f"loading {config.split}", done, total))
    images, labels = torch.as_tensor(split.images), torch.as_tensor(split.labels)
    teacher_inputs = _teacher_inputs(config)
    fingerprints = _variant_fingerprints(config, teacher_inputs)
    _add_noise_controls(config, state, progress, teacher, images, teacher_bytes, teacher_inputs, students, facts,
                        fingerprints)
    if config.rerun_floor:
        students[RERUN_FLOOR], facts[RERUN_FLOOR] = rerun_row(teacher, teacher_bytes)
        fingerprints[RERUN_FLOOR] = rerun_fingerprint(config.settings, teacher_inputs)
    foreign = _add_other_models(config, generator, teacher_inputs, students, facts, fingerprints)
    records = _gathered_tasks(config, state, progress, images, teacher, students, generator, fingerprints)
    sweep = _gathered_sweep(config, state, progress, images, teacher, students, generator, teacher_inputs)
    # every process decides the test images with its share of the models; rank 0 builds the table
    # (and times the models on its own, once the others are done)
    decided = _gathered_decisions(state, students, images)
    result = None
    if state.is_main_process:
        result = _benchmark_result(config, state, started, records, sweep, teacher, students, facts, images, labels,
                                   teacher_bytes, decided, foreign)
        saved = columns_of_records(records, [row.method for row in result.rows if row.method != FP32])
        result = replace(result, columns=write_columns(config.out / COLUMNS_FILE, saved))
        (config.out / "benchmark.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    state.wait_for_everyone()
    return result
