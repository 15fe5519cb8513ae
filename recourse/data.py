"""Reading CelebA datasets: the only module that opens dataset files.

Two standard layouts are understood:

* CelebAMask-HQ: ``CelebA-HQ-img/N.jpg`` + ``CelebAMask-HQ-attribute-anno.txt``
* original CelebA: ``img_align_celeba/NNNNNN.jpg`` + ``list_attr_celeba.txt``
  (+ optional ``list_eval_partition.txt``)

Images come back as ``uint8`` arrays ``(N, 3, H, W)``; labels as ``uint8`` ``(N, 40)`` in
{0, 1}. Decoded splits are cached as ``.npz`` files so that training reads them once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from recourse import image_cache
# Defined in recourse.names (light, for the command line's --help); re-exported from here.
from recourse.names import ATTRIBUTES, DEFAULT_ATTRIBUTES, HELD_OUT_ATTRIBUTES, QUALITY_ATTRIBUTES, SPLITS  # noqa: F401

Split = Literal["train", "val", "test", "all"]
Layout = Literal["celeba-hq", "celeba"]

# CelebA-HQ has no official split; the project's fixed one (docs/guide.md, Data): ids 0-23999, 24000-26999, 27000-29999.
HQ_SPLIT_RANGES = {"train": (0, 24000), "val": (24000, 27000), "test": (27000, 30000)}
# list_eval_partition.txt codes.
CELEBA_PARTITION_CODES = {"train": 0, "val": 1, "test": 2}

HQ_IMAGES, HQ_ANNOTATIONS = "CelebA-HQ-img", "CelebAMask-HQ-attribute-anno.txt"
CELEBA_IMAGES, CELEBA_ANNOTATIONS = "img_align_celeba", "list_attr_celeba.txt"
CELEBA_PARTITION = "list_eval_partition.txt"


def attribute_index(attribute: str) -> int:
    """Position of a CelebA attribute name among the 40, or a ValueError naming it."""
    if attribute not in ATTRIBUTES:
        raise ValueError(f"unknown attribute {attribute!r}; expected one of the 40 CelebA names, e.g. 'Smiling'")
    return ATTRIBUTES.index(attribute)


def to_float_images(images: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``uint8 (B, 3, H, W)`` → float in [0, 1]; float images are returned as they are."""
    images = torch.as_tensor(images)
    return images if images.is_floating_point() else images.float().div_(255.0)


def resize_images(images: torch.Tensor, resolution: int) -> torch.Tensor:
    """``(B, 3, H, W)`` float images resized (bilinear) to ``resolution``; unchanged if already there."""
    if images.shape[-1] == resolution:
        return images
    return F.interpolate(images, size=resolution, mode="bilinear", align_corners=False)


class DatasetError(ValueError):
    """A dataset file is missing or malformed; the message names the file and line."""


class UnreadableImageError(DatasetError):
    """An image file that exists but cannot be decoded (loaders of photo folders skip it)."""


@dataclass(frozen=True)
class Annotations:
    """Parsed attribute file: ``labels[i]`` (40 values in {0, 1}) belongs to ``filenames[i]``."""

    filenames: tuple[str, ...]
    labels: np.ndarray  # (N, 40) uint8


@dataclass(frozen=True)
class LabelledImages:
    """A split of a dataset at model resolution."""

    images: np.ndarray  # (N, 3, H, W) uint8
    labels: np.ndarray  # (N, 40) uint8 in {0, 1}
    filenames: tuple[str, ...]
    framing: str = ""  # how original CelebA photos were framed, and which were skipped ("" for CelebA-HQ)
    skipped: tuple[str, ...] = ()  # photos of the split that could not be decoded or framed (not in filenames)

    def __len__(self) -> int:
        return len(self.filenames)


