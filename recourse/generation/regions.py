"""Where an attribute's edit may go: a soft mask of the face region its group lives in.

Each of the 40 CelebA attributes belongs to one group (:data:`REGIONS`): the mouth, the eyes
and brows, the nose, the cheeks, the lower face (beards), the hair (above the brows and
outside the face), the ears (earrings), the neck (necklaces, neckties) or the whole face.
Each group's shape is defined once, in :data:`GROUPS`: a union of convex hulls of points
taken from dlib's 68 face landmarks (0-based iBUG 300-W layout: jaw 0–16, brows 17–26, nose
27–35, eyes 36–47, mouth 48–67), grown by a share of the face's eye distance, its edge a
smooth ramp a few pixels wide (so that an edit fades out and leaves no seam), or the frame
outside such a hull (the hair).

Landmarks are fitted as the dlib instruments fit them (:func:`recourse.instruments.age_gender.
face_shapes`: the frame upsampled to 256 px, dlib's detector, the fixed CelebA-HQ face box on
weak evidence). Where no face is found, the aligned framing's mean landmarks
(:data:`MEAN_LANDMARKS_64`) stand in, and :class:`RegionMask` says so (``found``). The fits
are cached by the frame's bytes, so that the two models of an audit, which edit the same
face, fit it once.

:func:`adaptive_mask` further cuts a region to the share of its pixels where a model's own
input gradient is largest (MaskDiME's adaptive mask). The region is the face's; the edit,
and the gradient that cuts it, stay each model's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from recourse.bounded_cache import BoundedCache
from recourse.data import ATTRIBUTES
from recourse.instruments.dlib_faces import UPSAMPLED  # the side of the frames the landmarks are fitted on
from recourse.validation import check_float

PARTS = 68
FRAME = 64  # the side the edge widths below are given for; they scale with the frame

# --- which region each attribute is edited in -------------------------------------------------

REGIONS: dict[str, str] = {
    # the mouth and lips
    "Big_Lips": "mouth", "Mouth_Slightly_Open": "mouth", "Smiling": "mouth", "Wearing_Lipstick": "mouth",
    # the eyes and brows, temple to temple (eyeglass frames), brows to the cheek tops
    "Arched_Eyebrows": "eyes", "Bags_Under_Eyes": "eyes", "Bushy_Eyebrows": "eyes", "Eyeglasses": "eyes",
    "Narrow_Eyes": "eyes",
    "Big_Nose": "nose", "Pointy_Nose": "nose",
    # the mid-face band between the eyes and the mouth corners, jaw to jaw
    "High_Cheekbones": "cheeks", "Rosy_Cheeks": "cheeks",
    # the jaw below the nose, grown past the jaw line
    "5_o_Clock_Shadow": "lower_face", "Double_Chin": "lower_face", "Goatee": "lower_face", "Mustache": "lower_face",
    "No_Beard": "lower_face", "Sideburns": "lower_face",
    # above the brows and outside the face (the neck below the chin excluded)
    "Bald": "hair", "Bangs": "hair", "Black_Hair": "hair", "Blond_Hair": "hair", "Brown_Hair": "hair",
    "Gray_Hair": "hair", "Receding_Hairline": "hair", "Straight_Hair": "hair", "Wavy_Hair": "hair",
    "Wearing_Hat": "hair",
    "Wearing_Earrings": "ears",
    "Wearing_Necklace": "neck", "Wearing_Necktie": "neck",
    # the face with its forehead, jaw to jaw, without the background
    "Attractive": "whole_face", "Blurry": "whole_face", "Chubby": "whole_face", "Heavy_Makeup": "whole_face",
    "Male": "whole_face", "Oval_Face": "whole_face", "Pale_Skin": "whole_face", "Young": "whole_face",
}


# --- each group's shape, in one place -------------------------------------------------------------


@dataclass(frozen=True)
class Face:
    """One face's landmarks ``(68, 2)`` in the frame's pixels (x right, y down; pixel centres
    at integers) and its own axes: ``right`` along the eye line, ``down`` across it, ``scale``
    the distance between the eye centres."""

    points: np.ndarray

    @property
    def scale(self) -> float:
        return float(np.linalg.norm(self.points[42:48].mean(0) - self.points[36:42].mean(0)))

    @property
    def right(self) -> np.ndarray:
        axis = self.points[42:48].mean(0) - self.points[36:42].mean(0)
        return axis / max(float(np.linalg.norm(axis)), 1e-6)

    @property
    def down(self) -> np.ndarray:
        return np.array([-self.right[1], self.right[0]])

    def at(self, parts, down: float = 0.0, right: float = 0.0) -> np.ndarray:
        """Landmarks ``parts`` moved ``down`` and ``right`` by multiples of the eye distance."""
        return self.points[list(parts)] + self.scale * (down * self.down + right * self.right)


@dataclass(frozen=True)
class Shape:
    """A group's region: the union of the convex hulls of ``hulls(face)`` (point sets), grown
    by ``grow`` eye distances, its edge a smooth ramp ``2 * soft`` pixels wide (at 64 px,
    scaled with the frame); with ``outside``, the frame outside that union instead."""

    hulls: Callable[[Face], list[np.ndarray]]
    grow: float
    soft: float
    outside: bool = False


def _stack(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts)


JAW, BROWS, NOSE, EYES, MOUTH = range(0, 17), range(17, 27), range(27, 36), range(36, 48), range(48, 68)
LOWER_LIDS = (40, 41, 46, 47)  # the lower lids of both eyes
NOSTRILS = range(31, 36)

GROUPS: dict[str, Shape] = {
    # both lips with room for the mouth to open or widen
    "mouth": Shape(lambda f: [f.at(MOUTH)], grow=0.25, soft=1.5),
    # brows (raised a little for arched or bushy ones), both eyes, the top of the cheeks under
    # them (bags), the temples at the jaw line's top (eyeglass frames) and the nose bridge
    "eyes": Shape(lambda f: [_stack(f.at(BROWS, down=-0.15), f.at(EYES), f.at(LOWER_LIDS, down=0.35),
                                    f.at((0, 16)), f.at((27, 28, 29)))], grow=0.1, soft=1.5),
    "nose": Shape(lambda f: [f.at(NOSE)], grow=0.2, soft=1.5),
    # between the lower lids and the mouth corners, from jaw to jaw
    "cheeks": Shape(lambda f: [_stack(f.at(LOWER_LIDS, down=0.1), f.at((1, 2, 3, 13, 14, 15)), f.at((48, 54)),
                                      f.at(NOSTRILS))], grow=0.1, soft=1.5),
    # the jaw below the nose (the mustache's upper lip included), under the chin and up the
    # face's sides (sideburns)
    "lower_face": Shape(lambda f: [_stack(f.at(range(1, 16)), f.at(NOSTRILS), f.at((6, 7, 8, 9, 10), down=0.25))],
                        grow=0.2, soft=2.0),
    # the ears beside the jaw line's top and what hangs below their lobes
    "ears": Shape(lambda f: [_stack(f.at((0, 1, 2, 3, 4)), f.at((0, 1, 2, 3), right=-0.45),
                                    f.at((4, 5), down=0.5, right=-0.4)),
                             _stack(f.at((12, 13, 14, 15, 16)), f.at((13, 14, 15, 16), right=0.45),
                                    f.at((11, 12), down=0.5, right=0.4))], grow=0.15, soft=1.5),
    # from just below the chin down past the frame, widening to the shoulders
    "neck": Shape(lambda f: [_stack(f.at(range(4, 13), down=0.25), f.at((4,), down=3.0, right=-0.6),
                                    f.at((12,), down=3.0, right=0.6))], grow=0.15, soft=2.0),
    # the frame outside the face (jaw line and brows) and the neck below it: the forehead
    # above the brows (bangs, the hairline), the sides (long hair) and the top of the head
    "hair": Shape(lambda f: [_stack(f.at(JAW), f.at(BROWS), f.at((4, 12), down=3.0))], grow=0.0, soft=1.5,
                  outside=True),
    # jaw line and the brows with a band of forehead above them, nothing outside. Higher up the
    # forehead is the hairline's or the bangs' as often as skin, and the face space's age and sex
    # edits painted dark smudges there (blind set 7: on 6 of 23 such edits a rater named the
    # forehead; the brows were raised by 0.7 of an eye distance then)
    "whole_face": Shape(lambda f: [_stack(f.at(JAW), f.at(BROWS, down=-0.2))], grow=0.15, soft=2.0),
}


def group_of(attribute: str) -> str:
    """The region group of a CelebA attribute name (ValueError for another name)."""
    if attribute not in REGIONS:
        raise ValueError(f"no region for {attribute!r}: expected one of the 40 CelebA attribute names")
    return REGIONS[attribute]


# --- rasterising ---------------------------------------------------------------------------------


def convex_hull(points: np.ndarray) -> np.ndarray:
    """The convex hull's vertices ``(K, 2)`` of ``points`` ``(M, 2)``, in the order that makes
    the interior lie to the left of each edge (x right, y up; Andrew's monotone chain)."""
    ordered = sorted(map(tuple, np.asarray(points, np.float64)))

    def half(sequence):
        chain: list[tuple[float, float]] = []
        for p in sequence:
            while len(chain) >= 2 and ((chain[-1][0] - chain[-2][0]) * (p[1] - chain[-2][1])
                                       - (chain[-1][1] - chain[-2][1]) * (p[0] - chain[-2][0])) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    lower, upper = half(ordered), half(reversed(ordered))
    return np.array(lower[:-1] + upper[:-1])


def signed_distance(hull: np.ndarray, height: int, width: int) -> torch.Tensor:
    """``(H, W)``: each pixel centre's distance to the convex polygon ``hull`` (vertices as
    :func:`convex_hull` orders them), negative inside."""
    vertices = torch.as_tensor(hull, dtype=torch.float64)
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float64), torch.arange(width, dtype=torch.float64),
                            indexing="ij")
    pixels = torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1)  # (P, 2)
    if len(vertices) < 3:  # a degenerate hull: the distance to its points
        return torch.cdist(pixels, vertices).min(dim=1).values.reshape(height, width)
    starts, edges = vertices, vertices.roll(-1, dims=0) - vertices  # (K, 2)
    relative = pixels[:, None, :] - starts[None]  # (P, K, 2)
    lengths = edges.norm(dim=1).clamp_min(1e-9)
    # inside is to the left of every edge: the cross product edge × relative is positive there
    across = (edges[None, :, 0] * relative[..., 1] - edges[None, :, 1] * relative[..., 0]) / lengths
    along = ((relative * edges[None]).sum(-1) / lengths**2).clamp(0, 1)
    to_segment = (relative - along[..., None] * edges[None]).norm(dim=-1)
    inside = (across >= 0).all(dim=1)
    distance = torch.where(inside, -across.min(dim=1).values, to_segment.min(dim=1).values)
    return distance.reshape(height, width)


