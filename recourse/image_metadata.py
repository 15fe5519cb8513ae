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
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from recourse.jpeg_markers import MAX_MARKERS

MB = 2**20

# Frames of an animated GIF, WebP or PNG, or pages of a TIFF: only the first is decoded,
# but the file is walked over whole. A 40-second animation at 25 frames a second has 1,000.
MAX_FRAMES = 1_000
# Chunks of a PNG or WebP. Each PNG chunk is a round of Pillow's Python (1.7 million empty
# ones fit in 20 MB: 6 s and 220 MB); encoders write image data in chunks of 8-64 KB, so a
# 20 MB photo has 320-2,560 of them.
MAX_CHUNKS = 20_000
# A GIF's data sub-blocks (at most 255 bytes each), walked here in Python: encoders fill
# them, 82,000 in 20 MB.
MAX_GIF_BLOCKS = 1_000_000
# A GIF's extensions (comments, application data, frame timing), whole: Pillow joins a
# comment a sub-block at a time and comments one after another (a 1 MB comment took 0.14 s,
# four times as long for each doubling: a 20 MB one ran past 90 s). Encoders write 8 bytes
# a frame, and an XMP packet of a few KB.
MAX_GIF_EXTENSION_BYTES = 256 * 1024
# Bytes between a GIF's blocks that start none: Pillow skips them one at a time in Python;
# encoders write none.
MAX_STRAY_BYTES = 64 * 1024
# An EXIF block (JPEG APP1 segments, which Pillow joins; PNG eXIf; WebP EXIF): a camera's
# fits the one 64 KB JPEG segment that the EXIF standard allows.
MAX_EXIF_BYTES = 1 * MB
# TIFF-structured directories (a TIFF's pages and an EXIF block's, each with its EXIF, GPS
# and Interop directories): a photo's EXIF has five.
MAX_DIRECTORIES = 4 * MAX_FRAMES
# Their entries, each read by Pillow in Python: a camera's EXIF has about 100, a TIFF page
# about 20.
MAX_ENTRIES = 10_000
# Bytes that the entries' values hold, each entry counted whole however many share its
# bytes (Pillow copies them for each, twice for a TIFF's first directory): an ICC profile
# takes 0.5 KB to a few MB, XMP and Photoshop's resources a few KB to a few MB.
MAX_VALUE_BYTES = 16 * MB
# Numbers among those values: Pillow makes a Python object of each in the directories it
# unpacks (a rational one of about 200 bytes), and a tile of each strip or tile offset
# (262,000 of either took 0.9-1.4 s). The strip offsets and sizes of a 40 MP TIFF written a
# row a strip are 16,000 numbers, an 8-bit transfer function 768; the most in Pillow's
# 1,067 test images, fuzzed files included, is 104,000.
MAX_VALUES = 2**17
# Data of a PNG's ancillary chunks (but an animation's frame data) or a WebP's chunks other
# than image data: colour profiles, text, XMP, EXIF.
MAX_ANCILLARY_BYTES = 8 * MB
# A PNG's compressed ancillary chunks (iCCP, zTXt, iTXt) inflated: Pillow inflates each up
# to 1 MB (and refuses the file where one holds more), however many there are.
MAX_INFLATED_BYTES = 8 * MB
PILLOW_INFLATE_CAP = 1 * MB  # PngImagePlugin.MAX_TEXT_CHUNK: what Pillow inflates of one chunk at most
# A PNG's colour profiles: the PNG standard allows one.
MAX_ICC_PROFILES = 1
# Photoshop's resource blocks in a JPEG (APP13), parsed one by one in Python by Pillow
# (20 MB of empty ones: 1.3 s); a photo's hold its caption, resolution and a thumbnail.
MAX_PHOTOSHOP_BYTES = 1 * MB


class MetadataLimitError(ValueError):
    """Reading the file's metadata would cost more than a photo's; the message says what."""


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


def _size(count: int) -> str:
    return f"{count // MB} MB" if count >= MB else f"{count // 1024} KB"


