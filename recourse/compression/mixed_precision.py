"""Per-layer bit widths under a mean-bits budget, from each layer's measured sensitivity."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from recourse.compression.fakequant import bits_of, set_weight_quantizer, weight_layers
from recourse.progress import Progress, silent


def allocate_bits(costs: dict[str, dict[int, float]], sizes: dict[str, int], budget: float,
                  choices: tuple[int, ...]) -> dict[str, int]:
    """Greedy knapsack: start every layer at the fewest bits, then repeatedly give more bits
    to the layer whose objective drops most per extra weight-bit, while the mean bits per
    weight (weighted by layer size) stays within ``budget``.

    ``costs[layer][bits]``: the objective with only that layer at ``bits``.
    """
    ladder = sorted(choices)
    bits = {name: ladder[0] for name in sizes}
    limit = budget * sum(sizes.values())
    used = sum(sizes[name] * bits[name] for name in sizes)
    while True:
        best: tuple[float, str, int, int] | None = None
        for name in sizes:
            higher = [b for b in ladder if b > bits[name]]
            if not higher:
                continue
            extra = sizes[name] * (higher[0] - bits[name])
            if used + extra > limit + 1e-9:
                continue
            gain = (costs[name][bits[name]] - costs[name][higher[0]]) / extra
            if best is None or gain > best[0]:
                best = (gain, name, higher[0], extra)
        if best is None:
            return bits
        _, name, bits[name], extra = best
        used += extra


@torch.no_grad()
def measure_sensitivity(twin: nn.Module, objective: Callable[[nn.Module], torch.Tensor], choices: tuple[int, ...],
                        progress: Progress = silent) -> dict[str, dict[int, float]]:
    """The objective with one layer at a time quantized to each of ``choices`` bits while
    every other layer keeps its current bits; each layer is restored afterwards."""
    layers = weight_layers(twin)
    costs: dict[str, dict[int, float]] = {}
    for done, (name, layer) in enumerate(layers.items()):
        kept = bits_of(layer)
        costs[name] = {}
        for bits in choices:
            set_weight_quantizer(layer, bits)
            costs[name][bits] = float(objective(twin))
        set_weight_quantizer(layer, kept)
        progress("sensitivity", done + 1, len(layers))
    return costs


def choose_bits(twin: nn.Module, objective: Callable[[nn.Module], torch.Tensor], choices: tuple[int, ...],
                budget: float, progress: Progress = silent) -> dict[str, int]:
    twin.eval()
    costs = measure_sensitivity(twin, objective, choices, progress)
    sizes = {name: layer.weight.numel() for name, layer in weight_layers(twin).items()}
    return allocate_bits(costs, sizes, budget, choices)
