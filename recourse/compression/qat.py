"""Quantization-aware fine-tuning: ``mixedprec-qat``, ``cfq-qat`` and ``kd-quant`` share one loop.

The loop samples batches, flips them, steps Adam with a cosine schedule and re-derives the
weight scales after every step (the bit widths stay as allocated; activation ranges stay
calibrated). ``mixedprec-qat`` and ``cfq-qat`` first choose per-layer bits by measured
sensitivity under a mean-bits budget; only ``cfq-qat`` uses the teacher's recourse points
(calibration, allocation and, with ``recourse_weight > 0``, the loss). ``kd-quant`` distils the teacher at 4 bits.
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import CFQQATConfig, KDQuantConfig, MixedPrecQATConfig
from recourse.compression.fakequant import refresh_weight_quantizers, set_weight_quantizer, weight_layers
from recourse.compression.mixed_precision import choose_bits
from recourse.compression.objectives import Objective, distillation_objective, label_objective, recourse_term
from recourse.data import to_float_images
from recourse.progress import Progress, silent


@register(MixedPrecQATConfig)
@register(CFQQATConfig)  # the decorator nearest the function registers first
def mixed_precision_qat(config: MixedPrecQATConfig | CFQQATConfig, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(inputs.teacher, config, inputs)
    term = allocation_term = None
    if isinstance(config, CFQQATConfig):
        points = inputs.recourse_points
        term = recourse_term(config.recourse_objective, points, config.recourse_batch_size, inputs.teacher,
                             inputs.images)
        # independent of the fine-tuning term, so that cfq-qat and its no-recourse twin
        # (recourse_weight 0) get the same bits
        allocation_term = recourse_term("match", points, config.sensitivity_images, inputs.teacher, inputs.images)
        details["recourse_objective"] = config.recourse_objective
    loss = label_objective(term, getattr(config, "recourse_weight", 0.0))
    sensitivity_loss = label_objective(allocation_term, 1.0)
    sample = torch.arange(min(config.sensitivity_images, len(inputs.images)))
    sample_images, sample_labels = to_float_images(inputs.images[sample]), inputs.labels[sample].float()
    allocation = choose_bits(
        twin, lambda candidate: sensitivity_loss(candidate, sample_images, sample_labels,
                                                 torch.Generator().manual_seed(config.seed)),
        config.bit_choices, config.budget, inputs.progress)
    for name, layer in weight_layers(twin).items():
        set_weight_quantizer(layer, allocation[name])
    details["budget"] = config.budget
    details["fine_tuning"] = _fine_tune_with(twin, loss, config, inputs)
    return twin, details


@register(KDQuantConfig)
def distillation_qat(config: KDQuantConfig, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(inputs.teacher, config, inputs, config.weight_bits)
    loss = distillation_objective(inputs.teacher, config.temperature, config.distillation_weight)
    details["fine_tuning"] = _fine_tune_with(twin, loss, config, inputs)
    return twin, details


def _fine_tune_with(twin: nn.Module, loss: Objective, config, inputs: CompressionInputs) -> dict:
    return fine_tune(twin, loss, inputs.images, inputs.labels, config.steps, config.batch_size,
                     config.learning_rate, config.seed, inputs.progress)


def fine_tune(twin: nn.Module, objective: Objective, images: torch.Tensor, labels: torch.Tensor, steps: int,
              batch_size: int, learning_rate: float, seed: int,
              progress: Progress = silent) -> dict:
    """Fine-tune ``twin`` in place; returns steps, seconds and the mean loss of the last 50 steps."""
    started = time.perf_counter()
    generator = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    with torch.random.fork_rng(devices=[]):  # dropout draws from the global generator: seed it, then restore it
        torch.manual_seed(seed)
        optimizer = torch.optim.Adam(twin.parameters(), lr=learning_rate)
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
            progress("fine-tuning", step + 1, steps)
    refresh_weight_quantizers(twin)
    twin.eval()
    tail = losses[-50:]
    return {"steps": steps, "batch_size": batch_size, "learning_rate": learning_rate,
            "seconds": round(time.perf_counter() - started, 1),
            "final_loss": round(sum(tail) / len(tail), 5) if tail else None}
