"""Face detection and alignment of any photo to the CelebA-HQ training framing.

The detector is OpenCV's frontal-face Haar cascade, which ships inside the
``opencv-python-headless`` wheel: it runs offline and downloads nothing. Its box is mapped
to the CelebA-HQ framing by a fixed ratio measured on CelebA-HQ training images
(``python -m scripts.chores.calibrate_framing --data PATH``).
"""

from __future__ import annotations

import functools
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from recourse import image_metadata, jpeg_markers

# Where the Haar box sits in a CelebA-HQ frame (fractions of the frame side), medians over
# 386 training images (python -m scripts.chores.calibrate_framing).
HQ_BOX_CENTER = (0.500, 0.555)
HQ_BOX_WIDTH = 0.656
# Original CelebA Align&Cropped photos (178×218) all share one framing; the CelebA-HQ crop
# of it: the median crop over the first 400 of those photos (386 detected; same script).
CELEBA_ALIGNED_SIZE = (178, 218)
CELEBA_ALIGNED_HQ_CROP = (8.7, 35.7, 168.3, 195.7)

# Limits sized to a face photo, checked before anything is decoded (the app reuses them).
# A 40 MP phone photo is a large JPEG of 10-20 MB; a small file that decodes to far more
# pixels (a 124 KB 16-bit PNG of 64 MP) is refused from its header alone.
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 40_000_000
# What the decoded photo may occupy in memory, from its header: Pillow keeps 1 byte a pixel
# for 1-bit, grey and palette photos, 2 for 16-bit grey and 4 for every other mode (RGB
# included). 40 MP of 8-bit grey fit; an RGB or RGBA PNG of more than 20 MP does not (a JPEG
# is decoded reduced, see _decode). A WebP took about twice its decoded size more at peak
# (libwebp's own buffer, then Pillow's copy), so it counts three times. Measured with
# python -m scripts.measurements.upload_memory. A progressive (or multi-scan) JPEG also keeps the DCT
# coefficients of the whole image at full size, whatever it is reduced to: 128 bytes an 8×8
# block of each component, 3 bytes a pixel in 4:2:0 colour, 6 in 4:4:4, 8 in CMYK (a 627 KB
# 40 MP CMYK one took 312 MB); they count too (jpeg_markers.coefficient_bytes), so the
# largest square progressive JPEGs let through are 37 MP of grey, 21 MP of 4:2:0 colour,
# 8.4 MP of 4:4:4 and 7 MP of CMYK (python -m scripts.measurements.jpeg_scans --decode).
MAX_DECODED_BYTES = 80 * 2**20
# A JPEG's scans, counted from its markers before anything is decoded (see _check_jpeg).
# libjpeg decodes each scan over every block of its components, so repeating a cheap scan
# costs time and hardly any bytes: a 442 KB 40 MP progressive JPEG whose last scan was
# repeated to 2,500 scans took 58 s and 156 MB here (129 s on a slower machine). Measured
# with python -m scripts.measurements.jpeg_scans FOLDERS --encoders: every one of the 35,064 CelebA
# photos here (5,063 Align&Cropped, 30,000 HQ) and the repo's assets is baseline, 1 scan;
# the progressive files written by Pillow, OpenCV and libjpeg-turbo's cjpeg and jpegtran
# (any quality, subsampling, optimize, arithmetic coding) have 10 scans in colour, 6 in
# grey and 18 in CMYK, mozjpeg's optimised scans 4 to 7. The limit leaves over three times
# the most. At it, the costliest file the memory cap lets through (37 MP of grey, each of
# its scans in turn repeated to 64, Huffman or arithmetic coded) decoded in at most 1.7 s
# with 82-90 MiB at peak, the upload's bytes included (python -m scripts.measurements.jpeg_scans --decode).
MAX_JPEG_SCANS = 64
ENCODER_MAX_SCANS = 18  # the most measured above (libjpeg's CMYK script), for the message
# Bytes of fill or garbage between a JPEG's header segments: libjpeg skips them, but
# Pillow's header parser does so a byte at a time in Python (2 MB of 0xFF fill took 1.4 s,
# 20 MB would take 14 s); encoders write none.
MAX_JPEG_STRAY_BYTES = 64 * 1024
# Only these formats are opened: every one is decoded by Pillow's own code from the header
# on (no external program, no vector or document format).
FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF")  # JPEG includes multi-picture (MPO) files
# Photos are worked on at most this size a side: detection runs at DETECT_MAX_SIDE and the
# crop is scaled to 64 px (256 for a hub generator), so more pixels only cost memory.
WORK_MAX_SIDE = 2048
DETECT_MAX_SIDE = 640  # detection runs on a downscaled copy of large photos
MIN_SIDE = 32
_BAND_ROWS = 256  # rows of a large photo converted at a time (bounded memory for any mode)


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


