"""The FER-2013 smile judge (fer's mini-Xception, converted to safetensors): the committed network
gives Keras' numbers, fer's preprocessing arithmetic, the manifest guarding the files, and on
real validation faces that P(happy) tells smiling faces from the others."""

import json
import shutil

import numpy as np
import pytest
import torch

from recourse.checkpoints import CheckpointError, write_manifest
from recourse.instruments import fer_smile
from recourse.instruments.fer_smile import (
    EMOTIONS, FerCrop, emotion_probabilities, grey, load_model, max_pool_same, model_folder, network_input,
)
from recourse.instruments.independent import judge
from recourse.instruments.realism import roc_auc
from tests.conftest import hq_val_faces

FACES = 40

# Keras 3.15.1 (torch backend) loading fer 25.10.3's emotion_model.hdf5, on a uniform 0 input
# and on horizontal and vertical ramps from -1 to 1 (asymmetric: a flipped or transposed kernel
# or a misplaced pooling pad changes them). scripts/chores/convert_fer.py checks 50 more inputs.
KERAS_PROBABILITIES = np.array([
    [0.1488816, 0.0000011, 0.1264877, 0.0405195, 0.0123110, 0.0401696, 0.6316294],
    [0.1780394, 0.0000118, 0.0680279, 0.0675249, 0.0239944, 0.1383021, 0.5240995],
    [0.3038981, 0.0000186, 0.1980908, 0.0392240, 0.0314086, 0.0783394, 0.3490205],
])


@pytest.fixture(scope="module")
def val_faces() -> tuple[torch.Tensor, np.ndarray]:
    """The first validation faces and their Smiling labels."""
    return hq_val_faces(FACES, 'Smiling')


def test_the_committed_network_gives_keras_numbers():
    ramp = torch.linspace(-1, 1, 64)
    inputs = torch.stack([torch.zeros(64, 64), ramp.expand(64, 64), ramp[:, None].expand(64, 64)]).unsqueeze(1)
    with torch.no_grad():
        probabilities = torch.softmax(fer_smile.default_model()(inputs), dim=1).numpy()
    np.testing.assert_allclose(probabilities, KERAS_PROBABILITIES, atol=5e-6)


def test_max_pool_same_pads_like_tensorflow():
    # Even size: TensorFlow pads one pixel after and none before, so the first window is 0..2.
    x = torch.arange(4.0).reshape(1, 1, 1, 4).expand(1, 1, 4, 4)
    assert max_pool_same(x)[0, 0, 0].tolist() == [2.0, 3.0]
    # Padding is -inf: an all-negative input keeps its own maximum.
    assert max_pool_same(-torch.ones(1, 1, 15, 15)).shape[-1] == 8
    assert (max_pool_same(-torch.ones(1, 1, 15, 15)) == -1).all()


def test_network_input_repeats_fers_arithmetic():
    frames = torch.zeros(3, 3, 64, 64)
    frames[0] = 0.5
    frames[1, 0] = 1.0  # pure red
    frames[2] = 1.0
    values = network_input(frames)
    assert values.shape == (3, 1, 64, 64)
    np.testing.assert_allclose(values[:, 0].flatten(1).numpy().std(axis=1), 0, atol=1e-6)  # flat frames stay flat
    assert values[:, 0, 0, 0].tolist() == pytest.approx([0.0, (0.299 - 0.5) * 2, 1.0], abs=1e-6)
    assert grey(frames)[1, 0, 0, 0].item() == pytest.approx(0.299)


def test_the_crop_is_the_haar_box_widened():
    # A frame black outside the crop's square and white inside: the network sees white only.
    crop = FerCrop(0.1)
    frame = torch.zeros(1, 3, 640, 640)
    left, top = (np.array(crop.center) - crop.side / 2) * 640
    side = crop.side * 640
    frame[..., int(np.ceil(top)) + 1:int(top + side) - 1, int(np.ceil(left)) + 1:int(left + side) - 1] = 1.0
    inside = network_input(frame, crop)[0, 0]
    assert (inside[1:-1, 1:-1] > 0.99).all() and inside.min() > -1.0
    assert FerCrop(0.2).side > FerCrop(0.1).side > FerCrop(0.0).side == pytest.approx(0.656)


def test_probabilities_have_the_right_shape_and_sum_to_one():
    frames = torch.rand(5, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        probabilities = emotion_probabilities(frames)
    assert probabilities.shape == (5, len(EMOTIONS)) and (probabilities >= 0).all()
    np.testing.assert_allclose(probabilities.sum(dim=1).numpy(), 1.0, atol=1e-6)
    result = fer_smile.scores(frames)
    assert set(result) == {"Smiling"} and result["Smiling"].shape == (5,) and result["Smiling"].dtype == np.float64
    np.testing.assert_allclose(result["Smiling"], probabilities[:, EMOTIONS.index("happy")].numpy(), atol=1e-7)
    assert fer_smile.scores(torch.zeros(0, 3, 64, 64))["Smiling"].shape == (0,)
    assert fer_smile.scores(torch.rand(2, 3, 128, 128))["Smiling"].shape == (2,)  # any resolution
    with pytest.raises(ValueError, match="expected faces"):
        network_input(torch.rand(2, 64, 64))


def test_scores_are_deterministic_whatever_the_batch():
    frames = torch.rand(6, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    first, again = fer_smile.scores(frames)["Smiling"], fer_smile.scores(frames)["Smiling"]
    np.testing.assert_array_equal(first, again)
    assert fer_smile.scores(frames[3:4])["Smiling"][0] == pytest.approx(first[3], abs=1e-6)


def test_a_tampered_folder_is_refused(tmp_path):
    folder = tmp_path / "fer-emotion"
    shutil.copytree(model_folder(), folder)
    load_model(folder)  # the copy as committed loads
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="does not match"):
        load_model(folder)
    shutil.copy(model_folder() / "model.safetensors", weights)
    load_model(folder)
    # Emotions reordered and the manifest re-recorded: the columns would be misread, so refused.
    config = json.loads((folder / "config.json").read_text())
    config["emotions"] = config["emotions"][::-1]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="does not match"):
        load_model(folder)
    write_manifest(folder)
    with pytest.raises(CheckpointError, match="emotions"):
        load_model(folder)


def test_the_judge_is_registered():
    entry = judge("fer-happy (FER-2013)")
    assert entry.attributes == ("Smiling",) and "MIT" in entry.trained_on and entry.independent
    assert set(entry.scores(torch.full((1, 3, 64, 64), 0.5))) == {"Smiling"}


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_on_real_faces_happy_tells_smiles(val_faces):
    images, smiling = val_faces
    happy = fer_smile.scores(images)["Smiling"]
    assert np.isfinite(happy).all()
    assert roc_auc(happy[smiling], happy[~smiling]) > 0.8
