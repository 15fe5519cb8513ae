"""An audit's outcome in plain words: what the two models do with the recourse, whether each
edit passed the artifact check, what the robust judge sees, and whether dlib still recognises
the person (``docs/metrics.md``). A judge's or dlib's tick on an edit that failed the artifact
check does not count (:func:`recourse.generation.spaces.artifacts.counted`)."""

from __future__ import annotations

import math

from recourse.audit.image_noise_floor import BOUNDARY_LOGIT, NOISE_FLOOR_COST, compared
from recourse.audit.instruments import IdentityView, JudgeView
from recourse.generation.spaces.artifacts import ArtifactCheck
from recourse.metrics import ImageRecourse

# DirSim_i under which the verdict leads with the direction: a full-precision classifier trained
# again with another seed reaches 62-65 against the original on average (docs/metrics.md, the
# bottom floor), so an edit under 50% similar goes a different way than even a different model of
# the same recipe tends to, which is the story of the face rather than a detail after its sizes.
DIFFERENT_DIRECTION = 50.0
# The noise floor in words a person can picture (NOISE_FLOOR_COST on the 0-1 scale is about half
# of one of an 8-bit picture's 256 grey levels per pixel).
FLOOR_WORDS = f"a mean change under {NOISE_FLOOR_COST}, about half a grey level per pixel"
# Each model's artifact check, the full-precision model's first; None where none was made.
Checks = tuple[ArtifactCheck | None, ArtifactCheck | None]
NO_CHECKS: Checks = (None, None)
MODELS = (("teacher", "full-precision"), ("student", "compressed"))
# Which edit a picture is (recourse.generation.methods.edit_kind); a walk's is said by its method.
EDIT_KINDS = {"region-space": "edited inside a space of real face parts", "denoised": "the model's pixel edit"}


def failed(check: ArtifactCheck | None) -> bool:
    """Whether an edit failed its artifact check (False where none was made)."""
    return check is not None and not check.passed


def artifact_says(check: ArtifactCheck | None) -> str:
    """An edit's artifact check in a few words: "artifact check: passed", "artifact check:
    failed (its reasons)", or "" where none was made."""
    if check is None:
        return ""
    return "artifact check: passed" if check.passed else f"artifact check: failed ({'; '.join(check.reasons)})"


def artifact_verdict(artifacts: Checks = NO_CHECKS) -> str:
    """A sentence for each edit that failed the artifact check: why, and that the instruments'
    ticks on it do not count ("" where none failed)."""
    return "".join(f" The {name} edit failed the artifact check: {'; '.join(check.reasons)}; the judges' ticks "
                   "and dlib's same-person tick do not count for it."
                   for (_, name), check in zip(MODELS, artifacts) if failed(check))


def verdict(recourse: ImageRecourse, judge: JudgeView | None = None, attribute: str = "the attribute",
            face_logit: float | None = None, artifacts: Checks = NO_CHECKS) -> str:
    """The audit's outcome in plain words: the two models, the edits that failed the artifact
    check, then what the robust judge sees in the others. ``face_logit``: the full-precision
    logit of the attribute on the face (None: not known, only the costs are held against the
    noise floor); ``artifacts``: each model's artifact check."""
    return (_models_verdict(recourse, face_logit) + artifact_verdict(artifacts)
            + judge_verdict(judge, recourse, attribute, artifacts))


def judge_says(judge: JudgeView | None, model: str, check: ArtifactCheck | None = None) -> str:
    """Whether the judge sees the attribute change in the ``"teacher"`` or ``"student"``
    recourse, in a word: "yes", "no", "not counted" (it decided the target on the face
    already), "failed check" (the edit failed its artifact ``check``: no tick counts) or
    "no judge"."""
    if judge is None:
        return "no judge"
    if not judge.counted:
        return "not counted"
    if failed(check):
        return "failed check"
    return "yes" if getattr(judge, f"sees_{model}_change") else "no"


def judge_verdict(judge: JudgeView | None, recourse: ImageRecourse, attribute: str,
                  artifacts: Checks = NO_CHECKS) -> str:
    """What the robust judge sees in the valid recourses, as a sentence ("" without a judge);
    an edit that failed its artifact check is left out (:func:`artifact_verdict` says it)."""
    if judge is None:
        return ""
    name = attribute.replace("_", " ")
    if not judge.counted:
        state = "with" if judge.target else "without"
        return (f" The robust judge already sees the face {state} {name} (p {judge.on_face:.2f}), so it cannot "
                "tell whether the recourses change it.")
    recourses = {said: (getattr(recourse, f"{model}_valid"), getattr(judge, f"sees_{model}_change"))
                 for (model, said), check in zip(MODELS, artifacts) if not failed(check)}
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


