"""The layout of a JPEG from its markers alone: frame size, sampling, progressive or not, and
how many scans libjpeg would decode; nothing is decoded.

What a JPEG costs libjpeg is not in the header Pillow reads. A progressive file (or any
file of more than one scan) is decoded into a coefficient buffer of the whole image at full
size, whatever the DCT scaling asked for, and every scan is entropy-decoded over every
block of its components: a few hundred KB of a last scan repeated thousands of times take
minutes of one uninterruptible call. ``read_layout`` walks the markers as libjpeg's marker
reader does, so that what it counts is at least what libjpeg would decode:

* segments are skipped by their length; between them, bytes that are not a marker are
  skipped (libjpeg does, with a warning);
* a scan's entropy-coded data ends at the first ``0xFF`` followed by a byte other than
  ``0x00`` (a stuffed data byte), ``0xFF`` (fill) or ``0xD0``-``0xD7`` (a restart marker):
  libjpeg's entropy decoder stops at that marker too, and once the scan's blocks are
  decoded skips to it;
* the walk ends at the first EOI, where libjpeg stops (a multi-picture MPO file holds
  several images; Pillow decodes the first), or where the data ends;
* every marker libjpeg refuses to decode (a second SOI or frame, a scan before the frame,
  differential frames, reserved markers), and lossless frames, raise
  :class:`JpegStructureError`: decoding would fail there, and past a reserved marker
  libjpeg may resynchronise where this walk cannot follow (its restart recovery skips
  such markers), so nothing after one is trusted.

The walk is linear in the data and runs in C but for a few steps a marker (at most
``MAX_MARKERS``): the entropy-coded data is skipped by one regular expression of two
literal bytes, so that no run of ``0xFF``, stuffed or restart bytes can make it quadratic
or slow (20 MB of any of them take 0.05-0.1 s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SOI, EOI, SOS, DHT, DAC, DQT, DRI, DNL, COM, TEM = 0xD8, 0xD9, 0xDA, 0xC4, 0xCC, 0xDB, 0xDD, 0xDC, 0xFE, 0x01
APPS = range(0xE0, 0xF0)
# Frames libjpeg decodes in 8×8 blocks, Huffman or arithmetic coded. The others stop it
# with an error (differential, JPG), or are decoded sample by sample at a cost the blocks
# counted here do not describe (lossless SOF3, which libjpeg-turbo 3 decodes): no camera or
# photo encoder writes any of them, so they raise.
SEQUENTIAL_FRAMES = (0xC0, 0xC1, 0xC9)
PROGRESSIVE_FRAMES = (0xC2, 0xCA)
UNSUPPORTED_FRAMES = (0xC3, 0xC5, 0xC6, 0xC7, 0xC8, 0xCB, 0xCD, 0xCE, 0xCF)
# Segments with a length that libjpeg reads or skips and then goes on.
_SKIPPED = frozenset((DHT, DAC, DQT, DRI, DNL, COM, *APPS))
_SEGMENTS = _SKIPPED | {SOS, *SEQUENTIAL_FRAMES, *PROGRESSIVE_FRAMES}
BLOCK_BYTES = 64 * 2  # one 8×8 block of 16-bit coefficients (JCOEF)
# Markers walked (restarts inside scans aside) before the walk gives up: a photo has a few
# dozen, a progressive one about three more a scan. It bounds the walk's Python loop (20 MB
# of 4-byte comment segments took 2.6 s here, and as long in Pillow's header parser).
MAX_MARKERS = 10_000

# The first marker at or after a position, as libjpeg finds it: 0xFF, then a byte that is
# not stuffing (0x00), fill (0xFF) or a restart (RST0-7). A run of fill bytes ends in the
# same 0xFF that this pair starts with, so fill needs no quantifier (none that could
# backtrack).
_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


class JpegStructureError(ValueError):
    """The bytes are not a JPEG that libjpeg would decode; the message says where."""


@dataclass(frozen=True)
class JpegLayout:
    """What a JPEG's markers say it costs to decode (its first image, for an MPO file)."""

    progressive: bool
    width: int
    height: int
    components: tuple[tuple[int, int], ...]  # (horizontal, vertical) sampling, frame order
    scans: int  # SOS markers up to the first EOI: each one is a pass over its components
    scan_blocks: int  # 8×8 blocks entropy-decoded over all scans (each scan, its components)
    complete: bool  # an EOI ended the image (False: the data ran out before one)
    stray_bytes: int  # bytes between segments before the first scan: fill and garbage


