"""The walks over each container's metadata as Pillow reads it (a TIFF structure: a TIFF file,
an EXIF block, a JPEG's MPF index; JPEG, PNG, WebP and GIF), counting what it costs against
the caps of :mod:`recourse.image_metadata_caps`. Each loop runs a capped number of times."""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from recourse.image_metadata_caps import (
    MAX_GIF_BLOCKS, MAX_INFLATED_BYTES, PILLOW_INFLATE_CAP, add_count,
)
from recourse.jpeg_markers import MAX_MARKERS

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The TIFF headers Pillow reads (TiffImagePlugin.PREFIXES): the byte order from the first
# two bytes, BigTIFF where the third is 0x2B.
TIFF_PREFIXES = (b"MM\x00\x2a", b"II\x2a\x00", b"MM\x2a\x00", b"II\x00\x2a", b"MM\x00\x2b", b"II\x2b\x00")


# --- TIFF structure: a TIFF file, an EXIF block, a JPEG's MPF index -------------------------

# Bytes a value of each type takes, for the types Pillow reads (it skips the others).
_TYPE_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8}
_KEPT_AS_BYTES = (1, 2, 7)  # byte, text, undefined: Pillow keeps them as bytes; the rest are numbers
EXIF_IFD, GPS_IFD, INTEROP_IFD, ORIENTATION = 0x8769, 0x8825, 0xA005, 0x0112
_POINTER_FORMATS = {3: "H", 4: "L", 13: "L", 16: "Q"}  # a sub-directory's offset, of its entry's type


@dataclass(frozen=True)
class TiffStructure:
    """A TIFF structure's bytes and how its numbers are written."""

    data: bytes
    endian: str  # struct's "<" or ">"
    big: bool  # BigTIFF: 8-byte counts and offsets, 20-byte entries


def tiff_start(data: bytes) -> tuple[TiffStructure, int] | None:
    """The structure and its first directory's offset, from a TIFF header as Pillow reads
    it; None where Pillow would not read one."""
    if data[:4] not in TIFF_PREFIXES:
        return None
    tiff = TiffStructure(data, "<" if data[:2] == b"II" else ">", data[2] == 0x2B)
    if len(data) < (16 if tiff.big else 8):
        return None
    return tiff, struct.unpack_from(tiff.endian + ("Q" if tiff.big else "L"), data, 8 if tiff.big else 4)[0]


def _walk_tiff(data: bytes, counts: dict[str, int], pages: bool) -> None:
    """Count the directories of a TIFF structure as Pillow reads them: the chain from the
    first (each a page of a TIFF file, ``pages``), and from each the EXIF and GPS
    directories it points at, and the Interop directory the EXIF one points at."""
    start = tiff_start(data)
    if start is None:
        return
    tiff, offset = start
    seen = set()
    while offset not in seen:  # Pillow ends the chain where it loops back
        seen.add(offset)
        if pages:
            add_count(counts, "frames")
        offset, pointers = _walk_directory(tiff, offset, counts)
        for tag in (EXIF_IFD, GPS_IFD):
            if tag in pointers:
                _, inner = _walk_directory(tiff, pointers[tag], counts)
                if tag == EXIF_IFD and INTEROP_IFD in inner:
                    _walk_directory(tiff, inner[INTEROP_IFD], counts)
        if not offset:
            break


