"""The registered placement family (issue 54, ``assets/results/benchmark-placement.json``): every
claim has at least 80% power against a retrained-seed-sized difference at the registered N, the
claims left out say why, the file reads as the run's setting, and a run that is not the registered
one is refused."""

import json

import pytest

from recourse.benchmark.placement_claims import RegisteredPlacements
from recourse.benchmark.registration import deviations, registered_run
from recourse.locations import assets_dir

REGISTERED = assets_dir() / "results" / "benchmark-placement.json"


def test_every_registered_claim_has_the_power_it_was_chosen_for():
    record = json.loads(REGISTERED.read_text())
    family = RegisteredPlacements.from_file(REGISTERED)
    assert len(family.claims) == len(record["claims"]) == len(record["power"]["claims"])
    assert {(c.row, c.metric) for c in family.claims} == {(c["row"], c["metric"]) for c in record["power"]["claims"]}
    assert all(c["power"] >= 0.8 for c in record["power"]["claims"])
    assert record["power"]["alpha_per_claim"] == pytest.approx(0.05 / len(family.claims))
    # every row and seed is placed on DirSim; a CRG claim left out says what it would need
    assert {c.row for c in family.claims if c.metric == "dirsim"} == {*record["run"]["rows"],
                                                                      *record["not_registered"]["seeds"]["seeds"]}
    for claim in record["power"]["left_out"]:
        assert claim["power"] < 0.8 and (claim["tasks_needed"] is None or claim["tasks_needed"] > record["run"]["tasks"])
    assert record["run"]["tasks"] == record["power"]["tasks"]


@pytest.mark.slow
def test_the_registration_is_what_its_command_makes_from_the_committed_run(tmp_path):
    from scripts.measurements import register_placement

    written = tmp_path / "placement.json"
    register_placement.main(["--json", str(written)])
    again, committed = json.loads(written.read_text()), json.loads(REGISTERED.read_text())
    for record in (again, committed):
        record.pop("command")
    assert again == committed


def test_a_run_that_is_not_the_registered_one_is_refused():
    run = registered_run(REGISTERED)
    matched = tuple(run["rows"]) + ("fp32-ref-classifier-seed1",)
    exact = dict(split="test", first_task=run["first_task"], tasks=run["tasks"], attributes=tuple(run["attributes"]),
                 margin=run["margin"], variants=tuple(run["rows"]), generator=str(_generator()), noise_draws=10,
                 matched_noise=matched, rerun_floor=True, reference_models=3)
    assert deviations(run, **exact) == []
    assert deviations(run, **{**exact, "noise_draws": 3}) == ["noise draws 3, registered 10"]
    assert "fp32-ref-classifier-seed1" in deviations(run, **{**exact, "matched_noise": matched[:-1]})[0]


def _generator():
    from recourse.locations import generator_dir

    return generator_dir()
