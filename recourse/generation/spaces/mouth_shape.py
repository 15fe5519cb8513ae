"""Mouths moved, not repainted: a learned space of mouth shapes and a warp of the face's own pixels.

A smile or an open mouth is a shape: corners raised, lips apart. Painted in a texture space at
the model's 64 px, a smile taken away came out as a blurred smear over the lower face (blind
raters, set 4). Here the edit moves the photo's own lips instead, so teeth, skin, grain and
colour stay the photo's (a black-and-white photo stays so) and the display crop is warped the
same way at its own resolution, as sharp as the photo.

The space: the 20 mouth landmarks (iBUG 48–67) of train faces, each put in the mean face's
frame by the affine map fitted on the nose, eye corners and upper jaw, measured from the nose's
tip (the upper lip hangs from it; a mouth that opens moves its lower lip) and made left-right
symmetric before a PCA (a face's own asymmetry stays its own): the first :attr:`components`
whitened modes. Each model steers those modes (the space's prior and box, as every space) and,
where a mouth is taken away (a smile, an open mouth), it closes by the share of its inner gap that
leaves the target class's median gap (:attr:`closed_gaps`, measured on the same faces), or whole
where it shows teeth (:func:`teeth_mask`). Each mode moves toward the target class's mean mouth
and no further; a model the move does not convince gets the rest as shading
(``recourse.generation.spaces.steer.shaded_counterfactuals``).

The warp: a displacement field of Wendland radial functions through the moved mouth points and
fixed points (the nostrils and a ring around the mouth), regularised so that it stays smooth
and cannot fold, then the inner mouth closing by ``c``: the band between the lips squeezes and
the lips and the skin beside them stretch over it (teeth behind lips that close leave no trace).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config
from torch import nn

from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.coefficients import steer_coefficients
from recourse.generation.spaces.warp import fit_affine

MOUTH = tuple(range(48, 68))
ANCHORS = (2, 3, 4, 12, 13, 14, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 39, 42, 45)
NOSE_TIP, NOSTRILS = 33, (31, 32, 33, 34, 35)
# each mouth landmark's mirror image, as offsets into MOUTH (48↔54, 49↔53, ..., 60↔64, 61↔63, 65↔67)
MIRROR = (6, 5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 16, 15, 14, 13, 12, 19, 18, 17)
UPPER_INNER, LOWER_INNER = (60, 61, 62, 63, 64), (60, 67, 66, 65, 64)
RING_POINTS = 16
CORNER_RAMP = 0.15  # the share of the inner mouth's width at each corner over which its closing fades out
RING = (1.2, 0.85)  # the fixed ring's half axes around the mouth's centre, in eye distances


def eye_distance(points: np.ndarray) -> float:
    return float(np.linalg.norm(points[36:42].mean(0) - points[42:48].mean(0)))


def normalised_shape(points: np.ndarray) -> np.ndarray:
    """``(20, 2)``: a face's mouth in the mean face's frame, measured from the nose's tip."""
    affine = fit_affine(np.asarray(points, np.float64)[list(ANCHORS)], MEAN_LANDMARKS_64[list(ANCHORS)])
    moved = np.asarray(points, np.float64) @ affine[:, :2].T + affine[:, 2]
    return moved[list(MOUTH)] - moved[NOSE_TIP]


def symmetric(shape: np.ndarray) -> np.ndarray:
    """The mean of a normalised mouth ``(20, 2)`` and its mirror image."""
    return (shape + shape[list(MIRROR)] * np.array([-1.0, 1.0])) / 2


def inner_gap(points: np.ndarray) -> float:
    """The mean gap between the inner lips over the mouth's width."""
    points = np.asarray(points, np.float64)
    gap = np.abs(points[[67, 66, 65], 1] - points[[61, 62, 63], 1]).mean()
    return float(gap / max(np.linalg.norm(points[54] - points[48]), 1e-6))


