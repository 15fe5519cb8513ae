"""A cheap first look at where a compressed model's recourse may depart from its original's,
to choose which faces of a large folder get a full audit.

A full audit edits each face twice through the generator (seconds a face); this look costs a
few passes of the classifiers (milliseconds). For each face, with the target that flips the
full-precision decision, it reads:

* both models' signed logits on the face (``+`` on the target side);
* the agreement of their input gradients towards the target (the cosine): where the two
  models would push the face in different directions, their recourse directions differ;
* a short path along each model's own gradient, in steps of a fixed mean pixel change: the
  step at which the full-precision model reaches the audit's margin, the compressed model's
  signed logit at that point (negative: it rejects what convinced the original), and whether
  the compressed model crosses its own boundary at all along its own path.

:func:`screen_by_edits` looks through the audit's own edits where they are cheap (a region-space
edit: each model steers a few coefficients of a face part's space), a whole batch of faces at
once and without the judge or the pictures: the same numbers as the audit's, scored as the audit
ranks (measured: ``scripts.measurements.screening_recall``).

The gradient screening's score mirrors the full audit's ranking (``recourse.audit.scan.divergence_score``: a rejected
recourse, a missing recourse, the direction gap), each term made continuous so that faces
rank without ties: ``σ(−s_g(x_f)) + σ(−s_g(x_g)) + (1 − cos)/2``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from recourse.data import attribute_index

PATH_STEPS = 12  # points along each short path
PATH_STEP_CHANGE = 0.006  # mean |Δpixel| added per step (0-1 scale); 12 steps reach a large edit's 0.07


@dataclass(frozen=True)
class ScreenRow:
    """One face's first look; signed logits are ``+`` on the target side."""

    file: str
    target: int
    teacher_logit: float  # on the face, signed
    student_logit: float  # the compressed model's decision, signed
    cosine: float | None  # of the two input gradients towards the target; None for a black box
    teacher_reach: int | None  # the step where the original reaches the margin along its path; None: not within it
    student_at_teacher: float  # the compressed model's signed logit at that step (the path's end where none)
    student_own_end: float  # its signed logit at the end of its own path, less the margin
    score: float

    def to_dict(self) -> dict:
        return asdict(self)


def _signed_gradient(model: nn.Module, images: torch.Tensor, index: int, sign: torch.Tensor) -> torch.Tensor:
    x = images.detach().clone().requires_grad_(True)
    (model(x)[:, index] * sign).sum().backward()
    return x.grad.detach()


def _path(images: torch.Tensor, gradient: torch.Tensor) -> list[torch.Tensor]:
    """Points along the gradient, each ``PATH_STEP_CHANGE`` more mean change than the last."""
    per_image = gradient.abs().flatten(1).mean(1).clamp_min(1e-12).view(-1, 1, 1, 1)
    direction = gradient / per_image  # mean |direction| = 1
    return [(images + step * PATH_STEP_CHANGE * direction).clamp(0, 1) for step in range(1, PATH_STEPS + 1)]


@torch.no_grad()
def _signed_logits(model: nn.Module, points: list[torch.Tensor], index: int, sign: torch.Tensor) -> torch.Tensor:
    """``(B, len(points))``: the model's signed logit at each point."""
    return torch.stack([model(point)[:, index] * sign for point in points], dim=1)


