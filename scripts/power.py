"""How many benchmark tasks a claim needs: N at the stated power (default 80%) for paired
proportions (VD, false acceptance: McNemar, Connor 1987) and for paired means (CRG,
DirSim, |Δlogit|: paired t), two-sided, at α divided by the size of the family of claims
(the Holm bound of the smallest p, so a claim that clears it survives the correction).

    python -m scripts.power                       # the effects issue 26 quotes
    python -m scripts.power --family-size 50 \\
        --proportion "cfq-qat − no-recourse, FA¾" 9.6 16.7 0.42 \\
        --mean "cfq-qat − ptq-int4, DirSim" 1.0 6.0 0.95 \\
        --from-interval "cfq-qat − no-recourse, |Δlogit|" -0.26 -0.31 -0.21 180 1.0

A proportion is ``LABEL RATE_A RATE_B SHARE [DISCORDANCE]`` in percent, SHARE the fraction
of tasks in its denominator (S for VD; the partial edits the teacher still rejects for FA),
DISCORDANCE the percent of those where the two models differ (default: as if their errors
were independent, which over-states it for two models of one teacher: conservative). A mean
is ``LABEL DIFFERENCE SD SHARE``, SD the per-task sd of the paired differences (B for CRG and
DirSim); ``--from-interval LABEL DIFFERENCE LOW HIGH N SHARE`` infers that sd from a recorded
95% interval resting on N·SHARE tasks. Tasks needed = units needed / SHARE.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from recourse.benchmark.statistics import (
    independent_discordance, normal_quantile, pairs_for_mean_difference, pairs_for_paired_proportions,
)


@dataclass(frozen=True)
class Needed:
    """What one claim needs: units (pairs of the metric's denominator) and tasks."""

    label: str
    kind: str  # "proportion" or "mean"
    effect: float  # the difference to detect, in the metric's units
    assumption: str  # discordance or sd used
    units: int
    tasks: int


# The effects the review in issue 26 quotes (first run, assets/archive/benchmark.json): FA¾ rests on
# the ~76 of 180 partial edits the teacher still rejects; S was all 180 tasks at margin 2.
DEFAULT_PROPORTIONS = (
    ("cfq-qat − cfq-qat-norecourse, FA¾", 9.6, 16.7, 76 / 180, None),
    ("cfq-qat − cfq-qat-norecourse, VD", 1.1, 2.0, 1.0, None),
    ("fp32-noise − ptq-int4, VD", 5.6, 5.0, 1.0, None),
)
DEFAULT_INTERVALS = (("cfq-qat − cfq-qat-norecourse, |Δlogit|", -0.26, -0.31, -0.21, 180, 1.0),)


def proportion(label: str, rate_a: float, rate_b: float, share: float, discordance: float | None,
               alpha: float, power: float) -> Needed:
    """Rates and discordance in percent."""
    first, second = rate_a / 100, rate_b / 100
    psi = independent_discordance(first, second) if discordance is None else discordance / 100
    units = pairs_for_paired_proportions(first - second, psi, alpha, power)
    note = f"discordance {100 * psi:.1f}%" + (" (independent errors)" if discordance is None else "")
    return Needed(label, "proportion", rate_a - rate_b, note, units, math.ceil(units / share))


def mean(label: str, difference: float, sd: float, share: float, alpha: float, power: float,
         note: str = "") -> Needed:
    units = pairs_for_mean_difference(difference, sd, alpha, power)
    return Needed(label, "mean", difference, note or f"sd {sd:.3g}", units, math.ceil(units / share))


def from_interval(label: str, difference: float, low: float, high: float, n: int, share: float, alpha: float,
                  power: float) -> Needed:
    """The per-unit sd a 95% interval implies, ``(high − low) / (2 · 1.96) · √(n · share)``."""
    sd = (high - low) / (2 * normal_quantile(0.975)) * math.sqrt(n * share)
    return mean(label, difference, sd, share, alpha, power, f"sd {sd:.3g} from [{low:g}, {high:g}] on {n * share:.0f}")


def _values(raw: list[str], count: int, option: str) -> tuple[str, list[float]]:
    allowed = count if isinstance(count, tuple) else (count,)
    if len(raw) not in allowed:
        expected = " or ".join(str(n) for n in allowed)
        raise SystemExit(f"{option} takes {expected} values, got {len(raw)}: {' '.join(raw)}")
    try:
        return raw[0], [float(v) for v in raw[1:]]
    except ValueError as error:
        raise SystemExit(f"{option}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alpha", type=float, default=0.05, help="two-sided level of one claim before correction")
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--family-size", type=int, default=1,
                        help="claims in the corrected family: each is tested at alpha / this (Holm's first step)")
    parser.add_argument("--proportion", nargs="+", action="append", default=[],
                        metavar="LABEL RATE_A RATE_B SHARE [DISCORDANCE]")
    parser.add_argument("--mean", nargs=4, action="append", default=[], metavar=("LABEL", "DIFFERENCE", "SD", "SHARE"))
    parser.add_argument("--from-interval", nargs=6, action="append", default=[],
                        metavar=("LABEL", "DIFFERENCE", "LOW", "HIGH", "N", "SHARE"))
    parser.add_argument("--json", help="write the table here")
    args = parser.parse_args(argv)
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
        command = "python -m scripts.power " + shlex.join(sys.argv[1:] if argv is None else argv)
        Path(args.json).write_text(json.dumps({"command": command, "alpha": args.alpha, "family_size": args.family_size,
                                               "power": args.power, "claims": [asdict(r) for r in rows]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