def _ramp(distance: torch.Tensor, grow: float, soft: float) -> torch.Tensor:
    """1 up to ``grow − soft`` from the edge, 0 from ``grow + soft``, smooth (C¹) between."""
    t = ((grow + soft - distance) / (2 * soft)).clamp(0, 1)
    return t * t * (3 - 2 * t)


def shape_mask(points: np.ndarray, group: str, height: int, width: int) -> torch.Tensor:
    """``(H, W)`` float32 mask in [0, 1] of ``group``'s region for one face's landmarks ``(68, 2)``
    in the frame's pixels."""
    return mask_of_shape(points, GROUPS[group], height, width)


def mask_of_shape(points: np.ndarray, shape: Shape, height: int, width: int) -> torch.Tensor:
    """``(H, W)`` float32 mask in [0, 1] of ``shape`` for one face's landmarks ``(68, 2)``."""
    face = Face(np.asarray(points, np.float64))
    soft = shape.soft * (height + width) / (2 * FRAME)
    grow = shape.grow * face.scale
    mask = torch.zeros(height, width, dtype=torch.float64)
    for point_set in shape.hulls(face):
        mask = torch.maximum(mask, _ramp(signed_distance(convex_hull(point_set), height, width), grow, soft))
    return (1 - mask if shape.outside else mask).float()


