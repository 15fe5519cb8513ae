"""Score a filled-in rating page (the JSON its Export button saved) against the page's hidden key.

    python -m scripts.measurements.score_ratings ratings-<page id>.json [more.json ...] --key out/rating/key.json --json out/rating/scores.json

Per rater: how often the edit is seen in the right direction, whether the pair looks like one
person, and how often the altered face is spotted (see recourse.instruments.rating).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recourse.instruments.rating import score_ratings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ratings", nargs="+", help="exported ratings JSON files")
    parser.add_argument("--key", required=True)
    parser.add_argument("--json", help="write the scores here")
    args = parser.parse_args(argv)
    key = json.loads(Path(args.key).read_text())
    scores = []
    for path in args.ratings:
        score = score_ratings(json.loads(Path(path).read_text()), key)
        scores.append({"file": path, **score.to_dict()})
        print(f"{path} ({score.rater or 'no name'}): edit seen {score.seen}% (reversed {score.seen_reversed}%, "
              f"no difference {score.no_difference}%; {score.answered_more} of {score.n} answered), "
              f"same person {score.same_person}%, altered face spotted {score.altered_spotted}% "
              f"(original blamed {score.original_blamed}%, cannot tell {score.cannot_tell}%)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"key": args.key, "page_id": key["page_id"], "raters": scores},
                                              indent=1) + "\n")


if __name__ == "__main__":
    main()
