"""Is a new face denoiser adopted? The rule of issue 36 (point 5), applied to measured files.

    python -m scripts.measurements.denoiser_candidates --today GATE VISIBLE_STOP \\
        --candidate NAME GATE [VISIBLE_STOP] ... --json assets/results/denoiser-candidates-val.json

A candidate is adopted only if it beats today's denoiser on the gate (PSNR at every σ the gate
measures) *and* on the independent judges' shift at equal identity: at each identity floor
(FVA ≥ 100% and ≥ 97%, the issue's target), the largest mean shift among the stops of the
same validation edits whose FVA reaches the floor. GATE files are ``denoiser_gate``'s,
VISIBLE_STOP files ``visible_stop``'s (the same faces, ``--local-regions``); a candidate that
fails the gate needs no judges' run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

IDENTITY_FLOORS = (100.0, 97.0)


def shift_at_identity(summary: list[dict], fva_floor: float) -> float | None:
    """The largest mean judges' shift among the stops whose FVA reaches ``fva_floor``."""
    shifts = [row["shift"] for row in summary if row["shift"] is not None and row["fva"] >= fva_floor]
    return max(shifts) if shifts else None


def gate_margins(today: dict, candidate: dict) -> dict[str, float]:
    """The candidate's PSNR minus today's at each σ of the gate (dB)."""
    return {sigma: round(candidate["psnr_db"][sigma]["face denoiser"] - row["face denoiser"], 3)
            for sigma, row in today["psnr_db"].items()}


def verdict(today_gate: dict, today_stops: dict, gate: dict, stops: dict | None) -> dict:
    """The rule, with every number it read."""
    margins = gate_margins(today_gate, gate)
    beats_gate = gate["passed"] and all(m > 0 for m in margins.values())
    judged = None
    if stops is not None:
        judged = {f"fva>={floor:g}": {"today": shift_at_identity(today_stops["summary"], floor),
                                      "candidate": shift_at_identity(stops["summary"], floor)}
                  for floor in IDENTITY_FLOORS}
    beats_judges = judged is not None and all(
        v["candidate"] is not None and (v["today"] is None or v["candidate"] > v["today"]) for v in judged.values())
    return {"gate_psnr_gain_db": margins, "beats_gate": beats_gate, "shift_at_identity": judged,
            "beats_judges": beats_judges, "adopted": beats_gate and beats_judges}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--today", nargs=2, metavar=("GATE", "VISIBLE_STOP"), required=True)
    parser.add_argument("--candidate", nargs="+", action="append", default=[],
                        metavar="NAME GATE [VISIBLE_STOP]", help="a candidate's name, gate file and judges' file")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    read = lambda path: json.loads(Path(path).read_text())  # noqa: E731
    today_gate, today_stops = read(args.today[0]), read(args.today[1])
    candidates = []
    for entry in args.candidate:
        if len(entry) not in (2, 3):
            parser.error(f"--candidate takes NAME GATE [VISIBLE_STOP], got {' '.join(entry)}")
        gate, stops = read(entry[1]), read(entry[2]) if len(entry) == 3 else None
        found = verdict(today_gate, today_stops, gate, stops)
        candidates.append({"name": entry[0], "gate": gate, "visible_stop_summary": stops and stops["summary"],
                           "visible_stop_command": stops and stops["command"], **found})
        print(f"{entry[0]}: gate gain {found['gate_psnr_gain_db']} dB, beats the gate: {found['beats_gate']}; "
              f"shift at equal identity {found['shift_at_identity']}; adopted: {found['adopted']}")
    output = {"command": "python -m scripts.measurements.denoiser_candidates " + shlex.join(sys.argv[1:] if argv is None else argv),
              "date": datetime.date.today().isoformat(),
              "rule": "adopted only if it beats today's on the gate (PSNR at every sigma) and on the judges' shift at "
                      "equal identity (the largest mean shift among stops whose FVA reaches 100% and 97%)",
              "today": {"gate": today_gate, "visible_stop_summary": today_stops["summary"],
                        "visible_stop_command": today_stops["command"]},
              "candidates": candidates}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
