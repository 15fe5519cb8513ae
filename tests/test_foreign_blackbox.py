"""Zeroth-order gradients for black boxes: the math on known answers, the estimator validated
against a differentiable model's true gradient, and the black-box module's forward-pass count."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from recourse.foreign.adapter import ForeignClassifier
from recourse.foreign.blackbox import (ZerothOrderClassifier, combine, cosine, estimate_gradient, face_basis,
                                       lowres_basis, sample_directions)
from recourse.foreign.loaders import load_foreign
from tests.foreign_models import different_model, save_different

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_lowres_basis_is_orthonormal_and_smooth() -> None:
    basis = lowres_basis((3, 16, 16), grid=4)
    flat = basis.reshape(basis.shape[0], -1).double()
    assert basis.shape == (48, 3, 16, 16)
    assert torch.allclose(flat @ flat.T, torch.eye(48, dtype=torch.float64), atol=1e-5)
    # a constant image change lies in the span (smooth changes are representable)
    constant = torch.ones(3 * 16 * 16, dtype=torch.float64)
    projected = flat.T @ (flat @ constant)
    assert torch.allclose(projected, constant, atol=1e-4)


def test_face_basis_is_the_leading_components_orthonormal() -> None:
    q = torch.linalg.qr(torch.randn(3 * 4 * 4, 6, dtype=torch.float64))[0].T
    stored = q.half().float()  # as the committed basis is stored: orthonormal only to ~1e-3
    basis = face_basis(stored, 3, 4)
    flat = basis.reshape(3, -1).double()
    assert basis.shape == (3, 3, 4, 4)
    assert torch.allclose(flat @ flat.T, torch.eye(3, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(flat, q[:3], atol=2e-3)  # the same components, signs kept
    with pytest.raises(ValueError, match="k must be between 1 and 6"):
        face_basis(stored, 7, 4)
    with pytest.raises(ValueError, match="not 3×8×8"):
        face_basis(stored, 2, 8)


def test_linear_objective_recovers_the_projection_exactly() -> None:
    """On a linear function the central difference is exact: the basis mode returns P·g."""
    basis = lowres_basis((3, 8, 8), grid=2).double()
    g = torch.randn(3, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    points = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    result = estimate_gradient(lambda x: (x * g).sum(dim=(2, 3, 4)), points, basis=basis, sigma=0.3)
    flat = basis.reshape(12, -1)
    projection = (flat.T @ (flat @ g.flatten())).view(3, 8, 8)
    assert torch.allclose(result.gradient[0], projection, atol=1e-10)
    assert result.forward_passes == 2 * 12 * 2 and result.directions == 12 and result.seed is None


def test_random_directions_are_seeded_and_in_the_subspace() -> None:
    basis = lowres_basis((3, 8, 8), grid=2)
    a, b = sample_directions(basis, 5, seed=1), sample_directions(basis, 5, seed=1)
    assert torch.equal(a, b) and not torch.equal(a, sample_directions(basis, 5, seed=2))
    flat = basis.reshape(12, -1)
    inside = (flat.T @ (flat @ a.reshape(5, -1).T)).T
    assert torch.allclose(inside, a.reshape(5, -1), atol=1e-5)
    assert combine(torch.ones(1, 5), a, orthonormal=False).shape == (1, 3, 8, 8)


def _true_gradient(model, images: torch.Tensor, column: int) -> torch.Tensor:
    images = images.clone().requires_grad_()
    model(images)[:, column].sum().backward()
    return images.grad


@pytest.fixture(scope="module")
def differentiable(tmp_path_factory: pytest.TempPathFactory) -> ForeignClassifier:
    """The validation model: the different model through the adapter, with true gradients."""
    return ForeignClassifier(load_foreign(save_different(tmp_path_factory.mktemp("zo"), "torch-export")))


@pytest.mark.slow
@pytest.mark.parametrize("directions, least", [(None, 0.99), (96, 0.45)])
def test_estimate_in_an_edit_space_matches_the_true_gradient(differentiable, directions, least) -> None:
    """The intended use: the gradient of a logit with respect to the coefficients ``z`` of a
    low-dimensional edit (here 192 smooth image changes standing in for the generator's face
    basis). With the space's own basis the estimate is the true gradient up to the finite
    difference; with 96 random directions (half the dimension, 192 passes) it keeps most of it.
    Chance is about 1/sqrt(192) = 0.07."""
    column = differentiable.require("Smiling")
    edits = lowres_basis((3, 64, 64), grid=8)  # (192, 3, 64, 64)
    faces = torch.rand(3, 3, 64, 64, generator=torch.Generator().manual_seed(5))

    def objective(z: torch.Tensor) -> torch.Tensor:  # (B, m, 192) -> (B, m)
        b, m = z.shape[:2]
        images = faces.unsqueeze(1) + torch.einsum("bmk,kchw->bmchw", z, edits)
        return differentiable(images.reshape(b * m, 3, 64, 64))[:, column].reshape(b, m)

    z = torch.zeros(3, 192, requires_grad=True)
    objective(z.unsqueeze(1)).sum().backward()
    estimate = estimate_gradient(objective, z.detach(), basis=torch.eye(192), directions=directions,
                                 sigma=0.5, seed=0)
    similarity = cosine(estimate.gradient, z.grad)
    assert bool((similarity > least).all()), similarity
    assert estimate.forward_passes == 3 * 2 * (192 if directions is None else directions)


def test_pixel_estimate_is_the_gradients_projection(differentiable) -> None:
    """In pixel space the estimate is the true gradient's projection onto the smooth subspace
    (cosine > 0.99 to it); how much of the raw gradient that keeps depends on the model (this
    random network's gradient is mostly high-frequency), but it is far above chance (≈ 0.009)."""
    column = differentiable.require("Young")
    images = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(6))
    true = _true_gradient(differentiable, images, column)
    basis = lowres_basis((3, 64, 64), grid=8)

    def objective(points: torch.Tensor) -> torch.Tensor:
        b, m = points.shape[:2]
        return differentiable(points.reshape(b * m, 3, 64, 64))[:, column].reshape(b, m)

    estimate = estimate_gradient(objective, images, basis=basis, sigma=0.5)
    flat = basis.reshape(192, -1).double()
    projected = (true.reshape(2, -1).double() @ flat.T) @ flat
    assert bool((cosine(estimate.gradient, projected) > 0.99).all())
    assert bool((cosine(estimate.gradient, true) > 0.045).all())  # > 5× chance


def test_zeroth_order_classifier_on_onnx_runtime(tmp_path: Path) -> None:
    classifier = ForeignClassifier(load_foreign(save_different(tmp_path, "onnx")))
    blackbox = ZerothOrderClassifier(classifier, basis=lowres_basis((3, 64, 64), grid=4), directions=16, seed=7)
    assert blackbox.supported_attributes == ("Male", "Smiling", "Young")
    images = torch.rand(2, 3, 64, 64, requires_grad=True)
    logits = blackbox(images)
    assert torch.equal(logits.detach(), classifier(images.detach()))  # the runtime's own forward
    logits[:, blackbox.require("Young")].sum().backward()
    assert images.grad is not None and images.grad.abs().sum() > 0
    assert blackbox.forward_passes == 2 + 2 * 2 * 16 and blackbox.estimates == 1
    # the same seed gives the same estimate; the reference is the float model's true gradient
    again = ZerothOrderClassifier(classifier, basis=lowres_basis((3, 64, 64), grid=4), directions=16, seed=7)
    second = images.detach().clone().requires_grad_()
    again(second)[:, classifier.require("Young")].sum().backward()
    assert torch.equal(second.grad, images.grad)
    with torch.no_grad():
        assert blackbox(images).shape == (2, 40)
