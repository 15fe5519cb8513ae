"""One per-image recourse audit: what the UI and ``python -m recourse audit`` both call.

For one face ``x``, attribute ``a`` and target ``t`` (default: flip the teacher's decision),
following ``shared/docs/metrics.md``:

1. align ``x`` to the training framing (uploads) or take it as given (framed tensors);
2. both models' 40 probabilities and the attributes whose decisions differ;
3. the teacher recourse ``x'_f`` (guided by the full-precision classifier) and the student
   recourse ``x'_g`` (guided by the variant's fake-quantized twin), with the SAME seed;
4. ``V_f(x'_f)``, ``V_g(x'_f)``, ``V_g(x'_g)``, both costs, ``CRG_i`` and ``DirSim_i``;
   the student's decisions come from its integer-kernel model where it has one;
5. IntegratedGradients (teacher vs twin) and Occlusion (teacher vs integer model), with
   their Spearman rank correlation and top-10% IoU.

:func:`audit_steps` yields after step 2 so that a UI can show predictions first;
:func:`audit_image` runs it to the end.
"""

from __future__ import annotations

import base64
import functools
import io
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from recourse import __version__
from recourse.attribution import (
    AttributionComparison, AttributionConfig, attribution_picture, compare_maps, integrated_gradients, occlusion,
)
from recourse.checkpoints import CheckpointError, load_classifier
from recourse.counterfactual import CounterfactualConfig, attribute_index, default_generator, generate
from recourse.data import ATTRIBUTES
from recourse.evaluation import to_float_images
from recourse.metrics import ImageRecourse, image_recourse
from recourse.visualise import difference_map, to_pil

ROOT = Path(__file__).resolve().parents[1]
TEACHER_DIR = ROOT / "checkpoints" / "classifier"
VARIANTS_DIR = ROOT / "checkpoints" / "variants"
VARIANTS: tuple[str, ...] = ("ptq-int8", "ptq-int4", "cf-ptq", "cfq-qat", "mixedprec-qat", "kd-quant", "prune-quant")

ImageSource = str | os.PathLike | bytes | Image.Image | torch.Tensor


class VariantNotFoundError(CheckpointError):
    """A known variant whose checkpoint folder has not been made (or committed) yet."""


@dataclass(frozen=True)
class AuditSettings:
    """Everything that changes an audit's numbers; saved with every result."""

    counterfactual: CounterfactualConfig = field(default_factory=CounterfactualConfig)
    attribution: AttributionConfig = field(default_factory=AttributionConfig)

    def to_dict(self) -> dict:
        return {"counterfactual": asdict(self.counterfactual), "attribution": asdict(self.attribution)}


@dataclass(frozen=True)
class Models:
    """The teacher and the three forms of the student an audit needs."""

    teacher: nn.Module  # full precision
    student_twin: nn.Module  # fake-quantized, differentiable: guidance and gradient attributions
    student: nn.Module  # integer kernels where they exist (else the twin): decisions, Occlusion
    variant: str

    @property
    def student_kind(self) -> str:
        return "twin" if self.student is self.student_twin else "integer"


@dataclass(frozen=True)
class Predictions:
    """Step 2, shown before the slower steps finish. Tensors: ``aligned (3, H, W)`` in [0, 1],
    probabilities ``(40,)``."""

    aligned: torch.Tensor
    alignment: str  # what the alignment did, for the user
    variant: str
    attribute: str
    target: int
    teacher_probabilities: torch.Tensor
    student_probabilities: torch.Tensor
    diverging: tuple[str, ...]  # attributes whose decisions differ

    def to_dict(self) -> dict:
        return {
            "variant": self.variant, "attribute": self.attribute, "target": self.target, "alignment": self.alignment,
            "teacher_probabilities": _named(self.teacher_probabilities),
            "student_probabilities": _named(self.student_probabilities),
            "diverging_attributes": list(self.diverging),
        }


