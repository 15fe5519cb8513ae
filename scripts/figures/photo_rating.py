"""A blind rating of edits on photos, as the app shows them: methods and sides mixed, the key apart.

    python -m scripts.figures.photo_rating --photos assets/rating-photos \\
        --data ../shared/data/celeba-hq-64 --test-faces 24 --methods region-space denoised \\
        --attributes Smiling Mouth_Slightly_Open Eyeglasses Young Male Blond_Hair --per-face 2 \\
        --out ~/rating-sets/photos-1

Each photo is aligned as the app aligns an upload (``recourse.audit.pipeline.prepare_image``);
each face gets ``--per-face`` attributes at random (Eyeglasses only where the classifier says
the face has none: adding glasses is what is rated), and every method edits it for each: the
full-precision classifier steers the method's edit to flip its decision, with the product's
settings and stops (``recourse.audit.result.product_settings``, each attribute's own visible stop for a
region-space edit), and the picture is the one the app shows at that stop: the photo's display crop with the edit
(``recourse.render.pictures.composite``), 256 px. ``--test-faces`` adds that many
test-split faces (64 px, shown enlarged).

Every item is an (A, B) pair, one of them the edit, the side drawn at random, with one line: the
attribute and the direction asked ("one of the two was edited to look MORE smiling"). Items
are shuffled over methods and faces and tiled ``--per-sheet`` to a PNG sheet, each item
numbered. ``key.json`` (never shown to a rater) holds each item's source, method, attribute,
target and edited side. ``items.json`` holds what a rater may read. The folder must lie outside
the repository: it holds dataset faces.

To rate two versions of the code in one set (the committed default beside a change to it): make
the first version's set with ``--keep-pairs`` in a checkout of that version and ``--label`` its
methods (``--label region-space=region-space@a5c6c2f``), then the second's with ``--include`` that
folder: the first set's pairs join the second's before the shuffle, and one key names both.

Every set also holds ``instructions.md``: what a rater is told, the same text for every set
(:func:`instructions`), naming the damage a person looks for on each rated attribute, so that
sets differ by their edits and not by their instructions (sets 12–14 showed that telling raters
what damage looks like moves the counts more than any change to the edits did).

A rater fills, per item: ``edited`` (A or B: which picture looks edited), ``changed`` (the
edited picture shows the attribute changed the asked way), ``same_person`` and ``artifact``
(something a person would call damage: a blob, smear, band, false colour). Scored by
``scripts.measurements.score_photo_ratings``: an edit convinces when the attribute changed the
asked way, the person is the same, and no artifact is seen.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

import recourse
from recourse.audit.paired import stop_on_paths
from recourse.audit.pipeline import attribute_settings, prepare_image
from recourse.audit.result import product_settings
from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split, resize_images, to_float_images
from recourse.generation import default_generator, generate
from recourse.locations import teacher_dir
from recourse.render.pictures import composite, redrawn_part, to_pil

REPOSITORY = Path(recourse.__file__).resolve().parents[1]
SIZE = 256
PHRASES = {"Smiling": "smiling", "Mouth_Slightly_Open": "with the mouth open", "Eyeglasses": "wearing eyeglasses",
           "Young": "young", "Male": "male", "Blond_Hair": "blond-haired", "Wearing_Lipstick": "wearing lipstick",
           "Heavy_Makeup": "wearing heavy makeup", "Bangs": "with bangs"}


def faces(photos: list[Path], data: str | None, test_faces: int, seed: int) -> list[dict]:
    """Each face to rate: its source name, the model-size face and the display picture."""
    found = []
    for path in photos:
        x, _, display = prepare_image(path.read_bytes(), 64)
        found.append({"source": path.name, "x": x, "display": display})
    if data and test_faces:
        split = load_split(data, "test", 64, cache_dir=".cache")
        chosen = np.random.default_rng(seed).choice(len(split.images), test_faces, replace=False)
        for i in sorted(chosen.tolist()):
            found.append({"source": f"test:{split.filenames[i]}", "x": to_float_images(split.images[i:i + 1])[0],
                          "display": None})
    return found


def shown(x: torch.Tensor, display: torch.Tensor | None, picture: torch.Tensor, removing: bool = False,
          redrawn: str | None = None) -> Image.Image:
    """What the app shows (``recourse.render.pictures.composite``), or the face enlarged."""
    if display is None:
        return to_pil(resize_images(picture[None], SIZE)[0])
    return to_pil(composite(display, x, picture, SIZE, removing, redrawn))


def edit(face: dict, attribute: str, target: int, method: str, classifier, generator) -> torch.Tensor:
    """The picture the app shows for ``method``'s edit: at the visible stop an audit uses for it."""
    product = product_settings()
    settings = attribute_settings(replace(product, counterfactual=replace(product.counterfactual, method=method)),
                                  attribute, generator)
    x = face["x"][None]
    made = generate(x, classifier, attribute, target, settings.edit_config, generator)
    return stop_on_paths(x, made.edits, classifier, attribute, torch.tensor([target]), settings.stops.visible)[0]