class MouthShapeSpace(ModelMixin, ConfigMixin):
    """The mouth's shape space (see the module's doc), saved and loaded the diffusers way."""

    config_name = "config.json"

    @register_to_config
    def __init__(self, components: int = 4, faces: int = 0, radius: float = 0.8, smoothing: float = 0.3,
                 band: float = 0.35, prior_weight: float = 0.2, box: float = 3.0, closed_gaps: dict | None = None,
                 attributes: tuple[str, ...] = ("Smiling", "Mouth_Slightly_Open")) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(2 * len(MOUTH)))
        self.register_buffer("basis", torch.zeros(components, 2 * len(MOUTH)))
        self.register_buffer("scales", torch.ones(components))
        # each attribute's mean coefficients where it is absent (row 0) and present (row 1)
        self.register_buffer("class_means", torch.zeros(len(attributes), 2, components))

    def encode(self, shape: np.ndarray) -> torch.Tensor:
        """Whitened coefficients ``(1, K)`` of a normalised mouth ``(20, 2)``."""
        flat = torch.as_tensor(shape, dtype=torch.float32).reshape(1, -1)
        return (flat - self.mean.float()) @ self.basis.float().T / self.scales.float()

    def change(self, dz: torch.Tensor) -> torch.Tensor:
        """``(B, 20, 2)``: the normalised mouth's change that coefficient changes ``dz`` ``(B, K)`` make."""
        return ((dz * self.scales.float()) @ self.basis.float()).view(len(dz), len(MOUTH), 2)

    def class_mean(self, attribute: str, present: int) -> torch.Tensor:
        """``(K,)``: the mean coefficients of train mouths with (1) or without (0) ``attribute``."""
        return self.class_means[list(self.config.attributes).index(attribute), present].float()

    def closed_gap(self, attribute: str) -> float | None:
        gaps = self.config.closed_gaps or {}
        return gaps.get(attribute)


@dataclass(frozen=True)
class MouthPlacement:
    """One face's mouth: its landmarks ``(68, 2)`` in its 64-px frame, its coefficients ``(1, K)``,
    the linear map from the mean frame to the face's, its eye distance and the share of its inner
    gap that closes (0 where the mouth does not close)."""

    points: np.ndarray
    codes: torch.Tensor
    to_face: torch.Tensor
    eye: float
    closing: float
    inner: np.ndarray | None = None  # the landmarks with the inner lips on the teeth's edges, where they close

    @property
    def lips(self) -> np.ndarray:
        """The landmarks the closing reads the inner lips from."""
        return self.points if self.inner is None else self.inner


# A tooth is a pixel inside the outer lips lighter than the lips' median by this much (luminance)
# and, on a colour face, less saturated than this share of the lips' median saturation
TEETH_LIGHTER = 0.08
TEETH_GREYER = 0.6


def teeth_mask(image: torch.Tensor, points: np.ndarray) -> np.ndarray:
    """``(H, W)`` bool: the teeth a face ``(3, H, W)`` shows between its lips (``points``, its
    landmarks in its 64-px frame)."""
    from PIL import Image, ImageDraw

    from recourse.generation.spaces.colour import colour_mode, rgb_to_ycbcr

    height, width = image.shape[-2:]
    outer = np.asarray(points, np.float64)[48:60] * width / 64
    drawn = Image.new("1", (width, height))
    ImageDraw.Draw(drawn).polygon([tuple(point) for point in outer], fill=1)
    inside = np.asarray(drawn, bool)
    if inside.sum() < 4:
        return np.zeros((height, width), bool)
    ycbcr = rgb_to_ycbcr(image.detach().float()).numpy()
    luminance, saturation = ycbcr[0], np.hypot(ycbcr[1] - 0.5, ycbcr[2] - 0.5)
    teeth = inside & (luminance > np.median(luminance[inside]) + TEETH_LIGHTER)
    if not colour_mode(image).monochrome:
        teeth &= saturation < TEETH_GREYER * np.median(saturation[inside]) + 0.01
    return teeth


