import json

import pytest
import torch

from recourse.generation.spaces.bundle import EditSpaceError, EditSpaces
from tests.spaces_fixtures import synthetic_space


def _spaces() -> EditSpaces:
    return EditSpaces({"mouth": synthetic_space("mouth"), "eyes": synthetic_space("eyes", seed=1)}, {"split": "train"})


def _same(first: EditSpaces, second: EditSpaces) -> None:
    assert set(first.regions) == set(second.regions)
    for name, space in first.regions.items():
        other = second.regions[name]
        assert tuple(other.config.box) == tuple(space.config.box) and tuple(other.config.anchors) == tuple(space.config.anchors)
        for (key, value), (_, loaded) in zip(space.state_dict().items(), other.state_dict().items()):
            assert torch.equal(value, loaded), key


def test_a_saved_folder_loads_as_saved(tmp_path):
    spaces = _spaces()
    spaces.save_pretrained(tmp_path / "edit-spaces")
    assert (tmp_path / "edit-spaces" / "mouth" / "diffusion_pytorch_model.safetensors").is_file()
    loaded = EditSpaces.from_pretrained(tmp_path / "edit-spaces")
    # saved in half precision: the loaded space is the half-precision one, in float
    halved = EditSpaces({name: s.half().float() for name, s in _spaces().regions.items()})
    _same(halved, loaded)
    assert loaded.about["split"] == "train"
    assert loaded.for_attribute("Eyeglasses") is loaded.regions["eyes"]


def test_a_hub_id_loads_from_the_hub_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repository = tmp_path / "models--recourse--edit-spaces"
    _spaces().save_pretrained(repository / "snapshots" / commit)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    from_hub = EditSpaces.from_pretrained("recourse/edit-spaces", cache_dir=tmp_path, local_files_only=True)
    _same(EditSpaces.from_pretrained(repository / "snapshots" / commit), from_hub)


def test_a_missing_group_is_named(tmp_path):
    _spaces().save_pretrained(tmp_path)
    (tmp_path / "spaces.json").write_text(json.dumps({"groups": ["mouth", "eyes", "face"]}))
    with pytest.raises(EditSpaceError, match="face edit space"):
        EditSpaces.from_pretrained(tmp_path)


def test_an_unfitted_attribute_says_which_space_it_needs():
    with pytest.raises(EditSpaceError, match="face edit space.*Young"):
        _spaces().for_attribute("Young")


@pytest.mark.parametrize("index", ["not json", json.dumps({"groups": "mouth"}), json.dumps({"groups": ["../x"]})])
def test_a_malformed_index_is_refused(tmp_path, index):
    (tmp_path / "spaces.json").write_text(index)
    with pytest.raises(EditSpaceError):
        EditSpaces.from_pretrained(tmp_path)


def test_a_missing_folder_or_id_is_a_clear_error(tmp_path):
    with pytest.raises(EditSpaceError, match="cannot read"):
        EditSpaces.from_pretrained("nobody/nothing", cache_dir=tmp_path)


def test_the_index_alone_says_which_parts_have_a_space_without_loading_one(tmp_path):
    from recourse.generation.spaces.bundle import SpacesIndex

    (tmp_path / "spaces.json").write_text(json.dumps({"groups": ["mouth_shape", "hair"], "critics": []}))
    index = SpacesIndex.read(tmp_path)  # no weights in the folder: none is read
    assert index.edits("Smiling") and index.edits("Blond_Hair")
    assert not index.edits("Young") and not index.edits("Bangs")
    (tmp_path / "spaces.json").write_text("{not json")
    assert SpacesIndex.read(tmp_path) == SpacesIndex() == SpacesIndex.read(tmp_path / "missing")
