"""Each model steers its own edit inside a face part's space.

For one face and one model: the coefficient change ``Δz`` of the attribute's space is optimised
(Adam) so that the model's logit passes ``margin + overshoot`` on the target side, while the
model keeps its view of the other 39 attributes and the space's prior (a Gaussian on the
whitened coefficients) keeps the part a likely one; every coefficient stays within
``±space_box`` standard deviations (a face already outside that box never moves further out).
The edit is ``x + α ⊙ W⁻¹(Uᵀ(σ ⊙ Δz) − (1 − ρ)·r)``: the template change put back on the face by
its own affine map, inside the attribute's region ``α``, with a share ``1 − ρ`` of the face's own
residual ``r`` (what the space cannot draw: teeth behind lips that close) let go. The
counterfactual is the first point on the straight path from the face to that edit where the
deciding model is past ``margin``, as for every method.

A monochrome face gets the luminance rows of the change only, its own chroma kept. Hair colour
is steered the same way in its own space (:mod:`hair`, :func:`hair_counterfactuals`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from recourse.data import ATTRIBUTES
from recourse.generation.regions import face_landmarks, mask_of_shape
from recourse.generation.spaces.coefficients import steer_coefficients
from recourse.generation.spaces.colour import change_to_rgb, colour_mode, luminance_only
from recourse.generation.spaces.hair import HairSpace, hair_edit
from recourse.generation.spaces.mouth_shape import MouthShapeSpace, mouth_edits
from recourse.generation.spaces.space import RegionSpace, tapered_shape
from recourse.generation.spaces.warp import coverage, from_template

KEEP_TONE = ("face",)  # spaces whose edits keep the part's mean colour (see keep_tone)


@dataclass(frozen=True)
class FacePlacement:
    """Where one face's part lies: the affine map from the template, the soft region ``alpha``
    ``(1, 1, H, W)`` the edit may change, the face's coefficients ``z0`` ``(1, K)`` and residual
    ``(1, D)``, whether it is monochrome or its landmarks were not found, and ``light``: the part's
    mean luminance on this face over that of the space's mean part."""

    affine: np.ndarray
    alpha: torch.Tensor
    codes: torch.Tensor
    residual: torch.Tensor
    monochrome: bool
    found: bool
    light: float = 1.0


def relative_light(space: RegionSpace, textures: torch.Tensor) -> float:
    """The part's mean luminance in ``textures`` ``(1, D)`` over that of the space's mean part
    (both weighted by the taper the textures carry)."""
    pixels = space.taper.numel()
    return float(textures[0, :pixels].sum() / space.mean.float()[:pixels].sum().clamp_min(1e-6))


def place(space: RegionSpace, image: torch.Tensor, points: np.ndarray, found: bool) -> FacePlacement:
    """The placement of ``space``'s part on ``image`` ``(1, 3, H, W)`` with landmarks ``points``
    ``(68, 2)`` in the image's pixels."""
    height, width = image.shape[-2:]
    box = tuple(space.config.box)
    with torch.no_grad():
        affines, textures = space.read(image, points)
        codes = space.encode(textures)
        residual = textures - space.mean.float() - space.change(codes).flatten(1)
    affine = affines[0]
    covered = from_template(coverage(box), [affine], box, (height, width))
    region = mask_of_shape(points, tapered_shape(space.config.region), height, width)[None, None]
    return FacePlacement(affine, (region * covered).to(image.dtype), codes, residual,
                         colour_mode(image[0]).monochrome, found, relative_light(space, textures))


def keep_tone(change: torch.Tensor, taper: torch.Tensor) -> torch.Tensor:
    """``change`` ``(N, 3, h, w)`` less its taper-weighted mean per channel: what it does to the
    part's structure (wrinkles, shadows, shapes) without lightening, darkening or tinting the
    whole part, which would read as another skin tone or another light, not another age."""
    weights = taper / taper.sum()
    return change - (change * weights).sum(dim=(-2, -1), keepdim=True) * (taper > 0)


def render(space: RegionSpace, images: torch.Tensor, placements: list[FacePlacement], dz: torch.Tensor,
           residual_dropped: torch.Tensor | float = 0.0, luminance: bool = False,
           tone_kept: bool | None = None, relative: bool = False) -> torch.Tensor:
    """``images`` ``(B, 3, H, W)`` with the coefficient changes ``dz`` ``(B, K)`` applied in each
    face's region (``placements``, one a face), and ``residual_dropped`` (a float or ``(B,)``) of
    each face's own residual let go there. ``tone_kept``: the change keeps the part's mean colour
    (:func:`keep_tone`); by default where the space is one of :data:`KEEP_TONE`. ``relative``: the
    change is scaled by each face's :attr:`FacePlacement.light`."""
    change = space.change(dz)
    if (space.config.group in KEEP_TONE) if tone_kept is None else tone_kept:
        change = keep_tone(change, space.taper.float())
    if relative:
        # light multiplies what a surface reflects: a shadow that darkens a fair cheek by 0.1
        # darkens a dark one by less, and the same 0.1 there reads as a stain, not a shadow
        change = change * torch.tensor([placement.light for placement in placements],
                                       dtype=change.dtype).clamp(0.2, 1.5)[:, None, None, None]
    luminance_rows = torch.tensor([1.0, 0.0, 0.0], dtype=change.dtype)[:, None, None]
    only_luminance = torch.tensor([luminance or placement.monochrome for placement in placements])[:, None, None, None]
    box, size = tuple(space.config.box), tuple(images.shape[-2:])
    affines = [placement.affine for placement in placements]

    def on_faces(template_change: torch.Tensor) -> torch.Tensor:
        template_change = torch.where(only_luminance, template_change * luminance_rows, template_change)
        return from_template(change_to_rgb(template_change), affines, box, size)

    dropped = torch.as_tensor(residual_dropped, dtype=change.dtype).reshape(-1, 1, 1, 1)
    if bool((dropped != 0).any()):
        residuals = torch.cat([placement.residual for placement in placements]).view_as(change)
        change = change - dropped * residuals
    alpha = torch.cat([placement.alpha for placement in placements])
    return (images + alpha * on_faces(change)).clamp(0, 1)