def lips_over_teeth(image: torch.Tensor, points: np.ndarray, teeth: np.ndarray | None = None) -> np.ndarray:
    """``points`` with each inner lip landmark moved out to the edge of the teeth its column shows
    (dlib puts the inner lips on the teeth of a broad smile, and a mouth closed between those
    points keeps a band of teeth: a grimace; blind sets 5, 6 and 8). ``teeth``: the face's
    :func:`teeth_mask`, where it is already read."""
    points = np.asarray(points, np.float64).copy()
    teeth = teeth_mask(image, points) if teeth is None else teeth
    if not teeth.any():
        return points
    scale = image.shape[-1] / 64
    for upper_index, lower_index in ((61, 67), (62, 66), (63, 65)):
        column = int(np.clip(round(points[upper_index, 0] * scale - 0.5), 1, teeth.shape[1] - 2))
        shown = teeth[:, column - 1:column + 2].any(axis=1)
        top, bottom = points[upper_index, 1] * scale, points[lower_index, 1] * scale
        # only the run of teeth that reaches into the gap between the lips: a highlight on a lip,
        # apart from it, is no tooth (on a black-and-white face light is all there is to go by)
        start = int(np.clip(np.floor(top), 0, len(shown) - 1))
        stop = int(np.clip(np.ceil(bottom), start, len(shown) - 1))
        inside = np.nonzero(shown[start:stop + 1])[0]
        if not len(inside):
            continue
        first, last = start + inside[0], start + inside[-1]
        while first > 0 and shown[first - 1]:
            first -= 1
        while last < len(shown) - 1 and shown[last + 1]:
            last += 1
        points[upper_index, 1] = min(points[upper_index, 1], first / scale)
        points[lower_index, 1] = max(points[lower_index, 1], (last + 1) / scale)
    return points


def place_mouth(space: MouthShapeSpace, points: np.ndarray, attribute: str | None = None,
                closes: bool = False, image: torch.Tensor | None = None) -> MouthPlacement:
    """``closes``: the mouth closes to ``attribute``'s closed gap (:meth:`MouthShapeSpace.closed_gap`),
    the target class's typical mouth: at 64 px the teeth are a pixel's line that no model's
    gradient reads, so the closing is the data's, the shape the model's. ``image`` ``(3, H, W)``:
    the face, whose teeth the closing covers whole (:func:`lips_over_teeth`)."""
    points = np.asarray(points, np.float64)
    affine = fit_affine(MEAN_LANDMARKS_64[list(ANCHORS)], points[list(ANCHORS)])
    closing, inner = 0.0, None
    target = space.closed_gap(attribute) if closes and attribute else None
    if target is not None:
        teeth = teeth_mask(image, points) if image is not None else None
        inner = lips_over_teeth(image, points, teeth) if teeth is not None else points
        own = inner_gap(inner)
        closing = float(np.clip(1 - target / own, 0.0, 1.0)) if own > 0 else 0.0
        if teeth is not None and teeth.any():
            # the target class's gap is a dark seam between lips; teeth squeezed into it are a white line
            closing = 1.0
    return MouthPlacement(points, space.encode(normalised_shape(points)),
                          torch.tensor(affine[:, :2], dtype=torch.float32), eye_distance(points), closing, inner)


def _wendland(r: torch.Tensor) -> torch.Tensor:
    r = r.clamp(0, 1)
    return (1 - r) ** 4 * (4 * r + 1)


def _smoothstep(t: torch.Tensor) -> torch.Tensor:
    t = t.clamp(0, 1)
    return t * t * (3 - 2 * t)


