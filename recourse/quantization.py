"""Compressing a classifier: one entry point, one small config class per method.

``quantize(model, config, images, labels=..., recourse_points=...) -> QuantizedModel`` never
modifies ``model``. Every result has a differentiable fake-quantized ``twin`` (for gradient
guidance and gradient attributions) and an ``integer`` model that runs PyTorch's x86
quantized engine with the *same* scales, zero points and weight codes: the integer model
is converted from the twin after its weights are snapped onto their quantization grid.

Weights are quantized symmetrically per output channel, at 8, 6, 5, 4 or 3 bits (a
layer's bit width only narrows the range of codes); activations are 8-bit (x86's reduced
range: 7 bits used) with min/max ranges from calibration images. Codes narrower than 8
bits run in the same 8-bit kernels — identical numbers, no extra speed: this CPU has no
4-bit kernels. Batch norm is folded into the convolutions before anything else, so the
weight codes are exactly what runs.

Methods (``CONFIGS``): ``ptq-int8``, ``ptq-int4``, ``prune-quant`` (post-training),
``cf-ptq`` (4-bit, clipping calibrated to also keep the teacher's decisions at its
recourse points), and three fine-tuning methods sharing one loop (``recourse.qat``):
``mixedprec-qat`` (per-layer bits by sensitivity under a mean-bits budget), ``cfq-qat``
(the same, with the teacher's recourse points in both the sensitivity and the loss) and
``kd-quant`` (4-bit, distillation from the teacher).

Why FX graph mode (``torch.ao.quantization.quantize_fx``), which PyTorch marks as
deprecated in favour of torchao's pt2e flow: it is the API in this torch build that both
converts to real x86 integer kernels and gives a trainable fake-quant twin, without an
extra dependency; the compute-budget measurement (2.45× at batch 32) was made with it.
"""

from __future__ import annotations

import copy
import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from recourse.evaluation import to_float_images

if TYPE_CHECKING:
    from recourse.recourse_points import RecoursePoints

# Activations: 8-bit with x86's reduced range (7 bits used), min/max from calibration.
_ACTIVATION_RANGE = {"quant_min": 0, "quant_max": 255, "reduce_range": True}
BIT_CHOICES = (3, 4, 5, 6, 8)

Progress = Callable[[str, int, int], None]  # (stage, done, total)


# ---------------------------------------------------------------------------------------
# Configs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Config:
    calibration_images: int = 512  # from the training split: activation ranges
    method: ClassVar[str]
    needs_labels: ClassVar[bool] = False
    needs_recourse_points: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.calibration_images < 1:
            raise ValueError(f"calibration_images must be >= 1, got {self.calibration_images}")


@dataclass(frozen=True)
class PTQInt8Config(_Config):
    """Post-training quantization: 8-bit weights (per channel) and activations."""

    method: ClassVar[str] = "ptq-int8"
    weight_bits: ClassVar[int] = 8


@dataclass(frozen=True)
class PTQInt4Config(_Config):
    """Post-training quantization: 4-bit weights (per channel, min/max), 8-bit activations."""

    method: ClassVar[str] = "ptq-int4"
    weight_bits: ClassVar[int] = 4


@dataclass(frozen=True)
class PruneQuantConfig(_Config):
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
class CFPTQConfig(_Config):
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
class _QATConfig(_Config):
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
class _MixedPrecisionConfig(_QATConfig):
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
class MixedPrecQATConfig(_MixedPrecisionConfig):
    """QAT on the labels; per-layer bits chosen by the loss increase each layer shows
    when quantized alone, under a mean-bits budget."""

    method: ClassVar[str] = "mixedprec-qat"


@dataclass(frozen=True)
class CFQQATConfig(_MixedPrecisionConfig):
    """``mixedprec-qat`` whose objective — for the bit allocation and for fine-tuning —
    adds the teacher's target decision at the teacher's recourse points."""

    recourse_weight: float = 1.0
    recourse_batch_size: int = 32
    method: ClassVar[str] = "cfq-qat"
    needs_recourse_points: ClassVar[bool] = True


