"""A small critic per face part that tells a real part from a damaged one.

It is trained on real train faces' templates against synthetic damage of the same templates:
blobs of a flat colour (white, grey, red, teal, the skin's own), a region smeared by a heavy
blur, a flat band across the part, a colour cast, smooth noise. It never sees any method's
edits, so it does not learn one method's trace; what it fails is what those failures have in
common: a part that no longer has the structure of a real one. Its score is a logit (higher:
more likely damaged); the artifact check's limit is the 98th percentile of real val faces'.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import ModelMixin
from diffusers.configuration_utils import ConfigMixin, register_to_config
from torch import nn

from recourse.generation.spaces.colour import rgb_to_ycbcr


class ArtifactCritic(ModelMixin, ConfigMixin):
    """Template ``(N, 3, h, w)`` RGB in [0, 1] → ``(N,)`` logit that the part is damaged."""

    @register_to_config
    def __init__(self, group: str = "mouth", channels: tuple[int, ...] = (16, 32, 64), limit: float = 0.0) -> None:
        super().__init__()
        layers, width = [], 3
        for out in channels:
            layers += [nn.Conv2d(width, out, 3, stride=2, padding=1), nn.SiLU()]
            width = out
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(2 * width, 1)

    def forward(self, templates: torch.Tensor) -> torch.Tensor:
        features = self.features(rgb_to_ycbcr(templates) - 0.5)
        pooled = torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1)
        return self.head(pooled)[:, 0]


def _ellipse(h: int, w: int, taper: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A soft ellipse ``(h, w)`` centred somewhere the part is (taper > 0.5)."""
    candidates = torch.nonzero(taper > 0.5)
    cy, cx = candidates[int(torch.randint(len(candidates), (1,), generator=generator))].tolist()
    ry = h * float(torch.empty(1).uniform_(0.12, 0.4, generator=generator))
    rx = w * float(torch.empty(1).uniform_(0.12, 0.4, generator=generator))
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    distance = ((ys - cy) / ry) ** 2 + ((xs - cx) / rx) ** 2
    sharpness = float(torch.empty(1).uniform_(2, 10, generator=generator))
    return torch.sigmoid((1 - distance) * sharpness)


def _blur(template: torch.Tensor, sigma: float) -> torch.Tensor:
    radius = max(1, int(math.ceil(2.5 * sigma)))
    offsets = torch.arange(-radius, radius + 1, dtype=torch.float32)
    kernel = torch.exp(-offsets ** 2 / (2 * sigma ** 2))
    kernel = (kernel / kernel.sum()).view(1, 1, 1, -1).expand(3, 1, 1, -1)
    x = F.conv2d(F.pad(template[None], (radius, radius, 0, 0), mode="replicate"), kernel, groups=3)
    x = F.conv2d(F.pad(x, (0, 0, radius, radius), mode="replicate"), kernel.transpose(-1, -2), groups=3)
    return x[0]


def damage(template: torch.Tensor, taper: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One damaged copy of a ``(3, h, w)`` RGB template (see the module's doc for the kinds)."""
    _, h, w = template.shape
    kind = int(torch.randint(5, (1,), generator=generator))
    mask = _ellipse(h, w, taper, generator)[None]
    uniform = lambda low, high: float(torch.empty(1).uniform_(low, high, generator=generator))  # noqa: E731
    if kind == 0:  # a flat blob: white, grey, a random colour or the part's own mean colour
        choice = int(torch.randint(4, (1,), generator=generator))
        fill = {0: torch.full((3,), uniform(0.75, 1.0)), 1: torch.full((3,), uniform(0.2, 0.7)),
                2: torch.rand(3, generator=generator), 3: template.mean(dim=(1, 2)) * uniform(0.8, 1.25)}[choice]
        damaged = template * (1 - mask) + fill.clamp(0, 1)[:, None, None] * mask
    elif kind == 1:  # a smear: the region replaced by a heavy blur of itself
        damaged = template * (1 - mask) + _blur(template, uniform(2.0, 5.0)) * mask
    elif kind == 2:  # a flat band across the part (a grey stripe where glasses should be)
        top = int(torch.randint(0, max(1, h - 4), (1,), generator=generator))
        height = max(3, int(h * uniform(0.15, 0.35)))
        band = torch.zeros(1, h, w)
        band[:, top:top + height] = 1
        band = _blur(band.expand(3, -1, -1), 0.8)[:1] * uniform(0.5, 1.0)
        fill = torch.full((3, 1, 1), uniform(0.1, 0.7))
        damaged = template * (1 - band) + fill * band
    elif kind == 3:  # a colour cast in a region (a teal mouth, a magenta glow)
        cast = (torch.rand(3, generator=generator) - 0.5) * uniform(0.2, 0.6)
        damaged = template + cast[:, None, None] * mask
    else:  # smooth noise
        coarse = torch.randn(3, max(2, h // 6), max(2, w // 6), generator=generator) * uniform(0.05, 0.2)
        damaged = template + F.interpolate(coarse[None], size=(h, w), mode="bicubic", align_corners=False)[0] * mask
    return damaged.clamp(0, 1)


def train_critic(group: str, templates: torch.Tensor, taper: torch.Tensor, epochs: int = 2, batch: int = 128,
                 seed: int = 0, progress: Callable[[str], None] = print) -> ArtifactCritic:
    """A critic trained on real ``templates`` ``(N, 3, h, w)`` RGB against damaged copies of them."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    critic = ArtifactCritic(group=group)
    optimizer = torch.optim.Adam(critic.parameters(), lr=2e-3)
    half = batch // 2
    steps = epochs * len(templates) // half
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-3, total_steps=steps)
    for step in range(steps):
        real = templates[torch.randint(len(templates), (half,), generator=generator)]
        damaged = torch.stack([damage(t, taper, generator) for t in
                               templates[torch.randint(len(templates), (half,), generator=generator)]])
        logits = critic(torch.cat([real, damaged]))
        labels = torch.cat([torch.zeros(half), torch.ones(half)])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0 or step == steps - 1:
            accuracy = float(((logits > 0).float() == labels).float().mean())
            progress(f"critic {group}: step {step + 1}/{steps}, loss {float(loss):.3f}, batch accuracy {accuracy:.2f}")
    return critic.eval().requires_grad_(False)
