"""Learning the edit spaces from a split's faces: weighted principal components of each part's
template texture, and each attribute's class means in the whitened coefficients.

Only statistics leave this module (means, directions, scales): no face, texture or coefficient
vector of one face is kept.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from recourse.data import ATTRIBUTES, to_float_images
from recourse.generation.spaces.colour import MONOCHROME_SPREAD, colour_spread
from recourse.generation.spaces.space import RegionSpace
from recourse.generation.spaces.templates import GroupSpec

CHUNK = 1024
WEIGHT_RANGE = (0.25, 4.0)


def class_balance(labels: np.ndarray, attributes: tuple[str, ...]) -> np.ndarray:
    """``(N,)`` weights that give each of ``attributes``' two classes about equal mass (the mean
    over the attributes of ``0.5 / p(own class)``, clipped to :data:`WEIGHT_RANGE`): a rare
    class (eyeglasses, 5% of faces) gets directions of its own instead of a few stray ones."""
    columns = labels[:, [ATTRIBUTES.index(a) for a in attributes]] > 0
    share = columns.mean(axis=0).clip(1e-3, 1 - 1e-3)
    weights = np.where(columns, 0.5 / share, 0.5 / (1 - share)).mean(axis=1)
    return weights.clip(*WEIGHT_RANGE)


def usable(images: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Faces a space learns from: landmarks found, and in colour (a black-and-white face would
    teach the space that colour can vanish)."""
    spread = colour_spread(to_float_images(images)).numpy() if len(images) else np.zeros(0)
    return found & (spread > MONOCHROME_SPREAD)


def fit_region_space(spec: GroupSpec, images: np.ndarray, points: np.ndarray, found: np.ndarray,
                     labels: np.ndarray, progress: Callable[[str], None] = print) -> RegionSpace:
    """The space of ``spec`` from ``uint8 (N, 3, 64, 64)`` faces, their landmarks ``(N, 68, 2)``
    in the 64-px frame, ``found`` and labels ``(N, 40)`` (±1 or 0/1)."""
    space = RegionSpace(group=spec.name, anchors=spec.anchors, box=spec.box, components=spec.components,
                        attributes=spec.attributes, region=spec.region)
    keep = usable(images, found)
    images, points, labels = images[keep], points[keep], labels[keep]
    weights = torch.as_tensor(class_balance(labels, spec.attributes), dtype=torch.float64)
    dimension = space.mean.numel()
    total = torch.zeros(dimension, dtype=torch.float64)
    second = torch.zeros(dimension, dimension, dtype=torch.float64)
    for start in range(0, len(images), CHUNK):
        textures = space.textures(to_float_images(images[start:start + CHUNK]), points[start:start + CHUNK]).double()
        w = weights[start:start + CHUNK, None]
        total += (w * textures).sum(0)
        second += (w * textures).T @ textures
        progress(f"{spec.name}: {min(start + CHUNK, len(images))}/{len(images)} textures")
    mass = float(weights.sum())
    mean = total / mass
    covariance = second / mass - torch.outer(mean, mean)
    values, vectors = torch.linalg.eigh(covariance)
    order = torch.argsort(values, descending=True)[:spec.components]
    space.mean.copy_(mean.float())
    space.basis.copy_(vectors[:, order].T.float())
    space.scales.copy_(values[order].clamp_min(1e-12).sqrt().float())
    explained = float(values[order].sum() / values.clamp_min(0).sum())
    progress(f"{spec.name}: {spec.components} components explain {explained:.1%} of the weighted variance")
    codes = torch.cat([space.encode(space.textures(to_float_images(images[s:s + CHUNK]), points[s:s + CHUNK]))
                       for s in range(0, len(images), CHUNK)])
    for row, attribute in enumerate(spec.attributes):
        present = torch.as_tensor(labels[:, ATTRIBUTES.index(attribute)] > 0)
        for target in (0, 1):
            chosen = present if target else ~present
            if int(chosen.sum()) < 20:
                raise ValueError(f"{spec.name}: only {int(chosen.sum())} faces of {attribute}={target} to learn from")
            space.class_means[row, target] = codes[chosen].mean(0)
    space.register_to_config(faces=int(len(images)))
    return space