@dataclass(frozen=True)
class KDQuantConfig(_QATConfig):
    """QAT of 4-bit weights with knowledge distillation from the full-precision teacher."""

    temperature: float = 2.0
    distillation_weight: float = 0.5  # share of the loss on the teacher's soft decisions
    method: ClassVar[str] = "kd-quant"
    weight_bits: ClassVar[int] = 4


QuantizationConfig = (PTQInt8Config | PTQInt4Config | PruneQuantConfig | CFPTQConfig | MixedPrecQATConfig
                      | CFQQATConfig | KDQuantConfig)
CONFIGS: dict[str, type] = {c.method: c for c in (PTQInt8Config, PTQInt4Config, CFPTQConfig, CFQQATConfig,
                                                    MixedPrecQATConfig, KDQuantConfig, PruneQuantConfig)}


@dataclass
class QuantizedModel:
    """A compressed variant: its differentiable twin and its integer-kernel model."""

    twin: nn.Module  # fake-quantized, eval mode, gradients flow (straight-through)
    integer: nn.Module | None  # x86 quantized kernels (None only if conversion is unavailable)
    config: QuantizationConfig
    bits_per_weight: float
    seconds: float  # time to make it (calibration, search, fine-tuning): T_make of Overhead
    details: dict = field(default_factory=dict)

    @property
    def fastest(self) -> nn.Module:
        """The model to time and to query for decisions: integer kernels where they exist."""
        return self.integer if self.integer is not None else self.twin

    @property
    def layer_bits(self) -> dict[str, int]:
        return {name: bits_of(module) for name, module in weight_layers(self.twin).items()}


# ---------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------


def fold_batch_norm(model: nn.Module) -> nn.Module:
    """An eval-mode copy where every Conv2d → BatchNorm2d pair of a Sequential becomes one
    convolution with a bias (the batch norm turns into an Identity, so names are kept)."""
    folded = copy.deepcopy(model).eval()
    for module in folded.modules():
        if isinstance(module, nn.Sequential):
            children = list(module.named_children())
            for (conv_name, conv), (bn_name, bn) in zip(children, children[1:]):
                if isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d):
                    setattr(module, conv_name, fuse_conv_bn_eval(conv, bn))
                    setattr(module, bn_name, nn.Identity())
    return folded


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


