"""The edit spaces as one folder: a subfolder per face part, each saved the diffusers way
(``config.json`` + ``diffusion_pytorch_model.safetensors``), and ``spaces.json`` naming them.

:meth:`EditSpaces.from_pretrained` reads a local folder, or a Hugging Face hub id through the
hub's cache (``subfolder=`` per part), as any diffusers model loads.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from recourse.generation.spaces.critic import ArtifactCritic
from recourse.generation.spaces.hair import HairSpace
from recourse.generation.spaces.mouth_shape import MouthShapeSpace
from recourse.generation.spaces.space import RegionSpace
from recourse.generation.spaces.templates import HAIR_GROUP, MOUTH_SHAPE_GROUP, SPACE_OF, space_of

INDEX_FILE = "spaces.json"
CRITIC_PREFIX = "critic-"
_LOAD_OPTIONS = {"low_cpu_mem_usage": False}


class EditSpaceError(ValueError):
    """A missing or malformed edit space."""


@dataclass
class EditSpaces:
    """The fitted spaces by group name (``mouth``, ``eyes``, ``face``: textures; ``hair``: colour;
    ``mouth_shape``: the mouth's shapes)."""

    regions: dict[str, RegionSpace | HairSpace | MouthShapeSpace]
    about: dict = field(default_factory=dict)
    critics: dict[str, ArtifactCritic] = field(default_factory=dict)  # by group: the artifact check's

    def for_attribute(self, attribute: str) -> RegionSpace | HairSpace | MouthShapeSpace:
        """The space ``attribute`` is edited in (EditSpaceError if it is not fitted)."""
        group = space_of(attribute)
        if group not in self.regions:
            raise EditSpaceError(f"the {group} edit space ({attribute}) is not fitted; fitted: "
                                 f"{', '.join(sorted(self.regions)) or 'none'} (python -m recourse fit-edit-spaces)")
        return self.regions[group]

    def edits(self, attribute: str) -> bool:
        return covers(self.regions, attribute)

    def save_pretrained(self, directory: str | os.PathLike) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, space in self.regions.items():
            copy.deepcopy(space).half().save_pretrained(directory / name)  # half precision: a third of the bytes
        for name, critic in self.critics.items():
            critic.save_pretrained(directory / f"{CRITIC_PREFIX}{name}")
        about = {**self.about, "groups": sorted(self.regions), "critics": sorted(self.critics)}
        (directory / INDEX_FILE).write_text(json.dumps(about, indent=2) + "\n")

    @classmethod
    def from_pretrained(cls, source: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = True, revision: str | None = None) -> "EditSpaces":
        """From a folder :meth:`save_pretrained` wrote, or a hub id (``owner/name``)."""
        path = Path(source)
        if path.is_dir():
            index_file = path / INDEX_FILE
            if not index_file.is_file():
                raise EditSpaceError(f"{path.name}: not an edit-spaces folder (no {INDEX_FILE})")
            about = _read_index(index_file.read_text())
            return cls({name: _load(path / name, name, _kind(name)) for name in about["groups"]}, about,
                       {name: _load(path / f"{CRITIC_PREFIX}{name}", name, ArtifactCritic) for name in about["critics"]})
        from huggingface_hub import hf_hub_download

        try:
            index_file = hf_hub_download(str(source), INDEX_FILE, cache_dir=cache_dir, revision=revision,
                                         local_files_only=local_files_only)
        except Exception as error:  # not cached and no network, or no such repository
            raise EditSpaceError(f"{source}: cannot read its {INDEX_FILE} ({str(error).splitlines()[0][:200]})") from None
        about = _read_index(Path(index_file).read_text())
        options = dict(subfolder=None, cache_dir=cache_dir, local_files_only=local_files_only, revision=revision)
        regions, critics = {}, {}
        for name in about["groups"]:
            options["subfolder"] = name
            regions[name] = _load(str(source), name, _kind(name), **options)
        for name in about["critics"]:
            options["subfolder"] = f"{CRITIC_PREFIX}{name}"
            critics[name] = _load(str(source), name, ArtifactCritic, **options)
        return cls(regions, about, critics)


def covers(groups, attribute: str) -> bool:
    """Whether one of ``groups`` (names of fitted spaces) is the space ``attribute`` is edited in."""
    return attribute in SPACE_OF and SPACE_OF[attribute] in groups


@dataclass(frozen=True)
class SpacesIndex:
    """Which spaces a saved folder holds, read from its ``spaces.json`` alone, no weight loaded:
    for what must not wait for the models, or fail with them (the app's controls, built while the
    models load). Empty where the index is missing or malformed: loading the spaces says why."""

    groups: frozenset[str] = frozenset()

    @classmethod
    def read(cls, directory: str | os.PathLike) -> "SpacesIndex":
        try:
            return cls(frozenset(_read_index((Path(directory) / INDEX_FILE).read_text())["groups"]))
        except (OSError, EditSpaceError):
            return cls()

    def edits(self, attribute: str) -> bool:
        return covers(self.groups, attribute)


def _read_index(text: str) -> dict:
    try:
        about = json.loads(text)
    except json.JSONDecodeError as error:
        raise EditSpaceError(f"{INDEX_FILE} is not JSON ({error.msg})") from None
    for key in ("groups", "critics"):
        names = about.get(key, []) if isinstance(about, dict) else None
        if not isinstance(names, list) or not all(isinstance(g, str) and g.isidentifier() for g in names):
            raise EditSpaceError(f"{INDEX_FILE} must name its {key} as a list of identifiers")
    return {"critics": [], **about}


def _kind(group: str) -> type:
    return {HAIR_GROUP: HairSpace, MOUTH_SHAPE_GROUP: MouthShapeSpace}.get(group, RegionSpace)


def _load(source, name: str, kind=RegionSpace, **options):
    what = "artifact critic" if kind is ArtifactCritic else "edit space"
    try:
        model = kind.from_pretrained(source, **_LOAD_OPTIONS, **options)
    except (OSError, ValueError, EnvironmentError) as error:
        raise EditSpaceError(f"the {name} {what} cannot be loaded ({str(error).splitlines()[0][:200]})") from None
    return model.float().eval().requires_grad_(False)
