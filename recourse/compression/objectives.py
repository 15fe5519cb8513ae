"""Objectives of the fine-tuning and search methods: ``loss(twin, images, labels, generator) -> scalar``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch
import torch.nn.functional as F
from torch import nn

if TYPE_CHECKING:
    from recourse.compression.recourse_points import RecoursePoints

Objective = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]


def recourse_loss(model: nn.Module, points: RecoursePoints, index: torch.Tensor | None = None) -> torch.Tensor:
    """Mean BCE of ``model``'s logit of each point's attribute against the point's target:
    low when the model decides the teacher's recourse points as the teacher does."""
    index = torch.arange(points.count) if index is None else index
    logits = model(points.images[index]).gather(1, points.attributes[index, None]).squeeze(1)
    return F.binary_cross_entropy_with_logits(logits, points.targets[index])


def label_objective(points: RecoursePoints | None = None, recourse_weight: float = 0.0,
                    recourse_batch_size: int = 32) -> Objective:
    """BCE on the labels, plus ``recourse_weight`` × :func:`recourse_loss` on a random batch
    of recourse points when ``points`` are given."""

    def loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        value = F.binary_cross_entropy_with_logits(model(images), labels)
        if points is not None and recourse_weight > 0:
            size = min(recourse_batch_size, points.count)
            index = torch.randperm(points.count, generator=generator)[:size]
            value = value + recourse_weight * recourse_loss(model, points, index)
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
