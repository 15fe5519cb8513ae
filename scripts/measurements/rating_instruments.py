"""What the product's own instruments said about the edits a blind rating set showed to people.

    python -m scripts.measurements.rating_instruments assets/results/blind-rating-photos-11 \\
        --ratings ratings-t.json+ratings-v.json ratings-u.json+ratings-w.json \\
        --photos assets/rating-photos --methods region-space \\
        --json assets/results/blind-rating-photos-11/instruments.json

Each rated edit of ``--methods`` is made again from the set's key (the same photo, attribute,
target and settings give the same edit: ``scripts.figures.photo_rating.edit``), and read by the
instruments an audit shows beside it: the artifact check (``recourse.generation.spaces.artifacts``)
and dlib's "same person" (``recourse.instruments.identity``). Against each reading of the raters:
of the edits a rater called damaged, how many the check failed (what it catches); of those a
rater found clean, how many it passed; and the same for "same person". An instrument that
passes what people reject is the issue this measures.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import defaultdict
from pathlib import Path

import torch

from scripts.measurements.score_photo_ratings import read_ratings


def agreement(pairs: list[tuple[bool, bool]]) -> dict:
    """``pairs`` of (a person saw the fault, the instrument flagged it): how many faults the
    instrument flagged, and how many clean edits it let pass."""
    seen = [flagged for person, flagged in pairs if person]
    clean = [flagged for person, flagged in pairs if not person]
    return {"n": len(pairs), "people_saw": len(seen), "instrument_flagged_of_those": sum(seen),
            "people_found_clean": len(clean), "instrument_passed_of_those": len(clean) - sum(clean),
            "instrument_flagged": sum(flagged for _, flagged in pairs)}


def readings(items: list[dict], photos: Path) -> dict[int, dict]:
    """The instruments' readings of each item's edit, made again."""
    from recourse.audit.instruments import identity_view
    from recourse.checkpoints import load_classifier
    from recourse.generation import default_generator
    from recourse.generation.regions import face_landmarks
    from recourse.generation.spaces.artifacts import check_attribute_edit
    from recourse.instruments.identity import face_descriptor
    from recourse.locations import teacher_dir
    from scripts.figures.photo_rating import edit, faces

    classifier, generator, describe = load_classifier(teacher_dir()).eval(), default_generator(), face_descriptor()
    # each photo aligned as the rating set aligned it, and its landmarks read once for all its items
    sources = sorted({item["source"] for item in items})
    prepared = {face["source"]: face for face in faces([photos / source for source in sources], None, 0, 0)}
    points = {source: face_landmarks(face["x"][None])[0][0] for source, face in prepared.items()}
    found = {}
    for number, item in enumerate(items, start=1):
        face = prepared[item["source"]]
        picture = edit(face, item["attribute"], item["target"], item["method"], classifier, generator)
        check = check_attribute_edit(face["x"], picture, item["attribute"], points[item["source"]],
                                     generator.edit_spaces)
        identity = identity_view(describe, face["x"], picture, picture)
        found[item["item"]] = {"artifact_passed": check.passed, "reasons": list(check.reasons),
                               "dlib_same_person": identity.kept("teacher") if identity else None}
        print(f"{number}/{len(items)} item {item['item']} {item['attribute']} -> {item['target']}: artifact check "
              f"{'passed' if check.passed else 'failed ' + '; '.join(check.reasons)}, dlib same person "
              f"{found[item['item']]['dlib_same_person']}", flush=True)
    return found


def compare(key: list[dict], ratings: dict[int, dict], found: dict[int, dict]) -> dict:
    """One rating's agreement with the instruments, over all and per attribute."""
    groups: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for item in key:
        rating, reading = ratings.get(item["item"]), found.get(item["item"])
        if rating is None or reading is None:
            continue
        for group in ("all", item["attribute"]):
            groups[group]["artifact"].append((rating.get("artifact") is True, not reading["artifact_passed"]))
            if reading["dlib_same_person"] is not None:
                groups[group]["same_person"].append((rating.get("same_person") is False,
                                                     not reading["dlib_same_person"]))
    return {group: {what: agreement(pairs) for what, pairs in by.items()} for group, by in sorted(groups.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a rating set's folder: key.json and the ratings")
    parser.add_argument("--ratings", nargs="+", required=True, help="ratings files in the folder (a+b: one reading)")
    parser.add_argument("--photos", default="assets/rating-photos")
    parser.add_argument("--methods", nargs="+", default=["region-space"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    folder = Path(args.folder)
    whole_key = json.loads((folder / "key.json").read_text())
    key = [item for item in whole_key if item["method"] in args.methods]
    if not key:
        # a method labelled with the code version that made it (photo_rating --label) is not made again here
        raise SystemExit(f"no item of {', '.join(args.methods)} in {folder / 'key.json'}; its methods: "
                         f"{', '.join(sorted({item['method'] for item in whole_key}))}")
    if any(item["source"].startswith("test:") for item in key):
        raise SystemExit("the set holds test-split faces: this reads public-domain photos only")
    found = readings(key, Path(args.photos))
    output = {"command": "python -m scripts.measurements.rating_instruments "
                         + shlex.join(sys.argv[1:] if argv is None else argv),
              "methods": args.methods, "items": found, "readings": []}
    for name in args.ratings:
        compared = compare(key, read_ratings(folder / name), found)
        output["readings"].append({"ratings": name, "agreement": compared})
        for group, by in compared.items():
            for what, row in by.items():
                print(f"{name} {group:20s} {what:12s}: people saw {row['people_saw']:3d}, of those the instrument "
                      f"flagged {row['instrument_flagged_of_those']:3d}; people found {row['people_found_clean']:3d} "
                      f"fine, of those it passed {row['instrument_passed_of_those']:3d}")
    Path(args.json).write_text(json.dumps(output, indent=1) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