@dataclass(frozen=True)
class _Photo:
    """An upright 8-bit RGB photo at working size, and how much larger the original is."""

    image: Image.Image
    scale: tuple[float, float]  # original pixels per working pixel, (x, y)


def load_photo(source: str | os.PathLike | bytes | Image.Image) -> Image.Image:
    """Open a photo as upright 8-bit RGB, whatever its mode, EXIF orientation or bit depth.

    Photos larger than ``WORK_MAX_SIDE`` a side come back reduced to it (see ``_open``)."""
    return _open(source).image


def _open(source: str | os.PathLike | bytes | Image.Image) -> _Photo:
    if isinstance(source, Image.Image):
        image = source
        _check_pixels(image)
    else:
        image = _decode(_read_bytes(source), _name(source))
    orientation = image_metadata.orientation(image.format, image.info)  # not getexif(): it copies every tag
    size = image.size
    rgb = _working_rgb(image)
    del image  # the decoded original is not needed any more (the caller may still hold it)
    rgb = _upright(rgb, orientation)
    if orientation in (5, 6, 7, 8):  # a quarter turn swaps the original's axes
        size = size[::-1]
    return _Photo(rgb, (size[0] / rgb.width, size[1] / rgb.height))


def _name(source: str | os.PathLike | bytes) -> str:
    # only the file name: a message must not show where the server keeps uploads
    return Path(source).name if isinstance(source, (str, os.PathLike)) else "upload"


def _read_bytes(source: str | os.PathLike | bytes) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FaceAlignmentError(f"{path.name}: no such file")
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


_BYTES_PER_PIXEL = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2}  # else 4


def _check_memory(image: Image.Image, jpeg: jpeg_markers.JpegLayout | None = None) -> None:
    """Refuse a photo whose decoded pixels, plus the whole-image coefficient buffers of a
    progressive JPEG (``jpeg``: its markers' layout, see ``_check_jpeg``), would take more
    than ``MAX_DECODED_BYTES``."""
    pixels = image.width * image.height * _BYTES_PER_PIXEL.get(image.mode, 4) * (3 if image.format == "WEBP" else 1)
    coefficients = jpeg_markers.coefficient_bytes(jpeg) if jpeg is not None else 0
    needed = pixels + coefficients
    if needed <= MAX_DECODED_BYTES:
        return
    if coefficients:
        kind = "progressive" if jpeg.progressive else "multi-scan"
        raise FaceAlignmentError(
            f"a {kind} JPEG of {jpeg.width}×{jpeg.height} pixels would take {needed / 2**20:.0f} MB to decode, "
            f"{coefficients / 2**20:.0f} MB of it for the DCT coefficients of the whole image (kept at full size "
            f"whatever the photo is reduced to), more than the {MAX_DECODED_BYTES // 2**20} MB limit; "
            "save it as a baseline (non-progressive) JPEG or make it smaller")
    raise FaceAlignmentError(
        f"image of {image.width}×{image.height} pixels in mode {image.mode} would take {needed / 2**20:.0f} MB "
        f"to decode, more than the {MAX_DECODED_BYTES // 2**20} MB limit; save it as a JPEG or make it smaller")


def _check_jpeg(data: bytes, name: str) -> jpeg_markers.JpegLayout:
    """Refuse a JPEG (or MPO) of more than ``MAX_JPEG_SCANS`` scans, from its markers; return
    its layout, whose coefficient buffers ``_check_memory`` counts.

    Pillow's header says nothing of either: libjpeg decodes every scan over every block of
    its components in one uninterruptible call (a 395 KB file whose last scan was repeated
    2,500 times took 129 s), and keeps 128 bytes an 8×8 block of each component for a
    progressive or multi-scan file, at full size whatever the draft scale."""
    layout = jpeg_markers.read_layout(data)  # JpegStructureError is a ValueError: "not a readable image"
    if layout.stray_bytes > MAX_JPEG_STRAY_BYTES:
        raise FaceAlignmentError(f"{name}: a JPEG with {layout.stray_bytes:,} bytes of padding or garbage between "
                                 "its header segments; save it again as an ordinary JPEG")
    if layout.scans > MAX_JPEG_SCANS:
        raise FaceAlignmentError(
            f"{name}: a JPEG of {layout.scans:,} scans, more than the {MAX_JPEG_SCANS} allowed (encoders write at "
            f"most {ENCODER_MAX_SCANS}, and each scan is decoded over the whole image); "
            "save it again as an ordinary JPEG")
    return layout


