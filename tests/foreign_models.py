"""Tiny foreign models and their cards for tests/test_foreign_*.py (made on the fly, seeded)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from recourse.foreign.architectures import PlainConvNet
from recourse.foreign.export import export_onnx, save_program

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
# The deliberately different model: another architecture, 96×96, ImageNet normalisation, three
# attributes not in CelebA's order (there: Male 20, Smiling 31, Young 39), probabilities out.
DIFFERENT_ATTRIBUTES = ["Young", "Smiling", "Male"]
DIFFERENT_CONFIG = {"widths": [6, 12, 12], "outputs": 3, "activation": "silu", "head": "sigmoid"}


def different_model(seed: int = 0) -> PlainConvNet:
    torch.manual_seed(seed)
    model = PlainConvNet(tuple(DIFFERENT_CONFIG["widths"]), 3, "silu", "sigmoid")
    with torch.no_grad():  # BN statistics that are not the identity, so they matter
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 2.0)
    return model.eval()


def different_card(fmt: str, weights: str) -> dict[str, Any]:
    card: dict[str, Any] = {
        "card_version": 1, "name": "different", "format": fmt, "weights": weights,
        "input": {"size": [96, 96], "channel_order": "RGB", "layout": "NCHW", "value_range": [0, 1],
                  "mean": IMAGENET_MEAN, "std": IMAGENET_STD, "framing": "celeba-hq"},
        "output": {"kind": "probabilities", "attributes": list(DIFFERENT_ATTRIBUTES)},
    }
    if fmt == "safetensors":
        card["architecture"] = {"name": "PlainConvNet", "config": copy.deepcopy(DIFFERENT_CONFIG)}
    return card


def write_card_file(folder: Path, card: dict[str, Any], name: str = "recourse-card.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(card))
    return path


def save_different(folder: Path, fmt: str, model: torch.nn.Module | None = None) -> Path:
    """The different model saved in ``fmt`` with its card; returns the folder."""
    model = model if model is not None else different_model()
    folder.mkdir(parents=True, exist_ok=True)
    example = torch.rand(2, 3, 96, 96)
    weights = {"torch-export": "model.pt2", "onnx": "model.onnx", "safetensors": "model.safetensors"}[fmt]
    if fmt == "torch-export":
        save_program(model, example, folder / weights)
    elif fmt == "onnx":
        export_onnx(model, example, folder / weights)
    else:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / weights))
    write_card_file(folder, different_card(fmt, weights))
    return folder


def reference_logits(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    """What the adapter must compute for the different model, written out by hand."""
    x = torch.nn.functional.interpolate(images, size=(96, 96), mode="bilinear", align_corners=False)
    x = (x - torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    p = model(x).double().clamp(1e-7, 1 - 1e-7)
    return (p / (1 - p)).log().float()
