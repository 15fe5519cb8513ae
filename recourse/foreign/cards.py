"""The model card: how to call a foreign attribute classifier, read from a small JSON or TOML
file beside its weights and checked before anything of the model is read or run.

A foreign classifier differs from the project's in everything the audit silently assumes:
input size, channel order, value range and normalisation, face framing, which output is which
attribute, and whether its outputs are logits, probabilities or two-class softmax pairs. The
card states each of these once, so that :mod:`recourse.foreign.adapter` can turn the model into
the project's ``(B, 3, 64, 64)`` → 40 CelebA logits contract. Every refusal names the field
and says how to fix it: a card is written by hand, and "invalid config" helps nobody.

A card (JSON; TOML with the same tables works too)::

    {
      "card_version": 1,
      "name": "my-classifier-int8",
      "format": "onnx",                       # "onnx" | "torch-export" | "safetensors"
      "weights": "model.onnx",                # relative to the card's folder
      "sha256": "…",                          # optional: the weights file's digest
      "architecture": {"name": "AttributeClassifier", "config": {…}},   # safetensors only
      "input": {"size": [96, 96], "channel_order": "RGB", "layout": "NCHW",
                "value_range": [0, 1], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                "framing": "celeba-hq"},      # or "celeba-aligned" with "crop": [x0, y0, x1, y1]
      "output": {"kind": "probabilities", "attributes": ["Smiling", "Male", "Young"]}
    }
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from recourse.names import ATTRIBUTES

CARD_VERSION = 1
# File names a folder (or a hub repository) is searched for, in this order.
CARD_NAMES = ("recourse-card.json", "recourse-card.toml")
MAX_CARD_BYTES = 64 * 1024  # a card is a few hundred bytes; a huge one is not a card

Format = Literal["onnx", "torch-export", "safetensors"]
OutputKind = Literal["logits", "probabilities", "pair-logits", "pair-probabilities"]
Framing = Literal["celeba-hq", "celeba-aligned"]

FORMATS: dict[str, str] = {"onnx": ".onnx", "torch-export": ".pt2", "safetensors": ".safetensors"}
OUTPUT_KINDS: dict[str, str] = {
    "logits": "one logit per attribute",
    "probabilities": "one sigmoid probability per attribute",
    "pair-logits": "two softmax logits per attribute, (absent, present), attribute by attribute",
    "pair-probabilities": "two softmax probabilities per attribute, (absent, present), attribute by attribute",
}
FRAMINGS = ("celeba-hq", "celeba-aligned")
# The original CelebA "Align&Cropped" photo: 178 wide, 218 high (recourse.faces).
ALIGNED_SIZE = (178, 218)
# Formats that would unpickle: named in the refusal so the user knows what to export instead.
_PICKLED_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle", ".ckpt", ".joblib")

_TOP_FIELDS = ("card_version", "name", "description", "format", "weights", "sha256", "architecture", "input", "output")
_INPUT_FIELDS = ("size", "channel_order", "layout", "value_range", "mean", "std", "framing", "crop")
_OUTPUT_FIELDS = ("kind", "attributes", "name")
_ARCHITECTURE_FIELDS = ("name", "config")


class CardError(ValueError):
    """A model card that cannot be used; the message names the card, the field and the fix."""


@dataclass(frozen=True)
class InputSpec:
    """What the foreign model takes: ``(B, 3, H, W)`` (or NHWC) after framing, resizing,
    scaling to ``value_range``, reordering channels and ``(x - mean) / std``."""

    size: tuple[int, int]  # (height, width)
    channel_order: Literal["RGB", "BGR"] = "RGB"
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    value_range: tuple[float, float] = (0.0, 1.0)
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    framing: Framing = "celeba-hq"
    # celeba-aligned: the part of the 178×218 aligned photo the model sees (x0, y0, x1, y1)
    crop: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class OutputSpec:
    kind: OutputKind
    attributes: tuple[str, ...]  # CelebA names in the model's output order
    name: str | None = None  # the ONNX output to read, when the model has several

    @property
    def count(self) -> int:
        """How many numbers the model returns per image."""
        return len(self.attributes) * (2 if self.kind.startswith("pair-") else 1)


@dataclass(frozen=True)
class ArchitectureSpec:
    name: str
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelCard:
    format: Format
    weights: str  # relative POSIX path inside ``folder``
    input: InputSpec
    output: OutputSpec
    folder: Path  # where the card lives; ``weights`` is resolved against it
    source: str  # the card file as shown in messages
    name: str = ""
    description: str = ""
    sha256: str | None = None
    architecture: ArchitectureSpec | None = None

    @property
    def weights_path(self) -> Path:
        return self.folder / self.weights

    @property
    def title(self) -> str:
        return self.name or Path(self.weights).stem


# --- reading -----------------------------------------------------------------------------


def find_card(folder: str | os.PathLike) -> Path:
    """The card file of a folder, or CardError naming the names looked for."""
    folder = Path(folder)
    for name in CARD_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise CardError(f"{folder}: no model card found (looked for {' or '.join(CARD_NAMES)}); write one beside "
                    "the weights (see recourse/foreign/cards.py for the fields)")


def read_card(path: str | os.PathLike) -> ModelCard:
    """Read and check the card at ``path`` (a ``.json`` or ``.toml`` file, or a folder holding
    one of :data:`CARD_NAMES`). Nothing but the card file is opened."""
    path = Path(path)
    if path.is_dir():
        path = find_card(path)
    if not path.is_file():
        raise CardError(f"{path}: model card not found")
    if path.stat().st_size > MAX_CARD_BYTES:
        raise CardError(f"{path}: {path.stat().st_size} bytes is too large for a model card "
                        f"(at most {MAX_CARD_BYTES}); is this the weights file?")
    text = path.read_bytes()
    try:
        if path.suffix.lower() == ".toml":
            values = tomllib.loads(text.decode())
        elif path.suffix.lower() == ".json":
            values = json.loads(text.decode())
        else:
            raise CardError(f"{path}: a model card is a .json or .toml file")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CardError(f"{path}: not valid {path.suffix[1:].upper()} ({error})") from None
    return parse_card(values, path.parent, str(path))


def parse_card(values: Any, folder: str | os.PathLike, source: str = "model card") -> ModelCard:
    """Check a card's fields (as read from JSON/TOML) and build the :class:`ModelCard`."""
    where = _Where(source)
    if not isinstance(values, dict):
        raise CardError(f"{source}: a model card is an object of fields (format, weights, input, output)")
    _known(where, "", values, _TOP_FIELDS)
    version = values.get("card_version", CARD_VERSION)
    if isinstance(version, bool) or version != CARD_VERSION:
        where.fail("card_version", f"is {version!r}", f"this version of recourse reads card_version {CARD_VERSION}")
    fmt = _choice(where, "format", _required(where, "format", values), tuple(FORMATS))
    weights = _weights(where, _required(where, "weights", values), fmt)
    sha256 = values.get("sha256")
    if sha256 is not None and (not isinstance(sha256, str) or len(sha256) != 64
                               or any(c not in "0123456789abcdef" for c in sha256.lower())):
        where.fail("sha256", f"is {sha256!r}", "give the 64 hex digits of `sha256sum WEIGHTS`, or leave it out")
    architecture = _architecture(where, values.get("architecture"), fmt)
    return ModelCard(
        format=fmt, weights=weights,
        input=_input(where, _required(where, "input", values)),
        output=_output(where, _required(where, "output", values)),
        folder=Path(folder), source=source,
        name=_text(where, "name", values.get("name", "")),
        description=_text(where, "description", values.get("description", "")),
        sha256=sha256.lower() if sha256 else None, architecture=architecture)


