"""Storing variants: each layer's weight codes packed at its bit width, plus scales, biases
and activation ranges (``model.safetensors``), and a JSON config. Nothing is unpickled."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from recourse.checkpoints import CONFIG_FILE, WEIGHTS_FILE, CheckpointError, read_config
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.compression.api import QuantizedModel, config_classes
from recourse.compression.bitpack import pack_codes, unpack_codes
from recourse.compression.fakequant import (
    bits_of, fold_batch_norm, prepare_twin, set_weight_quantizer, set_weights_from_codes, to_integer, weight_codes,
    weight_layers,
)
from recourse.paths import shown

# config.json fields that are not the variant's details
_RECORD_FIELDS = ("method", "settings", "bits_per_weight", "make_seconds", "classifier")


def save_variant(variant: QuantizedModel, base: nn.Module, directory: str | os.PathLike,
                 metadata: dict[str, Any] | None = None) -> Path:
    """Write ``model.safetensors`` and ``config.json`` (method, settings, bits, time, the
    base architecture and ``metadata``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    layers = weight_layers(variant.twin)
    weights = {f"{name}.weight" for name in layers}
    state = {k: v.detach().contiguous().clone() for k, v in variant.twin.state_dict().items() if k not in weights}
    for name, layer in layers.items():
        state[f"{name}.weight_codes"] = pack_codes(weight_codes(layer), bits_of(layer))
    save_file(state, str(directory / WEIGHTS_FILE))
    record = {
        "method": variant.config.method, "settings": asdict(variant.config),
        "bits_per_weight": round(variant.bits_per_weight, 4), "make_seconds": round(variant.seconds, 2),
        "integer_kernels": variant.integer is not None, "classifier": base.config.to_dict(),
        **variant.details, **(metadata or {}),
    }
    (directory / CONFIG_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return directory


def load_variant(directory: str | os.PathLike) -> QuantizedModel:
    """Rebuild a saved variant (twin and integer model), or raise CheckpointError."""
    directory = Path(directory)
    record = read_config(directory)
    configs = config_classes()
    if record.get("method") not in configs:
        raise CheckpointError(f"{shown(directory / CONFIG_FILE)}: not a compressed variant "
                              f"(unknown method {record.get('method')!r})")
    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"{shown(path)}: weights not found")
    try:
        settings = {k: tuple(v) if isinstance(v, list) else v for k, v in record["settings"].items()}
        config = configs[record["method"]](**settings)
        base = AttributeClassifier(ClassifierConfig.from_dict(record["classifier"])).eval()
        twin = prepare_twin(fold_batch_norm(base), base.config.resolution)
        layers = weight_layers(twin)
        state = load_file(str(path))
        for name, layer in layers.items():
            set_weight_quantizer(layer, int(record["layer_bits"][name]))
        codes = {name: state.pop(f"{name}.weight_codes") for name in layers}
        missing, unexpected = twin.load_state_dict(state, strict=False)
        if unexpected or set(missing) != {f"{name}.weight" for name in layers}:
            raise CheckpointError(f"{shown(path)}: does not match {CONFIG_FILE} "
                                  f"(missing {missing}, unexpected {unexpected})")
        for name, layer in layers.items():
            set_weights_from_codes(layer, unpack_codes(codes[name], bits_of(layer), layer.weight.numel()))
        bits = float(record["bits_per_weight"])
        seconds = float(record["make_seconds"])
    except (KeyError, TypeError, ValueError, RuntimeError, SafetensorError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{shown(path)}: does not match {CONFIG_FILE} ({type(error).__name__}: {error})") from None
    twin.eval()
    details = {k: v for k, v in record.items() if k not in _RECORD_FIELDS}
    return QuantizedModel(twin, to_integer(twin), config, bits, seconds, details)
