"""The benchmark with an auditor's own models (``--models CARD ...``): each card a row next to
the native variants, and each quantized card timed against its float original in the same run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from recourse.benchmark import BenchmarkConfig, BenchmarkResult, run_benchmark
from recourse.benchmark.latency import LatencyComparison, latency_pairs
from recourse.foreign.export import quantize_onnx_static
from recourse.render.benchmark import markdown_report
from tests.foreign_models import IMAGENET_MEAN, IMAGENET_STD, save_different
from tests.test_benchmark import tiny_setup  # noqa: F401  (the fixture)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _named(folder: Path, name: str) -> Path:
    card = folder / "recourse-card.json"
    record = json.loads(card.read_text())
    card.write_text(json.dumps({**record, "name": name}))
    return folder


def _int8_copy(float_folder: Path, folder: Path) -> Path:
    """The different model's ONNX copy quantized by ONNX Runtime's static quantizer."""
    folder.mkdir(parents=True)
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    calibration = [(torch.rand(4, 3, 96, 96, generator=torch.Generator().manual_seed(i)) - mean) / std
                   for i in range(2)]
    quantize_onnx_static(float_folder / "model.onnx", folder / "model.onnx", calibration)
    card = json.loads((float_folder / "recourse-card.json").read_text())
    (folder / "recourse-card.json").write_text(json.dumps({**card, "name": "different-int8"}))
    return folder


@pytest.mark.slow
def test_cards_are_rows_and_int8_is_timed_against_its_float_original(tiny_setup, tmp_path):  # noqa: F811
    fp32 = _named(save_different(tmp_path / "fp32-onnx", "onnx"), "different-fp32")
    int8 = _int8_copy(fp32, tmp_path / "int8-onnx")
    program = _named(save_different(tmp_path / "fp32-pt2", "torch-export"), "different-pt2")
    settings = replace(tiny_setup["settings"], n=2, margins=(), noise_control=None)
    config = BenchmarkConfig(out=tmp_path / "bench", **{**tiny_setup, "variants": ("ptq-int8",),
                                                        "settings": settings}, models=(fp32, int8, program))
    result = run_benchmark(config)
    names = [row.method for row in result.rows]
    assert names == ["fp32", "ptq-int8", "different-fp32", "different-int8", "different-pt2"]
    rows = {row.method: row for row in result.rows}
    assert rows["different-int8"].integer_kernels and rows["different-int8"].overhead is None
    assert rows["different-int8"].details["black_box_components"] > 0
    assert "black_box_components" not in rows["different-pt2"].details  # differentiable: its own gradients
    (timed,) = result.latency  # the int8 model against the float ONNX model; the program has no quantized twin
    assert timed["model"] == "different-int8" and timed["original"] == "different-fp32"
    assert timed["runtime"] == "onnxruntime" and timed["speedup"] > 0 and timed["batch"] == 8  # the folder's 8 faces (at most 32)
    again = BenchmarkResult.from_dict(json.loads((tmp_path / "bench" / "benchmark.json").read_text()))
    assert again.latency == result.latency
    assert "| onnxruntime | different-int8 | different-fp32 |" in markdown_report(again)


def test_latency_pairs_each_quantized_model_with_a_float_one_of_its_runtime():
    def model(runtime: str, quantized: bool):
        loaded = type("Loaded", (), {"runtime": runtime, "quantized": quantized})()
        return type("Model", (), {"loaded": loaded})()

    models = {"q-ort": model("onnxruntime", True), "f-pt2": model("torch.export", False),
              "f-ort": model("onnxruntime", False), "q-pt2": model("torch.export", True),
              "q-alone": model("torch (safetensors)", True)}
    assert latency_pairs(models) == [("q-ort", "f-ort"), ("q-pt2", "f-pt2")]
    row = LatencyComparison("onnxruntime", "q", "f", 32, 5, 2, 0.5, 2.0)
    assert row.speedup == 4.0 and row.to_dict()["speedup"] == 4.0


@pytest.mark.slow
def test_card_names_must_be_distinct_rows(tiny_setup, tmp_path):  # noqa: F811
    first = save_different(tmp_path / "a", "onnx")
    second = save_different(tmp_path / "b", "onnx")  # the same card name, "different"
    settings = replace(tiny_setup["settings"], n=1, margins=(), noise_control=None)
    with pytest.raises(ValueError, match="distinct plain card name"):
        run_benchmark(BenchmarkConfig(out=tmp_path / "bench", **{**tiny_setup, "variants": ("ptq-int8",),
                                                                 "settings": settings}, models=(first, second)))