def _through(xq: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """The polyline through ``(xs, ys)`` (xs ascending) read at ``xq``, flat beyond its ends."""
    xq = xq.clamp(xs[0], xs[-1])
    at = torch.searchsorted(xs.contiguous(), xq.contiguous()).clamp(1, len(xs) - 1)
    x0, x1, y0, y1 = xs[at - 1], xs[at], ys[at - 1], ys[at]
    return y0 + ((xq - x0) / (x1 - x0).clamp_min(1e-6)).clamp(0, 1) * (y1 - y0)


def closing_rows(ys: torch.Tensor, xs: torch.Tensor, points: torch.Tensor, closing: float | torch.Tensor,
                 band: float) -> torch.Tensor:
    """The source row of each output pixel (``ys``, ``xs``: ``(H, W)``) when the inner mouth
    closes by ``closing`` (0: as it is, 1: shut): within the mouth's width, the gap between
    the inner lips shrinks and ``band`` pixels each side of it (the lips and the skin beyond)
    stretch over it; the field fades out toward the corners and is the identity elsewhere."""
    upper, lower = points[list(UPPER_INNER)], points[list(LOWER_INNER)]
    upper, lower = upper[upper[:, 0].argsort()], lower[lower[:, 0].argsort()]
    top, bottom = _through(xs, upper[:, 0], upper[:, 1]), _through(xs, lower[:, 0], lower[:, 1])
    middle, half = (top + bottom) / 2, ((bottom - top) / 2).clamp_min(0)
    left, right = points[60, 0], points[64, 0]
    across = ((xs - left) / (right - left).clamp_min(1e-3))
    # whole across the mouth but its last :data:`CORNER_RAMP` each side (a taper whole only at the
    # middle left the teeth of a broad smile showing at both sides: a clenched grimace)
    taper = _smoothstep(across / CORNER_RAMP) * _smoothstep((1 - across) / CORNER_RAMP)
    new_half = half * (1 - closing * taper)
    offset = ys - middle
    distance = offset.abs()
    edge = half + band  # where the stretched band ends, unmoved
    inside = distance * half / new_half.clamp_min(1e-4)
    stretched = half + (distance - new_half) * band / (edge - new_half).clamp_min(1e-4)
    source = torch.where(distance <= new_half, inside, torch.where(distance < edge, stretched, distance))
    return middle + torch.where(offset < 0, -source, source)


def warp_mouth(space: MouthShapeSpace, image: torch.Tensor, placement: MouthPlacement, dz: torch.Tensor,
               share: float = 1.0) -> torch.Tensor:
    """``image`` ``(1, 3, H, W)`` (any size: the placement's 64-px frame scaled to it) with its mouth
    moved by ``share`` of the coefficient change ``dz`` ``(1, K)`` and closed by the placement's
    share of its gap (whole: the target class's mouth)."""
    height, width = image.shape[-2:]
    scale = width / 64
    moved = space.change(share * dz)[0] @ placement.to_face.T  # the mouth's change in the face's frame
    own = torch.as_tensor(placement.points, dtype=torch.float32)
    eye = placement.eye
    centre = own[list(MOUTH)].mean(0)
    angles = torch.linspace(0, 2 * np.pi, RING_POINTS + 1)[:-1]
    ring = centre + torch.stack([torch.cos(angles) * RING[0] * eye, torch.sin(angles) * RING[1] * eye], 1)
    fixed = torch.cat([own[list(NOSTRILS)], ring])
    targets = torch.cat([own[list(MOUTH)] + moved, fixed]) * scale
    sources = torch.cat([own[list(MOUTH)], fixed]) * scale
    radius = space.config.radius * eye * scale
    system = _wendland(torch.cdist(targets, targets) / radius) + space.config.smoothing * torch.eye(len(targets))
    weights = torch.linalg.solve(system, sources - targets)
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32),
                            indexing="ij")
    pixels = torch.stack([xs, ys], -1).view(-1, 2)
    at = pixels + _wendland(torch.cdist(pixels, targets) / radius) @ weights
    if placement.closing > 0:
        lips = torch.as_tensor(placement.lips, dtype=torch.float32)
        rows = closing_rows(at[:, 1].view(height, width), at[:, 0].view(height, width), lips * scale,
                            placement.closing, space.config.band * eye * scale)
        at = torch.stack([at[:, 0], rows.reshape(-1)], -1)
    grid = ((at + 0.5) / torch.tensor([width, height], dtype=torch.float32) * 2 - 1).view(1, height, width, 2)
    return F.grid_sample(image, grid.to(image.dtype), mode="bilinear", padding_mode="border", align_corners=False)


