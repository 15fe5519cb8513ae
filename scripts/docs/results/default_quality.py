"""The product's default on test (``scripts/measurements/quality_visible.py``): each attribute's edit
at the visible stop and at the benchmark's margin, and the visible stop's targets
(:func:`targets`) read from the same rows."""

from __future__ import annotations

from dataclasses import dataclass

from scripts.docs.results import files

RUN = "quality-visible-test.json"  # the default edit (region-space, from 2026-12-07)
PIXEL_RUN = "quality-pixel-test.json"  # the pixel edit (denoised), the default until 2026-12-07
# The regions (a row's "region") whose edits get the whole-face targets, MNAC ≤ 5 and no FD target:
# the whole face, and an edit over the whole frame. An edit confined to any other region (the
# mouth, the eyes, the hair) keeps the rest of the image real, so MNAC ≤ 3.5 and FD ≤ 2× the
# floor apply to it, whichever attribute it is (Blond_Hair and Bangs are both edited in the hair).
WHOLE_FACE_REGIONS = ("whole_face", "frame")
JUDGED = ("Smiling", "Young", "Male", "Mouth_Slightly_Open")  # the judges' targets apply here
SHIFT, SEEN = (0.8, 1.25), (0.85, 1.15)  # two-sided: a caricature overshoots the real class gap
ARTIFACT_PASS = 90.0


@dataclass(frozen=True)
class Target:
    """One of the visible stop's targets, read on one attribute's row."""

    what: str
    attribute: str
    value: float | None
    bound: str
    met: bool


def pooled_judges(row: dict) -> list[dict]:
    return [j for j in row["judges"] if j["target"] == "both"]


def is_local(row: dict) -> bool:
    """Whether the row's edit was confined to a part of the face, by the region its run recorded."""
    return row["region"] not in WHOLE_FACE_REGIONS


def targets(rows: list[dict]) -> list[Target]:
    """Every target of the visible stop, attribute by attribute."""
    found = []
    for row in rows:
        if row["stop"] != "visible":
            continue
        a = row["attribute"]
        found.append(Target("FR %", a, row["flip_rate"], "≥ 95", row["flip_rate"] >= 95))
        found.append(Target("FVA %", a, row["fva"], "≥ 97", row["fva"] >= 97))
        local = is_local(row)
        limit = 3.5 if local else 5.0
        found.append(Target("MNAC", a, row["mnac"], f"≤ {limit:g}", row["mnac"] <= limit))
        if local:
            ratio = row["fd_over_floor"]
            found.append(Target("FD / floor", a, ratio, "≤ 2", ratio is not None and ratio <= 2))
        if a in JUDGED:
            for judge in pooled_judges(row):
                for what, value, (low, high) in (("shift", judge["shift"], SHIFT),
                                                 ("seen / ceiling", judge["seen_over_ceiling"], SEEN)):
                    found.append(Target(f"{what}, {judge['judge']}", a, value, f"{low:g}–{high:g}",
                                        value is not None and low <= value <= high))
        if row.get("artifact_pass_rate") is not None:
            passed = row["artifact_pass_rate"]
            found.append(Target("artifact check passed %", a, passed, f"≥ {ARTIFACT_PASS:g}", passed >= ARTIFACT_PASS))
    return found


def _number(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


MAKE_RUN = ("python -m scripts.measurements.quality_visible --data ../shared/data/celeba-hq-64 --split test --n 500 "
            f"--resume-dir out/quality-visible-space --json assets/results/{RUN}")
# the pixel edit is no longer the product's default, which is what quality_visible measures
MAKE_PIXEL_RUN = f"git checkout 7d75421 && {MAKE_RUN}"


def default_quality_section() -> list[str]:
    return [*run_section(RUN, "Today's default (the edit inside spaces of face parts)", MAKE_RUN),
            *run_section(PIXEL_RUN, "The pixel edit (`denoised`, the default until 2026-12-07)", MAKE_PIXEL_RUN)]


def _visible(rows: list[dict]) -> str:
    margins = {row["margin"] for row in rows if row["stop"] == "visible"}
    if len(margins) == 1:
        return f"the visible stop (margin {margins.pop():g})"
    return "each attribute's own visible stop (its margin in the stop column)"


def run_section(name: str, title: str, how: str) -> list[str]:
    record = files.load(name)
    if record is None:
        return files.not_yet(f"{title} on test", how)
    stops = record["stops"]
    artifacts = any("artifact_pass_rate" in r for r in record["attributes"])
    lines = [f"## {title} on test: {record['n']} faces × {len(record['attributes']) // 2} attributes", "",
             "The full-precision classifier's edit at the product's settings (local attributes in their region), "
             f"read at {_visible(record['attributes'])} and at the benchmark's margin "
             f"({stops['benchmark']:g}), each the first point of the edit's straight path past its margin (where the "
             "edit ends before, the whole edit: 'reached' says how often it got there). Judges: the independent "
             "ones, pooled over both targets (seen over the judge's ceiling on real faces; shift in units of the "
             "real class gap). FD on the oracle's features against real faces of the target class, beside the "
             "real-versus-real floor: both carry a finite-sample bias that falls as the compared sets grow (the edits, or "
             "the real faces with the target where those are fewer), and the edits' own distance does not, so FD over the "
             "floor is read at this run's size, not as a constant of the edit (`docs/metrics.md`). "
             "Seconds: a face's share of its batch of 20 on one thread while other jobs "
             "shared the two cores: not a speed figure (the app's own times: the stability page).", "", "```bash",
             *record.get("commands", ()), files.writing(record["command"], files.location(name)), "```", "",
             "| attribute | region | stop | reached % | FR % | FVA % | " + ("artifact check % | " if artifacts else "")
             + "MNAC | FD (floor) | judges: seen/ceiling, shift | s / edit |",
             "|---|---|---|---:|---:|---:|" + ("---:|" if artifacts else "") + "---:|---:|---|---:|"]
    for r in record["attributes"]:
        judges = "; ".join(f"{j['judge']}: {_number(j['seen_over_ceiling'], 2)}, {_number(j['shift'], 2)}"
                           for j in pooled_judges(r)) or "—"
        passed = f"| {_number(r.get('artifact_pass_rate'), 1)} " if artifacts else ""
        lines.append(f"| {r['attribute']} | {r['region']} | {r['stop']} ({r['margin']:g}) | {r['reached_rate']:.1f} "
                     f"| {r['flip_rate']:.1f} | {r['fva']:.1f} {passed}| {r['mnac']:.2f} | {r['fd']:.2f} "
                     f"({r['floor_fd']:.2f}) | {judges} | {r['median_seconds']:.2f} |")
    found = targets(record["attributes"])
    missed = [t for t in found if not t.met]
    lines += ["", f"### The visible stop's targets: {len(found) - len(missed)} of "
                  f"{len(found)} met", "", "| target | attribute | value | bound | met |", "|---|---|---:|---|---|"]
    lines += [f"| {t.what} | {t.attribute} | {_number(t.value, 3)} | {t.bound} | {'yes' if t.met else '**no**'} |"
              for t in found]
    return lines + [""]
