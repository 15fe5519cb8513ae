"""What an image file's metadata costs, read before Pillow sees it (recourse/image_metadata.py),
and the uploads recourse.faces refuses with it: TIFF tags and EXIF blocks whose entries
share one large block, PNG colour profiles and text inflated without a total, too many
chunks, frames or GIF comments; and the orientation read from the raw EXIF bytes."""

import io
import random
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms, PngImagePlugin

from recourse import image_metadata_caps
from recourse.faces import FaceAlignmentError, load_photo
from recourse.image_metadata import MetadataLimitError, exif_orientation, orientation, read_metadata
from scripts.measurements.metadata_bombs import (
    exif_segments, exif_with_shared_block, gif_of_frames, gif_with_extensions, grey_tiff, jpeg_with_segments,
    mpf_segment, photoshop_segments, png_chunk, png_of_empty_chunks, png_of_icc_chunks, png_of_text, png_with_chunks,
    png_with_exif, shared_block_entries, tiff_structure, tiff_with_shared_block, webp_of_frames, webp_with_exif,
)

MB = 2**20


@pytest.fixture
def refused(tmp_path):
    """Upload bytes as photo.bin and return the refusal's message, checked to name the file
    and what to do, and to come within a second (the walk decodes nothing)."""
    def refuse(data: bytes, match: str) -> str:
        path = tmp_path / "photo.bin"
        path.write_bytes(data)
        started = time.perf_counter()
        with pytest.raises(FaceAlignmentError, match=match) as refusal:
            load_photo(path)
        assert time.perf_counter() - started < 1.0
        message = str(refusal.value)
        assert message.startswith("photo.bin: a ") and message.endswith("; save it again as an ordinary JPEG or PNG")
        return message
    return refuse


def _photo(image_format: str, **options) -> bytes:
    """A 60×40 photo of noise in this format."""
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 60, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, **options)
    return buffer.getvalue()


def _camera_exif(orientation_value: int | None = None) -> Image.Exif:
    """EXIF as a camera writes it: make, resolution, the EXIF and GPS directories."""
    exif = Image.Exif()
    exif[0x010F], exif[0x0110], exif[0x011A], exif[0x011B], exif[0x0128] = "Camera", "Model 1", 72.0, 72.0, 2
    if orientation_value is not None:
        exif[0x0112] = orientation_value
    exif.get_ifd(0x8769).update({0x9003: "2024:01:01 12:00:00", 0x829A: 0.008, 0x829D: 2.8, 0x8827: 200})
    exif.get_ifd(0x8825).update({1: "N", 2: (52.0, 12.0, 30.0)})
    return exif


ICC = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


# --- the holes: each refused before Pillow copies anything ----------------------


def test_a_tiff_whose_tags_all_point_at_one_block_is_refused(refused):
    """The issue's TIFF, smaller: 40 tags sharing a 1 MB block made Pillow hold 40 MB (a 19 MB
    block, 760 MB)."""
    data = tiff_with_shared_block(40, MB)
    assert len(data) < 1.1 * MB
    message = refused(data, "TIFF file with tags \\(TIFF or EXIF\\) whose values would take more than 16 MB")
    assert "a block is read again for each tag that points at it" in message


def test_a_tiff_exif_directory_of_numbers_is_refused(refused):
    """Pillow unpacks the EXIF directory of a TIFF into a Python number a value: 20 tags of
    128,000 16-bit numbers sharing one 256 KB block are 2.6 million."""
    data = grey_tiff(exif_entries=shared_block_entries(20, 256 * 1024, 3), block=bytes(256 * 1024))
    refused(data, f"more than {image_metadata_caps.MAX_VALUES:,} numbers in its tags")


@pytest.mark.parametrize("container", ["PNG eXIf", "JPEG APP1", "WebP EXIF"])
def test_an_exif_block_whose_entries_share_one_block_is_refused(container, refused):
    """The same trick in EXIF: Image.getexif() (and a JPEG's open) copied every entry of the
    first directory; 200 entries of a 100 KB block are 20 MB."""
    exif = exif_with_shared_block(200, 100 * 1024)
    data = {"PNG eXIf": lambda: png_with_exif(exif), "JPEG APP1": lambda: jpeg_with_segments(exif_segments(exif)),
            "WebP EXIF": lambda: webp_with_exif(exif)}[container]()
    refused(data, "tags \\(TIFF or EXIF\\) whose values would take more than 16 MB to read")


