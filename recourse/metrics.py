"""Metrics of ``shared/docs/metrics.md`` as pure functions on tensors.

Decisions are ``(N,)`` or ``(N, 40)`` tensors of 0/1; images ``(N, 3, H, W)`` in [0, 1].
"""

from __future__ import annotations

import torch


def decisions(logits: torch.Tensor) -> torch.Tensor:
    """``d = [sigmoid(logit) >= 0.5]`` as 0/1 integers."""
    return (logits >= 0).long()


def recourse_cost(originals: torch.Tensor, counterfactuals: torch.Tensor) -> torch.Tensor:
    """``c(x, x') = mean |x' − x|`` over all 3·H·W values, one per image ``(N,)``."""
    return (counterfactuals - originals).abs().flatten(1).mean(dim=1)


# --- counterfactual quality (DiME / ACE protocol) -------------------------------------


def flip_rate(decisions_after: torch.Tensor, target: torch.Tensor) -> float:
    """FR: share of counterfactuals whose decision equals the target, in percent."""
    if len(target) == 0:
        return float("nan")
    return 100.0 * float((decisions_after == target).float().mean())


def mean_number_of_attributes_changed(before: torch.Tensor, after: torch.Tensor, attribute: int) -> float:
    """MNAC: mean count of the *other* 39 attributes whose (oracle) decision changed."""
    changed = (before != after).float()
    changed[:, attribute] = 0
    return float(changed.sum(dim=1).mean()) if len(before) else float("nan")


def frechet_distance(features_a: torch.Tensor, features_b: torch.Tensor) -> float:
    """Fréchet distance between Gaussians fitted to two feature sets ``(N, D)``, ``(M, D)``.

    ``‖μa − μb‖² + Tr(Σa + Σb − 2 (Σa^½ Σb Σa^½)^½)``, in float64 with symmetric square
    roots (eigen-decompositions), so no scipy is needed.
    """
    a, b = features_a.double(), features_b.double()
    mean_a, mean_b = a.mean(dim=0), b.mean(dim=0)
    cov_a, cov_b = torch.cov(a.T), torch.cov(b.T)
    root_a = _sqrt_psd(cov_a)
    cross = _sqrt_psd(root_a @ cov_b @ root_a)
    distance = (mean_a - mean_b).square().sum() + torch.trace(cov_a + cov_b - 2 * cross)
    return float(distance)


def _sqrt_psd(matrix: torch.Tensor) -> torch.Tensor:
    values, vectors = torch.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * values.clamp_min(0).sqrt()) @ vectors.T
