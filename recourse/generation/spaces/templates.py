"""Which face part each edit space models, and how a face is put into that part's template.

A group's template is a box of the aligned framing's mean face (:data:`MEAN_LANDMARKS_64`, 64-px
pixels). A face reaches it through the affine map that best carries the template's *anchors*
(landmarks the group's attributes do not move: the nose and jaw for the mouth, brows and eye
corners for the eyes) onto the face's own. What the attributes do move (an opening mouth,
narrowing lids) stays in the texture, where the space learns it.
"""

from __future__ import annotations

from dataclasses import dataclass

JAW, BROWS, NOSE = tuple(range(0, 17)), tuple(range(17, 27)), tuple(range(27, 36))
EYE_CORNERS, MOUTH_CORNERS = (36, 39, 42, 45), (48, 54)


@dataclass(frozen=True)
class GroupSpec:
    """One edit space: its name, the landmarks that pin its template (0-based iBUG 68), the
    template's box ``(x0, y0, x1, y1)`` in the mean face's 64-px frame (x1, y1 exclusive), the
    number of components, the attributes edited in it and the region shape
    (:data:`recourse.generation.regions.GROUPS`) their edits are confined to."""

    name: str
    anchors: tuple[int, ...]
    box: tuple[int, int, int, int]
    components: int
    attributes: tuple[str, ...]
    region: str

    @property
    def size(self) -> tuple[int, int]:
        """``(height, width)`` of the template."""
        x0, y0, x1, y1 = self.box
        return y1 - y0, x1 - x0


SPACES: dict[str, GroupSpec] = {spec.name: spec for spec in (
    GroupSpec("mouth", anchors=JAW[2:5] + JAW[12:15] + NOSE + EYE_CORNERS, box=(13, 35, 51, 62), components=64,
              attributes=("Smiling", "Mouth_Slightly_Open", "Wearing_Lipstick", "Big_Lips"), region="mouth"),
    GroupSpec("eyes", anchors=BROWS + EYE_CORNERS + NOSE[:4] + (0, 16), box=(7, 14, 57, 43), components=64,
              attributes=("Eyeglasses", "Narrow_Eyes", "Bags_Under_Eyes", "Arched_Eyebrows", "Bushy_Eyebrows"),
              region="eyes"),
    GroupSpec("face", anchors=JAW + BROWS + NOSE + EYE_CORNERS + MOUTH_CORNERS, box=(6, 5, 58, 64), components=128,
              attributes=("Young", "Male", "Heavy_Makeup", "Pale_Skin", "Chubby", "Attractive"), region="whole_face"),
)}

# Hair has no template: its space is one of colour (:mod:`hair`), read on the hair the face shows.
HAIR_GROUP = "hair"
HAIR_ATTRIBUTES = ("Black_Hair", "Blond_Hair", "Brown_Hair", "Gray_Hair")
# Smiles and open mouths are shapes: the mouth's own pixels are moved in a space of mouth shapes
# (:mod:`mouth_shape`); the mouth's texture space keeps lipstick and lips, and reads the realism
# of every mouth edit.
MOUTH_SHAPE_GROUP = "mouth_shape"
MOUTH_SHAPE_ATTRIBUTES = ("Smiling", "Mouth_Slightly_Open")
# the targets a moved mouth makes; the others stay in the mouth's texture space. A warp cannot
# open a closed mouth (blind set 5: the lips stretched into a pink blob on 3 of 3, where the
# texture space convinced on 2 of 3 in set 4)
MOUTH_SHAPE_TARGETS = {"Smiling": (0, 1), "Mouth_Slightly_Open": (0,)}
GROUP_NAMES = (*SPACES, HAIR_GROUP, MOUTH_SHAPE_GROUP)

SPACE_OF: dict[str, str] = {attribute: spec.name for spec in SPACES.values() for attribute in spec.attributes}
SPACE_OF.update({attribute: HAIR_GROUP for attribute in HAIR_ATTRIBUTES})
SPACE_OF.update({attribute: MOUTH_SHAPE_GROUP for attribute in MOUTH_SHAPE_ATTRIBUTES})
# the space whose realism limits and critic read an edit made in another (a moved mouth is a mouth)
CHECKED_IN = {MOUTH_SHAPE_GROUP: "mouth"}


def space_of(attribute: str) -> str:
    """The edit space an attribute is edited in (ValueError naming the fitted ones otherwise)."""
    if attribute not in SPACE_OF:
        raise ValueError(f"no edit space models {attribute!r}: the spaces edit {', '.join(sorted(SPACE_OF))}")
    return SPACE_OF[attribute]
