"""Pictures: images, difference and attribution maps (one colour map), audit panels.

Signed maps share one colour map: red where a value is positive (a pixel got brighter, or
raises the attribute's logit), blue where negative, white for zero, scaled so that the
largest magnitude is fully saturated.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image

if TYPE_CHECKING:
    from recourse.audit import AuditResult

DISPLAY_SIZE = 192


def to_pil(image: torch.Tensor) -> Image.Image:
    """``(3, H, W)`` in [0, 1] → RGB picture."""
    array = (image.detach().clamp(0, 1).permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def signed_map(values: torch.Tensor) -> Image.Image:
    """``(H, W)`` signed values → red (positive) / white / blue (negative) picture."""
    scale = float(values.abs().max()) or 1.0
    normalised = (values / scale).clamp(-1, 1)
    red, blue = normalised.clamp(min=0), (-normalised).clamp(min=0)
    return to_pil(torch.stack([1 - blue, 1 - red - blue, 1 - red]).clamp(0, 1))


def difference_map(original: torch.Tensor, counterfactual: torch.Tensor) -> Image.Image:
    """Per-pixel change ``x' − x`` (mean over channels): red brighter, blue darker."""
    return signed_map((counterfactual - original).mean(dim=0))


def attribution_picture(attribution: torch.Tensor) -> Image.Image:
    """An ``(H, W)`` attribution map: red raises the attribute's logit, blue lowers it."""
    return signed_map(attribution.detach())


def enlarge(picture: Image.Image, size: int = DISPLAY_SIZE) -> Image.Image:
    """Model-resolution pictures shown larger, pixels kept sharp."""
    return picture.resize((size, size), Image.Resampling.NEAREST)


def side_by_side(original: torch.Tensor, counterfactual: torch.Tensor, scale: int = 4) -> Image.Image:
    """One picture: original | counterfactual | difference map, each enlarged ``scale`` times."""
    panels = [to_pil(original), to_pil(counterfactual), difference_map(original, counterfactual)]
    width, height = panels[0].size
    canvas = Image.new("RGB", (3 * width * scale + 2 * 4, height * scale), (255, 255, 255))
    for i, panel in enumerate(panels):
        canvas.paste(panel.resize((width * scale, height * scale), Image.Resampling.NEAREST), (i * (width * scale + 4), 0))
    return canvas


def png_data_uri(picture: Image.Image) -> str:
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def audit_pictures(result: AuditResult) -> dict[str, Image.Image]:
    """Every image of an audit at model resolution, by name."""
    x = result.predictions.aligned
    pictures = {
        "aligned": to_pil(x),
        "teacher_counterfactual": to_pil(result.teacher_counterfactual),
        "student_counterfactual": to_pil(result.student_counterfactual),
        "teacher_difference": difference_map(x, result.teacher_counterfactual),
        "student_difference": difference_map(x, result.student_counterfactual),
    }
    for comparison in result.attributions:
        pictures[f"{comparison.method}_teacher"] = attribution_picture(comparison.teacher)
        pictures[f"{comparison.method}_student"] = attribution_picture(comparison.student)
    return pictures
