"""The 40-attribute CelebA classifier: a small residual CNN sized for two CPU cores.

The network downsamples in its first convolution (64×64 → 32×32): full-resolution
convolutions dominate the cost on a CPU, and the attributes survive at 32×32 features.
The same class, with other widths, activation and seed, is the independent oracle.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

import torch
from torch import nn

from recourse.data import ATTRIBUTES
from recourse.validation import check_float, check_int


@dataclass(frozen=True)
class ClassifierConfig:
    """Architecture and input normalisation; saved beside the weights."""

    widths: tuple[int, ...] = (48, 96, 192, 384)
    activation: Literal["relu", "silu"] = "relu"
    dropout: float = 0.1
    resolution: int = 64
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.25, 0.25, 0.25)
    attributes: tuple[str, ...] = field(default=ATTRIBUTES)

    def __post_init__(self) -> None:
        # bounded: a config read from a checkpoint must not be able to ask for a huge network
        if not isinstance(self.widths, tuple) or not 1 <= len(self.widths) <= 8:
            raise ValueError(f"widths must be 1 to 8 stage widths, got {self.widths!r}")
        for width in self.widths:
            check_int("a width", width, 1, 4096)
        if self.activation not in ("relu", "silu"):
            raise ValueError(f"activation must be 'relu' or 'silu', got {self.activation!r}")
        check_float("dropout", self.dropout, 0.0, 1.0)
        if self.dropout == 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        check_int("resolution", self.resolution, 8, 1024)
        for name, values, low in (("mean", self.mean, 0.0), ("std", self.std, 1e-6)):
            if not isinstance(values, tuple) or len(values) != 3:
                raise ValueError(f"{name} must be 3 numbers, one per colour channel, got {values!r}")
            for value in values:
                check_float(f"a {name} value", value, low, 10.0)
        if not isinstance(self.attributes, tuple) or len(self.attributes) != 40 or \
                not all(isinstance(a, str) for a in self.attributes):
            raise ValueError("attributes must be a tuple of 40 attribute names")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ClassifierConfig":
        known = {k: values[k] for k in cls.__dataclass_fields__ if k in values}
        for key in ("widths", "mean", "std", "attributes"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)


def _activation(name: str) -> nn.Module:
    return nn.ReLU(inplace=True) if name == "relu" else nn.SiLU(inplace=True)


def _conv_bn(in_channels: int, out_channels: int, stride: int) -> list[nn.Module]:
    return [
        nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False),
        nn.BatchNorm2d(out_channels),
    ]


class ResidualConv(nn.Module):
    """``act(x + BN(conv(x)))``: one 3×3 convolution with an identity shortcut."""

    def __init__(self, channels: int, activation: str) -> None:
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(channels, channels, 1))
        self.act = _activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x + self.body(x))


class AttributeClassifier(nn.Module):
    """Maps images ``(B, 3, H, W)`` in [0, 1] to 40 attribute logits ``(B, 40)``."""

    def __init__(self, config: ClassifierConfig | None = None) -> None:
        super().__init__()
        self.config = config or ClassifierConfig()
        widths, act = self.config.widths, self.config.activation
        layers: list[nn.Module] = [*_conv_bn(3, widths[0], 2), _activation(act)]
        channels = widths[0]
        for stage, width in enumerate(widths):
            stride = 1 if stage == 0 else 2
            layers += [*_conv_bn(channels, width, stride), _activation(act), ResidualConv(width, act)]
            channels = width
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(self.config.dropout), nn.Linear(channels, 40))
        mean = torch.tensor(self.config.mean).view(1, 3, 1, 1)
        std = torch.tensor(self.config.std).view(1, 3, 1, 1)
        self.register_buffer("mean", mean, persistent=False)
        self.register_buffer("std", std, persistent=False)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``(B, C)``: the oracle's feature space for FD."""
        return self.pool(self.features((images - self.mean) / self.std)).flatten(1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(images))
