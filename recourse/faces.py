"""Face detection and alignment of any photo to the CelebA-HQ training framing.

The detector is OpenCV's frontal-face Haar cascade, which ships inside the
``opencv-python-headless`` wheel: it runs offline and downloads nothing. Its box is mapped
to the CelebA-HQ framing by a fixed ratio measured on CelebA-HQ training images
(``python -m scripts.calibrate_framing --data PATH``).
"""

from __future__ import annotations

import functools
import io
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

# Where the Haar box sits in a CelebA-HQ frame (fractions of the frame side), medians over
# 386 training images (python -m scripts.calibrate_framing).
HQ_BOX_CENTER = (0.500, 0.555)
HQ_BOX_WIDTH = 0.656
# Original CelebA Align&Cropped photos (178×218) all share one framing; the CelebA-HQ crop
# of it: the median crop over the first 400 of those photos (386 detected; same script).
CELEBA_ALIGNED_SIZE = (178, 218)
CELEBA_ALIGNED_HQ_CROP = (8.7, 35.7, 168.3, 195.7)

MAX_UPLOAD_BYTES = 30 * 1024 * 1024
MAX_PIXELS = 64_000_000  # refuse decompression bombs before decoding
DETECT_MAX_SIDE = 640  # detection runs on a downscaled copy of large photos
MIN_SIDE = 32


class FaceAlignmentError(ValueError):
    """The photo cannot be aligned; the message says why, for the user."""


class NoFaceError(FaceAlignmentError):
    """No face was found in the photo."""


@dataclass(frozen=True)
class AlignedFace:
    """A photo cropped and scaled to the training framing."""

    image: np.ndarray  # (3, R, R) uint8
    face_box: tuple[int, int, int, int]  # detected face (x, y, w, h), original pixels
    crop_box: tuple[float, float, float, float]  # (left, top, right, bottom), original pixels
    faces_found: int
    message: str

    def to_dict(self) -> dict:
        return {"face_box": list(self.face_box), "crop_box": list(self.crop_box),
                "faces_found": self.faces_found, "message": self.message}


def load_photo(source: str | os.PathLike | bytes | Image.Image) -> Image.Image:
    """Open a photo as upright 8-bit RGB, whatever its mode, EXIF orientation or bit depth."""
    image = source if isinstance(source, Image.Image) else _decode(_read_bytes(source), _name(source))
    _check_pixels(image)
    return to_rgb(ImageOps.exif_transpose(image))


def _name(source: str | os.PathLike | bytes) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "upload"


def _read_bytes(source: str | os.PathLike | bytes) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FaceAlignmentError(f"{path}: no such file")
        size = path.stat().st_size
    else:
        size = len(source)
    if size > MAX_UPLOAD_BYTES:
        raise FaceAlignmentError(f"{_name(source)}: file larger than {MAX_UPLOAD_BYTES // 2**20} MB")
    return path.read_bytes() if isinstance(source, (str, os.PathLike)) else bytes(source)


def _check_pixels(image: Image.Image) -> None:
    if image.width * image.height > MAX_PIXELS:
        raise FaceAlignmentError(
            f"image of {image.width}×{image.height} pixels is larger than the {MAX_PIXELS:,}-pixel limit")


def _decode(data: bytes, name: str) -> Image.Image:
    """Decode image bytes, refusing decompression bombs before the pixels are decoded."""
    try:
        image = Image.open(io.BytesIO(data))
        _check_pixels(image)  # the header gives the size; nothing is decoded yet
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
        return image
    except FaceAlignmentError:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning, Image.DecompressionBombError) as error:
        reason = "unrecognised or corrupt image data" if isinstance(error, Image.UnidentifiedImageError) else str(error)
        raise FaceAlignmentError(f"{name}: not a readable image ({reason})") from None


def to_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB from any PIL mode; transparency is composited on white."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        array = np.asarray(image, dtype=np.float64)
        high = 65535.0 if array.max() > 255 else 255.0
        image = Image.fromarray(np.clip(array / high * 255.0, 0, 255).astype(np.uint8), "L")
    elif image.mode == "F":
        array = np.asarray(image, dtype=np.float64)
        image = Image.fromarray(np.clip(array * (255.0 if array.max() <= 1 else 1.0), 0, 255).astype(np.uint8), "L")
    if image.mode == "P":
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA"):
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image.convert("RGBA"))
    return image.convert("RGB")


# Tried in order: the second finds some faces the first misses.
CASCADES = ("haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml")


