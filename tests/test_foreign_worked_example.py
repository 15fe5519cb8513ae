"""The worked example's ONNX Runtime half on the real classifier and faces: exported, quantized
by ONNX Runtime's static quantizer on train faces, loaded through its card, deciding exactly as
the runtime called directly (scripts/chores/foreign_models.py does the same at full size, with torchao)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from recourse.checkpoints import load_classifier
from recourse.data import ATTRIBUTES, load_split, to_float_images
from recourse.foreign.adapter import ForeignClassifier
from recourse.foreign.cards import write_card
from recourse.foreign.export import export_onnx, quantize_onnx_static
from recourse.foreign.loaders import load_foreign, onnx_session
from tests.conftest import COMMITTED, HQ_DATA

pytestmark = [pytest.mark.slow, pytest.mark.requires("hq_data"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def test_onnx_runtime_int8_of_the_classifier_decides_as_its_runtime(tmp_path: Path) -> None:
    classifier = load_classifier(COMMITTED / "classifier")
    train = load_split(HQ_DATA, "train", 64, cache_dir=Path(__file__).resolve().parents[1] / ".cache")
    pick = np.sort(np.random.default_rng(0).choice(len(train.images), 64, replace=False))
    calibration = list(to_float_images(train.images[pick]).split(32))
    test = load_split(HQ_DATA, "test", 64, cache_dir=Path(__file__).resolve().parents[1] / ".cache")
    faces = to_float_images(test.images[:64])
    export_onnx(classifier, faces[:2], tmp_path / "float.onnx")
    quantize_onnx_static(tmp_path / "float.onnx", tmp_path / "model.onnx", calibration)
    write_card(tmp_path, {"format": "onnx", "weights": "model.onnx", "input": {"size": 64},
                          "output": {"kind": "logits", "attributes": list(ATTRIBUTES)}})
    model = ForeignClassifier(load_foreign(tmp_path))
    assert model.loaded.quantized and len(model.supported_attributes) == 40
    with torch.no_grad():
        logits, reference = model(faces), classifier(faces)
    runtime = onnx_session(str(tmp_path / "model.onnx")).run(None, {"images": faces.numpy()})[0]
    assert np.array_equal(logits.numpy(), runtime)  # the adapter adds nothing for the project's contract
    assert float(((logits >= 0) == (reference >= 0)).float().mean()) > 0.97  # int8 stays close to float
