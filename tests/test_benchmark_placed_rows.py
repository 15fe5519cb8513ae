"""Each row placed in its matched-noise family and among the retrained seeds (issue 54): newly-seen
semantic validity by hand, which draws make each family, the registered claims read by Holm over
exactly themselves, the record's fields, and the same numbers again from the saved columns."""

import math
from dataclasses import replace

import pytest
import torch

from recourse.audit.paired import RecourseColumns
from recourse.benchmark import BenchmarkSettings
from recourse.benchmark.newly_seen import movable, newly_seen
from recourse.benchmark.placed_rows import noise_draws_of, placed_rows, placement_claims, placements
from recourse.benchmark.placement_claims import PlacementClaim, RegisteredPlacements
from recourse.benchmark.run import placement_fields
from recourse.benchmark.saved_columns import columns_of_records, read_columns, write_columns
from recourse.benchmark.semantic import SemanticColumns
from recourse.benchmark.settings import FAMILIES_ANALYSIS
from tests.test_benchmark_symmetry import random_records

# --- newly seen, by hand ------------------------------------------------------------------------


def _semantic(judged, face_seen, student_seen, teacher_seen) -> SemanticColumns:
    n = len(judged)
    nan = torch.full((n,), math.nan, dtype=torch.float64)
    return SemanticColumns(torch.tensor(judged), torch.tensor(teacher_seen), torch.tensor(student_seen), nan, nan, nan,
                           nan, torch.tensor(face_seen, dtype=torch.float64))


def _columns(student_valid, teacher_valid) -> RecourseColumns:
    n = len(student_valid)
    zeros = torch.zeros(n, dtype=torch.float64)
    return RecourseColumns(target=torch.zeros(n, dtype=torch.long), teacher_valid=torch.tensor(teacher_valid),
                           student_accepts_teacher=torch.ones(n, dtype=torch.bool),
                           student_valid=torch.tensor(student_valid), teacher_cost=zeros, student_cost=zeros,
                           cosine=zeros, teacher_logit=zeros, student_logit=zeros,
                           teacher_partial=torch.zeros(n, 2), student_partial=torch.zeros(n, 2))


def test_newly_seen_counts_only_the_faces_the_judge_does_not_already_see_on_the_target_side():
    nan = math.nan
    # tasks 0, 1, 3 and 5 can move: task 2's face is already seen, task 4's has no face, task 6 is not judged
    semantic = _semantic(judged=[True, True, True, True, True, True, False],
                         face_seen=[0, 0, 1, 0, nan, 0, nan],
                         student_seen=[True, False, True, True, True, True, True],
                         teacher_seen=[True, True, True, False, True, True, True])
    columns = _columns(student_valid=[True, True, True, True, True, False, True],
                       teacher_valid=[True, True, True, True, True, True, True])
    assert movable(semantic).tolist() == [True, True, False, True, False, True, False]
    attributes = ("Smiling", "Smiling", "Smiling", "Smiling", "Young", "Young", "Young")
    found = newly_seen(columns, semantic, attributes)
    # row: tasks 0 and 3 (task 5 seen but not valid); teacher: 0, 1 and 5
    assert (found.all.share, found.all.teacher, found.all.tasks) == (50.0, 75.0, 4)
    assert (found.all.row_only, found.all.teacher_only) == (1, 2)
    assert found.per_attribute["Smiling"].tasks == 3 and found.per_attribute["Young"].tasks == 1
    assert found.per_attribute["Young"].share == 0.0 and found.per_attribute["Young"].teacher == 100.0


def test_columns_without_the_face_reading_say_so():
    semantic = replace(_semantic([True], [0.0], [True], [True]), face_seen=None)
    with pytest.raises(ValueError, match="already saw each face"):
        movable(semantic)


# --- a run's placements -------------------------------------------------------------------------

DRAWS = 10
SEEDS = ("fp32-ref-a", "fp32-ref-b", "fp32-ref-c")


def _names() -> list[str]:
    rows = ["ptq-int8", "ptq-int4"]
    rows += [f"fp32-noise{'' if k == 0 else f'-s{k}'}@ptq-int8" for k in range(DRAWS)]
    rows += ["fp32-noise" if k == 0 else f"fp32-noise-s{k}" for k in range(DRAWS)]  # the noise control's: ptq-int4
    rows += [f"fp32-noise{'' if k == 0 else f'-s{k}'}@fp32-ref-a" for k in range(DRAWS)]
    return rows + ["fp32-rerun", *SEEDS]