def _decode(data: bytes, name: str) -> Image.Image:
    """Decode image bytes, refusing decompression bombs before the pixels are decoded."""
    try:
        image = _checked(data, name)
        # No DecompressionBombWarning guard is needed (nor thread-safe: warnings.catch_warnings
        # changes the process's filters): the caps above are far below Pillow's bomb limit.
        image.load()
        return image
    except FaceAlignmentError:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning, Image.DecompressionBombError) as error:
        reason = "unrecognised or corrupt image data" if isinstance(error, Image.UnidentifiedImageError) else str(error)
        raise FaceAlignmentError(f"{name}: not a readable image ({reason})") from None


def _checked(data: bytes, name: str) -> Image.Image:
    """Open image bytes with every check that needs no decoding done: a JPEG's markers, what
    the metadata costs, the header's pixels and the memory decoding will take. Nothing is
    decoded yet; Pillow's and the marker walk's errors are left to the caller (``_decode``)."""
    # A JPEG's markers are walked first: the walk is bounded and mostly in C, Pillow's
    # header parser is neither (see MAX_JPEG_STRAY_BYTES). Pillow reads as JPEG (or MPO, whose
    # first image is the one decoded and walked) exactly the data that starts so.
    jpeg = _check_jpeg(data, name) if data[:3] == b"\xff\xd8\xff" else None
    try:  # metadata too: Pillow copies and unpacks it as it opens the file, unbounded (see image_metadata)
        image_metadata.read_metadata(data)
    except image_metadata.MetadataLimitError as error:
        raise FaceAlignmentError(f"{name}: {error}; save it again as an ordinary JPEG or PNG") from None
    image = Image.open(io.BytesIO(data), formats=FORMATS)
    _check_pixels(image)  # the header gives the size; nothing is decoded yet
    if image.format in ("JPEG", "MPO") and max(image.size) > WORK_MAX_SIDE:
        # decode at 1/2, 1/4 or 1/8 straight from the DCT: the output never holds the full size
        # (a progressive file's coefficients still do: _check_memory counts them)
        factor = max(image.size) / WORK_MAX_SIDE
        image.draft(None, (math.ceil(image.width / factor), math.ceil(image.height / factor)))
    _check_memory(image, jpeg)  # the size to be decoded, after any reduction, in this mode
    return image


def _working_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB at most ``WORK_MAX_SIDE`` a side. A larger photo is converted and reduced
    (box filter) band by band, so that memory beyond the decoded photo stays a few MB
    whatever its mode: converting a whole 16-bit or RGBA photo first costs several times
    its size."""
    factor = math.ceil(max(image.size) / WORK_MAX_SIDE)
    if factor <= 1:
        return to_rgb(image)
    levels = _levels(image)
    reduced = Image.new("RGB", (math.ceil(image.width / factor), math.ceil(image.height / factor)))
    rows = factor * max(1, _BAND_ROWS // factor)  # whole reduction boxes per band
    for top in range(0, image.height, rows):
        band = image.crop((0, top, image.width, min(image.height, top + rows)))
        reduced.paste(_to_rgb(band, levels).reduce(factor), (0, top // factor))
    return reduced


_TRANSPOSES = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
               5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
               8: Image.Transpose.ROTATE_90}


def _upright(image: Image.Image, orientation: int) -> Image.Image:
    """Apply an EXIF orientation (after reduction, so that the copy it makes is small)."""
    return image.transpose(_TRANSPOSES[orientation]) if orientation in _TRANSPOSES else image


_WIDE_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")


def _levels(image: Image.Image) -> float:
    """The white level of a 16-bit, 32-bit or float photo, from the whole photo (so that
    every band of it is scaled alike); 255 for 8-bit modes."""
    if image.mode not in _WIDE_MODES:
        return 255.0
    try:
        high = image.getextrema()[1]  # computed in C, no copy of the pixels
    except ValueError:  # none for big-endian 16-bit ("I;16B"): from a copy, within the memory cap
        high = float(np.asarray(image).max())
    if image.mode == "F":
        return 1.0 if high <= 1 else 255.0
    return 65535.0 if high > 255 else 255.0


def to_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB from any PIL mode; transparency is composited on white."""
    return _to_rgb(image, _levels(image))


def _to_rgb(image: Image.Image, levels: float) -> Image.Image:
    if image.mode in _WIDE_MODES:
        # in place, on a working-size photo or one band of a larger one: bounded memory
        array = np.asarray(image, dtype=np.float64)
        array /= levels
        array *= 255.0
        image = Image.fromarray(np.clip(array, 0, 255, out=array).astype(np.uint8), "L")
    if image.mode in ("P", "PA"):
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA"):
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image.convert("RGBA"))
    return image.convert("RGB")