def read_annotations(path: str | os.PathLike) -> Annotations:
    """Parse a CelebA / CelebAMask-HQ attribute file, with or without its count line."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: annotation file not found")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if not any(line.strip() for line in lines):
        raise DatasetError(f"{path}: file is empty; expected a header line with the 40 attribute names")
    index = 0
    declared_count = None
    if lines and lines[0].strip().isdigit():
        declared_count = int(lines[0].strip())
        index = 1
    if index >= len(lines):
        raise DatasetError(f"{path}: no header line with the 40 attribute names")
    header = tuple(lines[index].split())
    if header != ATTRIBUTES:
        raise DatasetError(
            f"{path}:{index + 1}: header does not list the 40 CelebA attributes in order; "
            f"got {len(header)} names starting {list(header[:3])}"
        )
    filenames: list[str] = []
    rows: list[list[int]] = []
    for line_number, line in enumerate(lines[index + 1:], start=index + 2):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 41:
            raise DatasetError(
                f"{path}:{line_number}: expected a file name and 40 values, got {len(fields)} fields"
            )
        try:
            values = [int(v) for v in fields[1:]]
        except ValueError:
            raise DatasetError(f"{path}:{line_number}: attribute values must be 1 or -1") from None
        if any(v not in (1, -1) for v in values):
            raise DatasetError(f"{path}:{line_number}: attribute values must be 1 or -1")
        filenames.append(fields[0])
        rows.append(values)
    if declared_count is not None and declared_count != len(rows):
        raise DatasetError(f"{path}:1: declares {declared_count} rows but has {len(rows)}")
    if len(set(filenames)) != len(filenames):
        raise DatasetError(f"{path}: duplicate file names")
    labels = (np.asarray(rows, dtype=np.int8).reshape(-1, 40) > 0).astype(np.uint8)
    return Annotations(tuple(filenames), labels)


def read_partition(path: str | os.PathLike) -> dict[str, int]:
    """Parse ``list_eval_partition.txt`` into ``{filename: 0 | 1 | 2}``."""
    path = Path(path)
    partition: dict[str, int] = {}
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or fields[1] not in ("0", "1", "2"):
            raise DatasetError(f"{path}:{line_number}: expected '<file> <0|1|2>'")
        partition[fields[0]] = int(fields[1])
    return partition


def detect_layout(root: str | os.PathLike) -> Layout:
    """Tell which of the two layouts ``root`` holds."""
    root = Path(root)
    if (root / HQ_ANNOTATIONS).is_file() and (root / HQ_IMAGES).is_dir():
        return "celeba-hq"
    if (root / CELEBA_ANNOTATIONS).is_file() and (root / CELEBA_IMAGES).is_dir():
        return "celeba"
    raise DatasetError(
        f"{root}: not a CelebA folder; expected {HQ_IMAGES}/ + {HQ_ANNOTATIONS} "
        f"or {CELEBA_IMAGES}/ + {CELEBA_ANNOTATIONS}"
    )


def select_split(root: str | os.PathLike, split: Split) -> Annotations:
    """The annotations of one split of the dataset at ``root``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    root = Path(root)
    layout = detect_layout(root)
    if layout == "celeba-hq":
        annotations = read_annotations(root / HQ_ANNOTATIONS)
        if split == "all":
            return annotations
        low, high = HQ_SPLIT_RANGES[split]
        keep = [i for i, name in enumerate(annotations.filenames) if low <= _hq_id(name, root) < high]
    else:
        annotations = read_annotations(root / CELEBA_ANNOTATIONS)
        if split == "all":
            return annotations
        partition_path = root / CELEBA_PARTITION
        if not partition_path.is_file():
            raise DatasetError(f"{partition_path}: needed for split {split!r}; use --split all")
        partition = read_partition(partition_path)
        code = CELEBA_PARTITION_CODES[split]
        keep = [i for i, name in enumerate(annotations.filenames) if partition.get(name) == code]
    return Annotations(
        tuple(annotations.filenames[i] for i in keep), annotations.labels[keep]
    )


def _hq_id(name: str, root: Path) -> int:
    stem = Path(name).stem
    if not stem.isdigit():
        raise DatasetError(f"{root / HQ_ANNOTATIONS}: image name {name!r} is not a CelebA-HQ id")
    return int(stem)


def image_dir(root: str | os.PathLike) -> Path:
    root = Path(root)
    return root / (HQ_IMAGES if detect_layout(root) == "celeba-hq" else CELEBA_IMAGES)


def open_rgb(path: Path) -> Image.Image:
    """Open an image file as RGB, or raise DatasetError naming it."""
    if not path.is_file():
        raise DatasetError(f"{path}: image listed in the annotations is missing")
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise UnreadableImageError(f"{path}: cannot be read as an image ({error})") from None


def resize_square(image: Image.Image, resolution: int) -> np.ndarray:
    """Resize an already framed RGB image to ``(3, resolution, resolution)`` uint8."""
    if image.size != (resolution, resolution):
        image = image.resize((resolution, resolution), Image.Resampling.BICUBIC)
    return np.asarray(image, dtype=np.uint8).transpose(2, 0, 1).copy()


Framer = Callable[[Image.Image, int], np.ndarray]

_SKIPPED_SHOWN = 5  # skipped photos named in the note (all are in LabelledImages.skipped)


