"""Quantization-aware fine-tuning of a fake-quantized twin, and the objectives it minimises.

An objective is ``loss(twin, images, labels, generator) -> scalar``; the loop samples
batches, flips them, steps Adam with a cosine schedule and re-derives the weight scales
after every step (the bit widths stay as allocated; activation ranges stay calibrated).
"""

from __future__ import annotations

import math
import time
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from recourse.evaluation import to_float_images
from recourse.recourse_points import RecoursePoints

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


def fine_tune(twin: nn.Module, objective: Objective, images: torch.Tensor, labels: torch.Tensor, steps: int,
              batch_size: int, learning_rate: float, seed: int,
              progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Fine-tune ``twin`` in place; returns steps, seconds and the mean loss of the last 50 steps."""
    from recourse.quantization import refresh_weight_quantizers

    started = time.perf_counter()
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(twin.parameters(), lr=learning_rate)
    losses: list[float] = []
    twin.train()  # dropout; there is no batch norm left and the observers stay off
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate * 0.5 * (1 + math.cos(math.pi * step / steps))
        index = torch.randint(len(images), (batch_size,), generator=generator)
        batch = to_float_images(images[index])
        flip = torch.rand(batch_size, generator=generator) < 0.5
        batch = torch.where(flip.view(-1, 1, 1, 1), batch.flip(3), batch)
        refresh_weight_quantizers(twin)
        loss = objective(twin, batch, labels[index].float(), generator)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress:
            progress("fine-tuning", step + 1, steps)
    refresh_weight_quantizers(twin)
    twin.eval()
    tail = losses[-50:]
    return {"steps": steps, "batch_size": batch_size, "learning_rate": learning_rate,
            "seconds": round(time.perf_counter() - started, 1),
            "final_loss": round(sum(tail) / len(tail), 5) if tail else None}
