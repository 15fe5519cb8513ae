"""The blind rating command: a page, its pairs and its key written outside the repository, never inside."""

import json
import re

import numpy as np
import pytest

from recourse.instruments.rating import load_pairs, save_pairs
from scripts.figures import blind_rating
from tests.conftest import ROOT, random_faces, still_generator, tiny_classifier


@pytest.fixture
def models(tmp_path):
    """A tiny guiding classifier and a still generator (walks leave the face as it is; the
    denoised method edits it), saved as folders for --classifier and --generator."""
    from recourse.checkpoints import save_classifier

    save_classifier(tiny_classifier(seed=0, gain=20), tmp_path / "classifier", {})
    still_generator(16).save_pretrained(tmp_path / "generator")
    return ["--classifier", str(tmp_path / "classifier"), "--generator", str(tmp_path / "generator")]


@pytest.mark.slow
def test_the_command_writes_a_page_its_pairs_and_its_key_outside_the_repository(hq_folder, models, tmp_path,
                                                                                 capsys):
    root, _ = hq_folder
    other = save_pairs(tmp_path / "mixed" / "walrus-generator.npz", random_faces(2, seed=5), random_faces(2, seed=6),
                       ["Smiling", "Young"], [1, 0])  # another generator's pairs, no method array
    out = tmp_path / "rating-set"
    blind_rating.main(["--data", str(root), "--n", "3", "--methods", "pca-walk", "denoised", "--no-cache",
                       "--threads", "1", "--pairs", str(other), "--out", str(out), *models])
    key = json.loads((out / "key.json").read_text())
    page = (out / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and f'"{key["page_id"]}"' in page
    assert key["n"] == 5 and len(re.findall(r'src="data:image/png;base64,', page)) == 10
    methods = sorted(task["method"] for task in key["tasks"])
    assert methods == ["denoised", "pca-walk", "pca-walk", "walrus-generator", "walrus-generator"]
    pairs = load_pairs(out / "pairs.npz")
    assert len(pairs["originals"]) == 5 and sorted(pairs["method"].tolist()) == methods
    assert len({face.tobytes() for face in pairs["originals"]}) == 5  # no face twice on the page
    for task in key["tasks"]:  # the key's tasks point at their pairs
        assert pairs["attributes"][task["pair_index"]] == task["attribute"]
        assert pairs["method"][task["pair_index"]] == task["method"]
    walk = next(task for task in key["tasks"] if task["method"] == "pca-walk")
    assert (pairs["counterfactuals"][walk["pair_index"]] == pairs["originals"][walk["pair_index"]]).all()
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    for hidden in ("pca-walk", "denoised", "walrus", "pairs.npz", str(root)):
        assert hidden not in text
    printed = capsys.readouterr().out
    assert "3/3: face" in printed and "(pca-walk 2, denoised 1, walrus-generator 2)" in printed
    assert f"python -m scripts.measurements.score_ratings ratings-{key['page_id']}.json --key {out / 'key.json'}" in printed


@pytest.mark.parametrize("where", ["out", "key"])
def test_a_folder_inside_the_repository_is_refused_before_anything_is_written(hq_folder, tmp_path, capsys, where):
    root, _ = hq_folder
    inside = ROOT / "out" / "blind-rating-test-never-written"
    out, key = (inside, tmp_path / "key.json") if where == "out" else (tmp_path / "set", inside / "key.json")
    with pytest.raises(SystemExit) as stop:
        blind_rating.main(["--data", str(root), "--n", "2", "--out", str(out), "--key", str(key)])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and f"--{where} {inside if where == 'out' else key} is inside the repository" in error
    assert not inside.exists() and not out.exists() and not key.exists()


@pytest.mark.parametrize("arguments, message", [
    (["--n", "0"], "--n must be at least 1"),
    (["--methods", "pca-walk", "dream"], "unknown methods dream; choose from denoised, region-space, pca-walk, pca-walk-cone"),
    (["--attributes", "Smile"], "unknown attributes Smile"),
    (["--key", "{out}/page.html"], "would overwrite the page"),
    (["--pairs", "{out}/none.npz"], "no such pairs file"),
])
def test_bad_requests_are_refused_with_a_reason(hq_folder, tmp_path, capsys, arguments, message):
    root, _ = hq_folder
    out = tmp_path / "set"
    with pytest.raises(SystemExit) as stop:
        blind_rating.main(["--data", str(root), "--out", str(out), *[a.format(out=out) for a in arguments]])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_data_folder_and_an_existing_key_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        blind_rating.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "set")])
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "key.json").write_text("{}")
    with pytest.raises(SystemExit):
        blind_rating.main(["--data", str(tmp_path), "--out", str(tmp_path / "set")])
    assert "already exist" in capsys.readouterr().err
    assert (tmp_path / "set" / "key.json").read_text() == "{}"


@pytest.mark.slow
def test_faces_of_the_mixed_in_pairs_are_left_out_of_the_draw(hq_folder, models, tmp_path, capsys):
    from recourse.data import load_split

    root, _ = hq_folder
    test_faces = load_split(root, "test", 16).images  # three faces
    other = save_pairs(tmp_path / "other.npz", test_faces[:1], test_faces[:1], ["Smiling"], [1])
    arguments = ["--data", str(root), "--methods", "pca-walk", "--no-cache", "--pairs", str(other), *models]
    with pytest.raises(SystemExit, match="--n 3, but the test split has 2 faces that are not in the --pairs files"):
        blind_rating.main([*arguments, "--n", "3", "--out", str(tmp_path / "refused")])
    assert not (tmp_path / "refused").exists()
    blind_rating.main([*arguments, "--n", "2", "--out", str(tmp_path / "set")])
    pairs = load_pairs(tmp_path / "set" / "pairs.npz")
    drawn = {face.tobytes() for face, method in zip(pairs["originals"], pairs["method"]) if method == "pca-walk"}
    assert drawn == {face.tobytes() for face in test_faces[1:]}  # the faces the file does not have
    assert sorted(pairs["method"].tolist()) == ["other", "pca-walk", "pca-walk"]
    assert "face_index" not in pairs  # a field that not every source has is dropped
