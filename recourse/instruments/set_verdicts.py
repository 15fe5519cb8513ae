"""What the calibrated judges say about a set of counterfactuals: one verdict per judge,
attribute and target class (seen rate, seen over ceiling, shift; ``calibration.verdict``).

Shared by ``recourse evaluate-counterfactuals`` (its report and quality files) and
``scripts/measurements/judge_counterfactuals.py`` (counterfactuals saved by an earlier run), so that both
read the same judges, thresholds and ceilings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from recourse.data import to_float_images
from recourse.instruments.calibration import Calibration, verdict
from recourse.instruments.independent import IndependentJudge, judge

Calibrated = Sequence[tuple[Calibration, bool]]  # (calibration, trained on other faces)


def batched_scores(instrument: IndependentJudge, images: np.ndarray | torch.Tensor,
                   batch_size: int = 64) -> dict[str, np.ndarray]:
    """The judge's scores of faces given as ``uint8 (N, 3, R, R)`` or float ``[0, 1]``, batch by batch."""
    parts: dict[str, list[np.ndarray]] = {attribute: [] for attribute in instrument.attributes}
    for start in range(0, len(images), batch_size):
        batch = images[start:start + batch_size]
        batch = batch.float() if isinstance(batch, torch.Tensor) else to_float_images(batch)
        with torch.no_grad():
            scores = instrument.scores(batch)
        for attribute in instrument.attributes:
            parts[attribute].append(np.asarray(scores[attribute], np.float64))
    return {attribute: np.concatenate(chunks) if chunks else np.zeros(0) for attribute, chunks in parts.items()}


class OriginalScores:
    """The judges' scores of the original faces, computed once per judge for every attribute
    of a run (a judge scores all its attributes in one pass)."""

    def __init__(self, originals: np.ndarray | torch.Tensor):
        self.originals = originals
        self._scores: dict[str, dict[str, np.ndarray]] = {}

    def __call__(self, instrument: IndependentJudge) -> dict[str, np.ndarray]:
        if instrument.name not in self._scores:
            self._scores[instrument.name] = batched_scores(instrument, self.originals)
        return self._scores[instrument.name]


def set_verdicts(attribute: str, originals: OriginalScores, counterfactuals: np.ndarray | torch.Tensor,
                 targets: np.ndarray | torch.Tensor, calibrated: Calibrated) -> list[dict]:
    """Every usable judge's verdict on one attribute's counterfactuals, per target class present
    (independent judges first, then the project's CelebA-trained ones)."""
    if len(targets) != len(counterfactuals):
        raise ValueError(f"{len(targets)} targets for {len(counterfactuals)} counterfactuals")
    return verdicts_from_scores(attribute, originals, after_scores(attribute, counterfactuals, calibrated),
                                targets, calibrated)


def _usable(attribute: str, calibrated: Calibrated, independent_only: bool = False) -> list[tuple[Calibration, bool]]:
    return [(calibration, independent) for calibration, independent in sorted(calibrated, key=lambda pair: not pair[1])
            if calibration.attribute == attribute and calibration.usable and (independent or not independent_only)]


def after_scores(attribute: str, counterfactuals: np.ndarray | torch.Tensor, calibrated: Calibrated,
                 independent_only: bool = False) -> dict[str, np.ndarray]:
    """Each usable judge's scores of one attribute on the counterfactuals, by judge name: what
    :func:`verdicts_from_scores` reads, small enough to keep where the pictures may not be kept."""
    return {calibration.judge: batched_scores(judge(calibration.judge), counterfactuals)[attribute]
            for calibration, _ in _usable(attribute, calibrated, independent_only)}


def verdicts_from_scores(attribute: str, originals: OriginalScores, after: dict[str, np.ndarray],
                         targets: np.ndarray | torch.Tensor, calibrated: Calibrated) -> list[dict]:
    """:func:`set_verdicts` from the judges' scores of the counterfactuals (:func:`after_scores`),
    for the judges ``after`` holds."""
    targets = np.asarray(targets).astype(int)
    rows = []
    for calibration, independent in _usable(attribute, calibrated):
        if calibration.judge not in after:
            continue
        scores = np.asarray(after[calibration.judge])
        if len(targets) != len(scores):
            raise ValueError(f"{len(targets)} targets for {len(scores)} counterfactuals")
        before = originals(judge(calibration.judge))[attribute]
        for target in (1, 0):
            chosen = targets == target
            if chosen.any():
                rows.append({**verdict(calibration, before[chosen], scores[chosen], target).to_dict(),
                             "independent": independent, "trained_on": calibration.trained_on})
    return rows


def verdict_line(row: dict) -> str:
    """One verdict as a line of text, for the command line."""
    head = f"{row['attribute']:19s} → {row['target']}  {row['judge']:36s}"
    if not row["n"]:
        return f"{head} found no face in the {row['missing']} tasks"
    return (f"{head} seen {row['seen_rate']:.3f} "
            f"[{row['seen_low']:.3f}, {row['seen_high']:.3f}] of ceiling {row['ceiling']:.3f} "
            f"({row['seen_over_ceiling']:.2f})  shift {row['shift']:+.2f} [{row['shift_low']:+.2f}, "
            f"{row['shift_high']:+.2f}]  n {row['n']}{'' if row['independent'] else '  (CelebA-trained)'}")