def read_layout(data: bytes) -> JpegLayout:
    """Walk a JPEG's markers (see the module's note). Raises :class:`JpegStructureError`
    for data that does not start a JPEG, has no frame before its first scan or its end, or
    holds a marker libjpeg refuses; data that merely ends early gives what it holds."""
    if data[:2] != b"\xff\xd8":
        raise JpegStructureError("no JPEG start-of-image marker")
    end = len(data)
    frame = None
    scans = scan_blocks = stray = 0
    position = 2
    for _ in range(MAX_MARKERS):
        found = _MARKER.search(data, position)
        if found is None:
            break  # the data ends before an EOI: libjpeg ends the image there too
        if not scans:  # after a scan, what lies before the next marker is entropy-coded data
            stray += found.start() - position
        marker = data[found.start() + 1]
        position = found.end()
        if marker == EOI:
            return _layout(frame, scans, scan_blocks, True, stray)
        if marker == TEM:
            continue  # parameterless
        if marker == SOI:
            raise JpegStructureError(f"a second start-of-image marker at byte {found.start()}")
        if marker not in _SEGMENTS:
            kind = "an unsupported frame type" if marker in UNSUPPORTED_FRAMES else "a reserved marker"
            raise JpegStructureError(f"{kind} (0xFF{marker:02X}) at byte {found.start()}")
        if position + 2 > end:
            break
        length = int.from_bytes(data[position:position + 2], "big")
        if length < 2:
            raise JpegStructureError(f"a segment of length {length} at byte {found.start()}")
        if position + length > end:
            break  # cut off inside a segment
        start, position = position + 2, position + length
        if marker in SEQUENTIAL_FRAMES or marker in PROGRESSIVE_FRAMES:
            if frame is not None:
                raise JpegStructureError(f"a second frame header at byte {found.start()}")
            frame = _frame(data[start:position], marker in PROGRESSIVE_FRAMES, found.start())
        elif marker == SOS:
            if frame is None:
                raise JpegStructureError(f"a scan before the frame header at byte {found.start()}")
            scans += 1
            scan_blocks += _scan_blocks(data[start:position], frame, found.start())
            # the entropy-coded data is skipped by the next search: it holds no marker
    else:
        raise JpegStructureError(f"more than {MAX_MARKERS:,} markers (a photo has a few dozen)")
    return _layout(frame, scans, scan_blocks, False, stray)


def _frame(segment: bytes, progressive: bool, offset: int):
    """(progressive, width, height, [(h, v)] in frame order, {component id: (h, v)}) from
    a SOFn segment."""
    if len(segment) < 6:
        raise JpegStructureError(f"a frame header too short at byte {offset}")
    height = int.from_bytes(segment[1:3], "big")
    width = int.from_bytes(segment[3:5], "big")
    count = segment[5]
    if count == 0 or len(segment) < 6 + 3 * count:
        raise JpegStructureError(f"a frame header of {count} components too short at byte {offset}")
    if width == 0 or height == 0:  # libjpeg refuses both (JERR_EMPTY_IMAGE: no DNL support)
        raise JpegStructureError(f"a frame of {width}×{height} pixels at byte {offset}")
    samplings, by_id = [], {}
    for index in range(count):
        identifier, sampling = segment[6 + 3 * index], segment[7 + 3 * index]
        h, v = sampling >> 4, sampling & 0x0F
        if not (1 <= h <= 4 and 1 <= v <= 4):  # libjpeg refuses these (JERR_BAD_SAMPLING)
            raise JpegStructureError(f"sampling factors {h}×{v} in the frame header at byte {offset}")
        samplings.append((h, v))
        by_id.setdefault(identifier, (h, v))
    return progressive, width, height, tuple(samplings), by_id


def _component_blocks(width: int, height: int, sampling: tuple[int, int], largest: tuple[int, int]) -> int:
    """8×8 blocks of one component, padded to whole MCUs as libjpeg allocates them."""
    h, v = sampling
    across = -(-width * h // (largest[0] * 8))
    down = -(-height * v // (largest[1] * 8))
    return -(-across // h) * h * (-(-down // v) * v)


def _scan_blocks(segment: bytes, frame, offset: int) -> int:
    _, width, height, samplings, by_id = frame
    if not segment or len(segment) < 1 + 2 * segment[0]:
        raise JpegStructureError(f"a scan header too short at byte {offset}")
    largest = (max(h for h, _ in samplings), max(v for _, v in samplings))
    total = 0
    for index in range(segment[0]):
        sampling = by_id.get(segment[1 + 2 * index])
        if sampling is None:  # libjpeg: JERR_BAD_COMPONENT_ID
            raise JpegStructureError(f"a scan of a component the frame lacks at byte {offset}")
        total += _component_blocks(width, height, sampling, largest)
    return total


def _layout(frame, scans: int, scan_blocks: int, complete: bool, stray: int) -> JpegLayout:
    if frame is None:
        raise JpegStructureError("no frame header before the end of the image")
    progressive, width, height, samplings, _ = frame
    return JpegLayout(progressive, width, height, samplings, scans, scan_blocks, complete, stray)


def coefficient_bytes(layout: JpegLayout) -> int:
    """What libjpeg allocates for the whole image's DCT coefficients: a progressive file,
    or one of several scans, is decoded scan by scan into a buffer of every block of every
    component at full size (DCT scaling only reduces the output); a single-scan file is
    decoded a row of blocks at a time (0 here)."""
    if not (layout.progressive or layout.scans > 1):
        return 0
    largest = (max(h for h, _ in layout.components), max(v for _, v in layout.components))
    return BLOCK_BYTES * sum(_component_blocks(layout.width, layout.height, sampling, largest)
                             for sampling in layout.components)
