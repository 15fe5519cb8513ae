"""Write the app's gallery (``assets/gallery/``): public-domain photographs of real people.

Every face is a photograph in the public domain, listed in ``PHOTOS`` below with its title,
author, where the file was taken from, the SHA-256 of that file, its licence and what a
person sees in it. A downscaled copy of each photo (at most 512 px a side, a few tens of KB)
is kept in ``assets/gallery/originals/`` (Grace Hopper's is ``assets/examples/``, the app's
example upload), so the gallery is rebuilt from files in this repository:

    python -m scripts.figures.make_gallery

aligns each photo with ``recourse.faces.align_face`` like any upload and writes, for each,
a framed 64×64 ``<name>.png`` with a ``<name>.json`` provenance file beside it, then
``assets/gallery/SOURCES.md`` from the same table, so the two never disagree. Gallery files
that are not in the table are removed.

A photo is added by putting a row in ``PHOTOS`` and importing its source file, which is
checked against the row's SHA-256, downscaled, re-encoded and written to ``originals/``:

    python -m scripts.figures.make_gallery --import anne-mcclain=PATH/anne_mcclain.jpg
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from recourse.faces import align_face

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "assets" / "gallery"
ORIGINALS = GALLERY / "originals"
SOURCES = GALLERY / "SOURCES.md"
RESOLUTION = 64
ORIGINAL_MAX_SIDE = 512
ORIGINAL_QUALITY = 90
COMMAND = "python -m scripts.figures.make_gallery"
# The command each committed provenance file (<name>.json) records: this script's path when the
# gallery was written, before scripts/ was sorted into folders. Kept, so that the files stay what
# this writes; SOURCES.md names today's path.
PROVENANCE_COMMAND = "python -m scripts.make_gallery"

# Where the files were taken from (one stored snapshot of each repository).
_ISS = ("GitHub repository kling109/ISS-Archaeology, commit 3e2dd59a10d171ff669a56e0a9a7aa2fd128b416, "
        "file Data/Portraits/{}")
_SENATE = ("GitHub repository vharnathka/cse151a, commit daf08d6d3b8e105645c244071b27986ca0052db0, "
           "file images/{}")
_US_GOVERNMENT = "not subject to copyright in the United States under 17 U.S.C. § 105"
NASA_LICENSE = (f"public domain: a NASA photograph, a work of the U.S. federal government, {_US_GOVERNMENT}; "
                "NASA's media usage guidelines say NASA images are generally not subject to copyright in the U.S.")
SENATE_LICENSE = (f"public domain: a photograph by the U.S. Senate Photographic Studio (now Photographic Services), "
                  f"an office of the U.S. Senate, a work of the U.S. federal government, {_US_GOVERNMENT}")


@dataclass(frozen=True)
class Photo:
    """One gallery face and where it comes from."""

    name: str  # file stem in assets/gallery/
    original: str  # the photo aligned, relative to the repository root
    title: str  # the gallery caption
    author: str
    source: str  # where the file was taken from
    source_sha256: str  # of the file as taken from the source, before downscaling
    license: str  # says "public domain" and why
    appearance: str  # what a person sees: sex, age at the photo, glasses, expression

    @property
    def path(self) -> Path:
        return ROOT / self.original


PHOTOS: tuple[Photo, ...] = (
    Photo(
        name="grace-hopper", original="assets/examples/grace-hopper.jpg",
        title="Grace Hopper (official U.S. Navy portrait)",
        author="U.S. Navy (official portrait of Commodore Grace M. Hopper, 1984)",
        source="matplotlib 3.11.2 wheel, mpl-data/sample_data/grace_hopper.jpg (its JPEG comment: "
               "\"File source: http://commons.wikimedia.org/wiki/File:Grace_Hopper.jpg\"), copied unchanged to "
               "assets/examples/grace-hopper.jpg",
        source_sha256="a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
        license=f"public domain: a U.S. Navy photograph, a work of the U.S. federal government, {_US_GOVERNMENT}",
        appearance="woman, 70s, glasses, closed mouth, Navy cap"),
    Photo(
        name="eileen-collins", original="assets/gallery/originals/eileen-collins.jpg",
        title="Eileen Collins (NASA astronaut portrait, STS-93 commander)",
        author="NASA (portrait for STS-93, flown in 1999: the crew patch reads Collins, Ashby, Coleman, Hawley, "
               "Tognini)",
        source="scikit-image 0.26.0 wheel, skimage/data/astronaut.png (skimage.data.astronaut(): "
               "\"downloaded from the NASA Great Images database <https://flic.kr/p/r9qvLn>\")",
        source_sha256="88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
        license=NASA_LICENSE + "; scikit-image: \"No known copyright restrictions, released into the public domain\"",
        appearance="woman, 40s, no glasses, smiling with teeth"),
    Photo(
        name="anne-mcclain", original="assets/gallery/originals/anne-mcclain.jpg",
        title="Anne McClain (official NASA astronaut portrait, 2014)",
        author="Robert Markowitz, NASA Johnson Space Center (photographer named in the file's EXIF; taken 2014-01-16)",
        source=_ISS.format("anne_mcclain&usa.jpg"),
        source_sha256="3ab5d307394caaf4ef63b551c1d9c1d9ad3751af87e6f3d5809a023e4bf43ecc",
        license=NASA_LICENSE,
        appearance="woman, 30s, no glasses, smiling with teeth"),
    Photo(
        name="kathryn-hire", original="assets/gallery/originals/kathryn-hire.jpg",
        title="Kathryn (Kay) Hire (NASA astronaut portrait, 2009)",
        author="Bill Stafford, NASA Johnson Space Center (the file's EXIF: \"Photo Date:10/26/2009 Location: Bldg. 8 "
               "Photo Studio Subject: Alternate Astronaut Portrait of Kay Hire Photographer: Bill Stafford\")",
        source=_ISS.format("kathryn_hire&usa.jpg"),
        source_sha256="b6703ff7c2d5e4a064d6a15b498e213714ddab8c4029b22eaea768a94299c628",
        license=NASA_LICENSE,
        appearance="woman, 50, no glasses, smiling with teeth, long fair hair"),
    Photo(
        name="scott-kelly", original="assets/gallery/originals/scott-kelly.jpg",
        title="Scott Kelly (official NASA astronaut portrait, 2014)",
        author="Robert Markowitz, NASA Johnson Space Center (the file's EXIF: \"Official portrait of Expedition 45/46 "
               "long duration astronaut Scott Kelly in EMU. Photo Date: August 11, 2014\")",
        source=_ISS.format("scott_kelly&usa.jpg"),
        source_sha256="b869ce8b98ac75f10558c301af3aabfe4c512bcbcceb58d372b85e072eae1104",
        license=NASA_LICENSE,
        appearance="man, 50, bald, no glasses, closed-mouth smile"),
    Photo(
        name="gary-peters", original="assets/gallery/originals/gary-peters.jpg",
        title="Gary Peters (official U.S. Senate portrait, 2018)",
        author="Joy Holder, U.S. Senate Photographic Studio (the file's EXIF; taken 2018-08-21)",
        source=_SENATE.format("P000595.jpg"),
        source_sha256="f799b8d4c77aec443537b3ec5b2f6ff92eb6c0231fdec1ea7b400b9aeae23389",
        license=SENATE_LICENSE,
        appearance="man, late 50s, glasses, grey beard, smiling with teeth"),
    Photo(
        name="kevin-cramer", original="assets/gallery/originals/kevin-cramer.jpg",
        title="Kevin Cramer (official U.S. Senate portrait, 2019)",
        author="Rosa Pineda, U.S. Senate Photographic Studio (the file's EXIF/XMP; taken 2019-01-28)",
        source=_SENATE.format("C001096.jpg"),
        source_sha256="857168a668d6bdcb68098421841f3d6805c9c8bf8ea288c0ac1b497c1c4945d8",
        license=SENATE_LICENSE,
        appearance="man, late 50s, glasses, white hair, smiling with teeth"),
    Photo(
        name="mazie-hirono", original="assets/gallery/originals/mazie-hirono.jpg",
        title="Mazie Hirono (official U.S. Senate portrait, 2013)",
        author="Frank Fey, U.S. Senate Photographic Studio (the file's EXIF; taken 2013-02-14)",
        source=_SENATE.format("H001042.jpg"),
        source_sha256="c49916291bdd987be8f9393f8acfb8446ee8e9beac3911056e37b89891c5b587",
        license=SENATE_LICENSE,
        appearance="woman, 60s, East Asian, no glasses, smiling with teeth"),
    Photo(
        name="laphonza-butler", original="assets/gallery/originals/laphonza-butler.jpg",
        title="Laphonza Butler (official U.S. Senate portrait, 2023)",
        author="Rebecca Hammel, U.S. Senate Photographic Services (the file's EXIF: \"Official Portrait Laphonza "
               "Butler\"; taken 2023-10-30)",
        source=_SENATE.format("B001320.jpg"),
        source_sha256="c109bf44db4a3d1c3ad820311044a5f68257b2f1bdde1eeefa3fde756e4627e8",
        license=SENATE_LICENSE,
        appearance="woman, 40s, Black, no glasses, smiling with teeth"),
    Photo(
        name="tim-scott", original="assets/gallery/originals/tim-scott.jpg",
        title="Tim Scott (official U.S. Senate portrait, 2013)",
        author="Renee Bouchard, U.S. Senate Photographic Studio (the file's EXIF; taken 2013-01-22)",
        source=_SENATE.format("S001184.jpg"),
        source_sha256="2038bebf8c18c451f2ed0569528e3a45e0a5ebb3172d3ccec4bb4296b5aabb06",
        license=SENATE_LICENSE,
        appearance="man, 40s, Black, close-cropped hair, no glasses, smiling with teeth"),
    Photo(
        name="josh-hawley", original="assets/gallery/originals/josh-hawley.jpg",
        title="Josh Hawley (official U.S. Senate portrait, 2019)",
        author="Rebecca Hammel, U.S. Senate Photographic Studio (the file's EXIF; taken 2019-01-09)",
        source=_SENATE.format("H001089.jpg"),
        source_sha256="c4dda424a647e8b1e8332f70b27e778b363dbd1357c0858018d0e713231bc4f7",
        license=SENATE_LICENSE,
        appearance="man, 30s, no glasses, closed mouth"),
    Photo(
        name="jon-ossoff", original="assets/gallery/originals/jon-ossoff.jpg",
        title="Jon Ossoff (official U.S. Senate portrait, 2021)",
        author="Dan Rios, U.S. Senate Photographic Studio (the file's EXIF/XMP; taken 2021-04-22)",
        source=_SENATE.format("O000174.jpg"),
        source_sha256="a897e114346b54f7ec41c6056c2e3eb294a48fea5a40a8c7eb5b2a81f0726ee5",
        license=SENATE_LICENSE,
        appearance="man, 30s, no glasses, closed-mouth smile"),
)

SOURCES_NOTE = """\
Public domain concerns copyright only. These are real, identifiable people: the app shows
them to demonstrate an audit of face-attribute classifiers, and nothing here implies that
they, NASA, the U.S. Navy or the U.S. Senate endorse this project. Insignia in the photos
(NASA's, the Navy's) keep their own restrictions on use. What a classifier says about a
face is the classifier's reading, not a statement about the person.
"""


def by_name() -> dict[str, Photo]:
    return {photo.name: photo for photo in PHOTOS}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_original(photo: Photo, source_file: Path) -> Path:
    """Check a source file against the table, downscale it to at most ORIGINAL_MAX_SIDE a side
    and write it, re-encoded as JPEG with the credit in its EXIF, as the photo's original."""
    digest = sha256(source_file)
    if digest != photo.source_sha256:
        raise SystemExit(f"{source_file}: SHA-256 {digest} is not the table's {photo.source_sha256} for {photo.name}")
    with Image.open(source_file) as opened:
        image = opened.convert("RGB")
    scale = ORIGINAL_MAX_SIDE / max(image.size)
    if scale < 1:
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.LANCZOS)
    exif = Image.Exif()
    exif[0x010E] = _ascii(photo.title)  # ImageDescription
    exif[0x013B] = _ascii(photo.author)  # Artist
    exif[0x8298] = _ascii(photo.license)  # Copyright: here, why there is none
    photo.path.parent.mkdir(parents=True, exist_ok=True)
    image.save(photo.path, "JPEG", quality=ORIGINAL_QUALITY, optimize=True, exif=exif)
    return photo.path


