"""The results page's independent judges: the calibration with its ceilings, and each baseline's
seen rates beside them with the CelebA-trained judges as secondary columns."""

from scripts.docs.results import judges as results_judges


def calibration_row(judge, attribute, auc, independent=True):
    return {"judge": judge, "trained_on": f"{judge}'s photos", "attribute": attribute, "threshold": 0.5, "auc": auc,
            "balanced_accuracy": 0.8, "tpr": 0.75, "tnr": 0.85, "n": 100, "found": 0.99, "val_auc": auc,
            "usable": auc >= 0.8, "independent": independent}


def verdict(judge, attribute, target, seen, independent=True, n=40):
    return {"judge": judge, "attribute": attribute, "target": target, "n": n, "missing": 1, "seen_rate": seen,
            "seen_low": seen - 0.1, "seen_high": seen + 0.05, "ceiling": 0.75, "seen_over_ceiling": seen / 0.75,
            "shift": 0.4, "shift_low": 0.3, "shift_high": 0.5, "independent": independent}


FILES = {
    "independent-judges-test.json": {"command": "python -m scripts.calibrate_judges", "min_auc": 0.8, "judges": [
        calibration_row("robust r1", "Young", 0.83, independent=False), calibration_row("age", "Young", 0.84),
        calibration_row("age", "Male", 0.99), calibration_row("robust r3", "Young", 0.79, independent=False)]},
    "independent-judges-baseline-m10.json": {
        "command": "python -m scripts.judge_counterfactuals --saved m10.npz", "run": "python -m recourse x",
        "label": "margin 10", "split": "test", "n": 500,
        "verdicts": [verdict("age", "Young", 1, 0.6), verdict("robust r1", "Young", 1, 0.9, independent=False),
                     verdict("age", "Young", 0, 0.5, n=0)]},
}


def test_the_page_shows_ceilings_beside_seen_rates_and_the_celeba_judges_last():
    page = "\n".join(results_judges.section(FILES.get))
    assert "| age | Young | 0.840 (0.840) | 80.0 | 75.0 | 85.0 | 99.0 | yes |" in page
    assert "| robust r3 | Young | 0.790 (0.790) | 80.0 | 75.0 | 85.0 | 99.0 | 100.0 | no (AUC < 0.8) |" not in page
    assert "| robust r3 | Young | 0.790 (0.790) | 80.0 | 75.0 | 85.0 | 99.0 | no (AUC < 0.8) |" in page
    # independent judges first, the CelebA-trained ones named as such
    assert page.index("| age | Young") < page.index("| robust r1 | Young")
    assert "**robust r1**: trained on the same faces as the classifier" in page
    assert "Under AUC 0.85 on test: age on Young (AUC 0.840)." in page
    assert ("| Young | 1 | age | 40 | 60.0 [50.0, 65.0] of 75.0 | 0.80 | +0.40 [+0.30, +0.50] | "
            "90.0 [80.0, 95.0] of 75.0 |") in page
    assert "| Young | 0 | age | 0 | no face found (1) | 0.67 | — | — |" in page
    assert "robust r1: seen % of ceiling" in page and "python -m recourse x" in page
    assert "_The baseline independent-judges-baseline-m2: not measured yet._" in page


def test_without_a_calibration_the_page_says_how_to_make_one():
    page = "\n".join(results_judges.section(lambda name: None))
    assert "_The independent judges' calibration: not measured yet._" in page
    assert results_judges.CALIBRATE_COMMAND in page