# What passing each cap means, for the user (after "a PNG file with").
_CAPS = {
    "frames": (MAX_FRAMES, f"more than {MAX_FRAMES:,} frames or pages (only the first would be used)"),
    "chunks": (MAX_CHUNKS, f"more than {MAX_CHUNKS:,} chunks (encoders write a few thousand at most)"),
    "gif_blocks": (MAX_GIF_BLOCKS, f"more than {MAX_GIF_BLOCKS:,} data blocks"),
    "extension_bytes": (MAX_GIF_EXTENSION_BYTES,
                        f"more than {_size(MAX_GIF_EXTENSION_BYTES)} of comments or other extensions"),
    "stray_bytes": (MAX_STRAY_BYTES, f"more than {_size(MAX_STRAY_BYTES)} of garbage between its blocks"),
    "exif_bytes": (MAX_EXIF_BYTES, f"more than {_size(MAX_EXIF_BYTES)} of EXIF data (a camera writes at most 64 KB)"),
    "directories": (MAX_DIRECTORIES, f"more than {MAX_DIRECTORIES:,} tag directories (TIFF or EXIF)"),
    "entries": (MAX_ENTRIES, f"more than {MAX_ENTRIES:,} tags (TIFF or EXIF)"),
    "value_bytes": (MAX_VALUE_BYTES, f"tags (TIFF or EXIF) whose values would take more than {_size(MAX_VALUE_BYTES)} "
                                     "to read (a block is read again for each tag that points at it)"),
    "values": (MAX_VALUES, f"more than {MAX_VALUES:,} numbers in its tags (TIFF or EXIF)"),
    "ancillary_bytes": (MAX_ANCILLARY_BYTES,
                        f"more than {_size(MAX_ANCILLARY_BYTES)} of metadata (colour profiles, text, EXIF)"),
    "inflated_bytes": (MAX_INFLATED_BYTES, "compressed metadata (colour profiles, text) that inflates to more "
                                           f"than {_size(MAX_INFLATED_BYTES)}"),
    "icc_profiles": (MAX_ICC_PROFILES, "more than one colour profile (iCCP chunk)"),
    "photoshop_bytes": (MAX_PHOTOSHOP_BYTES,
                        f"more than {_size(MAX_PHOTOSHOP_BYTES)} of Photoshop resource blocks (APP13)"),
}
_NAMES = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP", "GIF": "GIF", "TIFF": "TIFF"}


def _add(counts: dict[str, int], count: str, amount: int = 1) -> None:
    counts[count] += amount
    cap, meaning = _CAPS[count]
    if counts[count] > cap:
        raise MetadataLimitError(meaning)


def read_metadata(data: bytes) -> MetadataCost:
    """Walk the metadata that Pillow will read of an image file (see the module's note).
    Raises :class:`MetadataLimitError` as soon as a count passes its cap; data that merely
    ends early, or is malformed, is counted as far as it goes (Pillow fails there or skips
    it), and data of another format is not walked."""
    container = _container(data)
    counts = dict.fromkeys(_CAPS, 0)
    try:
        if container in _WALKS:
            _WALKS[container](data, counts)
    except MetadataLimitError as error:
        raise MetadataLimitError(f"a {_NAMES[container]} file with {error}") from None
    counts["frames"] = max(1, counts["frames"])
    return MetadataCost(container, **counts)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The TIFF headers Pillow reads (TiffImagePlugin.PREFIXES): the byte order from the first
# two bytes, BigTIFF where the third is 0x2B.
TIFF_PREFIXES = (b"MM\x00\x2a", b"II\x2a\x00", b"MM\x2a\x00", b"II\x00\x2a", b"MM\x00\x2b", b"II\x2b\x00")


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


# --- TIFF structure: a TIFF file, an EXIF block, a JPEG's MPF index -------------------------

