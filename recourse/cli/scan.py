"""``recourse scan``: rank a folder's faces by how far a variant's recourse departs from the
classifier's (the failure finder)."""

from __future__ import annotations

import argparse

from recourse.cli.common import (
    METHOD_HELP, NUMBERS_AT_HELP, PICTURE_MARGIN_HELP, _audited_pair, _command_line, _single_face_settings,
    _write_json, add_denoised_options, add_pair_options, always, black_box_line, finite_float, walk_options,
)
from recourse.names import COUNTERFACTUAL_METHODS, SPLITS


def register(commands) -> None:
    scan = commands.add_parser("scan", help="rank a folder's faces by how far a variant's recourse departs from "
                                            "the classifier's (the failure finder)")
    scan.add_argument("folder", help="a CelebA-HQ or original CelebA folder")
    add_pair_options(scan)
    scan.add_argument("--split", choices=SPLITS, default="test")
    scan.add_argument("--count", type=int, default=16, help="faces to rank (the first usable ones of the split)")
    scan.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    scan.add_argument("--margin", type=finite_float, help=PICTURE_MARGIN_HELP)
    scan.add_argument("--numbers-at", choices=("benchmark", "boundary"), default="benchmark", help=NUMBERS_AT_HELP)
    scan.add_argument("--seed", type=int)
    scan.add_argument("--json", help="write the ranking here")
    add_denoised_options(scan)
    walk_options(scan).add_argument("--finish-steps", type=int, help="walks: most editing steps (default 120)")
    scan.set_defaults(run=run, uses_committed_models=always)


def _table(cases) -> list[str]:
    lines = [f"{'rank':>4}  {'file':<16} {'target':>6}  {'divergence':<20} V_f(x'_f) V_g(x'_f) V_g(x'_g)  CRG_i  DirSim_i"]
    for rank, case in enumerate(cases, 1):
        r = case.recourse
        crg = f"{r.crg:.3f}" if r.crg is not None and case.compared else "-"
        dirsim = f"{r.dirsim:.1f}" if r.dirsim is not None and case.compared else "-"
        lines.append(f"{rank:>4}  {case.filename:<16} {case.target:>6}  {str(case.score_label):<20} "
                     f"{r.teacher_valid!s:<9} {r.student_accepts_teacher!s:<9} {r.student_valid!s:<9}  {crg:>5}  {dirsim:>8}")
    return lines


def _case_record(rank: int, c) -> dict:
    return {"rank": rank, "file": c.filename, "target": c.target, "divergence": c.divergence,
            "score": c.score_label, "face_logit": c.face_logit, **c.recourse.to_dict(),
            "judge": None if c.judge is None else {"on_face": c.judge.on_face,
                                                   "on_teacher_counterfactual": c.judge.on_teacher_counterfactual,
                                                   "on_student_counterfactual": c.judge.on_student_counterfactual}}


def run(args: argparse.Namespace) -> int:
    from recourse.audit import model_resolution
    from recourse.progress import stage_bars
    from recourse.paired import share_cores_between_paired_edits
    from recourse.scan import read_folder, scan_images

    share_cores_between_paired_edits()
    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)
    if teacher is None:
        from recourse import models

        teacher = models.load_teacher()
    names, images = read_folder(args.folder, args.split, args.count, model_resolution(teacher))
    bars = stage_bars("face")
    cases = []
    for done, total, cases in scan_images(names, images, name, args.attribute, settings, teacher=teacher,
                                          student=student):
        bars("scan", done, total)
    print(f"{len(cases)} faces of {args.folder} ({args.split}) ranked for {name}, {args.attribute}, margin "
          f"{settings.counterfactual.margin:g}, worst first:")
    print("\n".join(_table(cases)))
    if black_box is not None:
        print(black_box_line(name, black_box.forward_passes, black_box.estimates))
    _write_json(args.json, {
        "command": _command_line(args), "variant": name, "attribute": args.attribute, "split": args.split,
        "settings": settings.to_dict(),
        "black_box_forward_passes": None if black_box is None else black_box.forward_passes,
        "cases": [_case_record(rank, c) for rank, c in enumerate(cases, 1)]})
    if args.json:
        print(f"wrote {args.json}")
    return 0
