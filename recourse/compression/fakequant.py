"""Fake-quantization primitives, at the bottom of the compression package (imports nothing of it).

Weights are quantized symmetrically per output channel, at 8, 6, 5, 4, 3 or 2 bits (a
layer's bit width only narrows the range of codes); activations are 8-bit with x86's
reduced range (7 bits used), with min/max ranges from calibration images. Codes narrower
than 8 bits run in the same 8-bit kernels — identical numbers, no extra speed: this CPU
has no 4-bit kernels. Batch norm is folded into the convolutions before anything else, so
the weight codes are exactly what runs.

Why FX graph mode (``torch.ao.quantization.quantize_fx``), which PyTorch marks as
deprecated in favour of torchao's pt2e flow: it is the API in this torch build that both
converts to real x86 integer kernels and gives a trainable fake-quant twin, without an
extra dependency; the compute-budget measurement (2.45× at batch 32) was made with it.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from recourse.data import to_float_images

# Activations: 8-bit with x86's reduced range (7 bits used), min/max from calibration.
_ACTIVATION_RANGE = {"quant_min": 0, "quant_max": 255, "reduce_range": True}
BIT_CHOICES = (2, 3, 4, 5, 6, 8)  # every weight width a layer may have


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


def bits_with_ends(names: list[str], bits: int, ends_bits: int | None = None) -> dict[str, int]:
    """Every layer in ``names`` (forward order) at ``bits``, except the first and the last
    (stem convolution and head) at ``ends_bits`` when it is given. The usual practice, and
    what the mixed-precision allocations choose here: the two hold a sliver of the weights
    (0.62% in the committed classifier); the stem sums only 27 inputs per output, and the
    head's errors go straight into the logits."""
    ends = {names[0], names[-1]} if ends_bits is not None and names else set()
    return {name: ends_bits if name in ends else bits for name in names}


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


@torch.no_grad()
def recalibrate_activations(twin: nn.Module, images: torch.Tensor) -> None:
    """Activation ranges from ``images`` afresh, forgetting earlier ones (the observers keep
    a running min/max): after weights or their bits changed since the first calibration."""
    for name, quantizer in twin.named_modules():
        if name.startswith("activation_post_process") and hasattr(quantizer, "activation_post_process"):
            quantizer.activation_post_process.reset_min_max_vals()
    calibrate_activations(twin, images)


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


def weight_codes(layer: nn.Module) -> torch.Tensor:
    """The integer codes of ``layer``'s weight at its current scales and bits."""
    quantizer = layer.weight_fake_quant
    view = (-1,) + (1,) * (layer.weight.ndim - 1)
    scale = quantizer.scale.view(view)
    return torch.round(layer.weight.detach() / scale).clamp(quantizer.quant_min, quantizer.quant_max)


@torch.no_grad()
def set_weights_from_codes(layer: nn.Module, codes: torch.Tensor) -> None:
    """Inverse of :func:`weight_codes`: ``layer``'s weight = codes × its per-channel scale."""
    view = (-1,) + (1,) * (layer.weight.ndim - 1)
    layer.weight.copy_(codes.view_as(layer.weight).float() * layer.weight_fake_quant.scale.view(view))
