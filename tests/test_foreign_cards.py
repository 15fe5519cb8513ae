"""Model cards: a good card in JSON and TOML, and every kind of bad card refused with a message
that names the field and the fix, before anything of the model is read or run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from recourse.foreign import loaders
from recourse.foreign.cards import CardError, card_to_dict, parse_card, read_card, write_card
from tests.foreign_models import different_card, write_card_file


def test_good_card_json_and_toml(tmp_path: Path) -> None:
    card = read_card(write_card_file(tmp_path / "a", different_card("onnx", "model.onnx")))
    assert card.format == "onnx" and card.input.size == (96, 96) and card.output.count == 3
    assert card.output.attributes == ("Young", "Smiling", "Male")
    assert card.weights_path == tmp_path / "a" / "model.onnx"
    toml = tmp_path / "b" / "recourse-card.toml"
    toml.parent.mkdir()
    toml.write_text('format = "torch-export"\nweights = "nets/m.pt2"\n[input]\nsize = 64\n'
                    '[output]\nkind = "pair-logits"\nattributes = ["Smiling"]\n')
    card = read_card(toml.parent)  # a folder finds its card
    assert card.input.size == (64, 64) and card.output.count == 2 and card.weights == "nets/m.pt2"
    assert card.input.mean == (0.0, 0.0, 0.0) and card.input.framing == "celeba-hq"


def test_card_round_trip(tmp_path: Path) -> None:
    values = different_card("safetensors", "model.safetensors")
    values["input"]["framing"], values["input"]["crop"] = "celeba-aligned", [0, 20, 178, 198]
    path = write_card(tmp_path, values)
    card = read_card(path)
    assert parse_card(card_to_dict(card), tmp_path, str(path)) == card
    assert card.input.crop == (0.0, 20.0, 178.0, 198.0) and card.architecture.name == "PlainConvNet"


def _mutate(card: dict, dotted: str, value) -> dict:
    card = copy.deepcopy(card)
    *parents, key = dotted.split(".")
    target = card
    for part in parents:
        target = target[part]
    if value is _DELETE:
        del target[key]
    else:
        target[key] = value
    return card


class _Deleted:
    """The field is left out of the card (its repr names the test the same in every process)."""

    def __repr__(self) -> str:
        return "<deleted>"


_DELETE = _Deleted()
# (the change, the field the message must name, a word of the fix it must give)
BAD_CARDS = [
    ("format", _DELETE, "'format'", "add"),
    ("format", "onnxx", "'format'", "did you mean 'onnx'"),
    ("card_version", 2, "'card_version'", "reads card_version 1"),
    ("outputs", {}, "'outputs'", "did you mean 'output'"),
    ("weights", _DELETE, "'weights'", "relative"),
    ("weights", "/etc/passwd.onnx", "'weights'", "inside the card's folder"),
    ("weights", "../model.onnx", "'weights'", "no '..'"),
    ("weights", "model.pt", "'weights'", "never loaded"),
    ("weights", "model.pt2", "'weights'", "rename the file"),
    ("sha256", "abc", "'sha256'", "64 hex digits"),
    ("architecture", {"name": "PlainConvNet"}, "'architecture'", "only safetensors"),
    ("input", _DELETE, "'input'", "size"),
    ("input.size", _DELETE, "'input.size'", "[height, width]"),
    ("input.size", [0, 96], "'input.size'", "8 to 1024"),
    ("input.size", [96, 96, 3], "'input.size'", "[height, width]"),
    ("input.channel_order", "bgr", "'input.channel_order'", "did you mean 'BGR'"),
    ("input.layout", "CHW", "'input.layout'", "'NCHW'"),
    ("input.value_range", [1, 0], "'input.value_range'", "low < high"),
    ("input.mean", [0.5, 0.5], "'input.mean'", "3 finite numbers"),
    ("input.mean", [123.7, 116.3, 103.5], "'input.mean'", "units of value_range"),
    ("input.std", [0.2, 0.0, 0.2], "'input.std'", "positive"),
    ("input.std", [0.2, float("nan"), 0.2], "'input.std'", "finite"),
    ("input.framing", "celeba-aligned-178", "'input.framing'", "'celeba-aligned'"),
    ("input.crop", [0, 20, 178, 198], "'input.crop'", "framing to 'celeba-aligned'"),
    ("input.resolution", 96, "'input.resolution'", "the fields here are"),
    ("output.kind", "softmax", "'output.kind'", "'pair-probabilities'"),
    ("output.kind", _DELETE, "'output.kind'", "add"),
    ("output.attributes", [], "'output.attributes'", "non-empty"),
    ("output.attributes", ["Young", "smiling"], "'output.attributes[1]'", "did you mean 'Smiling'"),
    ("output.attributes", ["Young", "Eyeglasses", "Young"], "'output.attributes'", "each attribute once"),
    ("output.name", "", "'output.name'", "leave it out"),
]


@pytest.mark.parametrize("change, value, field, fix", BAD_CARDS, ids=[f"{c[0]}={c[1]!r}"[:40] for c in BAD_CARDS])
def test_bad_card_refused_naming_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change, value, field, fix) -> None:
    path = write_card_file(tmp_path, _mutate(different_card("onnx", "model.onnx"), change, value))
    (tmp_path / "model.onnx").write_bytes(b"not read")

    def never(*args, **kwargs):
        raise AssertionError("a bad card must be refused before the model is read or run")

    for name in ("weights_bytes", "_load_onnx", "_load_program", "_load_safetensors", "check_outputs"):
        monkeypatch.setattr(loaders, name, never)
    with pytest.raises(CardError) as error:
        loaders.load_foreign(tmp_path)
    message = str(error.value)
    assert str(path) in message and f"field {field}" in message and fix in message, message


SAFETENSORS_BAD = [
    ("architecture", _DELETE, "'architecture'", "PlainConvNet"),
    ("architecture.name", "ResNet50", "'architecture.name'", "'AttributeClassifier'"),
    ("architecture.config", {"widths": [16] * 20}, "'architecture.config'", "1 to 8 stage widths"),
    ("architecture.config", {"depth": 3}, "'architecture.config'", "unknown setting 'depth'"),
    ("architecture.config", [1, 2], "'architecture.config'", "table"),
]


@pytest.mark.parametrize("change, value, field, fix", SAFETENSORS_BAD, ids=[c[0] + str(i) for i, c in enumerate(SAFETENSORS_BAD)])
def test_bad_architecture_refused(tmp_path: Path, change, value, field, fix) -> None:
    card = _mutate(different_card("safetensors", "model.safetensors"), change, value)
    with pytest.raises(CardError) as error:
        parse_card(card, tmp_path, "card.json")
    assert f"field {field}" in str(error.value) and fix in str(error.value), str(error.value)


def test_attribute_classifier_architecture_checked(tmp_path: Path) -> None:
    card = different_card("safetensors", "model.safetensors")
    card["architecture"] = {"name": "AttributeClassifier", "config": {"widths": [8, 16], "activation": "gelu"}}
    with pytest.raises(CardError, match="activation must be 'relu' or 'silu'"):
        parse_card(card, tmp_path, "card.json")
    card["architecture"]["config"] = {"widths": [8, 16], "attributes": ["Smiling"]}
    with pytest.raises(CardError, match="unknown setting 'attributes'"):
        parse_card(card, tmp_path, "card.json")


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "object of fields"),
    (" " * 70_000, "too large for a model card"),
])
def test_unreadable_card_files(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "recourse-card.json").write_text(content)
    with pytest.raises(CardError, match=expected):
        read_card(tmp_path)


def test_folder_without_card(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(CardError, match="no model card found .*recourse-card.json"):
        loaders.load_foreign(tmp_path)


def test_not_a_source(tmp_path: Path) -> None:
    with pytest.raises(CardError, match="neither a card file, a folder .* nor a Hugging Face hub id"):
        loaders.load_foreign(str(tmp_path / "no" / "such" / "thing"))
