"""Scoring saved counterfactuals with calibrated judges: per attribute and target class."""

from dataclasses import dataclass

import numpy as np
import torch

from recourse.data import attribute_index
from recourse.instruments.calibration import Calibration
from recourse.instruments import set_verdicts
from scripts.measurements import judge_counterfactuals


@dataclass(frozen=True)
class Brightness:
    """A stand-in judge: a face's mean brightness is its "Smiling" score."""

    name: str = "brightness"
    attributes: tuple = ("Smiling",)

    def scores(self, images: torch.Tensor) -> dict:
        return {"Smiling": images.mean(dim=(1, 2, 3)).double().numpy()}


def test_verdicts_per_target_class_from_saved_counterfactuals(monkeypatch):
    monkeypatch.setattr(set_verdicts, "judge", lambda name: Brightness())
    images = np.full((4, 3, 8, 8), 64, np.uint8)
    brighter = np.full((4, 3, 8, 8), 0.75, np.float16)
    brighter[2:] = 0.1  # the last two go darker: toward "not smiling"
    saved = {"split": np.array("test"), "n": np.array(4), "Smiling": brighter}

    class Saved(dict):
        files = list(saved)

    targets = np.zeros((4, 40), np.int64)
    targets[:2, attribute_index("Smiling")] = 1
    calibration = Calibration("brightness", "lamps", "Smiling", threshold=0.5, auc=0.9, balanced_accuracy=0.9,
                              tpr=0.8, tnr=0.9, n=10, found=1.0, positive_mean=0.75, negative_mean=0.25,
                              val_auc=0.9, val_n=10)
    rows = judge_counterfactuals.judged(Saved(saved), images, targets, [(calibration, True)])
    by_target = {row["target"]: row for row in rows}
    assert by_target[1]["seen_rate"] == 1.0 and by_target[0]["seen_rate"] == 1.0
    # 64/255 = 0.251 to 0.75 (toward smiling) and to 0.1 (away): over the real gap of 0.5
    assert abs(by_target[1]["shift"] - (0.75 - 64 / 255) / 0.5) < 0.01
    assert abs(by_target[0]["shift"] - (64 / 255 - 0.1) / 0.5) < 0.01
    assert by_target[1]["independent"] is True and by_target[1]["n"] == 2
