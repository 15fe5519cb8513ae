"""The optional instruments of ``evaluate_counterfactual_quality``: identity (FVA, FS) and
target-matched FD/KID beside the real floor, on a generator that changes nothing."""

import numpy as np
import pytest

from recourse.data import attribute_index
from recourse.generation import CounterfactualConfig
import torch

from recourse.generation.quality import evaluate_counterfactual_quality, real_face_ceiling
from recourse.instruments.identity import face_descriptor
from tests.conftest import BrightnessModel, random_faces, still_generator

# the walk: the still generator's edits are zero
FAST = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5)


@pytest.mark.slow
def test_unchanged_counterfactuals_keep_identity_and_sit_near_the_real_floor():
    faces = random_faces(8)
    faces[:4] //= 3  # dark: target 1
    # The reference: other faces of the same kind, plus the task faces themselves, which must be left out.
    others = random_faces(48, seed=1)
    others[:24] //= 3
    reference = np.concatenate([others, faces])
    labels = np.zeros((len(reference), 40), np.uint8)
    # Smiling: 6 of the other faces and the 8 task faces (which must not count) are labelled 1
    labels[:6, attribute_index("Smiling")] = 1
    labels[48:, attribute_index("Smiling")] = 1
    report = evaluate_counterfactual_quality(faces, reference, BrightnessModel(), BrightnessModel(), still_generator(16),
                                             ("Smiling",), FAST, timing_samples=1, identity=face_descriptor(),
                                             reference_labels=labels)
    result = report.results[0]
    assert result.fva == 100.0 and result.fs == 0.0  # the same pixels are the same person
    # Target 1 (at least the 4 dark faces): 6 real smiling faces give two disjoint sets of 3, so
    # 3 edits; target 0: all its edits (42 real faces without). Counting the task faces as real
    # ones would have allowed 7 and so all 8 edits.
    assert result.to_target_1 >= 4
    assert result.realism_n == 3 + (8 - result.to_target_1)
    assert np.isfinite([result.realism_fd, result.realism_kid, result.floor_fd, result.floor_kid]).all()
    assert report.to_dict()["attributes"][0]["fva"] == 100.0


def test_without_the_instruments_their_fields_stay_empty():
    faces = random_faces(4)
    result = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                             ("Smiling",), FAST, timing_samples=1).results[0]
    assert (result.fva, result.fs, result.realism_n, result.realism_kid, result.floor_fd) == (None,) * 5


def test_reference_labels_must_match_the_reference_images():
    faces = random_faces(4)
    with pytest.raises(ValueError, match=r"\(M, 40\)"):
        evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                        ("Smiling",), FAST, timing_samples=1, reference_labels=np.zeros((3, 40)))


def test_the_ceiling_is_the_judges_rate_on_real_faces_of_each_tasks_target_class():
    labels = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0])
    decided = torch.tensor([1, 0, 0, 0, 0, 0, 0, 1])  # sees 1 of 4 real positives, 3 of 4 negatives
    assert real_face_ceiling(decided, labels, torch.tensor([1, 1])) == 25.0
    assert real_face_ceiling(decided, labels, torch.tensor([0])) == 75.0
    assert real_face_ceiling(decided, labels, torch.tensor([1, 0, 0, 0])) == 62.5  # weighted by the tasks
    assert real_face_ceiling(decided, labels, torch.tensor([], dtype=torch.long)) is None
    assert real_face_ceiling(decided[4:], labels[4:], torch.tensor([1])) is None  # no real face of class 1


def test_with_labelled_reals_each_judge_gets_its_ceiling():
    faces = random_faces(8)
    faces[:4] //= 3
    labels = np.zeros((len(faces), 40), np.uint8)
    labels[:4, attribute_index("Smiling")] = 1
    result = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                             ("Smiling",), FAST, timing_samples=1, judge=BrightnessModel(),
                                             reference_labels=labels).results[0]
    assert result.judge_ceiling is not None and 0 <= result.judge_ceiling <= 100
    assert result.strong_judge_ceiling is None  # no strong judge given
    unlabelled = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(),
                                                 still_generator(16), ("Smiling",), FAST, timing_samples=1,
                                                 judge=BrightnessModel()).results[0]
    assert unlabelled.judge_ceiling is None


def test_calibrated_judges_give_their_verdicts_per_attribute(monkeypatch):
    from recourse.instruments import set_verdicts
    from tests.test_set_verdicts import Brightness, calibration

    monkeypatch.setattr(set_verdicts, "judge", lambda name: Brightness())
    faces = random_faces(6)
    result = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                             ("Smiling",), FAST, timing_samples=1,
                                             calibrated=[(calibration(), True)]).results[0]
    targets = {row["target"] for row in result.judge_verdicts}
    assert sum(row["n"] for row in result.judge_verdicts) == 6 and targets <= {0, 1}
    # the still generator changes nothing: no shift
    assert all(row["shift"] == 0 for row in result.judge_verdicts)
    assert evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                           ("Smiling",), FAST, timing_samples=1).results[0].judge_verdicts == ()
