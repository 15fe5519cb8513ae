"""Identity: is a counterfactual still the same person? dlib's ResNet face descriptor.

The descriptor network (``dlib_face_recognition_resnet_model_v1.dat``) and the 5-point
landmark model ship inside the ``face-recognition-models`` wheel, and dlib itself comes from
the ``dlib-bin`` wheel: nothing is downloaded. Each 64×64 face is upsampled (bicubic) to
256×256, found by dlib's HOG detector, aligned by the 5 landmarks to dlib's 150×150 chip, and
mapped to a 128-d descriptor. Two faces are the same person for dlib when their descriptors
are within 0.6 (Euclidean), its published threshold.

Reported as in DiME / ACE: FVA, the share of counterfactuals within the threshold of their
original, and FS, the mean descriptor distance. This module only measures: no gradient or
score of it ever guides an edit (dlib is not differentiable anyway).
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from recourse.instruments.dlib_faces import (
    DLIB_LOCK, UPSAMPLED, face_detector, import_dlib, shape_predictor, upsampled_pixels,
)

# dlib's own same-person threshold for this descriptor (dlib.net, face_recognition docs).
DLIB_THRESHOLD = 0.6
# Where the landmark model looks when the detector finds no face: the median detector box on
# 500 validation faces at 256 px (left, top, right, bottom as fractions of the side). CelebA-HQ
# faces are aligned, so one fixed box frames them; the landmark model then places the 5 points
# inside it, so a missed detection still gives an aligned chip rather than no number.
FALLBACK_BOX = (0.24, 0.30, 0.76, 0.89)

MODEL_PACKAGE = "face_recognition_models"
DESCRIPTOR_FILE = "dlib_face_recognition_resnet_model_v1.dat"
LANDMARKS_FILE = "shape_predictor_5_face_landmarks.dat"


class IdentityModelError(RuntimeError):
    """The dlib models (or dlib) are not installed."""


def model_files() -> tuple[Path, Path]:
    """Paths of the descriptor and 5-point landmark models inside the installed wheel.

    Found through the package's spec, without importing it: its ``__init__`` imports
    ``pkg_resources``, which recent setuptools no longer provide.
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise IdentityModelError(f"the {MODEL_PACKAGE!r} package is not installed "
                                 "(pip install -r requirements.txt: face-recognition-models)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    paths = folder / DESCRIPTOR_FILE, folder / LANDMARKS_FILE
    for path in paths:
        if not path.is_file():
            raise IdentityModelError(f"{path} is missing from the {MODEL_PACKAGE} package")
    return paths


@dataclass(frozen=True)
class Descriptors:
    """128-d face descriptors ``(B, 128)`` and, per face, whether the detector found it (else the
    landmarks were placed inside :data:`FALLBACK_BOX`)."""

    vectors: np.ndarray
    detected: np.ndarray  # bool (B,)


@dataclass(frozen=True)
class IdentityResult:
    """FVA and FS of counterfactuals against their originals."""

    n: int
    fva: float  # % of counterfactuals within ``threshold`` of their original
    fs: float  # mean descriptor distance (lower = closer to the original)
    median_distance: float
    threshold: float
    detected_originals: int  # faces the detector found (the rest used the fallback box)
    detected_counterfactuals: int

    def to_dict(self) -> dict:
        return asdict(self)


class FaceDescriptor:
    """dlib's detector, 5-point landmarks and ResNet descriptor, loaded once (use :func:`face_descriptor`)."""

    def __init__(self) -> None:
        dlib = import_dlib(IdentityModelError)
        descriptor_path, landmarks_path = model_files()
        self._dlib = dlib
        self._detector = face_detector()
        self._landmarks = shape_predictor(str(landmarks_path))
        self._descriptor = dlib.face_recognition_model_v1(str(descriptor_path))

    def __call__(self, images: torch.Tensor) -> Descriptors:
        """Descriptors of float images ``(B, 3, H, W)`` in [0, 1] (any square size)."""
        pixels = upsampled_pixels(images)
        if not pixels:
            return Descriptors(np.zeros((0, 128)), np.zeros(0, bool))
        with DLIB_LOCK:
            return self._describe(pixels)

    def _describe(self, pixels: list[np.ndarray]) -> Descriptors:
        dlib = self._dlib
        fallback = dlib.rectangle(*(round(f * UPSAMPLED) for f in FALLBACK_BOX))
        shapes, detected = [], []
        for image in pixels:
            boxes = self._detector(image, 0)
            # The largest box if several (a 64-px crop holds one face; a second is a false find).
            box = max(boxes, key=lambda b: b.area()) if len(boxes) else fallback
            detected.append(len(boxes) > 0)
            shapes.append(dlib.full_object_detections([self._landmarks(image, box)]))
        vectors = self._descriptor.compute_face_descriptor(pixels, shapes)
        return Descriptors(np.array([np.array(v[0]) for v in vectors], dtype=np.float64), np.array(detected))


@functools.lru_cache(maxsize=1)
def face_descriptor() -> FaceDescriptor:
    """The process's one :class:`FaceDescriptor` (loading the models takes about a second)."""
    return FaceDescriptor()


def descriptor_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distance between paired descriptors ``(N, 128)``, one per pair ``(N,)``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"expected two (N, D) descriptor arrays of one shape, got {a.shape} and {b.shape}")
    return np.linalg.norm(a - b, axis=1)


