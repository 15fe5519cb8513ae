"""The audit's readings by calibrated judges: each face's score and whether the judge puts it in
the target class, named by what the judge was trained on; shown in the evidence table."""

import math

import pytest
from dataclasses import dataclass

import torch

from recourse.instruments import readings
from recourse.instruments.calibration import Calibration


@dataclass(frozen=True)
class Brightness:
    name: str = "brightness"
    attributes: tuple = ("Smiling",)

    def scores(self, images):
        values = images.mean(dim=(1, 2, 3)).double().numpy()
        values[2] = float("nan")  # the judge finds no face in x'_g
        return {"Smiling": values}


def _calibration(name, independent=True):
    return (Calibration(name, "lamps", "Smiling", 0.5, 0.9, 0.8, 0.8, 0.9, 10, 1.0, 0.8, 0.2, 0.9, 10), independent)


def test_readings_say_what_each_judge_sees_on_each_face(monkeypatch):
    monkeypatch.setattr(readings, "judge", lambda name: Brightness())
    x, brighter = torch.full((3, 8, 8), 0.2), torch.full((3, 8, 8), 0.9)
    found = readings.judge_readings(x, brighter, brighter, "Smiling", 1,
                                    calibrated=(_calibration("brightness"), _calibration("own", False)))
    assert [reading.judge for reading in found] == ["brightness"]  # the project's own judges have their own rows
    (reading,) = found
    assert reading.sees(reading.on_face) is False and reading.sees(reading.on_teacher_counterfactual) is True
    assert reading.sees(reading.on_student_counterfactual) is None and math.isnan(reading.on_student_counterfactual)
    record = reading.to_dict()
    assert record["on_student_counterfactual"] is None and record["on_teacher_counterfactual_seen"] is True
    both = readings.judge_readings(x, brighter, brighter, "Smiling", 0, independent_only=False,
                                   calibrated=(_calibration("own", False), _calibration("brightness")))
    assert [r.independent for r in both] == [True, False]  # independent first
    assert both[0].sees(both[0].on_face) is True  # toward "not smiling", a dark face is seen
    assert readings.judge_readings(x, brighter, brighter, "Male", 1, calibrated=(_calibration("brightness"),)) == ()


def test_without_a_calibration_file_there_are_no_readings(tmp_path):
    assert readings.calibrations(tmp_path / "absent.json") == ()


@pytest.mark.slow
@pytest.mark.requires("committed_variants")
def test_an_audit_shows_the_judges_trained_elsewhere_in_its_evidence():
    import numpy as np
    from PIL import Image

    import app
    from recourse.audit.pipeline import audit_image
    from recourse.render.audit_html import evidence_table

    face = app.framed_tensor(np.asarray(Image.open(app.gallery_faces()[0][0]).convert("RGB")))
    result = audit_image(face, variant="ptq-int8", attribute="Smiling",
                         settings=app.settings_from(20, 40, 0, 0.0, "denoised", 2, 1.0))
    names = {reading.judge for reading in result.judge_readings}
    assert {"fer-happy (FER-2013)", "mouth-geometry (dlib 68 landmarks)"} <= names
    assert all(reading.independent for reading in result.judge_readings)
    shown = evidence_table(result)
    assert "judges trained on other faces" in shown and "FER-2013 (35,887 grey faces" in shown
    assert result.to_dict()["judge_readings"][0]["trained_on"]
