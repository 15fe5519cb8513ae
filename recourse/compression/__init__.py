"""Compression: ``quantize(model, config, images, ...)`` with one small config class per method.

Layout, bottom up: ``fakequant`` (primitives) → ``configs`` → ``api`` (the registry and
``quantize``) → one module per family of methods, each registering its handler →
``storage`` (packed weight codes). The method list, :data:`METHODS`, comes from the registry.

Methods: ``ptq-int8``, ``ptq-int4`` (post-training, min/max rounding; optionally 8-bit
first convolution and head), ``gptq`` (post-training, GPTQ's error-compensating rounding,
4 bits by default with the ends at 8), ``cf-ptq`` (4-bit, clipping chosen to
also keep the teacher's decisions at its recourse points), ``cfq-qat`` and
``mixedprec-qat`` (per-layer bits under a mean-bits budget, then QAT; only ``cfq-qat``
uses the recourse points), ``kd-quant`` (4-bit QAT with distillation) and ``prune-quant``
(magnitude pruning, then int8).
"""

# Registration order is the order of every table and list in the project.
from recourse.compression import ptq, gptq, cf_ptq, qat, prune  # noqa: F401  (each registers its handlers)
from recourse.compression.api import (
    CompressionInputs, QuantizedModel, config_classes, make_config, quantize, register,
)
from recourse.compression.configs import (
    CFPTQConfig, CFQQATConfig, CompressionConfig, GPTQConfig, KDQuantConfig, MixedPrecQATConfig, PruneQuantConfig,
    PTQInt4Config, PTQInt8Config,
)
from recourse.compression.storage import load_variant, save_variant

METHODS: tuple[str, ...] = tuple(config_classes())

__all__ = [
    "CFPTQConfig", "CFQQATConfig", "CompressionConfig", "CompressionInputs", "GPTQConfig", "KDQuantConfig", "METHODS",
    "MixedPrecQATConfig", "PTQInt4Config", "PTQInt8Config", "PruneQuantConfig", "QuantizedModel", "config_classes",
    "make_config",
    "load_variant", "quantize", "register", "save_variant",
]
