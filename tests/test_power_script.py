"""recourse power (recourse/benchmark/power.py): the sample sizes behind issue 26's choice of N."""

import json

import pytest

from recourse.cli import main


def test_a_proportion_takes_its_discordance_as_optional(tmp_path):
    out = tmp_path / "power.json"
    main(["power", "--proportion", "a", "10", "5", "1.0", "--proportion", "b", "10", "5", "0.5", "8",
                "--json", str(out)])
    first, second = json.loads(out.read_text())["claims"]
    assert "independent errors" in first["assumption"]
    assert second["assumption"] == "discordance 8.0%"
    assert second["tasks"] == 2 * second["units"]
    assert json.loads(out.read_text())["command"].startswith("python -m recourse power --proportion a 10 5 1.0")


def test_a_proportion_with_too_few_values_is_refused():
    with pytest.raises(SystemExit, match="takes 4 or 5 values, got 3"):
        main(["power", "--proportion", "a", "10", "5"])


def test_a_larger_family_needs_more_tasks(tmp_path):
    def tasks(family: int) -> int:
        out = tmp_path / f"{family}.json"
        main(["power", "--family-size", str(family), "--mean", "m", "1", "4", "1.0", "--json", str(out)])
        return json.loads(out.read_text())["claims"][0]["tasks"]

    assert tasks(1) < tasks(100) < tasks(1000)


def test_an_interval_implies_the_sd_it_rests_on(tmp_path):
    out = tmp_path / "power.json"
    # 1.96 · sd / √100 = 1 → sd = 5.1
    main(["power", "--from-interval", "i", "-3", "-4", "-2", "100", "1.0", "--json", str(out)])
    claim = json.loads(out.read_text())["claims"][0]
    assert claim["assumption"].startswith("sd 5.1")
