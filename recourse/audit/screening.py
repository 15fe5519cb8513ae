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

:func:`screen_by_edits` looks closer, where the audit's edit is cheap (a region-space edit:
each model steers a few coefficients of a face part's space): both models make the audit's
own kind of edit with a fraction of its steps (:data:`SCREEN_SPACE_STEPS`), and the same three
readings are taken at the audit's margin on those edits (the compressed model's logit on the
original's edit, its own edit's reach, the cosine of the two changes).

The score mirrors the full audit's ranking (``recourse.audit.scan.divergence_score``: a rejected
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


SCREEN_SPACE_STEPS = 10  # of the audit's 40: the screening's edits


def screen_by_edits(files: list[str], images: torch.Tensor, teacher: nn.Module, twin: nn.Module | None,
                    decider: nn.Module, attribute: str, margin: float, config, generator) -> list[ScreenRow]:
    """The first look through short edits of the audit's own kind (``config``: the audit's edit
    settings, its steps cut to :data:`SCREEN_SPACE_STEPS`). ``twin`` None: a black box, whose
    edit is steered by the original's gradient and decided by ``decider``."""
    from dataclasses import replace

    from recourse.audit.paired import stop_on_paths
    from recourse.generation import generate

    index = attribute_index(attribute)
    with torch.no_grad():
        teacher_logits = teacher(images)[:, index]
        student_logits = decider(images)[:, index]
    targets = (teacher_logits < 0).long()
    sign = targets.float() * 2 - 1
    short = replace(config, space_steps=min(config.space_steps, SCREEN_SPACE_STEPS))
    seeds = (config.seed,) * len(images)
    teacher_edits = generate(images, teacher, attribute, targets, short, generator, seeds=seeds).edits
    student_edits = generate(images, twin if twin is not None else teacher, attribute, targets, short, generator,
                             seeds=seeds, decider=decider).edits
    teacher_at = stop_on_paths(images, teacher_edits, teacher, attribute, targets, margin)
    student_at = stop_on_paths(images, student_edits, decider, attribute, targets, margin)
    with torch.no_grad():
        on_teacher = decider(teacher_at)[:, index] * sign
        own = decider(student_at)[:, index] * sign - margin
        reached = teacher(teacher_at)[:, index] * sign >= margin
    cosine = nn.functional.cosine_similarity((teacher_at - images).flatten(1), (student_at - images).flatten(1), dim=1)
    rows = []
    for i, file in enumerate(files):
        score = float(torch.sigmoid(-on_teacher[i]) + torch.sigmoid(-own[i])) + (1 - float(cosine[i])) / 2
        rows.append(ScreenRow(file, int(targets[i]), float(teacher_logits[i] * sign[i]),
                              float(student_logits[i] * sign[i]), float(cosine[i]),
                              SCREEN_SPACE_STEPS if bool(reached[i]) else None, float(on_teacher[i]), float(own[i]),
                              score))
    return rows


def shortlist(rows: list[ScreenRow], top: int) -> list[ScreenRow]:
    """The ``top`` faces most likely to diverge, highest score first (file name breaks ties)."""
    return sorted(rows, key=lambda row: (-row.score, row.file))[:top]
