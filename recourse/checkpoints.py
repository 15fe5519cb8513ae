"""Saving and loading classifiers as safetensors + a JSON config; nothing is unpickled."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from recourse.classifier import AttributeClassifier, ClassifierConfig

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


class CheckpointError(ValueError):
    """A checkpoint folder is missing or does not match its config."""


def write_checkpoint(module: nn.Module, directory: str | os.PathLike, config: dict[str, Any]) -> Path:
    """Write ``module``'s state as ``model.safetensors`` and ``config`` as ``config.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().clone() for k, v in module.state_dict().items()}
    save_file(state, str(directory / WEIGHTS_FILE))
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    return directory


def load_weights(module: nn.Module, directory: str | os.PathLike) -> None:
    """Load ``model.safetensors`` of ``directory`` into ``module``, or raise CheckpointError."""
    weights = Path(directory) / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{weights}: weights not found")
    try:
        module.load_state_dict(load_file(str(weights)))
    except RuntimeError as error:
        raise CheckpointError(f"{weights}: does not match {CONFIG_FILE} ({error})") from None


def save_classifier(model: AttributeClassifier, directory: str | os.PathLike, metadata: dict[str, Any]) -> Path:
    """Write ``model.safetensors`` and ``config.json`` (architecture + ``metadata``)."""
    return write_checkpoint(model, directory, {"architecture": "AttributeClassifier", **model.config.to_dict(), **metadata})


def read_config(directory: str | os.PathLike) -> dict[str, Any]:
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint config not found")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from None


def load_classifier(directory: str | os.PathLike) -> AttributeClassifier:
    """Load a classifier in eval mode from a folder written by :func:`save_classifier`."""
    directory = Path(directory)
    config = read_config(directory)
    if config.get("architecture") != "AttributeClassifier":
        raise CheckpointError(f"{directory / CONFIG_FILE}: unknown architecture {config.get('architecture')!r}")
    model = AttributeClassifier(ClassifierConfig.from_dict(config))
    load_weights(model, directory)
    return model.eval()


def save_training_state(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Resumable training state: tensors only, so resuming never unpickles code."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(path)


def load_training_state(path: str | os.PathLike) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def update_config(directory: str | os.PathLike, **fields: Any) -> None:
    """Add or replace fields of a checkpoint's ``config.json``."""
    path = Path(directory) / CONFIG_FILE
    config = read_config(directory)
    config.update(fields)
    path.write_text(json.dumps(config, indent=2) + "\n")


def file_digest(path: Path) -> str:
    """Content digest of a file, or of every file in a folder (a hub id digests as its name)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
    for file in files:
        digest.update(file.read_bytes())
    digest.update(str(path).encode() if not files else b"")
    return digest.hexdigest()[:16]


def folder_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
