"""A small synthetic edit space (random orthonormal directions over the mouth template), made
without any dataset, for the tests of recourse.generation.spaces."""

from __future__ import annotations

import torch

from recourse.generation.spaces.space import RegionSpace
from recourse.generation.spaces.templates import SPACES


def synthetic_space(group: str = "mouth", components: int = 8, seed: int = 0) -> RegionSpace:
    spec = SPACES[group]
    space = RegionSpace(group=spec.name, anchors=spec.anchors, box=spec.box, components=components,
                        attributes=spec.attributes, region=spec.region, faces=0)
    generator = torch.Generator().manual_seed(seed)
    dimension = space.mean.numel()
    basis, _ = torch.linalg.qr(torch.randn(dimension, components, generator=generator))
    taper = space.taper.flatten().repeat(3)
    space.mean.copy_(taper * torch.tensor([0.5] * (dimension // 3) + [0.5] * (2 * dimension // 3)))
    space.basis.copy_(basis.T)
    space.scales.copy_(torch.linspace(3.0, 1.0, components))
    space.class_means.normal_(generator=generator)
    return space.eval()


def smooth_faces(count: int = 2, seed: int = 0) -> torch.Tensor:
    """``(N, 3, 64, 64)`` smooth colour images in [0.2, 0.8] (a face's landmarks are the mean ones)."""
    generator = torch.Generator().manual_seed(seed)
    coarse = torch.rand(count, 3, 4, 4, generator=generator) * 0.6 + 0.2
    return torch.nn.functional.interpolate(coarse, size=64, mode="bicubic", align_corners=False).clamp(0, 1)


class MouthBoxModel(torch.nn.Module):
    """40 logits; attribute ``index``'s is a fixed linear function of the mouth box's pixels, the
    others a function of the top rows (which no mouth edit may change)."""

    def __init__(self, index: int, seed: int = 0) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.index = index
        self.weight = torch.nn.Parameter(torch.randn(3, 20, 32, generator=generator) * 0.3)
        self.others = torch.nn.Parameter(torch.randn(39, 3 * 8 * 64, generator=generator) * 0.01)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        mouth = ((images[:, :, 38:58, 16:48] - 0.5) * self.weight).sum(dim=(1, 2, 3))
        top = (images[:, :, :8].flatten(1) - 0.5) @ self.others.T
        return torch.cat([top[:, :self.index], mouth[:, None], top[:, self.index:]], dim=1)
