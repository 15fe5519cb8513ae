"""``recourse stability``: do a variant's per-image numbers reproduce under a 1/255 change of one
pixel, and in other memory layouts (:mod:`recourse.reproducibility`)?"""

from __future__ import annotations

import argparse

from recourse.cli.common import always
from recourse.names import STABILITY_CHECKS as CHECKS, STOP_SEARCHES

# the options the recorded command names, in this order (those left at None are left out)
_RECORDED = ("data", "split", "variant", "n", "margin", "stop_search", "method", "checks", "json")


def register(commands) -> None:
    stability = commands.add_parser(
        "stability", help="do a variant's per-image numbers reproduce under a 1/255 change of one pixel, and in "
                          "other memory layouts?",
        description="Do per-image numbers reproduce? For each of --n tasks (faces in order, the default attributes "
                    "in turn), the per-image CRG and DirSim of a variant against the classifier on the face and on "
                    "the face with one pixel moved by 1/255, and the largest pixel difference between "
                    "counterfactuals of the same pixels in another memory layout, batch composition and order.")
    stability.add_argument("--data", required=True)
    stability.add_argument("--split", default="test")
    stability.add_argument("--variant", default="ptq-int4")
    stability.add_argument("--n", type=int, default=200)
    # The archived stability-test*.json (assets/archive/) measured the walk's stop with the cone walk at margin 6
    # (the generation default then); these defaults keep their commands reproducing them.
    stability.add_argument("--margin", type=float, default=6.0, help="default 6")
    stability.add_argument("--stop-search", choices=STOP_SEARCHES, help="default: the generation default")
    stability.add_argument("--method", default="pca-walk-cone", help="a counterfactual method (default pca-walk-cone)")
    stability.add_argument("--checks", nargs="+", choices=CHECKS, default=CHECKS,
                           help="nudge: one pixel moved by 1/255; layout: the same pixels in another memory layout, "
                                "batch and order (default both)")
    stability.add_argument("--json")
    stability.set_defaults(run=run, uses_committed_models=always)


def recorded_command(args: argparse.Namespace) -> str:
    """The command the report records: every option given a value, ``--checks`` where not both."""
    options = {name: getattr(args, name) for name in _RECORDED}
    return "python -m recourse stability " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}" for k, v in options.items()
        if v is not None and not (k == "checks" and tuple(v) == CHECKS))


def run(args: argparse.Namespace) -> int:
    import json
    import time
    from pathlib import Path

    from recourse.data import load_framed_split, to_float_images
    from recourse.generation import CounterfactualConfig, default_generator
    from recourse.models import load_student, load_teacher
    from recourse.reproducibility import measure

    started = time.time()
    config = CounterfactualConfig(method=args.method, margin=args.margin,
                                  **({"stop_search": args.stop_search} if args.stop_search else {}))
    teacher, student, generator = load_teacher().eval(), load_student(args.variant), default_generator()
    faces = to_float_images(load_framed_split(Path(args.data), args.split, 64, None).images[: args.n])
    measured = measure(faces, teacher, student, config, generator, args.checks, n=args.n, started=started)
    report = {"command": recorded_command(args), "variant": args.variant, "split": args.split, "tasks": args.n,
              "checks": list(args.checks), "settings": config.__dict__, **measured,
              "seconds": round(time.time() - started, 1)}
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0
