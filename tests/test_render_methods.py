"""recourse.render.methods: the status line says where a denoised edit edits and the steps it takes."""

from dataclasses import replace

from recourse.generation import CounterfactualConfig
from recourse.render.methods import method_summary


def test_a_region_edit_is_said_with_its_region_and_its_own_steps():
    config = CounterfactualConfig(method="denoised")
    assert method_summary(config, "Smiling") == (f"denoised, {config.region_edit_steps} denoiser steps in the mouth "
                                                 f"region, σ {config.sigma:g}")
    assert method_summary(config, "Eyeglasses").startswith(f"denoised, {config.region_edit_steps} denoiser steps in the eyes")
    assert method_summary(config, "Young") == f"denoised, {config.edit_steps} denoiser steps over the frame, σ {config.sigma:g}"


def test_without_the_region_mask_every_edit_is_over_the_frame():
    config = replace(CounterfactualConfig(method="denoised"), region_mask=False, edit_steps=7)
    assert method_summary(config, "Smiling") == f"denoised, 7 denoiser steps over the frame, σ {config.sigma:g}"
    assert method_summary(config) == f"denoised, 7 denoiser steps, σ {config.sigma:g}"
