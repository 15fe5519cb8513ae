"""A quick look at one counterfactual method on validation faces, to choose its settings.

For ``--n`` validation faces and each attribute: the classifier's FR, the oracle's FR on the
faces where it agreed before, the oracle's MNAC, identity (FVA, FS), mean cost, and DirSim / CRG of the
classifier against a compressed variant (and a second full-precision classifier when given),
with a picture strip per attribute (original | full precision | variant) written to
``--sheets``. Validation only: settings are never chosen on the test split. ``--judges`` adds
both judges' FR (real flips) and the median L2 size of the edit; by default neither judge is
loaded, and a choice that looked at them says so in its record.

    python -m scripts.figures.method_preview --data ../shared/data/celeba-hq-64 --method denoised --n 16 \\
        --set sigma=0.25 edit_steps=24 --sheets out/preview
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

import torch

from recourse.audit.paired import Student, flip_targets, paired_recourse
from recourse.checkpoints import load_classifier
from recourse.cli import on_off
from recourse.data import attribute_index, load_split, to_float_images
from recourse.generation import CounterfactualConfig, default_generator, load_generator
from recourse.instruments.identity import face_descriptor, identity_result
from recourse.locations import judge_dir, oracle_dir, strong_judge_dir
from recourse.metrics import decisions, mean_number_of_attributes_changed
from recourse.models import load_student, load_teacher
from recourse.render.pictures import labelled_strip, to_pil

ATTRIBUTES = ("Smiling", "Young", "Male", "Eyeglasses")


def parse_settings(pairs: list[str]) -> dict:
    types = {f.name: f.type for f in fields(CounterfactualConfig)}
    values = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        kind = types[name] if isinstance(types[name], type) else eval(types[name])  # noqa: S307 (our own annotations)
        values[name] = on_off(value) if kind is bool else kind(value)  # bool("off") would be True
    return values


def real_flip_rate(judge, images, counterfactuals, index, targets) -> tuple[float | None, int]:
    with torch.no_grad():
        before = decisions(judge(images)[:, index])
        after = decisions(judge(counterfactuals)[:, index])
    counted = before != targets
    if not bool(counted.any()):
        return None, 0
    return round(100 * float((after[counted] == targets[counted]).float().mean()), 1), int(counted.sum())


def oracle_mnac(oracle, images, counterfactuals, index) -> float:
    """MNAC as the quality evaluation reads it: the oracle's other decisions that changed."""
    with torch.no_grad():
        before, after = decisions(oracle(images)), decisions(oracle(counterfactuals))
    return round(mean_number_of_attributes_changed(before, after, index), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--method", default="denoised")
    parser.add_argument("--generator", help="generator folder (default: the committed one)")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--first", type=int, default=0, help="first validation face")
    parser.add_argument("--variant", default="ptq-int4")
    parser.add_argument("--second", help="a second full-precision classifier folder (the two-model floor)")
    parser.add_argument("--attributes", nargs="+", default=list(ATTRIBUTES))
    parser.add_argument("--margin", type=float, default=0.0)
    parser.add_argument("--set", nargs="*", default=[], help="config fields, name=value")
    parser.add_argument("--sheets", help="folder for the picture strips")
    parser.add_argument("--json")
    parser.add_argument("--judges", action="store_true", help="also read both judges' FR (say so when choosing)")
    parser.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = replace(CounterfactualConfig(), method=args.method, margin=args.margin, **parse_settings(args.set))
    images = to_float_images(load_split(args.data, "val", 64, cache_dir=".cache").images[args.first:args.first + args.n])
    teacher, oracle = load_teacher().eval(), load_classifier(oracle_dir()).eval()
    judges = ({"judge_fr": load_classifier(judge_dir()).eval(), "strong_judge_fr": load_classifier(strong_judge_dir()).eval()}
              if args.judges else {})
    describe = face_descriptor()
    original_descriptors = describe(images)  # the same faces for every attribute
    generator = load_generator(args.generator) if args.generator else default_generator()
    students = {args.variant: load_student(args.variant)}
    if args.second:
        second = load_classifier(args.second).eval()
        students["second-fp"] = Student("second-fp", second, second)
    report = {"settings": {k: v for k, v in vars(config).items()}, "n": len(images), "first": args.first,
              "judges_read": args.judges, "attributes": {}}
    for attribute in args.attributes:
        index = attribute_index(attribute)
        targets = flip_targets(teacher, images, attribute)
        seeds = tuple(range(args.first, args.first + len(images)))
        row, strips = {}, {}
        for name, student in students.items():
            started = time.perf_counter()
            paired = paired_recourse(images, attribute, targets, teacher, student, config, generator, seeds)
            seconds = (time.perf_counter() - started) / (2 * len(images))
            per_image = [paired.columns.image(i) for i in range(len(images))]
            dirsims = [p.dirsim for p in per_image if p.dirsim is not None]
            crgs = [p.crg for p in per_image if p.crg is not None]
            row[name] = {"dirsim_median": round(statistics.median(dirsims), 1) if dirsims else None,
                         "crg_median": round(statistics.median(crgs), 3) if crgs else None,
                         "student_valid": round(100 * float(paired.student.valid.float().mean()), 1),
                         "seconds_per_cf": round(seconds, 2)}
            strips[name] = paired.student.counterfactuals
            teacher_result = paired.teacher
        cfs = teacher_result.images
        row["teacher"] = {
            "fr": round(100 * float(teacher_result.valid.float().mean()), 1),
            "oracle_fr": real_flip_rate(oracle, images, cfs, index, targets),
            **{k: v for k, v in asdict(identity_result(original_descriptors, describe(cfs))).items() if k in ("fva", "fs")},
            "mnac": oracle_mnac(oracle, images, cfs, index),
            "cost": round(float(teacher_result.cost.mean()), 4),
            "median_l2": round(statistics.median((cfs - images).flatten(1).norm(dim=1).tolist()), 2),
            **{name: real_flip_rate(judge, images, cfs, index, targets) for name, judge in judges.items()}}
        report["attributes"][attribute] = row
        print(attribute, json.dumps(row), flush=True)
        if args.sheets:
            Path(args.sheets).mkdir(parents=True, exist_ok=True)
            rows = [labelled_strip([("x", to_pil(images[i]).resize((128, 128))),
                                    ("x'_f", to_pil(cfs[i]).resize((128, 128)))]
                                   + [(name, to_pil(s[i]).resize((128, 128))) for name, s in strips.items()],
                                   legend=False) for i in range(min(8, len(images)))]
            width, height = rows[0].width, sum(r.height for r in rows)
            from PIL import Image
            sheet = Image.new("RGB", (width, height), "white")
            y = 0
            for r in rows:
                sheet.paste(r, (0, y))
                y += r.height
            sheet.save(Path(args.sheets) / f"{attribute}.png")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
