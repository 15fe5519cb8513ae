"""The mouth-geometry judge (dlib's 68 landmarks): its two ratios on landmarks placed by hand,
no score without a face, and on real validation faces that it tells open mouths and smiles."""

import numpy as np
import pytest
import torch

from recourse.instruments import mouth_geometry
from recourse.instruments.independent import judge
from recourse.instruments.mouth_geometry import landmarks, landmarks_file, mouth_opening, mouth_width
from recourse.instruments.calibration import auc  # over the faces found
from tests.conftest import hq_val_faces

FACES = 40


def hand_placed(gap: float, width: float, scale: float = 1.0) -> np.ndarray:
    """68 points ``(68, 2)``: eye centres 40 apart, the mouth corners ``width`` apart and the
    inner lips ``gap`` apart, all times ``scale``."""
    points = np.zeros((68, 2))
    points[36:42] = (30, 40)
    points[42:48] = (70, 40)
    points[48], points[54] = (50 - width / 2, 110), (50 + width / 2, 110)
    points[[61, 62, 63]] = [(45, 110 - gap / 2), (50, 110 - gap / 2), (55, 110 - gap / 2)]
    points[[67, 66, 65]] = [(45, 110 + gap / 2), (50, 110 + gap / 2), (55, 110 + gap / 2)]
    return points * scale


def test_the_ratios_of_hand_placed_landmarks():
    points = np.stack([hand_placed(0, 40), hand_placed(10, 60), hand_placed(10, 60, scale=3), np.full((68, 2), np.nan)])
    opening, width = mouth_opening(points), mouth_width(points)
    assert opening[:3] == pytest.approx([0.0, 0.25, 0.25])  # gap over eye-centre distance, size-free
    assert width[:3] == pytest.approx([1.0, 1.5, 1.5])  # corners over eye-centre distance
    assert np.isnan(opening[3]) and np.isnan(width[3])


def test_the_landmark_model_ships_in_the_installed_wheel():
    assert landmarks_file().name == "shape_predictor_68_face_landmarks.dat" and landmarks_file().stat().st_size > 90e6


def test_a_blank_frame_has_no_face_and_scores_nan():
    result = mouth_geometry.scores(torch.full((2, 3, 64, 64), 0.5))
    assert set(result) == {"Mouth_Slightly_Open", "Smiling"}
    assert all(values.shape == (2,) and np.isnan(values).all() for values in result.values())


def test_the_judge_is_registered():
    entry = judge("mouth-geometry (dlib 68 landmarks)")
    assert entry.attributes == ("Mouth_Slightly_Open", "Smiling") and "non-commercial" in entry.trained_on


@pytest.fixture(scope="module")
def val_faces() -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """The first validation faces and their Mouth_Slightly_Open and Smiling labels."""
    return hq_val_faces(FACES, 'Mouth_Slightly_Open', 'Smiling')


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_real_faces_get_the_same_landmarks_twice(val_faces):
    first = landmarks(val_faces[0][:4])
    assert first.shape == (4, 68, 2) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, landmarks(val_faces[0][:4]))


@pytest.mark.requires("hq_data")
def test_on_real_faces_it_separates_open_mouths_and_smiles(val_faces):
    images, open_mouth, smiling = val_faces
    result = mouth_geometry.scores(images)
    found = np.isfinite(result["Smiling"])
    assert found.sum() >= FACES - 2  # 99.5% of 1,000 validation faces are found; one of these 40 is not
    assert auc(result["Mouth_Slightly_Open"], open_mouth) > 0.8
    assert auc(result["Smiling"], smiling) > 0.8
