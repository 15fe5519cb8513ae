"""Attribution maps of one attribute for the teacher and the student, and their divergence.

Two Captum methods, as ``docs/metrics.md`` asks:

* ``IntegratedGradients`` — a gradient method, so on the student it runs on the
  differentiable fake-quantized twin;
* ``Occlusion`` — gradient-free, so on the student it runs on the integer-kernel model itself.

Both return one value per pixel: the attribution summed over the three colour channels
(signed). Two maps are compared by the Spearman rank correlation of their pixels and by
the IoU of their top-10% pixels by magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from captum.attr import IntegratedGradients, Occlusion
from torch import nn

from recourse.validation import check_float, check_int

Method = Literal["integrated-gradients", "occlusion"]


@dataclass(frozen=True)
class AttributionConfig:
    """Settings shared by both models, so that their maps are comparable.

    The defaults keep the four maps of an audit well under a second on two CPU cores.
    """

    ig_steps: int = 16  # Gauss-Legendre points of the path integral, evaluated as one batch
    ig_baseline: float = 0.0  # black image
    occlusion_window: int = 8  # square patch, pixels
    occlusion_stride: int = 8  # = window: 64 patches, one batch (stride 4 would take 225 forwards)
    occlusion_baseline: float = 0.5  # patches are replaced by mid-grey
    top_fraction: float = 0.1  # share of pixels compared by the IoU

    def __post_init__(self) -> None:
        check_int("ig_steps", self.ig_steps, 2, 512)  # one batch of this many images
        check_float("ig_baseline", self.ig_baseline, 0.0, 1.0)  # an image value
        check_int("occlusion_window", self.occlusion_window, 1, 256)
        check_int("occlusion_stride", self.occlusion_stride, 1, self.occlusion_window)  # no pixel left out
        check_float("occlusion_baseline", self.occlusion_baseline, 0.0, 1.0)
        check_float("top_fraction", self.top_fraction, 0.0, 1.0, low_open=True)


@dataclass(frozen=True)
class AttributionComparison:
    """One method's maps for both models. ``teacher`` and ``student`` are ``(H, W)``."""

    method: Method
    teacher: torch.Tensor
    student: torch.Tensor
    student_model: Literal["twin", "integer"]  # which form of the student was explained
    spearman: float | None  # None when a map is constant (rank correlation undefined)
    top_iou: float
    reason: str  # why spearman is None, or ""

    def to_dict(self) -> dict:
        return {"method": self.method, "student_model": self.student_model,
                "spearman": None if self.spearman is None else round(self.spearman, 6),
                "top_iou": round(self.top_iou, 6), "reason": self.reason}


def _check_image(image: torch.Tensor) -> None:
    if image.ndim != 3 or image.shape[0] != 3:
        raise ValueError(f"image must be (3, H, W), got {tuple(image.shape)}")


def integrated_gradients(model: nn.Module, image: torch.Tensor, index: int, config: AttributionConfig) -> torch.Tensor:
    """IntegratedGradients of logit ``index`` for ``image`` ``(3, H, W)`` in [0, 1] → ``(H, W)``."""
    _check_image(image)
    explainer = IntegratedGradients(model)
    # All path points in one batch: a single forward and backward pass.
    attribution = explainer.attribute(image[None], baselines=config.ig_baseline, target=index,
                                      n_steps=config.ig_steps, internal_batch_size=config.ig_steps)
    return attribution[0].detach().sum(dim=0)


@torch.no_grad()
def occlusion(model: nn.Module, image: torch.Tensor, index: int, config: AttributionConfig) -> torch.Tensor:
    """Occlusion of logit ``index`` (drop when a patch is greyed out) → ``(H, W)``.

    Needs only forward passes, so it runs on integer kernels.
    """
    _check_image(image)
    window, stride = config.occlusion_window, config.occlusion_stride
    positions = math.ceil((image.shape[1] - window) / stride + 1) * math.ceil((image.shape[2] - window) / stride + 1)
    attribution = Occlusion(model).attribute(
        image[None], sliding_window_shapes=(3, window, window), strides=(3, stride, stride),
        baselines=config.occlusion_baseline, target=index, perturbations_per_eval=max(1, positions))
    return attribution[0].sum(dim=0)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks starting at 0, ties sharing their mean rank (as Spearman's rho requires)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values), dtype=np.float64)
    _, groups = np.unique(values, return_inverse=True)
    return (np.bincount(groups, weights=ranks) / np.bincount(groups))[groups]


def spearman_correlation(first: torch.Tensor, second: torch.Tensor) -> float | None:
    """Spearman's rank correlation of two maps over their pixels; ``None`` if either is constant."""
    if first.shape != second.shape:
        raise ValueError(f"maps differ in shape: {tuple(first.shape)} vs {tuple(second.shape)}")
    a = _ranks(first.detach().flatten().double().numpy())
    b = _ranks(second.detach().flatten().double().numpy())
    a, b = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    if denominator == 0:
        return None
    return float((a * b).sum()) / denominator


def top_fraction_iou(first: torch.Tensor, second: torch.Tensor, fraction: float = 0.1) -> float:
    """IoU of the ``fraction`` of pixels with the largest magnitude in each map."""
    if first.shape != second.shape:
        raise ValueError(f"maps differ in shape: {tuple(first.shape)} vs {tuple(second.shape)}")
    count = max(1, math.ceil(fraction * first.numel()))
    top_first = set(torch.argsort(first.detach().flatten().abs(), descending=True, stable=True)[:count].tolist())
    top_second = set(torch.argsort(second.detach().flatten().abs(), descending=True, stable=True)[:count].tolist())
    return len(top_first & top_second) / len(top_first | top_second)


def compare_maps(method: Method, teacher: torch.Tensor, student: torch.Tensor, student_model: Literal["twin", "integer"],
                 config: AttributionConfig) -> AttributionComparison:
    spearman = spearman_correlation(teacher, student)
    reason = "" if spearman is not None else "a map is constant: the model's output does not depend on any pixel"
    return AttributionComparison(method, teacher, student, student_model, spearman,
                                 top_fraction_iou(teacher, student, config.top_fraction), reason)
