"""Latency of a quantized foreign model against its float original, measured in the same run.

A benchmark given model cards (``--models``) pairs each quantized model with the float model of
the same runtime among them (ONNX Runtime int8 with the float ONNX model, a pt2e-quantized
``torch.export`` program with the float program): one runtime, one machine, one moment, so the
ratio says what the quantization bought on this CPU. The two are timed alternately, repeat by
repeat, so a neighbour's load falls on both alike; each time is the runtime called on inputs
already prepared by the card (the adapter's resizing and normalisation are left out).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

from recourse.foreign.adapter import ForeignClassifier, prepare
from recourse.foreign.loaders import run_model


@dataclass(frozen=True)
class LatencyComparison:
    """Median milliseconds per image of a quantized model and of its float original."""

    runtime: str  # "onnxruntime" or "torch.export"
    model: str  # the quantized model's row
    original: str  # the float original's row
    batch: int  # images per call
    repeats: int
    threads: int  # torch's intra-op threads; ONNX Runtime's sessions use as many
    model_ms_per_image: float
    original_ms_per_image: float

    @property
    def speedup(self) -> float:
        """How many times faster the quantized model is (below 1: slower)."""
        return self.original_ms_per_image / self.model_ms_per_image

    def to_dict(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}


def latency_pairs(models: dict[str, ForeignClassifier]) -> list[tuple[str, str]]:
    """``(quantized, float original)`` row names: each quantized model with the first float
    model of the same runtime (in the order given); a quantized model without one is left out."""
    pairs = []
    for name, model in models.items():
        if not model.loaded.quantized:
            continue
        original = next((other for other, candidate in models.items()
                         if not candidate.loaded.quantized and candidate.loaded.runtime == model.loaded.runtime), None)
        if original is not None:
            pairs.append((name, original))
    return pairs


@torch.no_grad()
def compare_latency(models: dict[str, ForeignClassifier], images: torch.Tensor, repeats: int,
                    batch: int = 32) -> list[LatencyComparison]:
    """Every latency pair of ``models`` timed on the first ``batch`` of ``images`` ``(N, 3, H, W)``
    in [0, 1]: the median over ``repeats`` alternating calls, per image."""
    if repeats < 1 or batch < 1:
        raise ValueError(f"repeats and batch must be >= 1, got {repeats} and {batch}")
    images = images[:batch]
    results = []
    for name, original in latency_pairs(models):
        inputs = {row: prepare(images, models[row].card.input) for row in (name, original)}
        for row in (name, original):  # warm-up: first calls allocate and pick kernels
            run_model(models[row].loaded, inputs[row])
        times: dict[str, list[float]] = {name: [], original: []}
        for _ in range(repeats):
            for row in (original, name):
                started = time.perf_counter()
                run_model(models[row].loaded, inputs[row])
                times[row].append(time.perf_counter() - started)
        per_image = {row: 1000 * statistics.median(values) / len(images) for row, values in times.items()}
        results.append(LatencyComparison(models[name].loaded.runtime, name, original, len(images), repeats,
                                         torch.get_num_threads(), per_image[name], per_image[original]))
    return results
