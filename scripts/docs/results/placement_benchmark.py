"""The registered placement run (issue 54): does a compression method move recourse more than weight
noise that costs the same agreement, and more than retraining? The registration, committed before
the run; while the run goes on, how much of it is kept; once it is done, the registered claims and
every row placed in its matched-noise family and among the retrained seeds on DirSim, CRG and
newly-seen semantic validity, with the discordant counts. Drawn from the committed files only."""

from __future__ import annotations

import math
from collections.abc import Callable

REGISTRATION = "benchmark-placement.json"
RUN_FOLDER = "benchmark-placement-run"  # under assets/results/: the run's record and columns once written
RUN = f"{RUN_FOLDER}/benchmark.json"
SEGMENTS = f"{RUN_FOLDER}/segments.json"  # its launches, from the segments log by recourse run-segments
PARTS = "assets/results/benchmark-placement-parts"  # the kept parts, committed as the run goes on
SEGMENTS_LOG = "assets/results/benchmark-placement-segments.log"
ROWS = ("ptq-int8", "ptq-int4", "gptq", "cf-ptq", "cfq-qat", "mixedprec-qat", "kd-quant", "prune-quant", "gptq-int2",
        "cfq-qat-b2", "mixedprec-qat-b2")
SEED_FOLDERS = ("checkpoints/classifier-seed1", "checkpoints/classifier-seed2", "checkpoints/classifier-seed3")
RUN_COMMAND = (
    "OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 -m recourse benchmark --data ../shared/data/celeba-hq-64 "
    "--split test --first-task 820 --tasks 80 --attributes Smiling Young Male Mouth_Slightly_Open --margin 2 "
    f"--variants {' '.join(ROWS)} --noise-draws 10 --matched-noise {' '.join(ROWS)} fp32-ref-classifier-seed1 "
    f"--rerun-floor --reference-models {' '.join(SEED_FOLDERS)} --placement-family assets/results/{REGISTRATION} "
    f"--keep-dir {PARTS} --out out/bench-placement")
# The run spans sessions while main moves on (issue 50 changes the default edit): every part is made by
# the code of this commit, which scripts/chores/placement_run.sh checks out beside the repository.
CODE_COMMIT = "3f9912d17962996c4c3bd7af3696917252205da7"
RECOMPUTE = f"python -m recourse recompute-claims assets/results/{RUN}"
METRIC_NAMES = {"dirsim": "DirSim %", "crg": "CRG", "newly_seen": "newly seen %"}

Loader = Callable[[str], "dict | None"]


def expected_parts(record: dict) -> int:
    """The student parts the registered run keeps: (rows + seeds + the re-run + every noise draw) × chunks."""
    run = record["run"]
    families = len(run["rows"]) + 1  # each row's, and the seeds' one
    models = len(run["rows"]) + 3 + 1 + families * 10
    return models * math.ceil(run["tasks"] / 20)


def registration(record: dict) -> list[str]:
    run, power, left = record["run"], record["power"], record["power"]["left_out"]
    newly, seeds = record["not_registered"]["newly_seen"], record["not_registered"]["seeds"]
    by_metric = {m: [c["row"] for c in record["claims"] if c["metric"] == m] for m in ("dirsim", "crg")}
    lowest = min(c["power"] for c in power["claims"])
    return [
        "### Registered before the run", "",
        f"`assets/results/{REGISTRATION}` (`{record['command']}`, {record['registered']}) was committed before the "
        f"run began: `git log --format='%h %ci %s' -- assets/results/{REGISTRATION} {PARTS}` lists it first.", "",
        f"- **Question.** {record['question']}",
        f"- **Rule.** {record['rule']}",
        f"- **Claims.** {len(record['claims'])}, α {record['alpha']:g} by Holm: DirSim of "
        f"{', '.join(by_metric['dirsim'])}; CRG of {', '.join(by_metric['crg']) or 'none'}.",
        f"- **N.** {run['tasks']} {run['split']} tasks from {run['first_task']}, margin {run['margin']:g}: "
        f"{power['tasks_why']}.",
        f"- **Power** (from `{power['from']}`): every claim at least {lowest:.2f} against a retrained-seed-sized "
        f"difference ({power['how']}). Left out, below 80%: "
        + "; ".join(f"{c['row']} {c['metric']} ({c['power']:.2f}; "
                    f"{c['tasks_needed'] if c['tasks_needed'] else 'more than 4,000'} tasks needed)" for c in left) + ".",
        *(f"- **Amended {a['date']}, {'before any result' if a['before_any_result'] else 'after results'}:** "
          f"{a['changed']}. Why: {a['why']}. Unchanged: {a['unchanged']}." for a in record.get("amendments", [])),
        f"- **Not claimed: newly-seen semantic validity.** {newly['why'][:1].upper()}{newly['why'][1:]}.",
        f"- **Not claimed: each row among the seeds.** {seeds['why'][:1].upper()}{seeds['why'][1:]} "
        f"(DirSim {seeds['power_at_a_noise_sized_difference']['dirsim']:.2f}, "
        f"CRG {seeds['power_at_a_noise_sized_difference']['crg']:.2f}).", ""]


