"""``cf-ptq``: 4-bit post-training quantization whose per-layer weight clipping is chosen to
keep the teacher's outputs on ordinary images *and* its decisions at its recourse points."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import CFPTQConfig
from recourse.compression.fakequant import set_weight_quantizer, weight_layers
from recourse.compression.objectives import recourse_loss
from recourse.data import to_float_images
from recourse.progress import Progress


@register(CFPTQConfig)
def counterfactual_aware_ptq(config: CFPTQConfig, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(inputs.teacher, config, inputs, config.weight_bits)
    search = to_float_images(inputs.images[: config.search_images])
    with torch.no_grad():
        target_probabilities = torch.sigmoid(inputs.teacher(search))
    points = inputs.recourse_points.subset(config.search_images)

    def objective(candidate: nn.Module) -> float:
        with torch.no_grad():
            data = F.binary_cross_entropy_with_logits(candidate(search), target_probabilities)
            return float(data + config.recourse_weight * recourse_loss(candidate, points))

    details["layer_clip"] = search_clipping(twin, config.weight_bits, config.clip_grid, objective, inputs.progress)
    return twin, details


def search_clipping(twin: nn.Module, bits: int, grid: tuple[float, ...], objective: Callable[[nn.Module], float],
                    progress: Progress) -> dict[str, float]:
    """Greedy, layer by layer in forward order: keep the clip ratio with the lowest objective."""
    chosen: dict[str, float] = {}
    layers = weight_layers(twin)
    for done, (name, layer) in enumerate(layers.items()):
        scores = {}
        for clip in grid:
            set_weight_quantizer(layer, bits, clip)
            scores[clip] = objective(twin)
        chosen[name] = min(scores, key=scores.get)
        set_weight_quantizer(layer, bits, chosen[name])
        progress("clipping search", done + 1, len(layers))
    return chosen