# --- landmarks: fitted where a face is found, the framing's mean elsewhere ------------------------

# The aligned framing's mean 68 landmarks in a 64-px frame (x, y; pixel centres at integers):
# the mean of dlib's fits on the first 300 validation faces of CelebA-HQ-64 where a face was
# found, made by ``python -m scripts.chores.mean_landmarks --count 300``:
# 298 of 300 faces found; median distance of a fitted landmark from the mean 1.30 px (90th percentile 3.32 px)
MEAN_LANDMARKS_64 = np.array([
    [14.42, 30.60], [14.58, 35.20], [15.13, 39.79], [16.03, 44.32], [17.67, 48.58], [20.27, 52.33],
    [23.50, 55.54], [27.17, 58.21], [31.46, 58.99], [35.84, 58.30], [39.80, 55.75], [43.32, 52.63],
    [46.20, 48.90], [48.02, 44.64], [48.98, 39.99], [49.55, 35.26], [49.77, 30.50], [17.31, 27.01],
    [19.50, 25.34], [22.41, 24.96], [25.40, 25.44], [28.22, 26.62], [34.44, 26.52], [37.41, 25.34],
    [40.53, 24.90], [43.57, 25.36], [45.93, 27.01], [31.34, 30.06], [31.28, 33.11], [31.22, 36.20],
    [31.16, 39.35], [28.00, 41.25], [29.55, 41.90], [31.27, 42.45], [33.03, 41.90], [34.65, 41.31],
    [20.78, 30.35], [22.64, 29.23], [24.94, 29.29], [26.84, 30.77], [24.74, 31.19], [22.51, 31.17],
    [36.19, 30.77], [38.08, 29.26], [40.40, 29.23], [42.31, 30.37], [40.54, 31.16], [38.30, 31.19],
    [24.67, 46.61], [27.02, 45.57], [29.52, 45.16], [31.32, 45.58], [33.20, 45.18], [35.85, 45.61],
    [38.43, 46.66], [35.96, 49.29], [33.36, 50.45], [31.33, 50.65], [29.37, 50.44], [26.92, 49.27],
    [25.73, 46.81], [29.50, 46.70], [31.33, 46.88], [33.22, 46.71], [37.32, 46.85], [33.26, 48.12],
    [31.32, 48.33], [29.45, 48.10],
])


