"""What an independent judge gives real faces, and what it says about a set of counterfactuals.

Calibration (pure functions on scores and CelebA labels): a threshold chosen on validation by
balanced accuracy, then on test the AUC, the balanced accuracy and the true-positive and
true-negative rates at that threshold. Those two rates are the judge's *ceilings*: the share
of real faces of each class it puts in their class, the most a counterfactual set can be
expected to reach in that direction.

Verdicts on counterfactuals (``docs/metrics.md``, "Independent judges"):

* **seen rate**: the share of counterfactuals the judge puts in the target class at its threshold;
* **seen over ceiling**: the seen rate divided by the ceiling of the target class;
* **shift**: the mean change of the judge's score from ``x`` to ``x'`` toward the target, as a
  fraction of the gap between the two real classes' mean scores (1.0: the edit moves the judge
  as far as the real difference between the classes).

A face the judge cannot find (NaN score, in ``x`` or ``x'``) is left out and counted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from recourse.benchmark.statistics import wilson_interval
from recourse.instruments.realism import roc_auc

MIN_AUC = 0.80  # below it a judge is reported and not used


@dataclass(frozen=True)
class Calibration:
    """One judge on one attribute: threshold from validation, the rest on test."""

    judge: str
    trained_on: str
    attribute: str
    threshold: float
    auc: float
    balanced_accuracy: float
    tpr: float  # the ceiling of target 1 (attribute present)
    tnr: float  # the ceiling of target 0
    n: int  # test faces the judge found
    found: float  # share of test faces found
    positive_mean: float  # mean score of real test faces with the attribute
    negative_mean: float
    val_auc: float
    val_n: int

    @property
    def usable(self) -> bool:
        return self.auc >= MIN_AUC

    def ceiling(self, target: int) -> float:
        return self.tpr if target == 1 else self.tnr

    def to_dict(self) -> dict:
        return {**asdict(self), "usable": self.usable}

    @classmethod
    def from_dict(cls, record: dict) -> Calibration:
        return cls(**{name: record[name] for name in cls.__dataclass_fields__})


def _found(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels).astype(bool)
    if scores.shape != labels.shape:
        raise ValueError(f"{scores.shape[0]} scores for {labels.shape[0]} labels")
    keep = np.isfinite(scores)
    return scores[keep], labels[keep]


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC of the found faces' scores against binary labels."""
    scores, labels = _found(scores, labels)
    return roc_auc(scores[labels], scores[~labels])


