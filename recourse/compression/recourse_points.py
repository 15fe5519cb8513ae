"""The teacher's recourse points: counterfactuals of the full-precision model on training
images, made once by the generator and cached, for the counterfactual-aware methods."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from recourse.caches import CacheMismatch, check_fields, discard, read_tensors, write_tensors
from recourse.data import DEFAULT_ATTRIBUTES, attribute_index, to_float_images
from recourse.generation import CounterfactualConfig, FaceGenerator, generate


@dataclass(frozen=True)
class RecoursePoints:
    """Valid teacher counterfactuals ``x'_f`` with their attribute index and target."""

    images: torch.Tensor  # (M, 3, H, W) in [0, 1]
    attributes: torch.Tensor  # (M,) long, index into the 40 attributes
    targets: torch.Tensor  # (M,) float 0/1
    sources: torch.Tensor  # (M,) long, index of the training image
    attempted: int  # tasks tried; M of them were valid for the teacher
    seconds: float  # wall-clock to generate all attempted tasks

    @property
    def count(self) -> int:
        return len(self.images)

    def subset(self, count: int) -> "RecoursePoints":
        return RecoursePoints(self.images[:count], self.attributes[:count], self.targets[:count],
                              self.sources[:count], self.attempted, self.seconds)

    def save(self, path: str | os.PathLike) -> None:
        """Write the points with their count, ``path``'s name as their key and a checksum."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_tensors(path, self._tensors(), {"key": path.name, "count": self.count, "attempted": self.attempted,
                                              "seconds": self.seconds})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RecoursePoints":
        """Read points written by :meth:`save`, or raise CacheMismatch saying why they
        cannot be trusted (unreadable, renamed, edited, or not a set of recourse points)."""
        path = Path(path)
        tensors, metadata = read_tensors(path, {"key": path.name})
        if set(tensors) != {"images", "attributes", "targets", "sources"}:
            raise CacheMismatch(f"holds {sorted(tensors)}, not recourse points")
        images, attributes, targets, sources = (tensors[k] for k in ("images", "attributes", "targets", "sources"))
        count = len(images)
        check_fields(metadata, {"count": count})
        try:
            attempted, seconds = int(metadata["attempted"]), float(metadata["seconds"])
        except (KeyError, ValueError):
            raise CacheMismatch("its attempted count or time is missing") from None
        if images.ndim != 4 or images.shape[1] != 3 or not images.is_floating_point() or \
                any(t.shape != (count,) for t in (attributes, targets, sources)) or count > attempted or \
                not bool(torch.isfinite(images).all()) or (count and (
                    images.min() < 0 or images.max() > 1 or attributes.min() < 0 or attributes.max() >= 40 or
                    not bool(((targets == 0) | (targets == 1)).all()) or sources.min() < 0
                    or sources.max() >= attempted)):
            raise CacheMismatch("its tensors are not valid recourse points")
        return cls(images, attributes, targets, sources, attempted, seconds)

    def _tensors(self) -> dict[str, torch.Tensor]:
        return {"images": self.images, "attributes": self.attributes, "targets": self.targets,
                "sources": self.sources}


def make_recourse_points(
    teacher: nn.Module, images: torch.Tensor, attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES,
    config: CounterfactualConfig = CounterfactualConfig(), generator: FaceGenerator | None = None,
    batch_size: int = 64, progress: Callable[[str, int, int], None] | None = None,
) -> RecoursePoints:
    """Image ``i`` gets attribute ``attributes[i % len(attributes)]`` and the target that flips
    the teacher's decision; seeds are ``config.seed + i``. Only teacher-valid results are kept."""
    started = time.perf_counter()
    images = to_float_images(images)
    kept: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
    done = 0
    for slot, attribute in enumerate(attributes):
        index = attribute_index(attribute)
        rows = torch.arange(len(images))[slot::len(attributes)]  # empty when there are fewer images
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            with torch.no_grad():
                target = (torch.sigmoid(teacher(images[chunk])[:, index]) < 0.5).long()
            result = generate(images[chunk], teacher, attribute, target, config, generator,
                              seeds=tuple(config.seed + int(i) for i in chunk))
            valid = result.valid.bool()
            kept.append((result.images[valid], torch.full((int(valid.sum()),), index), target[valid].float(), chunk[valid]))
            done += len(chunk)
            if progress:
                progress("teacher recourse points", done, len(images))
    order = torch.cat([k[3] for k in kept]).argsort()
    return RecoursePoints(
        images=torch.cat([k[0] for k in kept])[order], attributes=torch.cat([k[1] for k in kept])[order],
        targets=torch.cat([k[2] for k in kept])[order], sources=torch.cat([k[3] for k in kept])[order],
        attempted=len(images), seconds=time.perf_counter() - started)


def recourse_points_path(cache_dir: Path, teacher_digest: str, generator_digest: str, config: CounterfactualConfig,
                         count: int) -> Path:
    """Where the teacher's recourse points on ``count`` training images are cached: keyed by
    the teacher's and the generator's content and the generation settings."""
    key = hashlib.sha256(f"{teacher_digest} {generator_digest} {config}".encode()).hexdigest()[:16]
    return Path(cache_dir) / f"recourse-points-{key}-{count}.safetensors"


def cached_recourse_points(path: str | os.PathLike, make: Callable[[], RecoursePoints]) -> RecoursePoints:
    """Load ``path`` if it exists and passes its checks; otherwise ``make()`` and save there
    (a JSON note beside). A file that fails its checks is remade with a CacheWarning."""
    path = Path(path)
    if path.is_file():
        try:
            return RecoursePoints.load(path)
        except CacheMismatch as error:
            discard(path, str(error))
    points = make()
    points.save(path)
    path.with_suffix(".json").write_text(json.dumps(
        {"valid": points.count, "attempted": points.attempted, "seconds": round(points.seconds, 1)}) + "\n")
    return points


def teacher_recourse_points(teacher: nn.Module, teacher_weights: Path, generator_source: str,
                            images: torch.Tensor, config: CounterfactualConfig, cache_dir: Path,
                            progress: Callable[[str, int, int], None] | None = None) -> RecoursePoints:
    """The teacher's recourse points on ``images``, read from ``cache_dir`` when the same
    teacher, generator and settings made them before, else made (and cached)."""
    from recourse.checkpoints import file_digest
    from recourse.generation import load_generator

    path = recourse_points_path(cache_dir, file_digest(teacher_weights), file_digest(Path(generator_source)),
                                config, len(images))
    return cached_recourse_points(path, lambda: make_recourse_points(
        teacher, images, config=config, generator=load_generator(generator_source), progress=progress))
