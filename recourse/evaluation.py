"""Classifier accuracy on labelled images: per attribute, mean, and the majority baseline."""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import torch
from torch import nn

from recourse.data import ATTRIBUTES, majority_baseline, to_float_images
from recourse.metrics import decisions


@dataclass(frozen=True)
class AccuracyResult:
    """Accuracy of 40 attribute decisions against labels, in percent."""

    per_attribute: dict[str, float]
    mean: float
    baseline_per_attribute: dict[str, float]
    baseline_mean: float
    n_images: int

    def to_dict(self) -> dict:
        return {
            "n_images": self.n_images,
            "mean_accuracy": self.mean,
            "majority_baseline_mean": self.baseline_mean,
            "per_attribute": self.per_attribute,
            "majority_baseline_per_attribute": self.baseline_per_attribute,
        }


@torch.no_grad()
def predict_logits(model: nn.Module, images: np.ndarray, batch_size: int = 256) -> torch.Tensor:
    """Logits ``(N, 40)`` for ``uint8 (N, 3, H, W)`` images, in eval mode."""
    model.eval()
    device = next(model.parameters(), torch.empty(0)).device  # packed variants hold buffers only
    outputs = []
    for start in range(0, len(images), batch_size):
        batch = to_float_images(images[start:start + batch_size]).to(device)
        outputs.append(model(batch.contiguous(memory_format=torch.channels_last)).cpu())
    return torch.cat(outputs)


def accuracy_from_logits(logits: torch.Tensor, labels: np.ndarray) -> AccuracyResult:
    per_attribute = (decisions(logits).numpy() == labels).mean(axis=0) * 100
    baseline = majority_baseline(labels) * 100
    return AccuracyResult(
        per_attribute={a: round(float(v), 2) for a, v in zip(ATTRIBUTES, per_attribute)},
        mean=round(float(per_attribute.mean()), 2),
        baseline_per_attribute={a: round(float(v), 2) for a, v in zip(ATTRIBUTES, baseline)},
        baseline_mean=round(float(baseline.mean()), 2),
        n_images=len(labels),
    )


def evaluate_accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int = 256) -> AccuracyResult:
    return accuracy_from_logits(predict_logits(model, images, batch_size), labels)
