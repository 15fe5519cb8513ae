"""Median seconds per counterfactual of each method, one face at a time, on validation faces.

``recourse method-speed``: each face is edited alone (batch 1), so the figure is what one audit's
model waits for. Run it on an idle machine: the figure is wall time on however many threads
torch has.

    recourse method-speed --data ../shared/data/celeba-hq-64 --n 6
    recourse method-speed --data ../shared/data/celeba-hq-64 --n 8 --methods denoised --margin 10 \\
        --attributes Smiling Young Male Eyeglasses --json out/speed.json
"""

from __future__ import annotations

import time

import torch

from recourse.data import attribute_index
from recourse.generation.denoised import REFERENCE_VIEWS
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.methods import generate


def warm_up(faces: torch.Tensor, teacher, generator, attribute: str, method: str, margin: float) -> None:
    """One counterfactual of the first face, not timed."""
    generate(faces[:1], teacher, attribute, torch.zeros(1, dtype=torch.long),
             CounterfactualConfig(method=method, margin=margin), generator, seeds=(0,))


def seconds_per_counterfactual(faces: torch.Tensor, teacher, generator, attributes, method: str,
                               margin: float) -> list[float]:
    """Wall seconds of each counterfactual that flips the teacher's decision, one face at a time,
    for each attribute in turn."""
    config = CounterfactualConfig(method=method, margin=margin)
    seconds = []
    for attribute in attributes:
        with torch.no_grad():
            targets = (teacher(faces)[:, attribute_index(attribute)] < 0).long()  # flip each decision
        for i in range(len(faces)):
            REFERENCE_VIEWS.clear()  # each from cold: the same face under another attribute would reuse its view
            started = time.perf_counter()
            generate(faces[i:i + 1], teacher, attribute, targets[i:i + 1], config, generator, seeds=(i,))
            seconds.append(time.perf_counter() - started)
    return seconds
