"""Command line: write docs/results/ from the files under assets/, or check that it is up to date."""

from __future__ import annotations

import argparse
import sys

from recourse.locations import project_root
from scripts.docs.results import pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/results/ from the result files under assets/.")
    parser.add_argument("--check", action="store_true", help="only check that docs/results/ is up to date")
    args = parser.parse_args(argv)
    folder = pages.DOCS.relative_to(project_root())
    if args.check:
        stale = pages.stale()
        for name in stale:
            what = "is out of date" if name in pages.PAGES else "is not a generated page"
            print(f"{folder / name} {what}: run {pages.COMMAND}", file=sys.stderr)
        return 1 if stale else 0
    for name in pages.write():
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
