import torch

from recourse.generation.spaces.colour import (
    colour_mode, colour_spread, luminance_only, rgb_to_ycbcr, ycbcr_to_rgb,
)


def test_ycbcr_round_trip_is_exact():
    images = torch.rand(2, 3, 8, 8)
    assert torch.allclose(ycbcr_to_rgb(rgb_to_ycbcr(images)), images, atol=1e-6)


def test_grey_has_centred_chroma():
    grey = torch.rand(1, 8, 8).expand(3, -1, -1)
    assert torch.allclose(rgb_to_ycbcr(grey)[1:], torch.full((2, 8, 8), 0.5), atol=1e-6)


def test_colour_mode_tells_grey_sepia_and_colour_apart():
    luminance = torch.rand(1, 16, 16)
    assert colour_mode(luminance.expand(3, -1, -1)).monochrome
    sepia = (luminance * torch.tensor([1.0, 0.85, 0.65])[:, None, None]).clamp(0, 1)
    sepia_ycbcr = rgb_to_ycbcr(sepia)
    sepia_ycbcr[1:] = sepia_ycbcr[1:].mean(dim=(1, 2), keepdim=True)  # one tint everywhere
    assert colour_mode(ycbcr_to_rgb(sepia_ycbcr).clamp(0, 1)).monochrome
    assert not colour_mode(torch.rand(3, 16, 16)).monochrome


def test_luminance_only_keeps_a_grey_photo_grey():
    grey = torch.rand(1, 1, 16, 16).expand(1, 3, -1, -1)
    coloured = (grey + torch.tensor([0.2, -0.1, 0.0])[None, :, None, None]).clamp(0, 1)
    kept = luminance_only(grey, coloured)
    assert float(colour_spread(kept)[0]) <= 1 / 255
    assert not torch.allclose(kept, grey)  # the luminance change is kept
