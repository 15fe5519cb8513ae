"""What hostile image metadata costs an upload: each probe aligned in a fresh process.

    python -m scripts.measurements.metadata_bombs [--json PATH] [--repo PATH] [--only TEXT ...]

Builds two groups of files of at most 20 MB (the upload limit) whose metadata, not their
pixels, is the load (recourse/image_metadata.py says what Pillow does with each):

* "hostile": TIFF directory entries that all point at one large block (Pillow copies the
  block for each entry), the same in an EXIF block (PNG eXIf, JPEG APP1, WebP EXIF) and a
  JPEG's multi-picture index, thousands of PNG iCCP chunks (each inflated to 1 MB), a
  million empty PNG chunks, a long GIF comment, Photoshop's resource blocks, animations of
  hundreds of thousands of frames;
* "allowed": the costliest file of each kind that recourse.image_metadata lets through,
  each just under one cap, and one of each format just under all its caps at once.

Each is aligned with ``recourse.faces.align_face(path)`` in a new Python process, after a
warm-up alignment (OpenCV and its cascades already loaded), and reported with:

* the outcome: ``accepted`` (aligned, or no face found: decoded either way; a refusal after
  decoding, of a photo too small, is marked so) or the refusal;
* the seconds the call took;
* the MB it added: ``VmHWM`` after the call minus ``VmRSS`` before it (``/proc/self/status``).

The target is under 2 s and 300 MB each. ``--repo`` measures another checkout (for
example ``git worktree add /tmp/before HEAD~1``): the process is limited to 4 GB more
address space than the warm-up left and to ``--timeout`` seconds, so that the probes that
would take gigabytes or minutes there stop with a note instead.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Callable

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 20 * 2**20  # the upload limit (recourse.faces.MAX_UPLOAD_BYTES)
HEADROOM = 64 * 1024  # what the probes' own structure may take of it

# Runs inside the measured process: prints one JSON line.
PROBE = r"""
import json, resource, sys, time
from PIL import Image
from recourse import faces

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # MiB
try:
    faces.align_face(Image.new("RGB", (200, 200), (128, 128, 128)))  # warm-up: cv2 and the cascades
except faces.FaceAlignmentError:
    pass
spare = 4 * 2**30
resource.setrlimit(resource.RLIMIT_AS, (int(status("VmSize") * 2**20) + spare, resource.RLIM_INFINITY))
before = status("VmRSS")
started = time.perf_counter()
try:
    faces.align_face(sys.argv[1])
    outcome = "accepted"
except faces.NoFaceError:
    outcome = "accepted"  # decoded; the probes hold no face
except faces.FaceAlignmentError as error:
    outcome = "refused: " + str(error)
except MemoryError:
    outcome = "MemoryError (over 4 GB more address space)"
seconds, mb = time.perf_counter() - started, status("VmHWM") - before
if outcome.startswith("refused"):  # after decoding (a photo too small, say): accepted all the same
    try:
        faces.load_photo(sys.argv[1])
        outcome = "accepted (decoded, then " + outcome + ")"
    except faces.FaceAlignmentError:
        pass