def test_a_large_exif_block_is_refused(refused):
    exif = exif_with_shared_block(1, 2 * MB)  # one entry: what its size costs is Pillow joining the segments
    refused(jpeg_with_segments(exif_segments(exif)), "JPEG file with more than 1 MB of EXIF data")


def test_a_jpeg_multi_picture_index_of_many_numbers_is_refused(refused):
    """Pillow unpacks a JPEG's MPF index whole as it opens the file: 300 entries of 10,000
    16-bit numbers in a 64 KB segment are 3 million Python numbers."""
    data = jpeg_with_segments([mpf_segment(300, 10_000)])
    assert len(data) < 64 * 1024
    refused(data, "JPEG file with more than 131,072 numbers")


def test_a_png_of_many_colour_profiles_is_refused(refused):
    """Pillow inflated every iCCP chunk, up to 1 MB each (19,000 of them in 20 MB took 49 s)."""
    refused(png_of_icc_chunks(20), "PNG file with more than one colour profile")


def test_a_png_of_text_inflating_past_the_cap_is_refused(refused):
    refused(png_of_text(9, MB - 1024), "PNG file with compressed metadata .* that inflates to more than 8 MB")


def test_a_png_of_many_chunks_is_refused(refused):
    """Each chunk is a round of Pillow's Python: 1.7 million empty ones fit in 20 MB."""
    refused(png_of_empty_chunks(25_000), "PNG file with more than 20,000 chunks")


@pytest.mark.parametrize("container", ["GIF", "WebP"])
def test_an_animation_of_too_many_frames_is_refused(container, refused):
    data = gif_of_frames(1_500) if container == "GIF" else webp_of_frames(1_500)
    refused(data, f"{container} file with more than 1,000 frames or pages \\(only the first would be used\\)")


def test_a_gif_of_a_long_comment_is_refused(refused):
    """Pillow joins a GIF comment a sub-block at a time (quadratic: 20 MB would take a minute)."""
    comment = b"\x21\xfe" + (b"\xff" + b"c" * 255) * 1200 + b"\x00"
    refused(gif_with_extensions(comment, 1), "GIF file with more than 256 KB of comments or other extensions")


def test_a_jpeg_of_many_photoshop_blocks_is_refused(refused):
    refused(jpeg_with_segments(photoshop_segments(2 * MB)), "more than 1 MB of Photoshop resource blocks")


# --- the walk ---------------------------------------------------------------------------


def test_the_walk_stops_at_the_first_cap_it_passes():
    """The walk of a file far past a cap ends there (each loop runs at most a capped number
    of times): 20 MB of one-byte GIF sub-blocks, of empty PNG chunks, of TIFF entries."""
    image = gif_of_frames(1)
    at = image.index(b",")
    hostile = {
        # 10 million one-byte sub-blocks of image data (after the descriptor and the LZW code size)
        "data blocks": image[:at + 11] + b"\x01\x00" * (10 * MB) + image[at + 11:],
        "chunks": png_of_empty_chunks(MB),
        "tags \\(TIFF or EXIF\\)": tiff_structure([[(0xC000, 1, 1, b"\x00")] * 65535]),
    }
    for words, data in hostile.items():
        started = time.perf_counter()
        with pytest.raises(MetadataLimitError, match=words):
            read_metadata(data)
        assert time.perf_counter() - started < 1.0, words


def test_inflating_stops_at_the_bytes_the_cap_leaves():
    """A 32 MB text deflates to 32 KB; the walk inflates 8 MB and one byte of it."""
    bomb = png_with_chunks([png_chunk(b"zTXt", b"note\0\0" + zlib.compress(bytes(32 * MB), 9))])
    assert len(bomb) < 64 * 1024
    started = time.perf_counter()
    with pytest.raises(MetadataLimitError, match="inflates to more than 8 MB"):
        read_metadata(bomb)
    assert time.perf_counter() - started < 0.5


