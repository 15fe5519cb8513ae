"""A learned face denoiser D(x, σ): the image prior counterfactuals are drawn through.

Images are ``(B, 3, 64, 64)`` in [0, 1] at the interface; inside, pixels live in [−1, 1]
and ``σ`` is the standard deviation of Gaussian noise in those units. The network is a
diffusers ``UNet2DModel`` that runs at half resolution: a pixel-unshuffle folds each 2×2
patch into 12 channels first, because full-resolution convolutions are what costs on a
CPU (a 64-px ``UNet2DModel`` of 4.3M parameters trains at about 6.6 images a second on two
cores; this one, at 16×16, at about 57). EDM preconditioning (Karras et al. 2022) keeps
the network's input and target at unit scale for every σ, so it predicts the clean image.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from diffusers import ModelMixin, UNet2DModel
from diffusers.configuration_utils import ConfigMixin, register_to_config

SIGMA_DATA = 0.5  # std of face pixels in [−1, 1] units, as in EDM


def edm_scalings(sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(c_skip, c_out, c_in)`` of EDM for noise levels ``sigma`` (any shape)."""
    total = sigma ** 2 + SIGMA_DATA ** 2
    return SIGMA_DATA ** 2 / total, sigma * SIGMA_DATA / total.sqrt(), 1 / total.sqrt()


class FaceDenoiser(ModelMixin, ConfigMixin):
    """Predicts the clean face from a noisy one at noise level σ (in [−1, 1] units)."""

    @register_to_config
    def __init__(
        self,
        resolution: int = 64,
        fold: int = 2,
        block_out_channels: tuple[int, ...] = (96, 192, 256),
        layers_per_block: int = 2,
        attention_levels: tuple[bool, ...] = (False, False, True),
        sigma_min: float = 0.02,
        sigma_max: float = 1.0,
    ) -> None:
        super().__init__()
        if len(attention_levels) != len(block_out_channels):
            raise ValueError("attention_levels needs one entry per level of block_out_channels")
        folded = 3 * fold * fold
        self.unet = UNet2DModel(
            sample_size=resolution // fold,
            in_channels=folded,
            out_channels=folded,
            block_out_channels=tuple(block_out_channels),
            layers_per_block=layers_per_block,
            down_block_types=tuple("AttnDownBlock2D" if a else "DownBlock2D" for a in attention_levels),
            up_block_types=tuple("AttnUpBlock2D" if a else "UpBlock2D" for a in reversed(attention_levels)),
            attention_head_dim=32,
            norm_num_groups=32,
        )

    def timestep(self, sigma: torch.Tensor) -> torch.Tensor:
        """σ mapped log-linearly onto [0, 1000], the range diffusers' sinusoidal embedding expects."""
        low, high = math.log(self.config.sigma_min), math.log(self.config.sigma_max)
        return 1000 * (sigma.log() - low) / (high - low)

    def raw(self, noisy: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """The network's own output F for ``noisy`` in [−1, 1] units; ``sigma`` of shape (B,)."""
        _, _, c_in = edm_scalings(sigma.view(-1, 1, 1, 1))
        folded = F.pixel_unshuffle(noisy * c_in, self.config.fold)
        out = self.unet(folded, self.timestep(sigma)).sample
        return F.pixel_shuffle(out, self.config.fold)

    def denoise_signed(self, noisy: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """D(x, σ) in [−1, 1] units: the clean-image estimate."""
        sigma = torch.as_tensor(sigma, dtype=noisy.dtype, device=noisy.device).reshape(-1).expand(len(noisy))
        c_skip, c_out, _ = edm_scalings(sigma.view(-1, 1, 1, 1))
        return c_skip * noisy + c_out * self.raw(noisy, sigma)

    def forward(self, noisy: torch.Tensor, sigma: torch.Tensor | float) -> torch.Tensor:
        """D(x, σ) for images in [0, 1] (noise level σ still in [−1, 1] units)."""
        return (self.denoise_signed(noisy * 2 - 1, sigma) + 1) / 2


def denoising_target(model: FaceDenoiser, clean: torch.Tensor, noisy: torch.Tensor,
                     sigma: torch.Tensor) -> torch.Tensor:
    """EDM's effective training target for F: the loss ‖F − target‖² weights every σ alike."""
    c_skip, c_out, _ = edm_scalings(sigma.view(-1, 1, 1, 1))
    return (clean - c_skip * noisy) / c_out


def psnr(estimate: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
    """Per-image PSNR in dB for images in [0, 1]."""
    mse = (estimate.clamp(0, 1) - clean).pow(2).flatten(1).mean(1)
    return 10 * torch.log10(1 / mse.clamp_min(1e-12))
