"""Gradients of a black box: a zeroth-order estimate in a low-dimensional subspace.

An ONNX Runtime int8 model (or any callable) answers forward passes only. Its gradient along a
direction ``u`` is the central difference ``(f(x + σu) − f(x − σu)) / 2σ``; combining such
directional derivatives over directions that span a ``k``-dimensional subspace estimates the
gradient's projection onto it:

* ``directions=None``: the subspace's orthonormal basis itself, ``ĝ = Σᵢ dᵢ uᵢ`` — the
  projection ``P∇f`` up to the finite-difference error, for ``2k`` forward passes;
* ``directions=n``: ``n`` Gaussian directions ``u = Bᵀz``, ``z ~ N(0, I_k)``,
  ``ĝ = (1/n) Σᵢ dᵢ uᵢ`` — unbiased for ``P∇f`` since ``E[uuᵀ] = P``, for ``2n`` passes.

A low-dimensional subspace is what makes this affordable: estimating all 12,288 pixel
directions of a 64×64 face would take 24,576 passes. :func:`face_basis` is the subspace the
project's edits live in: the leading components of the generator's PCA face basis (the walk
projects every step onto that basis, so a gradient outside it is thrown away anyway);
:func:`lowres_basis`, smooth (bilinearly upsampled ``grid×grid``) image changes, serves where
there is no face basis. Every estimate counts its forward passes
(:attr:`GradientEstimate.forward_passes`) and is reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

# Step of the central differences, as an L2 length in the points' units. For images in [0, 1]
# spread over a smooth 64×64 pattern this is ≈ 0.01 per pixel (2–3 grey levels): large enough
# that an int8 model's output moves by more than its quantization steps, small enough that the
# logit is close to linear over it.
DEFAULT_SIGMA = 1.0


@dataclass(frozen=True)
class GradientEstimate:
    gradient: torch.Tensor  # (B, *shape), the estimate of each point's gradient
    forward_passes: int  # images (points) the model was asked to score
    directions: int  # directional derivatives per point
    subspace: int  # dimension k of the subspace
    sigma: float
    seed: int | None  # None when the basis itself was used (nothing random)


# --- pure math ------------------------------------------------------------------------------


def lowres_basis(shape: tuple[int, ...] = (3, 64, 64), grid: int = 8, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An orthonormal basis ``(3·grid², *shape)`` of smooth image changes: each element of a
    ``(3, grid, grid)`` image, upsampled bilinearly to ``shape``, orthonormalised (QR)."""
    channels, height, width = shape
    k = channels * grid * grid
    cells = torch.eye(k, dtype=torch.float64).view(k, channels, grid, grid)
    smooth = F.interpolate(cells, size=(height, width), mode="bilinear", align_corners=False).reshape(k, -1)
    q, _ = torch.linalg.qr(smooth.T)  # columns: an orthonormal basis of the same span
    return q.T.reshape(k, *shape).to(dtype)


