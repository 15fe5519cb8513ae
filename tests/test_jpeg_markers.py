"""A JPEG's layout from its markers (recourse/jpeg_markers.py), and the checks recourse.faces
makes with it before decoding: the number of scans (each one decoded over the whole image)
and the whole-image coefficient buffers of a progressive file."""

import io
import time

import numpy as np
import pytest
from PIL import Image

from recourse import faces
from recourse.faces import FaceAlignmentError, align_face, load_photo
from recourse.jpeg_markers import (
    MAX_MARKERS, JpegLayout, JpegStructureError, coefficient_bytes, read_layout,
)


def _jpeg(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", **options)
    return buffer.getvalue()


def _photo(width: int = 70, height: int = 50, mode: str = "RGB") -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).convert(mode)


def _marker_positions(data: bytes, code: int) -> list[int]:
    """Where segments with this marker start in an encoder's file (tests only: entropy-coded
    data holds no 0xFF followed by a marker code)."""
    marker = bytes((0xFF, code))
    positions, position = [], data.find(marker)
    while position >= 0:
        positions.append(position)
        position = data.find(marker, position + 2)
    return positions


def _repeat_last_scan(data: bytes, scans: int) -> bytes:
    """The attack: the file's last scan (its SOS segment and entropy-coded data) copied again
    before the EOI until the file has ``scans`` scans."""
    assert data.endswith(b"\xff\xd9")
    last = data[_marker_positions(data, 0xDA)[-1]:-2]
    return data[:-2] + last * (scans - read_layout(data).scans) + b"\xff\xd9"


