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
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from recourse.audit.paired import Student
from recourse.benchmark.claims import Claim, claims
from recourse.benchmark.compared_models import (
    VARIANT_ID, foreign_rows, load_variants, noise_controls, reference_name, reference_rows, rerun_fingerprint,
    rerun_row, share_noise_sigmas,
)
from recourse.benchmark.floors import RERUN_FLOOR
from recourse.benchmark.placed_rows import placement_claims, placements
from recourse.benchmark.rows import (
    NEW_FAMILY_FIELDS, NEW_ROW_FIELDS, NOISE_CONTROL, REFERENCE_PREFIX, BenchmarkRow, FamilyRow, VariantFacts,
    benchmark_rows, family_of, family_rows, model_decisions,
)
from recourse.benchmark.saved_columns import COLUMNS_FILE, columns_of_records, write_columns
from recourse.benchmark.settings import ANALYSIS, FP32, BenchmarkSettings, recorded_analysis
from recourse.benchmark.sweep import SweepPoint, sweep_points, sweep_records
from recourse.benchmark.tasks import task_records
from recourse.checkpoints import WEIGHTS_FILE, file_digest, folder_bytes, load_classifier, read_config
from recourse.compression import METHODS
from recourse.data import load_framed_split, to_float_images
from recourse.locations import DEFAULT_CACHE, generator_dir, shown, teacher_dir, variants_dir
from recourse.progress import Progress, silent

DEFINITIONS = "docs/metrics.md (VD = Validity Drop)"


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
        bad = [v for v in self.variants if not isinstance(v, str) or not VARIANT_ID.match(v) or v in (FP32, RERUN_FLOOR)
               or v.startswith((NOISE_CONTROL, REFERENCE_PREFIX))]
        if bad or not self.variants or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct folder names of {shown(self.variants_dir)} "
                             f"(e.g. {', '.join(METHODS[:3])}); got {', '.join(map(str, self.variants)) or 'none'}")
        names = [reference_name(Path(folder)) for folder in self.reference_models]
        if len(set(names)) != len(names) or not all(VARIANT_ID.match(n) for n in names):
            raise ValueError(f"reference models must be folders with distinct, plain names; got "
                             f"{', '.join(map(str, self.reference_models))}")
        if len(set(map(str, self.models))) != len(self.models):
            raise ValueError(f"model cards must be distinct; got {', '.join(map(str, self.models))}")
        # a family's TOST reads the one matched floor of its family (rows.family_floors)
        matched = [family_of(v) for v in self.settings.matched_noise if v in self.variants]
        if len(set(matched)) != len(matched):
            raise ValueError(f"matched noise floors: at most one variant per family (seeds are one family); got "
                             f"{', '.join(self.settings.matched_noise)}")


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
    # each placed row's matched-noise family (its draws' rows) and the retrained seeds' rows, then
    # every placed row (recourse.benchmark.placed_rows.Placements.to_dict, without those two) and the
    # registered placement claims; empty where the run's columns hold no such rows
    noise_families: dict = field(default_factory=dict)
    retrained_seeds: tuple[str, ...] = ()
    placements: dict = field(default_factory=dict)
    placement_claims: tuple[dict, ...] = ()

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
        if self.noise_families:
            record["noise_families"] = {row: list(draws) for row, draws in self.noise_families.items()}
        if self.retrained_seeds:
            record["retrained_seeds"] = list(self.retrained_seeds)
        if self.placements:
            record["placements"] = dict(self.placements)
        if self.placement_claims:
            record["placement_claims"] = [dict(claim) for claim in self.placement_claims]
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
                       claims=found, latency=tuple(record.get("latency", ())), columns=dict(record.get("columns", {})),
                       noise_families={row: list(draws) for row, draws in record.get("noise_families", {}).items()},
                       retrained_seeds=tuple(record.get("retrained_seeds", ())),
                       placements=dict(record.get("placements", {})),
                       placement_claims=tuple(record.get("placement_claims", ())))
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
    (``settings.matched_noise``) of a variant or reference classifier the run has, each keyed by
    its details (its sigma, the variant it is matched to, its seed). The noise control's own variant
    gets no second floor: the noise control is matched to its agreement already. On several
    processes each draw's sigma is bisected once, by one of them, before all read it."""
    settings = config.settings
    # a retrained seed (a reference row, added after the controls) may have a floor matched to its agreement
    references = {}
    if any(v.startswith(REFERENCE_PREFIX) for v in settings.matched_noise):
        references = {name: row[0] for name, row in reference_rows(config.reference_models).items()
                      if name in settings.matched_noise}
    candidates = {**students, **references}
    matched = [v for v in settings.matched_noise if v in candidates and v != settings.noise_control]
    if settings.noise_control not in students and not matched:
        return
    matching = images
    if settings.noise_match_split is not None:  # faces apart from the tasks: matching sees none of them
        with state.main_process_first():
            matching = torch.as_tensor(load_framed_split(
                Path(config.data), settings.noise_match_split, teacher.config.resolution, config.image_cache,
                lambda done, total: progress(f"loading {settings.noise_match_split}", done, total)).images)
    memo = config.kept or config.out / "noise-sigmas"  # the kept folder travels to the next session with the parts
    if state is not None and state.num_processes > 1:  # each draw bisected once, by one process
        floors = ([settings.noise_control] if settings.noise_control in students else []) + matched
        share_noise_sigmas(teacher, candidates, matching, floors, settings.noise_draws, memo, state.process_index,
                           state.num_processes)
        state.wait_for_everyone()
    controls = {}
    if settings.noise_control in students:
        controls.update(noise_controls(teacher, students, matching, settings.noise_control, teacher_bytes,
                                       settings.noise_draws, settings.noise_match_split, memo=memo))
    for variant in matched:
        controls.update(noise_controls(teacher, candidates, matching, variant, teacher_bytes, settings.noise_draws,
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


def placement_fields(saved, settings: BenchmarkSettings) -> dict:
    """The record's placement fields from a run's columns (``saved``): every placed row in its
    matched-noise family and among the retrained seeds, and the registered placement claims
    (:mod:`recourse.benchmark.placed_rows`); none where nothing is placed in a family."""
    if settings.analysis != ANALYSIS:  # records of earlier analyses read back without placements
        return {}
    found = placements(saved, settings.noise_control, settings.noise_draws)
    if not found.noise_families and len(found.retrained_seeds) < 2:
        return {}
    record = json_ready(found.to_dict())
    fields = {"noise_families": record.pop("noise_families"), "retrained_seeds": tuple(record.pop("retrained_seeds")),
              "placements": record}
    if settings.placement_family is not None:
        fields["placement_claims"] = tuple(json_ready(placement_claims(found, settings.placement_family)))
    return fields


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
    students, facts = load_variants(config.variants, config.variants_dir)
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
        result = replace(result, columns=write_columns(config.out / COLUMNS_FILE, saved),
                         **placement_fields(saved, config.settings))
        (config.out / "benchmark.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    state.wait_for_everyone()
    return result