# Bytes a value of each type takes, for the types Pillow reads (it skips the others).
_TYPE_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8}
_KEPT_AS_BYTES = (1, 2, 7)  # byte, text, undefined: Pillow keeps them as bytes; the rest are numbers
EXIF_IFD, GPS_IFD, INTEROP_IFD, ORIENTATION = 0x8769, 0x8825, 0xA005, 0x0112
_POINTER_FORMATS = {3: "H", 4: "L", 13: "L", 16: "Q"}  # a sub-directory's offset, of its entry's type


@dataclass(frozen=True)
class _Tiff:
    data: bytes
    endian: str  # struct's "<" or ">"
    big: bool  # BigTIFF: 8-byte counts and offsets, 20-byte entries


def _tiff_start(data: bytes) -> tuple[_Tiff, int] | None:
    """The structure and its first directory's offset, from a TIFF header as Pillow reads
    it; None where Pillow would not read one."""
    if data[:4] not in TIFF_PREFIXES:
        return None
    tiff = _Tiff(data, "<" if data[:2] == b"II" else ">", data[2] == 0x2B)
    if len(data) < (16 if tiff.big else 8):
        return None
    return tiff, struct.unpack_from(tiff.endian + ("Q" if tiff.big else "L"), data, 8 if tiff.big else 4)[0]


def _walk_tiff(data: bytes, counts: dict[str, int], pages: bool) -> None:
    """Count the directories of a TIFF structure as Pillow reads them: the chain from the
    first (each a page of a TIFF file, ``pages``), and from each the EXIF and GPS
    directories it points at, and the Interop directory the EXIF one points at."""
    start = _tiff_start(data)
    if start is None:
        return
    tiff, offset = start
    seen = set()
    while offset not in seen:  # Pillow ends the chain where it loops back
        seen.add(offset)
        if pages:
            _add(counts, "frames")
        offset, pointers = _walk_directory(tiff, offset, counts)
        for tag in (EXIF_IFD, GPS_IFD):
            if tag in pointers:
                _, inner = _walk_directory(tiff, pointers[tag], counts)
                if tag == EXIF_IFD and INTEROP_IFD in inner:
                    _walk_directory(tiff, inner[INTEROP_IFD], counts)
        if not offset:
            break