def identity_verdict(identity: IdentityView | None, recourse: ImageRecourse, artifacts: Checks = NO_CHECKS) -> str:
    """A sentence where a valid recourse is no longer the same person for dlib ("" otherwise:
    the cards give every distance); an edit that failed its artifact check is left out
    (:func:`artifact_verdict` says it)."""
    if identity is None:
        return ""
    lost = [f"the {said} recourse ({getattr(identity, f'{model}_distance'):.2f})"
            for (model, said), check in zip(MODELS, artifacts)
            if getattr(recourse, f"{model}_valid") and not failed(check) and not identity.kept(model)]
    if not lost:
        return ""
    return (f" dlib's face descriptor no longer recognises the person in {' and '.join(lost)}: beyond its "
            f"same-person distance {identity.threshold:g}, so that change is not recourse for this person.")


def sizes_withheld(recourse: ImageRecourse, face_logit: float | None = None) -> bool:
    """Whether the verdict says the two recourses' sizes and directions are not compared (the
    face on the boundary, a recourse under the noise floor, or nothing to compare), so that no
    other sentence of the audit may compare them; False where it speaks of no sizes at all."""
    if not recourse.teacher_valid:
        return False
    if _at_boundary(face_logit):
        return True
    return recourse.student_valid and not compared(recourse, float("inf") if face_logit is None else face_logit)


def _at_boundary(face_logit: float | None) -> bool:
    """The face within the noise floor of the full-precision boundary, by its logit alone (a
    small recourse on a face far from it is said as such, not as the boundary)."""
    return face_logit is not None and abs(face_logit) < BOUNDARY_LOGIT


def _turned(recourse: ImageRecourse, face_logit: float | None) -> bool:
    """The compressed model's own recourse goes another way, above the noise floor."""
    return (recourse.student_valid and not sizes_withheld(recourse, face_logit) and recourse.dirsim is not None
            and recourse.dirsim < DIFFERENT_DIRECTION)


def _acceptance(recourse: ImageRecourse, face_logit: float | None) -> str:
    """What the compressed model does with both recourses, the divergence first: it rejects the
    full-precision recourse, finds none of its own, or goes another way; "accepts" leads only
    where nothing diverges."""
    if not recourse.student_accepts_teacher:
        return "The quantized model rejects the recourse the full-precision model accepts." + (
            "" if recourse.student_valid else " Guided by itself, the quantized model finds no valid recourse.")
    if not recourse.student_valid:
        return ("Guided by itself, the quantized model finds no valid recourse, although it accepts the "
                "full-precision model's recourse.")
    if _turned(recourse, face_logit):
        return (f"The quantized model's own recourse goes a different way: its direction is {recourse.dirsim:.0f}% "
                "similar to the full-precision one (100% = the same direction), although it accepts the "
                "full-precision model's recourse.")
    return "The quantized model accepts the recourse the full-precision model accepts."


def _boundary(recourse: ImageRecourse, face_logit: float) -> str:
    p = 1 / (1 + math.exp(-face_logit))
    return (f"The face already sits on the full-precision model's decision boundary (logit {face_logit:+.3f}, "
            f"p {p:.3f}), where a decision is noise (within {BOUNDARY_LOGIT} logits of it): its recourse changes the "
            f"face by {recourse.teacher_cost:.4f} on average, and the two recourses' sizes and directions are not "
            "compared.")


def _sizes(recourse: ImageRecourse, face_logit: float | None) -> str:
    """The two recourses' sizes and directions, or why they are not compared ("" where the
    compressed model has no recourse of its own)."""
    if not recourse.student_valid:
        return ""
    if recourse.crg is None or recourse.dirsim is None:  # e.g. the full-precision recourse changes nothing
        return f" Its own recourse cannot be compared with the full-precision one: {recourse.reason}."
    teacher_small = recourse.teacher_cost < NOISE_FLOOR_COST
    if teacher_small and recourse.student_cost < NOISE_FLOOR_COST:
        return (f" Both recourses change the face by less than the noise floor ({FLOOR_WORDS}): their sizes and "
                "directions are not compared.")
    if teacher_small:
        return (f" The full-precision recourse changes the face by only {recourse.teacher_cost:.4f} on average, "
                f"under the noise floor ({FLOOR_WORDS}): the two recourses' sizes and directions are not compared.")
    if recourse.student_cost < NOISE_FLOOR_COST:
        return (f" Its own recourse changes the face by only {recourse.student_cost:.4f} on average, below the "
                f"{NOISE_FLOOR_COST} noise floor: the quantized model sits on its boundary here, so the sizes and "
                "directions are not compared.")
    change = recourse.student_cost / recourse.teacher_cost - 1
    size = f"Its own recourse is a {abs(change):.0%} {'larger' if change >= 0 else 'smaller'} change"
    if _turned(recourse, face_logit):  # the direction led the verdict
        return f" {size} than the full-precision one."
    return (f" {size} than the full-precision one, in a direction {recourse.dirsim:.0f}% similar "
            "(100% = the same direction).")


def _models_verdict(recourse: ImageRecourse, face_logit: float | None = None) -> str:
    if not recourse.teacher_valid:
        return ("The full-precision model found no valid recourse for this face, so there is no recourse "
                "for the quantized model to honour.")
    if _at_boundary(face_logit):  # nothing on the boundary is a finding: said first
        return _boundary(recourse, face_logit) + " " + _acceptance(recourse, face_logit)
    return _acceptance(recourse, face_logit) + _sizes(recourse, face_logit)
