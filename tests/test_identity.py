"""The identity instrument (dlib face descriptor) on known answers: the same pixels are the same
person at distance 0, two real faces of different sex are not verified, a mirrored face is."""

import numpy as np
import pytest
import torch

from recourse.instruments.identity import (
    DLIB_THRESHOLD, Descriptors, descriptor_distances, face_descriptor, face_similarity,
    face_verification_accuracy, identity_distances, identity_result, identity_scores, model_files,
)
from tests.conftest import HQ_DATA


@pytest.fixture(scope="module")
def test_faces() -> tuple[torch.Tensor, np.ndarray]:
    """The first 60 real test faces and their Male labels (only for tests marked ``requires("hq_data")``)."""
    from recourse.data import attribute_index, load_split, to_float_images

    split = load_split(HQ_DATA, "test", 64)
    return to_float_images(split.images[:60]), split.labels[:60, attribute_index("Male")]


def test_the_models_ship_inside_the_installed_wheel():
    descriptor, landmarks = model_files()
    assert descriptor.name == "dlib_face_recognition_resnet_model_v1.dat" and descriptor.stat().st_size > 20e6
    assert landmarks.name == "shape_predictor_5_face_landmarks.dat"


def test_fva_and_fs_of_known_distances():
    distances = np.array([0.0, 0.3, 0.6, 0.61, 1.2])
    assert face_verification_accuracy(distances) == pytest.approx(60.0)  # 0.6 itself counts as the same person
    assert face_similarity(distances) == pytest.approx(2.71 / 5)
    assert np.isnan(face_verification_accuracy(np.array([]))) and np.isnan(face_similarity(np.array([])))
    a = np.zeros((2, 128))
    b = a.copy()
    b[1, :4] = 0.5  # distance sqrt(4 · 0.25) = 1
    assert descriptor_distances(a, b) == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError, match="one shape"):
        descriptor_distances(a, b[:1])


def test_identity_result_counts_detections():
    originals = Descriptors(np.zeros((3, 128)), np.array([True, True, False]))
    moved = np.zeros((3, 128))
    moved[2, 0] = 0.9
    result = identity_result(originals, Descriptors(moved, np.array([True, False, False])))
    assert (result.n, result.fva, result.fs, result.median_distance) == (3, pytest.approx(66.67), 0.3, 0.0)
    assert (result.detected_originals, result.detected_counterfactuals) == (2, 1)
    assert result.threshold == DLIB_THRESHOLD


@pytest.mark.slow
def test_an_identical_pair_has_distance_zero_even_without_a_detected_face():
    # Smooth noise is no face: the detector misses it and the fallback box frames the landmarks,
    # yet the same pixels still give the same descriptor.
    noise = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    images = torch.nn.functional.interpolate(noise, size=64, mode="bilinear").repeat(2, 1, 1, 1)
    result = identity_scores(images, images.clone())
    assert result.n == 2 and result.fs == 0.0 and result.fva == 100.0
    assert result.detected_originals == 0  # the fallback box was used
    assert identity_distances(images[:1], images[1:]).tolist() == [0.0]
    vectors = face_descriptor()(images[:1]).vectors
    assert vectors.shape == (1, 128) and np.isfinite(vectors).all()


def test_bad_input_is_refused_with_a_reason():
    describe = face_descriptor()
    with pytest.raises(ValueError, match="float images"):
        describe(torch.zeros(1, 3, 64, 64, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\(B, 3, H, W\)"):
        describe(torch.zeros(3, 64, 64))
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        describe(torch.full((1, 3, 64, 64), 2.0))
    with pytest.raises(ValueError, match="pair up"):
        identity_scores(torch.zeros(2, 3, 64, 64), torch.zeros(1, 3, 64, 64))
    assert describe(torch.zeros(0, 3, 64, 64)).vectors.shape == (0, 128)


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_real_faces_same_and_different(test_faces):
    faces, male = test_faces
    men, women = faces[male == 1][:6], faces[male == 0][:6]
    assert len(men) == len(women) == 6
    same = identity_scores(faces[:6], faces[:6])
    assert same.fs == 0.0 and same.fva == 100.0
    assert same.detected_originals >= 5  # the detector finds real 64-px faces once upsampled
    # a man and a woman are never one person: not verified
    different = identity_scores(men, women)
    assert different.fva == 0.0 and different.median_distance > DLIB_THRESHOLD
    # the same face mirrored is still that person
    mirrored = identity_scores(faces[:6], faces[:6].flip(-1))
    assert mirrored.fva == 100.0 and 0 < mirrored.fs < DLIB_THRESHOLD
    assert (identity_distances(men[:2], women[:2]) > DLIB_THRESHOLD).all()
