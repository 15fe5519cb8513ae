"""Finding a face with dlib, shared by every dlib instrument (identity, age and gender, the
mouth's geometry) and by the edit regions' landmarks: the faces upsampled the same way, one HOG
detector, one shape predictor per file, and one lock around every call into them."""

from __future__ import annotations

import functools
import threading

import numpy as np
import torch
from PIL import Image

# The 64-px faces are upsampled to this size before detection: the HOG detector does not find
# faces much smaller than 80 px, and at 256 px it found 96.2% of 500 validation faces.
UPSAMPLED = 256

# One process may serve the app's concurrent requests, and dlib's objects are not documented as
# safe to call from several threads at once: every instrument holds this lock while it calls the
# detector, a shape predictor or the descriptor network.
DLIB_LOCK = threading.Lock()


def import_dlib(missing: type[Exception]):
    """The ``dlib`` module, or ``missing`` (the instrument's own error) saying how to install it."""
    try:
        import dlib
    except ImportError as error:
        raise missing("dlib is not installed (pip install -r requirements.txt: dlib-bin)") from error
    return dlib


@functools.lru_cache(maxsize=1)
def face_detector():
    """dlib's HOG frontal face detector, loaded once (call it with :data:`DLIB_LOCK` held)."""
    return import_dlib(RuntimeError).get_frontal_face_detector()


@functools.lru_cache(maxsize=None)
def shape_predictor(path: str):
    """A dlib shape predictor, loaded once per file (call it with :data:`DLIB_LOCK` held)."""
    return import_dlib(RuntimeError).shape_predictor(path)


def upsampled_pixels(images: torch.Tensor) -> list[np.ndarray]:
    """Float images ``(B, 3, H, W)`` in [0, 1] as the dlib instruments see them: rounded to
    bytes and upsampled (bicubic) to ``UPSAMPLED`` px, ``(UPSAMPLED, UPSAMPLED, 3)`` uint8 each."""
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"expected float images (B, 3, H, W), got {getattr(images, 'shape', type(images))}")
    if not images.is_floating_point():
        raise ValueError(f"expected float images in [0, 1], got dtype {images.dtype}")
    if images.numel() and (float(images.min()) < 0 or float(images.max()) > 1):
        raise ValueError("expected float images in [0, 1]")
    uint8 = (images.detach().cpu().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return [np.ascontiguousarray(np.asarray(Image.fromarray(image).resize((UPSAMPLED, UPSAMPLED), Image.BICUBIC)))
            for image in uint8]
