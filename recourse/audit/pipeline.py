"""One per-image recourse audit: what the UI and ``python -m recourse audit`` both call.

For one face ``x``, attribute ``a`` and target ``t`` (default: flip the teacher's decision),
following ``docs/metrics.md``:

1. align ``x`` to the training framing (uploads) or take it as given (framed tensors);
2. both models' 40 probabilities and the attributes whose decisions differ;
3. paired recourse (:mod:`recourse.audit.paired`): ``x'_f`` and ``x'_g`` with the same seed, the
   three validities, both costs, ``CRG_i`` and ``DirSim_i``;
4. IntegratedGradients (teacher vs twin) and Occlusion (teacher vs decider), with their
   Spearman rank correlation and top-10% IoU;
5. the independent robust judge's view of both recourses: "valid" says that a model moved,
   the judge says whether the attribute changed as a person would see it; beside it the
   stronger judge (radius 3) where it is trained;
6. identity: dlib's face-descriptor distance of each recourse to the face, the same person at
   ``≤ 0.6`` (``docs/metrics.md``, FVA). The judges and identity only measure: they never guide.

Right after step 3, each shown recourse goes through the artifact check
(:mod:`recourse.generation.spaces.artifacts`): where it fails, the judges' and identity's
ticks on that edit do not count.

:func:`audit_steps` yields after step 2 so that a UI can show predictions first;
:func:`audit_image` runs it to the end. What an audit takes and gives is in
:mod:`recourse.audit.result`, the instruments of steps 5 and 6 in :mod:`recourse.audit.instruments`,
its verdict in plain words in :mod:`recourse.audit.verdict`.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace

import numpy as np
import torch
from PIL import Image
from torch import nn

from recourse import __version__
from recourse.attribution import AttributionComparison, compare_maps, integrated_gradients, occlusion
from recourse.audit.edit_path import RecoursePath, recourse_path
from recourse.audit.instruments import (
    COMMITTED, JUDGED_RESOLUTION, Describe, artifact_checks, identity_view, independent_readings, judge_view,
    judged_path, model_probabilities, model_resolution, resolve_identity, resolve_judge, resolve_strong_judge,
)
from recourse.audit.paired import Student, paired_recourse, read_stops
from recourse.audit.stops import for_attribute
from recourse.audit.result import AuditResult, AuditSettings, Predictions, product_settings
from recourse.data import ATTRIBUTES, attribute_index, to_float_images
from recourse.generation import FaceGenerator
from recourse.generation.methods import edit_kind
from recourse.progress import StageCheck, no_check

ImageSource = str | os.PathLike | bytes | Image.Image | torch.Tensor


@dataclass(frozen=True)
class AuditStep:
    """Progress of :func:`audit_steps`: a stage name, the fraction done, and what is ready."""

    stage: str
    fraction: float
    predictions: Predictions | None = None
    result: AuditResult | None = None


def predicted_attributes(*models: nn.Module) -> tuple[str, ...]:
    """The attributes every one of ``models`` predicts, in CelebA's order: an auditor's own
    model says which (``supported_attributes``, recourse.foreign); the project's predict all 40."""
    kept = set(ATTRIBUTES)
    for model in models:
        kept &= set(getattr(model, "supported_attributes", ATTRIBUTES))
    return tuple(name for name in ATTRIBUTES if name in kept)


DISPLAY_RESOLUTION = 256


def prepare_image(image: ImageSource, resolution: int,
                  check: StageCheck = no_check) -> tuple[torch.Tensor, str, torch.Tensor | None]:
    """``(3, R, R)`` in [0, 1], a message, and the same framing at display size when the photo
    has more pixels than the model sees. Photos (path, bytes, PIL) are aligned; a
    ``(3, R, R)`` tensor is taken as already framed. ``check`` after decoding and aligning."""
    if isinstance(image, torch.Tensor):
        if image.shape != (3, resolution, resolution) or not image.is_floating_point():
            raise ValueError(f"a framed image must be a float (3, {resolution}, {resolution}) tensor, "
                             f"got {tuple(image.shape)} {image.dtype}")
        if not bool(torch.isfinite(image).all()) or float(image.min()) < 0 or float(image.max()) > 1:
            raise ValueError("a framed image must have values in [0, 1]")
        return image.float().contiguous(), "already framed; used as given", None
    from recourse.faces import align_face, crop_square, load_photo

    photo = load_photo(image)
    check("decode")
    aligned = align_face(photo, resolution)
    check("align")
    left, _, right, _ = aligned.crop_box
    display = None
    if right - left > resolution:  # the photo holds more detail than the model's input
        display = to_float_images(crop_square(photo, aligned.crop_box, DISPLAY_RESOLUTION))
    return to_float_images(aligned.image), aligned.message, display