def _qconfig():
    from torch.ao.quantization import FakeQuantize, MinMaxObserver, PerChannelMinMaxObserver, QConfig

    return QConfig(
        activation=FakeQuantize.with_args(observer=MinMaxObserver, **_ACTIVATION_RANGE),
        weight=FakeQuantize.with_args(observer=PerChannelMinMaxObserver, quant_min=-128, quant_max=127,
                                      dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
    )


def prepare_twin(folded: nn.Module, resolution: int) -> nn.Module:
    """The fake-quantized twin of a batch-norm-folded model, in eval mode, observers off."""
    from torch.ao.quantization import QConfigMapping, disable_observer
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    example = torch.zeros(2, 3, resolution, resolution)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notice, once per call
        twin = prepare_qat_fx(copy.deepcopy(folded).train(), QConfigMapping().set_global(_qconfig()), (example,))
    return twin.eval().apply(disable_observer)


def weight_layers(twin: nn.Module) -> dict[str, nn.Module]:
    """The twin's weight-quantized layers by name, in forward order."""
    return {name: m for name, m in twin.named_modules() if hasattr(m, "weight_fake_quant")}


def bits_of(layer: nn.Module) -> int:
    quantizer = layer.weight_fake_quant
    return int(quantizer.quant_max - quantizer.quant_min + 1).bit_length() - 1


@torch.no_grad()
def set_weight_quantizer(layer: nn.Module, bits: int, clip: float = 1.0) -> None:
    """Quantize ``layer``'s weight to ``bits`` per output channel, range ``clip · max |w|``.

    The observer's min/max are set too: the integer conversion reads its scales there.
    """
    quantizer = layer.weight_fake_quant
    observer = quantizer.activation_post_process
    half = 2 ** (bits - 1)
    quantizer.quant_min, quantizer.quant_max = -half, half - 1
    observer.quant_min, observer.quant_max = -half, half - 1
    weight = layer.weight.detach()
    limit = weight.abs().flatten(1).amax(dim=1) * clip
    observer.min_val.resize_(limit.shape).copy_(-limit)
    observer.max_val.resize_(limit.shape).copy_(limit)
    scale, zero_point = observer.calculate_qparams()
    quantizer.scale.resize_(scale.shape).copy_(scale)
    quantizer.zero_point.resize_(zero_point.shape).copy_(zero_point)


def refresh_weight_quantizers(twin: nn.Module) -> None:
    """Scales from the current weights, keeping each layer's bits (after an optimiser step)."""
    for layer in weight_layers(twin).values():
        set_weight_quantizer(layer, bits_of(layer))


@torch.no_grad()
def snap_weights(twin: nn.Module) -> None:
    """Replace every weight by its fake-quantized value, so that the stored codes, the twin
    and the integer conversion all hold exactly the same numbers."""
    for layer in weight_layers(twin).values():
        layer.weight.copy_(layer.weight_fake_quant(layer.weight))


@torch.no_grad()
def calibrate_activations(twin: nn.Module, images: torch.Tensor, batch_size: int = 64) -> None:
    """Activation ranges (min/max) from ``images``; the weight quantizers are left as set."""
    from torch.ao.quantization import disable_observer, enable_observer

    twin.eval()
    activations = [m for name, m in twin.named_modules()
                   if name.startswith("activation_post_process") and hasattr(m, "activation_post_process")]
    for quantizer in activations:
        quantizer.apply(enable_observer)
    for start in range(0, len(images), batch_size):
        twin(to_float_images(images[start:start + batch_size]))
    twin.apply(disable_observer)


def to_integer(twin: nn.Module) -> nn.Module:
    """The x86 integer-kernel model with the twin's scales and (snapped) weight codes."""
    from torch.ao.quantization.quantize_fx import convert_fx

    torch.backends.quantized.engine = "x86"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_fx(copy.deepcopy(twin).eval()).eval()


def bits_per_weight(twin: nn.Module) -> float:
    """Mean bits over all conv/linear weights (biases stay in float and are not counted)."""
    layers = weight_layers(twin).values()
    total = sum(layer.weight.numel() for layer in layers)
    return sum(bits_of(layer) * layer.weight.numel() for layer in layers) / total


# ---------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------


def quantize(
    model: nn.Module,
    config: QuantizationConfig,
    images: torch.Tensor,
    labels: torch.Tensor | None = None,
    recourse_points: "RecoursePoints | None" = None,
    progress: Progress | None = None,
) -> QuantizedModel:
    """Compress ``model`` (left unchanged) with ``config``.

    ``images``: training-split images ``(N, 3, H, W)``, uint8 or float in [0, 1]; the first
    ``config.calibration_images`` calibrate activation ranges, fine-tuning methods sample
    from all of them. ``labels`` ``(N, 40)``: needed by the fine-tuning methods.
    ``recourse_points``: the teacher's counterfactuals on training images
    (``recourse.recourse_points``), needed by ``cf-ptq`` and ``cfq-qat``; the time it took to
    make them counts in the variant's ``seconds``.
    """
    if type(config) not in CONFIGS.values():
        raise ValueError(f"unknown quantization config {config!r}")
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
        shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"images must be (N, 3, H, W), got {shape}")
    if config.needs_labels and (labels is None or len(labels) != len(images)):
        raise ValueError(f"{config.method} fine-tunes on labelled images: pass labels (N, 40) for the N images")
    if config.needs_recourse_points and (recourse_points is None or recourse_points.count == 0):
        raise ValueError(f"{config.method} needs the teacher's recourse points (recourse.recourse_points)")
    started = time.perf_counter()
    report = progress or (lambda stage, done, total: None)
    details: dict[str, Any] = {"activation_bits": 8, "engine": "x86", "batch_norm": "folded"}
    teacher = copy.deepcopy(model).eval()  # the caller's model keeps its mode and weights
    base = model
    if isinstance(config, PruneQuantConfig):
        base = magnitude_prune(model, config.sparsity)
        details["sparsity"] = config.sparsity
    twin = prepare_twin(fold_batch_norm(base), images.shape[-1])
    calibration = to_float_images(images[: config.calibration_images])
    if recourse_points is not None and config.needs_recourse_points:
        # the recourse points are inputs the variant will be asked about: include their range
        calibration = torch.cat([calibration, recourse_points.images[: config.calibration_images]])
        details["recourse_points"] = recourse_points.count
        details["recourse_points_seconds"] = round(recourse_points.seconds, 1)
    details["calibration_images"] = len(calibration)
    for layer in weight_layers(twin).values():
        set_weight_quantizer(layer, getattr(config, "weight_bits", 8))
    calibrate_activations(twin, calibration)

    if isinstance(config, CFPTQConfig):
        from recourse.qat import recourse_loss

        search = to_float_images(images[: config.search_images])
        with torch.no_grad():
            target_probabilities = torch.sigmoid(teacher(search))
        points = recourse_points.subset(config.search_images)

        def objective(candidate: nn.Module) -> float:
            with torch.no_grad():
                data = F.binary_cross_entropy_with_logits(candidate(search), target_probabilities)
                return float(data + config.recourse_weight * recourse_loss(candidate, points))

        details["layer_clip"] = _search_clipping(twin, config.weight_bits, config.clip_grid, objective, report)
    elif isinstance(config, (MixedPrecQATConfig, CFQQATConfig, KDQuantConfig)):
        from recourse import mixed_precision, qat

        if isinstance(config, KDQuantConfig):
            loss = qat.distillation_objective(teacher, config.temperature, config.distillation_weight)
        else:
            points = recourse_points if isinstance(config, CFQQATConfig) else None
            weight = getattr(config, "recourse_weight", 0.0)
            loss = qat.label_objective(points, weight, getattr(config, "recourse_batch_size", 0))
            # the allocation sees a fixed sample: as many recourse points as ordinary images
            sensitivity_loss = qat.label_objective(points, weight, config.sensitivity_images)
            sample = torch.arange(min(config.sensitivity_images, len(images)))
            sample_images, sample_labels = to_float_images(images[sample]), labels[sample].float()
            allocation = mixed_precision.choose_bits(
                twin, lambda candidate: sensitivity_loss(candidate, sample_images, sample_labels,
                                                         torch.Generator().manual_seed(config.seed)),
                config.bit_choices, config.budget, report)
            for name, layer in weight_layers(twin).items():
                set_weight_quantizer(layer, allocation[name])
            details["budget"] = config.budget
        details["fine_tuning"] = qat.fine_tune(twin, loss, images, labels, config.steps, config.batch_size,
                                               config.learning_rate, config.seed, report)
    snap_weights(twin)
    details["layer_bits"] = {name: bits_of(layer) for name, layer in weight_layers(twin).items()}
    integer = to_integer(twin)
    seconds = time.perf_counter() - started + (recourse_points.seconds if config.needs_recourse_points else 0.0)
    return QuantizedModel(twin=twin, integer=integer, config=config, bits_per_weight=bits_per_weight(twin),
                          seconds=seconds, details=details)