def steer_mouths(space: MouthShapeSpace, images: torch.Tensor, placements: list[MouthPlacement], model: nn.Module,
                 index: int, sign: torch.Tensor, config, box: float | None = None,
                 prior_weight: float | None = None) -> torch.Tensor:
    """The coefficient changes ``(B, K)`` that ``model`` steers each face's mouth by, the faces
    together and each as if alone (:func:`steer_coefficients`): the prior about the target
    class's mean mouth, with the space's own weight (a few shape modes need less holding than a
    texture's 64; chosen by eye on 8 public-domain photos: the texture spaces' 3.0 left mouths
    unmoved, 0.2 about the mean mouth let models widen a smile into a grimace)."""
    from recourse.data import ATTRIBUTES

    attribute = ATTRIBUTES[index]
    codes = torch.cat([placement.codes for placement in placements])
    limits = None
    centre: torch.Tensor | float = 0.0
    if attribute in space.config.attributes:
        centre = torch.stack([space.class_mean(attribute, int(side > 0)) for side in sign])
        # each mode moves toward the target class's typical mouth and no further: past it, models
        # took smiles away into frowns and grimaces and added them too wide (blind sets 5 and 8);
        # what more a model needs, the mouth's shading gives (``methods.MOVED_MOUTH_REACH``)
        toward = centre - codes
        limits = (torch.minimum(toward, torch.zeros_like(toward)), torch.maximum(toward, torch.zeros_like(toward)))

    def draw(dz: torch.Tensor) -> torch.Tensor:
        return torch.cat([warp_mouth(space, images[i:i + 1], placement, dz[i:i + 1])
                          for i, placement in enumerate(placements)])

    # box, prior_weight: the space's own unless given (scripts/measurements/mouth_reach.py tries others)
    held = replace(config, space_box=min(config.space_box, space.config.box) if box is None else box)
    prior = space.config.prior_weight if prior_weight is None else prior_weight
    return steer_coefficients(codes, draw, model, index, sign, held, centre, prior, limits=limits)


def mouth_edits(space: MouthShapeSpace, images: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor,
                config, points: np.ndarray, attribute: str) -> torch.Tensor:
    """The whole edits ``(B, 3, H, W)``: each face's own mouth moved where ``model`` steers it
    (and closed, where the attribute is taken away)."""
    placements = [place_mouth(space, points[i], attribute, closes=bool(sign[i] < 0), image=images[i])
                  for i in range(len(images))]
    dz = steer_mouths(space, images, placements, model, index, sign, config)
    with torch.no_grad():
        return torch.cat([warp_mouth(space, images[i:i + 1], placement, dz[i:i + 1])
                          for i, placement in enumerate(placements)]).clamp(0, 1)


LIGHT_WEIGHT = 0.05  # of the luminance in :func:`read_back`'s fit on a colour face, against 1 for its colour


