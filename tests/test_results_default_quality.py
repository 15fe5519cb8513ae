"""The quality page's test run of the default generator: the table and the visible stop's
targets, each read from the run's rows."""

from scripts.docs.results import default_quality, files


def row(attribute, stop, fr=99.0, fva=98.0, mnac=3.0, fd=2.0, floor=1.5, shift=0.9, over=0.9, region="mouth"):
    judges = [{"judge": "age", "target": 1, "n": 5}, {"judge": "age", "target": "both", "n": 10, "seen_rate": 0.6,
                                                      "ceiling": 0.7, "seen_over_ceiling": over, "shift": shift}]
    return {"attribute": attribute, "region": region, "stop": stop, "margin": 10.0 if stop == "visible" else 2.0,
            "n": 10, "reached_rate": 80.0, "flip_rate": fr, "fva": fva, "mnac": mnac, "fd": fd, "floor_fd": floor,
            "fd_over_floor": round(fd / floor, 3), "judges": judges, "median_seconds": 3.2}


def test_targets_are_read_at_the_visible_stop_with_the_local_and_judged_attributes_own_bounds():
    found = default_quality.targets([row("Smiling", "visible", mnac=3.6, fd=3.5), row("Smiling", "benchmark", fr=10),
                                     row("Young", "visible", mnac=4.5, fva=96.9, region="whole_face")])
    smiling = {t.what: t for t in found if t.attribute == "Smiling"}
    assert not smiling["MNAC"].met and smiling["MNAC"].bound == "≤ 3.5"  # a local attribute
    assert not smiling["FD / floor"].met and smiling["FR %"].met  # the benchmark stop's FR 10 is not read
    assert smiling["shift, age"].met and smiling["seen / ceiling, age"].met
    young = {t.what: t for t in found if t.attribute == "Young"}
    assert young["MNAC"].met and young["MNAC"].bound == "≤ 5" and not young["FVA %"].met  # FVA 96.9 < 97
    assert "FD / floor" not in young


def test_the_judges_targets_are_two_sided_a_caricature_misses_them_too():
    found = default_quality.targets([row("Young", "visible", shift=1.3, over=1.1, region="whole_face"),
                                     row("Male", "visible", shift=1.2, over=1.2, region="whole_face")])
    young = {t.what: t for t in found if t.attribute == "Young"}
    male = {t.what: t for t in found if t.attribute == "Male"}
    assert not young["shift, age"].met and young["shift, age"].bound == "0.8–1.25"
    assert young["seen / ceiling, age"].met and young["seen / ceiling, age"].bound == "0.85–1.15"
    assert male["shift, age"].met and not male["seen / ceiling, age"].met


def test_the_artifact_check_is_a_target_where_the_run_read_it():
    with_check = dict(row("Smiling", "visible"), artifact_pass_rate=89.5)
    passed = {t.what: t for t in default_quality.targets([with_check])}["artifact check passed %"]
    assert not passed.met and passed.bound == "≥ 90"
    assert "artifact check passed %" not in {t.what for t in default_quality.targets([row("Smiling", "visible")])}


def test_each_region_s_targets_apply_to_the_attributes_edited_in_it():
    """Blond_Hair, edited in the hair like Bangs, gets the local targets; the same attribute edited
    over the whole frame gets the whole face's."""
    in_hair = {t.what: t for t in default_quality.targets([row("Blond_Hair", "visible", mnac=4.5, fd=4.5,
                                                                region="hair")])}
    assert in_hair["MNAC"].bound == "≤ 3.5" and not in_hair["MNAC"].met
    assert not in_hair["FD / floor"].met  # 3× the floor
    assert not any(what.startswith("shift") for what in in_hair)  # no judge reads hair
    over_frame = {t.what: t for t in default_quality.targets([row("Blond_Hair", "visible", mnac=4.5, fd=4.5,
                                                                   region="frame")])}
    assert over_frame["MNAC"].bound == "≤ 5" and over_frame["MNAC"].met and "FD / floor" not in over_frame


def test_the_committed_runs_hair_colour_edit_is_held_to_the_local_targets():
    records = [files.load(name) for name in (default_quality.RUN, default_quality.PIXEL_RUN)]
    assert records[1] is not None  # the pixel edit's run is committed; the default's once made
    for record in filter(None, records):
        blond = {t.what: t for t in default_quality.targets(record["attributes"]) if t.attribute == "Blond_Hair"}
        assert blond["MNAC"].bound == "≤ 3.5" and "FD / floor" in blond


def test_the_section_counts_the_targets_met_and_says_which_are_not(monkeypatch):
    record = {"command": "python -m scripts.measurements.quality_visible --n 10", "n": 10,
              "stops": {"visible": 10.0, "benchmark": 2.0},
              "attributes": [row("Young", "visible", shift=0.5, region="whole_face"),
                             row("Young", "benchmark", region="whole_face")]}
    monkeypatch.setattr(files, "load", lambda name: record if name == default_quality.RUN else None)
    page = "\n".join(default_quality.default_quality_section())
    assert "The pixel edit" in page  # its run not there: the section says how to make it
    assert "10 faces × 1 attributes" in page
    assert "4 of 5 met" in page and "| shift, age | Young | 0.500 | 0.8–1.25 | **no** |" in page
    assert ("| Young | whole_face | visible (10) | 80.0 | 99.0 | 98.0 | 3.00 | 2.00 (1.50) | age: 0.90, 0.50 "
            "| 3.20 |") in page


def test_a_run_that_read_the_artifact_check_shows_it_in_its_table(monkeypatch):
    record = {"command": "python -m scripts.measurements.quality_visible --n 10", "n": 10,
              "stops": {"visible": 10.0, "benchmark": 2.0},
              "attributes": [dict(row("Smiling", "visible"), margin=6.0, artifact_pass_rate=96.0),
                             dict(row("Young", "visible", region="whole_face"), margin=3.0, artifact_pass_rate=99.0)]}
    monkeypatch.setattr(files, "load", lambda name: record if name == default_quality.RUN else None)
    page = "\n".join(default_quality.default_quality_section())
    assert "artifact check % |" in page and "each attribute's own visible stop" in page
    assert "| Smiling | mouth | visible (6) | 80.0 | 99.0 | 98.0 | 96.0 | 3.00 |" in page
