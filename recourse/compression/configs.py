"""One small, self-validating config class per compression method (torchao's pattern).

A config names its method, says what inputs the method needs, and holds the method's
settings; :func:`recourse.compression.quantize` dispatches on its class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from recourse.compression.fakequant import BIT_CHOICES


@dataclass(frozen=True)
class CompressionConfig:
    """Settings every method shares; subclasses add their own."""

    calibration_images: int = 512  # from the training split: activation ranges
    method: ClassVar[str]
    needs_labels: ClassVar[bool] = False
    needs_recourse_points: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.calibration_images < 1:
            raise ValueError(f"calibration_images must be >= 1, got {self.calibration_images}")


@dataclass(frozen=True)
class PTQInt8Config(CompressionConfig):
    """Post-training quantization: 8-bit weights (per channel) and activations."""

    method: ClassVar[str] = "ptq-int8"
    weight_bits: ClassVar[int] = 8


@dataclass(frozen=True)
class PTQInt4Config(CompressionConfig):
    """Post-training quantization: 4-bit weights (per channel, min/max), 8-bit activations."""

    method: ClassVar[str] = "ptq-int4"
    weight_bits: ClassVar[int] = 4


@dataclass(frozen=True)
class PruneQuantConfig(CompressionConfig):
    """Global magnitude pruning of convolution and linear weights, then ``ptq-int8``.

    No fine-tuning between the two: the pruned weights stay exactly zero through
    quantization.
    """

    sparsity: float = 0.3  # share of conv/linear weights set to zero
    method: ClassVar[str] = "prune-quant"
    weight_bits: ClassVar[int] = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.sparsity < 1.0:
            raise ValueError(f"sparsity must be in [0, 1), got {self.sparsity}")


@dataclass(frozen=True)
class CFPTQConfig(CompressionConfig):
    """``ptq-int4`` whose per-layer weight clipping is chosen, layer by layer, to keep the
    teacher's outputs on ordinary images *and* the teacher's decisions at its recourse
    points (activation ranges are calibrated on both kinds of images)."""

    recourse_weight: float = 1.0  # weight of the recourse-point term in the clipping search
    search_images: int = 256  # ordinary images and recourse points used by the search
    clip_grid: tuple[float, ...] = (1.0, 0.9, 0.8, 0.7, 0.6)  # share of max |w| kept per channel
    method: ClassVar[str] = "cf-ptq"
    weight_bits: ClassVar[int] = 4
    needs_recourse_points: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.clip_grid or any(not 0 < c <= 1 for c in self.clip_grid):
            raise ValueError(f"clip_grid values must be in (0, 1], got {self.clip_grid}")
        if self.recourse_weight < 0 or self.search_images < 1:
            raise ValueError("recourse_weight must be >= 0 and search_images >= 1")


@dataclass(frozen=True)
class QATConfig(CompressionConfig):
    steps: int = 300  # fine-tuning steps
    batch_size: int = 64
    learning_rate: float = 1e-4
    seed: int = 0
    needs_labels: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps < 0 or self.batch_size < 1 or self.learning_rate <= 0:
            raise ValueError(f"steps must be >= 0, batch_size >= 1, learning_rate > 0; got "
                             f"{self.steps}, {self.batch_size}, {self.learning_rate}")


@dataclass(frozen=True)
class MixedPrecisionConfig(QATConfig):
    budget: float = 4.0  # mean bits per weight, the same budget as ptq-int4
    bit_choices: tuple[int, ...] = BIT_CHOICES
    sensitivity_images: int = 256

    def __post_init__(self) -> None:
        super().__post_init__()
        if any(b not in BIT_CHOICES for b in self.bit_choices):
            raise ValueError(f"bit_choices must be among {BIT_CHOICES}, got {self.bit_choices}")
        if not min(self.bit_choices) <= self.budget <= 8:
            raise ValueError(f"budget must be between {min(self.bit_choices)} and 8 bits, got {self.budget}")


@dataclass(frozen=True)
class MixedPrecQATConfig(MixedPrecisionConfig):
    """QAT on the labels; per-layer bits chosen by the loss increase each layer shows
    when quantized alone, under a mean-bits budget."""

    method: ClassVar[str] = "mixedprec-qat"


@dataclass(frozen=True)
class CFQQATConfig(MixedPrecisionConfig):
    """``mixedprec-qat`` whose objective — for the bit allocation and for fine-tuning —
    adds the teacher's target decision at the teacher's recourse points."""

    recourse_weight: float = 1.0
    recourse_batch_size: int = 32
    method: ClassVar[str] = "cfq-qat"
    needs_recourse_points: ClassVar[bool] = True


@dataclass(frozen=True)
class KDQuantConfig(QATConfig):
    """QAT of 4-bit weights with knowledge distillation from the full-precision teacher."""

    temperature: float = 2.0
    distillation_weight: float = 0.5  # share of the loss on the teacher's soft decisions
    method: ClassVar[str] = "kd-quant"
    weight_bits: ClassVar[int] = 4
