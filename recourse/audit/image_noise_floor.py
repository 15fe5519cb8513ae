"""The per-image noise floor: below it, a recourse's size and direction are noise, not findings.

Shared by the audit (:mod:`recourse.audit.pipeline`), its verdict, its renderings and the folder scan
(:mod:`recourse.audit.scan`), following ``docs/metrics.md``.
"""

from __future__ import annotations

from recourse.metrics import ImageRecourse

# Below these, a recourse's size and direction are noise, not findings (docs/metrics.md): a
# mean change under half an 8-bit grey level per pixel (0.5/255) is less than a PNG of the face
# can even store, and a face whose full-precision logit lies within 0.1 of the boundary
# (p 0.475-0.525) needs almost no change, so a ratio of two such costs ("2043% larger") or the
# direction of an edit of that size means nothing. (The mean cost of the full-precision
# recourse at margin 0 is 0.014: "teacher_cost" of assets/archive/benchmark.json's margin sweep.)
NOISE_FLOOR_COST = 0.002
BOUNDARY_LOGIT = 0.1


def on_boundary(recourse: ImageRecourse, face_logit: float) -> bool:
    """Whether the face already sits on the full-precision model's boundary: its logit of the
    attribute within ``BOUNDARY_LOGIT`` of 0, or its valid recourse cheaper than the floor (but
    not free: a cost of 0 means the face had the target decision already, see ``reason``)."""
    return abs(face_logit) < BOUNDARY_LOGIT or (
        recourse.teacher_valid and 0 < recourse.teacher_cost < NOISE_FLOOR_COST)


def compared(recourse: ImageRecourse, face_logit: float) -> bool:
    """Whether ``CRG_i`` and ``DirSim_i`` are quoted: both defined, the face off the boundary
    and both recourses at or above the noise floor."""
    return (recourse.crg is not None and recourse.dirsim is not None and not on_boundary(recourse, face_logit)
            and recourse.student_cost >= NOISE_FLOOR_COST)
