"""Counterfactuals each model drives through the face denoiser (ACE / denoised smoothing).

For one face ``x`` and the audited model ``M`` on its own:

1. **Edit through the prior.** Optimise a smooth edit ``δ`` (a coarse grid, upsampled) so that ``M`` applied to
   ``D(x + δ + σ·ε, σ)`` reaches the target past ``margin + overshoot`` — a fresh, seeded
   ``ε`` at every step (denoised smoothing: ``M`` smoothed by a face denoiser). What is not
   face-like is removed by ``D`` before ``M`` sees it, so ``M``'s own gradient has to make a
   change the prior keeps. An L1 term keeps the denoised estimate near ``x``, and a second
   term keeps ``M``'s view of the other attributes. The step is the gradient on the one-step
   clean estimate (FastDiME), never a guide's: two models' edits are free to differ.
2. **Keep the rest of the face.** By default (``denoised_output="difference"``) the result
   is ``x`` plus the denoiser's *change*, ``D(x + δ + σε) − D(x + σε)`` with the same ``ε``
   (averaged over ``output_draws`` draws), inside a mask of where it changed (thresholded,
   dilated, softened): what ``D`` cannot draw at this level (an undertrained denoiser leaves
   colour speckle) cancels, and the face outside the mask is exactly the original. With
   ``"inpaint"``, ``D``'s own image fills the mask, re-drawn RePaint-style from
   ``inpaint_sigma`` down with the original put back outside it at each level's noise.
   With ``region_mask``, the edit is confined to the attribute's face region
   (:mod:`recourse.generation.regions`: the mouth for Smiling, the eyes and brows for
   Eyeglasses, ...): ``δ`` is multiplied by the region while it is optimised, so ``M``'s
   gradient acts there only, and the output mask is the change mask times the region, so the
   face outside it is exactly the original. With ``adaptive_share`` < 1 the region is first cut
   to that share of its pixels where ``M``'s own input gradient at ``x`` is largest (MaskDiME's
   adaptive mask). The region is the face's; the edit, and the gradient that cuts it, are each
   model's.
3. **The smallest step that counts.** On the straight path from ``x`` to that image, the
   first point where the deciding model (a compressed model's integer kernels, or ``M``) is
   past ``margin``, found by bisection; where even the whole edit is not, the whole edit.

Every random draw comes from the task's seed, so the same task gives the same noise for
every model. One image at a time: the result does not depend on the batch, its order or
memory layout (see :func:`recourse.generation.guidance.edit_towards` for why).
"""

from __future__ import annotations

import hashlib
import math
import weakref

import torch
import torch.nn.functional as F
from torch import nn

from recourse.bounded_cache import BoundedCache
from recourse.data import ATTRIBUTES
from recourse.generation.face_denoiser import FaceDenoiser
from recourse.generation.guidance import STOP_HALVINGS, _halve, past_margin
from recourse.generation.regions import REGIONS, adaptive_mask, region_mask


