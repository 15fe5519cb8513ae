"""Pictures: images, difference and attribution maps (one colour map), audit panels.

Signed maps share one colour map: red where a value is positive (a pixel got brighter, or
raises the attribute's logit), blue where negative, white for zero, scaled so that the
largest magnitude is fully saturated; an audit's two difference maps share one scale.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image, ImageDraw

from recourse.data import resize_images

if TYPE_CHECKING:
    from recourse.audit.result import AuditResult

DISPLAY_SIZE = 256


def to_pil(image: torch.Tensor) -> Image.Image:
    """``(3, H, W)`` in [0, 1] → RGB picture."""
    array = (image.detach().clamp(0, 1).permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def signed_map(values: torch.Tensor, scale: float | None = None) -> Image.Image:
    """``(H, W)`` signed values → red (positive) / white / blue (negative) picture, fully
    saturated at ``scale`` (default: the largest magnitude of ``values``)."""
    scale = scale or float(values.abs().max()) or 1.0
    normalised = (values / scale).clamp(-1, 1)
    red, blue = normalised.clamp(min=0), (-normalised).clamp(min=0)
    return to_pil(torch.stack([1 - blue, 1 - red - blue, 1 - red]).clamp(0, 1))


def difference_map(original: torch.Tensor, counterfactual: torch.Tensor, scale: float | None = None) -> Image.Image:
    """Per-pixel change ``x' − x`` (mean over channels): red brighter, blue darker, fully
    saturated at ``scale`` (default: this map's own largest change)."""
    return signed_map((counterfactual - original).mean(dim=0), scale)


def shared_scale(original: torch.Tensor, *counterfactuals: torch.Tensor) -> float:
    """One saturation for several difference maps: their largest change, so that a 0.0002
    edit does not look as vivid as a 0.026 one."""
    return max(float((c - original).mean(dim=0).abs().max()) for c in counterfactuals) or 1.0


def with_scale_bar(picture: Image.Image, scale: float) -> Image.Image:
    """A difference map with its colour scale under it: what full blue and full red mean."""
    bar = 22
    framed = Image.new("RGB", (picture.width, picture.height + bar), "white")
    framed.paste(picture, (0, 0))
    ramp = signed_map(torch.linspace(-1, 1, picture.width // 2)[None].expand(8, -1))
    framed.paste(ramp, (picture.width // 4, picture.height + 2))
    draw = ImageDraw.Draw(framed)
    draw.text((2, picture.height + 10), f"-{scale:.3f}", fill="black")
    draw.text((picture.width * 3 // 4 + 4, picture.height + 10), f"+{scale:.3f}", fill="black")
    return framed


def attribution_picture(attribution: torch.Tensor) -> Image.Image:
    """An ``(H, W)`` attribution map: red raises the attribute's logit, blue lowers it."""
    return signed_map(attribution.detach())


def enlarge(picture: Image.Image, size: int = DISPLAY_SIZE, smooth: bool = False) -> Image.Image:
    """Model-resolution pictures shown larger: maps with their pixels kept sharp, faces
    (``smooth``) interpolated, since a 64-px face enlarged pixel by pixel reads as blocks."""
    return picture.resize((size, size), Image.Resampling.BICUBIC if smooth else Image.Resampling.NEAREST)


FACES = ("aligned", "teacher_counterfactual", "student_counterfactual")


def side_by_side(original: torch.Tensor, counterfactual: torch.Tensor, scale: int = 4) -> Image.Image:
    """One labelled picture: original | counterfactual | difference map (with its colour
    legend), each enlarged ``scale`` times."""
    size = original.shape[-1] * scale
    return labelled_strip([("original", enlarge(to_pil(original), size, smooth=True)),
                           ("counterfactual", enlarge(to_pil(counterfactual), size, smooth=True)),
                           ("difference (red brighter)", enlarge(difference_map(original, counterfactual), size))])


def png_data_uri(picture: Image.Image) -> str:
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def audit_pictures(result: AuditResult) -> dict[str, Image.Image]:
    """Every image of an audit at model resolution, by name."""
    x = result.predictions.aligned
    scale = shared_scale(x, result.teacher_counterfactual, result.student_counterfactual)
    pictures = {
        "aligned": to_pil(x),
        "teacher_counterfactual": to_pil(result.teacher_counterfactual),
        "student_counterfactual": to_pil(result.student_counterfactual),
        "teacher_difference": difference_map(x, result.teacher_counterfactual, scale),
        "student_difference": difference_map(x, result.student_counterfactual, scale),
    }
    for comparison in result.attributions:
        pictures[f"{comparison.method}_teacher"] = attribution_picture(comparison.teacher)
        pictures[f"{comparison.method}_student"] = attribution_picture(comparison.student)
    return pictures


REPLACED_CHANGE = 0.08  # mean channel change at which the photo's own detail gives way to the edit's content


def composite(display: torch.Tensor, x: torch.Tensor, counterfactual: torch.Tensor, size: int = DISPLAY_SIZE,
              removing: bool = False, redrawn: str | None = None) -> torch.Tensor:
    """``(3, S, S)``: a model-size counterfactual shown on the photo's own display crop: the
    photo with the upsampled change ``x' − x``, so that it keeps its own detail.

    ``removing``: the edit takes away what the photo's detail draws (teeth behind lips that
    close, the frames of glasses taken off). There the old detail would show through the
    blurred change, so where the change is large the edit's own content is shown and the
    photo's detail (display − upsampled ``x``) fades out with the size of the change.

    ``redrawn``: an edit made again on the crop at its resolution, where an enlarged model-size
    change would be a blur: ``"hair"`` (a hair colour edit, on the crop's own hair:
    :func:`recourse.generation.spaces.hair.display_recolour`; nothing off the person changes) or
    ``"glasses"`` (frames put on, drawn with sharp edges:
    :func:`~recourse.generation.spaces.glasses.display_glasses`) or ``"mouth:<attribute>:<target>"``
    (the crop's own mouth moved as the pair shows it: :func:`~recourse.generation.spaces.mouth_shape.display_mouth`)."""
    base = resize_images(display[None], size)
    if redrawn is not None:
        from recourse.generation.regions import face_landmarks
        from recourse.generation.spaces.glasses import display_glasses
        from recourse.generation.spaces.hair import display_recolour

        points, _ = face_landmarks(x[None])
        part, *task = redrawn.split(":")
        remake = {"hair": display_recolour, "glasses": display_glasses}[part] if not task else _display_mouth(*task)
        made = remake(base[0], x, counterfactual, points[0])
        if made is not None:
            return made.clamp(0, 1)
    low = resize_images(x[None], size)
    edited = resize_images(counterfactual[None], size)
    if not removing:
        return (base + edited - low).clamp(0, 1)[0]
    change = (edited - low).abs().mean(dim=1, keepdim=True)
    replaced = (change / REPLACED_CHANGE).clamp(0, 1)
    radius = max(1, size // 64)
    replaced = torch.nn.functional.avg_pool2d(replaced, 2 * radius + 1, stride=1, padding=radius,
                                              count_include_pad=False)
    return (edited + (1 - replaced) * (base - low)).clamp(0, 1)[0]


def _display_mouth(attribute: str, target: str):
    def remake(display: torch.Tensor, x: torch.Tensor, counterfactual: torch.Tensor, points) -> torch.Tensor:
        from recourse.generation import default_generator
        from recourse.generation.spaces.mouth_shape import display_mouth
        from recourse.generation.spaces.templates import MOUTH_SHAPE_GROUP

        space = default_generator().edit_spaces.regions[MOUTH_SHAPE_GROUP]
        return display_mouth(space, display, x, counterfactual, points, attribute, closes=target == "0")

    return remake


def redrawn_part(attribute: str, target: int, config) -> str | None:
    """Which edit :func:`composite` makes again at display resolution: ``"hair"``, ``"glasses"``,
    ``"mouth:<attribute>:<target>"`` or None."""
    from recourse.generation.methods import GLASSES, edit_kind
    from recourse.generation.spaces.templates import HAIR_GROUP, MOUTH_SHAPE_GROUP, MOUTH_SHAPE_TARGETS, SPACE_OF

    if edit_kind(config, attribute) != "region-space":
        return None
    if SPACE_OF.get(attribute) == HAIR_GROUP:
        return "hair"
    if SPACE_OF.get(attribute) == MOUTH_SHAPE_GROUP and int(target) in MOUTH_SHAPE_TARGETS[attribute]:
        return f"mouth:{attribute}:{int(target)}"
    return "glasses" if attribute == GLASSES and target == 1 else None


def removes_detail(result: AuditResult) -> bool:
    """Whether the audit's edit takes away what the photo's detail draws (see :func:`composite`)."""
    config = result.settings.counterfactual
    return result.predictions.target == 0 and result.predictions.attribute in config.space_drop_residual


def display_pictures(result: AuditResult, size: int = DISPLAY_SIZE) -> dict[str, Image.Image]:
    """The audit's pictures at ``size`` for the screen and the report. Where the photo has
    more pixels than the model sees, each counterfactual is the photo's own crop plus the
    upsampled edit ``x' − x`` (the numbers stay those of the model-resolution images);
    otherwise faces are enlarged smoothly. Both difference maps share one scale, drawn under each."""
    pictures = {name: enlarge(picture, size, smooth=name in FACES) for name, picture in audit_pictures(result).items()}
    scale = shared_scale(result.predictions.aligned, result.teacher_counterfactual, result.student_counterfactual)
    for name in ("teacher_difference", "student_difference"):
        pictures[name] = with_scale_bar(pictures[name], scale)
    display = result.predictions.display
    if display is not None:
        x = result.predictions.aligned
        pictures["aligned"] = to_pil(resize_images(display[None], size)[0])
        for name, counterfactual in (("teacher_counterfactual", result.teacher_counterfactual),
                                     ("student_counterfactual", result.student_counterfactual)):
            pictures[name] = to_pil(composite(display, x, counterfactual, size, removes_detail(result),
                                              redrawn_part(result.predictions.attribute, result.predictions.target,
                                                           result.settings.counterfactual)))
    return pictures


def labelled_strip(panels: list[tuple[str, Image.Image]], legend: bool = True) -> Image.Image:
    """Panels side by side with a caption under each, and the difference colour legend."""
    width, height = panels[0][1].size
    caption, gap = 18, 6
    strip = Image.new("RGB", (len(panels) * (width + gap) - gap, height + caption + (22 if legend else 0)), "white")
    draw = ImageDraw.Draw(strip)
    for i, (label, panel) in enumerate(panels):
        strip.paste(panel, (i * (width + gap), 0))
        draw.text((i * (width + gap) + 2, height + 3), label, fill="black")
    if legend:
        ramp = signed_map(torch.linspace(-1, 1, 160)[None].expand(8, -1))
        top = height + caption + 4
        strip.paste(ramp, (2, top))
        draw.text((168, top - 2), "darker  <-  no change  ->  brighter", fill="black")
    return strip
