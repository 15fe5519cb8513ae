"""Hair colour: a space of how real hair is coloured, and edits that recolour a face's own hair.

A hair colour is read as four statistics of the face's hair pixels: mean Y, Cb and Cr, and the
log of Y's standard deviation (how much the strands' shading varies: fair hair shows more of it
than black). Train faces give their Gaussian (mean ``μ``, Cholesky factor ``L``); a face's
statistics are ``s = μ + L z``. Each model steers ``Δz`` as it does in a part's texture space
(prior about the target class's mean, a box of ``±space_box``), and the edit recolours every
hair pixel by the same affine map of its own value::

    Y' = Y + ΔȲ + (e^{Δlog σ} − 1)(Y − Ȳ),   Cb' = Cb + ΔCb,   Cr' = Cr + ΔCr

so the strands, their highlights and the photo's grain are the face's own, only their colour
moves, and along the straight path from the face every point is the same map scaled.

Hair is told apart by geometry and by a person segmenter (:mod:`person`), not by colour alone:
the region outside the face and neck (:data:`regions.GROUPS` ``"hair"``), on the person, and
unlike the face's skin. The background and clothes are never recoloured; a face with no hair
to speak of (bald, hair hidden) cannot be edited and says so by not moving.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import ModelMixin
from diffusers.configuration_utils import ConfigMixin, register_to_config
from torch import nn

from recourse.data import ATTRIBUTES, to_float_images
from recourse.generation.regions import GROUPS, mask_of_shape
from recourse.generation.spaces.coefficients import steer_coefficients
from recourse.generation.spaces.colour import change_to_rgb, colour_mode, rgb_to_ycbcr
from recourse.generation.spaces.templates import HAIR_ATTRIBUTES

STATISTICS = 4  # mean Y, Cb, Cr; log std of Y
MIN_HAIR_SHARE = 0.025  # of the frame: less is no hair to recolour
SKIN_DISTANCE = 3.0  # Mahalanobis distance from the cheeks' colour past which a pixel is not skin
SKIN_SOFT = 0.75
HAIR_COLOUR_DISTANCE = 4.0  # robust deviations from the hair's median colour that still count as hair
FADE_BELOW_CHIN = 0.8  # eye distances below the chin where the recolouring has faded to half
EAR_STRICTNESS = 1.8  # times the skin distance a pixel on the ears must be from the cheeks to be hair
LUMINANCE_SPREAD = 0.06
DARKER_WEIGHT = 1.0  # luminance standard deviations below the skin's count as chroma distances
SHADING_LIMIT = 1.35
FIT_FACES = 6000  # train faces the hair colours are read on (a class of 4%, grey hair, has 240 of them)
PRIOR_SHARE = 0.25  # of the part spaces' prior weight: 4 statistics, not 64 texture coefficients, carry it


def skin_unlike(ycbcr: torch.Tensor, skin: torch.Tensor, monochrome: bool, lighter_counts: bool = False,
                threshold: float | torch.Tensor = SKIN_DISTANCE) -> torch.Tensor:
    """``(H, W)`` in [0, 1]: how unlike each pixel is the samples ``(3, n)`` (of skin, or of hair):
    its chroma's Mahalanobis distance from theirs, or its luminance below theirs (dark hair beside
    light skin, the only cue on a monochrome face); unless ``lighter_counts``, light alone never
    makes a pixel unlike skin (a forehead's highlight is skin). A soft step at :data:`SKIN_DISTANCE`."""
    samples = skin.double()
    if samples.shape[1] < 8:
        return torch.ones(ycbcr.shape[-2:])
    centre = samples.mean(1, keepdim=True)
    pixels = ycbcr.flatten(1).double() - centre
    # a robust spread (the median absolute deviation's), at most LUMINANCE_SPREAD: light and
    # shade across the cheeks must not make all of a darker hair "skin"
    luminance_spread = (1.4826 * (samples[0] - samples[0].median()).abs().median()).clamp(4 / 255, LUMINANCE_SPREAD)
    darker = (-pixels[0] / luminance_spread).clamp_min(0) * DARKER_WEIGHT
    if lighter_counts:
        darker = pixels[0].abs() / luminance_spread * DARKER_WEIGHT
    distance = darker
    if not monochrome:
        covariance = torch.cov(samples[1:]) + torch.eye(2, dtype=torch.float64) * (3 / 255) ** 2
        chroma = pixels[1:]
        chroma_distance = (chroma * torch.linalg.solve(covariance, chroma)).sum(0).clamp_min(0).sqrt()
        distance = torch.maximum(distance, chroma_distance)
    return torch.sigmoid((distance.view(ycbcr.shape[-2:]) - threshold) / SKIN_SOFT).float()


def hair_region(image: torch.Tensor, points: np.ndarray, person: torch.Tensor) -> torch.Tensor:
    """``(H, W)`` mask of the hair of one face ``(3, H, W)`` with landmarks ``points`` ``(68, 2)``
    in its pixels and person probabilities ``person`` ``(H, W)``.

    Above the mouth, hair is what is on the person, outside the face, unlike its skin and within
    the head's width. Lower down it can also be a collar or a jacket's shoulders: there only what
    hangs from the hair above without a gap counts, and below the chin only in the hair's colour."""
    height, width = image.shape[-2:]
    ycbcr = rgb_to_ycbcr(image.float())
    outside_face = mask_of_shape(points, GROUPS["hair"], height, width) * _firm(person.float())
    cheeks = mask_of_shape(points, GROUPS["cheeks"], height, width) > 0.5
    if int(cheeks.sum()) < 8:
        return torch.zeros(height, width)
    # the ears are skin in another light (redder, in shade): only what is far from skin is hair there
    ears = mask_of_shape(points, GROUPS["ears"], height, width)
    threshold = SKIN_DISTANCE * (1 + (EAR_STRICTNESS - 1) * ears)
    unlike = _smooth(skin_unlike(ycbcr, ycbcr[:, cheeks], colour_mode(image).monochrome, threshold=threshold), height)
    rows = torch.arange(height, dtype=torch.float32)[:, None]
    columns = torch.arange(width, dtype=torch.float32)[None, :]
    scale = float(np.linalg.norm(points[36:42].mean(0) - points[42:48].mean(0)))
    soft = max(1.0, height / 64)
    mouth, chin = float(points[48:68, 1].mean()), float(points[8, 1])
    above_mouth = torch.sigmoid((mouth - rows) / soft).expand(height, width)
    core = _firm(outside_face * unlike) * above_mouth * _head_width(points, rows, columns, scale, soft)
    if float(core.sum()) < 8:
        return core
    # a background the segmenter took for the person (a tight crop's sky) is not in the hair's colours
    core = core * _firm(_in_hair_colours(ycbcr, core, colour_mode(image).monochrome))
    if float(core.sum()) < 8:
        return core
    like_hair = 1 - skin_unlike(ycbcr, _samples(ycbcr, core), colour_mode(image).monochrome, lighter_counts=True)
    below_chin = torch.sigmoid((rows - chin) / soft).expand(height, width)
    # below the chin, hair and a dark jumper can share a colour: the recolouring fades out over
    # an eye distance there (hair lighter at the ends reads as hair; a recoloured jumper does not)
    fade = torch.sigmoid((chin + FADE_BELOW_CHIN * scale - rows) / (0.25 * scale)).expand(height, width)
    lower = (_firm(outside_face * unlike * (1 - below_chin + below_chin * like_hair)) * (1 - above_mouth)
             * _head_width(points, rows, columns, scale, soft) * fade)
    return _feather((core + lower * _hanging_from(core, lower)).clamp(0, 1), height)


def _hanging_from(core: torch.Tensor, below: torch.Tensor) -> torch.Tensor:
    """``(H, W)`` 0/1: the pixels of ``below`` joined to the hair above the chin (``core``) without
    a gap: long hair falls from the head; a jacket's shoulders, apart from it, are not hair."""
    import cv2

    joined = ((core > 0.5) | (below > 0.5)).numpy().astype(np.uint8)
    _, labels = cv2.connectedComponents(joined, connectivity=4)
    labels = torch.from_numpy(labels.astype(np.int64))
    kept = torch.unique(labels[(core > 0.5) & (labels > 0)])
    return torch.isin(labels, kept).float()


def _head_width(points: np.ndarray, rows: torch.Tensor, columns: torch.Tensor, scale: float,
                soft: float) -> torch.Tensor:
    """``(H, W)``: where hair at the side of the head can be: any width above the eyes, within
    1.5 eye distances of the jaw line below them (a jacket's shoulders reach higher than the
    chin at the frame's sides), the change between the two spread over an eye distance so that
    a wide hairdo is never cut by a straight line."""
    eyes = float(points[36:48, 1].mean())
    left, right = float(points[:17, 0].min()), float(points[:17, 0].max())
    reach = 1.5 * scale + 1e3 * torch.sigmoid((eyes - rows) / (0.25 * scale))
    width = 0.25 * scale
    return torch.sigmoid((columns - (left - reach)) / width) * torch.sigmoid(((right + reach) - columns) / width)


def _in_hair_colours(ycbcr: torch.Tensor, core: torch.Tensor, monochrome: bool) -> torch.Tensor:
    """``(H, W)`` in [0, 1]: how near each pixel's colour is to the bulk of ``core``'s: a distance in
    robust deviations (the median absolute deviation's, per channel) from the channels' medians,
    a soft step at :data:`HAIR_COLOUR_DISTANCE`."""
    channels = [0] if monochrome else [0, 1, 2]
    samples = _samples(ycbcr, core)[channels].double()
    if samples.shape[1] < 8:
        return torch.ones(ycbcr.shape[-2:])
    centre = samples.median(dim=1, keepdim=True).values
    spread = (1.4826 * (samples - centre).abs().median(dim=1, keepdim=True).values).clamp_min(4 / 255)
    pixels = (ycbcr[channels].flatten(1).double() - centre) / spread
    distance = pixels.pow(2).sum(0).sqrt().view(ycbcr.shape[-2:])
    return torch.sigmoid((HAIR_COLOUR_DISTANCE - distance) / SKIN_SOFT).float()


def _samples(ycbcr: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(3, n)``: the pixels where ``mask`` is over one half."""
    return ycbcr[:, mask > 0.5]


def _feather(mask: torch.Tensor, height: int) -> torch.Tensor:
    """The mask's edge softened over a pixel of the 64-px frame: hair's outline mixes with what
    is behind it, and a recoloured one with a cut edge reads as a cut-out."""
    radius = max(1, height // 64)
    return F.avg_pool2d(mask[None, None], 2 * radius + 1, stride=1, padding=radius, count_include_pad=False)[0, 0]


def _smooth(mask: torch.Tensor, height: int) -> torch.Tensor:
    """A mean over 3 × 3 pixels of the 64-px frame of an ``(H, W)`` mask: a stray pixel of skin
    colour in the hair (a highlight) is not a hole."""
    radius = max(1, round(1.5 * height / 64)) // 1
    return F.avg_pool2d(mask[None, None], 2 * radius + 1, stride=1, padding=radius, count_include_pad=False)[0, 0]


def _firm(mask: torch.Tensor) -> torch.Tensor:
    """A soft mask pushed towards 0 and 1 (a smooth step from 0.3 to 0.7): a strand is recoloured
    or not, never half of it, which would read as a patch."""
    t = ((mask - 0.3) / 0.4).clamp(0, 1)
    return t * t * (3 - 2 * t)


def hair_statistics(image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
    """``(4,)``: mean Y, Cb, Cr and log std of Y over ``mask``'s hair; None where there is too little hair."""
    weight = mask.float()
    mass = weight.sum()
    if float(mass) < MIN_HAIR_SHARE * weight.numel():
        return None
    ycbcr = rgb_to_ycbcr(image.float()).flatten(1)
    w = weight.flatten() / mass
    means = (ycbcr * w).sum(1)
    spread = ((ycbcr[0] - means[0]) ** 2 * w).sum().clamp_min(1e-8).sqrt()
    return torch.cat([means, spread.log()[None]])


def recolour(image: torch.Tensor, mask: torch.Tensor, statistics: torch.Tensor, change: torch.Tensor,
             luminance: bool = False) -> torch.Tensor:
    """``image`` ``(1, 3, H, W)`` with its hair (``mask`` ``(H, W)``, ``statistics`` ``(4,)``) moved
    by ``change`` ``(1, 4)`` in the statistics (chroma left alone where ``luminance``)."""
    y = rgb_to_ycbcr(image)[:, :1]
    shift_y = change[:, 0, None, None, None] + (change[:, 3, None, None, None].exp() - 1) * (y - statistics[0])
    chroma = change[:, 1:3, None, None].expand(-1, -1, *y.shape[-2:])
    if luminance:
        chroma = chroma * 0
    delta = change_to_rgb(torch.cat([shift_y, chroma], dim=1))
    return (image + mask * delta).clamp(0, 1)


def limit_shading(change: torch.Tensor) -> torch.Tensor:
    """``change`` ``(N, 4)`` with the strands' shading scaled by at most :data:`SHADING_LIMIT` either
    way: fair hair shows more shading than black, but dark hair's own shading, scaled further,
    is its noise and its grain, blotches rather than strands."""
    limit = float(np.log(SHADING_LIMIT))
    return torch.cat([change[:, :3], change[:, 3:].clamp(-limit, limit)], dim=1)


class HairSpace(ModelMixin, ConfigMixin):
    """The Gaussian of real hair colours: ``mean`` ``(4,)``, ``cholesky`` ``(4, 4)`` and each hair
    attribute's class means of ``z`` (``class_means`` ``(A, 2, 4)``). Saved the diffusers way."""

    @register_to_config
    def __init__(self, group: str = "hair", attributes: tuple[str, ...] = HAIR_ATTRIBUTES, faces: int = 0,
                 code_energy_limit: float = 0.0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(STATISTICS))
        self.register_buffer("cholesky", torch.eye(STATISTICS))
        self.register_buffer("class_means", torch.zeros(len(attributes), 2, STATISTICS))

    def encode(self, statistics: torch.Tensor) -> torch.Tensor:
        """Whitened ``z`` ``(..., 4)`` of hair statistics ``(..., 4)``."""
        centred = (statistics - self.mean.float()).unsqueeze(-1)
        return torch.linalg.solve_triangular(self.cholesky.float(), centred, upper=False).squeeze(-1)

    def change(self, dz: torch.Tensor) -> torch.Tensor:
        """The statistics' change ``(..., 4)`` that ``dz`` makes."""
        return dz @ self.cholesky.float().T

    def class_mean(self, attribute: str, target: int) -> torch.Tensor:
        return self.class_means[list(self.config.attributes).index(attribute), int(target)].float()

    @property
    def realism_limit(self) -> float | None:
        """The ``‖z‖²/4`` of real val hair that 99% stay under; None before calibration."""
        return float(self.config.code_energy_limit) or None


def steer_hair(space: HairSpace, image: torch.Tensor, mask: torch.Tensor, statistics: torch.Tensor,
               model: nn.Module, index: int, sign: torch.Tensor, config, luminance: bool) -> torch.Tensor:
    """The change of hair statistics ``(1, 4)`` that ``model`` steers ``image`` to."""
    z0 = space.encode(statistics)[None]
    # a black-and-white photo: only the luminance statistics may move
    frozen = torch.tensor([False, True, True, False]) if luminance else None
    centre = space.class_mean(ATTRIBUTES[index], int(sign[0] > 0))[None] if config.space_class_prior else 0.0
    def draw(dz: torch.Tensor) -> torch.Tensor:
        return recolour(image, mask, statistics, limit_shading(space.change(dz)), luminance)

    weight = config.space_prior_weight * PRIOR_SHARE
    dz = steer_coefficients(z0, draw, model, index, sign, config, centre, weight, frozen)
    return limit_shading(space.change(dz))


def hair_edit(space: HairSpace, image: torch.Tensor, model: nn.Module, index: int, sign: torch.Tensor, config,
              points: np.ndarray, person: torch.Tensor) -> torch.Tensor:
    """The whole hair edit ``(1, 3, H, W)`` of one face; the face itself where it shows no hair."""
    mask = hair_region(image[0], points, person)
    statistics = hair_statistics(image[0], mask)
    if statistics is None:
        return image.clone()
    luminance = colour_mode(image[0]).monochrome
    change = steer_hair(space, image, mask, statistics, model, index, sign, config, luminance)
    with torch.no_grad():
        return recolour(image, mask, statistics, change, luminance)


def fit_hair_space(images: np.ndarray, points: np.ndarray, found: np.ndarray, labels: np.ndarray,
                   progress: Callable[[str], None] = print, chunk: int = 512, faces: int = FIT_FACES) -> HairSpace:
    """The space from ``uint8 (N, 3, 64, 64)`` colour faces with landmarks ``(N, 68, 2)`` in
    the 64-px frame, ``found`` and labels ``(N, 40)``: the Gaussian of their hair statistics
    (faces with too little hair left out) and each hair attribute's class means of ``z``, from
    ``faces`` of them spread evenly over the split (four statistics need no more)."""
    from recourse.generation.spaces.fit import usable
    from recourse.generation.spaces.person import PERSON

    keep = np.flatnonzero(usable(images, found))
    keep = keep[np.linspace(0, len(keep) - 1, min(faces, len(keep))).round().astype(int)]
    rows, kept = [], []
    for start in range(0, len(keep), chunk):
        chosen = keep[start:start + chunk]
        faces = to_float_images(images[chosen])
        people = PERSON(faces)
        for j, i in enumerate(chosen):
            statistics = hair_statistics(faces[j], hair_region(faces[j], points[i], people[j, 0]))
            if statistics is not None and bool(torch.isfinite(statistics).all()):
                rows.append(statistics.double())
                kept.append(i)
        progress(f"hair: {min(start + chunk, len(keep))}/{len(keep)} faces read, {len(rows)} with hair")
    statistics = torch.stack(rows)
    space = HairSpace(faces=len(rows))
    space.mean.copy_(statistics.mean(0).float())
    space.cholesky.copy_(torch.linalg.cholesky(torch.cov(statistics.T)).float())
    codes = space.encode(statistics.float())
    present_all = labels[np.array(kept)] > 0
    for row, attribute in enumerate(space.config.attributes):
        present = torch.as_tensor(present_all[:, ATTRIBUTES.index(attribute)])
        for target in (0, 1):
            chosen = present if target else ~present
            if int(chosen.sum()) < 20:
                raise ValueError(f"hair: only {int(chosen.sum())} faces of {attribute}={target} to learn from")
            space.class_means[row, target] = codes[chosen].mean(0)
    return space


def hair_energy(space: HairSpace, image: torch.Tensor, mask: torch.Tensor) -> float | None:
    """``‖z‖²/4`` of the hair that ``mask`` (the original's hair region) covers on ``image``
    ``(3, H, W)``: how unlikely its colour is among real hair (None: no hair)."""
    statistics = hair_statistics(image, mask)
    return None if statistics is None else float((space.encode(statistics) ** 2).mean())


def display_recolour(display: torch.Tensor, x: torch.Tensor, counterfactual: torch.Tensor,
                     points: np.ndarray) -> torch.Tensor | None:
    """The hair edit ``x → counterfactual`` (model-size ``(3, h, w)``, landmarks ``points`` in
    ``x``'s pixels) made again on the photo's display crop ``display`` ``(3, S, S)``: the recolouring
    map read back from the model-size pair (a least-squares fit of the luminance change against
    luminance, the mean chroma change) and applied to the crop's own hair, found on the crop. The
    strands keep the photo's resolution, and nothing off the person changes. None where ``x``
    shows no hair the map can be read on."""
    from recourse.generation.regions import to_frame
    from recourse.generation.spaces.person import PERSON

    mask = hair_region(x, points, PERSON(x[None])[0, 0])
    statistics = hair_statistics(x, mask)
    inside = mask > 0.9
    if statistics is None or int(inside.sum()) < 8:
        return None
    before, after = rgb_to_ycbcr(x.float())[:, inside], rgb_to_ycbcr(counterfactual.float())[:, inside]
    shading = before[0] - statistics[0]
    design = torch.stack([torch.ones_like(shading), shading], dim=1).double()
    offset, slope = torch.linalg.lstsq(design, (after[0] - before[0]).double()[:, None]).solution[:, 0].tolist()
    chroma = (after[1:] - before[1:]).mean(1)
    shading = float(np.log(max(1 + slope, 0.05)))
    change = limit_shading(torch.tensor([[offset, float(chroma[0]), float(chroma[1]), shading]]))
    side = display.shape[-1]
    crop_points = to_frame(points, display.shape[-2], side, side=x.shape[-1])
    crop_mask = hair_region(display, crop_points, PERSON(display[None])[0, 0])
    return recolour(display[None].float(), crop_mask, statistics, change, colour_mode(x).monochrome)[0]