@functools.lru_cache(maxsize=None)
def _cascade(name: str):
    import cv2

    cascade = cv2.CascadeClassifier(os.path.join(cv2.data.haarcascades, name))
    if cascade.empty():
        raise RuntimeError(f"OpenCV's face cascade {name} is missing from the cv2 package")
    return cascade


def detect_faces(image: Image.Image) -> list[tuple[int, int, int, int]]:
    """Face boxes ``(x, y, w, h)`` in the image's pixels, largest first."""
    import cv2

    scale = min(1.0, DETECT_MAX_SIDE / max(image.size))
    small = image if scale == 1.0 else image.resize(
        (max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.Resampling.BILINEAR)
    # Faces that fill a small photo need room around them for the cascade's window.
    upscale = 1.0
    if max(small.size) < 256:
        upscale = 256 / max(small.size)
        small = small.resize((round(small.width * upscale), round(small.height * upscale)), Image.Resampling.BICUBIC)
    gray = cv2.cvtColor(np.asarray(small), cv2.COLOR_RGB2GRAY)
    min_side = max(24, round(min(gray.shape) * 0.15))
    boxes = ()
    for name in CASCADES:
        boxes = _cascade(name).detectMultiScale(gray, scaleFactor=1.1, minNeighbors=5, minSize=(min_side, min_side))
        if len(boxes):
            break
    factor = scale * upscale
    found = [tuple(int(round(v / factor)) for v in box) for box in np.asarray(boxes).reshape(-1, 4)]
    return sorted(found, key=lambda b: b[2] * b[3], reverse=True)


def hq_crop_from_face_box(box: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
    """The CelebA-HQ framing square ``(left, top, right, bottom)`` around a Haar face box."""
    x, y, w, h = box
    side = w / HQ_BOX_WIDTH
    center_x = x + w / 2 - (HQ_BOX_CENTER[0] - 0.5) * side
    center_y = y + h / 2 - (HQ_BOX_CENTER[1] - 0.5) * side
    return (center_x - side / 2, center_y - side / 2, center_x + side / 2, center_y + side / 2)


def crop_square(image: Image.Image, box: tuple[float, float, float, float], resolution: int) -> np.ndarray:
    """Crop (edge pixels replicated where the box leaves the photo) and scale to ``(3, R, R)``."""
    left, top, right, bottom = box
    overhang = max(0.0, -left, -top, right - image.width, bottom - image.height)
    source = image
    if overhang > 0:
        pad = math.ceil(overhang) + 1
        array = np.pad(np.asarray(image), ((pad, pad), (pad, pad), (0, 0)), mode="edge")
        source = Image.fromarray(array)
        left, top, right, bottom = left + pad, top + pad, right + pad, bottom + pad
    cropped = source.resize((resolution, resolution), Image.Resampling.BICUBIC, box=(left, top, right, bottom),
                            reducing_gap=2.0)
    return np.asarray(cropped, dtype=np.uint8).transpose(2, 0, 1).copy()


def align_face(source: str | os.PathLike | bytes | Image.Image, resolution: int = 64) -> AlignedFace:
    """Detect the largest face in a photo and crop it to the training framing.

    Raises :class:`NoFaceError` when no face is found and :class:`FaceAlignmentError`
    for unreadable, huge or tiny images.
    """
    image = load_photo(source)
    if min(image.size) < MIN_SIDE:
        raise FaceAlignmentError(f"image of {image.width}×{image.height} pixels is too small; need at least {MIN_SIDE} px a side")
    faces = detect_faces(image)
    if not faces:
        raise NoFaceError("no face found in the photo; use a frontal, well-lit face")
    crop = hq_crop_from_face_box(faces[0])
    message = "one face found" if len(faces) == 1 else f"{len(faces)} faces found; the largest was used"
    return AlignedFace(crop_square(image, crop, resolution), faces[0], crop, len(faces), message)


class CelebAFramer:
    """Frames original CelebA photos like CelebA-HQ for dataset loading.

    Uses the detector; where it finds no face in an Align&Cropped photo (whose framing is
    fixed by the dataset), it uses that layout's fixed crop and counts the fallback.
    """

    cache_key = "celeba-haar-v1"

    def __init__(self) -> None:
        self.detected = 0
        self.fallbacks = 0

    def __call__(self, image: Image.Image, resolution: int) -> np.ndarray:
        try:
            aligned = align_face(image, resolution)
            self.detected += 1
            return aligned.image
        except NoFaceError:
            if image.size != CELEBA_ALIGNED_SIZE:
                raise
            self.fallbacks += 1
            return crop_square(image, CELEBA_ALIGNED_HQ_CROP, resolution)
