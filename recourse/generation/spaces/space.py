"""A linear space of one face part's appearance, learned from real train faces.

The part's template texture ``t`` (Y, Cb, Cr of the template's pixels, flattened) is written as
``t = μ + Uᵀ(σ ⊙ z) + r``: ``U`` the principal directions of real faces' textures, ``σ`` their
standard deviations, ``z`` whitened coefficients and ``r`` the face's own residual outside the
space. An edit changes ``z`` only and keeps ``r``, so whatever the face has that the space
cannot draw (a scar, the grain of the photo) stays as it was; and what the edit adds is a sum of
the ways real mouths, eyes or faces differ. Saved and loaded the diffusers way.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from diffusers import ModelMixin
from diffusers.configuration_utils import ConfigMixin, register_to_config

from recourse.generation.regions import GROUPS, MEAN_LANDMARKS_64, Shape, mask_of_shape, to_frame
from recourse.generation.spaces.templates import GroupSpec
from recourse.generation.spaces.warp import template_to_face, to_template
from recourse.generation.spaces.colour import rgb_to_ycbcr


TAPER_GROW, TAPER_SOFT = 0.15, 3.0  # eye distances the taper reaches past the region; its ramp's half width (px)


def tapered_shape(region: str) -> Shape:
    """The region's shape (:data:`regions.GROUPS`) grown and softened: where a space's edits fade out."""
    shape = GROUPS[region]
    return replace(shape, grow=shape.grow + TAPER_GROW, soft=TAPER_SOFT)


def template_region(box, region: str) -> torch.Tensor:
    """``(h, w)``: the tapered region on the mean face, in the template's pixels."""
    x0, y0, x1, y1 = box
    return mask_of_shape(MEAN_LANDMARKS_64 - np.array([x0, y0]), tapered_shape(region), y1 - y0, x1 - x0)


class RegionSpace(ModelMixin, ConfigMixin):
    """One group's space: ``mean`` ``(D,)``, ``basis`` ``(K, D)`` (orthonormal rows), ``scales``
    ``(K,)``, and each of its attributes' class means of ``z`` (``class_means`` ``(A, 2, K)``),
    with ``D = 3·h·w`` for the template's ``(h, w)``."""

    @register_to_config
    def __init__(self, group: str = "mouth", anchors: tuple[int, ...] = (), box: tuple[int, ...] = (0, 0, 1, 1),
                 components: int = 1, attributes: tuple[str, ...] = (), region: str = "mouth",
                 faces: int = 0, code_energy_limit: float = 0.0, residual_energy_limit: float = 0.0) -> None:
        super().__init__()
        x0, y0, x1, y1 = box
        dimension = 3 * (y1 - y0) * (x1 - x0)
        self.register_buffer("mean", torch.zeros(dimension))
        self.register_buffer("basis", torch.zeros(components, dimension))
        self.register_buffer("scales", torch.ones(components))
        self.register_buffer("class_means", torch.zeros(len(attributes), 2, components))
        self.register_buffer("taper", template_region(box, region))

    @property
    def spec(self) -> GroupSpec:
        c = self.config
        return GroupSpec(c.group, tuple(c.anchors), tuple(c.box), int(c.components), tuple(c.attributes), c.region)

    def affines(self, points: np.ndarray) -> list[np.ndarray]:
        """Per face ``(N, 68, 2)`` (64-px frame): the affine map from the template's frame to the face."""
        anchors = list(self.config.anchors)
        return [template_to_face(MEAN_LANDMARKS_64[anchors], face[anchors]) for face in np.asarray(points)]

    def read(self, image: torch.Tensor, points: np.ndarray) -> tuple[list[np.ndarray], torch.Tensor]:
        """One face ``(1, 3, H, W)`` with landmarks ``points`` ``(68, 2)`` in its own pixels: its
        affine map (as :meth:`affines` gives it) and its tapered texture ``(1, D)``."""
        points64 = to_frame(points, 64, 64, side=image.shape[-1])
        affines = self.affines(points64[None])
        return affines, self._tapered(to_template(image, affines, tuple(self.config.box)))

    def _tapered(self, templates: torch.Tensor) -> torch.Tensor:
        return (rgb_to_ycbcr(templates) * self.taper.float()).flatten(1)

    def textures(self, images: torch.Tensor, points: np.ndarray) -> torch.Tensor:
        """``(N, D)``: the faces' template textures in Y, Cb, Cr, tapered by the region's shape on
        the mean face (so that the space's directions, and every edit made of them, fade out
        at the region's edge instead of stopping at a seam)."""
        return self._tapered(to_template(images, self.affines(points), tuple(self.config.box)))

    def encode(self, textures: torch.Tensor) -> torch.Tensor:
        """Whitened coefficients ``(N, K)`` of template textures ``(N, D)``."""
        return (textures - self.mean.float()) @ self.basis.float().T / self.scales.float()

    def change(self, dz: torch.Tensor) -> torch.Tensor:
        """The template-texture change ``(N, 3, h, w)`` (Y, Cb, Cr) that a coefficient change ``dz`` makes."""
        height, width = self.spec.size
        return ((dz * self.scales.float()) @ self.basis.float()).view(-1, 3, height, width)

    @property
    def realism_limits(self) -> tuple[float, float] | None:
        """``(‖z‖²/K, residual energy)`` limits set on real val faces, None before calibration."""
        limits = (float(self.config.code_energy_limit), float(self.config.residual_energy_limit))
        return limits if all(limit > 0 for limit in limits) else None

    def class_mean(self, attribute: str, target: int) -> torch.Tensor:
        """The mean ``z`` of train faces that have (``target`` 1) or lack ``attribute``."""
        return self.class_means[list(self.config.attributes).index(attribute), int(target)].float()