def sheet(items: list[dict], pictures: list[tuple[Image.Image, Image.Image]], columns: int = 2) -> Image.Image:
    cell_w, cell_h, caption = 2 * SIZE + 12, SIZE + 34, 30
    rows = (len(items) + columns - 1) // columns
    page = Image.new("RGB", (columns * (cell_w + 24), rows * (cell_h + 20)), "white")
    draw = ImageDraw.Draw(page)
    for k, (item, (a, b)) in enumerate(zip(items, pictures)):
        left, top = (k % columns) * (cell_w + 24) + 6, (k // columns) * (cell_h + 20) + 6
        draw.text((left, top), f"item {item['item']}: {item['question']}", fill="black")
        page.paste(a, (left, top + caption - 14))
        page.paste(b, (left + SIZE + 12, top + caption - 14))
        draw.text((left + 4, top + caption - 12), "A", fill="yellow")
        draw.text((left + SIZE + 16, top + caption - 12), "B", fill="yellow")
    return page


# what a person calls damage on each attribute's edit, named to the raters (sets 12–14's instructions)
DAMAGE = {"Blond_Hair": "hair that looks painted or like a wig or helmet, halos or outlines around the hair, colour "
                        "spilling onto the background, clothes or skin, olive, green or grey tints",
          "Smiling": "a crooked, twisted or pouting mouth, a grimace, teeth squeezed into a line, a mouth drawn or "
                     "pasted on",
          "Mouth_Slightly_Open": "a crooked or smeared mouth, teeth squeezed into a line, a mouth drawn or pasted on",
          "Eyeglasses": "frames that float, bend or cut into the face, a band or smear across the eyes"}
GENERAL_DAMAGE = "blobs, smears, stains, patches, blotches or false colours on the skin, a repainted background"


def instructions(attributes: list[str], count: int, sheets: int) -> str:
    """What every rater of a set of ``count`` items on ``sheets`` sheets is told (``instructions.md``)."""
    damage = "; ".join([GENERAL_DAMAGE] + [f"on {PHRASES.get(a, a)} edits: {DAMAGE[a]}" for a in attributes if a in DAMAGE])
    return f"""You are a strict, careful rater of edited face photos. Open only this folder's items.json and its
{sheets} sheets (sheet-01.png …); open no other file.

items.json lists {count} items; each names its sheet. On a sheet every item shows two pictures side by side, A (left)
and B (right), under one line such as "item 12: one of the two was edited to look LESS smiling". Exactly one of the
two is an edit of the other. Look at every sheet closely and rate every item as an ordinary person looking at the
photos would:

- "edited": "A", "B" or "cannot tell": which picture looks edited.
- "changed": true only if the edited picture clearly shows the attribute changed the way the line asks (MORE: it
  clearly has it, or more of it; LESS: it clearly has it less or not at all); false if unchanged, too subtle or
  changed the wrong way.
- "same_person": true if both pictures show the same person.
- "artifact": true if the edited picture shows anything a person would call damage or fakery: {damage}. Be strict:
  if you would not believe the edited picture is a real, unedited photo, mark true.
- "note": one short sentence on what you see in the edited picture.

Write a JSON list with one object per item, in item order, each {{"item": N, "edited": ..., "changed": ...,
"same_person": ..., "artifact": ..., "note": ...}}, to the file you were given, valid JSON with all {count} items.
"""


def keep_pairs(folder: Path, items: list[dict], pictures: list[tuple[Image.Image, Image.Image]]) -> None:
    """Each item's two pictures as ``NNNN-A.png`` and ``NNNN-B.png`` and the items, in making order."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, (a, b) in enumerate(pictures):
        a.save(folder / f"{number:04d}-A.png")
        b.save(folder / f"{number:04d}-B.png")
    (folder / "items.json").write_text(json.dumps(items, indent=2) + "\n")


def read_pairs(folder: Path) -> tuple[list[dict], list[tuple[Image.Image, Image.Image]]]:
    """The items and pictures :func:`keep_pairs` kept in ``folder``."""
    items = json.loads((folder / "items.json").read_text())
    pictures = [(Image.open(folder / f"{number:04d}-A.png").convert("RGB"),
                 Image.open(folder / f"{number:04d}-B.png").convert("RGB")) for number in range(len(items))]
    return [{key: value for key, value in item.items() if key != "item"} for item in items], pictures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--photos", nargs="+", default=[], help="folders of photos (every .jpg/.png in them)")
    parser.add_argument("--data", help="a CelebA-HQ folder for --test-faces")
    parser.add_argument("--test-faces", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=["region-space", "denoised"])
    parser.add_argument("--attributes", nargs="+", default=["Smiling", "Mouth_Slightly_Open", "Eyeglasses", "Young",
                                                            "Male", "Blond_Hair"])
    parser.add_argument("--per-face", type=int, default=2)
    parser.add_argument("--per-sheet", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--label", nargs="+", default=[], metavar="METHOD=LABEL",
                        help="the name a method's items carry in the key (the code version that made them)")
    parser.add_argument("--keep-pairs", action="store_true",
                        help="also keep every item's two pictures and its key line in pairs/ (for --include)")
    parser.add_argument("--include", nargs="+", default=[], metavar="SET",
                        help="sets made with --keep-pairs whose pairs join this one's before the shuffle")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if any("=" not in label for label in args.label):
        parser.error("--label takes METHOD=LABEL, for example region-space=region-space@a5c6c2f")
    labels = dict(label.split("=", 1) for label in args.label)
    out = Path(args.out).expanduser()
    if out.resolve().is_relative_to(REPOSITORY):
        parser.error("--out must lie outside the repository: the set holds dataset faces")
    torch.set_num_threads(args.threads)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    photos = sorted(p for folder in args.photos for p in Path(folder).iterdir() if p.suffix.lower() in (".jpg", ".png"))
    classifier, generator = load_classifier(teacher_dir()).eval(), default_generator()
    items, pictures = [], []
    for face in faces(photos, args.data, args.test_faces, args.seed):
        with torch.no_grad():
            decided = (classifier(face["x"][None])[0] > 0).tolist()
        allowed = [a for a in args.attributes if not (a == "Eyeglasses" and decided[attribute_index(a)])]
        for attribute in rng.sample(allowed, min(args.per_face, len(allowed))):
            target = int(not decided[attribute_index(attribute)])
            for method in args.methods:
                picture = edit(face, attribute, target, method, classifier, generator)
                original = shown(face["x"], face["display"], face["x"])
                removing = not target and attribute in product_settings().counterfactual.space_drop_residual
                config = replace(product_settings().counterfactual, method=method)
                edited = shown(face["x"], face["display"], picture, removing, redrawn_part(attribute, target, config))
                side = rng.choice("AB")
                pictures.append((edited, original) if side == "A" else (original, edited))
                direction = "MORE" if target else "LESS"
                items.append({"source": face["source"], "method": labels.get(method, method), "attribute": attribute,
                              "target": target,
                              "edited": side,
                              "question": f"one of the two was edited to look {direction} {PHRASES.get(attribute, attribute)}"})
            print(f"{face['source']}: {attribute} -> {target}", flush=True)
    if args.keep_pairs:
        keep_pairs(out / "pairs", items, pictures)
    for included in args.include:
        more_items, more_pictures = read_pairs(Path(included).expanduser() / "pairs")
        items, pictures = items + more_items, pictures + more_pictures
    order = list(range(len(items)))
    rng.shuffle(order)
    items, pictures = [items[i] for i in order], [pictures[i] for i in order]
    for number, item in enumerate(items, start=1):
        item["item"] = number
    for start in range(0, len(items), args.per_sheet):
        sheet(items[start:start + args.per_sheet], pictures[start:start + args.per_sheet]).save(
            out / f"sheet-{start // args.per_sheet + 1:02d}.png")
    (out / "key.json").write_text(json.dumps(items, indent=2) + "\n")
    sheets = (len(items) + args.per_sheet - 1) // args.per_sheet
    (out / "instructions.md").write_text(instructions(sorted({item["attribute"] for item in items}), len(items), sheets))
    (out / "items.json").write_text(json.dumps([{"item": i["item"], "question": i["question"],
                                                 "sheet": f"sheet-{(i['item'] - 1) // args.per_sheet + 1:02d}.png"}
                                                for i in items], indent=2) + "\n")
    print(f"{len(items)} items on {(len(items) + args.per_sheet - 1) // args.per_sheet} sheets in {out}")


if __name__ == "__main__":
    main()
