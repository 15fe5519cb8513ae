"""One small, self-validating config class per compression method (torchao's pattern).

A config names its method, says what inputs the method needs, and holds the method's
settings; :func:`recourse.compression.quantize` dispatches on its class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from recourse.compression.fakequant import BIT_CHOICES
from recourse.validation import check_float, check_int

MAX_IMAGES = 1_000_000  # calibration, search and sensitivity images (CelebA has 202,599)
MAX_WEIGHT = 10_000.0  # weights of loss terms


def check_bits(name: str, value: object) -> None:
    """``value`` is one of the weight widths a layer may have, or raise a ValueError quoting it."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in BIT_CHOICES:
        raise ValueError(f"{name} must be one of {BIT_CHOICES}, got {value!r}")


@dataclass(frozen=True)
class CompressionConfig:
    """Settings every method shares; subclasses add their own."""

    calibration_images: int = 512  # from the training split: activation ranges
    method: ClassVar[str]
    needs_labels: ClassVar[bool] = False
    needs_recourse_points: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_int("calibration_images", self.calibration_images, 1, MAX_IMAGES)


@dataclass(frozen=True)
class PTQInt8Config(CompressionConfig):
    """Post-training quantization: 8-bit weights (per channel) and activations."""

    method: ClassVar[str] = "ptq-int8"
    weight_bits: ClassVar[int] = 8


@dataclass(frozen=True)
class PTQInt4Config(CompressionConfig):
    """Post-training quantization: 4-bit weights (per channel, min/max), 8-bit activations;
    with ``ends_bits``, the first convolution and the head get that many bits instead."""

    ends_bits: int | None = None  # None: every layer at 4 bits
    method: ClassVar[str] = "ptq-int4"
    weight_bits: ClassVar[int] = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ends_bits is not None:
            check_bits("ends_bits", self.ends_bits)


@dataclass(frozen=True)
class GPTQConfig(CompressionConfig):
    """GPTQ (Frantar et al., 2023): weights rounded one input column at a time, each
    rounding error spread over the columns not yet rounded through the inverse Hessian of
    the layer's reconstruction error, layer by layer on the already-quantized network's
    inputs; 8-bit activations. Per-channel scales are ``ptq-int4``'s (min/max)."""

    bits: int = 4  # every layer but the ends
    ends_bits: int | None = 8  # first convolution and head; None: ``bits`` as well
    damp: float = 0.01  # added to the Hessian's diagonal, as a share of its mean
    hessian_images: int = 256  # the first training images, for each layer's Hessian
    method: ClassVar[str] = "gptq"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bits("bits", self.bits)
        if self.ends_bits is not None:
            check_bits("ends_bits", self.ends_bits)
        check_float("damp", self.damp, 0.0, 1.0, low_open=True)
        check_int("hessian_images", self.hessian_images, 1, MAX_IMAGES)

    @property
    def weight_bits(self) -> int:
        """The width of every layer but the ends, named as the fixed-width configs name it."""
        return self.bits


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
        check_float("sparsity", self.sparsity, 0.0, 1.0)
        if self.sparsity == 1.0:
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
        if not isinstance(self.clip_grid, tuple) or not 1 <= len(self.clip_grid) <= 100:
            raise ValueError(f"clip_grid must be a tuple of 1 to 100 ratios, got {self.clip_grid!r}")
        for ratio in self.clip_grid:
            check_float("a clip_grid value", ratio, 0.0, 1.0, low_open=True)
        check_float("recourse_weight", self.recourse_weight, 0.0, MAX_WEIGHT)
        check_int("search_images", self.search_images, 1, MAX_IMAGES)


@dataclass(frozen=True)
class QATConfig(CompressionConfig):
    steps: int = 300  # fine-tuning steps
    batch_size: int = 64
    learning_rate: float = 1e-4
    seed: int = 0
    needs_labels: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("steps", self.steps, 0, 1_000_000)
        check_int("batch_size", self.batch_size, 1, 4096)
        check_float("learning_rate", self.learning_rate, 0.0, 1.0, low_open=True)
        check_int("seed", self.seed, 0, 2**32 - 1)


@dataclass(frozen=True)
class MixedPrecisionConfig(QATConfig):
    budget: float = 4.0  # mean bits per weight, the same budget as ptq-int4
    bit_choices: tuple[int, ...] = (3, 4, 5, 6, 8)  # a subset of BIT_CHOICES; 2 only when asked for
    sensitivity_images: int = 256

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.bit_choices, tuple) or not self.bit_choices or \
                any(isinstance(b, bool) or b not in BIT_CHOICES for b in self.bit_choices):
            raise ValueError(f"bit_choices must be among {BIT_CHOICES}, got {self.bit_choices!r}")
        check_float("budget", self.budget, min(self.bit_choices), 8.0)
        check_int("sensitivity_images", self.sensitivity_images, 1, MAX_IMAGES)


@dataclass(frozen=True)
class MixedPrecQATConfig(MixedPrecisionConfig):
    """QAT on the labels; per-layer bits chosen by the loss increase each layer shows
    when quantized alone, under a mean-bits budget."""

    method: ClassVar[str] = "mixedprec-qat"


@dataclass(frozen=True)
class CFQQATConfig(MixedPrecisionConfig):
    """Mixed-precision QAT that also learns the teacher's boundary at its recourse points.

    Activation ranges are calibrated on ordinary images and recourse points, and the bits
    are allocated by the label loss plus the teacher-matching loss at the points, whatever
    ``recourse_weight`` is: ``recourse_weight = 0`` is therefore cfq-qat's no-recourse twin,
    which differs from it only in the fine-tuning term. ``recourse_objective``:
    ``"match"`` (the teacher's logits at the points and at partial edits towards them) or
    ``"target"`` (the BCE to the hard target; an ablation)."""

    recourse_weight: float = 1.0
    recourse_batch_size: int = 32
    recourse_objective: str = "match"
    method: ClassVar[str] = "cfq-qat"
    needs_recourse_points: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("recourse_weight", self.recourse_weight, 0.0, MAX_WEIGHT)
        check_int("recourse_batch_size", self.recourse_batch_size, 1, 4096)
        if self.recourse_objective not in ("match", "target"):
            raise ValueError(f"recourse_objective must be 'match' or 'target', got {self.recourse_objective!r}")


@dataclass(frozen=True)
class KDQuantConfig(QATConfig):
    """QAT of 4-bit weights with knowledge distillation from the full-precision teacher."""

    temperature: float = 2.0
    distillation_weight: float = 0.5  # share of the loss on the teacher's soft decisions
    method: ClassVar[str] = "kd-quant"
    weight_bits: ClassVar[int] = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("temperature", self.temperature, 0.0, 100.0, low_open=True)
        check_float("distillation_weight", self.distillation_weight, 0.0, 1.0)
