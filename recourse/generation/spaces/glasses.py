"""Glasses put on a face: a model of frames drawn on the face's own landmarks, steered by each model.

No space of the eye region draws glasses a person believes: the mean of real glasses' 64-px
eye regions, and every direction towards it, is a dark band. Frames are thin, hard-edged
objects, so they are drawn: two rounded lenses (superellipses) on the eyes, a bridge over the
nose, the temples to the sides of the face, placed, sized and turned by the landmarks. Four
numbers are left to the model: the frame's thickness, the lenses' size, the frame's darkness
and the lenses' tint, each within the range real glasses show (set by eye on train faces with
glasses, no test face), with a prior about a typical pair (thin dark frames, clear lenses).

Every model steers its own four numbers by its gradient through the drawing at model size;
the display picture draws the same frames again at the photo's resolution
(:func:`display_glasses`), so its edges are as sharp as the photo's, not an enlarged blur.
A black-and-white photo stays so: the frames are neutral and the tint only darkens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

PARAMETERS = ("thickness", "size", "darkness", "tint")
# (low, high) of each, and a typical pair's values; thickness in 64-px frame pixels
RANGES = torch.tensor([[0.45, 1.6], [0.9, 1.2], [0.55, 0.97], [0.0, 0.4]])
TYPICAL = torch.tensor([0.8, 1.0, 0.9, 0.06])
LENS_WIDTH, LENS_HEIGHT, LENS_DROP = 0.34, 0.26, 0.06  # of the eye distance
EXPONENT = 3.0  # the lenses' superellipse: between an ellipse (2) and a rectangle
EDGE = 0.35  # the drawn edge's half width, pixels of the frame it is drawn in
PRIOR_WEIGHT = 0.5
EARLY_STOP = 3


def to_unit(values: torch.Tensor) -> torch.Tensor:
    """Parameter values ``(..., 4)`` → unconstrained ``(..., 4)`` (the inverse of :func:`from_unit`)."""
    share = ((values - RANGES[:, 0]) / (RANGES[:, 1] - RANGES[:, 0])).clamp(1e-4, 1 - 1e-4)
    return torch.log(share / (1 - share))


def from_unit(unconstrained: torch.Tensor) -> torch.Tensor:
    return RANGES[:, 0] + (RANGES[:, 1] - RANGES[:, 0]) * torch.sigmoid(unconstrained)


@dataclass(frozen=True)
class Placement:
    """Where a pair sits on one face, in that face's pixels: each lens's centre, the axis from
    the left eye to the right ``along`` and its normal ``down``, the eye distance, and the sides
    of the face the temples run to."""

    centres: tuple[np.ndarray, np.ndarray]
    along: np.ndarray
    down: np.ndarray
    eye_distance: float
    sides: tuple[np.ndarray, np.ndarray]

    @classmethod
    def of(cls, points: np.ndarray) -> "Placement":
        points = np.asarray(points, np.float64)
        left, right = points[36:42].mean(0), points[42:48].mean(0)
        distance = float(np.linalg.norm(right - left))
        along = (right - left) / max(distance, 1e-6)
        down = np.array([-along[1], along[0]])
        drop = LENS_DROP * distance * down
        return cls((left + drop, right + drop), along, down, distance, (points[0], points[16]))

    def scaled(self, factor: float) -> "Placement":
        """The same placement in a frame ``factor`` times as large (pixel centres at integers)."""
        at = lambda p: (p + 0.5) * factor - 0.5  # noqa: E731
        return Placement(tuple(at(c) for c in self.centres), self.along, self.down, self.eye_distance * factor,
                         tuple(at(s) for s in self.sides))


def _segment_distance(grid: torch.Tensor, start: np.ndarray, end: np.ndarray) -> torch.Tensor:
    a, b = torch.tensor(start, dtype=grid.dtype), torch.tensor(end, dtype=grid.dtype)
    direction = b - a
    t = (((grid - a) @ direction) / max(float(direction @ direction), 1e-6)).clamp(0, 1)
    return (grid - (a + t[..., None] * direction)).norm(dim=-1)


def coverage(placement: Placement, values: torch.Tensor, height: int, width: int, scale: float = 1.0
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(frame, lens)`` ``(H, W)``: how much of each pixel the frames cover, and the lenses'
    inside, for parameter values ``(4,)``; ``scale`` the frame's size over the 64-px frame's
    (thickness is in 64-px pixels)."""
    thickness, size = values[0] * scale, values[1]
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32),
                            indexing="ij")
    grid = torch.stack([xs, ys], dim=-1)
    along = torch.tensor(placement.along, dtype=torch.float32)
    down = torch.tensor(placement.down, dtype=torch.float32)
    half_w = LENS_WIDTH * placement.eye_distance * size
    half_h = LENS_HEIGHT * placement.eye_distance * size
    radius = (half_w + half_h) / 2
    frame = torch.zeros(height, width)
    lens = torch.zeros(height, width)
    for centre in placement.centres:
        offset = grid - torch.tensor(centre, dtype=torch.float32)
        u, v = offset @ along / half_w, offset @ down / half_h
        level = (u.abs().clamp_min(1e-6) ** EXPONENT + v.abs().clamp_min(1e-6) ** EXPONENT) ** (1 / EXPONENT)
        distance = (level - 1).abs() * radius
        frame = torch.maximum(frame, torch.sigmoid((thickness / 2 - distance) / EDGE))
        lens = torch.maximum(lens, torch.sigmoid((1 - level) * radius / EDGE))
    left, right = placement.centres
    w, h = float(half_w.detach()), float(half_h.detach())
    bridge_left = left + placement.along * w * 0.97 - placement.down * h * 0.3
    bridge_right = right - placement.along * w * 0.97 - placement.down * h * 0.3
    bridge = _segment_distance(grid, bridge_left, bridge_right)
    frame = torch.maximum(frame, torch.sigmoid((thickness / 2 - bridge) / EDGE))
    for centre, side, sign in ((left, placement.sides[0], -1), (right, placement.sides[1], 1)):
        hinge = centre + sign * placement.along * w - placement.down * h * 0.45
        end = np.array([side[0], hinge[1] + 0.05 * placement.eye_distance])
        temple = _segment_distance(grid, hinge, end)
        frame = torch.maximum(frame, torch.sigmoid((0.8 * thickness / 2 - temple) / EDGE))
    return frame, lens * (1 - frame)


