"""Score blind ratings of a photo rating set (``scripts.figures.photo_rating``) against its key.

    python -m scripts.measurements.score_photo_ratings ratings-1.json [ratings-2.json ...] \\
        --key ~/rating-sets/photos-1/key.json --json assets/results/blind-rating-photos.json

A ratings file is a JSON list with one object per item: ``{"item": 7, "edited": "A" | "B" |
"cannot tell", "changed": true | false, "same_person": true | false, "artifact": true | false}``
(and an optional ``"note"``). A large set may be split between raters: ``t.json+v.json`` reads
as one rating of the whole set, from raters who each rated a part (an item rated twice in it is
refused). An edit *convinces* when the rater saw the attribute changed the
asked way, the same person, and no artifact. Per method, per attribute and direction, and over
all: the convinced share with its Wilson 95% interval, and how often the rater found which
picture was edited (50% is chance: an edit nobody can find did little). The key, not the rater,
says which method made which edit.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from recourse.benchmark.statistics import wilson_interval


def read_ratings(path: Path) -> dict[int, dict]:
    """The ratings of ``path``, or of ``a.json+b.json``'s parts joined (each item in one part only)."""
    first, *others = str(path).split("+")
    joined: dict[int, dict] = {}
    # a later part without a folder lies beside the first
    for part_path in [Path(first), *(Path(first).parent / part if Path(part).name == part else Path(part)
                                     for part in others)]:
        rows = json.loads(part_path.read_text())
        if not isinstance(rows, list) or not all(isinstance(row, dict) and isinstance(row.get("item"), int)
                                                 for row in rows):
            raise SystemExit(f"{part_path}: expected a JSON list of objects with an integer 'item'")
        twice = sorted({row["item"] for row in rows} & joined.keys())
        if twice:
            raise SystemExit(f"{path}: items {twice[:5]} are rated in more than one part")
        joined |= {row["item"]: row for row in rows}
    return joined


def convinced(rating: dict) -> bool:
    return rating.get("changed") is True and rating.get("same_person") is True and rating.get("artifact") is False


def summary(rows: list[tuple[dict, dict]]) -> dict:
    n = len(rows)
    good = sum(convinced(rating) for _, rating in rows)
    found = sum(rating.get("edited") == item["edited"] for item, rating in rows)
    interval = wilson_interval(good, n) if n else None
    return {"n": n, "convinced": good, "convinced_rate": round(good / n, 3) if n else None,
            "convinced_95": [round(interval.low, 3), round(interval.high, 3)] if interval else None,
            "edited_side_found": round(found / n, 3) if n else None,
            "changed": sum(rating.get("changed") is True for _, rating in rows),
            "same_person": sum(rating.get("same_person") is True for _, rating in rows),
            "artifact": sum(rating.get("artifact") is True for _, rating in rows)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ratings", nargs="+")
    parser.add_argument("--key", required=True)
    parser.add_argument("--json", help="write the scores here (no faces, no file names of dataset faces)")
    args = parser.parse_args(argv)
    key = {item["item"]: item for item in json.loads(Path(args.key).expanduser().read_text())}
    raters = []
    for path in args.ratings:
        ratings = read_ratings(Path(path))
        rated = [(key[number], rating) for number, rating in sorted(ratings.items()) if number in key]
        groups: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for item, rating in rated:
            photo = "test" if item["source"].startswith("test:") else "public-domain"
            direction = f"{item['attribute']} {'adding' if item['target'] else 'removing'}"
            # the targets are on the public-domain photos, per attribute and direction
            for group in ("all", direction, f"photos: {photo}", f"{photo}: {direction}"):
                groups[item["method"]][group].append((item, rating))
        scores = {method: {group: summary(rows) for group, rows in sorted(by_group.items())}
                  for method, by_group in sorted(groups.items())}
        raters.append({"file": Path(path).name, "items": len(rated), "of": len(key), "scores": scores})
        for method, by_group in scores.items():
            whole = by_group["all"]
            print(f"{Path(path).name} {method}: convinced {whole['convinced']}/{whole['n']} "
                  f"({whole['convinced_rate']:.0%}, 95% {whole['convinced_95']}); edited side found "
                  f"{whole['edited_side_found']:.0%}")
            for group, row in by_group.items():
                if group != "all":
                    print(f"    {group:32s} {row['convinced']}/{row['n']}  (changed {row['changed']}, same person "
                          f"{row['same_person']}, artifact {row['artifact']})")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"command": "python -m scripts.measurements.score_photo_ratings "
                                                          + " ".join(Path(p).name for p in args.ratings)
                                                          + " --key key.json",
                                               "raters": raters}, indent=1) + "\n")


if __name__ == "__main__":
    main()
