"""Mouth opening and width from dlib's 68 face landmarks: a judge with no CelebA training at all.

The landmark model (``shape_predictor_68_face_landmarks.dat``, in the installed
``face-recognition-models`` wheel) was trained by Davis King on the iBUG 300-W landmark data.
300-W's licence excludes commercial use, as CelebA's does; the judge says so wherever its
scores are shown (its ``trained_on`` text in ``independent.JUDGES``).

Two ratios of landmark distances, each free of the face's size in the frame:

* ``Mouth_Slightly_Open``: the mean gap between the inner lips (points 61-63 against 67-65,
  0-based, the pairs facing each other) over the distance between the eye centres (means of
  36-41 and 42-47);
* ``Smiling``: the mouth's width (corners 48 and 54) over the same eye distance: a smile pulls
  the corners apart.

The eye distance, not the face height (chin 8 to nose bridge 27), scales the opening: on the
first 1,000 validation faces the two separate Mouth_Slightly_Open equally (AUC 0.9495 and
0.9494), and the chin drops as the mouth opens, which the eyes do not.

Faces are found as in ``age_gender`` (:func:`recourse.instruments.age_gender.face_shapes`):
upsampled to 256 px, dlib's detector, the fixed CelebA-HQ face box on weak evidence, else NaN.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from recourse.instruments.age_gender import face_shapes
from recourse.instruments.identity import IdentityModelError, model_files

LANDMARKS_FILE = "shape_predictor_68_face_landmarks.dat"  # iBUG 300-W: non-commercial use only
PARTS = 68
# 0-based indices into the 68-point layout (iBUG 300-W).
RIGHT_EYE, LEFT_EYE = slice(36, 42), slice(42, 48)  # the subject's right eye is on the image's left
MOUTH_CORNERS = (48, 54)
INNER_UPPER_LIP, INNER_LOWER_LIP = (61, 62, 63), (67, 66, 65)  # paired top to bottom


def landmarks_file() -> Path:
    """The 68-point model inside the installed ``face_recognition_models`` wheel (beside the
    5-point one the identity instrument uses; found without importing the package)."""
    path = model_files()[1].parent / LANDMARKS_FILE
    if not path.is_file():
        raise IdentityModelError(f"{path} is missing from the face_recognition_models package")
    return path


def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a - b, axis=-1)


def eye_distance(points: np.ndarray) -> np.ndarray:
    """Distance between the eye centres ``(N,)`` from landmarks ``(N, 68, 2)``: the face's scale."""
    return _distance(points[:, RIGHT_EYE].mean(axis=1), points[:, LEFT_EYE].mean(axis=1))


def mouth_opening(points: np.ndarray) -> np.ndarray:
    """Inner-lip gap over the eye distance ``(N,)`` from landmarks ``(N, 68, 2)`` (NaN rows stay NaN)."""
    gap = _distance(points[:, list(INNER_UPPER_LIP)], points[:, list(INNER_LOWER_LIP)]).mean(axis=1)
    return gap / eye_distance(points)


def mouth_width(points: np.ndarray) -> np.ndarray:
    """Mouth width over the eye distance ``(N,)`` from landmarks ``(N, 68, 2)``."""
    return _distance(points[:, MOUTH_CORNERS[0]], points[:, MOUTH_CORNERS[1]]) / eye_distance(points)


def landmarks(images: torch.Tensor) -> np.ndarray:
    """The 68 landmarks ``(N, 68, 2)`` of float frames ``(N, 3, H, W)`` in [0, 1] (upsampled
    pixels), NaN rows where no face is found."""
    return face_shapes(images, landmarks_file()).points(PARTS)


def scores(images: torch.Tensor) -> dict[str, np.ndarray]:
    """The judge's scores (higher = more of the attribute; NaN where no face is found)."""
    points = landmarks(images)
    return {"Mouth_Slightly_Open": mouth_opening(points), "Smiling": mouth_width(points)}
