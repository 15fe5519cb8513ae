"""Post-training quantization: ``ptq-int8`` and ``ptq-int4`` (per-channel min/max weights)."""

from __future__ import annotations

from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import PTQInt4Config, PTQInt8Config


@register(PTQInt4Config)
@register(PTQInt8Config)  # the decorator nearest the function registers first
def post_training_quantization(config: PTQInt8Config | PTQInt4Config, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    return calibrated_twin(inputs.teacher, config, inputs, config.weight_bits)
