"""Generators as guidance sees them, and loading them.

Guidance needs a latent space, a noise predictor and a scheduler (:class:`FaceGenerator`).
Two kinds provide it: the project's own ``LatentFaceGenerator`` (PCA latents + MLP
denoiser) and any standard diffusers pixel-space pipeline (``PixelFaceGenerator``, e.g.
``google/ddpm-celebahq-256``), both loaded by :func:`load_generator`.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from diffusers import DDIMScheduler, DiffusionPipeline
from safetensors.torch import load_file, save_file
from torch import nn

from recourse.checkpoints import load_classifier, save_classifier, write_manifest
from recourse.data import resize_images
from recourse.generation.face_denoiser import FaceDenoiser
from recourse.generation.models import LatentDenoiser, PCAAutoencoder
from recourse.generation.spaces.bundle import EditSpaces
from recourse.locations import generator_dir, shown

GENERATOR_FILE = "generator.json"
FACE_DENOISER_FOLDER = "face-denoiser"
EDIT_SPACES_FOLDER = "edit-spaces"
_LOAD_OPTIONS = {"low_cpu_mem_usage": False}  # the accelerate-based loader buys nothing for small models


class FaceGenerator(Protocol):
    """What guidance needs from a generator: a latent space, a denoiser and a scheduler for
    the DDIM stage; the span edits are kept in (``project``) and an optional robust guide
    (a 40-logit model, or None) for the editing stage."""

    scheduler: DDIMScheduler
    resolution: int
    guide: nn.Module | None

    def encode(self, images: torch.Tensor) -> torch.Tensor: ...
    def decode(self, latents: torch.Tensor) -> torch.Tensor: ...
    def predict_noise(self, latents: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor: ...
    def project(self, pixels: torch.Tensor) -> torch.Tensor: ...


@dataclass
class LatentFaceGenerator:
    """The project's generator: the face denoiser the default method edits through, and the
    PCA-basis parts of the walk methods (PCA latents + MLP denoiser + DDIM, robust guide)."""

    autoencoder: PCAAutoencoder
    denoiser: LatentDenoiser
    scheduler: DDIMScheduler
    guide: nn.Module | None = None
    face_denoiser: FaceDenoiser | None = None
    edit_spaces: EditSpaces | None = None

    @property
    def resolution(self) -> int:
        return self.autoencoder.config.resolution

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        return self.autoencoder.encode(images)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return self.autoencoder.decode(latents)

    def predict_noise(self, latents: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.denoiser(latents, timestep)

    def project(self, pixels: torch.Tensor) -> torch.Tensor:
        """The orthogonal projection of pixel-space vectors ``(B, 3, H, W)`` onto the face
        basis: edits keep to what faces vary in, not to high-frequency patterns."""
        size = pixels.shape[-1]
        flat = resize_images(pixels, self.resolution).flatten(1)
        components = self.autoencoder.components
        projected = (flat @ components.T) @ components
        return resize_images(projected.view(-1, 3, self.resolution, self.resolution), size)

    def save_pretrained(self, directory: str | Path, metadata: dict | None = None) -> None:
        directory = Path(directory)
        # The basis is stored in half precision (12 MB instead of 25 MB); loading upcasts.
        copy.deepcopy(self.autoencoder).half().save_pretrained(directory / "autoencoder")
        self.denoiser.save_pretrained(directory / "denoiser")
        self.scheduler.save_pretrained(directory / "scheduler")
        if self.guide is not None:
            save_classifier(self.guide, directory / "guide", {"role": "guide"})
        if self.face_denoiser is not None:
            save_face_denoiser(self.face_denoiser, directory / FACE_DENOISER_FOLDER)
        if self.edit_spaces is not None:
            self.edit_spaces.save_pretrained(directory / EDIT_SPACES_FOLDER)
        (directory / GENERATOR_FILE).write_text(json.dumps({"kind": "pca-latent-diffusion", **(metadata or {})}, indent=2) + "\n")
        write_manifest(directory)  # the content of every part, checked before the app loads it

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> "LatentFaceGenerator":
        directory = Path(directory)
        autoencoder = PCAAutoencoder.from_pretrained(directory / "autoencoder", **_LOAD_OPTIONS).float().eval()
        denoiser = LatentDenoiser.from_pretrained(directory / "denoiser", **_LOAD_OPTIONS).float().eval()
        scheduler = DDIMScheduler.from_pretrained(directory / "scheduler")
        guide = load_classifier(directory / "guide").eval() if (directory / "guide").is_dir() else None
        face_denoiser = (load_face_denoiser(directory / FACE_DENOISER_FOLDER)
                         if (directory / FACE_DENOISER_FOLDER).is_dir() else None)
        edit_spaces = (EditSpaces.from_pretrained(directory / EDIT_SPACES_FOLDER)
                       if (directory / EDIT_SPACES_FOLDER).is_dir() else None)
        return cls(autoencoder, denoiser, scheduler, guide, face_denoiser, edit_spaces)


FACE_DENOISER_WEIGHTS = "face_denoiser_int8.safetensors"
_SCALE = ".int8_scale"


def save_face_denoiser(denoiser: FaceDenoiser, directory: str | Path) -> None:
    """Its config, and its weights at 8 bits (15 MB instead of 60 MB in float): each weight
    matrix or kernel as int8 codes with one float scale per output channel (symmetric), the
    small vectors (biases, norms) in float16. Loading dequantizes to float."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    denoiser.save_config(directory)
    tensors = {}
    for name, weight in denoiser.state_dict().items():
        weight = weight.detach().float().cpu()
        if weight.ndim < 2:
            tensors[name] = weight.half().contiguous()
            continue
        scale = weight.flatten(1).abs().amax(dim=1).clamp_min(1e-12) / 127
        codes = (weight / scale.view(-1, *[1] * (weight.ndim - 1))).round().clamp(-127, 127)
        tensors[name] = codes.to(torch.int8).contiguous()
        tensors[name + _SCALE] = scale.contiguous()
    save_file(tensors, str(directory / FACE_DENOISER_WEIGHTS))


