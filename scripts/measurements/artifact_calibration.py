"""Calibrate the artifact check's realism limits on real val faces, and report real test faces'
pass rates (the check must pass at least 95% of real faces).

    python -m scripts.measurements.artifact_calibration --data ../shared/data/celeba-hq-64 \
        --spaces checkpoints/generator/edit-spaces --json assets/results/artifact-calibration.json

For each edit space: every val face's part energies (``‖z‖²/K`` and the residual's energy, see
recourse/generation/spaces/artifacts.py) and its critic's score give limits at the
``--percentile`` (98th); they are written into the configs and the folder saved again. Then every test face is checked
as if it were an edit of itself by every group (novel colours and monochrome pass trivially on
an unedited face; the realism readings do not).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from recourse.data import load_split, to_float_images
from recourse.generation.spaces.artifacts import critic_score, part_energies
from recourse.generation.spaces.bundle import EditSpaces
from recourse.generation.spaces.landmarks import cache_path, split_landmarks


def energies(spaces: EditSpaces, data: str, split: str, cache_dir: str, count: int | None) -> dict[str, np.ndarray]:
    faces = load_split(data, split, 64, cache_dir=cache_dir)
    points, found = split_landmarks(faces, cache_path(cache_dir, data, split))
    chosen = np.flatnonzero(found)[:count]
    images = to_float_images(faces.images[chosen])
    def readings(name, space, image, face):
        critic = spaces.critics.get(name)
        score = critic_score(critic, space, image, face) if critic is not None else 0.0
        return (*part_energies(space, image, face), score)

    return {name: np.array([readings(name, space, image, points[i]) for image, i in zip(images, chosen)])
            for name, space in spaces.regions.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--spaces", default="checkpoints/generator/edit-spaces")
    parser.add_argument("--cache-dir", default=".cache")
    parser.add_argument("--percentile", type=float, default=98.0)
    parser.add_argument("--count", type=int, default=None, help="faces per split (default: all with landmarks)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    spaces = EditSpaces.from_pretrained(args.spaces)
    val = energies(spaces, args.data, "val", args.cache_dir, args.count)
    report = {"command": "python -m scripts.measurements.artifact_calibration " + " ".join(
        f"--{k.replace('_', '-')} {Path(v).name if k == 'data' else v}" for k, v in vars(args).items() if v is not None),
        "percentile": args.percentile, "groups": {}}
    for name, space in spaces.regions.items():
        code, residual, score = np.percentile(val[name], args.percentile, axis=0)
        space.register_to_config(code_energy_limit=float(code), residual_energy_limit=float(residual))
        if name in spaces.critics:
            spaces.critics[name].register_to_config(limit=float(score))
    spaces.save_pretrained(args.spaces)
    test = energies(spaces, args.data, "test", args.cache_dir, args.count)
    for name, space in spaces.regions.items():
        code, residual = space.realism_limits
        critic = spaces.critics.get(name)
        score = critic.config.limit if critic is not None else np.inf
        passed = (test[name][:, 0] <= code) & (test[name][:, 1] <= residual) & (test[name][:, 2] <= score)
        report["groups"][name] = {"val_faces": len(val[name]), "code_energy_limit": round(code, 4),
                                  "residual_energy_limit": residual,
                                  "critic_limit": None if critic is None else round(float(score), 4),
                                  "test_faces": len(test[name]),
                                  "test_real_pass_rate": round(float(passed.mean()), 4)}
        print(f"{name}: limits z²/K {code:.3f}, residual {residual:.2e}; real test faces passing "
              f"{passed.mean():.1%} of {len(passed)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
