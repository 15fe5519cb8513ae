"""The models a benchmark run compares with the full-precision teacher, each as a student row:
the committed variants, the weight-noise controls matched to a variant's agreement, the teacher
re-run with other seeds (the top floor), other full-precision classifiers (the bottom floor) and
an auditor's own models from their model cards. :mod:`recourse.benchmark.run` keys and runs them."""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict
from pathlib import Path

import torch

from recourse.audit.paired import Student
from recourse.benchmark.floors import RERUN_FLOOR, RERUN_SEED_OFFSET
from recourse.benchmark.rows import NOISE_CONTROL, REFERENCE_PREFIX, VariantFacts, matched_noise_draw
from recourse.benchmark.settings import FP32, BenchmarkSettings
from recourse.benchmark.weight_noise_floor import NoiseControl, matched_noise, noise_at
from recourse.caches import arrays_digest, json_digest
from recourse.checkpoints import CONFIG_FILE, WEIGHTS_FILE, CheckpointError, file_digest, folder_bytes, load_classifier
from recourse.compression import load_variant
from recourse.data import to_float_images
from recourse.locations import shown
from recourse.metrics import agreement, decisions

NOISE_MATCH_IMAGES = 1000  # images the control's agreement is matched on
VARIANT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a row's name: no "@", no path


def reference_name(folder: Path) -> str:
    """The row of a reference classifier: ``fp32-ref-`` and its folder's name."""
    return REFERENCE_PREFIX + Path(folder).name


def load_variants(names: tuple[str, ...], folder: Path) -> tuple[dict[str, Student], dict[str, VariantFacts]]:
    """Each committed variant ``folder/<name>`` as a student row, with the facts its table row shows."""
    students, facts = {}, {}
    for name in names:
        directory = folder / name
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
    target = matched_agreement(teacher, students[matched_to], sample)
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


@torch.no_grad()
def matched_agreement(teacher: torch.nn.Module, student: Student, sample: torch.Tensor) -> float:
    """The decision agreement (%) with the teacher on ``sample`` that a noise floor of ``student`` matches."""
    return agreement(decisions(teacher(sample)), decisions(student.decider(sample)))


def share_noise_sigmas(teacher: torch.nn.Module, students: dict[str, Student], matching: torch.Tensor,
                       variants: list[str], draws: int, memo: Path, index: int, count: int) -> int:
    """Bisect this process's share (every ``count``-th, from ``index``) of the draws of the noise
    floors matched to ``variants`` into ``memo``, so that the processes of a run bisect each draw once
    between them (a draw takes about 75 s of one core) and then all read the kept sigmas. Returns
    how many this process bisected or found kept."""
    sample = to_float_images(matching[:NOISE_MATCH_IMAGES])
    jobs = [(variant, draw) for variant in variants for draw in range(draws)]
    targets: dict[str, float] = {}
    mine = jobs[index::count]
    for variant, draw in mine:
        if variant not in targets:
            targets[variant] = matched_agreement(teacher, students[variant], sample)
        remembered_noise(teacher, sample, targets[variant], draw, memo)
    return len(mine)


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
        if not VARIANT_ID.match(name or "") or name in rows or name == FP32:
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
