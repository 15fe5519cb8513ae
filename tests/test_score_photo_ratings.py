import json

from scripts.measurements.score_photo_ratings import convinced, main, summary


def test_an_edit_convinces_only_when_changed_same_person_and_clean():
    assert convinced({"changed": True, "same_person": True, "artifact": False})
    assert not convinced({"changed": True, "same_person": True, "artifact": True})
    assert not convinced({"changed": False, "same_person": True, "artifact": False})
    assert not convinced({"changed": True, "same_person": True})  # an unanswered artifact is not a pass


def test_scores_are_read_per_method_from_the_key(tmp_path, capsys):
    key = [{"item": 1, "source": "a.jpg", "method": "m1", "attribute": "Smiling", "target": 1, "edited": "A"},
           {"item": 2, "source": "test:1.jpg", "method": "m2", "attribute": "Smiling", "target": 0, "edited": "B"}]
    ratings = [{"item": 1, "edited": "A", "changed": True, "same_person": True, "artifact": False},
               {"item": 2, "edited": "A", "changed": False, "same_person": True, "artifact": True}]
    (tmp_path / "key.json").write_text(json.dumps(key))
    (tmp_path / "r.json").write_text(json.dumps(ratings))
    main([str(tmp_path / "r.json"), "--key", str(tmp_path / "key.json"), "--json", str(tmp_path / "s.json")])
    scores = json.loads((tmp_path / "s.json").read_text())["raters"][0]["scores"]
    assert scores["m1"]["all"]["convinced"] == 1 and scores["m1"]["all"]["edited_side_found"] == 1.0
    assert scores["m2"]["all"]["convinced"] == 0 and scores["m2"]["Smiling removing"]["artifact"] == 1
    # each direction on each kind of photo: the targets are on the public-domain ones
    assert scores["m1"]["public-domain: Smiling adding"]["convinced"] == 1
    assert scores["m2"]["test: Smiling removing"]["n"] == 1 and "public-domain: Smiling removing" not in scores["m2"]
    assert summary([])["convinced_rate"] is None
