"""The photos of any folder, framed as the classifier was trained, or set aside with a reason.

A folder is whatever an auditor has: photos of any size and source, in subfolders, beside
drawings, documents and broken files. Every image file found (recursively, in name order)
is either framed — its largest face aligned to the CelebA-HQ framing — or listed as skipped
with one plain reason, so that a scan can say "N ranked, K skipped" and name each one:

* ``unreadable``: not an image this app decodes, or over its caps (``recourse.faces``);
* ``too small``: the photo, or its largest face, is smaller than the classifier's input would
  need (the face of a full-length picture is looked for a second time, with a smaller
  minimum size, before it is called too small);
* ``no face``: no face found at any size;
* ``drawing``: a face on blank paper (a line drawing), which the classifier never saw.

A folder in one of the CelebA layouts keeps its own reading (``recourse.audit.scan.read_folder``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from recourse.progress import StageCheck, no_check

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff", ".mpo"})
# The second look for the face of a full-length picture: faces down to this share of the
# photo's shorter side (the first look, the app's, wants 15%).
SMALL_FACE_SHARE = 0.05
# The smallest face box, in the photo's own pixels, whose framing still holds the classifier's
# 64 px: the framing is the box over CelebA-HQ's face share (0.656), so 42 px frame 64 px.
MIN_FACE_PIXELS = 42
# A line drawing: most of the framed face's middle (its central half, where a photo shows skin)
# is bright, colourless paper. On the 500 test faces of the split that share was 0 at the
# median and 0.17 at most; on pencil sketches of a portrait 0.54-0.57
# (python -m recourse.audit.photo_folder --calibrate DATA prints the real faces' side).
PAPER_LUMINANCE = 0.9
PAPER_CHROMA = 0.06
DRAWING_PAPER_SHARE = 0.35

REASONS = ("unreadable", "too small", "no face", "drawing")


@dataclass(frozen=True)
class Skipped:
    """A file of the folder that is not ranked, and why."""

    file: str  # relative to the folder
    reason: str  # one of REASONS
    detail: str  # the plain message behind it

    def to_dict(self) -> dict:
        return {"file": self.file, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class FramedPhoto:
    """A photo of the folder framed for the classifier: ``image`` is ``(3, R, R)`` in [0, 1]."""

    file: str
    image: torch.Tensor


def image_files(folder: str | os.PathLike) -> list[Path]:
    """Every image file under ``folder`` by its suffix, recursively, in name order; hidden
    files and folders and links that lead out of the folder are left out."""
    root = Path(folder).resolve()
    found = []
    for directory, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in files:
            path = Path(directory) / name
            if name.startswith(".") or path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            if root not in path.resolve().parents:
                continue
            found.append(path)
    return sorted(found, key=lambda path: path.relative_to(root).as_posix())


def paper_share(image: np.ndarray) -> float:
    """Share of the central half of a framed face (``(3, R, R)`` uint8) that is bright and
    colourless: blank paper, not skin."""
    side = image.shape[-1]
    middle = image[:, side // 4:side - side // 4, side // 4:side - side // 4]
    pixels = middle.astype(np.float32).reshape(3, -1) / 255
    luminance = 0.299 * pixels[0] + 0.587 * pixels[1] + 0.114 * pixels[2]
    chroma = pixels.max(axis=0) - pixels.min(axis=0)
    return float(np.mean((luminance >= PAPER_LUMINANCE) & (chroma <= PAPER_CHROMA)))


def frame_photo(path: Path, resolution: int, check: StageCheck = no_check) -> np.ndarray | tuple[str, str]:
    """The photo's largest face framed, ``(3, R, R)`` uint8; or ``(reason, detail)``.
    ``check`` once the photo is decoded (a caller's time limit)."""
    from recourse import faces

    try:
        photo = faces.load_photo(path)
    except faces.FaceAlignmentError as error:
        return "unreadable", str(error)
    check("decode")
    if min(photo.size) < faces.MIN_SIDE:
        return "too small", f"{photo.width}×{photo.height} pixels; need at least {faces.MIN_SIDE} px a side"
    try:
        aligned = faces.align_face(photo, resolution)
    except faces.NoFaceError:
        boxes = faces.detect_faces(photo, SMALL_FACE_SHARE)
        if not boxes:
            return "no face", "no face found; use a photo with a frontal, well-lit face"
        width = boxes[0][2]
        if width < MIN_FACE_PIXELS:
            return "too small", f"its largest face is {width} px wide; need at least {MIN_FACE_PIXELS}"
        crop = faces.hq_crop_from_face_box(boxes[0])
        framed = faces.crop_square(photo, crop, resolution)
    else:
        framed = aligned.image
    if paper_share(framed) >= DRAWING_PAPER_SHARE:
        return "drawing", "a face drawn on paper; the classifier was trained on photos"
    return framed


def framed_photos(folder: str | os.PathLike, resolution: int,
                  files: list[Path] | None = None) -> Iterator[FramedPhoto | Skipped]:
    """Each image file of ``folder`` (or ``files`` of it), framed or skipped, in order."""
    from recourse.data import to_float_images

    root = Path(folder).resolve()
    for path in image_files(root) if files is None else files:
        name = path.resolve().relative_to(root).as_posix()
        framed = frame_photo(path, resolution)
        if isinstance(framed, tuple):
            yield Skipped(name, *framed)
        else:
            yield FramedPhoto(name, to_float_images(framed))


def is_celeba_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds one of the CelebA layouts (annotations and images)."""
    from recourse.data import DatasetError, detect_layout

    try:
        detect_layout(folder)
    except DatasetError:
        return False
    return True


def _calibrate(data: str) -> None:
    """Print the largest paper share among the test split's framed faces."""
    from recourse.audit.scan import read_folder

    names, images = read_folder(data, "test", 500, 64)
    shares = [paper_share((image.numpy() * 255).round().astype(np.uint8)) for image in images]
    print(f"{len(names)} test faces: paper share median {np.median(shares):.3f}, largest {max(shares):.3f} "
          f"(a drawing from {DRAWING_PAPER_SHARE})")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="the drawing threshold against real faces")
    parser.add_argument("--calibrate", metavar="DATA", required=True, help="a CelebA-HQ folder")
    _calibrate(parser.parse_args().calibrate)
