"""Saving and loading classifiers as safetensors + a JSON config; nothing is unpickled.

Every checkpoint folder carries a content manifest (``manifest.json``: the SHA-256 of each
of its files), written when the checkpoint is made and checked whenever a file of it is
read, on the very bytes that are then parsed. Shape checks alone let a checkpoint with
flipped biases or altered weight bytes load and give wrong numbers without a word. The
manifest is not a signature: whoever can write the folder can re-record it; it makes any
change to a checkpoint's content a deliberate, reviewable step (``python -m
scripts.chores.record_manifests FOLDER``) instead of a silent one."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save_file
from torch import nn

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.data import ATTRIBUTES
from recourse.locations import shown

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
MANIFEST_FILE = "manifest.json"
RECORD_COMMAND = "python -m scripts.chores.record_manifests"


class CheckpointError(ValueError):
    """A checkpoint folder is missing, does not match its config or its manifest."""


def write_manifest(directory: str | os.PathLike) -> Path:
    """Record the SHA-256 of every file under ``directory`` (sub-folders included, other
    manifests excepted) in its ``manifest.json``."""
    directory = Path(directory)
    digests = {file.relative_to(directory).as_posix(): hashlib.sha256(file.read_bytes()).hexdigest()
               for file in sorted(directory.rglob("*")) if file.is_file() and file.name != MANIFEST_FILE}
    path = directory / MANIFEST_FILE
    path.write_text(json.dumps({"sha256": digests}, indent=2) + "\n")
    return path


def _manifest(directory: Path) -> dict[str, str]:
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise CheckpointError(f"{shown(path)}: no content manifest; if you made this checkpoint, record one with "
                              f"{RECORD_COMMAND} {shown(directory)}")
    try:
        digests = json.loads(path.read_text()).get("sha256")
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, AttributeError):
        digests = None
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        raise CheckpointError(f"{shown(path)}: not a content manifest (expected {{\"sha256\": {{file: digest}}}})")
    return digests


def verified_bytes(path: str | os.PathLike, root: str | os.PathLike | None = None) -> bytes:
    """The bytes of a checkpoint file, after checking them against the manifest of ``root``
    (default: the file's own folder). Read once: what is checked is what gets parsed."""
    path = Path(path)
    root = Path(root) if root is not None else path.parent
    expected = _manifest(root).get(path.relative_to(root).as_posix())
    if expected is None:
        raise CheckpointError(f"{shown(path)}: not listed in {shown(root / MANIFEST_FILE)}")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != expected:
        raise CheckpointError(f"{shown(path)}: its content does not match {shown(root / MANIFEST_FILE)} "
                              "(changed or damaged since the checkpoint was made)")
    return data


def verify_folder(directory: str | os.PathLike) -> None:
    """Check every file under ``directory`` against its manifest: each listed file is there
    with its recorded content, and no file is there that the manifest does not list. For
    folders read by other libraries (the generator's diffusers parts), which open the files
    themselves."""
    directory = Path(directory)
    digests = _manifest(directory)
    present = {file.relative_to(directory).as_posix() for file in directory.rglob("*")
               if file.is_file() and file.name != MANIFEST_FILE}
    unlisted = sorted(present - set(digests))
    if unlisted:
        raise CheckpointError(f"{shown(directory / unlisted[0])}: not listed in {shown(directory / MANIFEST_FILE)}")
    for name in sorted(digests):
        if name not in present:
            raise CheckpointError(f"{shown(directory / name)}: listed in {shown(directory / MANIFEST_FILE)} "
                                  "but missing")
        verified_bytes(directory / name, directory)


def write_checkpoint(module: nn.Module, directory: str | os.PathLike, config: dict[str, Any]) -> Path:
    """Write ``module``'s state as ``model.safetensors`` and ``config`` as ``config.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().clone() for k, v in module.state_dict().items()}
    save_file(state, str(directory / WEIGHTS_FILE))
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    write_manifest(directory)
    return directory


def read_weights(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file, or CheckpointError if it is missing, truncated or
    not safetensors at all. Floating tensors must be finite: a NaN weight would make every
    prediction NaN without a word."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{shown(path)}: weights not found")
    data = verified_bytes(path)
    try:
        state = load_safetensors(data)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{shown(path)}: not a readable safetensors file ({error})") from None
    broken = [name for name, tensor in state.items()
              if tensor.is_floating_point() and not bool(tensor.isfinite().all())]
    if broken:
        raise CheckpointError(f"{shown(path)}: tensor {broken[0]} holds NaN or infinite values")
    return state


def load_weights(module: nn.Module, directory: str | os.PathLike) -> None:
    """Load ``model.safetensors`` of ``directory`` into ``module``, or raise CheckpointError."""
    weights = Path(directory) / WEIGHTS_FILE
    state = read_weights(weights)
    try:
        module.load_state_dict(state)
    except RuntimeError as error:
        raise CheckpointError(f"{shown(weights)}: does not match {CONFIG_FILE} ({_first_line(error)})") from None


def _first_line(error: Exception) -> str:
    """The gist of a library's message: its first line, without the tracebacks some append."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def save_classifier(model: AttributeClassifier, directory: str | os.PathLike, metadata: dict[str, Any]) -> Path:
    """Write ``model.safetensors`` and ``config.json`` (architecture + ``metadata``)."""
    return write_checkpoint(model, directory, {"architecture": "AttributeClassifier", **model.config.to_dict(), **metadata})


def read_config(directory: str | os.PathLike) -> dict[str, Any]:
    """A checkpoint's ``config.json`` as a dict, or CheckpointError."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{shown(path)}: checkpoint config not found")
    data = verified_bytes(path)
    try:
        config = json.loads(data.decode())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as error:
        raise CheckpointError(f"{shown(path)}: not valid JSON ({error})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{shown(path)}: not valid JSON for a checkpoint (expected an object of fields)")
    return config


def classifier_config(record: Any, where: Path) -> ClassifierConfig:
    """The architecture recorded in a config (``where`` names it in messages), checked: the
    40 CelebA attribute names in CelebA's order, or the logits would be read as the wrong
    attributes without a word."""
    if not isinstance(record, dict):
        raise CheckpointError(f"{shown(where)}: the classifier's architecture is missing")
    try:
        config = ClassifierConfig.from_dict(record)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{shown(where)}: not a valid classifier architecture ({_first_line(error)})") from None
    if config.attributes != ATTRIBUTES:
        raise CheckpointError(f"{shown(where)}: its attribute names are not the 40 CelebA attributes in CelebA's "
                              "order (a model trained on other labels, or a tampered config)")
    return config


def load_classifier(directory: str | os.PathLike) -> AttributeClassifier:
    """Load a classifier in eval mode from a folder written by :func:`save_classifier`, or
    raise CheckpointError saying what is wrong with it."""
    directory = Path(directory)
    config = read_config(directory)
    if config.get("architecture") != "AttributeClassifier":
        raise CheckpointError(f"{shown(directory / CONFIG_FILE)}: unknown architecture {config.get('architecture')!r}")
    model = AttributeClassifier(classifier_config(config, directory / CONFIG_FILE))
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
    write_manifest(directory)


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
