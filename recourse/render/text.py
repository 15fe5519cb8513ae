"""Plain-text summaries the command line prints."""

from __future__ import annotations

from recourse.audit.result import AuditResult
from recourse.audit.verdict import artifact_says, failed, judge_says
from recourse.evaluation import AccuracyResult
from recourse.generation.quality import QualityReport
from recourse.instruments.set_verdicts import verdict_line


def accuracy_lines(result: AccuracyResult, model: str, split: str) -> list[str]:
    width = max(len(a) for a in result.per_attribute)
    lines = [f"{'attribute':{width}s}  accuracy  majority"]
    lines += [f"{name:{width}s}  {value:8.2f}  {result.baseline_per_attribute[name]:8.2f}"
              for name, value in result.per_attribute.items()]
    lines.append(f"{'MEAN':{width}s}  {result.mean:8.2f}  {result.baseline_mean:8.2f}   ({result.n_images} images, "
                 f"{model}, split {split})")
    return lines


def _rate(value: float | None, width: int) -> str:
    return f"{'—':>{width}s}" if value is None else f"{value:{width}.1f}"


def quality_lines(report: QualityReport) -> list[str]:
    lines = [f"{'attribute':19s} {'FR %':>6s} {'judge FR %':>10s} {'oracle FR %':>11s} {'(to 1 / to 0)':>15s} "
             f"{'MNAC':>6s} {'proximity':>9s} {'oracle FD':>9s} {'s/CF':>6s}"]
    for r in report.results:
        lines.append(f"{r.attribute:19s} {r.flip_rate:6.1f} {_rate(r.judge_flip_rate, 10)} {_rate(r.oracle_flip_rate, 11)} "
                     f"{_rate(r.oracle_flip_rate_to_1, 7)} / {_rate(r.oracle_flip_rate_to_0, 5)} {r.mnac:6.2f} "
                     f"{r.proximity:9.4f} {r.oracle_fd:9.2f} {r.median_seconds:6.3f}")
    instruments = [r for r in report.results if r.fva is not None or r.realism_fd is not None
                   or r.strong_judge_flip_rate is not None]
    if instruments:
        lines.append(f"{'attribute':19s} {'strong judge FR %':>17s} {'FVA %':>6s} {'FS':>6s} "
                     f"{'FD (real floor)':>17s} {'KID (real floor)':>19s}")
    for r in instruments:
        fd = "-" if r.realism_fd is None else f"{r.realism_fd:.2f} ({r.floor_fd:.2f})"
        kid = "-" if r.realism_kid is None else f"{r.realism_kid:.4f} ({r.floor_kid:.4f})"
        lines.append(f"{r.attribute:19s} {_rate(r.strong_judge_flip_rate, 17)} {_rate(r.fva, 6)} "
                     f"{'-' if r.fs is None else f'{r.fs:.3f}':>6s} {fd:>17s} {kid:>19s}")
    verdicts = [row for r in report.results for row in r.judge_verdicts]
    if verdicts:
        lines.append("what the calibrated judges see (seen rate [95%] of the judge's ceiling on real faces of the "
                     "target class, and the shift of its score as a fraction of the real classes' gap):")
        lines += [verdict_line(row) for row in verdicts]
    return lines


def audit_line(result: AuditResult) -> str:
    p, r = result.predictions, result.recourse
    crg = "-" if r.crg is None else f"{r.crg:.3f}"
    dirsim = "-" if r.dirsim is None else f"{r.dirsim:.1f}"
    return (f"{p.attribute}, target {p.target}, variant {p.variant}: V_f(x'_f)={int(r.teacher_valid)} "
            f"V_g(x'_f)={int(r.student_accepts_teacher)} V_g(x'_g)={int(r.student_valid)} CRG_i={crg} "
            f"DirSim_i={dirsim}{f' ({r.reason})' if r.reason else ''}\n" + instruments_line(result))


def instruments_line(result: AuditResult) -> str:
    """What the judges see in x'_f / x'_g and whether each keeps the person (dlib distance, ✓ ≤ 0.6),
    a tick on an edit that failed its artifact check not counted; then each edit's artifact check."""
    teacher, student = result.artifacts
    judge = f"{judge_says(result.judge, 'teacher', teacher)} / {judge_says(result.judge, 'student', student)}"
    if result.strong_judge is None:
        strong = result.missing.get("strong_judge", "no judge")
    else:
        strong = (f"{judge_says(result.strong_judge, 'teacher', teacher)} / "
                  f"{judge_says(result.strong_judge, 'student', student)}")
    identity = result.identity
    if identity is None:
        kept = "not measured (" + result.missing.get("identity", "no face descriptor") + ")"
    else:
        marks = [f"{'✓' if identity.kept(m) and not failed(c) else '✗'} {getattr(identity, f'{m}_distance'):.3f}"
                 for m, c in (("teacher", teacher), ("student", student))]
        kept = " / ".join(marks) + f" (same person ≤ {identity.threshold:g})"
    checks = (f"; x'_f {artifact_says(teacher)}; x'_g {artifact_says(student)}"
              if teacher is not None and student is not None else "")
    return (f"judge sees the change in x'_f / x'_g: {judge}; strong judge: {strong}; "
            f"identity kept in x'_f / x'_g: {kept}{checks}")
