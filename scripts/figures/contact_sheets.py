"""Contact sheets of what the generator does, on faces that are not from the dataset.

For each of the eight judged attributes, one sheet (``docs/contact-sheets/<attribute>.png``):
a row per gallery face (public-domain portraits, ``assets/gallery/SOURCES.md``), with the
original, the full-precision classifier's counterfactual, a 4-bit variant's counterfactual
(same settings), and both differences, each shown where the app shows it: at the visible stop
of the model's whole edit, with the app's settings for the attribute (a region-space edit at its
attribute's own stop: ``recourse.audit.pipeline.attribute_settings``). The pictures are the
model-size edits enlarged, not the display crop's redraw. The caption gives each model's p before →
after, and the robust judge's p on the face and on both counterfactuals (it scores, it never
guides).

    python -m scripts.figures.contact_sheets [--variant ptq-int4]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from recourse.audit.paired import flip_targets, stop_on_paths
from recourse.audit.pipeline import attribute_settings
from recourse.audit.result import product_settings
from recourse.data import QUALITY_ATTRIBUTES, attribute_index
from recourse.generation import CounterfactualConfig, default_generator, generate
from recourse.models import load_judge, load_student, load_teacher
from recourse.render.pictures import difference_map, enlarge, to_pil

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "assets" / "gallery"
OUT = ROOT / "docs" / "contact-sheets"
PANEL = 128


def gallery_faces() -> tuple[list[str], torch.Tensor]:
    paths = sorted(GALLERY.glob("*.png"))
    images = [np.asarray(Image.open(p).convert("RGB").resize((64, 64), Image.BICUBIC)) for p in paths]
    return [p.stem for p in paths], torch.as_tensor(np.stack(images)).permute(0, 3, 1, 2).float() / 255


def _shown_at(result, faces: torch.Tensor, decider, attribute: str, targets: torch.Tensor, margin: float):
    """``result`` with its images moved to the stop at ``margin`` on each whole edit."""
    images = stop_on_paths(faces, result.edits, decider, attribute, targets, margin)
    with torch.no_grad():
        after = torch.sigmoid(decider(images)[:, attribute_index(attribute)])
    return replace(result, images=images, probability_after=after, cost=(images - faces).abs().mean(dim=(1, 2, 3)))


def sheet(attribute: str, names: list[str], faces: torch.Tensor, variant: str,
          config: CounterfactualConfig | None = None) -> Image.Image:
    teacher, student, generator = load_teacher().eval(), load_student(variant), default_generator()
    targets = flip_targets(teacher, faces, attribute)
    # the app's settings and stops for this attribute (a region-space edit's visible stop is its own)
    product = product_settings()
    if config is not None:
        product = replace(product, counterfactual=config)
    settings = attribute_settings(product, attribute, generator)
    stops, config = settings.stops, settings.edit_config
    full = generate(faces, teacher, attribute, targets, config, generator)
    # the twin guides, the integer model decides where the student's edit stops (as in an audit)
    decider = student.decider if student.kind == "integer" else None
    quantized = generate(faces, student.twin, attribute, targets, config, generator, decider=decider)
    full = _shown_at(full, faces, teacher, attribute, targets, stops.visible)
    quantized = _shown_at(quantized, faces, student.decider, attribute, targets, stops.visible)
    judge = load_judge()  # scores only: whether a robust model sees the attribute change
    with torch.no_grad():
        judged = {name: torch.sigmoid(judge(images))[:, attribute_index(attribute)]
                  for name, images in (("before", faces), ("fp", full.images), ("4bit", quantized.images))}
    caption, gap = 44, 4
    columns = ("original", "full precision", variant, "difference fp", f"difference {variant}")
    width = len(columns) * (PANEL + gap)
    picture = Image.new("RGB", (width, 24 + len(names) * (PANEL + caption)), "white")
    draw = ImageDraw.Draw(picture)
    how = {"pca-walk-cone": f", cone {config.cone_degrees:g} deg",
           "denoised": f", sigma {config.sigma:g}"}.get(config.method, "")
    draw.text((4, 6), f"{attribute}: target = flip the full-precision decision; {config.method}, shown at the visible stop "
                      f"({stops.visible:g} logits past the boundary) of edits aimed past {config.margin:g}{how}",
              fill="black")
    for row, name in enumerate(names):
        top = 24 + row * (PANEL + caption)
        panels = (to_pil(faces[row]), to_pil(full.images[row]), to_pil(quantized.images[row]),
                  difference_map(faces[row], full.images[row]), difference_map(faces[row], quantized.images[row]))
        for column, panel in enumerate(panels):
            picture.paste(enlarge(panel, PANEL), (column * (PANEL + gap), top))
        draw.text((2, top + PANEL + 2), f"{name}  target {int(targets[row])}  fp p {float(full.probability_before[row]):.2f}"
                  f"->{float(full.probability_after[row]):.2f} cost {float(full.cost[row]):.3f} | {variant} p "
                  f"{float(quantized.probability_before[row]):.2f}->{float(quantized.probability_after[row]):.2f} "
                  f"cost {float(quantized.cost[row]):.3f}", fill="black")
        draw.text((2, top + PANEL + 16), f"robust judge p {float(judged['before'][row]):.2f} -> fp "
                  f"{float(judged['fp'][row]):.2f}, {variant} {float(judged['4bit'][row]):.2f} (it never guides)",
                  fill="black")
    return picture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", default="ptq-int4")
    parser.add_argument("--method", help="a counterfactual method (default: the configuration's)")
    parser.add_argument("--out", default=str(OUT), help="folder of the sheets (default docs/contact-sheets)")
    parser.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES), choices=QUALITY_ATTRIBUTES,
                        metavar="ATTRIBUTE", help="the sheets to make (default: the eight judged attributes)")
    args = parser.parse_args()
    config = replace(product_settings().counterfactual, method=args.method) if args.method else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names, faces = gallery_faces()
    for attribute in args.attributes:
        sheet(attribute, names, faces, args.variant, config).save(out / f"{attribute}.png")
        print(f"wrote {out / f'{attribute}.png'}", flush=True)


if __name__ == "__main__":
    main()