def draw(image: torch.Tensor, placement: Placement, values: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``image`` ``(1, 3, H, W)`` wearing the pair ``values`` ``(4,)``."""
    frame, lens = coverage(placement, values, *image.shape[-2:], scale=scale)
    darkness, tint = values[2], values[3]
    colour = (1 - darkness) * torch.ones(3, 1, 1) * 0.6  # a neutral frame, black at darkness 1
    worn = image * (1 - tint * lens)
    return worn * (1 - frame) + colour * frame


def steer_glasses(image: torch.Tensor, placement: Placement, model: nn.Module, index: int, config,
                  scale: float = 1.0) -> torch.Tensor:
    """The values ``(4,)`` that ``model`` steers the pair on ``image`` to, aiming its logit at
    ``margin + overshoot`` while keeping its view of the other attributes."""
    others = torch.ones(40, dtype=torch.bool)
    others[index] = False
    with torch.no_grad():
        before = torch.sigmoid(model(image))[:, others]
    typical = to_unit(TYPICAL)
    unconstrained = typical.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([unconstrained], lr=config.space_learning_rate)
    aim = config.margin + config.overshoot
    past = 0
    for _ in range(config.space_steps):
        logits = model(draw(image, placement, from_unit(unconstrained), scale))
        reach = logits[:, index]
        past = past + 1 if bool((reach >= aim).all()) else 0
        if past >= EARLY_STOP:
            break
        loss = (F.softplus(aim - reach)
                + config.preserve_weight * F.binary_cross_entropy_with_logits(logits[:, others], before)
                + PRIOR_WEIGHT * 0.5 * ((unconstrained - typical) ** 2).sum())
        (unconstrained.grad,) = torch.autograd.grad(loss.sum(), unconstrained)
        optimizer.step()
    return from_unit(unconstrained.detach())


def glasses_edit(image: torch.Tensor, model: nn.Module, index: int, config, points: np.ndarray) -> torch.Tensor:
    """The whole edit ``(1, 3, H, W)``: the pair ``model`` steers to, drawn on ``image``."""
    placement = Placement.of(points)
    scale = image.shape[-1] / 64
    values = steer_glasses(image, placement, model, index, config, scale)
    with torch.no_grad():
        return draw(image, placement, values, scale).clamp(0, 1)


def read_back(x: torch.Tensor, counterfactual: torch.Tensor, points: np.ndarray, steps: int = 60
              ) -> tuple[float, torch.Tensor]:
    """``(share, values)``: the pair and the share of the straight path from ``x`` to it that
    ``counterfactual`` (both ``(3, h, w)``) shows, fitted by least squares at model size."""
    placement = Placement.of(points)
    unconstrained = to_unit(TYPICAL).clone().requires_grad_(True)
    share = torch.tensor(2.0, requires_grad=True)  # sigmoid(2) ≈ 0.88
    optimizer = torch.optim.Adam([unconstrained, share], lr=0.1)
    for _ in range(steps):
        drawn = draw(x[None], placement, from_unit(unconstrained), x.shape[-1] / 64)[0]
        made = x + torch.sigmoid(share) * (drawn - x)
        loss = ((made - counterfactual) ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(torch.sigmoid(share.detach())), from_unit(unconstrained.detach())


def display_glasses(display: torch.Tensor, x: torch.Tensor, counterfactual: torch.Tensor,
                    points: np.ndarray) -> torch.Tensor:
    """The pair of ``x → counterfactual`` (model size, landmarks ``points`` in ``x``'s pixels)
    drawn again on the display crop ``display`` ``(3, S, S)``, as far along its path as the
    counterfactual is."""
    if float((counterfactual - x).abs().max()) < 1 / 255:
        return display.clone()
    share, values = read_back(x, counterfactual, points)
    factor = display.shape[-1] / x.shape[-1]
    placement = Placement.of(points).scaled(factor)
    with torch.no_grad():
        drawn = draw(display[None].float(), placement, values, display.shape[-1] / 64)[0]
    return (display + share * (drawn - display)).clamp(0, 1)


def glasses_counterfactuals(images: torch.Tensor, model: nn.Module, index: int, config,
                            decider: nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Counterfactuals ``(B, 3, H, W)`` that put glasses on, and the whole edits they stop on."""
    from recourse.generation.denoised import smallest_step
    from recourse.generation.regions import face_landmarks

    points, _ = face_landmarks(images)
    results, edits = [], []
    sign = torch.ones(1)
    for i in range(len(images)):
        image = images[i:i + 1].clone()
        edited = glasses_edit(image, model, index, config, points[i])
        results.append(smallest_step(image, edited, decider if decider is not None else model, index, sign,
                                     config.margin))
        edits.append(edited)
    return torch.cat(results), torch.cat(edits)
