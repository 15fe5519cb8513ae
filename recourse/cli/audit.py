"""``recourse audit``: per-image recourse audit of a compressed variant against the classifier,
for one photo or several (the models load once for all of them)."""

from __future__ import annotations

import argparse
import json
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
    audit.add_argument("--json", metavar="FILE",
                       help="write the audits to this one file as JSON Lines: one line per photo audited, each the "
                            "photo's whole audit (one photo: one line, itself a JSON document)")
    audit.add_argument("--out-dir", metavar="DIR",
                       help="write each photo's audit to a JSON file of its own in DIR, named after the photo "
                            "(a.jpg: DIR/a.json; a later photo of a name already used: DIR/a-2.json)")
    add_denoised_options(audit)
    walks = walk_options(audit)
    walks.add_argument("--steps", type=int, help="walks: DDIM steps over the whole schedule")
    walks.add_argument("--guidance-scale", type=finite_float, help="walks: DDIM stage")
    audit.set_defaults(run=run, uses_committed_models=always)


def out_dir_paths(directory: str | None, images: list[str]) -> list[str | None]:
    """Where ``--out-dir`` writes each photo's audit: ``DIR/<photo stem>.json``, a later photo
    of a stem already used getting ``-2``, ``-3``, ... (a/face.jpg and b/face.png are two
    photos), so that no audit overwrites another."""
    if not directory:
        return [None] * len(images)
    used, paths = set(), []
    for image in images:
        base, count = Path(image).stem, 1
        name = base
        while name in used:
            count += 1
            name = f"{base}-{count}"
        used.add(name)
        paths.append(str(Path(directory) / f"{name}.json"))
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


def _audit_one(args: argparse.Namespace, image: str, name: str, settings, loaded, instruments: dict,
               black_box) -> dict:
    """Audit one photo, print what the app shows in words, and return its JSON record."""
    from recourse.audit.edit_path import divergence_sentence
    from recourse.audit.pipeline import audit_image
    from recourse.audit.verdict import sizes_withheld
    from recourse.render.audit_html import audit_record
    from recourse.render.text import audit_line

    teacher, student, generator = loaded
    before = (black_box.forward_passes, black_box.estimates) if black_box is not None else None
    result = audit_image(Path(image), variant=name, attribute=args.attribute, target=args.target, settings=settings,
                         teacher=teacher, student=student, generator=generator, **instruments)
    if black_box is not None:
        print(black_box_line(name, black_box.forward_passes - before[0], black_box.estimates - before[1]))
    print(audit_line(result))
    print(result.verdict)
    compared = not sizes_withheld(result.recourse, result.face_logit)  # as the verdict says, as the app does
    for path in result.paths:  # the sentences the app shows under the two path plots
        print(divergence_sentence(path, result.predictions.variant, compared))
    return {"command": _command_line(args), "image": str(image), **audit_record(result)}


def _start_json_lines(path: str | None) -> None:
    """An empty ``--json`` file, so that what it holds after the call is this call's audits only."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("")


def _add_json_line(path: str | None, record: dict) -> None:
    """One photo's record appended as it is done: a long call that stops keeps the audits made."""
    if path:
        with open(path, "a") as file:
            file.write(json.dumps(record) + "\n")


def run(args: argparse.Namespace) -> int:
    from recourse.audit.instruments import shared_instruments
    from recourse.audit.paired import share_cores_between_paired_edits
    from recourse.locations import writable_folder

    if args.out_dir:
        writable_folder(args.out_dir)  # before any model loads, as main checks --json
    share_cores_between_paired_edits()
    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)  # committed, or an auditor's own by their cards
    loaded = _loaded_pair(args, name, teacher, student)
    instruments = shared_instruments(loaded[0])  # resolved once, for every photo
    _start_json_lines(args.json)
    several, failed, written = len(args.images) > 1, [], 0
    for number, (image, own_file) in enumerate(zip(args.images, out_dir_paths(args.out_dir, args.images)), 1):
        if several:
            print(f"[{number}/{len(args.images)}] {image}")
        try:
            record = _audit_one(args, image, name, settings, loaded, instruments, black_box)
        except expected_errors() as error:
            if not several:
                raise  # one photo: said by main, as any command's error
            said = str(error) if Path(image).name in str(error) else f"{image}: {error}"
            print(f"error: {said}", file=sys.stderr)
            failed.append(image)
            continue
        _add_json_line(args.json, record)
        written += 1
        _write_json(own_file, record)
        if own_file:
            print(f"wrote {own_file}")
    if args.json:
        print(f"wrote {args.json}: {written} audit{'s' if written != 1 else ''}, one JSON line each")
    if failed:
        print(f"error: {len(failed)} of {len(args.images)} photos not audited: {', '.join(failed)}", file=sys.stderr)
        return 2
    return 0