def _check_target(target: int | None) -> None:
    if target is not None and target not in (0, 1):
        raise ValueError(f"target must be 0, 1 or None (flip the full-precision decision), got {target!r}")


def audit_steps(
    image: ImageSource,
    *,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings | None = None,
    teacher: nn.Module | None = None,
    student: Student | None = None,
    generator: FaceGenerator | None = None,
    judge: nn.Module | None | str = COMMITTED,
    strong_judge: nn.Module | None | str = COMMITTED,
    identity: Describe | None | str = COMMITTED,
    check: StageCheck = no_check,
) -> Iterator[AuditStep]:
    """Run an audit, yielding after each stage; the last step carries the :class:`AuditResult`.
    ``check`` is called after each stage, decoding, aligning and each counterfactual among
    them (a time limit raises there).

    ``settings`` default to the product's (:func:`recourse.audit.result.product_settings`: the
    app's and the command line's). ``teacher``, ``student`` and ``generator`` default to the
    committed checkpoints (loaded once); tests pass tiny ones. ``judge`` and ``strong_judge``
    default to the committed robust judges where they are there and see the teacher's input
    size; ``identity`` to dlib's face descriptor (``recourse.instruments.identity.face_descriptor``)
    on faces of at least 64 px; ``None``: left out. What is left out, and why, is in ``missing``.
    """
    from recourse import models

    index = attribute_index(attribute)
    _check_target(target)
    teacher = teacher if teacher is not None else models.load_teacher()
    student = student if student is not None else models.load_student(variant)
    # the committed generator, its files checked against their manifest; generate() works on its
    # own copy of the scheduler, so audits may share it
    generator = generator if generator is not None else models.load_generator()
    settings = attribute_settings(settings if settings is not None else product_settings(), attribute, generator)
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    # (1, 2) framing and predictions
    predictions, student_logits_before = _predict(image, variant, attribute, target, teacher, student, check)
    x, target = predictions.aligned, predictions.target
    seconds["predictions"] = time.perf_counter() - started
    yield AuditStep("predictions", 0.1, predictions=predictions)

    # (3) paired recourse, one seed for both models
    seed = settings.counterfactual.seed
    paired = paired_recourse(x[None], attribute, torch.tensor([target]), teacher, student, settings.edit_config,
                             generator, seeds=(seed,), check=check, concurrent=True)  # one face: both cores
    seconds["counterfactuals"] = time.perf_counter() - started - seconds["predictions"]
    yield AuditStep("counterfactuals", 0.6, predictions=predictions)
    stopped = read_stops(x[None], attribute, torch.tensor([target]), teacher, student, paired, settings.stops)
    x_f, x_g, image_recourse_ = stopped.teacher_pictures[0], stopped.student_pictures[0], stopped.columns.image(0)
    checked = _checked(x, x_f, x_g, attribute, settings, generator, seconds)  # the pictures the audit shows
    probabilities_after, student_logits = _after(x_f, x_g, index, teacher, student, student_logits_before)
    teacher_edit, student_edit = paired.teacher.edits[0], paired.student.edits[0]
    mark = time.perf_counter()
    paths = _paths(x, (teacher_edit, student_edit), attribute, target, teacher, student, settings)
    seconds["paths"] = time.perf_counter() - mark

    # (4) attributions: same method and settings on both models
    mark = time.perf_counter()
    attributions = yield from _attributions(x, index, teacher, student, settings, check, predictions)
    seconds["attributions"] = time.perf_counter() - mark
    check("attributions")
    yield AuditStep("attributions", 0.9, predictions=predictions)

    # (5, 6) what the judges see and whether the person is kept: they never guide
    instruments = _instruments(x, x_f, x_g, attribute, target, teacher, judge, strong_judge, identity, seconds)
    seconds["total"] = time.perf_counter() - started

    result = AuditResult(
        predictions=predictions, teacher_counterfactual=x_f, student_counterfactual=x_g,
        teacher_difference=x_f - x, student_difference=x_g - x, probabilities_after=probabilities_after,
        student_logits=student_logits,
        recourse=image_recourse_, attributions=attributions, settings=settings,
        seed=seed, student_model=student.kind, versions=_versions(), seconds=seconds,
        teacher_edit=teacher_edit, student_edit=student_edit, paths=paths, **instruments, **checked,
    )
    yield AuditStep("done", 1.0, predictions=predictions, result=result)


