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


def test_a_set_split_between_raters_reads_as_one_rating_and_an_item_rated_twice_is_refused(tmp_path):
    key = [{"item": n, "source": "a.jpg", "method": "m", "attribute": "Smiling", "target": 1, "edited": "A"}
           for n in (1, 2)]
    (tmp_path / "key.json").write_text(json.dumps(key))
    good = {"edited": "A", "changed": True, "same_person": True, "artifact": False}
    (tmp_path / "t.json").write_text(json.dumps([{"item": 1, **good}]))
    (tmp_path / "v.json").write_text(json.dumps([{"item": 2, **good, "artifact": True}]))
    (tmp_path / "w.json").write_text(json.dumps([{"item": 1, **good}]))
    main([f"{tmp_path / 't.json'}+v.json", "--key", str(tmp_path / "key.json"), "--json", str(tmp_path / "s.json")])
    rater = json.loads((tmp_path / "s.json").read_text())["raters"][0]
    assert rater["items"] == 2 and rater["scores"]["m"]["all"]["convinced"] == 1
    try:
        main([f"{tmp_path / 't.json'}+w.json", "--key", str(tmp_path / "key.json")])
    except SystemExit as refused:
        assert "more than one part" in str(refused)
    else:
        raise AssertionError("an item rated in two parts was read")
