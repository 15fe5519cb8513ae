"""What the calibrated judges say about one audit's three faces: ``x``, ``x'_f`` and ``x'_g``.

Each judge that covers the audited attribute and passed its calibration (AUC ≥ 0.80 on
test, ``assets/results/independent-judges-test.json``) scores the three faces; the reading
says, per face, whether the judge puts it in the target class at its threshold, and names what
the judge was trained on. The project's own robust judges, trained on the classifier's faces,
come after where asked for (the audit shows them in rows of their own).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from recourse.instruments.calibration import Calibration
from recourse.instruments.independent import judge
from recourse.locations import assets_dir

CALIBRATIONS = "results/independent-judges-test.json"


@dataclass(frozen=True)
class JudgeReading:
    judge: str
    trained_on: str
    independent: bool
    attribute: str
    target: int
    threshold: float
    on_face: float  # NaN: the judge found no face
    on_teacher_counterfactual: float
    on_student_counterfactual: float

    def sees(self, score: float) -> bool | None:
        """Whether the judge puts a face of this score in the target class (None: no face found)."""
        if math.isnan(score):
            return None
        present = score >= self.threshold
        return present if self.target == 1 else not present

    def to_dict(self) -> dict:
        record = asdict(self)
        for face in ("on_face", "on_teacher_counterfactual", "on_student_counterfactual"):
            value = record[face]
            record[face] = None if math.isnan(value) else round(value, 6)
            record[f"{face}_seen"] = self.sees(value)
        return record


@functools.lru_cache(maxsize=4)
def calibrations(path: Path | None = None) -> tuple[tuple[Calibration, bool], ...]:
    """``(calibration, independent)`` of every usable judge and attribute; none before the
    calibration has been run and committed."""
    path = path or assets_dir() / CALIBRATIONS
    if not path.is_file():
        return ()
    records = json.loads(path.read_text())["judges"]
    return tuple((Calibration.from_dict(record), record.get("independent", True)) for record in records
                 if record["usable"])


def path_readings(images: torch.Tensor, attribute: str,
                  calibrated: tuple[tuple[Calibration, bool], ...] | None = None) -> dict[str, tuple[float, ...]]:
    """Each usable judge trained on other faces, its score of ``attribute`` on each of ``images``
    (points of a recourse path, ``(K, 3, H, W)``), by the judge's name."""
    scores = {}
    for calibration, independent in (calibrations() if calibrated is None else calibrated):
        if calibration.attribute == attribute and independent:
            values = judge(calibration.judge).scores(images.float())[attribute]
            scores[calibration.judge] = tuple(float(value) for value in values)
    return scores


def judge_readings(x: torch.Tensor, teacher_counterfactual: torch.Tensor, student_counterfactual: torch.Tensor,
                   attribute: str, target: int,
                   calibrated: tuple[tuple[Calibration, bool], ...] | None = None,
                   independent_only: bool = True) -> tuple[JudgeReading, ...]:
    """Every usable judge's reading of the three faces (each ``(3, H, W)`` in [0, 1]); with
    ``independent_only`` (the audit's: its own rows show the robust judges) only those trained
    on other faces."""
    faces = torch.stack([x, teacher_counterfactual, student_counterfactual]).float()
    readings = []
    for calibration, independent in (calibrations() if calibrated is None else calibrated):
        if calibration.attribute != attribute or (independent_only and not independent):
            continue
        scores = [float(value) for value in judge(calibration.judge).scores(faces)[attribute]]
        readings.append(JudgeReading(calibration.judge, calibration.trained_on, independent, attribute, target,
                                     calibration.threshold, *scores))
    return tuple(sorted(readings, key=lambda reading: not reading.independent))
