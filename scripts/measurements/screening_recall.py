"""How well the scan's cheap screening finds the faces a full audit ranks worst.

    OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 -m scripts.measurements.screening_recall \\
        --data ../shared/data/celeba-hq-64 --faces 500 --variant ptq-int4 --attribute Smiling \\
        --out out/screening-recall --json assets/results/screening-recall.json

Every one of ``--faces`` test faces is screened and given a full audit (``recourse scan`` with
``--top`` equal to the count: the exhaustive ranking), kept under ``--out`` so that a killed
run resumes. The recall at ``k`` is what a scan that fully audits only the screening's ``k``
most suspicious faces finds of the exhaustive ranking's worst ``--worst`` (20): the share of
those that its own worst 20 hold. Also printed: photos per minute screened and fully audited
(wall time of this run's own work over all its processes), and the hours a scan of 100,000
photos would take on 1, 4 and 16 machines like this one, from those rates.

``--reseed K`` measures what any screening can reach: the exhaustive ranking's worst ``K`` are
audited again with the next generation seed (kept under ``--out``/reseed), every other face
keeps its value, and the share of the worst 20 still among the worst 20 is the full audit's own
recall under a new seed. It is an upper bound: only the faces that were worst may move, so the
others cannot rise past them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from recourse.audit.result import product_settings
from recourse.audit.scan_run import ScanPlan, rank_records, run_scan
from recourse.audit.screening import ScreenRow, shortlist

KS = (20, 50, 100, 200)
MACHINES = (1, 4, 16)
LARGE_SCAN = 100_000


def recall_at(records: list[dict], rows: list, k: int, worst: int) -> float:
    """Share of the exhaustive ranking's ``worst`` faces that a scan auditing only the
    screening's ``k`` most suspicious ranks among its own ``worst``."""
    truth = {record["file"] for record in rank_records(records)[:worst]}
    chosen = {row.file for row in shortlist(rows, k)}
    found = [record for record in records if record["file"] in chosen]
    return len(truth & {record["file"] for record in rank_records(found)[:worst]}) / len(truth)


def kept(out: Path) -> tuple[list[dict], list[ScreenRow]]:
    """The full audits kept so far under ``out`` and the screening of the same faces: a run cut
    short is measured on the faces it fully audited (every one of them screened too)."""
    audits = [json.loads(path.read_text())["record"] for path in sorted((out / "audits").glob("*.json"))]
    rows = [ScreenRow(**row) for path in sorted((out / "screen").glob("shard-*.json"))
            for row in json.loads(path.read_text())["rows"]]
    audited = {record["file"] for record in audits}
    return audits, [row for row in rows if row.file in audited]


def reseeded_recall(args, records: list[dict], count: int) -> dict:
    """The exhaustive ranking's own recall of its worst ``args.worst`` when its worst ``count``
    are audited again with the next seed (see the module's note)."""
    import dataclasses

    from recourse import models
    from recourse.audit.instruments import model_resolution
    from recourse.audit.scan import scan_images
    from recourse.audit.scan_run import audit_record, framer
    from recourse.data import to_float_images

    base = product_settings()
    settings = dataclasses.replace(base, counterfactual=dataclasses.replace(
        base.counterfactual, seed=base.counterfactual.seed + 1))
    plan = ScanPlan(Path(args.data), args.variant, args.attribute, settings, split="test")
    teacher, student, generator = models.load_teacher(), models.load_student(args.variant), models.load_generator()
    frame = framer(plan, model_resolution(teacher))
    ranked = rank_records(records)
    again = {}
    for record in ranked[:count]:
        path = Path(args.out) / "reseed" / f"{record['file']}.json"
        if not path.is_file():
            image = to_float_images(frame(record["file"]))
            *_, (_, _, cases) = scan_images((record["file"],), [image], args.variant, args.attribute, settings,
                                            teacher=teacher, student=student, generator=generator, judge=None)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(audit_record(cases[0])))
        again[record["file"]] = json.loads(path.read_text())
    mixed = [again.get(record["file"], record) for record in records]
    worst = {record["file"] for record in ranked[:args.worst]}
    kept = worst & {record["file"] for record in rank_records(mixed)[:args.worst]}
    return {"reseeded": count, "seed": settings.counterfactual.seed, "own_recall_upper_bound": len(kept) / len(worst),
            "rejections_seed0": sum(1 for r in ranked[:count] if r["divergence"] is not None and r["divergence"] >= 1),
            "rejections_reseeded": sum(1 for r in again.values() if r["divergence"] is not None and r["divergence"] >= 1)}


