"""Faces to a group's template and back, by the affine map fitted on the group's anchors.

Points are in a frame's pixels with pixel centres at integers (as :mod:`regions` has them); the
sampling is ``grid_sample(align_corners=False)``, whose convention that is. Both directions are
linear in the pixels, so an edit made in the template is a linear change of the face, and
gradients reach the template's coefficients.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

FEATHER = 1.5  # template pixels over which the template's coverage fades out at its border


def fit_affine(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``(2, 3)``: the least-squares affine map carrying points ``source`` ``(M, 2)`` onto ``target``."""
    design = np.concatenate([source, np.ones((len(source), 1))], axis=1)
    solution, *_ = np.linalg.lstsq(design, target, rcond=None)
    return solution.T


def _normalised(points: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Pixel positions (x, y) → grid_sample's [-1, 1] coordinates."""
    scale = torch.tensor([2.0 / width, 2.0 / height], dtype=points.dtype)
    return (points + 0.5) * scale - 1


def _apply(affine: np.ndarray, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    a = torch.as_tensor(affine, dtype=torch.float32)
    return torch.stack([a[0, 0] * xs + a[0, 1] * ys + a[0, 2], a[1, 0] * xs + a[1, 1] * ys + a[1, 2]], dim=-1)


def template_to_face(template_points: np.ndarray, face_points: np.ndarray) -> np.ndarray:
    """The affine map from the mean face's 64-px frame to a face's frame, fitted on the anchors."""
    return fit_affine(np.asarray(template_points, np.float64), np.asarray(face_points, np.float64))


def to_template(images: torch.Tensor, affines: list[np.ndarray], box: tuple[int, int, int, int],
                frame: int = 64) -> torch.Tensor:
    """``(N, C, h, w)``: each face of ``images`` ``(N, C, H, W)`` read at the template's pixels.

    ``affines[i]`` maps the mean face's ``frame``-px frame to face ``i``'s 64-px frame; a face at
    another size is read at the same place, scaled."""
    x0, y0, x1, y1 = box
    height, width = images.shape[-2:]
    ys, xs = torch.meshgrid(torch.arange(y0, y1, dtype=torch.float32), torch.arange(x0, x1, dtype=torch.float32),
                            indexing="ij")
    grids = []
    for affine in affines:
        at = _apply(affine, xs, ys)  # in the face's 64-px frame
        at = (at + 0.5) * torch.tensor([width / frame, height / frame]) - 0.5
        grids.append(_normalised(at, height, width))
    return F.grid_sample(images, torch.stack(grids).to(images.dtype), mode="bilinear", padding_mode="border",
                         align_corners=False)


def coverage(box: tuple[int, int, int, int]) -> torch.Tensor:
    """``(1, 1, h, w)``: 1 inside the template, fading to 0 over its outer :data:`FEATHER` pixels."""
    x0, y0, x1, y1 = box
    h, w = y1 - y0, x1 - x0
    ys = torch.arange(h, dtype=torch.float32)[:, None]
    xs = torch.arange(w, dtype=torch.float32)[None, :]
    inside = torch.minimum(torch.minimum(ys + 0.5, h - 0.5 - ys), torch.minimum(xs + 0.5, w - 0.5 - xs))
    return (inside / FEATHER).clamp(0, 1)[None, None]


def from_template(textures: torch.Tensor, affines: list[np.ndarray], box: tuple[int, int, int, int],
                  size: tuple[int, int], frame: int = 64) -> torch.Tensor:
    """``(N, C, H, W)``: template textures ``(N, C, h, w)`` put back on each face's frame of
    ``size`` (zero outside the template; multiply by :func:`coverage` put back the same way for a
    soft edge)."""
    x0, y0, x1, y1 = box
    height, width = size
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32),
                            indexing="ij")
    # the face's pixels in its 64-px frame, then in the mean face's frame
    xs64 = (xs + 0.5) * frame / width - 0.5
    ys64 = (ys + 0.5) * frame / height - 0.5
    grids = []
    for affine in affines:
        full = np.vstack([affine, [0, 0, 1]])
        inverse = np.linalg.inv(full)[:2]
        at = _apply(inverse, xs64, ys64) - torch.tensor([float(x0), float(y0)])
        grids.append(_normalised(at, y1 - y0, x1 - x0))
    return F.grid_sample(textures, torch.stack(grids).to(textures.dtype), mode="bilinear", padding_mode="zeros",
                         align_corners=False)