def face_basis(components: torch.Tensor, k: int, resolution: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The leading ``k`` rows of a PCA face basis ``(m, 3·R·R)`` (the generator's
    ``autoencoder.components``, strongest first) as an orthonormal basis ``(k, 3, R, R)``.
    The rows are orthonormalised again (QR, float64): the committed basis is stored in half
    precision, and the estimator's ``Σ dᵢuᵢ`` needs exact orthonormality to be a projection."""
    if not 1 <= k <= components.shape[0]:
        raise ValueError(f"k must be between 1 and {components.shape[0]} (the basis' components), got {k}")
    if components.shape[1] != 3 * resolution * resolution:
        raise ValueError(f"components have {components.shape[1]} values each, not 3×{resolution}×{resolution}")
    q, r = torch.linalg.qr(components[:k].double().T)
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # keep each component's sign
    return q.T.reshape(k, 3, resolution, resolution).to(dtype)


def sample_directions(basis: torch.Tensor, count: int | None, seed: int) -> torch.Tensor:
    """``count`` Gaussian directions in the span of ``basis`` (``u = Bᵀz``), or the basis itself
    when ``count`` is None."""
    if count is None:
        return basis
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn(count, basis.shape[0], generator=generator, dtype=torch.float64)
    return (z @ basis.reshape(basis.shape[0], -1).double()).reshape(count, *basis.shape[1:]).to(basis.dtype)


def combine(derivatives: torch.Tensor, directions: torch.Tensor, orthonormal: bool) -> torch.Tensor:
    """``(B, n)`` directional derivatives and ``(n, *shape)`` directions → ``(B, *shape)``:
    ``Σ dᵢuᵢ`` over an orthonormal basis, ``(1/n) Σ dᵢuᵢ`` over Gaussian directions."""
    flat = directions.reshape(directions.shape[0], -1).to(derivatives.dtype)
    estimate = derivatives @ flat
    if not orthonormal:
        estimate = estimate / directions.shape[0]
    return estimate.reshape(derivatives.shape[0], *directions.shape[1:])


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of each pair of rows (flattened), ``(B,)``."""
    return F.cosine_similarity(a.reshape(a.shape[0], -1).double(), b.reshape(b.shape[0], -1).double(), dim=1)


# --- the estimator --------------------------------------------------------------------------


def estimate_gradient(objective: Callable[[torch.Tensor], torch.Tensor], points: torch.Tensor, *,
                      basis: torch.Tensor, directions: int | None = None, sigma: float = DEFAULT_SIGMA,
                      seed: int = 0, chunk: int = 128) -> GradientEstimate:
    """Estimate ``∇objective`` at each of ``points`` ``(B, *shape)`` in the span of ``basis``.

    ``objective`` maps ``(B, m, *shape)`` (``m`` perturbed copies of each point) to ``(B, m)``
    scalars, so each point may have its own objective (a logit, a weighted sum of logits);
    it is called on at most ``chunk`` points at a time."""
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    if tuple(basis.shape[1:]) != tuple(points.shape[1:]):
        raise ValueError(f"basis elements have shape {list(basis.shape[1:])}, points {list(points.shape[1:])}")
    units = sample_directions(basis.to(points.dtype), directions, seed)
    n = units.shape[0]
    steps = torch.cat([units, -units]) * sigma  # (2n, *shape): antithetic pairs
    per_call = max(1, chunk // max(1, points.shape[0]))
    values = []
    with torch.no_grad():
        for start in range(0, 2 * n, per_call):
            batch = points.unsqueeze(1) + steps[start:start + per_call].unsqueeze(0)
            values.append(objective(batch).double())
    value = torch.cat(values, dim=1)  # (B, 2n)
    derivatives = (value[:, :n] - value[:, n:]) / (2 * sigma)
    gradient = combine(derivatives, units, orthonormal=directions is None).to(points.dtype)
    return GradientEstimate(gradient, forward_passes=2 * n * points.shape[0], directions=n,
                            subspace=basis.shape[0], sigma=sigma, seed=None if directions is None else seed)


# --- a black box as a module with (estimated) gradients --------------------------------------


class _ZerothOrder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, images, owner):  # type: ignore[override]
        ctx.save_for_backward(images)
        ctx.owner = owner
        with torch.no_grad():
            logits = owner.model(images)
        owner.forward_passes += images.shape[0]
        return logits

    @staticmethod
    def backward(ctx, grad_output):  # type: ignore[override]
        (images,) = ctx.saved_tensors
        owner = ctx.owner
        return owner.vector_jacobian(images, grad_output), None


class ZerothOrderClassifier(nn.Module):
    """A black-box classifier whose backward pass is a zeroth-order estimate.

    Forward is the model's own (its logits, bit for bit); backward estimates
    ``∇ₓ Σⱼ vⱼ logitⱼ(x)`` for the incoming ``v`` with :func:`estimate_gradient` in the span of
    ``basis``. ``forward_passes`` counts every image the model scored, forward and backward;
    ``estimates`` counts backward passes. Each backward draws its directions from
    ``seed + estimates`` so a run is reproducible."""

    def __init__(self, model: Callable[[torch.Tensor], torch.Tensor], basis: torch.Tensor | None = None,
                 directions: int | None = None, sigma: float = DEFAULT_SIGMA, seed: int = 0) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("basis", basis if basis is not None else lowres_basis(), persistent=False)
        self.directions, self.sigma, self.seed = directions, sigma, seed
        self.forward_passes = 0
        self.estimates = 0
        for name in ("supported_attributes", "supported_mask", "require", "supports", "card"):
            if hasattr(model, name):  # the adapter's attribute checks stay reachable
                setattr(self, name, getattr(model, name))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.requires_grad and torch.is_grad_enabled():
            return _ZerothOrder.apply(images, self)
        with torch.no_grad():
            logits = self.model(images)
        self.forward_passes += images.shape[0]
        return logits

    def vector_jacobian(self, images: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The estimate of ``∇ₓ Σⱼ weightsⱼ logitⱼ(x)`` per image."""

        def objective(points: torch.Tensor) -> torch.Tensor:
            b, m = points.shape[:2]
            logits = self.model(points.reshape(b * m, *points.shape[2:])).reshape(b, m, -1)
            return (logits.double() * weights.double().unsqueeze(1)).sum(-1)

        with torch.no_grad():
            estimate = estimate_gradient(objective, images.detach(), basis=self.basis, directions=self.directions,
                                         sigma=self.sigma, seed=self.seed + self.estimates)
        self.forward_passes += estimate.forward_passes
        self.estimates += 1
        return estimate.gradient.to(images.dtype)
