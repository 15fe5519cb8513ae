"""``gptq``: post-training quantization that rounds each layer's weights so as to keep the
layer's outputs, not its weights (Frantar et al., 2023, "GPTQ: Accurate Post-Training
Quantization for Generative Pre-trained Transformers").

Layer by layer in forward order, on the inputs the layer receives from the network whose
earlier layers are already quantized:

1. ``H = 2 X Xᵀ / n`` over the layer's ``n`` input vectors (a convolution's are its
   unfolded input patches), dampened by ``damp · mean(diag H)``;
2. the input columns of ``W`` are rounded one at a time, and each column's rounding error,
   scaled by the Cholesky factor of ``H⁻¹``, is taken off the columns not yet rounded (the
   paper's Algorithm 1, with its lazy block updates).

Scales are the min/max scales of :func:`set_weight_quantizer`, fixed before the rounding,
so that the twin, the stored codes and the integer model hold the same numbers.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from recourse.compression.api import CompressionInputs, calibrated_twin, register
from recourse.compression.configs import GPTQConfig
from recourse.compression.fakequant import bits_with_ends, recalibrate_activations, set_weight_quantizer, weight_layers
from recourse.data import to_float_images
from recourse.progress import Progress, silent

_BLOCK = 128  # columns per lazy update: the paper's choice; it changes speed, not the result


@register(GPTQConfig)
def gptq_quantization(config: GPTQConfig, inputs: CompressionInputs) -> tuple[nn.Module, dict]:
    twin, details = calibrated_twin(inputs.teacher, config, inputs, config.bits)
    hessian_images = to_float_images(inputs.images[: config.hessian_images])
    errors = quantize_layers(twin, bits_with_ends(list(weight_layers(twin)), config.bits, config.ends_bits),
                             hessian_images, config.damp, inputs.progress)
    # the ranges were measured with min/max-rounded weights: measure them on what runs
    recalibrate_activations(twin, to_float_images(inputs.images[: config.calibration_images]))
    details.update({"ends_bits": config.ends_bits, "hessian_images": len(hessian_images), "damp": config.damp,
                    "layer_output_error": errors})
    return twin, details


@torch.no_grad()
def quantize_layers(twin: nn.Module, allocation: dict[str, int], images: torch.Tensor, damp: float,
                    progress: Progress = silent) -> dict[str, dict[str, float]]:
    """GPTQ every weight layer of ``twin`` in place at ``allocation[name]`` bits, in forward
    order; returns each layer's relative output error (see :func:`relative_output_error`)
    with plain rounding and with GPTQ, on its inputs from ``images`` ``(N, 3, H, W)``."""
    layers = weight_layers(twin)
    errors = {}
    for done, (name, layer) in enumerate(layers.items()):
        set_weight_quantizer(layer, allocation[name])  # scales from the full-precision weight
        hessian = layer_hessian(twin, layer, images)
        weight = layer.weight.detach().flatten(1)  # (out, in · kh · kw), the order unfold uses
        rounded = layer.weight_fake_quant(layer.weight).flatten(1)
        quantized = gptq_weight(weight, hessian, functools.partial(round_column, layer), damp)
        errors[name] = {"rounding": relative_output_error(rounded - weight, weight, hessian),
                        "gptq": relative_output_error(quantized - weight, weight, hessian)}
        layer.weight.copy_(quantized.view_as(layer.weight))
        progress("gptq", done + 1, len(layers))
    return errors


class _Collected(Exception):
    """Raised by the input hook: nothing after the layer is needed."""


@torch.no_grad()
def layer_hessian(twin: nn.Module, layer: nn.Module, images: torch.Tensor, batch_size: int = 32) -> torch.Tensor:
    """``2 X Xᵀ / n`` ``(D, D)`` (float64) of ``layer``'s inputs as ``twin`` runs on ``images``,
    ``D`` = inputs per output (``in · kh · kw`` for a convolution)."""
    total: torch.Tensor | float = 0.0
    count = 0

    def collect(module: nn.Module, args: tuple) -> None:
        nonlocal total, count
        rows = layer_inputs(module, args[0])  # (n, D)
        total = total + 2 * (rows.T @ rows).double()  # float32 products, a float64 sum
        count += len(rows)
        raise _Collected

    handle = layer.register_forward_pre_hook(collect)
    try:
        for start in range(0, len(images), batch_size):
            try:
                twin(images[start:start + batch_size])
            except _Collected:
                pass
    finally:
        handle.remove()
    return total / count


def layer_inputs(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What ``layer``'s weight multiplies: ``(n, D)`` rows, one per output position."""
    if isinstance(layer, nn.Linear):
        return x.reshape(-1, x.shape[-1])
    if not isinstance(layer, nn.Conv2d) or layer.groups != 1 or layer.padding_mode != "zeros":
        raise ValueError(f"gptq handles linear layers and ungrouped, zero-padded convolutions, got {layer}")
    patches = F.unfold(x, layer.kernel_size, layer.dilation, layer.padding, layer.stride)  # (B, D, L)
    return patches.transpose(1, 2).reshape(-1, patches.shape[1])