def load_split(
    root: str | os.PathLike,
    split: Split,
    resolution: int = 64,
    cache_dir: str | os.PathLike | None = None,
    framer: Framer | None = None,
    progress: Callable[[int, int], None] | None = None,
    skip: tuple[type[Exception], ...] = (),
) -> LabelledImages:
    """Decode one split to ``uint8 (N, 3, H, W)``.

    ``framer(image, resolution)`` turns a photo into the training framing; CelebA-HQ
    images already have it, so by default they are only resized. Original CelebA photos
    need ``recourse.faces.CelebAFramer()`` (:func:`load_framed_split` passes it). A photo
    whose decoding or framing raises one of ``skip`` is left out and named in ``skipped``
    (and in ``framing``); any other error stops the load. A framer's ``summary()``, if it
    has one, starts the ``framing`` note.

    The cache file is keyed by the annotation files' content, the split's file names, the
    framer and ``skip``; it holds the image files' sizes and times and a checksum of its
    images. One that does not match (or whose image files changed since) is recomputed with
    a :class:`recourse.caches.CacheWarning`.
    """
    root = Path(root)
    annotations = select_split(root, split)
    if not annotations.filenames:
        raise DatasetError(f"{root}: split {split!r} is empty")
    framer = framer or resize_square
    directory = image_dir(root)
    cache_path = key = None
    if cache_dir is not None:
        framer_name = getattr(framer, "cache_key", getattr(framer, "__name__", type(framer).__name__))
        key = image_cache.cache_key([root / name for name in (HQ_ANNOTATIONS, CELEBA_ANNOTATIONS, CELEBA_PARTITION)],
                                    f"{split}|{resolution}|{framer_name}|{sorted(e.__name__ for e in skip)}",
                                    annotations.filenames)
        cache_path = Path(cache_dir) / f"{split}-{resolution}-{key[:16]}.npz"
        cached = image_cache.read(cache_path, key, annotations.filenames, directory, resolution)
        if cached is not None:
            return _subset(annotations, *cached)
    stats = image_cache.file_stats(directory, annotations.filenames)  # before decoding: a later change is seen
    images = np.empty((len(annotations.filenames), 3, resolution, resolution), np.uint8)
    kept: list[int] = []
    skipped: list[tuple[str, str]] = []
    for i, name in enumerate(annotations.filenames):
        try:
            images[len(kept)] = framer(open_rgb(directory / name), resolution)
            kept.append(i)
        except skip as error:  # the reason without the folder: users see the note
            path = str(directory / name)
            skipped.append((name, str(error).removeprefix(f"{path}: ").replace(f"'{path}'", name).replace(path, name)))
        if progress is not None:
            progress(i + 1, len(images))
    if not kept:
        name, reason = skipped[0]
        raise DatasetError(f"{root}: none of the {len(skipped)} photos of split {split!r} could be used "
                           f"(the first, {name}: {reason})")
    summary = getattr(framer, "summary", None)
    note = "; ".join(part for part in (summary() if summary else "", _skipped_note(skipped, len(images))) if part)
    result = _subset(annotations, images[:len(kept)], np.asarray(kept, np.int64), note,
                     tuple(name for name, _ in skipped))
    if cache_path is not None:
        image_cache.write(cache_path, key, result.images, np.asarray(kept, np.int64), stats, result.framing,
                          result.skipped)
    return result


def _subset(annotations: Annotations, images: np.ndarray, kept: np.ndarray, note: str,
            skipped: tuple[str, ...]) -> LabelledImages:
    return LabelledImages(images, annotations.labels[kept], tuple(annotations.filenames[i] for i in kept), note, skipped)


def _skipped_note(skipped: list[tuple[str, str]], total: int) -> str:
    if not skipped:
        return ""
    shown = ", ".join(f"{name} ({reason})" for name, reason in skipped[:_SKIPPED_SHOWN])
    more = f" and {len(skipped) - _SKIPPED_SHOWN} more" if len(skipped) > _SKIPPED_SHOWN else ""
    return f"skipped {len(skipped)} of {total} photos that could not be decoded or framed: {shown}{more}"


def load_framed_split(
    root: str | os.PathLike,
    split: Split,
    resolution: int = 64,
    cache_dir: str | os.PathLike | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LabelledImages:
    """A split framed like the training images whatever the layout: CelebA-HQ images are
    resized, original CelebA photos aligned to the CelebA-HQ framing (``framing`` says how
    many by detection and how many by the Align&Cropped layout's fixed crop). An original
    photo that cannot be decoded or framed is skipped and named (``skipped``): one photo of
    a mirror must not stop a whole evaluation."""
    if detect_layout(root) != "celeba":
        return load_split(root, split, resolution, cache_dir, None, progress)
    from recourse.faces import CelebAFramer, FaceAlignmentError

    return load_split(root, split, resolution, cache_dir, CelebAFramer(), progress,
                      skip=(FaceAlignmentError, UnreadableImageError))


def majority_baseline(labels: np.ndarray, train_labels: np.ndarray | None = None) -> np.ndarray:
    """Per-attribute accuracy of predicting each attribute's majority class.

    The majority is taken from ``train_labels`` when given (a fair baseline), else from
    ``labels`` themselves.
    """
    reference = labels if train_labels is None else train_labels
    majority = (reference.mean(axis=0) >= 0.5).astype(np.uint8)
    return (labels == majority).mean(axis=0)
