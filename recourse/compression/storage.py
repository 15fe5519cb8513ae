"""Storing variants: each layer's weight codes packed at its bit width, plus scales, biases
and activation ranges (``model.safetensors``), and a JSON config. Nothing is unpickled."""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from recourse.checkpoints import (
    CONFIG_FILE, WEIGHTS_FILE, CheckpointError, classifier_config, read_config, read_weights, write_manifest,
)
from recourse.classifier import AttributeClassifier
from recourse.compression.api import QuantizedModel, config_classes
from recourse.compression.bitpack import pack_codes, unpack_codes
from recourse.compression.fakequant import (
    BIT_CHOICES, bits_of, bits_with_ends, fold_batch_norm, prepare_twin, set_weight_quantizer, set_weights_from_codes,
    to_integer, weight_codes, weight_layers,
)
from recourse.locations import shown

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
    write_manifest(directory)
    return directory


_TWINS: dict[str, nn.Module] = {}  # one prepared twin per architecture, copied for each variant loaded


def _empty_twin(base: AttributeClassifier) -> nn.Module:
    """A fresh twin of ``base``'s architecture, its values to be loaded: tracing and preparing the graph
    (about half a second) is done once per architecture, then copied (a variant's values are all
    loaded or set from its codes, so the template's own never reach a result)."""
    key = json.dumps(base.config.to_dict() if hasattr(base.config, "to_dict") else dict(base.config), sort_keys=True,
                     default=str)
    if key not in _TWINS:
        _TWINS[key] = prepare_twin(fold_batch_norm(base), base.config.resolution)
    return copy.deepcopy(_TWINS[key])


def load_variant(directory: str | os.PathLike) -> QuantizedModel:
    """Rebuild a saved variant (twin and integer model), or raise CheckpointError.

    Everything read is checked before it is used: a config's method, settings, base
    architecture (the 40 CelebA attribute names, in order) and each layer's bit width; each
    layer's packed codes must have exactly the bytes its width and size give (a width
    changed from 8 to 4 would otherwise reinterpret the codes), every stored scale and range
    the shape the twin has, every scale positive and every tensor finite."""
    directory = Path(directory)
    where, path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
    record = read_config(directory)
    configs = config_classes()
    method = record.get("method")
    if not isinstance(method, str) or method not in configs:
        raise CheckpointError(f"{shown(where)}: not a compressed variant (unknown method {_quote(method)})")
    config = _method_config(configs[method], record.get("settings"), where)
    base = AttributeClassifier(classifier_config(record.get("classifier"), where)).eval()
    bits = _number(record, "bits_per_weight", where, 1.0, 32.0)
    seconds = _number(record, "make_seconds", where, 0.0, math.inf)
    state = read_weights(path)
    twin = _empty_twin(base)
    layers = weight_layers(twin)
    layer_bits = _layer_bits(record.get("layer_bits"), layers, config, bits, where)
    for name, layer in layers.items():
        set_weight_quantizer(layer, layer_bits[name])
    codes = {}
    for name, layer in layers.items():
        packed = state.pop(f"{name}.weight_codes", None)
        expected = math.ceil(layer.weight.numel() * layer_bits[name] / 8)
        if packed is None or packed.dtype != torch.uint8 or tuple(packed.shape) != (expected,):
            found = "none" if packed is None else f"{packed.numel()} {packed.dtype}"
            raise CheckpointError(f"{shown(path)}: layer {name} should hold {expected} bytes of "
                                  f"{layer_bits[name]}-bit codes, holds {found} (does not match {CONFIG_FILE})")
        codes[name] = packed
    _check_state(state, twin, {f"{name}.weight" for name in layers}, path)
    try:
        twin.load_state_dict(state, strict=False)
    except RuntimeError as error:
        raise CheckpointError(f"{shown(path)}: does not match {CONFIG_FILE} ({str(error).splitlines()[0]})") from None
    for name, layer in layers.items():
        set_weights_from_codes(layer, unpack_codes(codes[name], layer_bits[name], layer.weight.numel()))
    twin.eval()
    details = {k: v for k, v in record.items() if k not in _RECORD_FIELDS}
    return QuantizedModel(twin, to_integer(twin), config, bits, seconds, details)


def _quote(value: Any) -> str:
    """A value from a file, quoted and cut short for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _method_config(config_class: type, settings: Any, where: Path):
    if not isinstance(settings, dict):
        raise CheckpointError(f"{shown(where)}: the method's settings are missing")
    unknown = sorted(set(settings) - set(config_class.__dataclass_fields__))
    if unknown:
        raise CheckpointError(f"{shown(where)}: unknown {config_class.method} setting {_quote(unknown[0])}")
    try:
        return config_class(**{k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()})
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{shown(where)}: invalid {config_class.method} settings ({error})") from None


def _number(record: dict, field: str, where: Path, low: float, high: float) -> float:
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise CheckpointError(f"{shown(where)}: {field} must be a number from {low} to {high}, got {_quote(value)}")
    return float(value)


def _layer_bits(layer_bits: Any, layers: dict[str, nn.Module], config, bits: float, where: Path) -> dict[str, int]:
    """Each weight layer's bit width, checked against the method and the recorded mean."""
    if not isinstance(layer_bits, dict) or set(layer_bits) != set(layers):
        raise CheckpointError(f"{shown(where)}: layer_bits must give the bit width of each of the "
                              f"{len(layers)} weight layers ({', '.join(layers)})")
    if hasattr(config, "weight_bits"):  # one width, or one for the ends and one for the rest: exactly that
        fixed = bits_with_ends(list(layers), config.weight_bits, getattr(config, "ends_bits", None))
        allowed = {name: (bits_wanted,) for name, bits_wanted in fixed.items()}
    else:
        allowed = {name: getattr(config, "bit_choices", BIT_CHOICES) for name in layers}
    for name, value in layer_bits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value not in allowed[name]:
            raise CheckpointError(f"{shown(where)}: layer {name} has {_quote(value)} bits; {config.method} uses "
                                  f"{' or '.join(map(str, allowed[name]))} there")
    total = sum(layer.weight.numel() for layer in layers.values())
    mean = sum(layer_bits[name] * layer.weight.numel() for name, layer in layers.items()) / total
    if abs(mean - bits) > 1e-3:  # the record rounds to 4 decimals
        raise CheckpointError(f"{shown(where)}: layer_bits give {mean:.4f} bits per weight, "
                              f"bits_per_weight says {bits}")
    return {name: int(value) for name, value in layer_bits.items()}


def _check_state(state: dict[str, torch.Tensor], twin: nn.Module, weights: set[str], path: Path) -> None:
    """The stored tensors are exactly the twin's (its weights aside), each of the twin's shape.

    ``load_state_dict`` alone is not enough: fake-quantize modules resize their scales and
    ranges to whatever is loaded."""
    own = {k: v for k, v in twin.state_dict().items() if k not in weights}
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or unexpected:
        raise CheckpointError(f"{shown(path)}: does not match {CONFIG_FILE} (missing {missing[:3]}, "
                              f"unexpected {unexpected[:3]})")
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[key].shape):
            raise CheckpointError(f"{shown(path)}: {key} has shape {tuple(tensor.shape)}, the model needs "
                                  f"{tuple(own[key].shape)} (does not match {CONFIG_FILE})")
        if key.endswith(".scale") and not bool((tensor > 0).all()):
            raise CheckpointError(f"{shown(path)}: {key} holds scales that are not positive")