@dataclass(frozen=True)
class AuditResult:
    """A whole audit. Images are ``(3, H, W)`` in [0, 1]; difference maps are ``x' − x``."""

    predictions: Predictions
    teacher_counterfactual: torch.Tensor  # x'_f
    student_counterfactual: torch.Tensor  # x'_g
    teacher_difference: torch.Tensor
    student_difference: torch.Tensor
    probabilities_after: dict[str, float]  # p_a of each model on each counterfactual
    recourse: ImageRecourse  # V_f(x'_f), V_g(x'_f), V_g(x'_g), costs, CRG_i, DirSim_i
    attributions: tuple[AttributionComparison, ...]
    settings: AuditSettings
    seed: int
    student_model: str  # "integer" or "twin": which form of the student made the decisions
    versions: dict[str, str]
    seconds: dict[str, float]

    @property
    def verdict(self) -> str:
        return verdict(self.recourse)

    def to_dict(self) -> dict:
        r = self.recourse
        return {
            **self.predictions.to_dict(),
            "verdict": self.verdict,
            "recourse": {
                "teacher_valid": r.teacher_valid, "student_accepts_teacher": r.student_accepts_teacher,
                "student_valid": r.student_valid, "teacher_cost": round(r.teacher_cost, 6),
                "student_cost": round(r.student_cost, 6), "crg": _round(r.crg), "dirsim": _round(r.dirsim),
                "reason": r.reason,
            },
            "probabilities_after": {k: round(v, 6) for k, v in self.probabilities_after.items()},
            "attributions": [a.to_dict() for a in self.attributions],
            "student_model": self.student_model,
            "settings": self.settings.to_dict(), "seed": self.seed, "versions": self.versions,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "images": {name: png_data_uri(picture) for name, picture in self.pictures().items()},
        }

    def pictures(self) -> dict[str, Image.Image]:
        """Every image of the audit at model resolution, by name."""
        x = self.predictions.aligned
        pictures = {
            "aligned": to_pil(x),
            "teacher_counterfactual": to_pil(self.teacher_counterfactual),
            "student_counterfactual": to_pil(self.student_counterfactual),
            "teacher_difference": difference_map(x, self.teacher_counterfactual),
            "student_difference": difference_map(x, self.student_counterfactual),
        }
        for comparison in self.attributions:
            pictures[f"{comparison.method}_teacher"] = attribution_picture(comparison.teacher)
            pictures[f"{comparison.method}_student"] = attribution_picture(comparison.student)
        return pictures


@dataclass(frozen=True)
class AuditStep:
    """Progress of :func:`audit_steps`: a stage name, the fraction done, and what is ready."""

    stage: str
    fraction: float
    predictions: Predictions | None = None
    result: AuditResult | None = None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _named(probabilities: torch.Tensor) -> dict[str, float]:
    return {name: round(float(p), 6) for name, p in zip(ATTRIBUTES, probabilities)}


def png_data_uri(picture: Image.Image) -> str:
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def verdict(recourse: ImageRecourse) -> str:
    """The audit's outcome in plain words."""
    if not recourse.teacher_valid:
        return ("The full-precision model found no valid recourse for this face, so there is no recourse "
                "for the quantized model to honour.")
    first = ("The quantized model rejects the recourse the full-precision model accepts."
             if not recourse.student_accepts_teacher else
             "The quantized model accepts the recourse the full-precision model accepts.")
    if not recourse.student_valid:
        return first + " Guided by itself, the quantized model finds no valid recourse."
    change = recourse.student_cost / recourse.teacher_cost - 1 if recourse.teacher_cost else 0.0
    size = f"{abs(change):.0%} {'larger' if change >= 0 else 'smaller'}"
    return (first + f" Its own recourse is a {size} change than the full-precision one, in a direction "
            f"{recourse.dirsim:.0f}% similar (100% = the same direction).")


# ---------------------------------------------------------------------------------------
# Models, loaded once and shared read-only by every audit
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def load_teacher() -> nn.Module:
    return load_classifier(TEACHER_DIR)


