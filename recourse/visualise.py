"""Pictures of counterfactuals: original | counterfactual | difference map."""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image


def to_pil(image: torch.Tensor) -> Image.Image:
    """``(3, H, W)`` in [0, 1] → RGB picture."""
    array = (image.detach().clamp(0, 1).permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def difference_map(original: torch.Tensor, counterfactual: torch.Tensor) -> Image.Image:
    """Per-pixel change, red where the counterfactual is brighter and blue where darker,
    scaled so that the largest change is fully saturated."""
    change = (counterfactual - original).mean(dim=0)  # (H, W)
    scale = float(change.abs().max()) or 1.0
    normalised = (change / scale).clamp(-1, 1)
    red = normalised.clamp(min=0)
    blue = (-normalised).clamp(min=0)
    rgb = torch.stack([1 - blue, 1 - red - blue, 1 - red]).clamp(0, 1)
    return to_pil(rgb)


def side_by_side(original: torch.Tensor, counterfactual: torch.Tensor, scale: int = 4) -> Image.Image:
    """One picture: original | counterfactual | difference map, each enlarged ``scale`` times."""
    panels = [to_pil(original), to_pil(counterfactual), difference_map(original, counterfactual)]
    width, height = panels[0].size
    canvas = Image.new("RGB", (3 * width * scale + 2 * 4, height * scale), (255, 255, 255))
    for i, panel in enumerate(panels):
        canvas.paste(panel.resize((width * scale, height * scale), Image.Resampling.NEAREST), (i * (width * scale + 4), 0))
    return canvas
