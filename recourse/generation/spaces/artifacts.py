"""An artifact check of one edit, per image: what a person would reject before asking whether
the attribute changed.

Three readings, each with a threshold:

* **monochrome kept** — a black-and-white or toned photo's edit must stay so: its channel
  spread (99th percentile) at most :data:`MONOCHROME_SPREAD` above the photo's own;
* **novel colour** — the share of the edited pixels (mean channel change over 3/255) whose
  chroma falls in no (Cb, Cr) bin that the photo itself shows (a 32×32 histogram of the
  original, bins of at least 2 pixels, grown by one bin): a teal mouth or a magenta glow on a
  face that has neither colour. The threshold, 5%, is the one the failure reports used;
* **realism** — the edited part read two ways: by its edit space (:mod:`space`: the whitened
  coefficients' mean square ``‖z‖²/K``, how unlikely the part's appearance is among real faces,
  and the residual's energy per value, what no real face's part is made of), and by the part's
  critic (:mod:`critic`, trained on real parts against synthetic damage: flat blobs, smears,
  bands, casts). Each limit is the 99th percentile of real val faces
  (``scripts/measurements/artifact_calibration.py``); an edit fails a reading only where it is
  past the limit and clearly worse than the photo itself (:data:`RELATIVE_RISE`, :data:`CRITIC_RISE`),
  so that a photo of another source that reads past a limit before any edit is not failed for it.
  A hair edit is read by the hair colour space instead (:func:`check_hair_edit`).

The check reads the edit, not the method: every method's counterfactual goes through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from recourse.generation.spaces.colour import MONOCHROME_SPREAD, colour_mode, colour_spread, rgb_to_ycbcr
from recourse.generation.spaces.critic import ArtifactCritic
from recourse.generation.spaces.hair import HairSpace, hair_energy, hair_region
from recourse.generation.spaces.space import RegionSpace
from recourse.generation.spaces.templates import CHECKED_IN, SPACE_OF
from recourse.generation.spaces.warp import to_template

PALETTE_BINS = 32
PALETTE_MIN_PIXELS = 2
EDITED = 3 / 255  # mean channel change that counts a pixel as edited
NOVEL_COLOUR_SHARE = 0.05
# A photo from another source can read past a real-face limit before any edit (an old print,
# a strong JPEG): the edit fails a realism reading only where it is past the limit *and* worse
# than the photo's own reading by this much, so that an unedited photo always passes.
RELATIVE_RISE = 1.25
CRITIC_RISE = 1.0  # logits


def worse(after: float, before: float, limit: float, rise: float) -> bool:
    """Whether an energy read on the edit is past ``limit`` and ``rise`` times the original's."""
    return after > limit and after > before * rise


@dataclass(frozen=True)
class ArtifactCheck:
    """One edit's readings and verdict; ``reasons`` names each failed reading in words."""

    monochrome_kept: bool | None  # None: a colour photo
    novel_colour_share: float
    code_energy: float | None  # None: no edit space reads this attribute's part
    residual_energy: float | None
    critic_score: float | None  # None: no critic for this part
    passed: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"monochrome_kept": self.monochrome_kept, "novel_colour_share": round(self.novel_colour_share, 4),
                "code_energy": None if self.code_energy is None else round(self.code_energy, 4),
                "residual_energy": None if self.residual_energy is None else round(self.residual_energy, 7),
                "critic_score": None if self.critic_score is None else round(self.critic_score, 3),
                "passed": self.passed, "reasons": list(self.reasons)}


def _bins(image: torch.Tensor) -> torch.Tensor:
    chroma = rgb_to_ycbcr(image)[1:].clamp(0, 1 - 1e-6)
    cells = (chroma * PALETTE_BINS).long()
    return cells[0] * PALETTE_BINS + cells[1]  # (H, W)


def palette(image: torch.Tensor) -> torch.Tensor:
    """``(32, 32)`` bool: the (Cb, Cr) bins a ``(3, H, W)`` photo shows, grown by one bin."""
    counts = torch.bincount(_bins(image).flatten(), minlength=PALETTE_BINS ** 2).view(PALETTE_BINS, PALETTE_BINS)
    shown = (counts >= PALETTE_MIN_PIXELS).float()[None, None]
    return torch.nn.functional.max_pool2d(shown, 3, stride=1, padding=1)[0, 0] > 0


def novel_colour_share(original: torch.Tensor, edited: torch.Tensor) -> float:
    """The share of ``edited``'s changed pixels whose chroma ``original`` never shows (0 if none changed)."""
    changed = (edited - original).abs().mean(dim=0) > EDITED
    if not bool(changed.any()):
        return 0.0
    known = palette(original).flatten()[_bins(edited)]
    return float((~known & changed).sum() / changed.sum())


def part_energies(space: RegionSpace, image: torch.Tensor, points: np.ndarray) -> tuple[float, float]:
    """``(‖z‖²/K, residual energy per value)`` of ``image``'s ``(3, H, W)`` part under ``space``,
    with landmarks ``points`` ``(68, 2)`` in the image's pixels."""
    with torch.no_grad():
        _, textures = space.read(image[None], points)
        codes = space.encode(textures)
        residual = textures - space.mean.float() - space.change(codes).flatten(1)
    return float((codes ** 2).mean()), float((residual ** 2).mean())


