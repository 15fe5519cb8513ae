"""What an image file's metadata costs Pillow, read from the file's bytes before Pillow sees them.

Pillow reads metadata as it opens a file, before any check of the pixels, and bounds
little of it:

* A TIFF directory entry's value is copied for each entry that points at it
  (``ImageFileDirectory_v2.load``), however many share it: a 20 MB TIFF of 40 entries that
  all point at one 19 MB block took 8 s and 1.6 GB, one of 420 entries more than 4 GB. The
  EXIF, GPS and Interop directories are unpacked besides, each number into a Python
  object, and the strip or tile offsets of the first directory each into a tile.
* EXIF is that same structure inside other files: a JPEG's APP1 segments (which Pillow
  joins, and reads as it opens the file, for the resolution), a PNG's eXIf chunk, a WebP's
  EXIF chunk (read by ``Image.getexif``, which recourse.faces called for the orientation):
  the 40-entry trick took 0.8-3.4 s and 860-900 MB in each. A JPEG's multi-picture index (APP2 "MPF") is one too,
  unpacked whole as the file is opened: a 64 KB JPEG took 3.5 s and 380 MB.
* A PNG's iCCP chunks are each inflated up to 1 MB, however many there are (19,000 in a
  20 MB file took 49 s), and each chunk costs a round of Pillow's Python (1.7 million
  empty ones in 20 MB took 6 s and 220 MB).
* A GIF's comment is joined a sub-block at a time, and its comments one after another, so
  that its cost is quadratic in their size (a 20 MB comment ran past 90 s); Photoshop's
  resource blocks in a JPEG (APP13) are parsed one by one in Python.
* Only the first frame of an animation (or page of a TIFF) is decoded, but the rest is
  walked over too (libwebp indexes every frame of a WebP).

``read_metadata`` walks the structures that Pillow reads, as Pillow reads them, and counts
what they cost, raising :class:`MetadataLimitError` as soon as a count passes its cap
(measured with ``python -m scripts.measurements.metadata_bombs``). The caps are far above
what cameras and photo editors write, see each one. The walk is bounded itself: each of its
loops runs at most a capped number of times, and inflating stops at the bytes the cap
leaves (``zlib``'s ``max_length``).

``orientation`` reads the EXIF orientation of a decoded image from its raw EXIF bytes
alone, instead of Pillow's ``getexif``, which copies every entry of the first directory.

The caps are in :mod:`recourse.image_metadata_caps`, the walk of each container in
:mod:`recourse.image_metadata_walks`.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from recourse.image_metadata_caps import CAPS, MetadataLimitError
from recourse.image_metadata_walks import EXIF_PREFIXES, ORIENTATION, PNG_SIGNATURE, TIFF_PREFIXES, WALKS, tiff_start


@dataclass(frozen=True)
class MetadataCost:
    """What Pillow will read of an image file's metadata, counted over the whole file."""

    container: str  # "JPEG", "PNG", "WEBP", "GIF", "TIFF"; "BMP" or "" (not walked: nothing to read)
    frames: int  # frames of an animation or pages of a TIFF (1 for a still photo)
    chunks: int  # PNG or WebP chunks
    gif_blocks: int  # GIF data sub-blocks
    extension_bytes: int  # GIF extensions, whole
    stray_bytes: int  # bytes between GIF blocks
    exif_bytes: int  # the EXIF block
    directories: int  # TIFF-structured directories: a TIFF's, an EXIF block's, a JPEG's MPF index
    entries: int  # their entries
    value_bytes: int  # bytes the entries' values hold, each entry counted whole
    values: int  # numbers among them
    ancillary_bytes: int  # PNG ancillary chunks' data, WebP chunks other than image data
    inflated_bytes: int  # compressed PNG ancillary chunks, inflated
    icc_profiles: int  # PNG iCCP chunks
    photoshop_bytes: int  # JPEG APP13 Photoshop resource blocks


_NAMES = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP", "GIF": "GIF", "TIFF": "TIFF"}


def read_metadata(data: bytes) -> MetadataCost:
    """Walk the metadata that Pillow will read of an image file (see the module's note).
    Raises :class:`MetadataLimitError` as soon as a count passes its cap; data that merely
    ends early, or is malformed, is counted as far as it goes (Pillow fails there or skips
    it), and data of another format is not walked."""
    container = _container(data)
    counts = dict.fromkeys(CAPS, 0)
    try:
        if container in WALKS:
            WALKS[container](data, counts)
    except MetadataLimitError as error:
        raise MetadataLimitError(f"a {_NAMES[container]} file with {error}") from None
    counts["frames"] = max(1, counts["frames"])
    return MetadataCost(container, **counts)


def _container(data: bytes) -> str:
    """The format Pillow will open the data as (the signatures its plugins accept)."""
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if data[:8] == PNG_SIGNATURE:
        return "PNG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] in TIFF_PREFIXES:
        return "TIFF"
    return "BMP" if data[:2] == b"BM" else ""


def exif_orientation(exif: bytes) -> int | None:
    """The orientation entry (0x0112) of an EXIF block's first directory, read alone (its
    last, as Pillow keeps the last of an entry given twice); None where it has none. The
    work is bounded by the block's length: one pass over that directory's entries."""
    start = tiff_start(exif[EXIF_PREFIXES.match(exif).end():])
    if start is None:
        return None
    tiff, offset = start
    count_format, entry_bytes = ("Q", 20) if tiff.big else ("H", 12)
    first = offset + struct.calcsize(count_format)
    if first > len(tiff.data):
        return None
    declared = struct.unpack_from(tiff.endian + count_format, tiff.data, offset)[0]
    found = None
    for at in range(first, first + min(declared, (len(tiff.data) - first) // entry_bytes) * entry_bytes, entry_bytes):
        tag, kind, count = struct.unpack_from(tiff.endian + ("HHQ" if tiff.big else "HHL"), tiff.data, at)
        if tag == ORIENTATION:  # a single 16- or 32-bit integer; Pillow's other readings match no orientation
            value_format = {3: "H", 4: "L", 8: "h", 9: "l"}.get(kind) if count == 1 else None
            value_at = at + entry_bytes - (8 if tiff.big else 4)
            found = struct.unpack_from(tiff.endian + value_format, tiff.data, value_at)[0] if value_format else 0
    return found


_XMP_ORIENTATION = re.compile(rb'tiff:Orientation(="|>)([0-9])')  # Pillow's own reading


def orientation(image_format: str | None, info: dict) -> int:
    """The EXIF orientation (1-8; other values mean none) of a decoded image, from Pillow's
    ``info``, as ``Image.getexif`` gives it but without its copies: the EXIF block, or the
    hex one of ImageMagick's PNG text chunk, else XMP's ``tiff:Orientation``. A TIFF is 1:
    Pillow turns a TIFF upright itself as it decodes it."""
    if image_format == "TIFF":
        return 1
    exif = info.get("exif")
    if exif is None and "Raw profile type exif" in info:
        try:
            exif = bytes.fromhex("".join(str(info["Raw profile type exif"]).split("\n")[3:]))
        except ValueError:
            exif = None
    found = exif_orientation(exif) if isinstance(exif, bytes) else None
    if found is None:
        xmp = info.get("XML:com.adobe.xmp") or info.get("xmp")
        xmp = xmp.encode("utf-8", "replace") if isinstance(xmp, str) else xmp
        match = _XMP_ORIENTATION.search(xmp) if isinstance(xmp, bytes) else None
        found = int(match[2]) if match else None
    return 1 if found is None else found
