"""Resource limits of uploads (recourse/faces.py): sized to a face photo, checked before
decoding, and large photos worked on at a bounded size whatever their mode."""

import io
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image

from recourse import faces
from recourse.faces import FaceAlignmentError, align_face, load_photo


def _png_claiming(width: int, height: int) -> bytes:
    """A 16-bit PNG of a few dozen bytes whose header claims ``width × height`` pixels (the
    issue's upload: a tiny file that decodes to gigabytes)."""
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((1, 1), np.uint16)).save(buffer, format="PNG")
    data = buffer.getvalue()
    assert data[12:16] == b"IHDR"
    header = struct.pack(">II", width, height) + data[24:29]
    return data[:16] + header + struct.pack(">I", zlib.crc32(b"IHDR" + header)) + data[33:]


def _jpeg(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85, **options)
    return buffer.getvalue()


def test_limits_are_sized_to_a_face_photo():
    assert faces.MAX_PIXELS <= 40_000_000
    assert faces.MAX_UPLOAD_BYTES <= 20 * 2**20
    assert faces.DETECT_MAX_SIDE <= faces.WORK_MAX_SIDE <= 4096


def test_a_64_megapixel_16_bit_png_is_refused_from_its_header(monkeypatch):
    bomb = _png_claiming(8000, 8000)
    assert len(bomb) < 1000

    def no_decoding(*args, **kwargs):
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decoding)
    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decoding)
    with pytest.raises(FaceAlignmentError, match="8000×8000 pixels is larger than the 40,000,000-pixel limit"):
        load_photo(bomb)


def test_a_large_16_bit_photo_is_converted_in_bounded_memory():
    """Converting the whole 16-bit photo to float64 at once took 8 bytes a pixel, twice over
    (1.7 GB for the issue's 64 MP PNG); band by band it takes a few MB."""
    photo = Image.fromarray(np.full((3000, 5000), 40000, np.uint16))  # 15 MP
    tracemalloc.start()
    try:
        rgb = load_photo(photo)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20, f"numpy allocated {peak / 2**20:.0f} MB at most"
    assert rgb.mode == "RGB" and max(rgb.size) <= faces.WORK_MAX_SIDE
    assert np.asarray(rgb).min() == 155  # 40000 / 65535 · 255 = 155.6: the 16-bit range is kept


@pytest.mark.parametrize("mode", ["RGBA", "P", "I;16", "F", "1", "CMYK", "LA"])
def test_every_mode_of_a_large_photo_is_reduced_to_working_size(mode):
    photo = Image.new(mode, (4200, 2100))
    rgb = load_photo(photo)
    assert rgb.mode == "RGB" and rgb.size == (1400, 700)  # reduced 3×: at most WORK_MAX_SIDE a side


def test_reduction_keeps_the_picture():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (70, 140, 3), dtype=np.uint8)
    large = Image.fromarray(small).resize((4200, 2100), Image.Resampling.NEAREST)  # 30× blocks
    reduced = np.asarray(load_photo(large)).astype(int)
    expected = np.asarray(Image.fromarray(small).resize((1400, 700), Image.Resampling.NEAREST)).astype(int)
    assert np.abs(reduced - expected).max() <= 1


def test_a_large_jpeg_is_decoded_reduced():
    data = _jpeg(Image.new("RGB", (4200, 2800), (120, 110, 100)))
    assert faces._decode(data, "photo.jpg").size == (2100, 1400)  # JPEG draft: decoded at 1/2
    assert load_photo(data).size == (1050, 700)  # then 2100 > WORK_MAX_SIDE: reduced 2×


def test_a_large_rotated_jpeg_is_reduced_then_turned():
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways
    assert load_photo(_jpeg(Image.new("RGB", (4200, 2800)), exif=exif)).size == (700, 1050)


def test_boxes_of_a_reduced_photo_are_in_the_original_pixels(monkeypatch):
    monkeypatch.setattr(faces, "detect_faces", lambda image: [(100, 50, 200, 200)])
    aligned = align_face(Image.new("RGB", (6000, 3000)), resolution=16)  # worked on at 1/3
    assert aligned.face_box == (300, 150, 600, 600)
    side = 600 / faces.HQ_BOX_WIDTH
    left, top, right, bottom = aligned.crop_box
    assert right - left == pytest.approx(side, rel=1e-3) and bottom - top == pytest.approx(side, rel=1e-3)


def test_a_photo_under_the_working_size_is_not_resampled():
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    assert np.array_equal(np.asarray(load_photo(Image.fromarray(pixels))), pixels)


def test_messages_name_the_file_but_not_its_folder(tmp_path):
    with pytest.raises(FaceAlignmentError) as missing:
        load_photo(tmp_path / "absent.jpg")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with pytest.raises(FaceAlignmentError) as broken:
        load_photo(tmp_path / "broken.png")
    for error in (missing, broken):
        assert str(tmp_path) not in str(error.value) and tmp_path.name not in str(error.value)
    assert "absent.jpg" in str(missing.value) and "broken.png" in str(broken.value)
