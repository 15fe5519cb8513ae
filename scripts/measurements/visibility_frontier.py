"""How large must an edit be before a more robust model sees the attribute change?

A study of the generator's limits on the validation split (the judge is never used). For
each face and attribute, the classifier's counterfactual is made three ways:

* ``committed``: the cone walk (``pca-walk-cone``, the generation default when this study was
  made: cone around the committed guide, stop at the classifier's margin);
* ``until the guide agrees``: the same steps, continued until the committed guide also
  decides the target;
* ``strong guide, until it agrees``: the cone turned around a more robust model's gradient
  (``--strong-guide``, e.g. trained with ``train-classifier --preset guide
  --adversarial-radius 3``), continued until that model decides the target.

Every edit is scored by the robust model that did *not* steer it (cross FR, counted where
that model agreed with the classifier before the edit), the oracle (FR, MNAC) and its size
(mean |x' − x|), so that no number is a model grading its own edits.

    python -m scripts.measurements.visibility_frontier --data ../shared/data/celeba-hq-64 --strong-guide out/guide-radius3 \\
        --n 100 --json assets/results/visibility-frontier-val.json --sheets docs/visibility

The sheets show the gallery's faces (generated ones and a public-domain photo, never the
dataset's) edited the three ways, with each edit's mean |x' − x| and both robust models' p.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from PIL import Image, ImageDraw
from torch import nn

from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_framed_split, to_float_images
from recourse.generation import CounterfactualConfig, default_generator, generate
from recourse.generation.guidance import cone_projection, guide_objective, past_margin
from recourse.generation.quality import real_flip_rate
from recourse.locations import oracle_dir, teacher_dir
from recourse.metrics import decisions, mean_number_of_attributes_changed, recourse_cost
from recourse.render.pictures import enlarge, to_pil
from scripts.figures.contact_sheets import gallery_faces

ATTRIBUTES = ("Smiling", "Young", "Male", "Eyeglasses")
MOST_STEPS = 200


def edit_until_seen(image: torch.Tensor, classifier: nn.Module, guide: nn.Module, index: int, sign: torch.Tensor,
                    config: CounterfactualConfig, generator) -> torch.Tensor:
    """The committed editing steps (the classifier's gradient in the face basis, turned into the
    cone around ``guide``'s), stopped at the first step where the classifier is past the margin
    *and* ``guide`` decides the target. One image ``(1, 3, H, W)``."""
    others = torch.ones(40, dtype=torch.bool)
    others[index] = False
    with torch.no_grad():
        guide_before = torch.sigmoid(guide(image))[:, others]
    delta = torch.zeros_like(image)
    for _ in range(MOST_STEPS):
        delta = delta.detach().requires_grad_(True)
        candidate = (image + delta).clamp(0, 1)
        gap = sign * classifier(candidate)[:, index] - config.margin
        direction, = torch.autograd.grad(gap.sum(), delta, retain_graph=True)
        guide_logits = guide(candidate)
        guide_decides = past_margin(sign * guide_logits[:, index].detach(), sign)
        if bool((past_margin(gap.detach(), sign) & guide_decides).all()):
            break
        objective = guide_objective(guide_logits, index, sign, guide_before, config.preserve_weight)
        axis, = torch.autograd.grad(objective.sum(), delta)
        direction = cone_projection(generator.project(direction).flatten(1), generator.project(axis).flatten(1),
                                    config.cone_degrees)
        delta = delta.detach() + config.finish_learning_rate * direction.view_as(delta)
    return (image + delta.detach()).clamp(0, 1)


def three_ways(faces: torch.Tensor, attribute: str, targets: torch.Tensor, classifier: nn.Module, guide: nn.Module,
               strong: nn.Module, config: CounterfactualConfig, generator) -> dict[str, torch.Tensor]:
    """The classifier's counterfactuals of ``faces`` made the three ways of the module docstring."""
    index, signs = attribute_index(attribute), 2 * targets.float() - 1
    made = {"committed": generate(faces, classifier, attribute, targets, config, generator).images}
    for name, steering in (("until the guide agrees", guide), ("strong guide, until it agrees", strong)):
        made[name] = torch.cat([edit_until_seen(faces[i:i + 1].clone(), classifier, steering, index, signs[i:i + 1],
                                                config, generator) for i in range(len(faces))])
    return made


def sheet(attribute: str, names: list[str], faces: torch.Tensor, made: dict[str, torch.Tensor],
          scorers: dict[str, nn.Module]) -> Image.Image:
    """Original and the three edits of each face, with each edit's size and both robust models' p."""
    index, panel, caption, gap = attribute_index(attribute), 128, 30, 4
    columns = ("original", *made)
    picture = Image.new("RGB", (len(columns) * (panel + gap), 24 + len(names) * (panel + caption)), "white")
    draw = ImageDraw.Draw(picture)
    draw.text((4, 6), f"{attribute}: " + " | ".join(columns), fill="black")
    with torch.no_grad():
        p = {(setting, name): torch.sigmoid(model(images))[:, index] for setting, images in made.items()
             for name, model in scorers.items()}
    for row, face in enumerate(names):
        top = 24 + row * (panel + caption)
        picture.paste(enlarge(to_pil(faces[row]), panel), (0, top))
        draw.text((2, top + panel + 2), face[:20], fill="black")
        for column, (setting, images) in enumerate(made.items(), start=1):
            left = column * (panel + gap)
            picture.paste(enlarge(to_pil(images[row]), panel), (left, top))
            size = float((images[row] - faces[row]).abs().mean())
            draw.text((left + 2, top + panel + 2), f"mean |dx| {size:.3f}", fill="black")
            draw.text((left + 2, top + panel + 15), " ".join(
                f"{name} p {float(p[setting, name][row]):.2f}" for name in scorers), fill="black")
    return picture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="val")
    parser.add_argument("--strong-guide", required=True, help="checkpoint folder of the more robust model")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--margin", type=float, default=6.0, help="default 6: the cone walk's, as committed")
    parser.add_argument("--attributes", nargs="+", default=list(ATTRIBUTES))
    parser.add_argument("--json")
    parser.add_argument("--sheets", help="folder for one picture per attribute of the gallery faces, edited three ways")
    args = parser.parse_args()
    config = CounterfactualConfig(method="pca-walk-cone", margin=args.margin)  # the study is the cone's
    classifier, oracle = load_classifier(teacher_dir()), load_classifier(oracle_dir())
    generator = default_generator()
    guide, strong = generator.guide.eval(), load_classifier(args.strong_guide)
    faces = to_float_images(load_framed_split(Path(args.data), args.split, 64, None).images[: args.n])
    with torch.no_grad():
        before = {name: decisions(model(faces)) for name, model in
                  (("classifier", classifier), ("oracle", oracle), ("guide", guide), ("strong", strong))}
    rows = []
    for attribute in args.attributes:
        index = attribute_index(attribute)
        targets = 1 - before["classifier"][:, index]
        started = time.time()
        made = three_ways(faces, attribute, targets, classifier, guide, strong, config, generator)
        for setting, counterfactuals in made.items():
            with torch.no_grad():
                after = {name: decisions(model(counterfactuals)) for name, model in
                         (("classifier", classifier), ("oracle", oracle), ("guide", guide), ("strong", strong))}
            scorer = "guide" if setting.startswith("strong") else "strong"
            row = {
                "setting": setting, "attribute": attribute, "n": len(faces),
                "fr": round(100 * float((after["classifier"][:, index] == targets).float().mean()), 1),
                "scored_by": "the committed guide" if scorer == "guide" else "the strong guide",
                "cross_fr": real_flip_rate(before[scorer][:, index], after[scorer][:, index], targets),
                "oracle_fr": round(100 * float((after["oracle"][:, index] == targets).float().mean()), 1),
                "mnac": round(mean_number_of_attributes_changed(before["oracle"], after["oracle"], index), 2),
                "proximity": round(float(recourse_cost(faces, counterfactuals).mean()), 4),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"{attribute}: {time.time() - started:.0f} s", flush=True)
    if args.json:
        report = {"command": "python -m scripts.measurements.visibility_frontier " + " ".join(
            f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}"
            for k, v in vars(args).items() if v is not None), "settings": config.__dict__, "rows": rows}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.sheets:
        Path(args.sheets).mkdir(parents=True, exist_ok=True)
        names, gallery = gallery_faces()
        with torch.no_grad():
            decided = decisions(classifier(gallery))
        for attribute in args.attributes:
            targets = 1 - decided[:, attribute_index(attribute)]
            made = three_ways(gallery, attribute, targets, classifier, guide, strong, config, generator)
            out = Path(args.sheets) / f"{attribute}.png"
            sheet(attribute, names, gallery, made, {"guide": guide, "strong": strong}).save(out)
            print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
