"""The project's own robust judges as scorers beside the independent ones: trained on the same
CelebA-HQ faces as the classifier, so they are shown as secondary columns and labelled so
(a CelebA-HQ-64 shortcut that moves the classifier may move them too).

Their score is the attribute's logit; the threshold is chosen on validation like every other
judge's (``recourse.instruments.calibration``), not taken as 0.
"""

from __future__ import annotations

import numpy as np
import torch

from recourse.data import attribute_index

ATTRIBUTES = ("Young", "Male", "Smiling", "Mouth_Slightly_Open", "Eyeglasses")


def _logits(model: torch.nn.Module, images: torch.Tensor) -> dict[str, np.ndarray]:
    with torch.no_grad():
        logits = model(images.float()).double().numpy()
    return {attribute: logits[:, attribute_index(attribute)] for attribute in ATTRIBUTES}


def robust_scores(images: torch.Tensor) -> dict[str, np.ndarray]:
    """The radius-1 robust judge's logits (``checkpoints/judge``)."""
    from recourse.models import load_judge

    return _logits(load_judge(), images)


def strong_scores(images: torch.Tensor) -> dict[str, np.ndarray]:
    """The radius-3 robust judge's logits (``checkpoints/strong-judge``)."""
    from recourse.models import load_strong_judge

    return _logits(load_strong_judge(), images)