print(json.dumps({"outcome": outcome, "seconds": round(seconds, 3), "mb": round(mb, 1)}))
"""


# --- building files -----------------------------------------------------------------


def _photo(image_format: str, mode: str = "L", size: tuple[int, int] = (64, 64), **options) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, 128).save(buffer, format=image_format, **options)
    return buffer.getvalue()


def tiff_structure(directories: list[list[tuple[int, int, int, bytes]]], block: bytes = b"", *,
                   base: int = 0) -> bytes:
    """A little-endian TIFF header, ``directories`` (lists of entries: tag, type, count,
    value), then ``block``. A value of ``b"BLOCK"`` points at the block, ``b"DIR1"`` (and so
    on) at that directory; ``base``: where the structure starts in its file (TIFF offsets
    count from the file's start)."""
    at, places = base + 8, {}
    for index, entries in enumerate(directories):
        places[f"DIR{index}".encode()] = at
        at += 2 + 12 * len(entries) + 4
    places[b"BLOCK"] = at
    parts = [b"II*\0", struct.pack("<I", base + 8)]
    for entries in directories:
        parts.append(struct.pack("<H", len(entries)))
        for tag, kind, count, value in sorted(entries):
            value = struct.pack("<I", places[value]) if value in places else value.ljust(4, b"\0")
            parts.append(struct.pack("<HHI", tag, kind, count) + value)
        parts.append(b"\0\0\0\0")
    return b"".join(parts) + block


def shared_block_entries(tags: int, block_bytes: int, kind: int = 7, first_tag: int = 0xC000):
    """``tags`` entries of type ``kind`` (7: undefined bytes, 3: 16-bit numbers, 5: rational
    numbers) that all hold the same block of ``block_bytes``."""
    unit = {7: 1, 3: 2, 5: 8}[kind]
    return [(first_tag + index, kind, block_bytes // unit, b"BLOCK") for index in range(tags)]


def grey_tiff(entries=(), exif_entries=(), block: bytes = b"", width: int = 64, height: int = 64,
              rows_per_strip: int = 64) -> bytes:
    """An uncompressed grey TIFF of ``width × height`` with ``entries`` added to its first
    directory and, if any, an EXIF directory of ``exif_entries``; strips of ``rows_per_strip``
    rows, their offsets and sizes in arrays after the block (values in place for one strip)."""
    strips = -(-height // rows_per_strip)
    sizes = [min(rows_per_strip, height - index * rows_per_strip) * width for index in range(strips)]
    long = lambda value: struct.pack("<I", value)  # noqa: E731
    image = [(256, 4, 1, long(width)), (257, 4, 1, long(height)), (258, 3, 1, b"\x08\0"), (259, 3, 1, b"\x01\0"),
             (262, 3, 1, b"\x01\0"), (277, 3, 1, b"\x01\0"), (278, 4, 1, long(rows_per_strip)),
             (273, 4, strips, b"OFFS"), (279, 4, strips, b"SIZE")]
    first = image + list(entries) + ([(0x8769, 4, 1, b"DIR1")] if exif_entries else [])
    data = tiff_structure([first] + ([list(exif_entries)] if exif_entries else []), block)
    arrays_at = len(data)
    pixels_at = arrays_at + (8 * strips if strips > 1 else 0)
    offsets = [pixels_at + index * rows_per_strip * width for index in range(strips)]
    if strips == 1:
        return data.replace(b"OFFS", long(offsets[0]), 1).replace(b"SIZE", long(sizes[0]), 1) + bytes(sum(sizes))
    data = data.replace(b"OFFS", long(arrays_at), 1).replace(b"SIZE", long(arrays_at + 4 * strips), 1)
    return data + struct.pack(f"<{strips}I", *offsets) + struct.pack(f"<{strips}I", *sizes) + bytes(sum(sizes))


def tiff_with_shared_block(tags: int, block_bytes: int, kind: int = 7) -> bytes:
    """A 64×64 grey TIFF whose first directory also holds ``tags`` private tags that all
    point at one block of ``block_bytes``."""
    return grey_tiff(shared_block_entries(tags, block_bytes, kind), block=bytes(block_bytes))


def exif_with_shared_block(tags: int, block_bytes: int, kind: int = 7) -> bytes:
    """An EXIF block (a TIFF structure) whose first directory has ``tags`` entries that all
    point at one block of ``block_bytes``."""
    return tiff_structure([shared_block_entries(tags, block_bytes, kind)], bytes(block_bytes))


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_with_chunks(chunks: list[bytes]) -> bytes:
    """A 64×64 grey PNG with ``chunks`` (whole chunks, see ``png_chunk``) after its header."""
    data = _photo("PNG")
    header_end = 8 + 25  # signature, IHDR
    return data[:header_end] + b"".join(chunks) + data[header_end:]


def png_with_exif(exif: bytes) -> bytes:
    return png_with_chunks([png_chunk(b"eXIf", exif)])


def png_of_icc_chunks(count: int) -> bytes:
    """``count`` iCCP chunks, each a profile of 1 MB (Pillow's cap a chunk) that deflates to 1 KB."""
    chunk = png_chunk(b"iCCP", b"icc\0\0" + zlib.compress(bytes(2**20), 9))
    return png_with_chunks([chunk] * count)


def webp_with_exif(exif: bytes) -> bytes:
    return _photo("WEBP", "RGB", exif=exif)


def webp_of_frames(frames: int) -> bytes:
    """An animated 64×64 WebP of ``frames`` lossless frames of one pixel."""
    buffer = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buffer, format="WEBP", lossless=True)
    pixel = buffer.getvalue()[12:]  # the VP8L chunk
    frame_header = struct.pack("<I", 0)[:3] * 2 + struct.pack("<I", 0)[:3] * 2 + struct.pack("<I", 10)[:3] + b"\0"
    frame = b"ANMF" + struct.pack("<I", len(frame_header) + len(pixel)) + frame_header + pixel
    canvas = struct.pack("<I", 63)[:3] * 2
    chunks = (b"VP8X" + struct.pack("<I", 10) + bytes((0x02, 0, 0, 0)) + canvas
              + b"ANIM" + struct.pack("<I", 6) + b"\0\0\0\0\0\0" + frame * frames)
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WEBP" + chunks


def png_of_empty_chunks(count: int) -> bytes:
    """``count`` empty private chunks: each a round of Pillow's Python."""
    return png_with_chunks([png_chunk(b"prIv", b"")] * count)


def png_of_text(count: int, inflated: int) -> bytes:
    """``count`` zTXt chunks of ``inflated`` bytes each, compressed."""
    return png_with_chunks([png_chunk(b"zTXt", b"note%d\0\0" % index + zlib.compress(bytes(inflated), 9))
                            for index in range(count)])


def jpeg_with_segments(segments: list[tuple[int, bytes]]) -> bytes:
    """A 64×64 grey JPEG with ``segments`` (marker, payload) after its start."""
    data = _photo("JPEG")
    return data[:2] + b"".join(b"\xff" + bytes((marker,)) + struct.pack(">H", len(payload) + 2) + payload
                               for marker, payload in segments) + data[2:]


def exif_segments(exif: bytes) -> list[tuple[int, bytes]]:
    """An EXIF block in as many APP1 segments as it needs (Pillow joins them; a segment
    holds at most 65,533 bytes)."""
    piece = 65533 - 6
    return [(0xE1, b"Exif\0\0" + exif[at:at + piece]) for at in range(0, len(exif), piece)]


def mpf_segment(tags: int, numbers: int) -> tuple[int, bytes]:
    """A multi-picture index (APP2 MPF) of ``tags`` entries of ``numbers`` 16-bit numbers
    each, all in one block (Pillow unpacks every one as it opens the file)."""
    return 0xE2, b"MPF\0" + tiff_structure([shared_block_entries(tags, 2 * numbers, 3)], bytes(2 * numbers))


def photoshop_segments(total: int) -> list[tuple[int, bytes]]:
    """``total`` bytes of APP13 segments full of empty Photoshop resource blocks."""
    payload = b"Photoshop 3.0\0" + b"8BIM\x04\x04\0\0\0\0\0\0" * ((65533 - 14) // 12)
    return [(0xED, payload)] * max(1, total // (len(payload) + 4))


def gif_with_extensions(extension: bytes, count: int) -> bytes:
    """A 64×64 GIF with ``count`` copies of ``extension`` before its image."""
    data = _photo("GIF")
    at = data.index(b",")
    return data[:at] + extension * count + data[at:]


def gif_of_frames(frames: int, sub_blocks: int = 1) -> bytes:
    """A 64×64 GIF whose first frame is followed by ``frames - 1`` frames of one pixel,
    each of whose data is split in ``sub_blocks`` sub-blocks (the first holding the pixel)."""
    data = _photo("GIF")
    assert data.endswith(b";")
    one_pixel = (b"\x21\xf9\x04\x00\x01\x00\x00\x00"  # graphic control: 10 ms
                 b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00"  # image descriptor: 1×1 at (0, 0)
                 b"\x02\x02\x44\x01" + b"\x01\x00" * (sub_blocks - 1) + b"\x00")  # clear, pixel 0, end
    return data[:-1] + one_pixel * (frames - 1) + b";"


def tiff_at_every_cap() -> bytes:
    """A TIFF just under the caps on tag values (15 MB) and numbers (32,000 strips of a row,
    each an offset and a size, and 64,000 rational numbers in its EXIF directory)."""
    block = bytes(2**20)
    return grey_tiff(shared_block_entries(14, len(block)), shared_block_entries(8, 8 * 8_000, 5), block,
                     height=32_000, rows_per_strip=1)


def jpeg_at_every_cap() -> bytes:
    """A JPEG just under the caps on EXIF (1 MB in 16 APP1 segments, its tags holding
    15 MB), the numbers of its multi-picture index (125,000) and Photoshop's blocks (1 MB)."""
    exif = exif_segments(exif_with_shared_block(15, 2**20 - 64 * 1024))
    return jpeg_with_segments(exif + [mpf_segment(16, 7_800)] + photoshop_segments(2**20 - 16 * 1024))


def png_at_every_cap() -> bytes:
    """A PNG just under the caps on chunks (20,000), ancillary bytes (8 MB: an eXIf of 1 MB
    whose tags hold 15 MB, 7 private chunks of 1 MB) and inflated bytes (a colour profile and 7
    zTXt chunks of 1 MB each)."""
    exif = png_chunk(b"eXIf", exif_with_shared_block(15, 2**20 - 64 * 1024))
    icc = png_chunk(b"iCCP", b"icc\0\0" + zlib.compress(bytes(2**20 - 1024), 9))
    texts = [png_chunk(b"zTXt", b"note%d\0\0" % index + zlib.compress(bytes(2**20 - 1024), 9)) for index in range(7)]
    private = [png_chunk(b"prIv", bytes(2**20 - 8192))] * 7
    return png_with_chunks([exif, icc, *texts, *private] + [png_chunk(b"prIv", b"")] * 19_970)


def gif_at_every_cap() -> bytes:
    """A GIF just under the caps on extensions (250 KB of one-byte comments), stray bytes
    (60 KB), frames (1,000) and sub-blocks (990,000), all but the frames before its first image."""
    frames = gif_of_frames(1_000, 890)
    at = frames.index(b",")
    return frames[:at] + b"\x21\xfe\x01c\x00" * 50_000 + bytes(60_000) + frames[at:]


def largest_block(tags: int) -> int:
    """The block that leaves a file of ``tags`` entries under the upload limit."""
    return LIMIT - HEADROOM - 12 * tags


def probes() -> list[tuple[str, str, Callable[[], bytes]]]:
    """(group, name, what builds the file): the issue's files and those found beside them,
    at full size ("hostile"), and the costliest of each kind the caps let through ("allowed")."""
    exif_1mb = 2**20 - 64 * 1024
    hostile = {
        "TIFF, 40 tags → one 19 MB block": lambda: tiff_with_shared_block(40, largest_block(40)),
        "TIFF, 420 tags → one 19 MB block": lambda: tiff_with_shared_block(420, largest_block(420)),
        "TIFF EXIF dir, 40 16-bit tags → one 19 MB block": lambda: grey_tiff(
            exif_entries=shared_block_entries(40, largest_block(40), 3), block=bytes(largest_block(40))),
        "PNG eXIf, 40 tags → one 19 MB block": lambda: png_with_exif(exif_with_shared_block(40, largest_block(40))),
        "PNG eXIf of 1 MB, 2,000 tags → one 0.9 MB block": lambda: png_with_exif(
            exif_with_shared_block(2000, exif_1mb - 24000)),
        "JPEG APP1 EXIF, 40 tags → one 19 MB block": lambda: jpeg_with_segments(
            exif_segments(exif_with_shared_block(40, largest_block(40)))),
        "JPEG APP1 EXIF of 64 KB, 2,600 tags → 33 KB": lambda: jpeg_with_segments(
            exif_segments(exif_with_shared_block(2600, 33000))),
        "JPEG APP2 MPF of 64 KB, 2,000 tags → 40 KB": lambda: jpeg_with_segments([mpf_segment(2000, 20000)]),
        "JPEG, 20 MB of Photoshop blocks (APP13)": lambda: jpeg_with_segments(photoshop_segments(LIMIT - HEADROOM)),
        "WebP EXIF, 40 tags → one 19 MB block": lambda: webp_with_exif(exif_with_shared_block(40, largest_block(40))),
        "PNG, 19,000 iCCP chunks (1 MB each inflated)": lambda: png_of_icc_chunks(19_000),
        "PNG, 1.7 million empty chunks": lambda: png_of_empty_chunks((LIMIT - HEADROOM) // 12),
        "GIF, a 20 MB comment": lambda: gif_with_extensions(b"\x21\xfe" + (b"\xff" + b"c" * 255) * 81_000 + b"\0", 1),
        "GIF, 800,000 frames": lambda: gif_of_frames(800_000),
        "WebP, 400,000 frames": lambda: webp_of_frames(400_000),
    }
    allowed = {
        "TIFF, 16 tags → one 1 MB block (16 MB)": lambda: tiff_with_shared_block(16, 2**20 - 1024),
        "TIFF EXIF dir of 131,000 rational numbers": lambda: grey_tiff(
            exif_entries=shared_block_entries(8, 8 * 16_350, 5), block=bytes(8 * 16_350)),
        "TIFF of 65,000 strips (64 × 65,000)": lambda: grey_tiff(height=65_000, rows_per_strip=1),
        "JPEG APP2 MPF, 131,000 16-bit numbers": lambda: jpeg_with_segments([mpf_segment(16, 8_150)]),
        "JPEG, 1 MB of Photoshop blocks (APP13)": lambda: jpeg_with_segments(photoshop_segments(2**20 - 16 * 1024)),
        "PNG, 20,000 chunks": lambda: png_of_empty_chunks(19_990),
        "PNG, 8 zTXt chunks of 1 MB inflated": lambda: png_of_text(8, 2**20 - 1024),
        "GIF, 256 KB of one-byte comments": lambda: gif_with_extensions(b"\x21\xfe\x01c\x00", 52_000),
        "GIF, 1,000 frames of 990 sub-blocks": lambda: gif_of_frames(1_000, 990),
        "WebP, 1,000 frames": lambda: webp_of_frames(1_000),
        "TIFF at every cap at once": tiff_at_every_cap,
        "JPEG at every cap at once": jpeg_at_every_cap,
        "PNG at every cap at once": png_at_every_cap,
        "GIF at every cap at once": gif_at_every_cap,
    }
    return [("hostile", name, build) for name, build in hostile.items()] + [
        ("allowed", name, build) for name, build in allowed.items()]


# --- measuring ----------------------------------------------------------------------


def measure(repo: Path, path: Path, timeout: float) -> dict:
    try:
        completed = subprocess.run([sys.executable, "-c", PROBE, str(path)], cwd=repo, capture_output=True,
                                   text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(repo)})
    except subprocess.TimeoutExpired:
        return {"outcome": f"stopped after {timeout:.0f} s", "seconds": None, "mb": None}
    if completed.returncode != 0:
        return {"outcome": "failed: " + " ".join(completed.stderr.strip().splitlines()[-1:]), "seconds": None,
                "mb": None}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout whose recourse.faces is measured")
    parser.add_argument("--only", nargs="+", default=(), help="probes whose name holds one of these texts")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a probe is stopped")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        print(f"recourse.faces of {args.repo}")
        print(f"{'group':<8} {'probe':<48} {'MB file':>7} {'s':>6} {'MB':>5}  outcome")
        for group, name, build in probes():
            if args.only and not any(text in name for text in args.only):
                continue
            data = build()
            assert len(data) <= LIMIT, (name, len(data))
            path = Path(folder) / "probe"
            path.write_bytes(data)
            result = {"group": group, "probe": name, "file_mb": round(len(data) / 2**20, 2),
                      **measure(args.repo, path, args.timeout)}
            results.append(result)
            seconds = "-" if result["seconds"] is None else f"{result['seconds']:.2f}"
            added = "-" if result["mb"] is None else f"{result['mb']:.0f}"
            print(f"{group:<8} {name:<48} {result['file_mb']:>7.1f} {seconds:>6} {added:>5}  {result['outcome'][:110]}",
                  flush=True)
    if args.json:
        head = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        record = {"command": "python -m scripts.measurements.metadata_bombs " + " ".join(sys.argv[1:]),
                  "commit": head, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                  "target": {"seconds": 2, "mb": 300},
                  "within_target": all(result["seconds"] is not None and result["seconds"] < 2 and result["mb"] < 300
                                       for result in results),
                  "probes": results}
        args.json.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