def critic_score(critic: ArtifactCritic, space: RegionSpace, image: torch.Tensor, points: np.ndarray) -> float:
    """The critic's logit (higher: more likely damaged) on ``image``'s ``(3, H, W)`` part."""
    affines, _ = space.read(image[None], points)
    with torch.no_grad():
        return float(critic(to_template(image[None], affines, tuple(space.config.box)))[0])


def check_edit(original: torch.Tensor, edited: torch.Tensor, space: RegionSpace | None = None,
               points: np.ndarray | None = None, critic: ArtifactCritic | None = None) -> ArtifactCheck:
    """The check of one edit ``original → edited`` (``(3, H, W)`` in [0, 1]); realism is read
    where a calibrated ``space`` (:attr:`RegionSpace.realism_limits`, its ``critic``'s limit) and
    the face's ``points`` are given."""
    reasons = []
    monochrome = colour_mode(original).monochrome
    kept = None
    if monochrome:
        spread = float(colour_spread(edited[None])[0]) - float(colour_spread(original[None])[0])
        kept = spread <= MONOCHROME_SPREAD
        if not kept:
            reasons.append(f"a black-and-white photo was coloured in (channel spread +{spread * 255:.0f}/255)")
    novel = novel_colour_share(original, edited)
    if novel > NOVEL_COLOUR_SHARE:
        reasons.append(f"{novel:.0%} of the edited pixels take colours the photo never shows")
    code = residual = None
    limits = space.realism_limits if space is not None else None
    if limits is not None and points is not None:
        code, residual = part_energies(space, edited, points)
        code_before, residual_before = part_energies(space, original, points)
        if worse(code, code_before, limits[0], RELATIVE_RISE):
            reasons.append(f"the edited {space.config.group} is unlike real faces' ({code:.2f} against at most "
                           f"{max(limits[0], code_before * RELATIVE_RISE):.2f})")
        if worse(residual, residual_before, limits[1], RELATIVE_RISE):
            reasons.append(f"the edited {space.config.group} has texture no real face's has (residual "
                           f"{residual / max(limits[1], residual_before):.1f}× the limit)")
    score = None
    if critic is not None and space is not None and points is not None and critic.config.limit:
        score = critic_score(critic, space, edited, points)
        before = critic_score(critic, space, original, points)
        if score > critic.config.limit and score > before + CRITIC_RISE:
            reasons.append(f"the edited {space.config.group} looks damaged (a blob, smear or band: critic "
                           f"{score:.1f} against at most {max(critic.config.limit, before + CRITIC_RISE):.1f})")
    return ArtifactCheck(kept, novel, code, residual, score, not reasons, tuple(reasons))


def counted(tick: bool | None, check: ArtifactCheck | None) -> bool | None:
    """A judge's or the identity check's tick as it counts: an edit that failed the artifact
    check is not seen and not the same person (False), whatever the instrument read; None stays None."""
    if tick is None or check is None:
        return tick
    return bool(tick) and check.passed


def check_hair_edit(original: torch.Tensor, edited: torch.Tensor, space: HairSpace,
                    points: np.ndarray | None) -> ArtifactCheck:
    """:func:`check_edit`'s colour readings, and the realism of the edited hair's colour under
    the hair space (its ``‖z‖²/4`` past the val limit and :data:`RELATIVE_RISE` times the photo's own)."""
    colours = check_edit(original, edited)
    limit = space.realism_limit
    if limit is None or points is None:
        return colours
    from recourse.generation.spaces.person import PERSON

    mask = hair_region(original, points, PERSON(original[None])[0, 0])  # read once, for both
    after, before = hair_energy(space, edited, mask), hair_energy(space, original, mask)
    if after is None or before is None:
        return colours
    reasons = list(colours.reasons)
    if worse(after, before, limit, RELATIVE_RISE):
        reasons.append(f"the edited hair's colour is unlike real hair's ({after:.2f} against at most "
                       f"{max(limit, before * RELATIVE_RISE):.2f})")
    return ArtifactCheck(colours.monochrome_kept, colours.novel_colour_share, after, None, None, not reasons,
                         tuple(reasons))


def check_attribute_edit(original: torch.Tensor, edited: torch.Tensor, attribute: str, points: np.ndarray | None,
                         spaces=None) -> ArtifactCheck:
    """:func:`check_edit` with the space and critic of ``attribute``'s part, where
    :class:`~recourse.generation.spaces.bundle.EditSpaces` ``spaces`` has them (colour readings only otherwise)."""
    group = SPACE_OF.get(attribute)
    group = CHECKED_IN.get(group, group)
    space = spaces.regions.get(group) if spaces is not None and group else None
    if isinstance(space, HairSpace):
        return check_hair_edit(original, edited, space, points)
    critic = spaces.critics.get(group) if spaces is not None and group else None
    return check_edit(original, edited, space, points, critic)
