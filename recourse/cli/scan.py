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
    scan.add_argument("folder", help="any folder of photos (searched recursively), or a CelebA-HQ or original "
                                     "CelebA folder (then --split applies)")
    add_pair_options(scan)
    scan.add_argument("--split", choices=SPLITS, default="test", help="a CelebA folder's split (default test)")
    scan.add_argument("--count", type=int, help="at most this many photos, in name order (default: every one)")
    scan.add_argument("--top", type=int, default=20,
                      help="photos given a full audit: the most suspicious of a quick screening of every photo "
                           "(default 20)")
    scan.add_argument("--shard-size", type=int, default=64, help="photos screened per kept shard (default 64)")
    scan.add_argument("--out", help="keep each shard and each full audit here as it is done; a scan given the "
                                    "same folder resumes where it stopped (and torchrun's processes share it)")
    scan.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    scan.add_argument("--margin", type=finite_float, help=PICTURE_MARGIN_HELP)
    scan.add_argument("--numbers-at", choices=("benchmark", "boundary"), default="benchmark", help=NUMBERS_AT_HELP)
    scan.add_argument("--seed", type=int)
    scan.add_argument("--json", help="write the ranking, every photo's screening and the skipped files here")
    add_denoised_options(scan)
    walk_options(scan).add_argument("--finish-steps", type=int, help="walks: most editing steps (default 120)")
    scan.set_defaults(run=run, uses_committed_models=always)


# plain column names; the symbols they stand for are in the glossary (docs/metrics.md)
COLUMNS = ("rank", "file", "target", "divergence", "original accepts its edit (V_f(x'_f))",
           "compressed accepts it (V_g(x'_f))", "compressed accepts its own (V_g(x'_g))", "size gap (CRG)",
           "direction agreement % (DirSim)")


def _table(records: list[dict]) -> list[str]:
    lines = [f"{'rank':>4}  {'file':<28} {'target':>6}  {'divergence':<20} {'orig ok':>7} {'accepts':>7} "
             f"{'own ok':>6}  {'size gap':>8}  {'direction %':>11}"]
    for rank, record in enumerate(records, 1):
        r = record["recourse"]
        crg = f"{r['crg']:.3f}" if r.get("crg") is not None and record["compared"] else "-"
        dirsim = f"{r['dirsim']:.1f}" if r.get("dirsim") is not None and record["compared"] else "-"
        lines.append(f"{rank:>4}  {record['file'][-28:]:<28} {record['target']:>6}  {str(record['score']):<20} "
                     f"{_yes(r['teacher_valid']):>7} {_yes(r['student_accepts_teacher']):>7} "
                     f"{_yes(r['student_valid']):>6}  {crg:>8}  {dirsim:>11}")
    return lines


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _rates(result) -> str:
    screened = len(result.screened) + len(result.skipped)
    per_minute = [f"screening {screened / result.seconds['screening'] * 60:.0f} photos/min"
                  if result.seconds["screening"] > 0 else "screening kept from an earlier run"]
    if result.audited and result.seconds["audits"] > 0:
        per_minute.append(f"full audits {len(result.audited) / result.seconds['audits'] * 60:.1f} photos/min")
    return f"{result.processes} process(es): " + ", ".join(per_minute)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from recourse.audit.paired import share_cores_between_paired_edits
    from recourse.audit.scan_run import ScanPlan, run_scan
    from recourse.progress import stage_bars

    if args.top < 1 or args.shard_size < 1 or (args.count is not None and args.count < 1):
        raise ValueError("--top, --shard-size and --count must be at least 1")
    if not Path(args.folder).is_dir():
        raise ValueError(f"{args.folder}: not a folder")
    share_cores_between_paired_edits()
    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)
    plan = ScanPlan(Path(args.folder), name, args.attribute, settings, top=args.top, count=args.count,
                    split=args.split, shard_size=args.shard_size, out=None if args.out is None else Path(args.out))
    result = run_scan(plan, stage_bars("photo"), teacher=teacher, student=student)
    if result is None:
        return 0  # another process of a torchrun: the first one reports
    print(f"{args.folder}: {result.summary()} for {name}, {args.attribute}, margin "
          f"{settings.counterfactual.margin:g}; {_rates(result)}")
    for item in result.skipped:
        print(f"  skipped {item.file}: {item.reason} ({item.detail})")
    print("Full audits, worst first:")
    print("\n".join(_table(result.audited)))
    if black_box is not None:
        print(black_box_line(name, black_box.forward_passes, black_box.estimates))
    _write_json(args.json, {"command": _command_line(args), "variant": name, "attribute": args.attribute,
                            "split": args.split, "settings": settings.to_dict(), "columns": COLUMNS,
                            "black_box_forward_passes": None if black_box is None else black_box.forward_passes,
                            **result.to_dict()})
    if args.json:
        print(f"wrote {args.json}")
    return 0
