"""The committed gallery (``assets/gallery/``) is what ``scripts/figures/make_gallery.py`` writes from its
table of public-domain photos: every face a real photograph, with its provenance."""

import json
import re

import numpy as np
import pytest
from PIL import Image

from scripts.figures import make_gallery
from scripts.figures.make_gallery import GALLERY, PHOTOS


def gallery_pngs() -> list:
    return sorted(GALLERY.glob("*.png"))


def test_the_table_and_the_committed_faces_agree():
    names = [photo.name for photo in PHOTOS]
    assert len(names) == len(set(names)) >= 8
    assert sorted(png.stem for png in gallery_pngs()) == sorted(names)
    assert sorted(path.stem for path in GALLERY.glob("*.json")) == sorted(names)


def test_no_generated_face_is_left_in_the_gallery():
    assert not list(GALLERY.glob("generated-*"))
    for photo in PHOTOS:
        assert "generat" not in (photo.source + photo.title).lower()


@pytest.mark.parametrize("photo", PHOTOS, ids=lambda photo: photo.name)
def test_each_face_is_a_framed_64_px_rgb_image_with_its_provenance(photo):
    with Image.open(GALLERY / f"{photo.name}.png") as image:
        assert (image.format, image.mode, image.size) == ("PNG", "RGB", (64, 64))
    provenance = json.loads((GALLERY / f"{photo.name}.json").read_text())
    assert provenance == make_gallery.provenance(photo)
    for key in ("title", "source", "license", "author", "appearance"):
        assert provenance[key].strip(), key
    assert "public domain" in provenance["license"].lower()
    assert re.fullmatch(r"[0-9a-f]{64}", provenance["source_sha256"])


@pytest.mark.parametrize("photo", PHOTOS, ids=lambda photo: photo.name)
def test_each_original_is_a_small_photo_in_the_repository(photo):
    assert photo.path.is_file(), photo.original
    assert photo.path.stat().st_size < 100_000
    with Image.open(photo.path) as image:
        assert max(image.size) <= 600 and image.format == "JPEG"


def test_the_sources_file_is_the_one_the_table_writes_and_lists_every_face():
    text = (GALLERY / "SOURCES.md").read_text()
    assert text == make_gallery.sources_markdown()
    for png in gallery_pngs():
        provenance = json.loads(png.with_suffix(".json").read_text())
        assert f"`{png.name}`" in text and provenance["author"] in text and provenance["license"] in text
    assert text.lower().count("public domain") >= len(PHOTOS)


def test_the_gallery_shows_variety():
    """Women and men, glasses and none, smiles and closed mouths, as the appearance lines say."""
    looks = [photo.appearance for photo in PHOTOS]
    assert sum(a.startswith("woman") for a in looks) >= 3 and sum(a.startswith("man") for a in looks) >= 3
    assert sum(", glasses" in a for a in looks) >= 2 and sum("no glasses" in a for a in looks) >= 2
    assert sum("teeth" in a for a in looks) >= 2 and sum("closed" in a for a in looks) >= 2


def test_each_face_is_found_in_its_original_and_framed_as_committed():
    """make_gallery reproduces the committed faces from the committed originals (small
    differences allowed for another Pillow or OpenCV build, not another crop)."""
    for photo in PHOTOS:
        pixels, message = make_gallery.aligned(photo)
        assert message.endswith(("one face found", "the largest was used")), (photo.name, message)
        committed = np.asarray(Image.open(GALLERY / f"{photo.name}.png").convert("RGB"), dtype=np.int16)
        difference = np.abs(pixels.astype(np.int16) - committed).mean()
        assert difference < 2.0, (photo.name, difference)


def test_an_import_is_checked_against_the_table(tmp_path):
    photo = PHOTOS[1]
    wrong = tmp_path / "wrong.jpg"
    Image.new("RGB", (32, 32)).save(wrong)
    with pytest.raises(SystemExit, match="SHA-256"):
        make_gallery.import_original(photo, wrong)