# Tried in order: the second finds some faces the first misses.
CASCADES = ("haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml")


class FaceDetectorError(RuntimeError):
    """The installed OpenCV has no Haar face detector (OpenCV 5 removed it): the environment
    is wrong, not the photo."""


# pyproject.toml's range: the versions whose cv2.CascadeClassifier this module is tested with.
OPENCV_RANGE = "opencv-python-headless>=4.12,<5"


@functools.lru_cache(maxsize=None)
def _cascade(name: str):
    import cv2

    if not hasattr(cv2, "CascadeClassifier") or not hasattr(getattr(cv2, "data", None), "haarcascades"):
        raise FaceDetectorError(f"OpenCV {cv2.__version__} has no Haar face detector (cv2.CascadeClassifier); "
                                f"install {OPENCV_RANGE!r}")
    cascade = cv2.CascadeClassifier(os.path.join(cv2.data.haarcascades, name))
    if cascade.empty():
        raise RuntimeError(f"OpenCV's face cascade {name} is missing from the cv2 package")
    return cascade


def detect_faces(image: Image.Image, min_share: float = 0.15) -> list[tuple[int, int, int, int]]:
    """Face boxes ``(x, y, w, h)`` in the image's pixels, largest first, of at least ``min_share``
    of the photo's shorter side (smaller shares find the faces of full-length pictures, and more
    false ones)."""
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
    min_side = max(24, round(min(gray.shape) * min_share))
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


def align_face(source: str | os.PathLike | bytes | Image.Image, resolution: int = 64,
               min_share: float = 0.15) -> AlignedFace:
    """Detect the largest face in a photo and crop it to the training framing.

    Raises :class:`NoFaceError` when no face is found and :class:`FaceAlignmentError`
    for unreadable, huge or tiny images.
    """
    photo = _open(source)
    image = photo.image
    if min(image.size) < MIN_SIDE:
        raise FaceAlignmentError(f"image of {image.width}×{image.height} pixels is too small; need at least {MIN_SIDE} px a side")
    faces = detect_faces(image, min_share)
    if not faces:
        raise NoFaceError("no face found in the photo; use a frontal, well-lit face")
    crop = hq_crop_from_face_box(faces[0])
    message = "one face found" if len(faces) == 1 else f"{len(faces)} faces found; the largest was used"
    # boxes are reported in the original photo's pixels, whatever size it was worked on
    sx, sy = photo.scale
    x, y, w, h = faces[0]
    face_box = (round(x * sx), round(y * sy), round(w * sx), round(h * sy))
    crop_box = (crop[0] * sx, crop[1] * sy, crop[2] * sx, crop[3] * sy)
    return AlignedFace(crop_square(image, crop, resolution), face_box, crop_box, len(faces), message)


ALIGNED_ASPECT_TOLERANCE = 0.03  # relative; a resized copy of a 178×218 photo is well within


def aligned_layout_crop(size: tuple[int, int]) -> tuple[float, float, float, float] | None:
    """The Align&Cropped layout's fixed CelebA-HQ crop for a photo of ``size``: the 178×218
    crop scaled to the photo when it has that layout's aspect ratio (many mirrors ship the
    aligned photos downscaled), else None."""
    width, height = size
    base_width, base_height = CELEBA_ALIGNED_SIZE
    if abs((width / height) / (base_width / base_height) - 1) > ALIGNED_ASPECT_TOLERANCE:
        return None
    sx, sy = width / base_width, height / base_height
    left, top, right, bottom = CELEBA_ALIGNED_HQ_CROP
    return (left * sx, top * sy, right * sx, bottom * sy)


class CelebAFramer:
    """Frames original CelebA photos like CelebA-HQ for dataset loading.

    Uses the detector; where it finds no face in an Align&Cropped photo (whose framing is
    fixed by the dataset, at any size with its aspect ratio), it uses that layout's fixed
    crop and counts the fallback. Other photos without a face raise :class:`NoFaceError`
    (dataset loaders skip and name them).
    """

    cache_key = "celeba-haar-v2"  # v2: the fixed crop scales with the photo

    def __init__(self) -> None:
        self.detected = 0
        self.fallbacks = 0

    def __call__(self, image: Image.Image, resolution: int) -> np.ndarray:
        try:
            aligned = align_face(image, resolution)
            self.detected += 1
            return aligned.image
        except NoFaceError:
            crop = aligned_layout_crop(image.size)
            if crop is None:
                raise
            self.fallbacks += 1
            return crop_square(image, crop, resolution)

    def summary(self) -> str:
        """What the framing did, for the user."""
        return (f"aligned {self.detected} photos by face detection; {self.fallbacks} without a detected face "
                "took the Align&Cropped layout's fixed crop")
