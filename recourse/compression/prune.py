"""``prune-quant``: global magnitude pruning of conv/linear weights, then ``ptq-int8``.

No fine-tuning between the two: the pruned weights stay exactly zero through quantization.
The variant is stored and run dense (8-bit codes, zeros included).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import PruneQuantConfig


def magnitude_prune(model: nn.Module, sparsity: float) -> nn.Module:
    """A copy of ``model`` whose smallest-magnitude conv/linear weights (globally) are zero."""
    pruned = copy.deepcopy(model)
    weights = [m.weight for m in pruned.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    if sparsity == 0 or not weights:
        return pruned
    magnitudes = torch.cat([w.detach().abs().flatten() for w in weights])
    count = int(sparsity * len(magnitudes))
    threshold = magnitudes.kthvalue(count).values if count else magnitudes.min() - 1
    with torch.no_grad():
        for weight in weights:
            weight.mul_((weight.abs() > threshold).to(weight.dtype))
    return pruned


@register(PruneQuantConfig)
def prune_then_quantize(config: PruneQuantConfig, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(magnitude_prune(inputs.teacher, config.sparsity), config, inputs,
                                    config.weight_bits)
    details["sparsity"] = config.sparsity
    details["storage"] = "dense 8-bit codes (pruned weights stored as zero codes; no sparse format or kernels)"
    return twin, details