def attribute_settings(settings: AuditSettings, attribute: str, generator: FaceGenerator) -> AuditSettings:
    """``settings`` with a region-space edit's picture at its attribute's own visible stop."""
    if settings.stops is None:
        return settings
    kind = edit_kind(settings.edit_config, attribute, generator)
    return replace(settings, stops=for_attribute(settings.stops, attribute, kind))


def _predict(image: ImageSource, variant: str, attribute: str, target: int | None, teacher: nn.Module,
             student: Student, check: StageCheck) -> tuple[Predictions, torch.Tensor]:
    """Steps 1 and 2: the framed face and both models' predictions (``target`` filled in: by
    default the flip of the teacher's decision), and the student's 40 logits on it."""
    index = attribute_index(attribute)
    x, alignment, display = prepare_image(image, model_resolution(teacher), check)
    teacher_p = model_probabilities(teacher, x[None])[0]
    with torch.no_grad():
        student_logits_before = student.decider(x[None])[0]  # (40,)
    student_p = torch.sigmoid(student_logits_before)
    teacher_d, student_d = teacher_p >= 0.5, student_p >= 0.5
    predicted = predicted_attributes(teacher, student.twin, student.decider)
    diverging = tuple(name for name, differs in zip(ATTRIBUTES, (teacher_d != student_d).tolist())
                      if differs and name in predicted)
    target = int(not teacher_d[index]) if target is None else int(target)
    predictions = Predictions(x, alignment, display, variant, attribute, target, teacher_p, student_p, diverging,
                              predicted)
    return predictions, student_logits_before


def _after(x_f: torch.Tensor, x_g: torch.Tensor, index: int, teacher: nn.Module, student: Student,
           student_logits_before: torch.Tensor) -> tuple[dict[str, float], dict[str, float]]:
    """Each model's ``p_a`` on both recourses, and the student's logit of ``a`` on x, x'_f and x'_g."""
    with torch.no_grad():
        on_teacher, on_own = (float(v) for v in student.decider(torch.stack([x_f, x_g]))[:, index])
        twin_on_own = float(torch.sigmoid(student.twin(x_g[None])[0, index]))
    probabilities_after = {
        "teacher_on_teacher_counterfactual": float(model_probabilities(teacher, x_f[None])[0, index]),
        "teacher_on_student_counterfactual": float(model_probabilities(teacher, x_g[None])[0, index]),
        "student_on_teacher_counterfactual": 1 / (1 + math.exp(-on_teacher)),
        "student_on_student_counterfactual": 1 / (1 + math.exp(-on_own)),
        "twin_on_student_counterfactual": twin_on_own,
    }
    student_logits = {"original": float(student_logits_before[index]), "teacher_counterfactual": on_teacher,
                      "student_counterfactual": on_own}
    return probabilities_after, student_logits


def _checked(x: torch.Tensor, x_f: torch.Tensor, x_g: torch.Tensor, attribute: str, settings: AuditSettings,
             generator: FaceGenerator, seconds: dict[str, float]) -> dict:
    """The :class:`AuditResult` fields of the artifact check of both recourses and of which edit
    they are (from the edit's settings, the ones actually used); its time added to ``seconds``."""
    mark = time.perf_counter()
    artifacts = artifact_checks(x, x_f, x_g, attribute, generator)
    seconds["artifacts"] = time.perf_counter() - mark
    return {"artifacts": artifacts, "edit_kind": edit_kind(settings.edit_config, attribute, generator)}


