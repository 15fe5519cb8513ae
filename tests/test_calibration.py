"""Calibration of independent judges and their verdicts on counterfactuals, by hand."""

import math

import numpy as np
import pytest

from recourse.instruments.calibration import Calibration, auc, best_threshold, calibrate, rates, verdict


def test_the_threshold_maximises_balanced_accuracy_between_scores():
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.9])
    labels = np.array([0, 0, 1, 0, 1])
    # above 0.4: TPR 1/2, TNR 3/3 -> 0.75; above 0.2: TPR 2/2, TNR 2/3 -> 0.833 (best)
    assert best_threshold(scores, labels) == pytest.approx(0.25)
    assert rates(scores, labels, 0.25) == (1.0, pytest.approx(2 / 3))


def test_a_useless_judge_gets_the_lowest_score_as_threshold_and_ties_are_not_split():
    assert best_threshold(np.array([0.5, 0.5, 0.5, 0.5]), np.array([0, 1, 0, 1])) == 0.5
    assert best_threshold(np.array([1.0, 1.0, 2.0]), np.array([0, 1, 1])) == pytest.approx(1.5)


def test_faces_the_judge_did_not_find_are_left_out_not_read_as_absent():
    scores = np.array([np.nan, 0.1, 0.9, np.nan])
    labels = np.array([1, 0, 1, 0])
    assert auc(scores, labels) == 1.0
    calibration = calibrate("j", "elsewhere", "Smiling", scores, labels, scores, labels)
    assert (calibration.n, calibration.found) == (2, 0.5)
    assert (calibration.positive_mean, calibration.negative_mean) == (0.9, 0.1)


def test_a_verdict_counts_seen_faces_and_shifts_in_units_of_the_real_gap():
    calibration = Calibration("j", "elsewhere", "Smiling", threshold=0.5, auc=0.9, balanced_accuracy=0.8, tpr=0.8,
                              tnr=0.9, n=100, found=1.0, positive_mean=0.8, negative_mean=0.2, val_auc=0.9, val_n=100)
    before = np.array([0.1, 0.2, 0.3, np.nan])
    after = np.array([0.7, 0.4, 0.9, 0.9])
    toward_smile = verdict(calibration, before, after, target=1)
    assert (toward_smile.n, toward_smile.missing) == (3, 1)
    assert toward_smile.seen_rate == pytest.approx(2 / 3, abs=1e-4)
    assert toward_smile.seen_over_ceiling == pytest.approx(2 / 3 / 0.8, abs=1e-4)
    assert toward_smile.shift == pytest.approx(((0.6 + 0.2 + 0.6) / 3) / 0.6, abs=1e-4)
    assert toward_smile.seen_low < toward_smile.seen_rate < toward_smile.seen_high
    away = verdict(calibration, after[:3], before[:3], target=0)
    assert away.seen_rate == 1.0 and away.ceiling == 0.9 and away.shift == pytest.approx(toward_smile.shift)


def test_a_verdict_on_nothing_found_is_undefined_not_zero():
    calibration = Calibration("j", "x", "Male", 0.5, 0.9, 0.8, 0.8, 0.9, 10, 1.0, 0.8, 0.2, 0.9, 10)
    empty = verdict(calibration, np.array([np.nan]), np.array([0.9]), target=1)
    assert empty.n == 0 and math.isnan(empty.seen_rate) and math.isnan(empty.shift)
    assert empty.to_dict()["seen_rate"] is None and empty.to_dict()["missing"] == 1


def test_a_calibration_round_trips_and_says_whether_it_is_usable():
    calibration = Calibration("j", "x", "Male", 0.5, 0.79, 0.7, 0.8, 0.6, 10, 1.0, 0.8, 0.2, 0.8, 10)
    record = calibration.to_dict()
    assert record["usable"] is False and Calibration.from_dict(record) == calibration
