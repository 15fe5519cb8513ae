"""Shared fixtures: tiny CelebA folders written on the fly, and the real data when present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from PIL import Image

from recourse.data import ATTRIBUTES

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HQ_DATA = SHARED_DATA / "celeba-hq-64"
ALIGNED_DATA = SHARED_DATA / "celeba-aligned-dev"

needs_hq_data = pytest.mark.skipif(not HQ_DATA.is_dir(), reason=f"real CelebA-HQ data not found at {HQ_DATA}")
needs_aligned_data = pytest.mark.skipif(not ALIGNED_DATA.is_dir(), reason=f"original CelebA photos not found at {ALIGNED_DATA}")


def attribute_rows(names: list[str], seed: int = 0) -> tuple[list[str], np.ndarray]:
    labels = np.random.default_rng(seed).integers(0, 2, (len(names), 40)).astype(np.uint8)
    rows = [name + " " + " ".join("1" if v else "-1" for v in row) for name, row in zip(names, labels)]
    return rows, labels


def write_images(directory: Path, names: list[str], size: tuple[int, int], seed: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in names:
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(directory / name, quality=95)


@pytest.fixture
def hq_folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A CelebAMask-HQ layout whose ids straddle the train/val/test boundaries."""
    ids = [0, 1, 23999, 24000, 26999, 27000, 27001, 29999]
    names = [f"{i}.jpg" for i in ids]
    rows, labels = attribute_rows(names)
    root = tmp_path / "hq"
    write_images(root / "CelebA-HQ-img", names, (16, 16))
    (root / "CelebAMask-HQ-attribute-anno.txt").write_text(
        "\n".join([str(len(rows)), " ".join(ATTRIBUTES), *rows]) + "\n")
    return root, labels


@pytest.fixture
def celeba_folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """An original-CelebA layout (178×218 photos) with a partition file and no count line."""
    names = [f"{i:06d}.jpg" for i in (1, 2, 3, 4, 5)]
    rows, labels = attribute_rows(names, seed=1)
    root = tmp_path / "celeba"
    write_images(root / "img_align_celeba", names, (178, 218))
    (root / "list_attr_celeba.txt").write_text("\n".join([" ".join(ATTRIBUTES), *rows]) + "\n")
    (root / "list_eval_partition.txt").write_text("000001.jpg 0\n000002.jpg 0\n000003.jpg 1\n000004.jpg 2\n000005.jpg 2\n")
    return root, labels


@pytest.fixture(scope="session")
def tiny_generator():
    """A 16×16 latent generator with an 8-component basis that has a brightness direction."""
    from recourse.generation import LatentDenoiser, LatentFaceGenerator, default_scheduler, fit_pca_autoencoder

    torch.manual_seed(0)
    faces = (np.random.default_rng(0).random((64, 3, 16, 16)) * 255).astype(np.uint8)
    faces[:32] //= 2  # a brightness direction for the basis to capture
    autoencoder = fit_pca_autoencoder(faces, latent_dim=8)
    return LatentFaceGenerator(autoencoder, LatentDenoiser(latent_dim=8, width=16, depth=1), default_scheduler())


class BrightnessModel(nn.Module):
    """Logit of every attribute = 20 · (mean brightness − 0.5): a known, smooth decision."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (20 * (images.mean(dim=(1, 2, 3)) - 0.5)).unsqueeze(1).expand(-1, 40)
