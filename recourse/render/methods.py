"""What the app says about the counterfactual methods: the choice, which generator settings
act on each method, and a short summary of the settings a result was made with."""

from __future__ import annotations

from recourse.generation import CounterfactualConfig
from recourse.generation.denoised import confined_to_region, edit_budget
from recourse.generation.methods import edit_kind
from recourse.generation.regions import REGIONS
from recourse.generation.spaces.templates import space_of

# (label, value) of the app's method choice, in the order offered: every name of
# recourse.generation.METHODS (tests/test_app.py checks)
METHOD_CHOICES = [
    ("face parts (default)", "region-space"),
    ("pixel edit (denoised)", "denoised"),
    ("pca-walk", "pca-walk"),
    ("pca-walk-cone (ablation)", "pca-walk-cone"),
]

METHOD_NOTES = {
    "region-space": "Each model steers its own edit inside a space of real face parts (mouth, eyes, face) "
                    "learned from train faces; attributes of other parts (hair) get the model's pixel edit.",
    "denoised": "The model's pixel edit: each model drives its own edit through the learned face denoiser (denoised smoothing); "
                "a mask keeps the rest of the face.",
    "pca-walk": "Each model's own gradient steps in the generator's PCA face basis.",
    "pca-walk-cone": "An ablation: the PCA walk with every step turned into a cone around a shared robust "
                     "guide's gradient. The shared guide makes the two models' directions agree by construction, "
                     "so DirSim says little about the models here.",
}

# The CounterfactualConfig fields each method reads among the app's controls; the seed is
# always shown (the denoised method draws its noise from it).
METHOD_CONTROLS = {
    "region-space": (),  # its settings are chosen on val; the pixel edit's (hair) are the denoised defaults
    "denoised": ("edit_steps", "sigma"),
    "pca-walk": ("finish_steps",),
    "pca-walk-cone": ("finish_steps", "cone_degrees"),
}

CONTROL_LABELS = {
    "edit_steps": "Denoiser steps (denoised: optimiser steps on the edit)",
    "sigma": "Noise level σ (denoised: the denoiser's smoothing, [−1, 1] units)",
    "finish_steps": "Most editing steps (walks)",
    "cone_degrees": "Cone around the robust guide (pca-walk-cone; degrees, 90 = no guide)",
    "seed": "Seed (denoised: its noise draws; the walks use none here)",
}


def method_summary(config: CounterfactualConfig, attribute: str | None = None) -> str:
    """The method and the settings of it that the app offers, as a status line says them. With
    the ``attribute``, a denoised edit also says where it edits and the steps it really takes
    (a region's edit takes more than the screen's steps: ``recourse.generation.guidance.region_steps_for``)."""
    if config.method == "region-space" and (attribute is None or edit_kind(config, attribute) == "region-space"):
        part = "" if attribute is None else f" {space_of(attribute)}"
        return f"face parts:{part} space, {config.space_steps} steps"
    if config.method in ("denoised", "region-space"):
        if attribute is None:
            return f"denoised, {config.edit_steps} denoiser steps, σ {config.sigma:g}"
        steps, _ = edit_budget(config, attribute)
        where = f"in the {REGIONS[attribute].replace('_', ' ')} region" if confined_to_region(config, attribute) \
            else "over the frame"
        kind = "denoised" if config.method == "denoised" else "face parts: no space for this part, the pixel edit"
        return f"{kind}, {steps} denoiser steps {where}, σ {config.sigma:g}"
    if config.method == "pca-walk-cone":
        return f"pca-walk-cone, at most {config.finish_steps} editing steps, cone {config.cone_degrees:g}°"
    return f"{config.method}, at most {config.finish_steps} editing steps"
