"""The noise floor of the recourse metrics: the full-precision teacher with Gaussian
weight noise, no quantization, at the same agreement with the teacher as a variant.

Any two slightly different models disagree somewhere, so CRG, DirSim, VD and false
acceptance are never zero; a variant is only worse than "some model that agrees this
much" by what it shows beyond this control.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from recourse.metrics import agreement, decisions


@dataclass(frozen=True)
class NoiseControl:
    model: nn.Module
    sigma: float  # noise std relative to each weight tensor's std
    agreement: float  # with the teacher on the matching images, %
    target_agreement: float
    seed: int


@torch.no_grad()
def noisy_copy(model: nn.Module, sigma: float, seed: int = 0) -> nn.Module:
    """An eval-mode copy whose weight tensors (two or more dimensions: convolutions and
    linear layers) get ``sigma × std(W)`` Gaussian noise; biases and norms are kept."""
    noisy = copy.deepcopy(model).eval()
    generator = torch.Generator().manual_seed(seed)
    for name, parameter in sorted(noisy.named_parameters()):
        if parameter.ndim >= 2:
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            parameter.add_(sigma * float(parameter.std()) * noise)
    return noisy


def _all_decisions(model: nn.Module, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    return torch.cat([decisions(model(images[i:i + batch_size])) for i in range(0, len(images), batch_size)])


@torch.no_grad()
def matched_noise(teacher: nn.Module, images: torch.Tensor, target_agreement: float, seed: int = 0,
                  iterations: int = 14, batch_size: int = 250) -> NoiseControl:
    """The noisy teacher whose decision agreement with ``teacher`` on ``images`` (float in
    [0, 1]) is closest to ``target_agreement`` (%), by bisection on ``sigma`` (agreement
    falls as the noise grows)."""
    reference = _all_decisions(teacher, images, batch_size)
    low, high = 0.0, 1.0
    best = (float("inf"), 0.0, 100.0)
    for _ in range(iterations):
        sigma = (low + high) / 2
        value = agreement(reference, _all_decisions(noisy_copy(teacher, sigma, seed), images, batch_size))
        if abs(value - target_agreement) < best[0]:
            best = (abs(value - target_agreement), sigma, value)
        if value > target_agreement:
            low = sigma
        else:
            high = sigma
    _, sigma, value = best
    return NoiseControl(noisy_copy(teacher, sigma, seed), sigma, value, target_agreement, seed)


@torch.no_grad()
def noise_at(teacher: nn.Module, images: torch.Tensor, target_agreement: float, sigma: float, seed: int = 0,
             batch_size: int = 250) -> NoiseControl:
    """The noisy teacher at a ``sigma`` that :func:`matched_noise` found before, its agreement
    on ``images`` measured again (one pass instead of the bisection's fourteen)."""
    model = noisy_copy(teacher, sigma, seed)
    value = agreement(_all_decisions(teacher, images, batch_size), _all_decisions(model, images, batch_size))
    return NoiseControl(model, sigma, value, target_agreement, seed)
