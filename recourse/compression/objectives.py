"""Objectives of the fine-tuning and search methods: ``loss(twin, images, labels, generator) -> scalar``.

The counterfactual-aware term comes in two kinds (``RECOURSE_OBJECTIVES``):

* ``"match"`` — the student's 40 logits match the teacher's at the teacher's recourse
  points *and* at partial edits ``x + α(x'_f − x)``, α uniform in [0, 1]: it learns where
  the teacher's boundary lies, on both sides, so it neither rejects the teacher's
  recourse nor accepts what the teacher still rejects;
* ``"target"`` — the BCE to the hard target at the recourse points only.
  It has no upper bound, so it rewards a student that leans towards the target (kept as an
  ablation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch
import torch.nn.functional as F
from torch import nn

from recourse.data import to_float_images

if TYPE_CHECKING:
    from recourse.compression.recourse_points import RecoursePoints

Objective = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]
# A recourse term: ``term(model, generator) -> scalar`` on a random batch of recourse points.
RecourseTerm = Callable[[nn.Module, torch.Generator], torch.Tensor]
RECOURSE_OBJECTIVES = ("match", "target")


def recourse_loss(model: nn.Module, points: RecoursePoints, index: torch.Tensor | None = None) -> torch.Tensor:
    """Mean BCE of ``model``'s logit of each point's attribute against the point's target:
    low when the model decides the teacher's recourse points as the teacher does."""
    index = torch.arange(points.count) if index is None else index
    logits = model(points.images[index]).gather(1, points.attributes[index, None]).squeeze(1)
    return F.binary_cross_entropy_with_logits(logits, points.targets[index])


def partial_edits(points: RecoursePoints, originals: torch.Tensor, index: torch.Tensor,
                  fractions: torch.Tensor) -> torch.Tensor:
    """``x + α(x'_f − x)`` for the points ``index`` (``originals`` are the images the points
    were made from, indexed by ``points.sources``) and one ``α`` per point."""
    start = to_float_images(originals[points.sources[index]])
    return start + fractions.view(-1, 1, 1, 1) * (points.images[index] - start)


def matching_loss(model: nn.Module, teacher: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """Mean squared difference of the 40 logits of ``model`` and ``teacher`` on ``inputs``."""
    with torch.no_grad():
        wanted = teacher(inputs)
    return F.mse_loss(model(inputs), wanted)


def recourse_term(kind: str, points: RecoursePoints, batch_size: int, teacher: nn.Module | None = None,
                  originals: torch.Tensor | None = None) -> RecourseTerm:
    """The ``kind`` term (``RECOURSE_OBJECTIVES``) on ``batch_size`` random points per call;
    ``"match"`` needs the ``teacher`` and the ``originals`` the points were made from."""
    if kind not in RECOURSE_OBJECTIVES:
        raise ValueError(f"recourse objective must be one of {', '.join(RECOURSE_OBJECTIVES)}, got {kind!r}")
    if kind == "match" and (teacher is None or originals is None):
        raise ValueError("the matching objective needs the teacher and the images the points were made from")
    size = min(batch_size, points.count)

    def term(model: nn.Module, generator: torch.Generator) -> torch.Tensor:
        index = torch.randperm(points.count, generator=generator)[:size]
        if kind == "target":
            return recourse_loss(model, points, index)
        fractions = torch.rand(size, generator=generator)
        return matching_loss(model, teacher, partial_edits(points, originals, index, fractions))

    return term


def label_objective(term: RecourseTerm | None = None, recourse_weight: float = 0.0) -> Objective:
    """BCE on the labels, plus ``recourse_weight`` × ``term`` when one is given."""

    def loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        value = F.binary_cross_entropy_with_logits(model(images), labels)
        if term is not None and recourse_weight > 0:
            value = value + recourse_weight * term(model, generator)
        return value

    return loss


def distillation_objective(teacher: nn.Module, temperature: float, weight: float) -> Objective:
    """``(1 − weight)`` × BCE on the labels + ``weight · T²`` × BCE against the teacher's
    probabilities at temperature ``T`` (Hinton et al.'s distillation, per attribute)."""

    def loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        with torch.no_grad():
            soft = torch.sigmoid(teacher(images) / temperature)
        logits = model(images)
        hard = F.binary_cross_entropy_with_logits(logits, labels)
        distilled = F.binary_cross_entropy_with_logits(logits / temperature, soft)
        return (1 - weight) * hard + weight * temperature ** 2 * distilled

    return loss