def hours(photos: int, audited: int, screen_per_min: float, audit_per_min: float, machines: int) -> float:
    return (photos / screen_per_min + audited / audit_per_min) / 60 / machines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a CelebA-HQ folder (its test split is used)")
    parser.add_argument("--faces", type=int, default=500)
    parser.add_argument("--variant", default="ptq-int4")
    parser.add_argument("--attribute", default="Smiling")
    parser.add_argument("--worst", type=int, default=20)
    parser.add_argument("--out", required=True, help="kept shards and audits (resumable)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--reseed", type=int, default=0,
                        help="audit the exhaustive ranking's worst K again with the next seed (the full audit's own recall)")
    parser.add_argument("--from-kept", action="store_true",
                        help="run nothing: measure the recall on the faces --out holds full audits of so far")
    args = parser.parse_args(argv)
    if args.from_kept:
        audits, rows = kept(Path(args.out))
        recalls = {k: recall_at(audits, rows, k, args.worst) for k in KS if k < len(rows)}
        print(f"{len(rows)} faces fully audited so far: recall of the worst {args.worst}: "
              + ", ".join(f"k={k}: {value:.2f}" for k, value in recalls.items()))
        ceiling = reseeded_recall(args, audits, args.reseed) if args.reseed else None
        if ceiling:
            print(f"the full audit's own recall of its worst {args.worst} under seed {ceiling['seed']} "
                  f"(its worst {args.reseed} audited again): at most {ceiling['own_recall_upper_bound']:.2f}; "
                  f"rejections among them {ceiling['rejections_seed0']} → {ceiling['rejections_reseeded']}")
        if args.json:
            Path(args.json).write_text(json.dumps({"faces": len(rows), "worst": args.worst, "recall_at_k": recalls,
                                                   "reseeded": ceiling, "variant": args.variant,
                                                   "attribute": args.attribute, "from_kept": str(args.out)},
                                                  indent=1) + "\n")
        return 0
    started = time.perf_counter()
    plan = ScanPlan(Path(args.data), args.variant, args.attribute, product_settings(), top=args.faces,
                    count=args.faces, split="test", shard_size=25, out=Path(args.out), measure_screening=True)
    result = run_scan(plan)
    if result is None:
        return 0
    screened = len(result.screened)
    rates = result.rates()  # from the work this run did itself: kept parts read back do not count
    screen_rate, audit_rate = rates["screening"], rates["audits"]
    recalls = {k: recall_at(result.audited, result.screened, k, args.worst) for k in KS if k <= screened}
    figures = {"command": "python -m scripts.measurements.screening_recall " + " ".join(argv if argv is not None else sys.argv[1:]),
               "faces": screened, "variant": args.variant, "attribute": args.attribute, "worst": args.worst,
               "processes": result.processes, "recall_at_k": recalls,
               "screening_photos_per_min": screen_rate, "audit_photos_per_min": audit_rate,
               "wall_s": round(time.perf_counter() - started, 1)}
    print(f"{screened} faces, {args.variant}, {args.attribute}: recall of the worst {args.worst} when only the "
          "screening's k most suspicious are fully audited: "
          + ", ".join(f"k={k}: {value:.2f}" for k, value in recalls.items()))
    if screen_rate and audit_rate:
        print(f"rates over {result.processes} process(es): screening {screen_rate:.0f} photos/min, full audits "
              f"{audit_rate:.2f} photos/min")
        estimates = {f"{machines} machine(s), top {k}": round(hours(LARGE_SCAN, k, screen_rate, audit_rate, machines), 2)
                     for machines in MACHINES for k in (100, 1000)}
        figures["hours_for_100000_photos"] = estimates
        for label, value in estimates.items():
            print(f"  {LARGE_SCAN:,} photos on {label}: {value:.2f} h")
    else:
        print("rates: this run read kept work back; time them on photos it has not kept (a fresh --out)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
