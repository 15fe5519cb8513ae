"""Black-and-white photos stay black and white: the colour spread of every edit of every
monochrome photo in a folder, as the app shows it.

    python -m scripts.measurements.greyscale_check --photos assets/rating-photos \\
        --attributes Smiling Young Male Eyeglasses Mouth_Slightly_Open Blond_Hair \\
        --json assets/results/greyscale-check.json

Each photo that ``recourse.generation.spaces.colour.colour_mode`` calls monochrome is aligned as
an upload is, and the full-precision classifier's edit for each attribute (flipping its
decision; the product's settings and stops) is read at 64 px and on the display crop
(``recourse.render.pictures.composite``). Reported per photo and attribute: the 99th-percentile
channel spread (max − min of R, G, B, in /255) of the photo and of the edit, and the largest
rise over all. The target: no edit raises it past 6/255.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

from recourse.audit.paired import stop_on_paths
from recourse.audit.pipeline import attribute_settings, prepare_image
from recourse.audit.result import product_settings
from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, resize_images
from recourse.generation import default_generator, generate
from recourse.generation.spaces.colour import colour_mode, colour_spread
from recourse.locations import teacher_dir
from recourse.render.pictures import composite, redrawn_part


def spread(image: torch.Tensor) -> float:
    return round(float(colour_spread(image[None])[0]) * 255, 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--photos", required=True)
    parser.add_argument("--attributes", nargs="+", default=["Smiling", "Young", "Male", "Eyeglasses",
                                                            "Mouth_Slightly_Open", "Blond_Hair"])
    parser.add_argument("--methods", nargs="+", default=["region-space", "denoised"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    classifier, generator = load_classifier(teacher_dir()).eval(), default_generator()
    rows = []
    for path in sorted(Path(args.photos).iterdir()):
        if path.suffix.lower() not in (".jpg", ".png"):
            continue
        x, _, display = prepare_image(path.read_bytes(), 64)
        if not colour_mode(x).monochrome:
            continue
        for attribute in args.attributes:
            with torch.no_grad():
                target = int(classifier(x[None])[0, attribute_index(attribute)] < 0)
            for method in args.methods:
                product = product_settings()
                chosen = replace(product, counterfactual=replace(product.counterfactual, method=method))
                settings = attribute_settings(chosen, attribute, generator)
                made = generate(x[None], classifier, attribute, target, settings.edit_config, generator)
                picture = stop_on_paths(x[None], made.edits, classifier, attribute, torch.tensor([target]),
                                        settings.stops.visible)[0]
                removing = not target and attribute in product.counterfactual.space_drop_residual
                redrawn = redrawn_part(attribute, target, chosen.counterfactual)
                shown = (composite(display, x, picture, removing=removing, redrawn=redrawn) if display is not None
                         else resize_images(picture[None], 256)[0])
                base = resize_images(display[None], 256)[0] if display is not None else resize_images(x[None], 256)[0]
                row = {"photo": path.name, "attribute": attribute, "method": method,
                       "photo_spread": spread(x), "edit_spread": spread(picture),
                       "display_photo_spread": spread(base), "display_edit_spread": spread(shown)}
                row["rise"] = round(max(row["edit_spread"] - row["photo_spread"],
                                        row["display_edit_spread"] - row["display_photo_spread"]), 2)
                rows.append(row)
                print(row, flush=True)
    worst = {method: max((r["rise"] for r in rows if r["method"] == method), default=None) for method in args.methods}
    photos = sorted({r["photo"] for r in rows})
    print(f"{len(photos)} monochrome photos, {len(rows)} edits; the largest spread rise (/255): {worst}")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": "python -m scripts.measurements.greyscale_check --photos "
                                                          f"{args.photos} --attributes {' '.join(args.attributes)}",
                                               "photos": photos, "largest_rise": worst, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
