"""The registered placement family (issue 54, ``assets/results/benchmark-placement.json``): every
claim has at least 80% power against a retrained-seed-sized difference at the registered N, the
claims left out say why, the file reads as the run's setting, and a run that is not the registered
one is refused."""

import json
import subprocess

import pytest

from recourse.benchmark.placement_claims import RegisteredPlacements
from recourse.benchmark.registration import deviations, registered_run
from recourse.locations import assets_dir, project_root
from tests.test_primary_benchmark_doc import _commits

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


def test_the_registration_was_committed_before_any_part_of_its_run():
    from scripts.docs.results import placement_benchmark

    registration = _commits(f"assets/results/{placement_benchmark.REGISTRATION}")
    # the noise draws' sigmas are kept in the parts' folder too; they are matched on validation faces,
    # no result of the run, so the parts proper are the files other than them
    results = _commits(f"{placement_benchmark.PARTS}/*", f":(exclude){placement_benchmark.PARTS}/noise-sigma-*",
                       f"assets/results/{placement_benchmark.RUN_FOLDER}")
    sigmas = _commits(placement_benchmark.PARTS)
    if not registration:
        pytest.skip("no git history here (an export without .git)")
    assert sigmas, "the run's kept sigmas are committed"
    if results:  # every commit of the registration (its amendments too) precedes the first part
        assert int(registration[-1]) <= int(results[0])


def test_the_run_s_code_is_a_commit_of_main_that_holds_the_registration_as_it_stands():
    from scripts.docs.results import placement_benchmark

    commit = placement_benchmark.CODE_COMMIT
    def git(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *words], cwd=project_root(), capture_output=True, text=True, timeout=60)
    try:
        if git("cat-file", "-t", commit).stdout.strip() != "commit":
            pytest.skip("no git history here (an export without .git, or a shallow clone)")
    except (OSError, subprocess.SubprocessError):
        pytest.skip("git is not available")
    assert git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0
    registered = git("show", f"{commit}:assets/results/{placement_benchmark.REGISTRATION}").stdout
    assert json.loads(registered) == json.loads(REGISTERED.read_text())


def test_the_page_gives_the_run_s_command_and_its_progress_until_it_is_done():
    from scripts.docs.results import files, placement_benchmark

    text = "\n".join(placement_benchmark.section(lambda name: files.load(name) if name != placement_benchmark.RUN
                                                  else None))
    assert placement_benchmark.RUN_COMMAND in text and "Not finished:" in text
    assert f"the code of commit {placement_benchmark.CODE_COMMIT[:7]}" in text
    assert f"its {placement_benchmark.expected_parts(json.loads(REGISTERED.read_text()))} student parts" in text
    assert "23, α 0.05 by Holm" in text and "**Amended 2026-12-07, before any result:**" in text
    # the run's command is the registered run: nothing in it deviates
    from recourse.cli import build_parser
    from recourse.cli.benchmark import _benchmark_settings

    words = placement_benchmark.RUN_COMMAND.split()
    args = build_parser().parse_args(words[words.index("-m") + 2:])
    settings = _benchmark_settings(args)
    run = registered_run(REGISTERED)
    assert deviations(run, split=args.split, first_task=settings.first_task, tasks=settings.n,
                      attributes=settings.attributes, margin=settings.counterfactual.margin,
                      variants=tuple(args.variants), generator=args.generator or str(_generator()),
                      noise_draws=settings.noise_draws, matched_noise=settings.matched_noise,
                      rerun_floor=args.rerun_floor, reference_models=len(args.reference_models)) == []
    assert settings.placement_family == RegisteredPlacements.from_file(REGISTERED)


def test_the_page_reads_the_claims_and_every_row_from_a_record():
    from scripts.docs.results import placement_benchmark

    placed = {"value": 92.0, "mean": 93.0, "sd": 0.5, "p": 0.07}
    record = {"placement_claims": [
        {"row": "ptq-int4", "metric": "dirsim", "against": "noise", "value": 92.0, "family_mean": 93.0,
         "family_sd": 0.5, "members": 10, "t": -1.9, "p": 0.07, "p_holm": 1.0, "empirical_p": 0.18,
         "reading": "inside its family"},
        {"row": "fp32-ref-classifier-seed1", "metric": "dirsim", "against": "noise", "value": 74.0,
         "family_mean": 90.0, "family_sd": 0.6, "members": 10, "t": -25.3, "p": 1e-9, "p_holm": 1e-8,
         "empirical_p": 0.09, "reading": "below its family"},
        {"row": "gone", "metric": "crg", "against": "noise", "value": None, "family_mean": None, "family_sd": None,
         "members": 0, "t": None, "p": None, "p_holm": None, "empirical_p": None, "reading": "no reading"}],
        "placements": {"seed_margins": {"Smiling": 7.4}, "rows": {"ptq-int4": {
            "values": {}, "noise": {"dirsim": placed, "crg": None, "newly_seen": None},
            "seeds": {"dirsim": None, "crg": None, "newly_seen": None},
            "newly_seen": {"all": {"share": 40.0, "teacher": 45.0, "tasks": 60, "row_only": 2, "teacher_only": 5}},
            "within_seed_spread": {"Smiling": False, "Young": True}}}}}
    text = "\n".join(placement_benchmark.results(record))
    assert "| ptq-int4 | DirSim % | 92.000 | 93.000 ± 0.500 (10) | 0.07 | 1 | 0.18 | **inside its family** |" in text
    assert "| gone | CRG | — |" in text and "no reading" in text
    assert "| ptq-int4 | 92.0 in 93.0 ± 0.5 (p 0.07) | — | — | — | 40.0 / 45.0 (2 / 5) | — | Smiling |" in text
    assert "Smiling 7.4" in text and placement_benchmark.RECOMPUTE in text
    # the seeds are read as what they are, and "inside" is said not to mean "equivalent"
    assert "read by the same rule as a row: fp32-ref-classifier-seed1 DirSim % below its family." in text
    assert "is not \"equivalent to the teacher\"" in text


def test_the_page_states_the_run_s_wall_time_over_its_launches():
    from scripts.docs.results import placement_benchmark

    segments = {"how": "two launches, one a session",
                "segments": [{"start": "2026-12-07T10:00:00", "end": "2026-12-07T12:00:00", "paused_minutes": 30.0},
                             {"start": "2026-12-08T09:00:00", "end": "2026-12-08T10:00:00", "paused_minutes": 0.0}]}
    text = "\n".join(placement_benchmark.wall_time(segments))
    assert text.startswith("Wall time: 2.50 h on 2 cores over 2 launches, pauses left out: two launches, one a session")
    assert placement_benchmark.wall_time(None) == []