def _ascii(text: str) -> str:
    return text.replace("§", "section").encode("ascii", "replace").decode()


def aligned(photo: Photo) -> tuple[np.ndarray, str]:
    """The photo aligned like an upload: ``uint8 (64, 64, 3)`` and align_face's message.
    A photo where no face is found raises (recourse.faces.NoFaceError)."""
    face = align_face(photo.path, RESOLUTION)
    return face.image.transpose(1, 2, 0), face.message


def provenance(photo: Photo) -> dict:
    """The ``<name>.json`` beside each face (the app shows ``title`` as the caption)."""
    return {
        "title": photo.title,
        "author": photo.author,
        "source": f"{photo.source}; kept here as {photo.original}, aligned with recourse.faces.align_face",
        "source_sha256": photo.source_sha256,
        "license": photo.license,
        "appearance": photo.appearance,
        "command": PROVENANCE_COMMAND,
    }


def sources_markdown() -> str:
    """``assets/gallery/SOURCES.md``: one provenance entry for each gallery face."""
    lines = ["# Gallery sources", "",
             f"Written by `{COMMAND}` from its table `PHOTOS`; do not edit by hand. Every face in the",
             "gallery is a photograph in the public domain, framed at 64×64 by `recourse.faces.align_face`",
             "from the downscaled copy named below. No face is generated and no dataset photo is shipped.", "",
             SOURCES_NOTE]
    for photo in PHOTOS:
        lines += [f"## `{photo.name}.png`: {photo.title}", "",
                  f"- Appearance: {photo.appearance}",
                  f"- Author: {photo.author}",
                  f"- Source: {photo.source} (SHA-256 {photo.source_sha256})",
                  f"- Kept here as: `{photo.original}`",
                  f"- Licence: {photo.license}", ""]
    return "\n".join(lines)


