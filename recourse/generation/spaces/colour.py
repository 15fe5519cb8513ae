"""Luminance and colour apart, so that an edit of a black-and-white photo stays black and white.

BT.601 full-range YCbCr (JPEG's): linear in RGB, with an exact inverse, Cb and Cr centred at
0.5. The edit spaces model the three channels together; a monochrome face gets only the
luminance part of an edit, its own chroma kept pixel by pixel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# rows: Y, Cb, Cr from R, G, B
RGB_TO_YCBCR = torch.tensor([
    [0.299, 0.587, 0.114],
    [-0.168735892, -0.331264108, 0.5],
    [0.5, -0.418687589, -0.081312411],
])
YCBCR_TO_RGB = torch.linalg.inv(RGB_TO_YCBCR)
CHROMA_OFFSET = torch.tensor([0.0, 0.5, 0.5])

MONOCHROME_SPREAD = 6 / 255  # the largest channel spread (99th percentile) of a black-and-white photo


def _mix(matrix: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
    return torch.einsum("ij,...jhw->...ihw", matrix.to(images.dtype), images)


def rgb_to_ycbcr(images: torch.Tensor) -> torch.Tensor:
    """``(..., 3, H, W)`` RGB in [0, 1] → Y, Cb, Cr in [0, 1]."""
    return _mix(RGB_TO_YCBCR, images) + CHROMA_OFFSET.to(images.dtype)[:, None, None]


def ycbcr_to_rgb(images: torch.Tensor) -> torch.Tensor:
    """The exact inverse of :func:`rgb_to_ycbcr` (not clamped)."""
    return _mix(YCBCR_TO_RGB, images - CHROMA_OFFSET.to(images.dtype)[:, None, None])


def change_to_rgb(change: torch.Tensor) -> torch.Tensor:
    """A change of Y, Cb, Cr ``(..., 3, H, W)`` as the change of R, G, B it makes (linear)."""
    return _mix(YCBCR_TO_RGB, change)


def colour_spread(images: torch.Tensor) -> torch.Tensor:
    """``(N,)``: the 99th percentile over pixels of max(R, G, B) − min(R, G, B), [0, 1] units."""
    spread = images.amax(dim=-3) - images.amin(dim=-3)
    return torch.quantile(spread.flatten(-2).float(), 0.99, dim=-1)


TINT_RESIDUAL = 2.6 / 255  # the largest chroma left unexplained by luminance in a toned print (sepia)


def chroma_beyond_tone(image: torch.Tensor) -> float:
    """The standard deviation of the chroma that a quadratic function of luminance does not
    explain (the larger of Cb's and Cr's), [0, 1] units. A toned print's chroma follows its
    luminance (warm highlights, neutral shadows); a colour photo's lips, skin and background
    do not. On 3,000 val faces the 7 lowest (0.31–2.5/255) were the black-and-white and
    toned prints, the next (2.8/255 and up) colour photos."""
    ycbcr = rgb_to_ycbcr(image.double()).flatten(1)
    luminance, chroma = ycbcr[0], ycbcr[1:]
    design = torch.stack([torch.ones_like(luminance), luminance, luminance ** 2], dim=1)
    solution = torch.linalg.lstsq(design, chroma.T).solution
    return float((chroma.T - design @ solution).std(dim=0).max())


@dataclass(frozen=True)
class ColourMode:
    """Whether a face is shown without colour (``monochrome``: greyscale or a toned print such
    as sepia) and its channel spread."""

    monochrome: bool
    spread: float


def colour_mode(image: torch.Tensor) -> ColourMode:
    """A ``(3, H, W)`` face is monochrome when its channels hardly differ or its chroma follows
    its luminance (a toned print)."""
    spread = float(colour_spread(image[None])[0])
    return ColourMode(spread <= MONOCHROME_SPREAD or chroma_beyond_tone(image) <= TINT_RESIDUAL, spread)


def luminance_only(original: torch.Tensor, edited: torch.Tensor) -> torch.Tensor:
    """``edited``'s luminance with ``original``'s chroma, pixel by pixel, clamped to [0, 1]."""
    ycbcr = torch.cat([rgb_to_ycbcr(edited)[..., :1, :, :], rgb_to_ycbcr(original)[..., 1:, :, :]], dim=-3)
    return ycbcr_to_rgb(ycbcr).clamp(0, 1)
