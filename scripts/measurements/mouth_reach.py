"""How many faces' full-precision model a moved mouth convinces, for a few boxes and priors of
the mouth's shape space: the share whose whole moved edit takes the model
``recourse.generation.methods.MOVED_MOUTH_REACH`` logits past its boundary (the faces below it
get the texture space's edit instead).

    python -m scripts.measurements.mouth_reach --data ../shared/data/celeba-hq-64 --faces 80 \\
        --json assets/results/mouth-reach-val.json

Each face's target flips the classifier's decision, as an audit's does; the edit is steered with
the audit's own edit settings for Smiling, the box and the prior's weight replaced by each pair
of ``--boxes`` and ``--priors``. Val faces: this chooses, it does not report a test result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch


def reach_shares(reach: torch.Tensor, sign: torch.Tensor, needed: float) -> dict[str, float]:
    """The share of faces at or past ``needed``, all of them and each side's."""
    past = reach >= needed
    return {"all": round(float(past.float().mean()), 3), "adding": round(float(past[sign > 0].float().mean()), 3),
            "removing": round(float(past[sign < 0].float().mean()), 3)}


def main(argv: list[str] | None = None) -> int:
    from recourse import models
    from recourse.audit.paired import flip_targets
    from recourse.audit.pipeline import attribute_settings
    from recourse.audit.result import product_settings
    from recourse.audit.scan import read_folder
    from recourse.data import attribute_index
    from recourse.generation.methods import MOVED_MOUTH_REACH
    from recourse.generation.regions import face_landmarks
    from recourse.generation.spaces.mouth_shape import place_mouth, steer_mouths, warp_mouth

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a CelebA-HQ folder (its val split is read)")
    parser.add_argument("--faces", type=int, default=80)
    parser.add_argument("--boxes", type=float, nargs="+", default=[2.0, 3.0, 3.0, 4.0])
    parser.add_argument("--priors", type=float, nargs="+", default=[1.0, 1.0, 0.5, 0.5])
    parser.add_argument("--json", help="write the shares here")
    args = parser.parse_args(argv)
    if len(args.boxes) != len(args.priors):
        parser.error("--boxes and --priors pair up: give as many of each")

    attribute = "Smiling"
    teacher, generator = models.load_teacher(), models.load_generator()
    space = generator.edit_spaces.for_attribute(attribute)
    config = attribute_settings(product_settings(), attribute, generator).edit_config
    _, images = read_folder(args.data, "val", args.faces, 64)
    faces = torch.stack(list(images))
    index = attribute_index(attribute)
    sign = flip_targets(teacher, faces, attribute).float() * 2 - 1
    points, _ = face_landmarks(faces)
    placements = [place_mouth(space, points[i], attribute, closes=bool(sign[i] < 0), image=faces[i])
                  for i in range(len(faces))]

    def draw(dz: torch.Tensor) -> torch.Tensor:
        return torch.cat([warp_mouth(space, faces[i:i + 1], placement, dz[i:i + 1])
                          for i, placement in enumerate(placements)])

    codes = torch.cat([placement.codes for placement in placements])
    rows = []
    for box, prior in zip(args.boxes, args.priors):
        started = time.perf_counter()
        dz = steer_mouths(space, faces, placements, teacher, index, sign, config, box=box, prior_weight=prior)
        with torch.no_grad():
            reach = teacher(draw(dz).clamp(0, 1))[:, index] * sign
        shares = reach_shares(reach, sign, MOVED_MOUTH_REACH)
        rows.append({"box": box, "prior_weight": prior, "reached": shares,
                     "median_largest_coefficient": round(float((codes + dz).abs().max(1).values.median()), 2)})
        print(f"box {box} SD, prior {prior}: {shares['all']:.2f} of {len(faces)} val faces reach "
              f"{MOVED_MOUTH_REACH:g} logits past the boundary (adding {shares['adding']:.2f}, removing "
              f"{shares['removing']:.2f}); {time.perf_counter() - started:.0f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": "python -m scripts.measurements.mouth_reach "
                                               + " ".join(argv if argv is not None else sys.argv[1:]),
                                               "faces": len(faces), "adding": int((sign > 0).sum()),
                                               "attribute": attribute, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
