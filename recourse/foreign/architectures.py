"""The architectures a safetensors card may name: safetensors holds tensors, not code, so the
network must be one we ship. Each entry checks its config (bounded, so a downloaded card cannot
ask for a huge network) before anything is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.validation import check_int


class PlainConvNet(nn.Module):
    """A plain stride-2 convolution stack: ``conv3×3/2 → BN → act`` per stage, global average
    pooling, one linear layer, and optionally a sigmoid (a model that outputs probabilities).
    Takes whatever its card says it takes; no normalisation inside."""

    def __init__(self, widths: tuple[int, ...] = (16, 32, 64), outputs: int = 40, activation: str = "relu",
                 head: str = "none") -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for width in widths:
            layers += [nn.Conv2d(channels, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width),
                       nn.ReLU() if activation == "relu" else nn.SiLU()]
            channels = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels, outputs)
        self.sigmoid = head == "sigmoid"

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.head(self.features(images).mean(dim=(2, 3)))
        return torch.sigmoid(out) if self.sigmoid else out


def _check_plain(config: dict[str, Any]) -> None:
    widths = config.get("widths", [16, 32, 64])
    if not isinstance(widths, list | tuple) or not 1 <= len(widths) <= 8:
        raise ValueError(f"widths must be 1 to 8 stage widths, got {widths!r}")
    for width in widths:
        check_int("a width", width, 1, 1024)
    check_int("outputs", config.get("outputs", 40), 1, 80)
    if config.get("activation", "relu") not in ("relu", "silu"):
        raise ValueError(f"activation must be 'relu' or 'silu', got {config.get('activation')!r}")
    if config.get("head", "none") not in ("none", "sigmoid"):
        raise ValueError(f"head must be 'none' or 'sigmoid', got {config.get('head')!r}")


def _build_plain(config: dict[str, Any]) -> nn.Module:
    return PlainConvNet(tuple(config.get("widths", (16, 32, 64))), config.get("outputs", 40),
                        config.get("activation", "relu"), config.get("head", "none"))


def _classifier_config(config: dict[str, Any]) -> ClassifierConfig:
    if "attributes" in config:
        raise ValueError("attributes belong in the card's output.attributes, not in the architecture")
    return ClassifierConfig.from_dict(config)  # its __post_init__ bounds every field


@dataclass(frozen=True)
class Architecture:
    fields: tuple[str, ...]
    check_fields: Callable[[dict[str, Any]], Any]
    make: Callable[[dict[str, Any]], nn.Module]

    def check(self, config: dict[str, Any]) -> None:
        unknown = sorted(set(config) - set(self.fields))
        if unknown:
            raise ValueError(f"unknown setting {unknown[0]!r}")
        self.check_fields(config)

    def build(self, config: dict[str, Any]) -> nn.Module:
        self.check(config)
        return self.make(config).eval()


ARCHITECTURES: dict[str, Architecture] = {
    # the project's own classifier: 40 logits in CelebA order, normalisation inside
    "AttributeClassifier": Architecture(
        ("widths", "activation", "dropout", "resolution", "mean", "std"),
        _classifier_config, lambda config: AttributeClassifier(_classifier_config(config))),
    "PlainConvNet": Architecture(("widths", "outputs", "activation", "head"), _check_plain, _build_plain),
}