def screen(files: list[str], images: torch.Tensor, teacher: nn.Module, twin: nn.Module | None, decider: nn.Module,
           attribute: str, margin: float) -> list[ScreenRow]:
    """The first look at ``images`` ``(B, 3, R, R)`` in [0, 1]. ``twin``: the compressed model's
    differentiable form (None for a black box: its own path then follows the original's
    gradient and no cosine is read); ``decider`` makes its decisions."""
    index = attribute_index(attribute)
    with torch.no_grad():
        teacher_logits = teacher(images)[:, index]
        student_logits = decider(images)[:, index]
    targets = (teacher_logits < 0).long()  # the target that flips the original's decision
    sign = targets.float() * 2 - 1
    teacher_gradient = _signed_gradient(teacher, images, index, sign)
    student_gradient = teacher_gradient if twin is None else _signed_gradient(twin, images, index, sign)
    teacher_path = _path(images, teacher_gradient)
    along_teacher = _signed_logits(teacher, teacher_path, index, sign)
    student_along_teacher = _signed_logits(decider, teacher_path, index, sign)
    student_own = _signed_logits(decider, _path(images, student_gradient), index, sign)
    cosine = None if twin is None else nn.functional.cosine_similarity(
        teacher_gradient.flatten(1), student_gradient.flatten(1), dim=1)
    rows = []
    for i, file in enumerate(files):
        reached = (along_teacher[i] >= margin).nonzero()
        reach = int(reached[0]) if len(reached) else None
        at_teacher = float(student_along_teacher[i, PATH_STEPS - 1 if reach is None else reach])
        own_end = float(student_own[i, -1]) - margin
        gap = 0.0 if cosine is None else (1 - float(cosine[i])) / 2
        score = float(torch.sigmoid(torch.tensor(-at_teacher)) + torch.sigmoid(torch.tensor(-own_end))) + gap
        rows.append(ScreenRow(file, int(targets[i]), float(teacher_logits[i] * sign[i]),
                              float(student_logits[i] * sign[i]), None if cosine is None else float(cosine[i]),
                              None if reach is None else reach + 1, at_teacher, own_end, score))
    return rows


def screen_by_edits(files: list[str], images: torch.Tensor, teacher: nn.Module, student, attribute: str,
                    settings, generator) -> list[ScreenRow]:
    """The first look through the audit's own edits, a whole batch at once: both models' edits
    made together (each face as if alone: :func:`recourse.generation.spaces.coefficients.steer_coefficients`),
    read at the audit's numbers' stop and scored as a full audit ranks
    (:func:`recourse.audit.scan.divergence_score`; −1 where the audit gives no score), without
    the judge, the visible stop's pictures or the rounding of one face at a time (a batch's
    convolutions round differently, which a quantized twin can amplify a little: the full audits
    of the shortlist are what a scan reports). ``student``: :class:`recourse.audit.paired.Student`;
    ``settings``: the audit's :class:`recourse.audit.result.AuditSettings`.

    Fields of each row: ``cosine`` is DirSim_i / 100 (None where undefined), ``teacher_reach`` 1
    where the original's own recourse is valid, ``student_at_teacher`` the compressed model's
    signed logit on the original's counterfactual, ``student_own_end`` its signed logit on its
    own, less the margin."""
    from dataclasses import replace

    from recourse.audit.paired import flip_targets, paired_recourse, read_stops
    from recourse.audit.pipeline import attribute_settings
    from recourse.audit.scan import divergence_score

    index = attribute_index(attribute)
    settings = attribute_settings(settings, attribute, generator)
    stops = settings.stops
    if stops is not None:  # the screening reads the numbers only: the pictures at the numbers' stop
        stops = replace(stops, visible=stops.numbers)
    margin = stops.numbers if stops is not None else settings.counterfactual.margin
    targets = flip_targets(teacher, images, attribute)
    sign = targets.float() * 2 - 1
    paired = paired_recourse(images, attribute, targets, teacher, student, settings.edit_config, generator,
                             seeds=(settings.counterfactual.seed,) * len(images))
    stopped = read_stops(images, attribute, targets, teacher, student, paired, stops)
    with torch.no_grad():
        teacher_logits = teacher(images)[:, index]
        student_logits = student.decider(images)[:, index]
        on_teacher = stopped.columns.student_logit.float() * sign  # as a full audit reads it (FolderCase)
        own = student.decider(stopped.student_pictures)[:, index] * sign - margin
    rows = []
    for i, file in enumerate(files):
        recourse = stopped.columns.image(i)
        score = divergence_score(recourse, float(teacher_logits[i]))
        rows.append(ScreenRow(file, int(targets[i]), float(teacher_logits[i] * sign[i]),
                              float(student_logits[i] * sign[i]),
                              None if recourse.dirsim is None else recourse.dirsim / 100,
                              1 if recourse.teacher_valid else None, float(on_teacher[i]), float(own[i]),
                              -1.0 if score is None else score))
    return rows


def shortlist(rows: list[ScreenRow], top: int) -> list[ScreenRow]:
    """The ``top`` faces most likely to diverge, highest score first; equal scores (an edit
    screening's whole-number verdicts) by the compressed model's logit on the original's
    counterfactual, lowest first, as a scan ranks its full audits; then by file name."""
    return sorted(rows, key=lambda row: (-row.score, row.student_at_teacher, row.file))[:top]