def load_face_denoiser(directory: str | Path) -> FaceDenoiser:
    """A face denoiser saved by :func:`save_face_denoiser`, in float, for inference."""
    directory = Path(directory)
    denoiser = FaceDenoiser.from_config(FaceDenoiser.load_config(directory))
    stored = load_file(str(directory / FACE_DENOISER_WEIGHTS))
    state = {}
    for name, tensor in stored.items():
        if name.endswith(_SCALE):
            continue
        scale = stored.get(name + _SCALE)
        state[name] = (tensor.float() if scale is None
                       else tensor.float() * scale.view(-1, *[1] * (tensor.ndim - 1)))
    denoiser.load_state_dict(state)
    return denoiser.float().eval().requires_grad_(False)


@dataclass
class PixelFaceGenerator:
    """A standard diffusers pixel-space pipeline (``UNet2DModel`` + scheduler), e.g. a DDPM."""

    unet: nn.Module
    scheduler: DDIMScheduler
    guide: nn.Module | None = None

    @property
    def resolution(self) -> int:
        size = self.unet.config.sample_size
        return size if isinstance(size, int) else size[0]

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        return resize_images(images, self.resolution) * 2 - 1

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return (latents + 1) / 2

    def predict_noise(self, latents: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.unet(latents, timestep).sample

    def project(self, pixels: torch.Tensor) -> torch.Tensor:
        return pixels  # every pixel is in the span


@functools.lru_cache(maxsize=1)
def default_generator() -> LatentFaceGenerator | PixelFaceGenerator:
    """The committed generator, loaded once and shared (read-only) by every caller."""
    directory = generator_dir()
    if not (directory / GENERATOR_FILE).is_file():
        raise FileNotFoundError(f"{shown(directory)}: the committed generator is missing; "
                                "train one with python -m recourse train-generator")
    return load_generator(directory)


def load_generator(source: str | Path) -> LatentFaceGenerator | PixelFaceGenerator:
    """Load the project's generator folder, or any diffusers pipeline (local folder or hub id)
    that has a ``unet`` and a ``scheduler``; its scheduler is converted to DDIM."""
    path = Path(source)
    if (path / GENERATOR_FILE).is_file():
        return LatentFaceGenerator.from_pretrained(path)
    if path.exists() and not (path / "model_index.json").is_file():
        raise ValueError(f"{path}: neither a {GENERATOR_FILE} generator nor a diffusers pipeline (no model_index.json)")
    try:
        pipeline = DiffusionPipeline.from_pretrained(str(source))
    except OSError as error:  # not cached and no network, or not a pipeline
        raise ValueError(f"{source}: cannot load this diffusers pipeline ({str(error).splitlines()[0][:300]})") from None
    unet = getattr(pipeline, "unet", None)
    if unet is None or getattr(unet.config, "in_channels", None) != 3:
        raise ValueError(f"{source}: expected a pixel-space pipeline with a 3-channel 'unet'")
    return PixelFaceGenerator(unet.eval(), DDIMScheduler.from_config(pipeline.scheduler.config))