def write(photo: Photo, pixels: np.ndarray) -> None:
    Image.fromarray(pixels).save(GALLERY / f"{photo.name}.png")
    (GALLERY / f"{photo.name}.json").write_text(json.dumps(provenance(photo), indent=2, ensure_ascii=False) + "\n")


def remove_stale() -> list[Path]:
    """Gallery PNG and JSON files that are not in the table (the app lists every PNG)."""
    names = set(by_name())
    stale = [path for pattern in ("*.png", "*.json") for path in sorted(GALLERY.glob(pattern))
             if path.stem not in names]
    for path in stale:
        path.unlink()
    return stale


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="NAME=PATH",
                        help="downscale a source file (checked against the table's SHA-256) into originals/ first")
    args = parser.parse_args(argv)
    photos = by_name()
    for item in args.imports:
        name, _, path = item.partition("=")
        if name not in photos or not path:
            raise SystemExit(f"--import wants NAME=PATH with NAME one of {', '.join(photos)}; got {item!r}")
        print(f"imported {import_original(photos[name], Path(path)).relative_to(ROOT)}")
    GALLERY.mkdir(parents=True, exist_ok=True)
    for photo in PHOTOS:
        pixels, message = aligned(photo)
        write(photo, pixels)
        print(f"{photo.name}: {message} ({photo.original})")
    for path in remove_stale():
        print(f"removed {path.relative_to(ROOT)} (not in the table)")
    SOURCES.write_text(sources_markdown())
    print(f"wrote {len(PHOTOS)} faces and {SOURCES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
