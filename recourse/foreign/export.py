"""Making foreign models out of a torch classifier, as an auditor's pipeline would: a
``torch.export`` program, an ONNX model, ONNX Runtime's static int8 quantization of the ONNX
copy and torchao's pt2e int8 quantization of the program. The worked example
(``scripts/chores/foreign_models.py``) runs these on the project's classifier; the tests on tiny models.

torchao is the pt2e flow here because ``torch.ao.quantization.quantize_pt2e`` is gone from
torch 2.13 (it moved to torchao). The x86 Inductor quantizer's default config is the one
torchao documents for CPUs: int8 activations per tensor (affine, from calibration minima and
maxima) and int8 weights per output channel (symmetric).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Iterable

import torch
from torch import nn

# dynamic batch, so that the loaded program scores any number of faces
MAX_BATCH = 4096


def _batch_dim() -> dict[int, torch.export.Dim]:
    return {0: torch.export.Dim("batch", min=1, max=MAX_BATCH)}


def export_program(model: nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    """``torch.export`` of ``model`` (in eval mode) with a dynamic batch dimension."""
    model = model.eval()
    return torch.export.export(model, (example,), dynamic_shapes=(_batch_dim(),))


def save_program(model: nn.Module, example: torch.Tensor, path: str | os.PathLike) -> Path:
    path = Path(path)
    torch.export.save(export_program(model, example), str(path))
    return path


def export_onnx(model: nn.Module, example: torch.Tensor, path: str | os.PathLike, opset: int = 17) -> Path:
    """ONNX export with a dynamic batch dimension, input ``images`` and output ``outputs``.

    The TorchScript-based exporter (``dynamo=False``) needs no onnxscript; it is deprecated but
    exact for these convolutional networks (checked against torch in the tests)."""
    path = Path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (example,), str(path), input_names=["images"], output_names=["outputs"],
                          dynamic_axes={"images": {0: "batch"}, "outputs": {0: "batch"}}, opset_version=opset,
                          dynamo=False)
    return path


class _Batches:
    """An ONNX Runtime calibration reader over prepared input batches."""

    def __init__(self, batches: Iterable[torch.Tensor], input_name: str) -> None:
        self._items = iter([{input_name: b.detach().float().numpy()} for b in batches])

    def get_next(self):
        return next(self._items, None)

    def rewind(self) -> None:  # pragma: no cover - only some calibrators ask
        pass


def quantize_onnx_static(source: str | os.PathLike, target: str | os.PathLike,
                         calibration: Iterable[torch.Tensor], per_channel: bool = True,
                         reduce_range: bool = True) -> Path:
    """ONNX Runtime's static quantizer: QDQ int8 (uint8 activations, int8 weights, the CPU's
    U8S8 kernels), MinMax calibration on ``calibration`` batches (prepared model inputs).
    The model is pre-processed first (shape inference and graph optimisation), as ONNX Runtime
    recommends. ``reduce_range``: weights in 7 bits, so that the U8S8 kernels of x86 CPUs
    without VNNI (AVX2, AVX-512 before it), whose 16-bit intermediate sums saturate, decide as
    the others do: on an AVX2 machine the classifier's 8-bit weights agreed with the float
    model on 96.1% of decisions, and vary by machine."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source, target = Path(source), Path(target)
    prepared = target.with_name(target.stem + ".pre.onnx")
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)

    class Reader(_Batches, CalibrationDataReader):
        pass

    import onnxruntime as ort

    input_name = ort.InferenceSession(str(prepared), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    quantize_static(str(prepared), str(target), Reader(calibration, input_name), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel, reduce_range=reduce_range, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
    prepared.unlink()
    return target


def quantize_program_pt2e(model: nn.Module, example: torch.Tensor,
                          calibration: Iterable[torch.Tensor]) -> torch.export.ExportedProgram:
    """torchao's pt2e post-training int8 quantization (X86InductorQuantizer, default config),
    calibrated on ``calibration`` batches; returns the converted model exported again as a
    program (q/dq ops in the graph) with a dynamic batch dimension."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
            from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
                X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    except ImportError as error:
        raise ImportError(f"torchao's pt2e flow is needed to quantize a program ({error}); install it with "
                          "pip install \".[export]\" (torchao 0.18)") from None

    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(export_program(model, example).module(), quantizer)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    converted = convert_pt2e(prepared)
    return torch.export.export(converted, (example,), dynamic_shapes=(_batch_dim(),))
