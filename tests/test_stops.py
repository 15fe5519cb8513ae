"""Where one face's recourse is read: the benchmark's margin recomputed from its committed
sweep, the visible stop by its rule, and a user's picture margin."""

import json

import pytest

from recourse.audit import stops
from recourse.audit.stops import AuditStops, committed_stops, stops_for
from recourse.audit.visible_stop import chosen_stop, plateau_stop


def test_the_plateau_rule_takes_the_smallest_stop_near_the_largest_shift():
    assert plateau_stop([0, 2, 6, 10, 14], [0.2, 0.4, 0.8, 0.95, 1.0]) == 10
    assert plateau_stop([0, 2, 6], [0.2, 0.95, 1.0]) == 2
    assert plateau_stop([0, 2], [None, -0.1]) is None
    assert plateau_stop([0, 2, 6], [0.5, float("nan"), 1.0], plateau=0.5) == 0  # an unread shift is passed over


def test_the_committed_visible_stop_is_the_rules_on_its_own_readings():
    record = json.loads((stops.assets_dir() / stops.VISIBLE_STOP).read_text())
    assert chosen_stop(record) == record["chosen_stop"] == committed_stops().visible
    assert chosen_stop({**record, "plateau": 1.0}) == max(row["stop"] for row in record["summary"])
    assert chosen_stop({"summary": []}) is None


def test_the_committed_stops_come_from_the_committed_files():
    committed = committed_stops()
    sweep = json.loads((stops.assets_dir() / stops.VAL_SWEEP).read_text())
    chosen = json.loads((stops.assets_dir() / stops.VISIBLE_STOP).read_text())
    assert committed.visible == chosen["chosen_stop"] and committed.edit >= chosen["settings"]["margin"]
    assert committed.benchmark in sweep["settings"]["margins"] and committed.numbers == committed.benchmark
    assert "val" in committed.visible_source and "val" in committed.benchmark_source


def test_without_the_files_the_stops_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr(stops, "assets_dir", lambda: tmp_path)
    stops.committed_stops.cache_clear()
    try:
        fallback = stops.committed_stops()
    finally:
        stops.committed_stops.cache_clear()
    assert fallback.benchmark == 0 and "no validation sweep" in fallback.benchmark_source
    assert fallback.visible == stops.FALLBACK_VISIBLE and "not chosen yet" in fallback.visible_source


def test_a_users_picture_margin_moves_the_picture_and_the_edit_reaches_it():
    base = AuditStops(benchmark=2, visible=10, edit=14)
    moved = stops_for(20, "boundary", base)
    assert (moved.visible, moved.edit, moved.numbers, moved.visible_source) == (20, 20, 0, "chosen by the user")
    assert stops_for(None, base=base).visible_source == base.visible_source
    assert stops_for(10, base=base).visible_source == "chosen by the user"  # given, even the committed stop is chosen
    with pytest.raises(ValueError, match="margin must be >= 0.0"):
        stops_for(-1, base=base)
    with pytest.raises(ValueError, match="numbers_at"):
        AuditStops(benchmark=2, visible=10, edit=14, numbers_at="somewhere")
    with pytest.raises(ValueError, match="stops must lie on the edit"):
        AuditStops(benchmark=12, visible=10, edit=10)


def test_the_gap_stop_is_the_smallest_that_reaches_the_gap_and_keeps_the_person():
    from recourse.audit.stops import gap_stop

    rows = [{"stop": 0, "shift": 0.5, "fva": 100.0}, {"stop": 2, "shift": 0.9, "fva": 100.0},
            {"stop": 4, "shift": 1.05, "fva": 100.0}, {"stop": 6, "shift": 1.3, "fva": 100.0}]
    assert gap_stop(rows) == 4
    losing = [dict(row, fva=60.0) if row["stop"] >= 4 else row for row in rows]
    assert gap_stop(losing) == 2  # past the person's identity no stop counts; the largest shift before it
    assert gap_stop([{"stop": 0, "shift": None, "fva": 100.0}]) is None


def test_a_region_space_attribute_is_shown_at_its_own_stop_unless_the_user_chose_one(monkeypatch):
    from recourse.audit import stops

    monkeypatch.setattr(stops, "attribute_visible_stops", lambda: ({"Smiling": 6.0, "Young": 3.0}, "a run"))
    base = stops.AuditStops(benchmark=2.0, visible=10.0, edit=10.0, visible_source="committed")
    assert stops.for_attribute(base, "Smiling", "region-space").visible == 6.0
    unjudged = stops.for_attribute(base, "Eyeglasses", "region-space")
    assert unjudged.visible == 4.5 and "no independent judge" in unjudged.visible_source
    assert stops.for_attribute(base, "Smiling", "denoised") is base
    chosen = stops.AuditStops(benchmark=2.0, visible=7.0, edit=10.0, visible_source="chosen by the user")
    assert stops.for_attribute(chosen, "Smiling", "region-space") is chosen
