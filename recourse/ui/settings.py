"""A request's settings, checked against the app's limits (recourse.ui.limits, read when a
request comes): the generator's settings, how many faces a scan may rank, and the wall time."""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import replace
from types import SimpleNamespace

import gradio as gr

from recourse.audit.result import AuditSettings, product_settings
from recourse.audit.stops import committed_stops, for_attribute
from recourse.data import ATTRIBUTES
from recourse.generation import METHODS, CounterfactualConfig
from recourse.generation.denoised import edit_budget
from recourse.generation.generators import EDIT_SPACES_FOLDER
from recourse.generation.guidance import region_steps_for
from recourse.generation.methods import edit_kind
from recourse.generation.spaces.bundle import SpacesIndex
from recourse.locations import generator_dir
from recourse.progress import StageCheck
from recourse.ui import limits
from recourse.ui.errors import Refusal, without_paths

DEFAULTS = CounterfactualConfig()  # the generator's settings; where the picture is shown: STOPS
STOPS = committed_stops()  # the visible stop (the picture) and the benchmark's margin (the numbers)


def _number(name: str, value, low: float, high: float, whole: bool = False) -> float:
    """A setting from a request, refused unless it is a finite real number in ``[low, high]``
    (a whole one where ``whole``). ``True`` is not a number here, though Python counts it as 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise Refusal(f"{name} must be a number, got {str(value)[:40]!r}")
    if whole and value != int(value):
        raise Refusal(f"{name} must be a whole number, got {value:g}")
    if not low <= value <= high:
        raise Refusal(f"{name} must be between {low:g} and {high:g} here, got {value:g}")
    return value


def picture_stop(attribute, method=DEFAULTS.method) -> float:
    """The margin an audit of ``attribute`` with ``method`` shows its pictures at unless the user
    moves it: an edit inside a part's space at its attribute's own visible stop, any other at the
    committed one (``recourse.audit.stops.for_attribute``). The margin slider follows it. Which
    parts have a space is read from the committed spaces' index: the page is built, and this
    answers, while the models load."""
    if attribute not in ATTRIBUTES:
        raise Refusal(f"unknown attribute {str(attribute)[:40]!r}")
    kind = edit_kind(replace(DEFAULTS, method=method_from(method)), attribute, _committed_spaces())
    return for_attribute(STOPS, attribute, kind).visible


def _committed_spaces() -> SimpleNamespace:
    """The committed generator as far as :func:`edit_kind` reads it: which spaces it has (read at
    each call, a small file: the project's home may change under a running process, as in tests)."""
    return SimpleNamespace(edit_spaces=SpacesIndex.read(generator_dir() / EDIT_SPACES_FOLDER))


def settings_from(steps: float, cone: float, seed: float, margin: float, method: str = DEFAULTS.method,
                  edit_steps: float = DEFAULTS.edit_steps, sigma: float = DEFAULTS.sigma,
                  attribute: str | None = None) -> AuditSettings:
    """The audit's settings from the screen, within this app's budget: ``steps`` is the walks'
    most editing steps, ``cone`` the angle around the robust guide's gradient (pca-walk-cone),
    ``edit_steps`` and ``sigma`` the denoised method's, ``margin`` the stop the pictures are
    shown at (the numbers are read at the benchmark's margin): the user's choice unless it is
    ``attribute``'s own stop (:func:`picture_stop`), where the slider stands until moved. Every
    value is checked, also those the chosen method does not read: they are saved with the result."""
    method = method_from(method)
    steps = int(_number("Most editing steps", steps, 1, limits.MAX_STEPS, whole=True))
    cone = float(_number("Cone", cone, limits.MIN_CONE, 90))
    edit_steps = int(_number("Denoiser steps", edit_steps, 1, limits.MAX_EDIT_STEPS, whole=True))
    sigma = float(_number("Noise level σ", sigma, *limits.SIGMAS))
    seed = int(_number("Seed", seed, 0, 2**31 - 1, whole=True))
    margin = float(_number("Margin", margin, 0, limits.MAX_MARGIN))
    chosen = None if attribute is not None and margin == picture_stop(attribute, method) else margin
    try:
        # The slider sets the frame's steps; an edit confined to its region gets its default
        # multiple of them (48 for 24), so that fewer steps on screen mean less work everywhere.
        region_steps = region_steps_for(edit_steps)
        return product_settings(chosen, "benchmark", replace(DEFAULTS, method=method, finish_steps=steps,
                                                             cone_degrees=cone, edit_steps=edit_steps, sigma=sigma,
                                                             seed=seed, region_edit_steps=region_steps))
    except (TypeError, ValueError, OverflowError) as error:
        raise Refusal(f"Generator settings: {without_paths(error)}") from None


def method_from(name) -> str:
    """A counterfactual method's name from a request, refused unless it is one of METHODS:
    the config does not check it, and ``generate`` would refuse it only after the predictions."""
    if not isinstance(name, str) or name not in METHODS:
        raise Refusal(f"unknown counterfactual method {str(name)[:40]!r}; choose one of: {', '.join(METHODS)}")
    return name


def scan_count(count, config: CounterfactualConfig, attribute: str | None = None) -> int:
    """How many faces a scan ranks: what was asked, within MAX_SCAN_IMAGES and the budget of
    the chosen method's steps (faces × steps): MAX_SCAN_EDIT_WORK denoiser steps for the
    denoised method (the steps ``attribute``'s edit takes, in its region or over the frame;
    the larger of the two for an unknown attribute), MAX_SCAN_WORK editing steps for the walks."""
    count = int(_number("Faces", count, 1, limits.MAX_SCAN_IMAGES, whole=True))
    if config.method == "denoised":
        steps = (edit_budget(config, attribute)[0] if attribute in ATTRIBUTES
                 else max(config.edit_steps, config.region_edit_steps if config.region_mask else 0))
        budget, unit = limits.MAX_SCAN_EDIT_WORK, "denoiser steps"
    else:
        steps, budget, unit = config.finish_steps, limits.MAX_SCAN_WORK, "editing steps"
    affordable = max(1, budget // max(1, steps))
    if count > affordable:
        raise Refusal(f"{count} faces at {steps} {unit} is more than this app's budget of {budget} {unit} a scan; "
                       f"rank at most {affordable} faces, or lower the steps")
    return count


def deadline(started: float, limit: float, what: str, advice: str) -> StageCheck:
    """A stage check that stops the work once it has run past ``limit`` seconds."""
    return lambda stage: _within(started, limit, what, advice)


def _within(started: float, limit: float, what: str, advice: str) -> None:
    """Stop an audit or scan that has run past its wall-time limit (the budget of public mode)."""
    if time.perf_counter() - started > limit:
        raise Refusal(f"This {what} ran past this app's limit of {limit:.0f} s and was stopped; {advice}.")
