"""The test run of the product's default: judges pooled over both targets, and edits kept and resumed by chunk."""

import pytest
import torch

from scripts.measurements import quality_visible
from scripts.measurements.quality_visible import chunk_edits, chunk_starts, judge_rows, settings_key


def verdict(judge, target, n, seen, shift):
    return {"judge": judge, "target": target, "n": n, "missing": 0, "seen_rate": seen, "seen_low": 0.0,
            "seen_high": 1.0, "ceiling": 0.8, "seen_over_ceiling": seen / 0.8, "shift": shift, "shift_low": 0.0,
            "shift_high": 2.0}


def test_each_judge_gets_its_targets_and_a_pooled_row_weighted_by_their_sizes():
    rows = judge_rows([verdict("a", 1, 30, 0.9, 1.2), verdict("a", 0, 10, 0.5, 0.4), verdict("b", 1, 5, 0.2, 0.1)])
    assert [(r["judge"], r["target"]) for r in rows] == [("a", 1), ("a", 0), ("a", "both"), ("b", 1), ("b", "both")]
    pooled = rows[2]
    assert pooled["n"] == 40
    assert pooled["seen_rate"] == pytest.approx((30 * 0.9 + 10 * 0.5) / 40)
    assert pooled["shift"] == pytest.approx((30 * 1.2 + 10 * 0.4) / 40)


def test_a_missing_shift_is_left_out_of_the_pool_not_counted_as_zero():
    rows = judge_rows([verdict("a", 1, 30, 0.9, float("nan")), verdict("a", 0, 10, 0.5, 0.4)])
    assert rows[-1]["shift"] == pytest.approx(0.4)


def test_the_key_changes_with_any_setting_and_not_with_order():
    assert settings_key({"a": 1, "b": 2}) == settings_key({"b": 2, "a": 1})
    assert settings_key({"a": 1, "b": 2}) != settings_key({"a": 1, "b": 3})


def every_chunk(x, attributes, targets, config, folder):
    """Each attribute's edits of all faces, chunk by chunk in face order, as the run reads them."""
    chunks = [chunk_edits(x, None, attributes, targets, config, None, folder, start, min(start + 2, len(x)))
              for start in chunk_starts(len(x))]
    return {a: (torch.cat([c[a][0] for c in chunks]), [t for c in chunks for t in c[a][1]]) for a in attributes}


def test_edits_are_kept_by_chunk_and_a_resumed_run_makes_only_the_missing_ones(tmp_path, monkeypatch):
    made = []

    class Result:
        def __init__(self, images, shift):
            self.edits = images + shift

    def fake_generate(images, classifier, attribute, targets, config, generator, seeds):
        made.append((attribute, seeds))
        return Result(images, 0.5 if attribute == "Smiling" else -0.5)

    monkeypatch.setattr(quality_visible, "generate", fake_generate)
    monkeypatch.setattr(quality_visible, "CHUNK", 2)
    x = torch.rand(5, 3, 4, 4)
    targets = torch.ones(5, 40)
    config = type("Config", (), {"seed": 7})()
    made_now = every_chunk(x, ["Smiling", "Bangs"], targets, config, tmp_path)
    assert torch.equal(made_now["Smiling"][0], x + 0.5) and torch.equal(made_now["Bangs"][0], x - 0.5)
    assert len(made_now["Smiling"][1]) == 5
    # a chunk's faces in one batch per attribute, each face with its own seed
    assert made[:2] == [("Smiling", (7, 8)), ("Bangs", (7, 8))] and len(made) == 6
    (tmp_path / "Smiling-00002-00004.safetensors").unlink()  # a session ended before this chunk was kept
    made.clear()
    again = every_chunk(x, ["Smiling", "Bangs"], targets, config, tmp_path)
    assert torch.equal(again["Smiling"][0], made_now["Smiling"][0]) and made == [("Smiling", (9, 10))]
    assert torch.equal(again["Bangs"][0], made_now["Bangs"][0])
    assert not list(tmp_path.glob("*.tmp"))


def test_a_second_process_takes_the_chunks_from_the_last(monkeypatch):
    monkeypatch.setattr(quality_visible, "CHUNK", 2)
    assert chunk_starts(5) == [0, 2, 4]
    assert chunk_starts(5, backward=True) == [4, 2, 0]


def part(attributes, n=300, command="python -m scripts.measurements.quality_visible --attributes x"):
    return {"command": command, "date": "2026-12-04", "split": "test", "n": n, "stops": {"visible": 10.0},
            "settings": {"region_mask": True}, "threads": 1, "seconds_this_run": 100.0,
            "attributes": [{"attribute": a, "stop": s} for a in attributes for s in ("visible", "benchmark")]}


def test_parts_of_one_run_merge_keeping_each_command_and_others_are_refused():
    from scripts.measurements.merge_quality_parts import merged

    record = merged([part(["Smiling"], command="a"), part(["Bangs"], command="b")], "merge")
    assert [r["attribute"] for r in record["attributes"]] == ["Smiling", "Smiling", "Bangs", "Bangs"]
    assert record["commands"] == ["a", "b"] and record["command"] == "merge" and record["seconds_this_run"] == 200.0
    with pytest.raises(ValueError, match="differ in n"):
        merged([part(["Smiling"]), part(["Bangs"], n=500)], "merge")
    with pytest.raises(ValueError, match="more than one part: Smiling"):
        merged([part(["Smiling"]), part(["Smiling"])], "merge")


def test_chunks_read_and_kept_need_no_edits_when_the_run_goes_on(tmp_path, monkeypatch):
    """A run longer than a session: each chunk's face-by-face readings are kept (no pictures),
    and a run that finds them neither makes nor needs that chunk's edits."""
    from scripts.measurements.quality_visible import read_faces
    from tests.test_stop_readings import _originals

    class Result:
        def __init__(self, images, seeds):
            self.edits = images + 0.1 * torch.tensor(seeds, dtype=images.dtype).view(-1, 1, 1, 1)

    made = []

    def fake_generate(images, classifier, attribute, targets, config, generator, seeds):
        made.append(seeds)
        return Result(images, seeds)

    monkeypatch.setattr(quality_visible, "generate", fake_generate)
    monkeypatch.setattr(quality_visible, "CHUNK", 2)
    originals = _originals(5)
    config = type("Config", (), {"seed": 1})()
    stops = {"Smiling": {"visible": 4.0, "benchmark": 2.0}}
    for folder in ("edits", "faces"):
        (tmp_path / folder).mkdir()
    first = read_faces(originals, ["Smiling"], stops, config, None, tmp_path / "edits", tmp_path / "faces")
    assert len(made) == 3 and len(list((tmp_path / "faces").glob("Smiling-*.safetensors"))) == 3
    for kept in (tmp_path / "edits").glob("*.safetensors"):
        kept.unlink()  # the next session has none of the pictures
    made.clear()
    again = read_faces(originals, ["Smiling"], stops, config, None, tmp_path / "edits", tmp_path / "faces",
                       backward=True)
    assert made == []
    for stop in stops["Smiling"]:
        assert torch.equal(again["Smiling"][0][stop].logits, first["Smiling"][0][stop].logits)
        assert torch.equal(again["Smiling"][0][stop].features, first["Smiling"][0][stop].features)
    assert again["Smiling"][1] == first["Smiling"][1]
