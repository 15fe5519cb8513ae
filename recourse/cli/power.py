"""``recourse power``: how many benchmark tasks a claim needs at the stated power
(:mod:`recourse.benchmark.power`)."""

from __future__ import annotations

import argparse


def register(commands) -> None:
    power = commands.add_parser(
        "power", help="how many benchmark tasks a claim needs at the stated power",
        description="How many benchmark tasks a claim needs: N at the stated power for paired proportions (McNemar) "
                    "and paired means (paired t), two-sided, at alpha divided by the size of the family of claims. "
                    "Without a claim: the effects the first run's review quotes.")
    power.add_argument("--alpha", type=float, default=0.05, help="two-sided level of one claim before correction")
    power.add_argument("--power", type=float, default=0.8)
    power.add_argument("--family-size", type=int, default=1,
                       help="claims in the corrected family: each is tested at alpha / this (Holm's first step)")
    power.add_argument("--proportion", nargs="+", action="append", default=[],
                       metavar="LABEL RATE_A RATE_B SHARE [DISCORDANCE]")
    power.add_argument("--mean", nargs=4, action="append", default=[], metavar=("LABEL", "DIFFERENCE", "SD", "SHARE"))
    power.add_argument("--from-interval", nargs=6, action="append", default=[],
                       metavar=("LABEL", "DIFFERENCE", "LOW", "HIGH", "N", "SHARE"))
    power.add_argument("--json", help="write the table here")
    power.set_defaults(run=run)


def _values(raw: list[str], count: int | tuple[int, ...], option: str) -> tuple[str, list[float]]:
    allowed = count if isinstance(count, tuple) else (count,)
    if len(raw) not in allowed:
        expected = " or ".join(str(n) for n in allowed)
        raise SystemExit(f"{option} takes {expected} values, got {len(raw)}: {' '.join(raw)}")
    try:
        return raw[0], [float(v) for v in raw[1:]]
    except ValueError as error:
        raise SystemExit(f"{option}: {error}") from None


def run(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict
    from pathlib import Path

    from recourse.benchmark.power import DEFAULT_INTERVALS, DEFAULT_PROPORTIONS, Needed, from_interval, mean, proportion
    from recourse.cli.common import _command_line

    if args.family_size < 1 or not 0 < args.alpha < 1 or not 0 < args.power < 1:
        raise SystemExit("need --family-size >= 1 and --alpha, --power in (0, 1)")
    alpha = args.alpha / args.family_size
    rows: list[Needed] = []
    given = args.proportion or args.mean or args.from_interval
    for raw in args.proportion:
        label, numbers = _values(raw, (4, 5), "--proportion")
        rows.append(proportion(label, numbers[0], numbers[1], numbers[2], numbers[3] if len(numbers) > 3 else None,
                               alpha, args.power))
    for raw in args.mean:
        label, (difference, sd, share) = _values(raw, 4, "--mean")
        rows.append(mean(label, difference, sd, share, alpha, args.power))
    for raw in args.from_interval:
        label, (difference, low, high, n, share) = _values(raw, 6, "--from-interval")
        rows.append(from_interval(label, difference, low, high, int(n), share, alpha, args.power))
    if not given:
        rows += [proportion(*claim, alpha, args.power) for claim in DEFAULT_PROPORTIONS]
        rows += [from_interval(*claim, alpha, args.power) for claim in DEFAULT_INTERVALS]
    print(f"two-sided α {args.alpha:g}" + (f" / {args.family_size} claims = {alpha:.3g}" if args.family_size > 1 else "")
          + f", power {args.power:.0%}")
    print("| claim | kind | effect | assumption | units needed | tasks needed |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.label} | {row.kind} | {row.effect:+.3g} | {row.assumption} | {row.units:,} | {row.tasks:,} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": _command_line(args), "alpha": args.alpha,
                                               "family_size": args.family_size, "power": args.power,
                                               "claims": [asdict(r) for r in rows]}, indent=2) + "\n")
    return 0
