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
    monkeypatch.setattr(faces, "detect_faces", lambda image, min_share=0.15: [(100, 50, 200, 200)])
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


# --- issue 25: every mode Pillow opens is refused from its header, before any decoding -----


def _tiff_claiming(mode: str, width: int, height: int) -> bytes:
    """A TIFF of a few hundred bytes whose header claims ``width × height`` pixels of ``mode``."""
    buffer = io.BytesIO()
    Image.new(mode, (1, 1)).save(buffer, format="TIFF")
    data = bytearray(buffer.getvalue())
    offset = struct.unpack_from("<I", data, 4)[0]
    for entry in range(struct.unpack_from("<H", data, offset)[0]):
        at = offset + 2 + 12 * entry
        tag, kind = struct.unpack_from("<HH", data, at)
        if tag in (256, 257):  # ImageWidth, ImageLength
            struct.pack_into("<H" if kind == 3 else "<I", data, at + 8, width if tag == 256 else height)
    return bytes(data)


def _webp_claiming(width: int, height: int) -> bytes:
    """The issue's 34-byte lossless RGBA WebP claiming ``width × height`` pixels."""
    buffer = io.BytesIO()
    Image.new("RGBA", (1, 1)).save(buffer, format="WEBP", lossless=True)
    data = buffer.getvalue()
    at = data.index(b"VP8L") + 9  # after the chunk header and the 0x2f signature
    bits = (width - 1) | ((height - 1) << 14) | (1 << 28)  # 14-bit sides, the alpha bit
    return data[:at] + struct.pack("<I", bits) + data[at + 4:]


def _png_mode_claiming(mode: str, width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, (1, 1)).save(buffer, format="PNG")
    data = buffer.getvalue()
    header = struct.pack(">II", width, height) + data[24:29]
    return data[:16] + header + struct.pack(">I", zlib.crc32(b"IHDR" + header)) + data[33:]


BOMBS = {  # the uploads, and one of each kind under the pixel cap but over the memory cap
    "RGBA WebP 12000²": (_webp_claiming(12000, 12000), "pixel limit"),
    "1-bit PNG 13000²": (_png_mode_claiming("1", 13000, 13000), "pixel limit"),
    "CMYK TIFF 9000²": (_tiff_claiming("CMYK", 9000, 9000), "pixel limit"),
    "16-bit TIFF 9000²": (_tiff_claiming("I;16", 9000, 9000), "pixel limit"),
    "float TIFF 9000²": (_tiff_claiming("F", 9000, 9000), "pixel limit"),
    "grey PNG 9000²": (_png_mode_claiming("L", 9000, 9000), "pixel limit"),
    "RGBA WebP 4500²": (_webp_claiming(4500, 4500), "MB limit"),
    "CMYK TIFF 6000²": (_tiff_claiming("CMYK", 6000, 6000), "MB limit"),
    "float TIFF 6000²": (_tiff_claiming("F", 6000, 6000), "MB limit"),
    "RGBA PNG 6000²": (_png_mode_claiming("RGBA", 6000, 6000), "MB limit"),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_every_bomb_mode_is_refused_before_decoding(monkeypatch, name):
    data, message = BOMBS[name]
    assert len(data) < 2000

    def no_decoding(*args, **kwargs):
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decoding)
    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decoding)
    with pytest.raises(FaceAlignmentError, match=message):
        load_photo(data)


def test_the_memory_cap_counts_the_bytes_pillow_keeps_a_pixel():
    """40 MP of 8-bit grey fit; RGB (4 bytes a pixel in Pillow) fits to about 21 MP."""
    faces._check_memory(Image.open(io.BytesIO(_png_mode_claiming("L", 8000, 5000))))
    faces._check_memory(Image.open(io.BytesIO(_png_mode_claiming("RGB", 4500, 4500))))
    with pytest.raises(FaceAlignmentError, match="MB limit"):
        faces._check_memory(Image.open(io.BytesIO(_png_mode_claiming("RGB", 5000, 5000))))


def test_only_raster_formats_decoded_by_pillow_itself_are_opened():
    buffer = io.BytesIO()
    Image.new("RGB", (40, 40)).save(buffer, format="PPM")  # a format Pillow opens, not a photo's
    with pytest.raises(FaceAlignmentError, match="unrecognised"):
        load_photo(buffer.getvalue())
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 100 100\nshowpage\n"  # would run Ghostscript
    with pytest.raises(FaceAlignmentError, match="unrecognised"):
        load_photo(eps)


def test_decoding_leaves_the_process_warning_filters_alone(monkeypatch):
    """warnings.catch_warnings is not thread-safe: concurrent decodes left the process with
    DecompressionBombWarning set to "error". The decoder no longer touches the filters."""
    import threading
    import warnings

    def no_catch(*args, **kwargs):
        raise AssertionError("warnings.catch_warnings changes the whole process's filters")

    monkeypatch.setattr(warnings, "catch_warnings", no_catch)
    before = list(warnings.filters)
    data = _jpeg(Image.new("RGB", (300, 300), (120, 110, 100)))
    errors = []

    def decode_many():
        try:
            for _ in range(20):
                load_photo(data)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=decode_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and warnings.filters == before