def steer(space: RegionSpace, images: torch.Tensor, placements: list[FacePlacement], model: nn.Module, index: int,
          sign: torch.Tensor, config, residual_dropped: torch.Tensor | float = 0.0,
          luminance: bool = False, tone_kept: bool | None = None, relative: bool = False) -> torch.Tensor:
    """The coefficient changes ``(B, K)`` that ``model`` steers ``images`` to (see the module's doc)."""
    z0 = torch.cat([placement.codes for placement in placements])
    frozen = None
    if space.config.group == "face":
        frozen = torch.arange(z0.shape[1]) < config.face_frozen_modes
    # the prior is the target class's: its mean is where the part of a face that has (or lacks)
    # the attribute typically lies
    centre = (torch.stack([space.class_mean(ATTRIBUTES[index], int(side > 0)) for side in sign])
              if config.space_class_prior else 0.0)
    return steer_coefficients(z0, lambda dz: render(space, images, placements, dz, residual_dropped, luminance,
                                                    tone_kept, relative),
                              model, index, sign, config, centre, config.space_prior_weight, frozen)


def space_edits(space: RegionSpace, images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor,
                config, points: np.ndarray, found: np.ndarray, shading: bool = False) -> torch.Tensor:
    """The whole edits ``(B, 3, H, W)`` of ``images``, each aiming at ``margin + overshoot``; the
    faces are steered together, each as if alone (:func:`steer_coefficients`). ``shading``: only
    the change's light and shade (its luminance, the part's tone kept, the face's own residual
    kept, scaled by the part's own light), for a part whose shape another space has already moved."""
    placements = [place(space, images[i:i + 1], points[i], bool(found[i])) for i in range(len(images))]
    drops = ATTRIBUTES[index] in config.space_drop_residual and not shading
    residual_dropped = ((sign < 0) & drops).to(images.dtype)
    luminance = shading or ATTRIBUTES[index] in config.space_luminance_only
    tone_kept = True if shading else None
    dz = steer(space, images, placements, model, index, sign, config, residual_dropped, luminance, tone_kept,
               relative=shading)
    with torch.no_grad():
        edited = render(space, images, placements, dz, residual_dropped, luminance, tone_kept, relative=shading)
    monochrome = torch.tensor([placement.monochrome for placement in placements])
    return torch.where(monochrome[:, None, None, None], luminance_only(images, edited), edited)


def stopped(images: torch.Tensor, edits: torch.Tensor, deciding: nn.Module, index: int, sign: torch.Tensor,
            margin: float) -> torch.Tensor:
    """Each face's counterfactual: the first point of its own path to its edit past ``margin``."""
    from recourse.generation.denoised import smallest_step

    return torch.cat([smallest_step(images[i:i + 1], edits[i:i + 1], deciding, index, sign[i:i + 1], margin)
                      for i in range(len(images))])


def space_counterfactuals(images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
                          space: RegionSpace, decider: nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` and the whole edits they stop on."""
    points, found = face_landmarks(images)
    edits = space_edits(space, images, model, index, sign, config, points, found)
    return stopped(images, edits, decider if decider is not None else model, index, sign, config.margin), edits


def hair_counterfactuals(images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
                         space: HairSpace, decider: nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` and the whole edits they stop on, one face at a time."""
    from recourse.generation.denoised import smallest_step
    from recourse.generation.spaces.person import PERSON

    points, _ = face_landmarks(images)
    people = PERSON(images)
    results, edits = [], []
    for i in range(len(images)):
        image = images[i:i + 1].clone()
        edited = hair_edit(space, image, model, index, sign[i:i + 1], config, points[i], people[i, 0])
        results.append(smallest_step(image, edited, decider if decider is not None else model, index,
                                     sign[i:i + 1], config.margin))
        edits.append(edited)
    return torch.cat(results), torch.cat(edits)


def shaded_counterfactuals(images: torch.Tensor, moved: torch.Tensor, model: nn.Module, index: int,
                           sign: torch.Tensor, config, space: RegionSpace, decider: nn.Module | None = None
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` of ``images`` and the whole edits they stop on: the faces
    ``moved`` by another space (a mouth's shape) and shaded in ``space`` until the model is
    convinced (:func:`space_edits` with ``shading``). The path runs from each face to its edit."""
    points, found = face_landmarks(moved)
    edits = space_edits(space, moved, model, index, sign, config, points, found, shading=True)
    return stopped(images, edits, decider if decider is not None else model, index, sign, config.margin), edits


def mouth_counterfactuals(images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
                          space: MouthShapeSpace, decider: nn.Module | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` and the whole edits they stop on."""
    points, _ = face_landmarks(images)
    edits = mouth_edits(space, images, model, index, sign, config, points, ATTRIBUTES[index])
    return stopped(images, edits, decider if decider is not None else model, index, sign, config.margin), edits