def round_column(layer: nn.Module, column: torch.Tensor) -> torch.Tensor:
    """One input column ``(out,)`` of ``layer``'s weight on its grid, rounded exactly as its
    weight quantizer rounds (so that the twin's fake quantization leaves the result as is)."""
    quantizer = layer.weight_fake_quant
    return torch.fake_quantize_per_channel_affine(column.contiguous(), quantizer.scale, quantizer.zero_point, 0,
                                                  quantizer.quant_min, quantizer.quant_max)


def gptq_weight(weight: torch.Tensor, hessian: torch.Tensor, round_column: Callable[[torch.Tensor], torch.Tensor],
                damp: float = 0.01) -> torch.Tensor:
    """GPTQ's rounding of ``weight`` ``(out, D)`` for inputs with ``hessian`` ``(D, D)``;
    ``round_column`` puts one column ``(out,)`` on the grid. Returns the rounded weight."""
    weight = weight.detach().clone().float()
    hessian = hessian.detach().clone().double()
    dead = hessian.diagonal() == 0
    hessian.diagonal()[dead] = 1.0  # an input that is always zero: its error costs nothing, moves nothing
    hessian.diagonal().add_(damp * hessian.diagonal().mean())
    # row i of the upper Cholesky factor of H⁻¹: how column i's rounding error is spread on
    # the later columns, once the earlier ones are fixed
    inverse = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(hessian)), upper=True).float()
    quantized = torch.empty_like(weight)
    columns = weight.shape[1]
    for start in range(0, columns, _BLOCK):
        end = min(start + _BLOCK, columns)
        block, factor = weight[:, start:end], inverse[start:end, start:end]
        errors = torch.empty_like(block)
        for i in range(end - start):
            quantized[:, start + i] = round_column(block[:, i])
            errors[:, i] = (block[:, i] - quantized[:, start + i]) / factor[i, i]
            block[:, i:] -= errors[:, i:i + 1] * factor[i:i + 1, i:]
        weight[:, end:] -= errors @ inverse[start:end, end:]  # the lazy update of the later blocks
    return quantized


def relative_output_error(change: torch.Tensor, weight: torch.Tensor, hessian: torch.Tensor) -> float:
    """``‖ΔW X‖² / ‖W X‖²`` from ``H = 2 X Xᵀ / n``: how far a weight change ``(out, D)``
    moves the layer's outputs (its bias aside), relative to their size."""
    change, weight = change.double(), weight.double()
    moved = float(((change @ hessian) * change).sum())
    size = float(((weight @ hessian) * weight).sum())
    return float(f"{moved / size:.6g}") if size > 0 else 0.0
