"""The agreement of the product's instruments with blind raters: pure counting on made-up readings."""

from scripts.measurements.rating_instruments import agreement, compare


def test_agreement_counts_the_faults_people_saw_that_the_instrument_flagged_and_the_clean_edits_it_passed():
    row = agreement([(True, True), (True, False), (True, False), (False, False), (False, True)])
    assert row["people_saw"] == 3 and row["instrument_flagged_of_those"] == 1
    assert row["people_found_clean"] == 2 and row["instrument_passed_of_those"] == 1
    assert row["instrument_flagged"] == 2 and row["n"] == 5


def test_compare_reads_each_rated_item_once_per_group_and_skips_what_was_not_rated_or_read():
    key = [{"item": 1, "attribute": "Smiling"}, {"item": 2, "attribute": "Smiling"}, {"item": 3, "attribute": "Male"},
           {"item": 4, "attribute": "Male"}]
    ratings = {1: {"artifact": True, "same_person": True}, 2: {"artifact": False, "same_person": False},
               3: {"artifact": True, "same_person": True}}
    found = {1: {"artifact_passed": True, "dlib_same_person": True},
             2: {"artifact_passed": True, "dlib_same_person": True},
             3: {"artifact_passed": False, "dlib_same_person": None}, 4: {"artifact_passed": True,
                                                                         "dlib_same_person": True}}
    compared = compare(key, ratings, found)
    assert compared["all"]["artifact"]["n"] == 3  # item 4 was not rated
    assert compared["Smiling"]["artifact"]["people_saw"] == 1
    assert compared["Smiling"]["artifact"]["instrument_flagged_of_those"] == 0  # the blob it passed
    assert compared["Male"]["artifact"]["instrument_flagged_of_those"] == 1
    assert compared["Smiling"]["same_person"]["people_saw"] == 1  # item 2: a rater saw another person
    assert compared["Smiling"]["same_person"]["instrument_flagged_of_those"] == 0
    assert "same_person" not in compared["Male"]  # dlib found no face: nothing to compare


def test_a_key_without_the_asked_methods_is_refused_naming_those_it_has(tmp_path):
    import json

    import pytest

    from scripts.measurements.rating_instruments import main

    (tmp_path / "key.json").write_text(json.dumps([{"item": 1, "source": "a.jpg", "method": "region-space@a5c6c2f",
                                                    "attribute": "Smiling", "target": 0, "edited": "A"}]))
    with pytest.raises(SystemExit, match="no item of region-space .*its methods: region-space@a5c6c2f"):
        main([str(tmp_path), "--ratings", "r.json", "--json", str(tmp_path / "out.json")])
