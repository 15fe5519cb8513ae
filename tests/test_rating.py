"""The blind rating page and its scorer: the scorer on a hand-made key, the page hiding its key."""

import json
import re

import numpy as np
import pytest

from recourse.instruments.rating import RatingError, load_pairs, merge_pairs, rating_page, save_pairs, score_ratings
from scripts.figures import rating_page as rating_page_script
from scripts.measurements import score_ratings as score_ratings_script

# Task 1 adds a smile (the counterfactual, A, should smile more), task 2 removes one (the
# original, A, should), task 3 adds glasses (counterfactual B), task 4 removes youth (original A).
KEY = {"page_id": "hand-made", "tasks": [
    {"task": 1, "attribute": "Smiling", "target": 1, "counterfactual": "A"},
    {"task": 2, "attribute": "Smiling", "target": 0, "counterfactual": "B"},
    {"task": 3, "attribute": "Eyeglasses", "target": 1, "counterfactual": "B"},
    {"task": 4, "attribute": "Young", "target": 0, "counterfactual": "B"},
]}
RATINGS = {"page_id": "hand-made", "rater": "tester", "ratings": [
    {"task": 1, "more": "A", "same_person": "yes", "altered": "A"},  # seen; altered face spotted
    {"task": 2, "more": "A", "same_person": "no", "altered": "A"},  # seen; the original blamed
    {"task": 3, "more": "A", "same_person": "yes", "altered": "unsure"},  # seen reversed
    {"task": 4, "more": "same", "same_person": None, "altered": None},  # no difference; two unanswered
]}


def test_the_scorer_on_a_hand_made_key():
    score = score_ratings(RATINGS, KEY)
    assert (score.rater, score.n, score.answered_more) == ("tester", 4, 4)
    assert (score.seen, score.seen_reversed, score.no_difference) == (50.0, 25.0, 25.0)
    assert (score.answered_same_person, score.same_person, score.different_person) == (3, 66.67, 33.33)
    assert (score.answered_altered, score.altered_spotted, score.original_blamed, score.cannot_tell) == \
        (3, 33.33, 33.33, 33.33)
    assert score.seen_by_attribute == {"Eyeglasses": 0.0, "Smiling": 100.0, "Young": 0.0}


def test_the_scorer_refuses_ratings_of_another_page_and_bad_answers():
    with pytest.raises(RatingError, match="page"):
        score_ratings({**RATINGS, "page_id": "other"}, KEY)
    with pytest.raises(RatingError, match="not on this page"):
        score_ratings({**RATINGS, "ratings": [{"task": 9, "more": "A"}]}, KEY)
    with pytest.raises(RatingError, match="expected one of"):
        score_ratings({**RATINGS, "ratings": [{"task": 1, "more": "left"}]}, KEY)
    with pytest.raises(RatingError, match="twice"):
        score_ratings({**RATINGS, "ratings": [{"task": 1, "more": None}, {"task": 1, "more": "A"}]}, KEY)
    empty = score_ratings({**RATINGS, "ratings": []}, KEY)
    assert empty.seen is None and empty.answered_more == 0