def _walk_directory(tiff: TiffStructure, offset: int, counts: dict[str, int]) -> tuple[int, dict[int, int]]:
    """Count one directory's entries and what their values hold; return the next
    directory's offset (0: none) and the offsets of the sub-directories it points at."""
    data, endian = tiff.data, tiff.endian
    count_format, entry_bytes, inline_bytes, offset_format = ("Q", 20, 8, "Q") if tiff.big else ("H", 12, 4, "L")
    start = offset + struct.calcsize(count_format)
    if start > len(data):
        return 0, {}
    declared = struct.unpack_from(endian + count_format, data, offset)[0]
    entries = min(declared, (len(data) - start) // entry_bytes)  # Pillow stops where the data ends
    add_count(counts, "directories")
    add_count(counts, "entries", entries)
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
        add_count(counts, "value_bytes", held)
        if kind not in _KEPT_AS_BYTES:
            add_count(counts, "values", held // unit)
        if tag in (EXIF_IFD, GPS_IFD, INTEROP_IFD) and count == 1 and kind in _POINTER_FORMATS and held == size:
            pointers[tag] = struct.unpack_from(endian + _POINTER_FORMATS[kind], data, value_at)[0]
    next_at = start + entries * entry_bytes
    if entries < declared or next_at + struct.calcsize(offset_format) > len(data):
        return 0, pointers
    return struct.unpack_from(endian + offset_format, data, next_at)[0], pointers


EXIF_PREFIXES = re.compile(rb"(?:Exif\x00\x00)*")  # Pillow drops any number of them


def _walk_exif(exif: bytes, counts: dict[str, int]) -> None:
    add_count(counts, "exif_bytes", len(exif))
    _walk_tiff(exif[EXIF_PREFIXES.match(exif).end():], counts, pages=False)


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
            add_count(counts, "exif_bytes", len(exif[-1]))
        elif marker == _JPEG_APP2 and data.startswith(b"MPF\x00", start):
            _walk_tiff(data[start + 4:position], counts, pages=False)
        elif marker == _JPEG_APP13 and data.startswith(b"Photoshop 3.0\x00", start):
            add_count(counts, "photoshop_bytes", min(position, len(data)) - start)
    joined = b"".join(exif)
    _walk_tiff(joined[EXIF_PREFIXES.match(joined).end():], counts, pages=False)


def _walk_png(data: bytes, counts: dict[str, int]) -> None:
    """Every chunk to IEND (Pillow reads those after the image data as it decodes):
    ancillary ones are counted, iCCP, zTXt and iTXt inflated, eXIf walked."""
    position = len(PNG_SIGNATURE)
    while position + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, position)
        start, position = position + 8, position + 12 + length  # length, type, data, CRC
        if start + length > len(data):
            break  # cut off: Pillow fails reading it
        add_count(counts, "chunks")
        if kind == b"IEND":
            break
        if kind == b"fcTL":
            add_count(counts, "frames")
        elif kind[0] & 0x20 and kind != b"fdAT":  # ancillary (lower-case first letter), not frame data
            add_count(counts, "ancillary_bytes", length)
            _read_png_ancillary(kind, data[start:start + length], counts)


def _read_png_ancillary(kind: bytes, payload: bytes, counts: dict[str, int]) -> None:
    """Count what one ancillary chunk costs Pillow (PngImagePlugin's chunk_ methods)."""
    if kind == b"eXIf":
        _walk_exif(payload, counts)
    elif kind == b"iCCP":  # name, NUL, method, profile
        add_count(counts, "icc_profiles")
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
    add_count(counts, "inflated_bytes", inflated)


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
        add_count(counts, "chunks")
        if kind == b"ANMF":
            add_count(counts, "frames")
        elif kind not in _WEBP_IMAGE_CHUNKS:
            add_count(counts, "ancillary_bytes", length)
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
            add_count(counts, "extension_bytes", min(end, len(data)) - position)
            position = end
        elif introducer == 0x2C:  # image: descriptor, colour table, LZW code size, sub-blocks
            add_count(counts, "frames")
            flags = data[position + 9] if position + 9 < len(data) else 0
            position = _skip_sub_blocks(data, position + 10 + _colour_table_bytes(flags) + 1, counts)
        else:
            found = _GIF_INTRODUCERS.search(data, position)
            stop = found.start() if found else len(data)
            add_count(counts, "stray_bytes", stop - position)
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
    add_count(counts, "gif_blocks", blocks)
    return position


WALKS = {"JPEG": _walk_jpeg, "PNG": _walk_png, "WEBP": _walk_webp, "GIF": _walk_gif,
          "TIFF": lambda data, counts: _walk_tiff(data, counts, pages=True)}
