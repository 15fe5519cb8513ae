"""Compressing a classifier: one entry point, one small config class per method.

``quantize(model, config, calibration_images) -> QuantizedModel`` never modifies ``model``.
Every result has a differentiable fake-quantized ``twin`` (for gradient guidance and
gradient attributions) and, where this CPU has kernels for it, an ``integer`` model that
runs PyTorch's x86 quantized engine with the *same* scales and zero points: the twin is
the model that the integer one is converted from.

Implemented so far: ``ptq-int8``, ``ptq-int4`` and ``prune-quant``. The remaining methods
of the benchmark (``cf-ptq``, ``cfq-qat``, ``mixedprec-qat``, ``kd-quant``) are not built
yet.

Why FX graph mode (``torch.ao.quantization.quantize_fx``), which PyTorch marks as
deprecated in favour of torchao's pt2e flow: it is the API in this torch build that both
converts to real x86 integer kernels and gives a trainable fake-quant twin, without an
extra dependency; the compute-budget measurement (2.45× at batch 32) was made with it.
"""

from __future__ import annotations

import copy
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from recourse.checkpoints import CheckpointError, load_weights, read_config, write_checkpoint
from recourse.classifier import AttributeClassifier, ClassifierConfig

# Activations: 8-bit with x86's reduced range (7 bits used), min/max from calibration.
# Weights: symmetric per output channel.
_ACTIVATION_RANGE = {"quant_min": 0, "quant_max": 255, "reduce_range": True}


@dataclass(frozen=True)
class _PostTrainingConfig:
    calibration_images: int = 512  # from the training split
    method: ClassVar[str]
    weight_bits: ClassVar[int]

    def __post_init__(self) -> None:
        if self.calibration_images < 1:
            raise ValueError(f"calibration_images must be >= 1, got {self.calibration_images}")


@dataclass(frozen=True)
class PTQInt8Config(_PostTrainingConfig):
    """Post-training quantization: 8-bit weights (per channel) and activations."""

    method: ClassVar[str] = "ptq-int8"
    weight_bits: ClassVar[int] = 8


@dataclass(frozen=True)
class PTQInt4Config(_PostTrainingConfig):
    """Post-training quantization: 4-bit weights (per channel), 8-bit activations.

    There are no 4-bit kernels on this CPU: only the fake-quantized twin exists.
    """

    method: ClassVar[str] = "ptq-int4"
    weight_bits: ClassVar[int] = 4


@dataclass(frozen=True)
class PruneQuantConfig(_PostTrainingConfig):
    """Global magnitude pruning of convolution and linear weights, then ``ptq-int8``.

    No fine-tuning between the two: the pruned weights stay exactly zero after batch-norm
    folding and quantization.
    """

    sparsity: float = 0.3  # share of conv/linear weights set to zero
    method: ClassVar[str] = "prune-quant"
    weight_bits: ClassVar[int] = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.sparsity < 1.0:
            raise ValueError(f"sparsity must be in [0, 1), got {self.sparsity}")


QuantizationConfig = PTQInt8Config | PTQInt4Config | PruneQuantConfig


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


@dataclass
class QuantizedModel:
    """A compressed variant: its differentiable twin and, for 8-bit, its integer model."""

    twin: nn.Module  # fake-quantized, eval mode, gradients flow (straight-through)
    integer: nn.Module | None  # x86 quantized kernels, or None where the CPU has none
    config: QuantizationConfig
    bits_per_weight: float
    seconds: float  # time to make it (calibration and conversion): T_make of Overhead
    details: dict = field(default_factory=dict)

    @property
    def fastest(self) -> nn.Module:
        """The model to time and to query for decisions: integer kernels where they exist."""
        return self.integer if self.integer is not None else self.twin