@functools.lru_cache(maxsize=len(VARIANTS))
def load_student(variant: str):
    """The variant's ``QuantizedModel`` from ``checkpoints/variants/<variant>/``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    directory = VARIANTS_DIR / variant
    if not (directory / "config.json").is_file():
        raise VariantNotFoundError(
            f"variant {variant!r} is not available: {_shown(directory)}/ is missing. Make it with "
            f"python -m recourse quantize --method {variant} --data PATH")
    from recourse.quantization import load_variant

    return load_variant(directory)


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def load_models(variant: str) -> Models:
    student = load_student(variant)
    return Models(load_teacher(), student.twin, student.integer if student.integer is not None else student.twin, variant)


# ---------------------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------------------


def prepare_image(image: ImageSource, resolution: int) -> tuple[torch.Tensor, str]:
    """``(3, R, R)`` in [0, 1] and a message. Photos (path, bytes, PIL) are aligned; a
    ``(3, R, R)`` tensor is taken as already framed."""
    if isinstance(image, torch.Tensor):
        if image.shape != (3, resolution, resolution) or not image.is_floating_point():
            raise ValueError(f"a framed image must be a float (3, {resolution}, {resolution}) tensor, "
                             f"got {tuple(image.shape)} {image.dtype}")
        if float(image.min()) < 0 or float(image.max()) > 1:
            raise ValueError("a framed image must have values in [0, 1]")
        return image.float(), "already framed; used as given"
    from recourse.faces import align_face

    aligned = align_face(image, resolution)
    return to_float_images(aligned.image), aligned.message


def _check_target(target: int | None) -> None:
    if target is not None and target not in (0, 1):
        raise ValueError(f"target must be 0, 1 or None (flip the full-precision decision), got {target!r}")


@torch.no_grad()
def _probabilities(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(model(images))


def audit_steps(
    image: ImageSource,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings = AuditSettings(),
    models: Models | None = None,
    generator=None,
) -> Iterator[AuditStep]:
    """Run an audit, yielding after each stage; the last step carries the :class:`AuditResult`.

    ``models`` and ``generator`` default to the committed checkpoints (loaded once);
    tests pass tiny ones.
    """
    index = attribute_index(attribute)
    _check_target(target)
    models = models if models is not None else load_models(variant)
    # generate() works on its own copy of the scheduler, so audits may share the generator
    generator = generator if generator is not None else default_generator()
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    # (1, 2) framing and predictions
    resolution = getattr(getattr(models.teacher, "config", None), "resolution", 64)
    x, alignment = prepare_image(image, resolution)
    teacher_p = _probabilities(models.teacher, x[None])[0]
    student_p = _probabilities(models.student, x[None])[0]
    teacher_d, student_d = teacher_p >= 0.5, student_p >= 0.5
    diverging = tuple(name for name, differs in zip(ATTRIBUTES, (teacher_d != student_d).tolist()) if differs)
    target = int(not teacher_d[index]) if target is None else int(target)
    predictions = Predictions(x, alignment, variant, attribute, target, teacher_p, student_p, diverging)
    seconds["predictions"] = time.perf_counter() - started
    yield AuditStep("predictions", 0.1, predictions=predictions)

    # (3) both recourses, same seed
    seed = settings.counterfactual.seed
    teacher_cf = generate(x[None], models.teacher, attribute, target, settings.counterfactual, generator, seeds=(seed,))
    yield AuditStep("teacher counterfactual", 0.35, predictions=predictions)
    student_cf = generate(x[None], models.student_twin, attribute, target, settings.counterfactual, generator,
                          seeds=(seed,))
    seconds["counterfactuals"] = time.perf_counter() - started - seconds["predictions"]
    yield AuditStep("student counterfactual", 0.6, predictions=predictions)

    # (4) validity: the teacher judges its own recourse, the student's decisions come from
    # the model that is deployed (integer kernels)
    x_f, x_g = teacher_cf.images[0], student_cf.images[0]
    student_on_both = _probabilities(models.student, torch.stack([x_f, x_g]))[:, index]
    teacher_after = float(teacher_cf.probability_after[0])
    recourse = image_recourse(
        x, x_f, x_g,
        teacher_valid=(teacher_after >= 0.5) == bool(target),
        student_accepts_teacher=(float(student_on_both[0]) >= 0.5) == bool(target),
        student_valid=(float(student_on_both[1]) >= 0.5) == bool(target),
    )
    probabilities_after = {
        "teacher_on_teacher_counterfactual": teacher_after,
        "student_on_teacher_counterfactual": float(student_on_both[0]),
        "student_on_student_counterfactual": float(student_on_both[1]),
        "twin_on_student_counterfactual": float(student_cf.probability_after[0]),
    }

    # (5) attributions: same method and settings on both models
    mark = time.perf_counter()
    config = settings.attribution
    gradient = compare_maps("integrated-gradients", integrated_gradients(models.teacher, x, index, config),
                            integrated_gradients(models.student_twin, x, index, config), "twin", config)
    yield AuditStep("gradient attributions", 0.8, predictions=predictions)
    occluded = compare_maps("occlusion", occlusion(models.teacher, x, index, config),
                            occlusion(models.student, x, index, config), models.student_kind, config)
    seconds["attributions"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started

    result = AuditResult(
        predictions=predictions, teacher_counterfactual=x_f, student_counterfactual=x_g,
        teacher_difference=x_f - x, student_difference=x_g - x, probabilities_after=probabilities_after,
        recourse=recourse, attributions=(gradient, occluded), settings=settings, seed=seed,
        student_model=models.student_kind, versions=_versions(), seconds=seconds,
    )
    yield AuditStep("done", 1.0, predictions=predictions, result=result)


def audit_image(
    image: ImageSource,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings = AuditSettings(),
    models: Models | None = None,
    generator=None,
    progress: Callable[[AuditStep], None] | None = None,
) -> AuditResult:
    """Audit one face; see the module docstring. ``image``: a photo (path, bytes or PIL,
    aligned automatically) or a framed ``(3, H, W)`` tensor in [0, 1]."""
    for step in audit_steps(image, variant, attribute, target, settings, models, generator):
        if progress is not None:
            progress(step)
        if step.result is not None:
            return step.result
    raise RuntimeError("the audit ended without a result")  # unreachable: the last step carries it


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str]:
    import captum

    return {"recourse": __version__, "torch": torch.__version__, "captum": captum.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


# ---------------------------------------------------------------------------------------
# Finding failures in a folder
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FolderCase:
    """One image of a scanned folder: its framed image ``(3, H, W)`` and recourse values."""

    filename: str
    image: torch.Tensor
    target: int
    recourse: ImageRecourse
    divergence: float | None  # see divergence_score; None where there is nothing to compare


def divergence_score(recourse: ImageRecourse) -> float | None:
    """Ranks recourse failures, worst first: 1 if the student rejects the teacher's recourse,
    plus 1 if the student finds no valid recourse of its own, plus ``(1 − DirSim_i/100) / 2``
    where DirSim_i is defined. ``None`` when the teacher has no valid recourse."""
    if not recourse.teacher_valid:
        return None
    score = float(not recourse.student_accepts_teacher) + float(not recourse.student_valid)
    if recourse.dirsim is not None:
        score += (1 - recourse.dirsim / 100) / 2
    return score


def _rank(cases: list[FolderCase]) -> list[FolderCase]:
    return sorted(cases, key=lambda c: (c.divergence is None, -(c.divergence or 0.0), c.filename))


def read_folder(folder: str | os.PathLike, split: str, count: int, resolution: int) -> tuple[tuple[str, ...], Iterator[torch.Tensor]]:
    """The first ``count`` images of ``split`` of a folder in either CelebA layout, framed like
    the training images (original CelebA photos are aligned), one ``(3, R, R)`` at a time."""
    from recourse.data import detect_layout, image_dir, open_rgb, resize_square, select_split

    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    root = Path(folder)
    framer = resize_square
    if detect_layout(root) == "celeba":
        from recourse.faces import CelebAFramer

        framer = CelebAFramer()
    names = select_split(root, split).filenames[:count]
    if not names:
        raise ValueError(f"{root}: split {split!r} has no images")
    directory = image_dir(root)
    images = (to_float_images(framer(open_rgb(directory / name), resolution)) for name in names)
    return names, images


def scan_folder(
    folder: str | os.PathLike,
    variant: str,
    attribute: str,
    count: int = 16,
    split: str = "test",
    settings: AuditSettings = AuditSettings(),
    batch_size: int = 1,
    models: Models | None = None,
    generator=None,
) -> Iterator[tuple[int, int, list[FolderCase]]]:
    """Rank a folder's images by recourse divergence for one variant and attribute.

    Yields ``(done, total, cases ranked worst first)`` after each batch. Each image gets the
    seed of ``settings`` and the target that flips the teacher's decision, as a single audit
    of it would. With ``batch_size=1`` (the default) an audit of a listed image reproduces its
    row exactly; larger batches are faster but change the convolutions' rounding, which the
    student twin's quantization and twenty guided steps can amplify into visibly different values.
    """
    index = attribute_index(attribute)
    models = models if models is not None else load_models(variant)
    # generate() works on its own copy of the scheduler, so audits may share the generator
    generator = generator if generator is not None else default_generator()
    resolution = getattr(getattr(models.teacher, "config", None), "resolution", 64)
    names, images = read_folder(folder, split, count, resolution)
    seed = settings.counterfactual.seed
    cases: list[FolderCase] = []
    for start in range(0, len(names), batch_size):
        batch_names = names[start:start + batch_size]
        x = torch.stack([next(images) for _ in batch_names])  # (B, 3, H, W)
        targets = (_probabilities(models.teacher, x)[:, index] < 0.5).long()  # flip the teacher's decision
        seeds = (seed,) * len(x)
        teacher_cf = generate(x, models.teacher, attribute, targets, settings.counterfactual, generator, seeds=seeds)
        student_cf = generate(x, models.student_twin, attribute, targets, settings.counterfactual, generator, seeds=seeds)
        on_teacher = _probabilities(models.student, teacher_cf.images)[:, index] >= 0.5
        on_student = _probabilities(models.student, student_cf.images)[:, index] >= 0.5
        for i, name in enumerate(batch_names):
            wanted = bool(targets[i])
            recourse = image_recourse(x[i], teacher_cf.images[i], student_cf.images[i],
                                      teacher_valid=bool(teacher_cf.valid[i]),
                                      student_accepts_teacher=bool(on_teacher[i]) == wanted,
                                      student_valid=bool(on_student[i]) == wanted)
            cases.append(FolderCase(name, x[i], int(targets[i]), recourse, divergence_score(recourse)))
        yield len(cases), len(names), _rank(cases)
