"""The caps on what an image file's metadata may cost Pillow (:mod:`recourse.image_metadata`),
each beside what it is measured against, and the count that refuses a file past one."""

from __future__ import annotations

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


def _size(count: int) -> str:
    return f"{count // MB} MB" if count >= MB else f"{count // 1024} KB"


# What passing each cap means, for the user (after "a PNG file with").
CAPS = {
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
def add_count(counts: dict[str, int], count: str, amount: int = 1) -> None:
    """Add ``amount`` to ``counts[count]``, refusing the file as soon as it passes its cap."""
    counts[count] += amount
    cap, meaning = CAPS[count]
    if counts[count] > cap:
        raise MetadataLimitError(meaning)
