"""Cache files that say what they hold: a key (what they were computed from), a count and a
SHA-256 of their content, checked before anything in them is used.

A cache that does not match — edited, truncated, copied from another run, written by an
older version — is never used: the caller recomputes it and a :class:`CacheWarning` says
which file and why. Without this, an edited part of the benchmark's cache changed its table
and a decoded-image cache with its images reordered scored below the majority baseline,
both without a word.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file


class CacheWarning(UserWarning):
    """A cache file was not used and is being recomputed."""


class CacheMismatch(Exception):
    """A cache file that must not be used; the message says why (caught by the callers)."""


def arrays_digest(arrays: Mapping[str, np.ndarray | torch.Tensor]) -> str:
    """SHA-256 of named arrays: names, dtypes, shapes and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = arrays[name]
        if isinstance(array, torch.Tensor):
            array = array.detach().cpu().contiguous().numpy()
        array = np.ascontiguousarray(array)
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(memoryview(array).cast("B") if array.size else b"")
    return digest.hexdigest()


def json_digest(value: Any) -> str:
    """SHA-256 of a JSON value in its canonical form (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_fields(stored: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """Each expected field is stored with that value, or raise CacheMismatch naming the first
    that is not."""
    for name, value in expected.items():
        if str(stored.get(name)) != str(value):
            raise CacheMismatch(f"its {name} is {stored.get(name)!r}, expected {value!r}")


def discard(path: Path, reason: str) -> None:
    """Say that ``path`` will be recomputed, and why."""
    warnings.warn(f"cache {Path(path).name} not used ({reason}); recomputing it", CacheWarning, stacklevel=3)


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], fields: Mapping[str, Any]) -> None:
    """Save ``tensors`` with ``fields`` and their ``sha256`` as metadata, atomically."""
    path = Path(path)
    tensors = {name: tensor.contiguous() for name, tensor in tensors.items()}
    metadata = {**{k: str(v) for k, v in fields.items()}, "sha256": arrays_digest(tensors)}
    temporary = path.with_suffix(f".{os.getpid()}.tmp")  # two processes writing one key never share a half file
    save_file(tensors, str(temporary), metadata=metadata)
    temporary.replace(path)


def read_tensors(path: Path, fields: Mapping[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors and metadata of a file written by :func:`write_tensors`, or raise
    CacheMismatch if it cannot be read, any of ``fields`` differs or its content does not
    match its checksum."""
    try:
        with safe_open(str(path), "pt") as handle:
            metadata = dict(handle.metadata() or {})
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise CacheMismatch(f"unreadable: {error}") from None
    check_fields(metadata, fields)
    if arrays_digest(tensors) != metadata.get("sha256"):
        raise CacheMismatch("its content does not match its checksum")
    return tensors, metadata