def _with_size(data: bytes, width: int, height: int) -> bytes:
    """The file with its frame header patched to claim ``width × height`` pixels: Pillow's
    header and the marker walk both read it; the data runs out if it were decoded."""
    frame = next(p for code in (0xC0, 0xC1, 0xC2) for p in _marker_positions(data, code))
    return data[:frame + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + data[frame + 9:]


# --- the walk ------------------------------------------------------------------------


def test_a_baseline_jpeg_is_one_scan_without_coefficient_buffers():
    layout = read_layout(_jpeg(_photo(), quality=85))
    assert layout == JpegLayout(progressive=False, width=70, height=50, components=((2, 2), (1, 1), (1, 1)),
                                scans=1, scan_blocks=80 + 20 + 20, complete=True, stray_bytes=0)
    assert coefficient_bytes(layout) == 0


def test_a_progressive_jpeg_counts_its_scans_and_whole_image_buffers():
    layout = read_layout(_jpeg(_photo(), progressive=True))
    assert layout.progressive and layout.scans == 10  # libjpeg's default script for colour
    assert (layout.width, layout.height, layout.components) == (70, 50, ((2, 2), (1, 1), (1, 1)))
    # 4:2:0: luma 9×7 blocks padded to whole 2×2 MCUs (10×8), each chroma 5×4; 128 bytes a block
    assert coefficient_bytes(layout) == (10 * 8 + 2 * 5 * 4) * 128


@pytest.mark.parametrize("mode, options, components, scans", [
    ("RGB", {"subsampling": 0}, ((1, 1),) * 3, 10),
    ("RGB", {"subsampling": 1}, ((2, 1), (1, 1), (1, 1)), 10),
    ("L", {}, ((1, 1),), 6),
    ("CMYK", {}, ((1, 1),) * 4, 18),
])
def test_sampling_and_scans_of_each_kind(mode, options, components, scans):
    data = _jpeg(_photo(64, 48, mode), progressive=True, optimize=True, **options)
    layout = read_layout(data)
    assert (layout.components, layout.scans, layout.progressive) == (components, scans, True)
    with Image.open(io.BytesIO(data)) as image:  # the walk agrees with Pillow's header
        assert (layout.width, layout.height) == image.size and image.info.get("progressive") == 1
    blocks = sum(8 * h * 6 * v // (max(c[0] for c in components) * max(c[1] for c in components))
                 for h, v in components)
    assert coefficient_bytes(layout) == blocks * 128


def test_cmyk_keeps_eight_bytes_a_pixel_whatever_the_scale():
    """The issue's 40 MP progressive CMYK: 312 MB of RSS against the stated 80 MB."""
    layout = read_layout(_with_size(_jpeg(_photo(64, 64, "CMYK"), progressive=True), 6320, 6320))
    assert coefficient_bytes(layout) == 6320 * 6320 * 8


def test_restart_markers_inside_scans_are_not_markers():
    data = _jpeg(_photo(), restart_marker_blocks=1)
    assert len([p for code in range(0xD0, 0xD8) for p in _marker_positions(data, code)]) > 5
    layout = read_layout(data)
    assert layout.scans == 1 and layout.complete


def test_only_the_first_image_of_a_multi_picture_file_is_walked():
    buffer = io.BytesIO()
    first, second = _photo(64, 48), _photo(32, 40)
    first.save(buffer, format="MPO", save_all=True, append_images=[second])
    data = buffer.getvalue()
    assert data.count(b"\xff\xd8\xff") == 2
    layout = read_layout(data)
    assert (layout.width, layout.height, layout.scans, layout.complete) == (64, 48, 1, True)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "MPO" and image.size == (64, 48)


def test_fill_and_stray_bytes_between_segments_are_skipped_and_counted():
    data = _jpeg(_photo())
    tables = _marker_positions(data, 0xDB)[0]
    padded = data[:tables] + b"junk" + b"\xff" * 5 + data[tables:]  # 0xFF before a marker is fill
    layout = read_layout(padded)
    assert layout.scans == 1 and layout.complete and layout.stray_bytes == 4 + 5
    assert Image.open(io.BytesIO(padded)).size == (70, 50)  # Pillow skips them too


def test_truncated_data_gives_what_it_holds():
    data = _jpeg(_photo(), progressive=True)
    sixth_scan = _marker_positions(data, 0xDA)[5]
    layout = read_layout(data[:sixth_scan + 20])  # cut inside the sixth scan's data
    assert layout.scans == 6 and not layout.complete
    assert read_layout(data[:sixth_scan + 3]).scans == 5  # cut inside its header


@pytest.mark.parametrize("data, message", [
    (b"", "no JPEG start-of-image"),
    (b"GIF89a", "no JPEG start-of-image"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "no frame header before the end"),
    (b"\xff\xd8\xff\xd9", "no frame header"),
    (b"\xff\xd8\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00", "a scan before the frame header"),
    (b"\xff\xd8\xff\xd8", "a second start-of-image"),
    (b"\xff\xd8\xff\xfe\x00\x01", "a segment of length 1"),
    (b"\xff\xd8\xff\x02\x00\x04\x00\x00", "a reserved marker (0xFF02)"),
    (b"\xff\xd8\xff\xc3\x00\x0b\x08\x00\x10\x00\x10\x01\x01\x11\x00", "an unsupported frame type (0xFFC3)"),
    (b"\xff\xd8\xff\xc0\x00\x0b\x08\x00\x00\x00\x10\x01\x01\x11\x00", "a frame of 16×0 pixels"),
    (b"\xff\xd8\xff\xc0\x00\x0b\x08\x00\x10\x00\x10\x01\x01\x51\x00", "sampling factors 5×1"),
    (b"\xff\xd8\xff\xc0\x00\x08\x08\x00\x10\x00\x10\x01", "too short"),
])
def test_data_that_libjpeg_refuses_raises_a_structure_error(data, message):
    with pytest.raises(JpegStructureError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_layout(data)
    assert issubclass(JpegStructureError, ValueError)


def test_a_second_frame_header_raises():
    data = _jpeg(_photo())
    frame = _marker_positions(data, 0xC0)[0]
    length = int.from_bytes(data[frame + 2:frame + 4], "big")
    twice = data[:frame + 2 + length] + data[frame:frame + 2 + length] + data[frame + 2 + length:]
    with pytest.raises(JpegStructureError, match="a second frame header"):
        read_layout(twice)


def test_damaged_data_raises_only_structure_errors():
    data = _jpeg(_photo(), progressive=True)
    rng = np.random.default_rng(1)
    for _ in range(1500):
        damaged = bytearray(data[:rng.integers(2, len(data) + 1)])
        for position in rng.integers(0, len(damaged), rng.integers(1, 6)):
            damaged[position] = rng.integers(0, 256)
        try:
            layout = read_layout(bytes(damaged))
        except JpegStructureError:
            continue
        assert layout.scans >= 0 and layout.width > 0


@pytest.mark.parametrize("filler", [b"\xff\x00", b"\xff", b"\xff\xd0", b"\x00"])
def test_twenty_megabytes_of_entropy_data_are_walked_without_a_python_loop(filler):
    """No run of fill, stuffed or restart bytes makes the walk slow (it runs in C). The bound
    is loose on purpose, for a busy machine: a Python loop over these bytes takes tens of seconds."""
    data = _jpeg(_photo())
    scan = _marker_positions(data, 0xDA)[0]
    header = int.from_bytes(data[scan + 2:scan + 4], "big")
    big = data[:scan + 2 + header] + filler * (20 * 2**20 // len(filler)) + b"\xff\xd9"
    started = time.perf_counter()
    layout = read_layout(big)
    assert time.perf_counter() - started < 5
    assert layout.scans == 1 and layout.complete


def test_a_flood_of_markers_is_cut_short():
    """Millions of empty segments would keep the walk's Python loop busy for seconds."""
    data = _jpeg(_photo())
    flood = data[:2] + b"\xff\xfe\x00\x02" * (5 * 2**20 // 4) + data[2:]
    started = time.perf_counter()
    with pytest.raises(JpegStructureError, match=f"more than {MAX_MARKERS:,} markers"):
        read_layout(flood)
    assert time.perf_counter() - started < 5


# --- the checks in recourse.faces ------------------------------------------------------


def test_the_scan_limit_leaves_room_above_every_encoder():
    assert faces.ENCODER_MAX_SCANS == 18 and faces.MAX_JPEG_SCANS >= 3 * faces.ENCODER_MAX_SCANS


def _no_decoding(monkeypatch):
    def no_decoding(*args, **kwargs):
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decoding)


def test_the_issue_attack_is_refused_before_decoding(monkeypatch):
    """The issue's file repeated its last scan 2,500 times (129 s to decode at 40 MP); the
    same at 64×64, so that Pillow alone decodes it in milliseconds: the old code did."""
    attack = _repeat_last_scan(_jpeg(Image.new("RGB", (64, 64), (120, 110, 100)), progressive=True), 2500)
    assert read_layout(attack).scans == 2500
    with Image.open(io.BytesIO(attack)) as image:
        image.load()  # a JPEG that Pillow (and so the old faces._decode) decodes
    _no_decoding(monkeypatch)
    for refuse in (load_photo, align_face):
        started = time.perf_counter()
        with pytest.raises(FaceAlignmentError, match="a JPEG of 2,500 scans, more than the 64 allowed"):
            refuse(attack)
        assert time.perf_counter() - started < 1.0


def test_the_scan_limit_itself():
    photo = _jpeg(_photo(64, 64), progressive=True)
    assert load_photo(_repeat_last_scan(photo, faces.MAX_JPEG_SCANS)).size == (64, 64)
    with pytest.raises(FaceAlignmentError, match=f"of {faces.MAX_JPEG_SCANS + 1} scans"):
        load_photo(_repeat_last_scan(photo, faces.MAX_JPEG_SCANS + 1))


def test_a_multi_picture_file_is_checked_on_its_first_image(monkeypatch):
    buffer = io.BytesIO()
    _photo(64, 48).save(buffer, format="MPO", save_all=True, append_images=[_photo(32, 40)])
    data = buffer.getvalue()
    second = data.rfind(b"\xff\xd8\xff")
    first = _repeat_last_scan(_jpeg(_photo(64, 48), progressive=True), 2500)
    assert load_photo(data).size == (64, 48)
    _no_decoding(monkeypatch)
    with pytest.raises(FaceAlignmentError, match="2,500 scans"):
        load_photo(first + data[second:])


def test_progressive_coefficient_buffers_count_against_the_memory_cap(monkeypatch):
    """A progressive CMYK header of 3000×3000 pixels: 9 MP, far under MAX_PIXELS, and 34 MB
    of decoded pixels; but libjpeg keeps 69 MB of coefficients at full size as well."""
    progressive = _with_size(_jpeg(_photo(64, 64, "CMYK"), progressive=True), 3000, 3000)
    baseline = _with_size(_jpeg(_photo(64, 64, "CMYK")), 3000, 3000)
    layout = read_layout(progressive)
    assert layout.width * layout.height < faces.MAX_PIXELS and coefficient_bytes(layout) == 3000 * 3000 * 8
    faces._checked(baseline, "photo.jpg")  # the same size, baseline: within the cap
    _no_decoding(monkeypatch)
    message = r"a progressive JPEG of 3000×3000 pixels would take 103 MB to decode, 69 MB of it for the DCT coeff"
    with pytest.raises(FaceAlignmentError, match=message):
        load_photo(progressive)


def test_a_large_progressive_photo_within_the_cap_is_decoded():
    data = _jpeg(_photo(2100, 1400), progressive=True, quality=80)  # 4:2:0: 8.8 MB of coefficients
    assert load_photo(data).size == (2100 // 2, 1400 // 2)


def test_stray_bytes_in_the_header_are_refused_before_pillow_reads_them(monkeypatch):
    """Pillow's header parser skips fill a byte at a time in Python: 2 MB took 1.4 s."""
    data = _jpeg(_photo())
    tables = _marker_positions(data, 0xDB)[0]
    padded = data[:tables] + b"\xff" * (faces.MAX_JPEG_STRAY_BYTES + 1) + data[tables:]
    monkeypatch.setattr(Image, "open", lambda *args, **kwargs: pytest.fail("Pillow read the header"))
    with pytest.raises(FaceAlignmentError, match="65,537 bytes of padding or garbage"):
        load_photo(padded)


def test_a_broken_marker_structure_is_an_unreadable_image():
    with pytest.raises(FaceAlignmentError, match=r"not a readable image \(a reserved marker"):
        load_photo(b"\xff\xd8\xff\x02\x00\x04\x00\x00")
