"""``recourse audit``: per-image recourse audit of a compressed variant against the classifier,
for one photo or several (the models load once for all of them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recourse.cli.common import (
    METHOD_HELP, NUMBERS_AT_HELP, PICTURE_MARGIN_HELP, _audited_pair, _command_line, _single_face_settings,
    _write_json, add_denoised_options, add_pair_options, always, black_box_line, expected_errors, finite_float,
    walk_options,
)
from recourse.names import COUNTERFACTUAL_METHODS


def register(commands) -> None:
    audit = commands.add_parser("audit", help="per-image recourse audit of a compressed variant against the classifier")
    audit.add_argument("images", nargs="+", metavar="image",
                       help="a photo (aligned automatically), or several: each is audited in turn with the models "
                            "loaded once; one that fails is said and the others still run (exit 2 if any failed)")
    add_pair_options(audit)
    audit.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    audit.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    audit.add_argument("--margin", type=finite_float, help=PICTURE_MARGIN_HELP)
    audit.add_argument("--numbers-at", choices=("benchmark", "boundary"), default="benchmark", help=NUMBERS_AT_HELP)
    audit.add_argument("--seed", type=int)
    audit.add_argument("--json", help="write the whole audit here; with several photos, one file per photo beside "
                                      "it, named after both (--json out/audit.json with a.jpg b.jpg: "
                                      "out/audit-a.json, out/audit-b.json)")
    add_denoised_options(audit)
    walks = walk_options(audit)
    walks.add_argument("--steps", type=int, help="walks: DDIM steps over the whole schedule")
    walks.add_argument("--guidance-scale", type=finite_float, help="walks: DDIM stage")
    audit.set_defaults(run=run, uses_committed_models=always)


def json_paths(json: str | None, images: list[str]) -> list[str | None]:
    """Where each photo's audit is written: ``--json`` itself for one photo; for several, one
    file per photo beside it, ``<stem>-<photo stem><suffix>`` (a later photo of a name already
    used gets ``-2``, ``-3``, ...), so that no audit overwrites another."""
    if not json or len(images) == 1:
        return [json] * len(images)
    path, used, paths = Path(json), set(), []
    for image in images:
        base, count = f"{path.stem}-{Path(image).stem}", 1
        name = base
        while name in used:
            count += 1
            name = f"{base}-{count}"
        used.add(name)
        paths.append(str(path.with_name(name + path.suffix)))
    return paths


def _loaded_pair(args: argparse.Namespace, name: str, teacher, student):
    """The pair and the generator, loaded once before the first photo (the library's own order:
    the attribute, then the models), so that every photo shares them and an unknown attribute
    or variant is said once rather than for each photo."""
    from recourse import models
    from recourse.data import attribute_index

    attribute_index(args.attribute)
    teacher = teacher if teacher is not None else models.load_teacher()
    student = student if student is not None else models.load_student(name)
    return teacher, student, models.load_generator()


def _audit_one(args: argparse.Namespace, image: str, json: str | None, name: str, settings, loaded, black_box) -> None:
    from recourse.audit import audit_image
    from recourse.render.audit_html import audit_record
    from recourse.render.text import audit_line

    teacher, student, generator = loaded
    before = (black_box.forward_passes, black_box.estimates) if black_box is not None else None
    result = audit_image(Path(image), name, args.attribute, args.target, settings, teacher=teacher, student=student,
                         generator=generator)
    if black_box is not None:
        print(black_box_line(name, black_box.forward_passes - before[0], black_box.estimates - before[1]))
    _write_json(json, {"command": _command_line(args), "image": str(image), **audit_record(result)})
    print(audit_line(result))
    print(result.verdict)
    if json:
        print(f"wrote {json}")


def run(args: argparse.Namespace) -> int:
    from recourse.paired import share_cores_between_paired_edits

    share_cores_between_paired_edits()
    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)  # committed, or an auditor's own by their cards
    loaded = _loaded_pair(args, name, teacher, student)
    several = len(args.images) > 1
    failed = []
    for number, (image, json) in enumerate(zip(args.images, json_paths(args.json, args.images)), 1):
        if several:
            print(f"[{number}/{len(args.images)}] {image}")
        try:
            _audit_one(args, image, json, name, settings, loaded, black_box)
        except expected_errors() as error:
            if not several:
                raise  # one photo: said by main, as any command's error
            said = str(error) if Path(image).name in str(error) else f"{image}: {error}"
            print(f"error: {said}", file=sys.stderr)
            failed.append(image)
    if failed:
        print(f"error: {len(failed)} of {len(args.images)} photos not audited: {', '.join(failed)}", file=sys.stderr)
        return 2
    return 0
