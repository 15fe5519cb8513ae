"""Post-training quantization: ``ptq-int8`` and ``ptq-int4`` (per-channel min/max weights)."""

from __future__ import annotations

from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import PTQInt4Config, PTQInt8Config
from recourse.compression.fakequant import bits_with_ends, recalibrate_activations, set_weight_quantizer, weight_layers
from recourse.data import to_float_images


@register(PTQInt4Config)
@register(PTQInt8Config)  # the decorator nearest the function registers first
def post_training_quantization(config: PTQInt8Config | PTQInt4Config, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(inputs.teacher, config, inputs, config.weight_bits)
    ends_bits = getattr(config, "ends_bits", None)
    if ends_bits is not None:
        layers = weight_layers(twin)
        for name, bits in bits_with_ends(list(layers), config.weight_bits, ends_bits).items():
            set_weight_quantizer(layers[name], bits)
        # the ranges were measured with the ends at weight_bits: measure them on what runs
        recalibrate_activations(twin, to_float_images(inputs.images[: config.calibration_images]))
        details["ends_bits"] = ends_bits
    return twin, details
