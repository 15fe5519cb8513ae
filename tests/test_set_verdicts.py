"""The calibrated judges' verdicts on a set of counterfactuals, shared by evaluate-counterfactuals
and scripts.measurements.judge_counterfactuals: per usable judge of the attribute and per target class."""

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from recourse.instruments import set_verdicts
from recourse.instruments.calibration import Calibration
from recourse.instruments.set_verdicts import OriginalScores, batched_scores, verdict_line


@dataclass
class Brightness:
    """A stand-in judge: a face's mean brightness is its score for every attribute it covers."""

    name: str = "brightness"
    attributes: tuple = ("Smiling", "Male")
    calls: list = field(default_factory=list)

    def scores(self, images: torch.Tensor) -> dict:
        self.calls.append(len(images))
        return {attribute: images.mean(dim=(1, 2, 3)).double().numpy() for attribute in self.attributes}


def calibration(name="brightness", attribute="Smiling", auc=0.9) -> Calibration:
    return Calibration(name, "lamps", attribute, threshold=0.5, auc=auc, balanced_accuracy=0.9, tpr=0.8, tnr=0.9,
                       n=10, found=1.0, positive_mean=0.75, negative_mean=0.25, val_auc=0.9, val_n=10)


@pytest.fixture
def lamp(monkeypatch) -> Brightness:
    judge = Brightness()
    monkeypatch.setattr(set_verdicts, "judge", lambda name: judge)
    return judge


def test_a_verdict_per_target_class_with_the_independent_judges_first(lamp):
    originals = OriginalScores(np.full((4, 3, 8, 8), 64, np.uint8))
    counterfactuals = torch.full((4, 3, 8, 8), 0.75)
    counterfactuals[2:] = 0.1
    calibrated = [(calibration("celeba"), False), (calibration(), True), (calibration(auc=0.7), True),
                  (calibration(attribute="Male"), True)]
    rows = set_verdicts.set_verdicts("Smiling", originals, counterfactuals, np.array([1, 1, 0, 0]), calibrated)
    # the unusable judge (AUC 0.7) and the other attribute's are left out
    assert [(row["independent"], row["target"]) for row in rows] == [(True, 1), (True, 0), (False, 1), (False, 0)]
    assert rows[0]["seen_rate"] == 1.0 and rows[1]["seen_rate"] == 1.0 and rows[0]["trained_on"] == "lamps"
    assert rows[0]["shift"] == pytest.approx((0.75 - 64 / 255) / 0.5, abs=1e-3)


def test_the_originals_are_scored_once_for_every_attribute(lamp):
    originals = OriginalScores(np.full((3, 3, 8, 8), 64, np.uint8))
    for attribute in ("Smiling", "Male"):
        set_verdicts.set_verdicts(attribute, originals, torch.zeros(3, 3, 8, 8), np.zeros(3),
                                  [(calibration(attribute=attribute), True)])
    assert lamp.calls == [3, 3, 3]  # the originals once, each attribute's counterfactuals once


def test_targets_must_match_the_counterfactuals(lamp):
    with pytest.raises(ValueError, match="2 targets for 3"):
        set_verdicts.set_verdicts("Smiling", OriginalScores(torch.zeros(3, 3, 8, 8)), torch.zeros(3, 3, 8, 8),
                                  np.zeros(2), [(calibration(), True)])


def test_scores_come_in_batches_from_bytes_or_floats():
    judge = Brightness()
    as_bytes = batched_scores(judge, np.full((5, 3, 4, 4), 255, np.uint8), batch_size=2)
    as_floats = batched_scores(judge, torch.ones(5, 3, 4, 4), batch_size=2)
    assert judge.calls == [2, 2, 1, 2, 2, 1]
    np.testing.assert_allclose(as_bytes["Male"], as_floats["Male"])


def test_a_line_says_when_no_face_was_found():
    row = {"attribute": "Young", "target": 1, "judge": "age", "n": 0, "missing": 7, "independent": True}
    assert "found no face in the 7 tasks" in verdict_line(row)