# --- the checks --------------------------------------------------------------------------


class _Where:
    """Formats one kind of message: ``card: field 'input.size' is [0, 96]; give …``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, name: str, problem: str, fix: str) -> None:
        raise CardError(f"{self.source}: field '{name}' {problem}; {fix}")


def _known(where: _Where, prefix: str, values: dict, fields: tuple[str, ...]) -> None:
    for key in values:
        if key not in fields:
            near = get_close_matches(str(key), fields, 1)
            hint = f"did you mean '{prefix}{near[0]}'?" if near else f"the fields here are {', '.join(fields)}"
            where.fail(f"{prefix}{key}", "is not a field of a model card", hint)


def _required(where: _Where, name: str, values: dict) -> Any:
    key = name.rsplit(".", 1)[-1]
    if key not in values:
        where.fail(name, "is missing", _REQUIRED_HINTS.get(name, "add it"))
    return values[key]


_REQUIRED_HINTS = {
    "format": f"add \"format\": one of {', '.join(FORMATS)}",
    "weights": "add \"weights\": the model file's name, relative to the card's folder",
    "input": "add an \"input\" table with at least \"size\": [height, width]",
    "output": "add an \"output\" table with \"kind\" and \"attributes\"",
    "input.size": "add \"size\": [height, width] of the images the model takes",
    "output.kind": f"add \"kind\": one of {', '.join(OUTPUT_KINDS)}",
    "output.attributes": "add \"attributes\": the CelebA names of the outputs, in the model's order",
    "architecture.name": "add \"name\": the class of the weights, e.g. \"AttributeClassifier\"",
}


def _choice(where: _Where, name: str, value: Any, choices: tuple[str, ...]) -> Any:
    if value not in choices:
        lowered = {c.lower(): c for c in choices}
        near = [lowered[n] for n in get_close_matches(str(value).lower(), list(lowered), 1)]
        hint = f"did you mean {near[0]!r}? " if near else ""
        where.fail(name, f"is {value!r}", f"{hint}use one of {', '.join(repr(c) for c in choices)}")
    return value


def _text(where: _Where, name: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > 500:
        where.fail(name, f"is {value!r}", "give a short text")
    return value


def _weights(where: _Where, value: Any, fmt: str) -> str:
    if not isinstance(value, str) or not value:
        where.fail("weights", f"is {value!r}", "give the model file's name relative to the card's folder")
    path = PurePosixPath(value.replace("\\", "/"))
    # the card names a file beside it: an absolute path or '..' would let a downloaded card
    # point the loader anywhere on this machine
    if path.is_absolute() or ".." in path.parts or ":" in path.parts[0]:
        where.fail("weights", f"is {value!r}", "give a path inside the card's folder (no absolute path, no '..')")
    suffix = path.suffix.lower()
    if suffix in _PICKLED_SUFFIXES:
        where.fail("weights", f"is {value!r}, a pickle-based file, which is never loaded (it can run code)",
                   "export the model with torch.export (.pt2), to ONNX (.onnx), or save its state as .safetensors")
    if suffix != FORMATS[fmt]:
        where.fail("weights", f"is {value!r}, but format {fmt!r} files end in {FORMATS[fmt]}",
                   f"rename the file or correct \"format\" ({', '.join(f'{k}: {v}' for k, v in FORMATS.items())})")
    return str(path)


def _architecture(where: _Where, value: Any, fmt: str) -> ArchitectureSpec | None:
    from recourse.foreign.architectures import ARCHITECTURES

    if fmt != "safetensors":
        if value is not None:
            where.fail("architecture", f"is given for format {fmt!r}",
                       "leave it out: only safetensors weights need an architecture (the others carry their graph)")
        return None
    if value is None:
        where.fail("architecture", "is missing (safetensors files hold weights, not the network)",
                   f"add \"architecture\": {{\"name\": one of {', '.join(ARCHITECTURES)}, \"config\": {{…}}}}")
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        where.fail("architecture", f"is {value!r}", "give a table with \"name\" and optional \"config\"")
    _known(where, "architecture.", value, _ARCHITECTURE_FIELDS)
    name = _choice(where, "architecture.name", _required(where, "architecture.name", value), tuple(ARCHITECTURES))
    config = value.get("config", {})
    if not isinstance(config, dict):
        where.fail("architecture.config", f"is {config!r}", "give a table of the architecture's settings")
    try:
        ARCHITECTURES[name].check(config)
    except (TypeError, ValueError) as error:
        where.fail("architecture.config", f"does not build {name} ({error})",
                   f"correct it (the settings of {name} are {', '.join(ARCHITECTURES[name].fields)})")
    return ArchitectureSpec(name, dict(config))


def _numbers(where: _Where, name: str, value: Any, count: int) -> tuple[float, ...]:
    if not isinstance(value, list | tuple) or len(value) != count or \
            not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        where.fail(name, f"is {value!r}", f"give {count} finite numbers")
    return tuple(float(v) for v in value)


def _input(where: _Where, value: Any) -> InputSpec:
    if not isinstance(value, dict):
        where.fail("input", f"is {value!r}", "give a table with \"size\" and the normalisation fields")
    _known(where, "input.", value, _INPUT_FIELDS)
    size = _required(where, "input.size", value)
    if isinstance(size, int) and not isinstance(size, bool):
        size = [size, size]
    if not isinstance(size, list | tuple) or len(size) != 2 or \
            not all(isinstance(s, int) and not isinstance(s, bool) and 8 <= s <= 1024 for s in size):
        where.fail("input.size", f"is {size!r}", "give [height, width], whole numbers from 8 to 1024")
    order = _choice(where, "input.channel_order", value.get("channel_order", "RGB"), ("RGB", "BGR"))
    layout = _choice(where, "input.layout", value.get("layout", "NCHW"), ("NCHW", "NHWC"))
    low, high = _numbers(where, "input.value_range", value.get("value_range", [0, 1]), 2)
    if not low < high:
        where.fail("input.value_range", f"is {[low, high]}", "give [low, high] with low < high, e.g. [0, 1] or [0, 255]")
    mean = _numbers(where, "input.mean", value.get("mean", [0, 0, 0]), 3)
    std = _numbers(where, "input.std", value.get("std", [1, 1, 1]), 3)
    if not all(s > 0 for s in std):
        where.fail("input.std", f"is {list(std)}", "give 3 positive numbers (the divisor of each channel)")
    scale = high - low
    if any(abs(m - low) > 4 * scale for m in mean):
        # a mean far outside the value range is almost always [0, 255] statistics on [0, 1] input
        where.fail("input.mean", f"is {list(mean)}, far outside value_range {[low, high]}",
                   "give mean and std in the units of value_range (e.g. ImageNet's 0.485… on [0, 1], 123.7… on [0, 255])")
    framing = _choice(where, "input.framing", value.get("framing", "celeba-hq"), FRAMINGS)
    crop = value.get("crop")
    if framing == "celeba-hq" and crop is not None:
        where.fail("input.crop", "is given with framing 'celeba-hq'",
                   "leave it out (a CelebA-HQ face is used whole) or set framing to 'celeba-aligned'")
    if framing == "celeba-aligned":
        crop = _numbers(where, "input.crop", crop if crop is not None else [0, 0, *ALIGNED_SIZE], 4)
        x0, y0, x1, y1 = crop
        if not (x0 < x1 and y0 < y1 and -ALIGNED_SIZE[0] <= x0 and x1 <= 2 * ALIGNED_SIZE[0]
                and -ALIGNED_SIZE[1] <= y0 and y1 <= 2 * ALIGNED_SIZE[1]):
            where.fail("input.crop", f"is {list(crop)}",
                       "give [x0, y0, x1, y1] in pixels of the 178×218 aligned photo, e.g. [0, 20, 178, 198] "
                       "for the usual centre 178×178 crop")
    return InputSpec((size[0], size[1]), order, layout, (low, high), mean, std, framing, crop)


def _output(where: _Where, value: Any) -> OutputSpec:
    if not isinstance(value, dict):
        where.fail("output", f"is {value!r}", "give a table with \"kind\" and \"attributes\"")
    _known(where, "output.", value, _OUTPUT_FIELDS)
    kind = _choice(where, "output.kind", _required(where, "output.kind", value), tuple(OUTPUT_KINDS))
    names = _required(where, "output.attributes", value)
    if not isinstance(names, list | tuple) or not names or not all(isinstance(n, str) for n in names):
        where.fail("output.attributes", f"is {names!r}", "give a non-empty list of CelebA attribute names")
    for position, name in enumerate(names):
        if name not in ATTRIBUTES:
            near = get_close_matches(name, ATTRIBUTES, 1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            where.fail(f"output.attributes[{position}]", f"is {name!r}, not a CelebA attribute",
                       f"{hint}use CelebA's names (recourse.data.ATTRIBUTES), spelt as there")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        where.fail("output.attributes", f"names {repeated[0]!r} twice", "list each attribute once, in output order")
    output_name = value.get("name")
    if output_name is not None and (not isinstance(output_name, str) or not output_name):
        where.fail("output.name", f"is {output_name!r}", "give the name of the model output to read, or leave it out")
    return OutputSpec(kind, tuple(names), output_name)


def card_to_dict(card: ModelCard) -> dict[str, Any]:
    """The card's fields as written to a file (the inverse of :func:`parse_card`)."""
    values: dict[str, Any] = {"card_version": CARD_VERSION, "format": card.format, "weights": card.weights}
    if card.name:
        values["name"] = card.name
    if card.description:
        values["description"] = card.description
    if card.sha256:
        values["sha256"] = card.sha256
    if card.architecture is not None:
        values["architecture"] = {"name": card.architecture.name, "config": card.architecture.config}
    spec = card.input
    values["input"] = {"size": list(spec.size), "channel_order": spec.channel_order, "layout": spec.layout,
                       "value_range": list(spec.value_range), "mean": list(spec.mean), "std": list(spec.std),
                       "framing": spec.framing}
    if spec.crop is not None:
        values["input"]["crop"] = list(spec.crop)
    values["output"] = {"kind": card.output.kind, "attributes": list(card.output.attributes)}
    if card.output.name:
        values["output"]["name"] = card.output.name
    return values


def write_card(folder: str | os.PathLike, values: dict[str, Any]) -> Path:
    """Check ``values`` as a card of ``folder`` and write them as ``recourse-card.json``."""
    folder = Path(folder)
    parse_card(values, folder, str(folder / CARD_NAMES[0]))
    path = folder / CARD_NAMES[0]
    path.write_text(json.dumps(values, indent=2) + "\n")
    return path