def read_back(space: MouthShapeSpace, x: torch.Tensor, counterfactual: torch.Tensor, placement: MouthPlacement,
              steps: int = 60) -> tuple[torch.Tensor, float, torch.Tensor]:
    """``(dz, share, left)``: the change and the share of the straight path ``x + s(warp − x)``
    that best draw ``counterfactual`` from ``x`` (both ``(3, h, w)``, model size), fitted by least
    squares, and what the fit leaves of the pair's difference ``(3, h, w)``. On a colour face the
    fit reads the move from the colour (Cb, Cr) and gives light :data:`LIGHT_WEIGHT`: a mouth whose
    move did not convince its model is also shaded (light only), and a move fitted to that shading
    opened the lips over teeth the edit had closed."""
    from recourse.generation.spaces.colour import colour_mode, rgb_to_ycbcr

    weights = torch.tensor([1.0 if colour_mode(x).monochrome else LIGHT_WEIGHT, 1.0, 1.0])[:, None, None]
    dz = torch.zeros_like(placement.codes, requires_grad=True)
    share = torch.tensor(2.0, requires_grad=True)  # sigmoid(2) ≈ 0.88
    optimizer = torch.optim.Adam([dz, share], lr=0.1)
    for _ in range(steps):
        warped = warp_mouth(space, x[None], placement, dz)[0]
        miss = rgb_to_ycbcr(x + torch.sigmoid(share) * (warped - x)) - rgb_to_ycbcr(counterfactual)
        loss = (weights * miss ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        warped = warp_mouth(space, x[None], placement, dz)[0]
        left = counterfactual - (x + torch.sigmoid(share) * (warped - x))
    return dz.detach(), float(torch.sigmoid(share.detach())), left


# Past this share of the pair's difference left unexplained in colour, the edit was not a moved
# mouth: a moved mouth's shading (``recourse.generation.methods.MOVED_MOUTH_REACH``) changes light only
UNEXPLAINED = 0.25


def unexplained_colour(left: torch.Tensor, difference: torch.Tensor) -> float:
    """The share of a pair's difference ``(3, h, w)`` that the read-back leaves and that is not a
    change of light: ``left`` less the grey change of its own luminance, over the difference."""
    from recourse.generation.spaces.colour import RGB_TO_YCBCR

    light = torch.einsum("j,jhw->hw", RGB_TO_YCBCR[0].to(left.dtype), left)
    return float(((left - light) ** 2).sum()) / max(float((difference ** 2).sum()), 1e-12)


def display_mouth(space: MouthShapeSpace, display: torch.Tensor, x: torch.Tensor, counterfactual: torch.Tensor,
                  points: np.ndarray, attribute: str, closes: bool) -> torch.Tensor | None:
    """The display crop ``(3, S, S)`` with its own mouth moved as the model-size pair shows it: the
    change read back at model size and the share of it the picture shows, put on the crop at its
    own landmarks (found on the crop: a 64-px frame's landmarks miss a mouth's inner lips by a
    pixel, a tenth of its teeth), and a mouth taken away closed whole (at 64 px its teeth are a
    line a cross-fade half keeps; in the crop, half-closed teeth are a grimace). What the move
    leaves of the pair, the shading a mouth that did not convince its model got, is added
    enlarged: it is light and shade, smooth at any size. None where the pair is not a moved mouth
    (its colour is not a warp's)."""
    from recourse.generation.regions import face_landmarks

    if bool(torch.equal(counterfactual, x)):
        return display.clone()
    dz, share, left = read_back(space, x, counterfactual, place_mouth(space, points, attribute, closes, x))
    if unexplained_colour(left, counterfactual - x) > UNEXPLAINED:
        return None
    found, ok = face_landmarks(display[None])
    crop_points = found[0] * 64 / display.shape[-1] if bool(ok[0]) else points
    size = display.shape[-1]
    with torch.no_grad():
        moved = warp_mouth(space, display[None], place_mouth(space, crop_points, attribute, closes, display), dz,
                           share)[0]
        # the shading is smooth; what is sharp in ``left`` is the fit's miss at the lips' edges,
        # which the crop's own warp draws
        smooth = left[None]
        for _ in range(2):
            smooth = F.avg_pool2d(smooth, 3, stride=1, padding=1, count_include_pad=False)
        shading = F.interpolate(smooth, size=(size, size), mode="bilinear", align_corners=False)[0]
    return moved + shading


def fit_mouth_shape(points: np.ndarray, found: np.ndarray, labels: np.ndarray,
                    attributes: tuple[str, ...] = ("Smiling", "Mouth_Slightly_Open"),
                    components: int = 4) -> MouthShapeSpace:
    """The space from train faces' landmarks ``(N, 68, 2)`` (64-px frames), ``found`` ``(N,)`` and
    their 0/1 labels ``(N, 40)``; each attribute's closed gap is its median inner gap where it is absent."""
    from recourse.data import attribute_index

    usable = np.asarray(found, bool)
    shapes = np.stack([symmetric(normalised_shape(p)).ravel() for p in points[usable]])
    mean = shapes.mean(0)
    _, singular, rows = np.linalg.svd(shapes - mean, full_matrices=False)
    scales = singular[:components] / np.sqrt(len(shapes) - 1)
    gaps = np.array([inner_gap(p) for p in points[usable]])
    absent = {name: np.asarray(labels)[usable, attribute_index(name)] == 0 for name in attributes}
    closed = {name: round(float(np.median(gaps[where])), 4) for name, where in absent.items()}
    codes = (np.stack([normalised_shape(p).ravel() for p in points[usable]]) - mean) @ rows[:components].T / scales
    space = MouthShapeSpace(components=components, faces=int(usable.sum()), closed_gaps=closed,
                            attributes=tuple(attributes))
    space.mean.copy_(torch.tensor(mean, dtype=torch.float32))
    space.basis.copy_(torch.tensor(rows[:components], dtype=torch.float32))
    space.scales.copy_(torch.tensor(scales, dtype=torch.float32))
    for row, name in enumerate(attributes):
        for present, where in enumerate((absent[name], ~absent[name])):
            space.class_means[row, present] = torch.tensor(codes[where].mean(0), dtype=torch.float32)
    return space.eval()