def _placed(found: dict | None, digits: int) -> str:
    if not found:
        return "—"
    return (f"{found['value']:.{digits}f} in {found['mean']:.{digits}f} ± {found['sd']:.{digits}f} "
            f"(p {found['p']:.2g})")


def results(record: dict) -> list[str]:
    """The registered claims and every placed row, from the run's record."""
    claims = record.get("placement_claims", [])
    lines = ["### The answer: the registered claims", "",
             "Each claim places the row's statistic in its matched-noise family: the value, the family's mean ± sd "
             "over its draws, the prediction t's p, Holm's p over the registered claims and the reading.", "",
             "| row | statistic | value | family mean ± sd (draws) | p | Holm p | empirical p | reading |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for c in claims:
        if c["value"] is None:
            lines.append(f"| {c['row']} | {METRIC_NAMES[c['metric']]} | — | — | — | — | — | {c['reading']} |")
            continue
        lines.append(f"| {c['row']} | {METRIC_NAMES[c['metric']]} | {c['value']:.3f} | {c['family_mean']:.3f} ± "
                     f"{c['family_sd']:.3f} ({c['members']}) | {c['p']:.2g} | {c['p_holm']:.2g} | "
                     f"{c['empirical_p']:.2f} | **{c['reading']}** |")
    seeds = [c for c in claims if c["row"].startswith("fp32-ref-") and c["value"] is not None]
    if seeds:
        readings = "; ".join(f"{c['row']} {METRIC_NAMES[c['metric']]} {c['reading']}" for c in seeds)
        lines += ["", f"The retrained seeds, read by the same rule as a row: {readings}. A seed outside its noise "
                      "family says retraining moves recourse more than weight noise of the same agreement does. "
                      "\"Inside its family\" is not \"equivalent to the teacher\": it says the run could not tell the "
                      "row from its noise draws, with the power registered above."]
    lines += ["", "### Every row in its families (secondary, unadjusted p)", "",
              "Each statistic as: value in the family's mean ± sd (the prediction t's two-sided p). Newly seen: the "
              "row's share and the teacher's on the same movable tasks, the discordant tasks (row only / teacher "
              "only), and the attributes where the row's difference from the teacher lies outside the seeds' own "
              "spread.", "",
              "| row | DirSim: noise | DirSim: seeds | CRG: noise | CRG: seeds | newly seen: row / teacher "
              "(discordant) | noise | outside the seeds' spread |",
              "|---|---|---|---|---|---|---|---|"]
    for name, row in record["placements"]["rows"].items():
        seen = row.get("newly_seen")
        share = "—" if not seen else (f"{seen['all']['share']:.1f} / {seen['all']['teacher']:.1f} "
                                      f"({seen['all']['row_only']} / {seen['all']['teacher_only']})")
        outside = [a for a, within in row.get("within_seed_spread", {}).items() if not within]
        lines.append(f"| {name} | {_placed(row['noise']['dirsim'], 1)} | {_placed(row['seeds']['dirsim'], 1)} | "
                     f"{_placed(row['noise']['crg'], 3)} | {_placed(row['seeds']['crg'], 3)} | {share} | "
                     f"{_placed(row['noise']['newly_seen'], 1)} | {', '.join(outside) or 'none'} |")
    margins = record["placements"].get("seed_margins", {})
    return lines + ["", "The seeds' spread per attribute (the largest |seed − teacher| newly-seen difference, points): "
                    + (", ".join(f"{a} {m:.1f}" for a, m in margins.items()) or "none") + ".", "",
                    "Every number above again from the committed columns:", "", "```bash", RECOMPUTE, "```", ""]


def wall_time(segments: dict | None) -> list[str]:
    """The run's wall time over its launches (each session's), pauses left out."""
    from recourse.benchmark.wall_time import segment_seconds

    if segments is None:
        return []
    hours = segment_seconds(segments) / 3600
    return [f"Wall time: {hours:.2f} h on 2 cores over {len(segments['segments'])} launches, pauses left out: "
            f"{segments['how']} (`assets/results/{SEGMENTS}`, from `{SEGMENTS_LOG}`).", ""]


def section(load: Loader) -> list[str]:
    record = load(REGISTRATION)
    if record is None:
        return []
    lines = ["## Does compression move recourse more than matched noise or retraining? (registered placement run)", "",
             *registration(record), "The run:", "", "```bash", RUN_COMMAND, "```", "",
             f"Run by `scripts/chores/placement_run.sh` with the code of commit {CODE_COMMIT[:7]} (every part is made "
             "by that code, whatever main holds since).", ""]
    run = load(RUN)
    if run is None:
        return lines + [f"Not finished: its {expected_parts(record)} student parts are kept in `{PARTS}` as they are "
                        "made (the run resumes from them; each launch is logged in "
                        f"`{SEGMENTS_LOG}`).", ""]
    return lines + results(run) + wall_time(load(SEGMENTS))
