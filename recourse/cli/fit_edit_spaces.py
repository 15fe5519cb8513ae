"""``recourse fit-edit-spaces``: learn the edit spaces of face parts from a split's faces."""

from __future__ import annotations

import argparse
from pathlib import Path

from recourse.cli.common import add_data_options
from recourse.locations import generator_dir


def register(commands) -> None:
    fit = commands.add_parser("fit-edit-spaces", help="learn the spaces of face parts that edits move in")
    add_data_options(fit)
    fit.add_argument("--split", default="train", choices=("train",),
                     help="the faces the spaces learn from (only train: val chooses settings, test reports)")
    fit.add_argument("--groups", nargs="+", default=None,
                     help="which spaces (default: all: mouth eyes face hair mouth_shape)")
    fit.add_argument("--out", default=str(generator_dir() / "edit-spaces"))
    fit.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    fit.add_argument("--critic-epochs", type=int, default=6,
                     help="epochs of each part's artifact critic (real parts against synthetic damage; 0: none)")
    fit.add_argument("--critics-only", action="store_true",
                     help="keep the spaces in --out and train their critics only")
    fit.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import subprocess
    import time

    import torch

    from recourse.data import load_split
    from recourse.generation.spaces.bundle import EditSpaces
    from recourse.generation.spaces.fit import fit_region_space
    from recourse.generation.spaces.landmarks import cache_path, split_landmarks
    from recourse.generation.spaces.hair import fit_hair_space
    from recourse.generation.spaces.mouth_shape import fit_mouth_shape
    from recourse.generation.spaces.templates import (
        GROUP_NAMES, HAIR_GROUP, MOUTH_SHAPE_ATTRIBUTES, MOUTH_SHAPE_GROUP, SPACES,
    )

    if args.threads:
        torch.set_num_threads(args.threads)
    groups = args.groups or list(GROUP_NAMES)
    unknown = sorted(set(groups) - set(GROUP_NAMES))
    if unknown:
        print(f"unknown group {unknown[0]!r}: choose from {', '.join(GROUP_NAMES)}")
        return 2
    started = time.perf_counter()
    cache_dir = None if args.no_cache else args.cache_dir
    faces = load_split(args.data, args.split, 64, cache_dir=cache_dir)
    print(f"{len(faces.images)} {args.split} faces; fitting their landmarks (cached)", flush=True)
    points, found = split_landmarks(faces, cache_path(args.cache_dir, args.data, args.split),
                                    lambda done, total: print(f"landmarks {done}/{total}", flush=True))
    print(f"landmarks found on {int(found.sum())} of {len(found)} faces", flush=True)
    out = Path(args.out)
    kept = EditSpaces.from_pretrained(out) if (out / "spaces.json").is_file() else EditSpaces({})
    regions, critics, about = dict(kept.regions), dict(kept.critics), dict(kept.about)
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    command = f"python -m recourse fit-edit-spaces --data {Path(args.data).name} --groups {' '.join(groups)}"
    if not args.critics_only:
        for name in groups:
            if name == HAIR_GROUP:
                regions[name] = fit_hair_space(faces.images, points, found, faces.labels,
                                               progress=lambda line: print(line, flush=True))
                calibrate_hair(regions[name], args, cache_dir)
            elif name == MOUTH_SHAPE_GROUP:
                regions[name] = fit_mouth_shape(points, found, faces.labels, MOUTH_SHAPE_ATTRIBUTES)
            else:
                regions[name] = fit_region_space(SPACES[name], faces.images, points, found, faces.labels,
                                                 progress=lambda line: print(line, flush=True))
        fitted = {name: {"command": command, "code": revision} for name in groups}
        about.update(split=args.split, fitted={**about.get("fitted", {}), **fitted})
    if args.critic_epochs:
        for name in (g for g in groups if g in SPACES):
            critics[name] = part_critic(regions[name], faces.images, points, found, args.critic_epochs)
        about["critic_command"] = f"{command} --critics-only --critic-epochs {args.critic_epochs}"
    EditSpaces(regions, about, critics).save_pretrained(out)
    print(f"wrote {', '.join(sorted(regions))} to {out} in {time.perf_counter() - started:.0f} s; calibrate the "
          "artifact check's limits with python -m scripts.measurements.artifact_calibration")
    return 0


def calibrate_hair(space, args: argparse.Namespace, cache_dir) -> None:
    """Set the hair space's realism limit: the 99th percentile of ``‖z‖²/4`` on real val hair."""
    import numpy as np

    from recourse.data import load_split, to_float_images
    from recourse.generation.spaces.hair import hair_energy, hair_region
    from recourse.generation.spaces.landmarks import cache_path, split_landmarks
    from recourse.generation.spaces.person import PERSON

    val = load_split(args.data, "val", 64, cache_dir=cache_dir)
    points, found = split_landmarks(val, cache_path(args.cache_dir, args.data, "val"))
    energies = []
    for start in range(0, len(val.images), 512):
        faces = to_float_images(val.images[start:start + 512])
        people = PERSON(faces)
        for j in range(len(faces)):
            if found[start + j]:
                energy = hair_energy(space, faces[j], hair_region(faces[j], points[start + j], people[j, 0]))
                if energy is not None:
                    energies.append(energy)
    limit = float(np.percentile(energies, 99))
    space.register_to_config(code_energy_limit=limit)
    print(f"hair: realism limit {limit:.2f} (99th percentile of {len(energies)} val faces with hair)", flush=True)


def part_critic(space, images, points, found, epochs: int):
    """The artifact critic of ``space``'s part, trained on the split's real templates."""
    import numpy as np
    import torch

    from recourse.data import to_float_images
    from recourse.generation.spaces.critic import train_critic
    from recourse.generation.spaces.warp import to_template

    keep = np.flatnonzero(found)
    templates = torch.cat([to_template(to_float_images(images[keep[s:s + 2048]]), space.affines(points[keep[s:s + 2048]]),
                                       tuple(space.config.box)) for s in range(0, len(keep), 2048)])
    return train_critic(space.config.group, templates, space.taper.float(), epochs=epochs,
                        progress=lambda line: print(line, flush=True))
