import io
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from recourse import faces
from recourse.faces import (
    CELEBA_ALIGNED_HQ_CROP, CelebAFramer, FaceAlignmentError, NoFaceError, align_face, crop_square,
    hq_crop_from_face_box, load_photo,
)
from tests.conftest import ALIGNED_DATA, HQ_DATA


def _png_bytes(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", **options)
    return buffer.getvalue()


@pytest.mark.parametrize("mode", ["L", "LA", "RGBA", "P", "CMYK", "I;16", "I", "F", "1"])
def test_any_mode_becomes_rgb(mode):
    image = Image.new(mode, (40, 30))
    assert load_photo(image).mode == "RGB"
    assert load_photo(image).size == (40, 30)


def test_sixteen_bit_keeps_its_range():
    array = np.full((10, 10), 65535, dtype=np.uint16)
    image = Image.fromarray(array)
    assert image.mode.startswith("I")
    rgb = np.asarray(load_photo(image))
    assert rgb.min() == 255


def test_a_big_endian_sixteen_bit_tiff_keeps_its_range():
    """Was: ValueError("image has wrong mode") out of load_photo (Pillow has no extrema for I;16B)."""
    buffer = io.BytesIO()
    Image.new("I;16B", (40, 30), 65535).save(buffer, format="TIFF")
    assert np.asarray(load_photo(buffer.getvalue())).min() == 255


def test_transparent_pixels_become_white():
    image = Image.new("RGBA", (8, 8), (0, 0, 0, 0))
    assert np.asarray(load_photo(image)).min() == 255


def test_exif_rotation_is_applied():
    image = Image.new("RGB", (60, 40), (200, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: display rotated 90° clockwise
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", exif=exif)
    assert load_photo(buffer.getvalue()).size == (40, 60)


@pytest.mark.parametrize("data, message", [
    (b"definitely not an image", "not a readable image"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not a readable image"),
])
def test_unreadable_bytes_are_rejected(data, message):
    with pytest.raises(FaceAlignmentError, match=message):
        load_photo(data)


def test_truncated_jpeg_is_rejected():
    buffer = io.BytesIO()
    Image.new("RGB", (200, 200), (10, 20, 30)).save(buffer, format="JPEG")
    with pytest.raises(FaceAlignmentError, match="not a readable image"):
        load_photo(buffer.getvalue()[:300])


def test_decompression_bomb_is_refused_before_decoding():
    side = math.isqrt(faces.MAX_PIXELS) + 1  # one row and column past the limit
    bomb = _png_bytes(Image.new("1", (side, side)), optimize=True)
    assert len(bomb) < 2**20  # a small file that claims many pixels
    with pytest.raises(FaceAlignmentError, match=f"larger than the {faces.MAX_PIXELS:,}-pixel limit"):
        load_photo(bomb)


def test_oversized_upload_is_refused():
    with pytest.raises(FaceAlignmentError, match="larger than"):
        load_photo(b"x" * (faces.MAX_UPLOAD_BYTES + 1))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FaceAlignmentError, match="no such file"):
        load_photo(tmp_path / "absent.jpg")


@pytest.mark.parametrize("image", [
    Image.new("RGB", (300, 300), (128, 128, 128)),
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (240, 320, 3), dtype=np.uint8)),
])
def test_no_face_is_an_error_not_a_guess(image):
    with pytest.raises(NoFaceError, match="no face found"):
        align_face(image)


def test_tiny_image_is_rejected():
    with pytest.raises(FaceAlignmentError, match="too small"):
        align_face(Image.new("RGB", (20, 20)))


def portrait() -> Image.Image:
    """A public-domain portrait shipped inside the matplotlib wheel (not a dataset photo)."""
    import matplotlib

    return Image.open(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg").convert("RGB")


def test_largest_of_several_faces_is_used_and_reported():
    canvas = Image.new("RGB", (900, 620), (40, 60, 80))
    canvas.paste(portrait().resize((200, 234)), (20, 150))  # the smaller face first, on the left
    canvas.paste(portrait().resize((300, 351)), (560, 20))
    aligned = align_face(canvas, resolution=16)
    assert aligned.faces_found == 2 and "largest" in aligned.message
    left, top, width, height = aligned.face_box
    assert left >= 560 and left + width <= 860 and top + height <= 371  # inside the larger copy
    assert aligned.image.shape == (3, 16, 16) and aligned.image.dtype == np.uint8


def test_hq_crop_centres_the_box_like_the_calibration():
    side = 1000 * faces.HQ_BOX_WIDTH
    left, top, right, bottom = hq_crop_from_face_box((0, 0, side, side))
    assert right - left == pytest.approx(1000) and bottom - top == pytest.approx(1000)
    assert ((0 - left) + side / 2) / 1000 == pytest.approx(faces.HQ_BOX_CENTER[0])
    assert ((0 - top) + side / 2) / 1000 == pytest.approx(faces.HQ_BOX_CENTER[1])


def test_crop_outside_the_photo_replicates_edges():
    image = Image.new("RGB", (10, 10), (50, 100, 150))
    crop = crop_square(image, (-5, -5, 15, 15), 8)
    assert crop.shape == (3, 8, 8)
    assert np.abs(crop.astype(int) - np.array([50, 100, 150]).reshape(3, 1, 1)).max() <= 1


def test_framer_falls_back_to_the_layout_crop_only_for_aligned_photos():
    framer = CelebAFramer()
    flat = Image.new("RGB", (178, 218), (90, 90, 90))
    assert framer(flat, 16).shape == (3, 16, 16) and framer.fallbacks == 1
    with pytest.raises(NoFaceError):
        framer(Image.new("RGB", (300, 300), (90, 90, 90)), 16)
    assert CELEBA_ALIGNED_HQ_CROP[2] <= 178 and CELEBA_ALIGNED_HQ_CROP[3] <= 218


def _iou(a, b):
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - width * height
    return width * height / union


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_real_hq_faces_are_framed_as_themselves():
    """CelebA-HQ test faces, enlarged inside a bigger photo, align back to their own frame."""
    ious = []
    for image_id in range(27000, 27040):
        original = Image.open(HQ_DATA / "CelebA-HQ-img" / f"{image_id}.jpg").convert("RGB")
        canvas = Image.new("RGB", (900, 700), (40, 60, 80))
        canvas.paste(original.resize((384, 384), Image.Resampling.BICUBIC), (300, 150))
        try:
            ious.append(_iou(align_face(canvas).crop_box, (300, 150, 684, 534)))
        except NoFaceError:
            ious.append(0.0)
    assert np.median(ious) > 0.85 and np.mean(np.array(ious) > 0.6) >= 0.85, np.round(ious, 2)


@pytest.mark.requires("hq_data")
def test_large_rotated_photo_is_downscaled_and_rotated():
    original = Image.open(HQ_DATA / "CelebA-HQ-img" / "27000.jpg").convert("RGB").resize((3000, 3000))
    exif = Image.Exif()
    exif[0x0112] = 8  # stored rotated: display needs 90° counter-clockwise... PIL's transpose undoes it
    buffer = io.BytesIO()
    original.transpose(Image.Transpose.ROTATE_270).save(buffer, format="JPEG", exif=exif, quality=90)
    aligned = align_face(buffer.getvalue())
    assert aligned.face_box[2] > 1000  # coordinates are in the original photo's pixels


@pytest.mark.slow
@pytest.mark.requires("aligned_data")
def test_real_celeba_photos_are_detected():
    names = sorted((ALIGNED_DATA / "img_align_celeba").iterdir())[:40]
    found = 0
    for path in names:
        try:
            align_face(path)
            found += 1
        except NoFaceError:
            pass
    assert found >= 36, f"detected {found} of 40"


@pytest.mark.parametrize("mode, options", [
    ("RGB", {"progressive": True}),
    ("RGB", {"progressive": True, "optimize": True, "subsampling": 0}),
    ("L", {"progressive": True}),
    ("CMYK", {"progressive": True}),
])
def test_progressive_jpegs_of_every_kind_pass_the_scan_and_memory_checks(mode, options):
    buffer = io.BytesIO()
    Image.new(mode, (300, 200)).save(buffer, format="JPEG", **options)
    assert load_photo(buffer.getvalue()).size == (300, 200)


def test_a_multi_picture_jpeg_loads_its_first_image():
    buffer = io.BytesIO()
    Image.new("RGB", (120, 80), (200, 0, 0)).save(buffer, format="MPO", save_all=True,
                                                  append_images=[Image.new("RGB", (60, 90))])
    photo = load_photo(buffer.getvalue())
    assert photo.size == (120, 80) and photo.getpixel((0, 0))[0] > 150


@pytest.mark.requires("aligned_data", "hq_data")
def test_real_celeba_jpegs_pass_the_marker_checks():
    from recourse.jpeg_markers import read_layout

    paths = (sorted((ALIGNED_DATA / "img_align_celeba").iterdir())[:100]
             + sorted((HQ_DATA / "CelebA-HQ-img").iterdir())[:100])
    for path in paths:
        assert read_layout(path.read_bytes()).scans <= faces.MAX_JPEG_SCANS, path.name
        faces._checked(path.read_bytes(), path.name)
