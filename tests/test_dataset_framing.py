"""Dataset runs that finish: the Align&Cropped fixed crop scales with the photo, and a photo
that still cannot be framed or decoded is skipped and named, never fatal."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from recourse.data import ATTRIBUTES, DatasetError, load_framed_split, load_split
from recourse.faces import (
    CELEBA_ALIGNED_HQ_CROP, CelebAFramer, NoFaceError, aligned_layout_crop, crop_square,
)
from tests.conftest import ALIGNED_DATA


def test_the_fixed_crop_scales_with_a_resized_aligned_photo():
    assert aligned_layout_crop((178, 218)) == CELEBA_ALIGNED_HQ_CROP
    assert aligned_layout_crop((89, 109)) == pytest.approx(tuple(v / 2 for v in CELEBA_ALIGNED_HQ_CROP))
    assert aligned_layout_crop((356, 436)) == pytest.approx(tuple(v * 2 for v in CELEBA_ALIGNED_HQ_CROP))
    assert aligned_layout_crop((128, 156)) is not None  # a mirror's rounding of 178:218
    assert aligned_layout_crop((100, 100)) is None and aligned_layout_crop((218, 178)) is None


def test_a_faceless_downscaled_aligned_photo_takes_the_scaled_crop():
    framer = CelebAFramer()
    rng = np.random.default_rng(0)
    photo = Image.fromarray(rng.integers(100, 140, (109, 89, 3), dtype=np.uint8))
    framed = framer(photo, 16)
    assert framer.fallbacks == 1 and framer.detected == 0
    assert np.array_equal(framed, crop_square(photo, aligned_layout_crop((89, 109)), 16))
    with pytest.raises(NoFaceError):
        framer(Image.new("RGB", (120, 120), (90, 90, 90)), 16)  # not the layout's aspect: no guess


def _celeba_folder(root: Path, photos: dict[str, bytes | Image.Image]) -> Path:
    """An original-CelebA layout holding ``photos`` (encoded bytes or images), no partition."""
    (root / "img_align_celeba").mkdir(parents=True)
    for name, photo in photos.items():
        if isinstance(photo, bytes):
            (root / "img_align_celeba" / name).write_bytes(photo)
        else:
            photo.save(root / "img_align_celeba" / name, quality=95)
    rows = [name + " " + " ".join(["1", "-1"] * 20) for name in photos]
    (root / "list_attr_celeba.txt").write_text("\n".join([str(len(rows)), " ".join(ATTRIBUTES), *rows]) + "\n")
    return root


@pytest.fixture
def downscaled_mirror(tmp_path):
    """Eight real aligned photos at 89×109 (half size, as many mirrors ship), a blank photo
    of that size, a blank square photo and a file that is not an image."""
    if not ALIGNED_DATA.is_dir():
        pytest.skip(f"original CelebA photos not found at {ALIGNED_DATA}")
    names = sorted(p.name for p in (ALIGNED_DATA / "img_align_celeba").iterdir())[:8]
    photos: dict[str, bytes | Image.Image] = {
        name: Image.open(ALIGNED_DATA / "img_align_celeba" / name).convert("RGB").resize((89, 109), Image.LANCZOS)
        for name in names}
    photos["900001.jpg"] = Image.new("RGB", (89, 109), (128, 128, 128))
    photos["900002.jpg"] = Image.new("RGB", (120, 120), (128, 128, 128))
    photos["900003.jpg"] = b"not a jpeg at all"
    return _celeba_folder(tmp_path / "mirror", photos), names


@pytest.mark.requires("aligned_data")
def test_a_downscaled_mirror_loads_with_the_unusable_photos_named(downscaled_mirror, tmp_path):
    root, names = downscaled_mirror
    split = load_framed_split(root, "all", 64, tmp_path / "cache")
    assert split.filenames == (*names, "900001.jpg")  # every real photo, and the blank one by the fixed crop
    assert split.images.shape == (9, 3, 64, 64) and split.labels.shape == (9, 40)
    assert split.skipped == ("900002.jpg", "900003.jpg")
    assert "skipped 2 of 11 photos that could not be decoded or framed" in split.framing
    assert "900002.jpg (no face found" in split.framing and "900003.jpg (cannot be read as an image" in split.framing
    assert str(tmp_path) not in split.framing
    detected = int(split.framing.split("aligned ")[1].split(" ")[0])
    assert detected >= 6, split.framing  # the detector still finds most faces at half size
    cached = load_framed_split(root, "all", 64, tmp_path / "cache")
    assert cached.framing == split.framing and cached.skipped == split.skipped
    assert np.array_equal(cached.images, split.images)


@pytest.mark.requires("aligned_data")
def test_evaluate_finishes_on_a_downscaled_mirror(downscaled_mirror, tmp_path, capsys):
    from recourse.cli import main

    root, _ = downscaled_mirror
    assert main(["evaluate", "--data", str(root), "--split", "all", "--no-cache",
                 "--json", str(tmp_path / "accuracy.json")]) == 0
    assert "skipped 2 of 11 photos" in capsys.readouterr().out


def test_a_folder_of_unusable_photos_is_an_error(tmp_path):
    root = _celeba_folder(tmp_path / "celeba", {"000001.jpg": Image.new("RGB", (120, 120)), "000002.jpg": b"junk"})
    with pytest.raises(DatasetError, match=r"none of the 2 photos of split 'all' could be used \(the first, "
                                           r"000001\.jpg: no face found"):
        load_framed_split(root, "all", 16)


def test_celeba_hq_images_stay_strict(tmp_path):
    """Curated CelebA-HQ images are never skipped: a broken one stops the load, naming it."""
    root = tmp_path / "hq"
    (root / "CelebA-HQ-img").mkdir(parents=True)
    Image.new("RGB", (16, 16)).save(root / "CelebA-HQ-img" / "27000.jpg")
    (root / "CelebA-HQ-img" / "27001.jpg").write_bytes(b"junk")
    rows = [f"{name} " + " ".join(["1"] * 40) for name in ("27000.jpg", "27001.jpg")]
    (root / "CelebAMask-HQ-attribute-anno.txt").write_text("\n".join(["2", " ".join(ATTRIBUTES), *rows]) + "\n")
    with pytest.raises(DatasetError, match=r"27001\.jpg: cannot be read as an image"):
        load_split(root, "test", 8)


def test_a_missing_photo_is_still_an_error(tmp_path):
    root = _celeba_folder(tmp_path / "celeba", {"000001.jpg": Image.new("RGB", (178, 218))})
    (root / "img_align_celeba" / "000001.jpg").unlink()
    with pytest.raises(DatasetError, match="image listed in the annotations is missing"):
        load_framed_split(root, "all", 16)