def _search_clipping(twin: nn.Module, bits: int, grid: tuple[float, ...], objective: Callable[[nn.Module], float],
                     report: Progress) -> dict[str, float]:
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
        report("clipping search", done + 1, len(layers))
    return chosen



# ---------------------------------------------------------------------------------------
# Storage: packed weight codes + scales (safetensors) and a JSON config
# ---------------------------------------------------------------------------------------


def save_variant(variant: QuantizedModel, base: nn.Module, directory: str | os.PathLike,
                 metadata: dict[str, Any] | None = None) -> Path:
    """Write ``model.safetensors`` (each layer's weight codes packed at its bit width, scales,
    biases and activation ranges) and ``config.json`` (method, settings, bits, time,
    the base architecture and ``metadata``)."""
    from safetensors.torch import save_file

    from recourse.bitpack import pack_codes
    from recourse.checkpoints import CONFIG_FILE, WEIGHTS_FILE

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    layers = weight_layers(variant.twin)
    weights = {f"{name}.weight" for name in layers}
    state = {k: v.detach().contiguous().clone() for k, v in variant.twin.state_dict().items() if k not in weights}
    for name, layer in layers.items():
        codes = _weight_codes(layer)
        state[f"{name}.weight_codes"] = pack_codes(codes, bits_of(layer))
    save_file(state, str(directory / WEIGHTS_FILE))
    record = {
        "method": variant.config.method, "settings": asdict(variant.config),
        "bits_per_weight": round(variant.bits_per_weight, 4), "make_seconds": round(variant.seconds, 2),
        "integer_kernels": variant.integer is not None, "classifier": base.config.to_dict(),
        **variant.details, **(metadata or {}),
    }
    (directory / CONFIG_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return directory


def _weight_codes(layer: nn.Module) -> torch.Tensor:
    quantizer = layer.weight_fake_quant
    view = (-1,) + (1,) * (layer.weight.ndim - 1)
    scale = quantizer.scale.view(view)
    return torch.round(layer.weight.detach() / scale).clamp(quantizer.quant_min, quantizer.quant_max)


def load_variant(directory: str | os.PathLike) -> QuantizedModel:
    """Rebuild a saved variant (twin and integer model) without unpickling anything."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from recourse.bitpack import unpack_codes
    from recourse.checkpoints import CONFIG_FILE, WEIGHTS_FILE, CheckpointError, read_config
    from recourse.classifier import AttributeClassifier, ClassifierConfig

    directory = Path(directory)
    record = read_config(directory)
    if record.get("method") not in CONFIGS:
        raise CheckpointError(f"{directory / CONFIG_FILE}: not a compressed variant "
                              f"(unknown method {record.get('method')!r})")
    settings = {k: tuple(v) if isinstance(v, list) else v for k, v in record["settings"].items()}
    config = CONFIGS[record["method"]](**settings)
    base = AttributeClassifier(ClassifierConfig.from_dict(record["classifier"])).eval()
    twin = prepare_twin(fold_batch_norm(base), base.config.resolution)
    layers = weight_layers(twin)
    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: weights not found")
    try:
        state = load_file(str(path))
        for name, layer in layers.items():
            set_weight_quantizer(layer, int(record["layer_bits"][name]))
        codes = {name: state.pop(f"{name}.weight_codes") for name in layers}
        missing, unexpected = twin.load_state_dict(state, strict=False)
        if unexpected or set(missing) != {f"{name}.weight" for name in layers}:
            raise CheckpointError(f"{path}: does not match {CONFIG_FILE} (missing {missing}, unexpected {unexpected})")
        with torch.no_grad():
            for name, layer in layers.items():
                unpacked = unpack_codes(codes[name], bits_of(layer), layer.weight.numel()).view_as(layer.weight)
                view = (-1,) + (1,) * (layer.weight.ndim - 1)
                layer.weight.copy_(unpacked.float() * layer.weight_fake_quant.scale.view(view))
    except (KeyError, RuntimeError, SafetensorError) as error:
        raise CheckpointError(f"{path}: does not match {CONFIG_FILE} ({error})") from None
    twin.eval()
    details = {k: v for k, v in record.items()
               if k not in ("method", "settings", "bits_per_weight", "make_seconds", "classifier")}
    return QuantizedModel(twin, to_integer(twin), config, float(record["bits_per_weight"]),
                          float(record["make_seconds"]), details)
