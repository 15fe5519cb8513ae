"""A blind rating page: N random pairs, shuffled and unlabelled, as one HTML file with its hidden key.

N random pairs (original and counterfactual, order shuffled, attribute named, model and
numbers hidden) as one self-contained HTML file, and its hidden key beside it.

    python -m scripts.figures.export_pairs --data ../shared/data/celeba-hq-64 --n 60 --out out/rating/pairs.npz
    python -m scripts.figures.rating_page out/rating/pairs.npz --n 40 --out out/rating/page.html --key out/rating/key.json
    python -m scripts.measurements.score_ratings ratings-<page id>.json --key out/rating/key.json

Any generator can be rated: the pairs file is what ``recourse.instruments.rating.save_pairs``
writes (originals, counterfactuals, attributes, targets). The page shows dataset faces: keep it
and its pairs file out of git (``out/`` is ignored).

``scripts.figures.blind_rating`` does both steps in one command, for several methods on one page and
other generators' pairs mixed in, and writes the set outside the repository.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recourse.instruments.rating import load_pairs, rating_page


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", help="an .npz written by recourse.instruments.rating.save_pairs")
    parser.add_argument("--n", type=int, default=40, help="tasks on the page")
    parser.add_argument("--seed", type=int, default=0, help="which pairs, and each pair's order")
    parser.add_argument("--out", default="out/rating/page.html")
    parser.add_argument("--key", default="out/rating/key.json", help="the hidden key: never give it to a rater")
    args = parser.parse_args(argv)
    page = rating_page(load_pairs(args.pairs), args.n, args.seed, source=str(args.pairs))
    out, key = Path(args.out), Path(args.key)
    if out.resolve() == key.resolve():
        parser.error("--out and --key must be different files")
    for path in (out, key):
        path.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page.html, encoding="utf-8")
    key.write_text(json.dumps(page.key, indent=1) + "\n")
    print(f"page {page.key['page_id']}: {args.n} tasks in {out} ({out.stat().st_size / 1e6:.1f} MB); key in {key}")


if __name__ == "__main__":
    main()