def _qconfig(weight_bits: int):
    from torch.ao.quantization import FakeQuantize, MinMaxObserver, PerChannelMinMaxObserver, QConfig

    half = 2 ** (weight_bits - 1)
    return QConfig(
        activation=FakeQuantize.with_args(observer=MinMaxObserver, **_ACTIVATION_RANGE),
        weight=FakeQuantize.with_args(observer=PerChannelMinMaxObserver, quant_min=-half, quant_max=half - 1,
                                      dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
    )


def _prepare_twin(model: nn.Module, weight_bits: int, example: torch.Tensor) -> nn.Module:
    from torch.ao.quantization import QConfigMapping
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    mapping = QConfigMapping().set_global(_qconfig(weight_bits))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notice, once per call
        return prepare_qat_fx(copy.deepcopy(model).train(), mapping, (example,))


@torch.no_grad()
def _calibrate(twin: nn.Module, images: torch.Tensor, batch_size: int = 64) -> None:
    from torch.ao.quantization import disable_observer

    twin.eval()  # batch norm uses the trained running statistics, folded into the convolutions
    for start in range(0, len(images), batch_size):
        twin(images[start:start + batch_size])
    twin.apply(disable_observer)


def _to_integer(twin: nn.Module) -> nn.Module:
    from torch.ao.quantization.quantize_fx import convert_fx

    torch.backends.quantized.engine = "x86"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_fx(copy.deepcopy(twin)).eval()


def quantize(model: nn.Module, config: QuantizationConfig, calibration_images: torch.Tensor) -> QuantizedModel:
    """Compress ``model`` (left unchanged) with ``config``, calibrating on images
    ``(N, 3, H, W)`` in [0, 1] from the training split (the first
    ``config.calibration_images`` are used)."""
    if not isinstance(config, (PTQInt8Config, PTQInt4Config, PruneQuantConfig)):
        raise ValueError(f"unknown quantization config {config!r}")
    if calibration_images.ndim != 4 or calibration_images.shape[1] != 3:
        raise ValueError(f"calibration_images must be (N, 3, H, W), got {tuple(calibration_images.shape)}")
    started = time.perf_counter()
    images = calibration_images[: config.calibration_images]
    details: dict[str, Any] = {"calibration_images": len(images), "activation_bits": 8, "engine": "x86"}
    if isinstance(config, PruneQuantConfig):
        model = magnitude_prune(model, config.sparsity)
        details["sparsity"] = config.sparsity
    twin = _prepare_twin(model, config.weight_bits, images[:2])
    _calibrate(twin, images)
    integer = _to_integer(twin) if config.weight_bits == 8 else None
    return QuantizedModel(
        twin=twin, integer=integer, config=config, bits_per_weight=float(config.weight_bits),
        seconds=time.perf_counter() - started, details=details,
    )


CONFIGS = {config.method: config for config in (PTQInt8Config, PTQInt4Config, PruneQuantConfig)}


def save_variant(variant: QuantizedModel, base: AttributeClassifier, directory: str | os.PathLike,
                 metadata: dict[str, Any] | None = None) -> Path:
    """Write the twin's weights and quantization parameters (``model.safetensors``) and a
    ``config.json`` with the method, bits, the base architecture and ``metadata``."""
    record = {
        "method": variant.config.method, "settings": asdict(variant.config),
        "bits_per_weight": variant.bits_per_weight, "make_seconds": round(variant.seconds, 2),
        "integer_kernels": variant.integer is not None, "classifier": base.config.to_dict(),
        **variant.details, **(metadata or {}),
    }
    return write_checkpoint(variant.twin, directory, record)


def load_variant(directory: str | os.PathLike) -> QuantizedModel:
    """Rebuild a saved variant (twin and integer model) without unpickling anything."""
    record = read_config(directory)
    if record.get("method") not in CONFIGS:
        raise CheckpointError(f"{Path(directory) / 'config.json'}: not a compressed variant "
                              f"(unknown method {record.get('method')!r})")
    config = CONFIGS[record["method"]](**record["settings"])
    base = AttributeClassifier(ClassifierConfig.from_dict(record["classifier"])).eval()
    resolution = base.config.resolution
    twin = _prepare_twin(base, config.weight_bits, torch.zeros(2, 3, resolution, resolution))
    load_weights(twin, directory)
    from torch.ao.quantization import disable_observer

    twin.eval().apply(disable_observer)
    integer = _to_integer(twin) if config.weight_bits == 8 else None
    details = {k: v for k, v in record.items() if k not in ("method", "settings", "bits_per_weight", "make_seconds", "classifier")}
    return QuantizedModel(twin, integer, config, float(record["bits_per_weight"]), float(record["make_seconds"]), details)