def _noise(seed: int, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
    """A draw of its own for each (task seed, use): the edit's steps and inpainting levels."""
    generator = torch.Generator().manual_seed((int(seed) * 1_000_003 + stream) % (2**63))
    return torch.randn(shape, generator=generator)


def change_mask(edited: torch.Tensor, reference: torch.Tensor, threshold: float, dilation: int) -> torch.Tensor:
    """``(B, 1, H, W)`` in [0, 1]: where the mean channel change exceeds ``threshold``, grown
    by ``dilation`` pixels and softened by a 3×3 mean so the seam is not a hard edge."""
    changed = ((edited - reference).abs().mean(dim=1, keepdim=True) > threshold).float()
    if dilation > 0:
        changed = F.max_pool2d(changed, 2 * dilation + 1, stride=1, padding=dilation)
    return F.avg_pool2d(changed, 3, stride=1, padding=1, count_include_pad=False)


def inpaint(denoiser: FaceDenoiser, edited: torch.Tensor, original: torch.Tensor, mask: torch.Tensor,
            sigma: float, steps: int, seed: int) -> torch.Tensor:
    """``edited`` inside ``mask`` re-drawn by ``D`` from noise level ``sigma`` down, with
    ``original`` outside it (RePaint's replacement, deterministic DDIM-style steps)."""
    if steps == 0:
        return mask * edited + (1 - mask) * original
    sigmas = torch.exp(torch.linspace(math.log(sigma), math.log(denoiser.config.sigma_min), steps + 1))
    signed, known = edited * 2 - 1, original * 2 - 1
    noisy = signed + sigma * _noise(seed, 10_000, tuple(edited.shape))
    with torch.no_grad():
        for i in range(steps):
            clean = denoiser.denoise_signed(noisy, sigmas[i])
            inside = clean + sigmas[i + 1] / sigmas[i] * (noisy - clean)
            outside = known + sigmas[i + 1] * _noise(seed, 10_001 + i, tuple(edited.shape))
            noisy = mask * inside + (1 - mask) * outside
        clean = denoiser.denoise_signed(noisy, sigmas[-1])
    return mask * ((clean + 1) / 2).clamp(0, 1) + (1 - mask) * original


class ReferenceViews:
    """``D(x + σε)`` of unedited faces, kept for the next model that edits the same face with
    the same seed: every model of an audit or a benchmark sees the same noise on the same
    face, so only the first computes them (a quarter of an edit's passes through ``D``). The
    same call at batch size 1 as without it, so the numbers are identical. Bounded (about
    50 MB), shared by the app's concurrent audits."""

    def __init__(self, size: int = 1024) -> None:
        self._views: BoundedCache[tuple[weakref.ref, torch.Tensor]] = BoundedCache(size)

    def get(self, denoiser: FaceDenoiser, image: torch.Tensor, noise: torch.Tensor, seed: int, stream: int,
            sigma: float) -> torch.Tensor:
        key = (id(denoiser), hashlib.blake2b(image.detach().numpy().tobytes(), digest_size=16).digest(),
               tuple(image.shape), int(seed), stream, float(sigma))
        kept = self._views.get(key)
        if kept is not None and kept[0]() is denoiser:  # not another denoiser at a reused id
            return kept[1]
        with torch.no_grad():
            view = denoiser(image + sigma / 2 * noise, sigma)
        self._views.put(key, (weakref.ref(denoiser), view))
        return view

    def clear(self) -> None:
        self._views.clear()


REFERENCE_VIEWS = ReferenceViews()


def _denoised_change(denoiser: FaceDenoiser, image: torch.Tensor, edit: torch.Tensor, seed: int, stream: int,
                     sigma: float) -> torch.Tensor:
    """``D(x + δ + σε) − D(x + σε)`` with the same ``ε`` (the task's draw ``stream``): the part
    of ``δ`` the face prior keeps (for small ``δ``, ``D``'s Jacobian applied to it, which
    passes face-like changes and removes the rest), while what ``D`` itself cannot draw at this
    level cancels."""
    noise = _noise(seed, stream, tuple(image.shape))
    reference = REFERENCE_VIEWS.get(denoiser, image, noise, seed, stream, sigma)
    return denoiser((image + edit).clamp(0, 1) + sigma / 2 * noise, sigma) - reference


def input_gradient(image: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor) -> torch.Tensor:
    """The gradient of ``sign · logit`` of attribute ``index`` with respect to the input at
    ``image`` ``(B, 3, H, W)``: one backward pass of the model."""
    with torch.enable_grad():
        x = image.detach().clone().requires_grad_(True)
        (gradient,) = torch.autograd.grad((sign * model(x)[:, index]).sum(), x)
    return gradient


def confined_to_region(config, attribute: str) -> bool:
    """Whether ``attribute``'s edit is confined to its face region under ``config``."""
    return config.region_mask and (config.whole_face_region or REGIONS[attribute] != "whole_face")


def edit_budget(config, attribute: str) -> tuple[int, float]:
    """``(steps, learning rate)`` of ``attribute``'s edit: a region-confined edit gets its own."""
    if confined_to_region(config, attribute):
        return config.region_edit_steps, config.region_edit_learning_rate
    return config.edit_steps, config.edit_learning_rate


def edit_region(image: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config) -> torch.Tensor | None:
    """``(B, 1, H, W)`` in [0, 1]: where ``model`` may edit ``image`` for attribute ``index``
    (its face region with ``region_mask``, cut to ``adaptive_share`` of it by the model's own
    gradient); None where the whole frame may change."""
    confined = confined_to_region(config, ATTRIBUTES[index])
    if not confined and config.adaptive_share >= 1:
        return None
    region = region_mask(image, ATTRIBUTES[index]).mask if confined else torch.ones_like(image[:, :1])
    if config.adaptive_share < 1:
        region = adaptive_mask(region, input_gradient(image, model, index, sign), config.adaptive_share)
    return region


def denoised_edit(image: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
                  denoiser: FaceDenoiser, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stages 1–2 for one image ``(1, 3, H, W)``: the edited image and its mask."""
    region = edit_region(image, model, index, sign, config)
    others = torch.ones(40, dtype=torch.bool)
    others[index] = False
    with torch.no_grad():
        before = torch.sigmoid(model(image))[:, others]
    difference = config.denoised_output == "difference"
    sigma01 = config.sigma / 2  # the denoiser's σ is in [−1, 1] units, the image in [0, 1]
    # The edit lives on a coarse grid, upsampled smoothly: per-pixel steps become a speckle
    # larger than the noise the denoiser removes, which it then passes through.
    steps, learning_rate = edit_budget(config, ATTRIBUTES[index])
    coarse = torch.zeros(1, 3, config.edit_resolution, config.edit_resolution, requires_grad=True)
    optimizer = torch.optim.Adam([coarse], lr=learning_rate)

    def upsampled() -> torch.Tensor:
        edit = F.interpolate(coarse, size=image.shape[-2:], mode="bilinear", align_corners=False)
        return edit if region is None else region * edit

    for step in range(steps):
        if difference:
            change = _denoised_change(denoiser, image, upsampled(), seed, step, config.sigma)
            seen = (image + change).clamp(0, 1)
        else:
            noise = _noise(seed, step, tuple(image.shape))
            seen = denoiser((image + upsampled()).clamp(0, 1) + sigma01 * noise, config.sigma).clamp(0, 1)
            change = seen - image
        logits = model(seen)
        loss = (F.softplus(config.margin + config.overshoot - sign * logits[:, index])
                + config.preserve_weight * F.binary_cross_entropy_with_logits(logits[:, others], before)
                + config.proximity_weight * change.abs().mean())
        optimizer.zero_grad(set_to_none=True)
        loss.sum().backward()
        optimizer.step()
    with torch.no_grad():
        if difference:
            draws = [_denoised_change(denoiser, image, upsampled(), seed, steps + k, config.sigma)
                     for k in range(config.output_draws)]
            change = torch.stack(draws).mean(dim=0)
            mask = _within(change_mask(image + change, image, config.mask_threshold, config.mask_dilation), region)
            return (image + mask * change).clamp(0, 1), mask
        noise = _noise(seed, steps, tuple(image.shape))
        edited = denoiser((image + upsampled()).clamp(0, 1) + sigma01 * noise, config.sigma).clamp(0, 1)
        reference = denoiser(image + sigma01 * noise, config.sigma).clamp(0, 1)
    mask = _within(change_mask(edited, reference, config.mask_threshold, config.mask_dilation), region)
    return inpaint(denoiser, edited, image, mask, config.inpaint_sigma, config.inpaint_steps, seed), mask


def _within(mask: torch.Tensor, region: torch.Tensor | None) -> torch.Tensor:
    return mask if region is None else mask * region


@torch.no_grad()
def smallest_step(image: torch.Tensor, edited: torch.Tensor, decider: nn.Module, index: int, sign: torch.Tensor,
                  margin: float) -> torch.Tensor:
    """The first point of ``image → edited`` where ``decider`` is past ``margin`` (bisected to
    1/2**STOP_HALVINGS of the path); ``edited`` itself where it is not past it anywhere."""
    change = edited - image

    def reached(share_of_change: torch.Tensor) -> torch.Tensor:
        return past_margin(sign * decider((image + share_of_change).clamp(0, 1))[:, index] - margin, sign)

    if not bool(reached(change).all()):
        return edited
    if bool(reached(torch.zeros_like(change)).all()):
        return image.clone()
    return (image + _halve(torch.zeros_like(change), change, reached, STOP_HALVINGS)).clamp(0, 1)


def denoised_counterfactuals(images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
                             denoiser: FaceDenoiser, seeds: tuple[int, ...],
                             decider: nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` of ``images`` in [0, 1] and the whole edits they were
    stopped on, one image at a time."""
    if images.shape[-1] != denoiser.config.resolution:
        raise ValueError(f"the face denoiser works at {denoiser.config.resolution} px, got {images.shape[-1]} px images")
    denoiser.eval()
    results, edits = [], []
    for i in range(len(images)):
        image = images[i:i + 1].clone()
        edited, _ = denoised_edit(image, model, index, sign[i:i + 1], config, denoiser, seeds[i])
        results.append(smallest_step(image, edited, decider if decider is not None else model, index,
                                     sign[i:i + 1], config.margin))
        edits.append(edited)
    return torch.cat(results), torch.cat(edits)