def test_a_directory_chain_that_loops_is_walked_once():
    data = bytearray(grey_tiff())
    first = struct.unpack_from("<I", data, 4)[0]
    entries = struct.unpack_from("<H", data, first)[0]
    struct.pack_into("<I", data, first + 2 + 12 * entries, first)  # the next directory is itself
    assert read_metadata(bytes(data)).frames == 1


def test_broken_and_cut_off_files_are_counted_as_far_as_they_go():
    """Truncated and corrupted files give a count or a cap's refusal, never another error."""
    rng = random.Random(0)
    ordinary = [_photo("JPEG", exif=_camera_exif(6), icc_profile=ICC), _photo("PNG", exif=_camera_exif(6)),
                _photo("WEBP", exif=_camera_exif(6)), gif_of_frames(3), webp_of_frames(3),
                grey_tiff(exif_entries=shared_block_entries(2, 64, 5), block=bytes(64)),
                _photo("TIFF", big_tiff=True, exif=_camera_exif(6))]
    for data in ordinary:
        for _ in range(150):
            broken = bytearray(data[:rng.randrange(len(data) + 1)])
            for _ in range(rng.randint(0, 6)):
                if broken:
                    broken[rng.randrange(len(broken))] = rng.choice((0, 0xFF, rng.randrange(256)))
            try:
                read_metadata(bytes(broken))
            except MetadataLimitError:
                pass
            exif_orientation(bytes(broken))


# --- ordinary files: accepted ---------------------------------------------------------------


ANIMATION = [Image.new("RGB", (60, 40), colour) for colour in ("red", "blue")]
ORDINARY = {  # name: (frames, the file)
    "JPEG with camera EXIF and a colour profile": (1, lambda: _photo("JPEG", exif=_camera_exif(1), icc_profile=ICC)),
    "PNG with EXIF, a colour profile and text": (1, lambda: _photo(
        "PNG", exif=_camera_exif(1), icc_profile=ICC, pnginfo=_png_text())),
    "WebP with EXIF, a colour profile and XMP": (1, lambda: _photo(
        "WEBP", exif=_camera_exif(1), icc_profile=ICC, xmp=b"<x:xmpmeta/>")),
    "grey TIFF with an EXIF directory and a colour profile": (1, lambda: grey_tiff(
        [(0x8773, 7, len(ICC), b"BLOCK")], [(0x8827, 3, 1, b"\xc8\0"), (0x829A, 5, 1, b"BLOCK")], block=ICC)),
    "deflated TIFF with EXIF and a colour profile": (1, lambda: _photo(
        "TIFF", compression="tiff_deflate", exif=_camera_exif(1), icc_profile=ICC)),
    "BigTIFF": (1, lambda: _photo("TIFF", big_tiff=True, exif=_camera_exif(1))),
    "TIFF of 3 pages": (3, lambda: _photo("TIFF", save_all=True, append_images=ANIMATION)),
    "MPO of 2 pictures": (1, lambda: _photo("MPO", save_all=True, append_images=ANIMATION[:1], exif=_camera_exif(1))),
    "animated GIF of 3 frames": (3, lambda: _photo("GIF", save_all=True, append_images=ANIMATION, comment=b"hi")),
    "animated WebP of 3 frames": (3, lambda: _photo("WEBP", save_all=True, append_images=ANIMATION)),
    "animated PNG of 3 frames": (3, lambda: _photo("PNG", save_all=True, append_images=ANIMATION)),
    "BMP": (1, lambda: _photo("BMP")),
}


def _png_text() -> PngImagePlugin.PngInfo:
    info = PngImagePlugin.PngInfo()
    info.add_text("Title", "a photo")
    info.add_text("Comment", "compressed " * 200, zip=True)
    info.add_itxt("XML:com.adobe.xmp", "<x:xmpmeta>" + " " * 4000 + "</x:xmpmeta>", zip=True)
    return info


@pytest.mark.parametrize("name", list(ORDINARY))
def test_ordinary_files_are_accepted(name):
    frames, build = ORDINARY[name]
    data = build()
    assert read_metadata(data).frames == frames  # an MPO's second picture lies past the first one's end
    assert load_photo(data).size == ((64, 64) if name.startswith("grey") else (60, 40))