def to_frame(points: np.ndarray, height: int, width: int, side: int = UPSAMPLED) -> np.ndarray:
    """Points in a ``side``-px square frame's pixels → the same points in an ``H × W`` frame
    (pixel centres at integers in both: the resampling's convention)."""
    scale = np.array([width / side, height / side])
    return (np.asarray(points, np.float64) + 0.5) * scale - 0.5


def _pixels(images: torch.Tensor) -> np.ndarray:
    """What the landmark fit sees of each frame: its bytes as the dlib instruments round them."""
    return (images.detach().cpu().clamp(0, 1) * 255).round().to(torch.uint8).numpy()


def _fit(images: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """dlib's 68 landmarks ``(N, 68, 2)`` in the 256-px upsampled frame (NaN rows where no face
    is found) and where one was found ``(N,)``."""
    from recourse.instruments.age_gender import face_shapes
    from recourse.instruments.mouth_geometry import landmarks_file

    shapes = face_shapes(images, landmarks_file())
    return shapes.points(PARTS), shapes.found


class LandmarkCache:
    """Fitted landmarks by frame content (its rounded bytes and size), so that the models of
    one audit, which edit the same face, fit it once. Bounded (``size`` frames, least recently
    used out first), shared by the app's concurrent requests."""

    def __init__(self, size: int = 4096) -> None:
        self._fits: BoundedCache[tuple[np.ndarray, bool]] = BoundedCache(size)

    @property
    def fitted(self) -> int:
        """Frames fitted so far (the cache's misses)."""
        return self._fits.stored

    def get(self, images: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """``(points (N, 68, 2) in the 256-px frame, NaN where not found; found (N,))``."""
        pixels = _pixels(images)
        keys = [hashlib.blake2b(frame.tobytes(), digest_size=16).digest() + bytes(str(frame.shape), "ascii")
                for frame in pixels]
        results = [self._fits.get(key) for key in keys]
        missing = [i for i, kept in enumerate(results) if kept is None]
        if missing:
            points, found = _fit(torch.from_numpy(pixels[missing]).float() / 255)
            for row, i in enumerate(missing):
                results[i] = (points[row], bool(found[row]))
                self._fits.put(keys[i], results[i])
        return (np.stack([r[0] for r in results]) if results else np.zeros((0, PARTS, 2)),
                np.array([r[1] for r in results], bool))

    def clear(self) -> None:
        self._fits.clear()


LANDMARKS = LandmarkCache()


def face_landmarks(images: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Landmarks ``(N, 68, 2)`` of float frames ``(N, 3, H, W)`` in [0, 1], in the frames'
    pixels, and ``found`` ``(N,)``: the fitted ones where a face is found, the framing's mean
    (:data:`MEAN_LANDMARKS_64`, scaled to the frame) elsewhere."""
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"expected float images (N, 3, H, W), got {getattr(images, 'shape', type(images))}")
    height, width = images.shape[-2:]
    fitted, found = LANDMARKS.get(images)
    mean = to_frame(MEAN_LANDMARKS_64, height, width, side=FRAME)
    points = np.where(found[:, None, None], to_frame(np.nan_to_num(fitted), height, width), mean[None])
    return points, found


@dataclass(frozen=True)
class RegionMask:
    """An attribute's region on each face: ``mask`` ``(N, 1, H, W)`` in [0, 1], ``found``
    ``(N,)`` (False: no face found, the framing's mean landmarks were used) and the group."""

    mask: torch.Tensor
    found: np.ndarray
    group: str


def region_mask(images: torch.Tensor, attribute: str) -> RegionMask:
    """The soft region ``(N, 1, H, W)`` where ``attribute`` is edited on each of ``images``."""
    group = group_of(attribute)
    points, found = face_landmarks(images)
    height, width = images.shape[-2:]
    masks = [shape_mask(face, group, height, width) for face in points]
    mask = torch.stack(masks)[:, None] if masks else torch.zeros(0, 1, height, width)
    return RegionMask(mask.to(images.dtype), found, group)


# --- MaskDiME's adaptive mask --------------------------------------------------------------------


def _blur(images: torch.Tensor, sigma: float) -> torch.Tensor:
    """A separable Gaussian blur of ``(N, 1, H, W)``, cut at 2σ (its support is finite, so a
    blurred mask times the region is still zero outside it); zero padding."""
    radius = max(1, int(np.ceil(2 * sigma)))
    offsets = torch.arange(-radius, radius + 1, dtype=images.dtype)
    kernel = torch.exp(-offsets**2 / (2 * sigma**2))
    kernel = kernel / kernel.sum()
    images = F.conv2d(images, kernel.view(1, 1, 1, -1), padding=(0, radius))
    return F.conv2d(images, kernel.view(1, 1, -1, 1), padding=(radius, 0))


GRADIENT_SMOOTHING = 1.0  # σ in pixels of a 64-px frame: the gradient magnitude's blur
KEEP_SOFTENING = 1.0  # σ in pixels of a 64-px frame: the kept pixels' blur


def adaptive_mask(region: torch.Tensor, gradient: torch.Tensor, share: float) -> torch.Tensor:
    """``region`` ``(N, 1, H, W)`` cut to the top ``share`` of its mass by the magnitude of
    ``gradient`` ``(N, C, H, W)`` (summed over channels, smoothed), the cut softened and
    kept inside the region; ``region`` itself for ``share = 1``."""
    check_float("share", share, 0.0, 1.0, low_open=True)
    if share >= 1:
        return region
    height, width = region.shape[-2:]
    scale = (height + width) / (2 * FRAME)
    magnitude = _blur(gradient.detach().abs().sum(dim=1, keepdim=True).to(region.dtype), GRADIENT_SMOOTHING * scale)
    kept = torch.zeros_like(region)
    for row in range(len(region)):
        weights, order_by = region[row].reshape(-1), magnitude[row].reshape(-1)
        order = torch.argsort(torch.where(weights > 0, order_by, torch.full_like(order_by, -1.0)), descending=True,
                          stable=True)
        mass = weights[order].cumsum(0)
        count = int(torch.searchsorted(mass, share * float(mass[-1]))) + 1  # pixels until the share is reached
        kept[row].view(-1)[order[:count]] = 1
    return region * _blur(kept, KEEP_SOFTENING * scale).clamp(0, 1)
