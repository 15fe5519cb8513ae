"""Scoring saved counterfactuals with a judge trained after them."""

import numpy as np
import torch
from torch import nn

from recourse.data import attribute_index
from scripts.measurements.rescore_judge import rescore

SMILING = attribute_index("Smiling")


class Brightness(nn.Module):
    """Smiling's logit is the mean brightness minus ``centre``; every other logit is −1."""

    def __init__(self, centre: float) -> None:
        super().__init__()
        self.centre = centre

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = -torch.ones(len(x), 40)
        logits[:, SMILING] = x.mean(dim=(1, 2, 3)) - self.centre
        return logits


def saved_run(tmp_path, counterfactuals: np.ndarray):
    path = tmp_path / "run.npz"
    np.savez(path, split="test", n=len(counterfactuals), Smiling=counterfactuals.astype(np.float16))
    return np.load(path)


def test_the_judge_counts_only_the_tasks_it_did_not_already_agree_with(tmp_path):
    images = np.full((4, 3, 8, 8), 60, dtype=np.uint8)  # brightness ≈ 0.235
    images[3] = 250  # ≈ 0.98
    # the classifier (boundary 0.5): faces 0–2 are to become smiling, face 3 not
    counterfactuals = np.full((4, 3, 8, 8), 0.9)
    counterfactuals[2] = 0.25  # a weak edit
    counterfactuals[3] = 0.1
    run = saved_run(tmp_path, counterfactuals)
    strict = rescore(run, images, Brightness(0.5), Brightness(0.3))
    assert strict["Smiling"] == {"flip_rate": 75.0, "agreed": 4}  # the weak edit does not convince it
    lenient = rescore(run, images, Brightness(0.5), Brightness(0.2))
    assert lenient["Smiling"] == {"flip_rate": 100.0, "agreed": 1}  # faces 0–2 already smile for it: not counted