def _paths(x: torch.Tensor, edits: tuple[torch.Tensor, torch.Tensor], attribute: str, target: int,
           teacher: nn.Module, student: Student, settings: AuditSettings) -> tuple[RecoursePath, ...]:
    """Both models' logits along each model's whole edit, with its stops (and, on the faces
    the judges were calibrated on, their readings along it)."""
    index = attribute_index(attribute)
    paths = tuple(recourse_path(x, edit, index, target, teacher, student.decider, guided_by, settings.path_margins())
                  for edit, guided_by in zip(edits, ("teacher", "student")))
    if model_resolution(teacher) == JUDGED_RESOLUTION:
        paths = tuple(judged_path(path, x, edit, attribute) for path, edit in zip(paths, edits))
    return paths


def _attributions(x: torch.Tensor, index: int, teacher: nn.Module, student: Student, settings: AuditSettings,
                  check: StageCheck, predictions: Predictions
                  ) -> Generator[AuditStep, None, tuple[AttributionComparison, AttributionComparison]]:
    """Step 4, yielding between its two methods: IntegratedGradients (teacher vs twin), then
    Occlusion (teacher vs decider); returns both comparisons (``yield from``)."""
    config = settings.attribution
    gradient = compare_maps("integrated-gradients", integrated_gradients(teacher, x, index, config),
                            integrated_gradients(student.twin, x, index, config), "twin", config)
    check("gradient attributions")
    yield AuditStep("gradient attributions", 0.8, predictions=predictions)
    occluded = compare_maps("occlusion", occlusion(teacher, x, index, config),
                            occlusion(student.decider, x, index, config), student.kind, config)
    return gradient, occluded


def _instruments(x: torch.Tensor, x_f: torch.Tensor, x_g: torch.Tensor, attribute: str, target: int,
                 teacher: nn.Module, judge: nn.Module | None | str, strong_judge: nn.Module | None | str,
                 identity: Describe | None | str, seconds: dict[str, float]) -> dict:
    """Steps 5 and 6: the :class:`AuditResult` fields of the judges, identity, the calibrated
    judges' readings and what is missing; each one's time added to ``seconds``."""
    index = attribute_index(attribute)
    mark = time.perf_counter()
    resolution = model_resolution(teacher)
    judged = judge_view(resolve_judge(judge, resolution), x, x_f, x_g, index, target)
    strong, missing_strong = resolve_strong_judge(strong_judge, resolution)
    describe, missing_identity = resolve_identity(identity, resolution)
    missing = {name: why for name, why in (("strong_judge", missing_strong), ("identity", missing_identity)) if why}
    strongly_judged = judge_view(strong, x, x_f, x_g, index, target)
    seconds["judges"] = time.perf_counter() - mark
    mark = time.perf_counter()
    kept = identity_view(describe, x, x_f, x_g)
    seconds["identity"] = time.perf_counter() - mark
    mark = time.perf_counter()
    readings, missing_readings = independent_readings(x, x_f, x_g, attribute, target, resolution)
    if missing_readings:
        missing["judge_readings"] = missing_readings
    seconds["judge readings"] = time.perf_counter() - mark
    return {"judge": judged, "strong_judge": strongly_judged, "identity": kept, "missing": missing,
            "judge_readings": readings}


def audit_image(
    image: ImageSource,
    *,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings | None = None,
    teacher: nn.Module | None = None,
    student: Student | None = None,
    generator: FaceGenerator | None = None,
    progress: Callable[[AuditStep], None] | None = None,
    judge: nn.Module | None | str = COMMITTED,
    strong_judge: nn.Module | None | str = COMMITTED,
    identity: Describe | None | str = COMMITTED,
) -> AuditResult:
    """Audit one face; see the module docstring. ``image``: a photo (path, bytes or PIL,
    aligned automatically) or a framed ``(3, H, W)`` tensor in [0, 1]; the other arguments as
    :func:`audit_steps` takes them (``settings``: by default the app's and the command line's)."""
    steps = audit_steps(image, variant=variant, attribute=attribute, target=target, settings=settings,
                        teacher=teacher, student=student, generator=generator, judge=judge,
                        strong_judge=strong_judge, identity=identity)
    for step in steps:
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