def test_an_ordinary_file_costs_what_it_holds():
    cost = read_metadata(_photo("JPEG", exif=_camera_exif(6)))
    assert (cost.container, cost.frames, cost.directories) == ("JPEG", 1, 3)  # IFD0, EXIF, GPS
    assert 0 < cost.exif_bytes < 1024 and cost.entries == 8 + 4 + 2 and cost.value_bytes < 1024
    png = read_metadata(_photo("PNG", icc_profile=ICC, pnginfo=_png_text()))
    assert (png.icc_profiles, png.chunks) == (1, 7) and png.inflated_bytes >= len(ICC) + 4000


def test_the_repo_photos_pass_the_walk():
    photos = [path for path in Path(__file__).resolve().parents[1].joinpath("assets").rglob("*")
              if path.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp", ".gif", ".tif", ".tiff")]
    assert photos
    for path in photos:
        read_metadata(path.read_bytes())


# --- orientation, from the raw EXIF bytes -----------------------------------------------------


def test_the_orientation_is_read_without_getexif(monkeypatch):
    """Image.getexif() copied every entry of the first directory (the PNG eXIf probe took
    880 MB); the orientation is read from the raw bytes, and the photo still turned."""
    data = _photo("PNG", exif=_camera_exif(6))

    def no_getexif(self):
        raise AssertionError("Image.getexif() was called")

    monkeypatch.setattr(Image.Image, "getexif", no_getexif)
    assert load_photo(data).size == (40, 60)


@pytest.mark.parametrize("image_format", ["JPEG", "PNG", "WEBP"])
@pytest.mark.parametrize("value", [None, 1, 2, 3, 4, 5, 6, 7, 8])
def test_the_orientation_is_pillows(image_format, value):
    image = Image.open(io.BytesIO(_photo(image_format, exif=_camera_exif(value))))
    assert orientation(image.format, image.info) == image.getexif().get(0x0112, 1)


def test_the_orientation_of_xmp_and_imagemagick_text_is_pillows():
    xmp = PngImagePlugin.PngInfo()
    xmp.add_itxt("XML:com.adobe.xmp", '<rdf:Description tiff:Orientation="3"/>')
    exif_hex = _camera_exif(8).tobytes()[6:].hex()  # ImageMagick's text chunk: a header, then hex
    raw = PngImagePlugin.PngInfo()
    raw.add_text("Raw profile type exif", f"\nexif\n{len(exif_hex) // 2}\n{exif_hex}\n")
    for info in (xmp, raw):
        image = Image.open(io.BytesIO(_photo("PNG", pnginfo=info)))
        assert orientation(image.format, image.info) == image.getexif().get(0x0112, 1) != 1


def test_a_tiff_is_turned_by_pillow_once():
    """Pillow turns a TIFF upright itself as it decodes it: its orientation is not applied again."""
    assert load_photo(_photo("TIFF", exif=_camera_exif(6))).size == (40, 60)


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("kind, value", [(3, b"\x00\x06"), (4, b"\x00\x00\x00\x06")])
def test_exif_orientation_reads_the_first_directory_alone(endian, kind, value):
    value = value if endian == ">" else value[::-1]
    entry = struct.pack(endian + "HHI", 0x0112, kind, 1) + value.ljust(4, b"\0")
    header = (b"MM\0*" if endian == ">" else b"II*\0") + struct.pack(endian + "I", 8)
    exif = header + struct.pack(endian + "H", 1) + entry + b"\0" * 4
    assert exif_orientation(exif) == exif_orientation(b"Exif\0\0" + exif) == 6
    assert exif_orientation(exif[:-8]) is None  # cut off inside the entry
    assert exif_orientation(b"not an EXIF block") is None


def test_exif_orientation_of_a_huge_directory_is_one_pass():
    exif = tiff_structure([[(0x0112, 3, 1, b"\x03\0")] + [(0xC000, 7, 1, b"\0")] * 65534])  # all a count allows
    started = time.perf_counter()
    assert exif_orientation(exif) == 3
    assert time.perf_counter() - started < 0.5