def face_verification_accuracy(distances: np.ndarray, threshold: float = DLIB_THRESHOLD) -> float:
    """FVA: share of pairs within ``threshold`` (the same person for dlib), in %; NaN for none."""
    distances = np.asarray(distances)
    return 100.0 * float(np.mean(distances <= threshold)) if distances.size else float("nan")


def face_similarity(distances: np.ndarray) -> float:
    """FS: mean descriptor distance; NaN for none."""
    distances = np.asarray(distances)
    return float(np.mean(distances)) if distances.size else float("nan")


def identity_result(originals: Descriptors, counterfactuals: Descriptors,
                    threshold: float = DLIB_THRESHOLD) -> IdentityResult:
    """FVA and FS from descriptors already computed (pair i = original i, counterfactual i)."""
    distances = descriptor_distances(originals.vectors, counterfactuals.vectors)
    return IdentityResult(
        n=len(distances), fva=round(face_verification_accuracy(distances, threshold), 2),
        fs=round(face_similarity(distances), 4),
        median_distance=round(float(np.median(distances)), 4) if distances.size else float("nan"),
        threshold=threshold, detected_originals=int(originals.detected.sum()),
        detected_counterfactuals=int(counterfactuals.detected.sum()))


def identity_scores(originals: torch.Tensor, counterfactuals: torch.Tensor, threshold: float = DLIB_THRESHOLD,
                    descriptor: FaceDescriptor | None = None) -> IdentityResult:
    """FVA and FS of counterfactuals ``(N, 3, H, W)`` against their originals, floats in [0, 1]."""
    if originals.shape != counterfactuals.shape:
        raise ValueError(f"originals {tuple(originals.shape)} and counterfactuals "
                         f"{tuple(counterfactuals.shape)} must pair up")
    describe = descriptor or face_descriptor()
    return identity_result(describe(originals), describe(counterfactuals), threshold)


def identity_distances(originals: torch.Tensor, counterfactuals: torch.Tensor,
                       descriptor: FaceDescriptor | None = None) -> np.ndarray:
    """Descriptor distance of each counterfactual to its original ``(N,)``: the per-image value
    (kept when ``≤ DLIB_THRESHOLD``), e.g. for one audit."""
    if originals.shape != counterfactuals.shape:
        raise ValueError(f"originals {tuple(originals.shape)} and counterfactuals "
                         f"{tuple(counterfactuals.shape)} must pair up")
    describe = descriptor or face_descriptor()
    return descriptor_distances(describe(originals).vectors, describe(counterfactuals).vectors)
