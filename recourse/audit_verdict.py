"""An audit's outcome in plain words: what the two models do with the recourse, what the
robust judge sees, and whether dlib still recognises the person (``docs/metrics.md``)."""

from __future__ import annotations

import math

from recourse.audit_instruments import IdentityView, JudgeView
from recourse.metrics import ImageRecourse
from recourse.noise_floor import BOUNDARY_LOGIT, NOISE_FLOOR_COST, on_boundary


def verdict(recourse: ImageRecourse, judge: JudgeView | None = None, attribute: str = "the attribute",
            face_logit: float | None = None) -> str:
    """The audit's outcome in plain words: the two models, then what the robust judge sees.
    ``face_logit``: the full-precision logit of the attribute on the face (None: not known,
    only the costs are held against the noise floor)."""
    return _models_verdict(recourse, face_logit) + judge_verdict(judge, recourse, attribute)


def judge_says(judge: JudgeView | None, model: str) -> str:
    """Whether the judge sees the attribute change in the ``"teacher"`` or ``"student"``
    recourse, in a word: "yes", "no", "not counted" (it decided the target on the face
    already) or "no judge"."""
    if judge is None:
        return "no judge"
    if not judge.counted:
        return "not counted"
    return "yes" if getattr(judge, f"sees_{model}_change") else "no"


def judge_verdict(judge: JudgeView | None, recourse: ImageRecourse, attribute: str) -> str:
    """What the robust judge sees in the valid recourses, as a sentence ("" without a judge)."""
    if judge is None:
        return ""
    name = attribute.replace("_", " ")
    if not judge.counted:
        state = "with" if judge.target else "without"
        return (f" The robust judge already sees the face {state} {name} (p {judge.on_face:.2f}), so it cannot "
                "tell whether the recourses change it.")
    recourses = {"full-precision": (recourse.teacher_valid, judge.sees_teacher_change),
                 "compressed": (recourse.student_valid, judge.sees_student_change)}
    seen = [model for model, (valid, sees) in recourses.items() if valid and sees]
    unseen = [model for model, (valid, sees) in recourses.items() if valid and not sees]
    blind = "likely moved the classifier without a change a person would see"
    if seen and unseen:
        return (f" The robust judge sees {name} change in the {seen[0]} recourse but not in the {unseen[0]} one, "
                f"which {blind}.")
    if len(seen) == 2:
        return f" The robust judge sees {name} change in both recourses."
    if len(unseen) == 2:
        return f" The robust judge sees {name} change in neither recourse: both {blind}."
    if seen:
        return f" The robust judge sees {name} change in the {seen[0]} recourse."
    if unseen:
        return f" The robust judge does not see {name} change in the {unseen[0]} recourse, which {blind}."
    return ""


def identity_verdict(identity: IdentityView | None, recourse: ImageRecourse) -> str:
    """A sentence where a valid recourse is no longer the same person for dlib ("" otherwise:
    the cards give every distance)."""
    if identity is None:
        return ""
    lost = [f"the {name} recourse ({getattr(identity, f'{model}_distance'):.2f})"
            for model, name, valid in (("teacher", "full-precision", recourse.teacher_valid),
                                       ("student", "compressed", recourse.student_valid))
            if valid and not identity.kept(model)]
    if not lost:
        return ""
    return (f" dlib's face descriptor no longer recognises the person in {' and '.join(lost)}: beyond its "
            f"same-person distance {identity.threshold:g}, so that change is not recourse for this person.")


def _models_verdict(recourse: ImageRecourse, face_logit: float | None = None) -> str:
    if not recourse.teacher_valid:
        return ("The full-precision model found no valid recourse for this face, so there is no recourse "
                "for the quantized model to honour.")
    first = ("The quantized model rejects the recourse the full-precision model accepts."
             if not recourse.student_accepts_teacher else
             "The quantized model accepts the recourse the full-precision model accepts.")
    if on_boundary(recourse, 1.0 if face_logit is None else face_logit):
        where = "" if face_logit is None else f" (logit {face_logit:+.3f}, p {1 / (1 + math.exp(-face_logit)):.3f})"
        return (f"The face already sits on the full-precision model's decision boundary{where}: its recourse "
                f"changes the face by {recourse.teacher_cost:.4f} on average, so the two recourses' sizes and "
                f"directions are not compared (below a change of {NOISE_FLOOR_COST} or within {BOUNDARY_LOGIT} "
                f"logits of the boundary they are noise). " + first)
    if not recourse.student_valid:
        return first + " Guided by itself, the quantized model finds no valid recourse."
    if recourse.crg is None or recourse.dirsim is None:  # e.g. the full-precision recourse changes nothing
        return first + f" Its own recourse cannot be compared with the full-precision one: {recourse.reason}."
    if recourse.student_cost < NOISE_FLOOR_COST:
        return (first + f" Its own recourse changes the face by only {recourse.student_cost:.4f} on average, "
                f"below the {NOISE_FLOOR_COST} noise floor: the quantized model sits on its boundary here, so the "
                f"sizes and directions are not compared.")
    change = recourse.student_cost / recourse.teacher_cost - 1
    size = f"{abs(change):.0%} {'larger' if change >= 0 else 'smaller'}"
    return (first + f" Its own recourse is a {size} change than the full-precision one, in a direction "
            f"{recourse.dirsim:.0f}% similar (100% = the same direction).")
