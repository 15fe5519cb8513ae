"""A blind rating set in one command: several methods' pairs on one shuffled page, its key apart.

N (original, counterfactual) pairs from a data folder, made by one or more counterfactual
methods, on one self-contained page in random order with the sides shuffled, and the hidden key
in a separate file.

    python -m scripts.figures.blind_rating --data ../shared/data/celeba-hq-64 --n 60 \\
        --methods denoised pca-walk-cone --out ~/rating-sets/today
    python -m scripts.measurements.score_ratings ratings-<page id>.json --key ~/rating-sets/today/key.json

N distinct faces of the split are drawn at random (``--seed``), each with a random attribute,
and the methods take turns over them (N = 60 and two methods: 30 pairs each), so a face is
never shown twice and a rater cannot tell a method by its faces. Each counterfactual is guided by
the full-precision classifier to flip that attribute's decision, with the seed rule of
``scripts.figures.export_pairs`` (whose per-pair loop this shares). ``--pairs`` mixes in pairs that any
other generator wrote with ``recourse.instruments.rating.save_pairs``; their faces are left out
of the draw, and their method is the file's own ``method`` array or else the file's name.

The ``--out`` folder receives ``page.html`` (for the rater), ``pairs.npz`` and ``key.json``
(which side is the counterfactual, its target and method: never give it to a rater; ``--key``
puts it elsewhere). They hold dataset faces, so both must lie outside the repository.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

import recourse
from recourse.checkpoints import load_classifier
from recourse.data import ATTRIBUTES, QUALITY_ATTRIBUTES, load_split
from recourse.generation import METHODS, CounterfactualConfig, default_generator, load_generator
from recourse.instruments.rating import PAIR_KEYS, RatingError, load_pairs, merge_pairs, rating_page, save_pairs
from recourse.locations import DEFAULT_CACHE, teacher_dir, writable_file, writable_folder
from scripts.figures.export_pairs import make_pairs

# The checkout the package was imported from: the faces must never land where git could commit them.
REPOSITORY = Path(recourse.__file__).resolve().parents[1]
PAGE, PAIRS, KEY = "page.html", "pairs.npz", "key.json"


def inside_repository(path: Path) -> bool:
    return path.resolve().is_relative_to(REPOSITORY)


def parse_arguments(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a CelebA-HQ folder to draw faces from")
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, help="pairs made from --data (default 60)")
    parser.add_argument("--methods", nargs="+", default=["denoised"],
                        help=f"counterfactual methods, taking turns over the faces: {', '.join(METHODS)}")
    parser.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES),
                        help="each face gets one of these at random (default: the quality attributes)")
    parser.add_argument("--pairs", nargs="+", default=[], metavar="FILE",
                        help="pairs files written by save_pairs (any generator), mixed in whole")
    parser.add_argument("--seed", type=int, default=0, help="which faces, attributes and methods; the page's order")
    parser.add_argument("--margin", type=float, help="logits past the boundary (default: the config's)")
    parser.add_argument("--classifier", default=str(teacher_dir()), help="the guiding classifier's folder")
    parser.add_argument("--generator", help="a generator folder (default: the committed one)")
    parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="decoded images are cached here")
    parser.add_argument("--no-cache", action="store_true", help="decode the images without a cache")
    parser.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    parser.add_argument("--out", required=True, help="a folder outside the repository for the page, pairs and key")
    parser.add_argument("--key", help=f"the hidden key (default: OUT/{KEY}); outside the repository")
    return parser, parser.parse_args(argv)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """The page, pairs and key paths (and --n's default filled in), or a usage error before
    anything is loaded or written."""
    if args.data is None and not args.pairs:
        parser.error("give --data (faces to make pairs from), --pairs FILE..., or both")
    if args.data is None and args.n is not None:
        parser.error("--n counts the pairs made from --data; give --data too")
    if args.data is not None:
        args.n = 60 if args.n is None else args.n
        if args.n < 1:
            parser.error(f"--n must be at least 1, got {args.n}")
        if not Path(args.data).is_dir():
            parser.error(f"--data {args.data}: no such folder")
    unknown = [method for method in args.methods if method not in METHODS]
    if unknown:
        parser.error(f"unknown methods {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    unknown = [attribute for attribute in args.attributes if attribute not in ATTRIBUTES]
    if unknown:
        parser.error(f"unknown attributes {', '.join(unknown)}; choose from {', '.join(ATTRIBUTES)}")
    missing = [path for path in args.pairs if not Path(path).is_file()]
    if missing:
        parser.error(f"no such pairs file: {', '.join(missing)}")
    out = Path(args.out).expanduser()
    page, pairs = out / PAGE, out / PAIRS
    key = Path(args.key).expanduser() if args.key else out / KEY
    for option, path in (("--out", out), ("--key", key)):
        if inside_repository(path):
            parser.error(f"{option} {path} is inside the repository ({REPOSITORY}); the rating set holds "
                         "dataset faces, which must never be committed: choose a folder outside it")
    if key.resolve() in (page.resolve(), pairs.resolve()):
        parser.error(f"--key {key} would overwrite the {'page' if key.resolve() == page.resolve() else 'pairs'}")
    existing = [str(path) for path in (page, pairs, key) if path.exists()]
    if existing:  # an old key may belong to a page already handed out
        parser.error(f"{', '.join(existing)} already exist: choose a new --out folder or remove them")
    try:
        writable_folder(out)
        writable_file(key)
    except ValueError as error:
        parser.error(str(error))
    return page, pairs, key


def counterfactual_config(args: argparse.Namespace) -> CounterfactualConfig:
    """The default settings, with ``--margin`` if given; the method is set per pair."""
    return replace(CounterfactualConfig(), **({"margin": args.margin} if args.margin is not None else {}))


def generated_pairs(args: argparse.Namespace, mixed_in: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """``args.n`` pairs from ``args.data``: distinct faces that are not originals of the
    ``mixed_in`` pairs, a random attribute each, the methods taking turns."""
    classifier = load_classifier(args.classifier)
    resolution = classifier.config.resolution
    taken = set()
    if mixed_in is not None:
        size = mixed_in["originals"].shape[-1]
        if size != resolution:
            raise SystemExit(f"error: the --pairs faces are {size} px, the classifier's {resolution} px: "
                             "they cannot share a page")
        taken = {face.tobytes() for face in mixed_in["originals"]}
    cache = None if args.no_cache else Path(args.cache_dir)
    faces = load_split(Path(args.data), args.split, resolution, cache_dir=cache).images
    candidates = np.array([index for index, face in enumerate(faces) if face.tobytes() not in taken], dtype=np.int64)
    if args.n > len(candidates):
        raise SystemExit(f"error: --n {args.n}, but the {args.split} split has {len(candidates)} faces"
                         f"{' that are not in the --pairs files' if taken else ''}")
    rng = np.random.default_rng(args.seed)
    chosen = rng.choice(candidates, args.n, replace=False)
    attributes = rng.choice(args.attributes, args.n)
    # The faces are already in random order, so taking turns spreads the methods evenly over them.
    methods = [args.methods[number % len(args.methods)] for number in range(args.n)]
    generator = load_generator(args.generator) if args.generator else default_generator()
    made = make_pairs(faces, chosen.tolist(), attributes.tolist(), methods, classifier, counterfactual_config(args),
                      generator)
    return {"originals": made.originals, "counterfactuals": made.counterfactuals, "attributes": attributes,
            "targets": made.targets, "face_index": chosen, "valid": made.valid, "method": np.array(methods)}


def main(argv: list[str] | None = None) -> None:
    parser, args = parse_arguments(argv)
    page_path, pairs_path, key_path = check_arguments(parser, args)
    if args.threads:
        torch.set_num_threads(args.threads)
    sources, mixed_in = [], None
    try:
        sources = [(path, load_pairs(path)) for path in args.pairs]
        # Checked before the slow part: sizes that differ, a face in two files.
        mixed_in = merge_pairs(sources) if sources else None
    except RatingError as error:
        parser.error(str(error))
    if args.data is not None:
        sources.insert(0, (args.data, generated_pairs(args, mixed_in)))
    pairs = merge_pairs(sources)
    total = len(pairs["originals"])
    page = rating_page(pairs, total, args.seed, source=str(pairs_path))
    settings = {"seed": args.seed, "pairs": args.pairs}
    if args.data is not None:
        settings.update(data=args.data, split=args.split, n=args.n, methods=args.methods, attributes=args.attributes,
                        classifier=args.classifier, generator=args.generator or "committed",
                        counterfactual=asdict(counterfactual_config(args)))
    save_pairs(pairs_path, *(pairs[key] for key in PAIR_KEYS), settings=np.array(json.dumps(settings)),
               **{key: values for key, values in pairs.items() if key not in PAIR_KEYS})
    page_path.write_text(page.html, encoding="utf-8")
    key_path.parent.mkdir(parents=True, exist_ok=True)
    key_path.write_text(json.dumps(page.key, indent=1) + "\n")
    counts = ", ".join(f"{method} {int((pairs['method'] == method).sum())}" for method in dict.fromkeys(pairs["method"]))
    print(f"page {page.key['page_id']}: {total} pairs ({counts}), in random order, sides shuffled")
    print(f"  for the rater: {page_path} ({page_path.stat().st_size / 1e6:.1f} MB)")
    print(f"  pairs: {pairs_path}")
    print(f"  key (never give it to a rater): {key_path}")
    print("score the ratings it exports with: python -m scripts.measurements.score_ratings "
          f"ratings-{page.key['page_id']}.json --key {key_path}")


if __name__ == "__main__":
    main()
