"""``recourse recompute-claims``: a benchmark run's statistics recomputed from its saved per-task
columns alone (:mod:`recourse.benchmark.recompute`) and compared with its record.

Checks the columns file's SHA-256 against the record's, re-runs every row's bootstrap, the
family rows' paired tests and TOST and the corrected family of claims, and says where anything
differs by more than the tolerance (exit 1), or that nothing does (exit 0).

    recourse recompute-claims out/bench/benchmark.json [--list] [--tolerance 1e-9]
"""

from __future__ import annotations

import argparse


def register(commands) -> None:
    command = commands.add_parser(
        "recompute-claims", help="recompute a benchmark run's statistics from its saved columns and compare",
        description="Recompute a benchmark run's paired tests, TOST and corrected claims from the per-task columns "
                    "it saved beside its record (no model, face or cache needed), and compare them with the record: "
                    "exit 1 where anything differs by more than the tolerance or the file's SHA-256 is not the "
                    "recorded one.")
    command.add_argument("benchmark", help="benchmark.json of a run that saved its columns")
    command.add_argument("--tolerance", type=float, default=1e-9,
                         help="largest difference (absolute, or relative to the larger value) read as equal")
    command.add_argument("--list", action="store_true", help="print every recomputed claim")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from recourse.benchmark.claims import CORRECTIONS, dropped_claims
    from recourse.benchmark.recompute import check_run
    from recourse.benchmark.settings import LEGACY_ANALYSIS

    if not args.tolerance >= 0:
        raise ValueError(f"--tolerance must be a number >= 0, got {args.tolerance}")
    try:
        result, again, problems = check_run(args.benchmark, args.tolerance)
    except OSError as error:  # a missing record or columns file: said in one line
        raise ValueError(f"cannot read {error.filename}: {error.strerror}") from None
    sizes = Counter(c.correction_family or "one family" for c in again.claims)
    print(f"{args.benchmark}: analysis {again.analysis}; {len(result.rows) - 1} student rows, {result.n} tasks, "
          f"columns {result.columns['file']}")
    print(f"{len(again.claims)} claims: " + ", ".join(
        f"{name} {count} ({CORRECTIONS.get(name, 'holm and bh').upper()})" for name, count in sizes.items()))
    dropped = Counter(d.rule for d in dropped_claims(list(again.families))) if again.analysis != LEGACY_ANALYSIS else {}
    if dropped:
        print("tests that are not claims: " + ", ".join(f"{rule} {count}" for rule, count in dropped.items()))
    if args.list:
        for c in again.claims:
            adjusted = c.p_bh if CORRECTIONS.get(c.correction_family) == "bh" else c.p_holm
            print(f"{c.correction_family or '-'}\t{c.kind}\t{c.family} − {c.reference}\t{c.group}\t{c.metric}\t"
                  f"{c.difference:+.6g} [{c.low:.6g}, {c.high:.6g}]\tp {c.p:.3g}\tadjusted {adjusted:.3g}\t"
                  f"{'holds' if c.holds() else '-'}")
    if problems:
        shown = problems[:50]
        print(f"{len(problems)} values differ from the record:", *shown, sep="\n  ")
        if len(problems) > len(shown):
            print(f"  … and {len(problems) - len(shown)} more")
        return 1
    print(f"every recomputed value agrees with the record within {args.tolerance:g}")
    return 0
