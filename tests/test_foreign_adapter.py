"""The adapter: the deliberately different model (PlainConvNet, 96×96, ImageNet normalisation,
three attributes in another order, probabilities out) behind the project's 64×64 → 40-logit
contract in each format; output kinds, framing, channel order, value range and layout."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from recourse.foreign.adapter import (NotDifferentiableError, ForeignClassifier, UnsupportedAttributeError,
                                      box_coverage, framing_box, prepare, to_logits)
from recourse.foreign.cards import InputSpec
from recourse.foreign.loaders import load_foreign
from recourse.names import ATTRIBUTES
from tests.foreign_models import DIFFERENT_ATTRIBUTES, different_model, reference_logits, save_different

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the TorchScript ONNX exporter's


@pytest.mark.parametrize("fmt", ["torch-export", "safetensors", "onnx"])
def test_different_model_end_to_end(tmp_path: Path, fmt: str) -> None:
    model = different_model()
    classifier = ForeignClassifier(load_foreign(save_different(tmp_path, fmt, model)))
    assert classifier.supported_attributes == ("Male", "Smiling", "Young")  # CelebA's order
    assert classifier.supported_mask.sum() == 3 and classifier.supported_mask[ATTRIBUTES.index("Young")]
    images = torch.rand(4, 3, 64, 64, generator=torch.Generator().manual_seed(3))
    logits = classifier(images)
    assert logits.shape == (4, 40) and bool(logits.isfinite().all())
    expected = reference_logits(model, images)  # card order: Young, Smiling, Male
    for position, name in enumerate(DIFFERENT_ATTRIBUTES):
        column = logits[:, classifier.require(name)]
        assert torch.allclose(column, expected[:, position], atol=1e-4), name
    # decisions agree with the model's own probabilities (p >= 0.5 <=> logit >= 0)
    with torch.no_grad():
        p = classifier.model_outputs(images)
    assert torch.equal(classifier.model_logits(images) >= 0, p >= 0.5)
    silent = ~classifier.supported_mask
    assert torch.count_nonzero(logits[:, silent]) == 0  # not NaN, not a made-up logit: zero, masked off
    with pytest.raises(UnsupportedAttributeError, match="does not predict Eyeglasses; it predicts Male, Smiling, Young"):
        classifier.require("Eyeglasses")
    with pytest.raises(UnsupportedAttributeError, match="unknown attribute"):
        classifier.require("Glasses")


def test_gradients_flow_through_a_differentiable_foreign_model(tmp_path: Path) -> None:
    model = different_model()
    classifier = ForeignClassifier(load_foreign(save_different(tmp_path, "torch-export", model)))
    images = torch.rand(2, 3, 64, 64, requires_grad=True)
    classifier(images)[:, classifier.require("Smiling")].sum().backward()
    reference = images.detach().clone().requires_grad_()
    reference_logits(model, reference)[:, 1].sum().backward()
    assert torch.allclose(images.grad, reference.grad, atol=1e-5)


def test_black_box_refuses_gradients_with_a_pointer(tmp_path: Path) -> None:
    classifier = ForeignClassifier(load_foreign(save_different(tmp_path, "onnx")))
    with pytest.raises(NotDifferentiableError, match="black box .*ZerothOrderClassifier"):
        classifier(torch.rand(1, 3, 64, 64, requires_grad=True))
    assert classifier(torch.rand(1, 3, 64, 64)).shape == (1, 40)  # forward alone is fine
    with pytest.raises(ValueError, match="divide uint8 images by 255"):
        classifier(torch.zeros(1, 3, 64, 64, dtype=torch.uint8))


def test_to_logits_for_each_output_kind() -> None:
    z = torch.tensor([[-2.0, 0.0, 3.5]])
    assert torch.equal(to_logits(z, "logits"), z)
    assert torch.allclose(to_logits(torch.sigmoid(z), "probabilities"), z, atol=1e-5)
    saturated = to_logits(torch.tensor([[0.0, 1.0, 0.5]]), "probabilities")
    assert bool(saturated.isfinite().all()) and saturated[0, 2] == 0
    assert math.isclose(saturated[0, 1].item(), math.log((1 - 1e-7) / 1e-7), rel_tol=1e-5)
    pairs = torch.tensor([[1.0, 3.0, 0.5, -0.5]])  # (absent, present) × 2 attributes
    assert torch.allclose(to_logits(pairs, "pair-logits"), torch.tensor([[2.0, -1.0]]))
    probabilities = torch.softmax(pairs.view(1, 2, 2), -1).view(1, 4)
    assert torch.allclose(to_logits(probabilities, "pair-probabilities"), torch.tensor([[2.0, -1.0]]), atol=1e-5)


def test_input_preparation() -> None:
    images = torch.rand(2, 3, 64, 64)
    spec = InputSpec(size=(64, 64), channel_order="BGR", layout="NHWC", value_range=(0.0, 255.0),
                     mean=(10.0, 20.0, 30.0), std=(2.0, 4.0, 8.0))
    x = prepare(images, spec)
    assert x.shape == (2, 64, 64, 3)
    expected = (images.flip(1) * 255 - torch.tensor([10.0, 20.0, 30.0]).view(1, 3, 1, 1)) / \
        torch.tensor([2.0, 4.0, 8.0]).view(1, 3, 1, 1)
    assert torch.allclose(x, expected.permute(0, 2, 3, 1), atol=1e-4)
    # the project's own contract is passed through untouched
    assert prepare(images, InputSpec(size=(64, 64))) is not None
    assert torch.equal(prepare(images, InputSpec(size=(64, 64))), images)


def test_celeba_aligned_framing() -> None:
    hq = InputSpec(size=(64, 64))
    assert framing_box(hq) == (0.0, 0.0, 1.0, 1.0) and box_coverage(framing_box(hq)) == 1.0
    # the crop that is exactly the HQ square inside the 178×218 aligned photo is the identity
    exact = InputSpec(size=(64, 64), framing="celeba-aligned", crop=(8.7, 35.7, 168.3, 195.7))
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(framing_box(exact), (0, 0, 1, 1)))
    images = torch.rand(1, 3, 64, 64)
    assert torch.allclose(prepare(images, exact), images, atol=1e-5)
    # the usual centre 178×178 crop sees a little more than the HQ square: border-filled, reported
    centre = InputSpec(size=(128, 128), framing="celeba-aligned", crop=(0, 20, 178, 198))
    box = framing_box(centre)
    assert box[0] < 0 and box[2] > 1 and 0.8 < box_coverage(box) < 1
    x = prepare(images, centre)
    assert x.shape == (1, 3, 128, 128)
    # the face's centre stays at the centre of the HQ square's position in the crop
    u = (0.5 - box[0]) / (box[2] - box[0])
    assert 0.45 < u < 0.55