def rates(scores: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float]:
    """``(true-positive rate, true-negative rate)`` of ``score >= threshold`` on the found faces."""
    scores, labels = _found(scores, labels)
    if labels.all() or not labels.any():
        raise ValueError("rates need faces of both classes")
    said = scores >= threshold
    return float(said[labels].mean()), float((~said[~labels]).mean())


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold of highest balanced accuracy, midway between two neighbouring scores."""
    scores, labels = _found(scores, labels)
    if labels.all() or not labels.any():
        raise ValueError("a threshold needs faces of both classes")
    order = np.argsort(scores, kind="stable")
    ordered, positive = scores[order], labels[order]
    # a threshold just above ordered[i] says "absent" for faces 0..i; between equal scores none
    balanced = (1 - np.cumsum(positive) / positive.sum() + np.cumsum(~positive) / (~positive).sum()) / 2
    balanced[:-1][ordered[1:] == ordered[:-1]] = -np.inf
    best = int(np.argmax(balanced))
    if balanced[best] <= 0.5:  # no threshold beats calling every face one class
        return float(ordered[0])
    return float(ordered[best] + ordered[best + 1]) / 2  # best < last: the last says "absent" for all (0.5)


def calibrate(judge: str, trained_on: str, attribute: str, val_scores: np.ndarray, val_labels: np.ndarray,
              test_scores: np.ndarray, test_labels: np.ndarray) -> Calibration:
    """Threshold on validation, everything else on test."""
    threshold = best_threshold(val_scores, val_labels)
    tpr, tnr = rates(test_scores, test_labels, threshold)
    found_scores, found_labels = _found(test_scores, test_labels)
    return Calibration(
        judge=judge, trained_on=trained_on, attribute=attribute, threshold=threshold,
        auc=round(auc(test_scores, test_labels), 4), balanced_accuracy=round((tpr + tnr) / 2, 4),
        tpr=round(tpr, 4), tnr=round(tnr, 4), n=int(found_scores.size),
        found=round(float(np.isfinite(np.asarray(test_scores, np.float64)).mean()), 4),
        positive_mean=float(found_scores[found_labels].mean()), negative_mean=float(found_scores[~found_labels].mean()),
        val_auc=round(auc(val_scores, val_labels), 4), val_n=int(np.isfinite(np.asarray(val_scores, np.float64)).sum()))


@dataclass(frozen=True)
class Verdict:
    """What one judge says about one attribute's counterfactuals toward one target class."""

    judge: str
    attribute: str
    target: int
    n: int  # tasks whose face and counterfactual the judge found
    missing: int  # tasks left out: no face found in x or x'
    seen_rate: float
    seen_low: float  # Wilson 95%
    seen_high: float
    ceiling: float
    seen_over_ceiling: float
    seen_over_ceiling_low: float
    seen_over_ceiling_high: float
    shift: float
    shift_low: float  # percentile bootstrap 95% over tasks
    shift_high: float

    def to_dict(self) -> dict:
        """The fields, undefined ones (no face found in any task) as None: JSON has no NaN."""
        return {name: None if isinstance(value, float) and math.isnan(value) else value
                for name, value in asdict(self).items()}


def seen(after: np.ndarray, threshold: float, target: int) -> np.ndarray:
    """Whether the judge puts each counterfactual in the target class."""
    said = np.asarray(after, np.float64) >= threshold
    return said if target == 1 else ~said


def shifts(before: np.ndarray, after: np.ndarray, target: int, calibration: Calibration) -> np.ndarray:
    """Each task's score change toward the target over the real classes' mean gap."""
    gap = calibration.positive_mean - calibration.negative_mean
    toward = 1.0 if target == 1 else -1.0
    return toward * (np.asarray(after, np.float64) - np.asarray(before, np.float64)) / gap


def verdict(calibration: Calibration, before: np.ndarray, after: np.ndarray, target: int,
            draws: int = 2000, seed: int = 0) -> Verdict:
    """The judge's verdict on counterfactuals ``after`` of faces ``before`` (scores), all
    toward ``target``."""
    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    found = np.isfinite(before) & np.isfinite(after)
    before, after = before[found], after[found]
    n = int(found.sum())
    hits = int(seen(after, calibration.threshold, target).sum())
    interval = wilson_interval(hits, n) if n else None
    ceiling = calibration.ceiling(target)
    moved = shifts(before, after, target, calibration)
    if n:
        rng = np.random.default_rng(seed)
        means = moved[rng.integers(0, n, size=(draws, n))].mean(axis=1)
        shift_low, shift_high = np.percentile(means, [2.5, 97.5])
    nan = math.nan
    rate = hits / n if n else nan
    low, high = (interval.low, interval.high) if interval is not None else (nan, nan)
    over = (lambda value: value / ceiling if ceiling > 0 else nan)
    return Verdict(
        judge=calibration.judge, attribute=calibration.attribute, target=target, n=n, missing=int((~found).sum()),
        seen_rate=round(rate, 4), seen_low=round(low, 4), seen_high=round(high, 4), ceiling=ceiling,
        seen_over_ceiling=round(over(rate), 4), seen_over_ceiling_low=round(over(low), 4),
        seen_over_ceiling_high=round(over(high), 4), shift=round(float(moved.mean()), 4) if n else nan,
        shift_low=round(float(shift_low), 4) if n else nan, shift_high=round(float(shift_high), 4) if n else nan)
