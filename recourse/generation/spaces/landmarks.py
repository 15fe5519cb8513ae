"""The 68 face landmarks of a whole split, fitted once and kept in a git-ignored cache.

Fitting the edit spaces warps every train face by its own landmarks; dlib takes about 25 ms a
face, so a split's fits are stored in ``.cache/landmarks/<data>-<split>.npz`` (points in the
64-px frame, ``found``, and the image names they belong to) and read back while the names match.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from recourse.data import LabelledImages, to_float_images
from recourse.generation.regions import FRAME, MEAN_LANDMARKS_64, _fit, to_frame

CHUNK = 256  # faces fitted between two progress reports


def cache_path(cache_dir: str | os.PathLike, data: str | os.PathLike, split: str) -> Path:
    return Path(cache_dir) / "landmarks" / f"{Path(data).resolve().name}-{split}.npz"


def fit_landmarks(images: np.ndarray, progress: Callable[[int, int], None] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(points (N, 68, 2) in the 64-px frame, the mean landmarks where no face was found;
    found (N,))`` of ``uint8 (N, 3, 64, 64)`` faces."""
    points = np.empty((len(images), 68, 2), np.float32)
    found = np.zeros(len(images), bool)
    mean = MEAN_LANDMARKS_64.astype(np.float32)
    for start in range(0, len(images), CHUNK):
        chunk = to_float_images(images[start:start + CHUNK])
        fitted, hit = _fit(chunk)
        frame = to_frame(np.nan_to_num(fitted), FRAME, FRAME).astype(np.float32)
        points[start:start + len(chunk)] = np.where(hit[:, None, None], frame, mean[None])
        found[start:start + len(chunk)] = hit
        if progress is not None:
            progress(min(start + CHUNK, len(images)), len(images))
    return points, found


def split_landmarks(split: LabelledImages, path: Path,
                    progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The landmarks of every face of ``split``, read from ``path`` when it holds the same names,
    else fitted and written there."""
    names = np.array(split.filenames)
    if path.exists():
        with np.load(path) as kept:
            if kept["names"].shape == names.shape and bool((kept["names"] == names).all()):
                return kept["points"], kept["found"]
    torch.set_num_threads(1)
    points, found = fit_landmarks(split.images, progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npz")
    np.savez(partial, points=points, found=found, names=names)
    partial.replace(path)
    return points, found
