"""The parts of the project's latent diffusion generator, as diffusers models.

* ``PCAAutoencoder`` — a linear basis (PCA) of the training faces; ``encode`` gives
  whitened coefficients, ``decode`` maps them back to pixels. Fitted in about a minute.
* ``LatentDenoiser`` — a residual MLP predicting the noise on those coefficients.
* ``default_scheduler`` — the DDIM scheduler (cosine schedule) they are trained with.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from diffusers import DDIMScheduler, ModelMixin
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.embeddings import get_timestep_embedding
from torch import nn


class PCAAutoencoder(ModelMixin, ConfigMixin):
    """A linear face basis: images ``(B, 3, R, R)`` in [0, 1] ↔ whitened coefficients ``(B, K)``."""

    @register_to_config
    def __init__(self, resolution: int = 64, latent_dim: int = 512) -> None:
        super().__init__()
        pixels = 3 * resolution * resolution
        self.register_buffer("mean", torch.zeros(pixels))
        self.register_buffer("components", torch.zeros(latent_dim, pixels))  # orthonormal rows
        self.register_buffer("scale", torch.ones(latent_dim))  # std of each coefficient

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        flat = images.flatten(1) - self.mean
        return flat @ self.components.T / self.scale

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        resolution = self.config.resolution
        flat = (latents * self.scale) @ self.components + self.mean
        return flat.view(-1, 3, resolution, resolution)


def fit_pca_autoencoder(images: np.ndarray, latent_dim: int = 512, seed: int = 0) -> PCAAutoencoder:
    """Fit the basis on ``uint8 (N, 3, R, R)`` training images with a randomised SVD."""
    resolution = images.shape[-1]
    data = torch.as_tensor(images).flatten(1).float().div_(255.0)
    mean = data.mean(dim=0)
    data -= mean
    torch.manual_seed(seed)
    _, singular_values, vectors = torch.svd_lowrank(data, q=latent_dim + 32, niter=4)
    autoencoder = PCAAutoencoder(resolution=resolution, latent_dim=latent_dim)
    autoencoder.mean.copy_(mean)
    autoencoder.components.copy_(vectors[:, :latent_dim].T)
    autoencoder.scale.copy_(singular_values[:latent_dim] / math.sqrt(len(data) - 1))
    return autoencoder


class ResidualMLPBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.time = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, width * 2), nn.SiLU(), nn.Linear(width * 2, width))

    def forward(self, hidden: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        return hidden + self.mlp(self.norm(hidden) + self.time(time))


class LatentDenoiser(ModelMixin, ConfigMixin):
    """Predicts the noise ``ε`` of latents ``(B, K)`` at integer timesteps ``(B,)``."""

    @register_to_config
    def __init__(self, latent_dim: int = 512, width: int = 512, depth: int = 3, time_dim: int = 128) -> None:
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(time_dim, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU())
        self.input = nn.Linear(latent_dim, width)
        self.blocks = nn.ModuleList(ResidualMLPBlock(width) for _ in range(depth))
        self.output = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, latent_dim))
        nn.init.zeros_(self.output[1].weight)
        nn.init.zeros_(self.output[1].bias)

    def forward(self, latents: torch.Tensor, timesteps: torch.Tensor) -> torch.Tensor:
        timesteps = torch.as_tensor(timesteps).reshape(-1).expand(len(latents))
        time = self.time_mlp(get_timestep_embedding(timesteps, self.config.time_dim, flip_sin_to_cos=True))
        hidden = self.input(latents)
        for block in self.blocks:
            hidden = block(hidden, time)
        return self.output(hidden)


def default_scheduler() -> DDIMScheduler:
    return DDIMScheduler(num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2", clip_sample=False,
                         prediction_type="epsilon", set_alpha_to_one=True)
