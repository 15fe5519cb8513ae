"""The decoded-image cache of a dataset split: keyed by what the split depends on, holding
each image file's size and time and a checksum of its images, so that a stale or damaged
file is recomputed (with a :class:`recourse.caches.CacheWarning`), never used."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np

from recourse.caches import CacheMismatch, arrays_digest, check_fields, discard

FORMAT = "images-v2"  # what the cache file holds; a new format never reads an old file


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def cache_key(annotation_files: list[Path], settings: str, names: tuple[str, ...]) -> str:
    """What a decoded split depends on besides its image files (checked one by one on
    reading): the annotation and partition files' content, the decoding ``settings`` (split,
    resolution, framer, which errors skip a photo) and the split's file names."""
    digest = hashlib.sha256(f"{FORMAT}|{settings}|".encode())
    for path in annotation_files:
        digest.update(f"{path.name}:{_file_digest(path)}|".encode())
    digest.update("\n".join(names).encode())
    return digest.hexdigest()


def file_stats(directory: Path, names: tuple[str, ...]) -> np.ndarray:
    """``(N, 2)`` int64: each image file's size and modification time in ns, -1 if absent."""
    stats = np.full((len(names), 2), -1, np.int64)
    for i, name in enumerate(names):
        try:
            stat = (directory / name).stat()
            stats[i] = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            pass
    return stats


def write(path: Path, key: str, images: np.ndarray, kept: np.ndarray, stats: np.ndarray, note: str,
          skipped: tuple[str, ...]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of this process's own: two processes filling the same cache must not share one
    temporary = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(temporary, images=images, kept=kept, stats=stats, key=np.array(key), count=np.array(len(kept)),
             sha256=np.array(arrays_digest({"images": images, "kept": kept, "stats": stats})),
             note=np.array(note), skipped=np.array(skipped, dtype=str))
    temporary.replace(path)


def read(path: Path, key: str, names: tuple[str, ...], directory: Path,
         resolution: int) -> tuple[np.ndarray, np.ndarray, str, tuple[str, ...]] | None:
    """``(images, kept rows, note, skipped names)`` from the cache, or None (with a
    CacheWarning if the file exists but does not match).

    An image file changed since the cache was written (size or time) makes it stale; one
    deleted since does not: the cache holds what it was."""
    if not path.is_file():
        return None
    try:
        try:
            with np.load(path, allow_pickle=False) as cached:
                stored = {name: cached[name] for name in
                          ("images", "kept", "stats", "key", "count", "sha256", "note", "skipped")}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise CacheMismatch(f"unreadable or an older format: {error}") from None
        images, kept, stats = stored["images"], stored["kept"], stored["stats"]
        check_fields({"key": str(stored["key"]), "count": int(stored["count"])}, {"key": key, "count": len(images)})
        if images.dtype != np.uint8 or images.shape[1:] != (3, resolution, resolution) or \
                kept.shape != (len(images),) or kept.dtype != np.int64 or stats.shape != (len(names), 2) or \
                (len(kept) and (kept.min() < 0 or kept.max() >= len(names) or bool((np.diff(kept) <= 0).any()))):
            raise CacheMismatch("its arrays do not fit this split")
        if arrays_digest({"images": images, "kept": kept, "stats": stats}) != str(stored["sha256"]):
            raise CacheMismatch("its content does not match its checksum")
        now = file_stats(directory, names)
        changed = (now[:, 0] >= 0) & (now != stats).any(axis=1)
        if changed.any():
            raise CacheMismatch(f"{int(changed.sum())} image files changed since it was written, "
                                f"the first {names[int(changed.argmax())]}")
    except CacheMismatch as error:
        discard(path, str(error))
        return None
    return images, kept, str(stored["note"]), tuple(str(n) for n in stored["skipped"])
