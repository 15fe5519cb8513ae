"""The adapter: any loaded foreign classifier as the module the audit expects.

The audit calls a classifier on the project's images — ``(B, 3, 64, 64)`` float in [0, 1], RGB,
CelebA-HQ framing — and reads 40 logits in CelebA's order. :class:`ForeignClassifier` does
what the card says to get there: reframe (a model trained on CelebA's aligned 178×218 photos
sees a different part of the head), resize, scale to the model's value range, reorder channels,
normalise, change layout; then turn the outputs into logits and put each where CelebA has it.
Every step is a torch op, so a differentiable model stays differentiable through the adapter.

Attributes the model does not predict are listed in :attr:`ForeignClassifier.supported_attributes`
(and :attr:`~ForeignClassifier.supported_mask`); their places in the 40 hold 0.0 and must not be
read: :meth:`~ForeignClassifier.require` refuses them with :class:`UnsupportedAttributeError`.
(NaN would poison any sum or mean that touches all 40 columns, and a made-up logit would be read
as a decision.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from recourse.faces import CELEBA_ALIGNED_HQ_CROP
from recourse.foreign.cards import InputSpec, ModelCard, OutputKind
from recourse.foreign.loaders import ForeignModelError, LoadedModel, run_model
from recourse.names import ATTRIBUTES

PROJECT_RESOLUTION = 64
# Probabilities are clipped this far from 0 and 1 before the log-odds: a saturated sigmoid
# (p == 1.0 in float32) would give an infinite logit. log(1e-7 odds) ≈ ±16.1 bounds the logits.
PROBABILITY_EPS = 1e-7


class UnsupportedAttributeError(ValueError):
    """The foreign model does not predict this attribute."""


class NotDifferentiableError(TypeError):
    """Gradients were asked of a black-box model; use recourse.foreign.blackbox for them."""


# --- the math, as pure functions ----------------------------------------------------------


def to_logits(outputs: torch.Tensor, kind: OutputKind, eps: float = PROBABILITY_EPS) -> torch.Tensor:
    """``(B, count)`` model outputs → ``(B, attributes)`` logits (log-odds of "present").

    Pairs are (absent, present) per attribute; softmax over a pair has log-odds ``z1 - z0``.
    Computed in float64 so that ``p >= 0.5`` and ``logit >= 0`` agree exactly."""
    values = outputs.double()
    if kind == "logits":
        logits = values
    elif kind == "probabilities":
        p = values.clamp(eps, 1 - eps)
        logits = torch.log(p) - torch.log1p(-p)
    else:
        pairs = values.reshape(values.shape[0], -1, 2)
        if kind == "pair-logits":
            logits = pairs[..., 1] - pairs[..., 0]
        else:
            p = pairs.clamp(eps, 1.0)
            logits = torch.log(p[..., 1]) - torch.log(p[..., 0])
    return logits.to(outputs.dtype if outputs.is_floating_point() else torch.float32)


def framing_box(spec: InputSpec) -> tuple[float, float, float, float]:
    """The region the model sees, in unit coordinates of the project's CelebA-HQ image
    (``(0, 0, 1, 1)`` is the whole face square; values outside [0, 1] lie beyond it)."""
    if spec.framing == "celeba-hq":
        return (0.0, 0.0, 1.0, 1.0)
    assert spec.crop is not None
    hx0, hy0, hx1, hy1 = CELEBA_ALIGNED_HQ_CROP  # the HQ square inside the 178×218 aligned photo
    x0, y0, x1, y1 = spec.crop
    return ((x0 - hx0) / (hx1 - hx0), (y0 - hy0) / (hy1 - hy0), (x1 - hx0) / (hx1 - hx0), (y1 - hy0) / (hy1 - hy0))


def box_coverage(box: tuple[float, float, float, float]) -> float:
    """The share of the model's view that the project's image actually shows (the rest is the
    image's border colour repeated: a CelebA-HQ square does not contain the whole aligned photo)."""
    u0, v0, u1, v1 = box
    inside_u = max(0.0, min(u1, 1.0) - max(u0, 0.0))
    inside_v = max(0.0, min(v1, 1.0) - max(v0, 0.0))
    return inside_u * inside_v / ((u1 - u0) * (v1 - v0))


def reframe(images: torch.Tensor, box: tuple[float, float, float, float], size: tuple[int, int]) -> torch.Tensor:
    """``images`` cropped to ``box`` (unit coordinates) and resized to ``size`` (height, width),
    bilinearly and differentiably; the whole image is resized with antialiasing when shrunk."""
    if box == (0.0, 0.0, 1.0, 1.0):
        if tuple(images.shape[-2:]) == tuple(size):
            return images
        shrink = size[0] < images.shape[-2] or size[1] < images.shape[-1]
        return F.interpolate(images, size=size, mode="bilinear", align_corners=False, antialias=shrink)
    u0, v0, u1, v1 = box
    # affine_grid maps output [-1, 1] to input [-1, 1]: x_in = (u1 - u0) x_out + (u0 + u1 - 1)
    theta = torch.tensor([[u1 - u0, 0.0, u0 + u1 - 1.0], [0.0, v1 - v0, v0 + v1 - 1.0]],
                         dtype=images.dtype, device=images.device).expand(images.shape[0], 2, 3)
    grid = F.affine_grid(theta, [images.shape[0], 3, *size], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


def prepare(images: torch.Tensor, spec: InputSpec) -> torch.Tensor:
    """Project images ``(B, 3, h, w)`` in [0, 1] → the model's input per ``spec``."""
    x = reframe(images, framing_box(spec), spec.size)
    low, high = spec.value_range
    if (low, high) != (0.0, 1.0):
        x = x * (high - low) + low
    if spec.channel_order == "BGR":
        x = x.flip(1)
    mean = torch.tensor(spec.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(spec.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    if spec.mean != (0.0, 0.0, 0.0) or spec.std != (1.0, 1.0, 1.0):
        x = (x - mean) / std
    if spec.layout == "NHWC":
        x = x.permute(0, 2, 3, 1)
    return x.contiguous()


def celeba_positions(card: ModelCard) -> torch.Tensor:
    """For each of the model's attributes (in its output order), its index among CelebA's 40."""
    return torch.tensor([ATTRIBUTES.index(name) for name in card.output.attributes], dtype=torch.long)


# --- the module ----------------------------------------------------------------------------


class ForeignClassifier(nn.Module):
    """A foreign model behind the project's classifier contract: ``(B, 3, 64, 64)`` in [0, 1]
    → ``(B, 40)`` logits in CelebA order. Read only :attr:`supported_attributes`."""

    def __init__(self, loaded: LoadedModel) -> None:
        super().__init__()
        self.loaded = loaded
        self.card = loaded.card
        positions = celeba_positions(loaded.card)
        self.register_buffer("positions", positions, persistent=False)
        mask = torch.zeros(len(ATTRIBUTES), dtype=torch.bool)
        mask[positions] = True
        self.register_buffer("supported_mask", mask, persistent=False)
        # The model is deliberately not a registered child: an exported program refuses
        # .train()/.eval() (its mode was fixed at export), and audits call .eval() on classifiers.
        self.eval()

    # which attributes may be read
    @property
    def supported_attributes(self) -> tuple[str, ...]:
        """The attributes this model predicts, in CelebA's order."""
        return tuple(name for name, kept in zip(ATTRIBUTES, self.supported_mask.tolist()) if kept)

    @property
    def differentiable(self) -> bool:
        return self.loaded.differentiable

    @property
    def framing_coverage(self) -> float:
        return box_coverage(framing_box(self.card.input))

    def supports(self, attribute: str) -> bool:
        return attribute in self.card.output.attributes

    def require(self, attribute: str) -> int:
        """CelebA index of ``attribute``, or UnsupportedAttributeError naming the model's ones."""
        if attribute not in ATTRIBUTES:
            raise UnsupportedAttributeError(f"unknown attribute {attribute!r}; expected a CelebA name, e.g. 'Smiling'")
        if not self.supports(attribute):
            raise UnsupportedAttributeError(
                f"{self.card.title} does not predict {attribute}; it predicts {', '.join(self.supported_attributes)}")
        return ATTRIBUTES.index(attribute)

    # the calls
    def model_outputs(self, images: torch.Tensor) -> torch.Tensor:
        """The model's raw outputs ``(B, count)`` for project images, in the card's order."""
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"expected project images (B, 3, H, W) in [0, 1], got shape {list(images.shape)}")
        if not images.is_floating_point():
            raise ValueError(f"expected float images in [0, 1], got {images.dtype} (divide uint8 images by 255)")
        images = images.float()
        if not self.loaded.differentiable and images.requires_grad and torch.is_grad_enabled():
            raise NotDifferentiableError(
                f"{self.card.title} is a black box ({self.loaded.runtime}): it gives no gradients; wrap it in "
                "recourse.foreign.blackbox.ZerothOrderClassifier for estimated ones")
        inputs = prepare(images, self.card.input)
        out = run_model(self.loaded, inputs)
        if out.dim() != 2 or out.shape != (images.shape[0], self.card.output.count):
            raise ForeignModelError(f"{self.card.weights_path}: returned shape {list(out.shape)} for "
                                    f"{images.shape[0]} images; its card declares {self.card.output.count} outputs")
        return out

    def model_logits(self, images: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, len(card attributes))`` in the card's order."""
        return to_logits(self.model_outputs(images), self.card.output.kind)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.scatter(self.model_logits(images))

    def scatter(self, logits: torch.Tensor) -> torch.Tensor:
        """Card-order logits → ``(B, 40)`` in CelebA order, 0.0 where the model is silent."""
        full = logits.new_zeros(logits.shape[0], len(ATTRIBUTES))
        return full.index_copy(1, self.positions, logits.to(full.dtype))


def load_classifier(source: str, **options) -> ForeignClassifier:
    """:func:`recourse.foreign.loaders.load_foreign` then the adapter, in one call."""
    from recourse.foreign.loaders import load_foreign

    return ForeignClassifier(load_foreign(source, **options))