def pairs_file(tmp_path, n=6):
    rng = np.random.default_rng(0)
    originals = rng.integers(0, 256, (n, 3, 16, 16), dtype=np.uint8)
    counterfactuals = rng.random((n, 3, 16, 16))  # floats in [0, 1] are accepted too
    return save_pairs(tmp_path / "pairs.npz", originals, counterfactuals, ["Smiling", "Male"] * (n // 2),
                      np.arange(n) % 2, model=np.array(["ptq-int4"] * n))


def test_the_page_hides_its_key_and_its_answers_score(tmp_path):
    path = pairs_file(tmp_path)
    page = rating_page(load_pairs(path), 4, seed=1, source="pairs.npz")
    assert page.key["n"] == 4 and len(page.key["tasks"]) == 4
    assert len({task["pair_index"] for task in page.key["tasks"]}) == 4
    assert all(task["model"] == "ptq-int4" for task in page.key["tasks"])  # the key keeps the extras
    assert "ptq-int4" not in page.html and "counterfactual" not in page.html.lower()
    assert "target" not in page.html.lower()
    assert len(re.findall(r'src="data:image/png;base64,', page.html)) == 8
    assert page.key["page_id"] in page.html
    assert page == rating_page(load_pairs(path), 4, seed=1, source="pairs.npz")  # seeded
    # a rater who always names the counterfactual as altered spots every one
    ratings = {"page_id": page.key["page_id"], "ratings": [
        {"task": t["task"], "more": None, "same_person": "yes", "altered": t["counterfactual"]}
        for t in page.key["tasks"]]}
    score = score_ratings(ratings, page.key)
    assert score.altered_spotted == 100.0 and score.same_person == 100.0 and score.seen is None


@pytest.mark.slow
def test_the_pair_order_is_shuffled(tmp_path):
    page = rating_page(load_pairs(pairs_file(tmp_path, n=40)), 40, seed=0)
    sides = [task["counterfactual"] for task in page.key["tasks"]]
    assert 10 <= sides.count("A") <= 30


def test_bad_pairs_are_refused(tmp_path):
    images = np.zeros((2, 3, 8, 8), np.uint8)
    with pytest.raises(RatingError, match="unknown attributes"):
        save_pairs(tmp_path / "p.npz", images, images, ["Smiling", "Smile"], [0, 1])
    with pytest.raises(RatingError, match="0 or 1"):
        save_pairs(tmp_path / "p.npz", images, images, ["Smiling"] * 2, [0, 2])
    with pytest.raises(RatingError, match="pair up"):
        save_pairs(tmp_path / "p.npz", images, images[:1], ["Smiling"] * 2, [0, 1])
    np.savez(tmp_path / "bare.npz", originals=images)
    with pytest.raises(RatingError, match="missing counterfactuals, attributes, targets"):
        load_pairs(tmp_path / "bare.npz")
    with pytest.raises(RatingError, match="asked for 3"):
        rating_page(load_pairs(pairs_file(tmp_path, n=2)), 3)


def test_the_scripts_write_a_page_and_score_it(tmp_path, capsys):
    path = pairs_file(tmp_path)
    page, key = tmp_path / "page.html", tmp_path / "key.json"
    rating_page_script.main([str(path), "--n", "3", "--out", str(page), "--key", str(key)])
    saved = json.loads(key.read_text())
    assert page.read_text().startswith("<!doctype html>") and saved["n"] == 3
    ratings = tmp_path / "ratings.json"
    ratings.write_text(json.dumps({"page_id": saved["page_id"], "rater": "x", "ratings": [
        {"task": 1, "more": "same", "same_person": "yes", "altered": "unsure"}]}))
    score_ratings_script.main([str(ratings), "--key", str(key), "--json", str(tmp_path / "scores.json")])
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["raters"][0]["no_difference"] == 100.0 and scores["raters"][0]["cannot_tell"] == 100.0
    assert "edit seen 0.0%" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.requires("chromium", "playwright")
def test_the_page_exports_what_a_rater_clicked(tmp_path):
    """The page's own JavaScript in headless Chromium: answers clicked, exported, scored."""
    import playwright.sync_api as playwright_api

    from scripts.figures.app_screenshot import CHROMIUM, CHROMIUM_FLAGS

    page_file = tmp_path / "page.html"
    page = rating_page(load_pairs(pairs_file(tmp_path)), 2, seed=0)
    page_file.write_text(page.html, encoding="utf-8")
    first = page.key["tasks"][0]
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            tab = browser.new_page(accept_downloads=True)
            tab.goto(page_file.as_uri())
            tab.fill("#rater", "browser")
            tab.check(f'input[name="more-1"][value="{first["counterfactual"]}"]')
            tab.check('input[name="same_person-1"][value="no"]')
            tab.check('input[name="altered-2"][value="unsure"]')
            with tab.expect_download() as download:
                tab.click("#export")
            exported = json.loads(download.value.path().read_text())
            assert json.loads(tab.input_value("#output")) == exported
            assert "3 questions unanswered" in tab.text_content("#status")
        finally:
            browser.close()
    assert exported["rater"] == "browser" and exported["ratings"][1]["more"] is None
    score = score_ratings(exported, page.key)
    assert score.answered_more == 1 and score.seen == (100.0 if first["target"] == 1 else 0.0)
    assert score.different_person == 100.0 and score.cannot_tell == 100.0


def method_pairs(method: str | None, n: int, seed: int, size: int = 16) -> dict:
    """``n`` pairs of distinct random faces; ``method`` (if any) as the key-only array."""
    rng = np.random.default_rng(seed)
    pairs = {"originals": rng.integers(0, 256, (n, 3, size, size), dtype=np.uint8),
             "counterfactuals": rng.integers(0, 256, (n, 3, size, size), dtype=np.uint8),
             "attributes": np.array(["Smiling", "Young"] * (n // 2)), "targets": np.arange(n) % 2,
             "face_index": np.arange(n) + 100 * seed}
    return pairs if method is None else {**pairs, "method": np.array([method] * n)}


@pytest.mark.slow
def test_merged_pairs_keep_their_methods_in_the_key_and_off_the_page(tmp_path):
    merged = merge_pairs([("runs/generated", method_pairs("zebra-method-one", 10, seed=1)),
                          ("elsewhere/quokka-generator.npz", method_pairs(None, 10, seed=2))])
    assert len(merged["originals"]) == 20 and merged["originals"].dtype == np.uint8
    assert merged["method"].tolist() == ["zebra-method-one"] * 10 + ["quokka-generator"] * 10  # else the file's name
    assert merged["source"].tolist() == ["runs/generated"] * 10 + ["elsewhere/quokka-generator.npz"] * 10
    assert merged["face_index"].tolist()[10:] == list(range(200, 210))  # a field every source has is kept
    page = rating_page(merged, 20, seed=0, source="secret-pairs-file.npz")
    assert {task["method"] for task in page.key["tasks"]} == {"zebra-method-one", "quokka-generator"}
    assert {task["source"] for task in page.key["tasks"]} == {"runs/generated", "elsewhere/quokka-generator.npz"}
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page.html).lower()  # base64 spells words by chance
    for hidden in ("zebra", "quokka", "generated", "secret-pairs-file", "target", "counterfactual", "face_index"):
        assert hidden not in text
    sides = [task["counterfactual"] for task in page.key["tasks"]]
    assert {"A", "B"} == set(sides)  # the sides are shuffled over the page
    assert sorted(task["pair_index"] for task in page.key["tasks"]) == list(range(20))
    assert [task["pair_index"] for task in page.key["tasks"]] != list(range(20))  # and so is the order


def test_merging_refuses_other_sizes_and_a_face_shown_twice():
    with pytest.raises(RatingError, match="different image sizes: a 3x16x16, b 3x8x8"):
        merge_pairs([("a", method_pairs("m", 2, seed=1)), ("b", method_pairs("m", 2, seed=1, size=8))])
    with pytest.raises(RatingError, match=r"same face is the original of pair 0 \(a\) and pair 2 \(b\)"):
        merge_pairs([("a", method_pairs("m", 2, seed=1)), ("b", method_pairs("n", 2, seed=1))])
    with pytest.raises(RatingError, match="no pairs"):
        merge_pairs([])
    with pytest.raises(RatingError, match="b: missing targets"):
        merge_pairs([("a", method_pairs("m", 2, seed=1)),
                     ("b", {k: v for k, v in method_pairs("m", 2, seed=2).items() if k != "targets"})])