def _records(far: str | None = "ptq-int8", tasks: int = 60) -> list[dict]:
    """Judged records of every row of :func:`_names`; the row ``far``'s recourse directions turned
    away from the teacher's (cosine 0.05), so that its DirSim lies far below its family's."""
    names = _names()
    records = random_records({name: 0.05 for name in names}, tasks=tasks, seed=5)
    generator = torch.Generator().manual_seed(9)
    for i, record in enumerate(records):
        record["teacher_judge_seen"] = i % 3 != 0
        record["teacher_judge_score"], record["teacher_judge_shift"] = 0.5, 0.2
        record["teacher_judge_face_seen"] = i % 5 == 0
        for name, student in record["students"].items():
            student["judge_seen"] = bool(torch.rand(1, generator=generator) < 0.6)
            student["judge_score"], student["judge_shift"] = 0.5, 0.2
            if name == far and student["cost"] > 0:
                student["cosine"] = 0.05
    return records


SETTINGS = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                             bootstrap_samples=50, noise_draws=DRAWS, matched_noise=("ptq-int8", "fp32-ref-a"))


def test_each_row_and_each_seed_is_placed_in_its_own_family_and_among_the_seeds():
    names = _names()
    assert placed_rows(names) == ["ptq-int8", "ptq-int4", *SEEDS]
    assert noise_draws_of("ptq-int8", names, "ptq-int4", DRAWS)[1] == "fp32-noise-s1@ptq-int8"
    assert noise_draws_of("ptq-int4", names, "ptq-int4", DRAWS)[:2] == ["fp32-noise", "fp32-noise-s1"]
    # the other seeds read the family matched to the first seed's agreement
    assert noise_draws_of("fp32-ref-c", names, "ptq-int4", DRAWS) == noise_draws_of("fp32-ref-a", names, "ptq-int4",
                                                                                      DRAWS)
    saved = columns_of_records(_records(), names)
    found = placements(saved, "ptq-int4", DRAWS)
    assert found.retrained_seeds == list(SEEDS)
    assert set(found.noise_families) == {"ptq-int8", "ptq-int4", *SEEDS}
    assert all(len(draws) == DRAWS for draws in found.noise_families.values())
    far, near = found.rows["ptq-int8"], found.rows["ptq-int4"]
    assert far.values["dirsim"] < far.noise["dirsim"].mean and far.noise["dirsim"].outside(0.001)
    assert not near.noise["dirsim"].outside(0.001)
    assert len(found.rows["fp32-ref-b"].seeds["crg"].members) == 2  # a seed among the other two
    # newly seen: the discordant counts against the teacher, and each attribute within the seeds' spread or not
    assert far.newly_seen.all.tasks == sum(i % 5 != 0 for i in range(60))
    assert set(found.seed_margins) == {"Smiling", "Bangs"}
    assert all(found.rows[s].within_seed_spread[a] for s in SEEDS for a in found.seed_margins)


def test_the_registered_claims_are_read_by_holm_over_exactly_themselves():
    saved = columns_of_records(_records(), _names())
    found = placements(saved, "ptq-int4", DRAWS)
    registered = RegisteredPlacements("file", (PlacementClaim("ptq-int8", "dirsim", "noise"),
                                               PlacementClaim("ptq-int4", "dirsim", "noise"),
                                               PlacementClaim("gone", "crg", "noise")), alpha=0.05)
    read = placement_claims(found, registered)
    assert [c["reading"] for c in read] == ["below its family", "inside its family", "no reading"]
    p = [c["p"] for c in read]
    assert read[0]["p_holm"] == pytest.approx(min(1.0, 3 * p[0]))  # a missing claim still counts in m
    assert math.isnan(read[2]["p"]) and math.isnan(read[2]["p_holm"])
    with pytest.raises(ValueError):
        PlacementClaim("ptq-int8", "vd", "noise")


def test_the_record_s_placements_come_back_from_the_saved_columns(tmp_path):
    names = _names()
    saved = columns_of_records(_records(), names)
    settings = replace(SETTINGS, placement_family=RegisteredPlacements(
        "file", (PlacementClaim("ptq-int8", "crg", "noise"), PlacementClaim("fp32-ref-b", "dirsim", "noise"))))
    fields = placement_fields(saved, settings)
    assert fields["retrained_seeds"] == SEEDS and fields["noise_families"]["ptq-int8"][0] == "fp32-noise@ptq-int8"
    assert len(fields["placement_claims"]) == 2 and "rows" in fields["placements"]
    written = write_columns(tmp_path / "columns.npz", saved)
    assert placement_fields(read_columns(tmp_path / written["file"]), settings) == fields
    # a record of an earlier analysis reads back without placements
    assert placement_fields(saved, replace(settings, analysis=FAMILIES_ANALYSIS)) == {}