def _walk_directory(tiff: _Tiff, offset: int, counts: dict[str, int]) -> tuple[int, dict[int, int]]:
    """Count one directory's entries and what their values hold; return the next
    directory's offset (0: none) and the offsets of the sub-directories it points at."""
    data, endian = tiff.data, tiff.endian
    count_format, entry_bytes, inline_bytes, offset_format = ("Q", 20, 8, "Q") if tiff.big else ("H", 12, 4, "L")
    start = offset + struct.calcsize(count_format)
    if start > len(data):
        return 0, {}
    declared = struct.unpack_from(endian + count_format, data, offset)[0]
    entries = min(declared, (len(data) - start) // entry_bytes)  # Pillow stops where the data ends
    _add(counts, "directories")
    _add(counts, "entries", entries)
    pointers = {}
    for at in range(start, start + entries * entry_bytes, entry_bytes):
        tag, kind, count = struct.unpack_from(endian + ("HHQ" if tiff.big else "HHL"), data, at)
        unit = _TYPE_BYTES.get(kind)
        if unit is None:
            continue
        size, value_at = count * unit, at + entry_bytes - inline_bytes
        if size > inline_bytes:
            value_at = struct.unpack_from(endian + offset_format, data, value_at)[0]
        held = max(0, min(size, len(data) - value_at))  # what Pillow copies
        _add(counts, "value_bytes", held)
        if kind not in _KEPT_AS_BYTES:
            _add(counts, "values", held // unit)
        if tag in (EXIF_IFD, GPS_IFD, INTEROP_IFD) and count == 1 and kind in _POINTER_FORMATS and held == size:
            pointers[tag] = struct.unpack_from(endian + _POINTER_FORMATS[kind], data, value_at)[0]
    next_at = start + entries * entry_bytes
    if entries < declared or next_at + struct.calcsize(offset_format) > len(data):
        return 0, pointers
    return struct.unpack_from(endian + offset_format, data, next_at)[0], pointers


_EXIF_PREFIXES = re.compile(rb"(?:Exif\x00\x00)*")  # Pillow drops any number of them


def _walk_exif(exif: bytes, counts: dict[str, int]) -> None:
    _add(counts, "exif_bytes", len(exif))
    _walk_tiff(exif[_EXIF_PREFIXES.match(exif).end():], counts, pages=False)


def exif_orientation(exif: bytes) -> int | None:
    """The orientation entry (0x0112) of an EXIF block's first directory, read alone (its
    last, as Pillow keeps the last of an entry given twice); None where it has none. The
    work is bounded by the block's length: one pass over that directory's entries."""
    start = _tiff_start(exif[_EXIF_PREFIXES.match(exif).end():])
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


# --- containers -------------------------------------------------------------------------

_JPEG_MARKER = re.compile(rb"\xff[^\x00\xff]")  # as Pillow's header parser finds them
_JPEG_PARAMETERLESS = frozenset((0x01, *range(0xD0, 0xD9)))  # TEM, restarts, SOI
_JPEG_SOS, _JPEG_EOI, _JPEG_APP1, _JPEG_APP2, _JPEG_APP13 = 0xDA, 0xD9, 0xE1, 0xE2, 0xED


def _walk_jpeg(data: bytes, counts: dict[str, int]) -> None:
    """The header segments Pillow reads, up to the first scan: EXIF (the APP1 segments,
    joined as Pillow joins them), each multi-picture index (APP2) and Photoshop's
    resource blocks (APP13)."""
    exif = []
    position = 2
    for _ in range(MAX_MARKERS):  # a longer header is refused by jpeg_markers.read_layout
        found = _JPEG_MARKER.search(data, position)
        if found is None:
            break
        marker, position = data[found.start() + 1], found.end()
        if marker in (_JPEG_SOS, _JPEG_EOI) or position + 2 > len(data):
            break
        if marker in _JPEG_PARAMETERLESS:
            continue
        start, position = position + 2, position + max(2, int.from_bytes(data[position:position + 2], "big"))
        if marker == _JPEG_APP1 and data.startswith(b"Exif\x00\x00", start):
            exif.append(data[start + 6:position])  # at most 64 KB
            _add(counts, "exif_bytes", len(exif[-1]))
        elif marker == _JPEG_APP2 and data.startswith(b"MPF\x00", start):
            _walk_tiff(data[start + 4:position], counts, pages=False)
        elif marker == _JPEG_APP13 and data.startswith(b"Photoshop 3.0\x00", start):
            _add(counts, "photoshop_bytes", min(position, len(data)) - start)
    joined = b"".join(exif)
    _walk_tiff(joined[_EXIF_PREFIXES.match(joined).end():], counts, pages=False)


def _walk_png(data: bytes, counts: dict[str, int]) -> None:
    """Every chunk to IEND (Pillow reads those after the image data as it decodes):
    ancillary ones are counted, iCCP, zTXt and iTXt inflated, eXIf walked."""
    position = len(PNG_SIGNATURE)
    while position + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, position)
        start, position = position + 8, position + 12 + length  # length, type, data, CRC
        if start + length > len(data):
            break  # cut off: Pillow fails reading it
        _add(counts, "chunks")
        if kind == b"IEND":
            break
        if kind == b"fcTL":
            _add(counts, "frames")
        elif kind[0] & 0x20 and kind != b"fdAT":  # ancillary (lower-case first letter), not frame data
            _add(counts, "ancillary_bytes", length)
            _read_png_ancillary(kind, data[start:start + length], counts)


def _read_png_ancillary(kind: bytes, payload: bytes, counts: dict[str, int]) -> None:
    """Count what one ancillary chunk costs Pillow (PngImagePlugin's chunk_ methods)."""
    if kind == b"eXIf":
        _walk_exif(payload, counts)
    elif kind == b"iCCP":  # name, NUL, method, profile
        _add(counts, "icc_profiles")
        _inflate(payload[payload.find(b"\x00") + 2:], counts)
    elif kind == b"zTXt":  # keyword, NUL, method, text
        _inflate(payload.partition(b"\x00")[2][1:], counts)
    elif kind == b"iTXt":  # keyword, NUL, compressed?, method, language, NUL, keyword translated, NUL, text
        rest = payload.partition(b"\x00")[2]
        if len(rest) >= 2 and rest[0] and rest[1] == 0:
            _inflate(rest[2:].split(b"\x00", 2)[-1], counts)


def _inflate(compressed: bytes, counts: dict[str, int]) -> None:
    """Count what zlib data inflates to, inflating no more than the cap leaves (plus one
    byte, to see it passed). A corrupt stream counts as Pillow's most for one chunk, which
    it may have inflated before finding the fault."""
    budget = MAX_INFLATED_BYTES - counts["inflated_bytes"]
    try:
        inflated = len(zlib.decompressobj().decompress(compressed, budget + 1))
    except zlib.error:
        inflated = PILLOW_INFLATE_CAP
    _add(counts, "inflated_bytes", inflated)


_WEBP_IMAGE_CHUNKS = (b"VP8 ", b"VP8L", b"ALPH", b"VP8X", b"ANIM")


def _walk_webp(data: bytes, counts: dict[str, int]) -> None:
    """Every chunk of the RIFF container: frames (ANMF) counted, metadata chunks counted
    and EXIF walked."""
    end = min(len(data), 8 + struct.unpack_from("<I", data, 4)[0])
    position = 12
    while position + 8 <= end:
        kind, length = struct.unpack_from("<4sI", data, position)
        start, position = position + 8, position + 8 + length + (length & 1)  # chunks are padded to even
        if start + length > end:
            break  # cut off: libwebp fails reading it
        _add(counts, "chunks")
        if kind == b"ANMF":
            _add(counts, "frames")
        elif kind not in _WEBP_IMAGE_CHUNKS:
            _add(counts, "ancillary_bytes", length)
            if kind == b"EXIF":
                _walk_exif(data[start:start + length], counts)


_GIF_INTRODUCERS = re.compile(rb"[!,;]")  # an extension, an image, the trailer


def _colour_table_bytes(flags: int) -> int:
    return 3 << ((flags & 7) + 1) if flags & 0x80 else 0


def _walk_gif(data: bytes, counts: dict[str, int]) -> None:
    """Every block to the trailer: images counted as frames, extensions' bytes counted,
    bytes that start no block counted as stray."""
    position = 13 + _colour_table_bytes(data[10]) if len(data) > 10 else len(data)
    while position < len(data):
        introducer = data[position]
        if introducer == 0x3B:
            break
        if introducer == 0x21:  # extension: label, then sub-blocks
            end = _skip_sub_blocks(data, position + 2, counts)
            _add(counts, "extension_bytes", min(end, len(data)) - position)
            position = end
        elif introducer == 0x2C:  # image: descriptor, colour table, LZW code size, sub-blocks
            _add(counts, "frames")
            flags = data[position + 9] if position + 9 < len(data) else 0
            position = _skip_sub_blocks(data, position + 10 + _colour_table_bytes(flags) + 1, counts)
        else:
            found = _GIF_INTRODUCERS.search(data, position)
            stop = found.start() if found else len(data)
            _add(counts, "stray_bytes", stop - position)
            position = stop


def _skip_sub_blocks(data: bytes, position: int, counts: dict[str, int]) -> int:
    """The position after a chain of sub-blocks (a length byte, then that many bytes; a
    zero length ends it), counting them; the loop stops one past the cap."""
    room = MAX_GIF_BLOCKS - counts["gif_blocks"]
    blocks = 0
    while position < len(data) and blocks <= room:
        size = data[position]
        position += 1 + size
        blocks += 1
        if not size:
            break
    _add(counts, "gif_blocks", blocks)
    return position


_WALKS = {"JPEG": _walk_jpeg, "PNG": _walk_png, "WEBP": _walk_webp, "GIF": _walk_gif,
          "TIFF": lambda data, counts: _walk_tiff(data, counts, pages=True)}
