"""One entry point, ``quantize(model, config, images, ...)``, and the registry behind it.

Each method registers a handler against its config class (the config → handler registry of
torchao's ``quantize_``); ``quantize`` does what every method shares — checking inputs,
snapping weights onto their grid, converting to integer kernels, timing — and the handler
does the rest. ``quantize`` never modifies ``model`` (nor its train/eval mode).

Every result has a differentiable fake-quantized ``twin`` (for gradient guidance and
gradient attributions) and an ``integer`` model that runs PyTorch's x86 quantized engine
with the *same* scales, zero points and weight codes.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch import nn

from recourse.compression.configs import CompressionConfig
from recourse.compression.fakequant import (
    bits_of, bits_per_weight, calibrate_activations, fold_batch_norm, prepare_twin, set_weight_quantizer,
    snap_weights, to_integer, weight_layers,
)
from recourse.data import to_float_images
from recourse.progress import Progress, silent

if TYPE_CHECKING:
    from recourse.compression.recourse_points import RecoursePoints


@dataclass(frozen=True)
class CompressionInputs:
    """What a method may use besides its config; ``teacher`` is an eval-mode copy."""

    teacher: nn.Module
    images: torch.Tensor  # (N, 3, H, W) training images, uint8 or float in [0, 1]
    labels: torch.Tensor | None  # (N, 40)
    recourse_points: RecoursePoints | None
    progress: Progress


# A handler returns the calibrated (not yet snapped) twin and what to record about it.
Handler = Callable[[Any, CompressionInputs], tuple[nn.Module, dict]]
_HANDLERS: dict[type, Handler] = {}


def register(config_class: type) -> Callable[[Handler], Handler]:
    """Decorator: ``handler(config, inputs) -> (twin, details)`` makes ``config_class``'s variants."""

    def decorate(handler: Handler) -> Handler:
        if config_class in _HANDLERS:
            raise ValueError(f"{config_class.__name__} already has a handler")
        _HANDLERS[config_class] = handler
        return handler

    return decorate


def config_classes() -> dict[str, type]:
    """Every registered config class by method id, in registration order."""
    return {config_class.method: config_class for config_class in _HANDLERS}


def make_config(method: str, **settings: Any) -> CompressionConfig:
    """``method``'s config with the given settings (``None`` values left at their defaults);
    a setting the method does not take is a ValueError naming it."""
    configs = config_classes()
    if method not in configs:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(configs)}")
    config_class = configs[method]
    given = {name: value for name, value in settings.items() if value is not None}
    foreign = sorted(set(given) - set(config_class.__dataclass_fields__))
    if foreign:
        raise ValueError(f"{', '.join(foreign)} does not apply to method {method}")
    return config_class(**given)


@dataclass
class QuantizedModel:
    """A compressed variant: its differentiable twin and its integer-kernel model."""

    twin: nn.Module  # fake-quantized, eval mode, gradients flow (straight-through)
    integer: nn.Module | None  # x86 quantized kernels (None only if conversion is unavailable)
    config: CompressionConfig
    bits_per_weight: float
    seconds: float  # time to make it (calibration, search, fine-tuning): T_make of Overhead
    details: dict = field(default_factory=dict)

    @property
    def decider(self) -> nn.Module:
        """The model that makes the variant's decisions (and is timed): integer kernels
        where they exist, else the twin."""
        return self.integer if self.integer is not None else self.twin

    @property
    def layer_bits(self) -> dict[str, int]:
        return {name: bits_of(module) for name, module in weight_layers(self.twin).items()}


def calibrated_twin(model: nn.Module, config: CompressionConfig, inputs: CompressionInputs,
                    weight_bits: int = 8) -> tuple[nn.Module, dict]:
    """The shared first step: fold batch norm, make the fake-quantized twin with every
    layer at ``weight_bits``, and calibrate activation ranges on the first
    ``config.calibration_images`` training images (plus as many of the teacher's recourse
    points when the method uses them: they are inputs the variant will be asked about)."""
    details: dict[str, Any] = {"activation_bits": 7, "activation_codes": "uint8 with x86 reduce_range (7 bits used)",
                             "engine": "x86", "batch_norm": "folded"}
    twin = prepare_twin(fold_batch_norm(model), inputs.images.shape[-1])
    calibration = to_float_images(inputs.images[: config.calibration_images])
    points = inputs.recourse_points
    if points is not None and config.needs_recourse_points:
        calibration = torch.cat([calibration, points.images[: config.calibration_images]])
        details["recourse_points"] = points.count
        details["recourse_points_seconds"] = round(points.seconds, 1)
    details["calibration_images"] = len(calibration)
    for layer in weight_layers(twin).values():
        set_weight_quantizer(layer, weight_bits)
    calibrate_activations(twin, calibration)
    return twin, details


def quantize(
    model: nn.Module,
    config: CompressionConfig,
    images: torch.Tensor,
    labels: torch.Tensor | None = None,
    recourse_points: RecoursePoints | None = None,
    progress: Progress | None = None,
) -> QuantizedModel:
    """Compress ``model`` (a full-precision ``AttributeClassifier``) with ``config``'s method.

    ``images``: training images ``(N, 3, H, W)`` (uint8 or float in [0, 1]); calibration
    takes the first ``config.calibration_images`` of them, fine-tuning methods sample from
    all of them. ``labels`` ``(N, 40)``: needed by the fine-tuning methods.
    ``recourse_points``: the teacher's counterfactuals on training images, needed by the
    counterfactual-aware methods; the time it took to make them counts in ``seconds``.
    """
    handler = _HANDLERS.get(type(config))
    if handler is None:
        raise ValueError(f"unknown compression config {config!r}; registered: {', '.join(config_classes())}")
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
        shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"images must be (N, 3, H, W), got {shape}")
    if config.needs_labels and (labels is None or len(labels) != len(images)):
        raise ValueError(f"{config.method} fine-tunes on labelled images: pass labels (N, 40) for the N images")
    if config.needs_recourse_points and (recourse_points is None or recourse_points.count == 0):
        raise ValueError(f"{config.method} needs the teacher's recourse points (recourse.compression.recourse_points)")
    started = time.perf_counter()
    teacher = copy.deepcopy(model).eval()  # the caller's model keeps its mode and weights
    inputs = CompressionInputs(teacher, images, labels, recourse_points, progress or silent)
    twin, details = handler(config, inputs)
    snap_weights(twin)
    details["layer_bits"] = {name: bits_of(layer) for name, layer in weight_layers(twin).items()}
    integer = to_integer(twin)
    seconds = time.perf_counter() - started + (recourse_points.seconds if config.needs_recourse_points else 0.0)
    return QuantizedModel(twin=twin, integer=integer, config=config, bits_per_weight=bits_per_weight(twin),
                          seconds=seconds, details=details)
