"""recourse.benchmark.saved_columns and recompute, ``recourse recompute-claims``: a run's per-task
columns saved beside its record (never a pickle), its statistics recomputed from them alone,
and a changed value found."""

import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

from recourse.benchmark import BenchmarkResult, BenchmarkSettings
from recourse.benchmark.claims import claims
from recourse.benchmark.recompute import check_run
from recourse.benchmark.rows import family_of, family_rows, row_recourse
from recourse.benchmark.run import placement_fields
from recourse.benchmark.saved_columns import COLUMNS_FILE, columns_of_records, file_sha256, read_columns, write_columns
from recourse.benchmark.settings import (
    ANALYSES, ANALYSIS, DATED_ANALYSES, FAMILIES_ANALYSIS, LEGACY_ANALYSIS, analysis_version,
)
from recourse.benchmark.settings import recorded_analysis
from recourse.cli import main
from recourse.locations import assets_dir
from tests.test_benchmark import _row
from tests.test_benchmark_symmetry import random_records

RATES = {"g": 0.3, "g-s1": 0.25, "ptq-int4": 0.1, "cfq-qat-norecourse": 0.15, "cfq-qat-norecourse-s1": 0.2,
         "fp32-noise": 0.05, "fp32-noise-s1": 0.02, "fp32-ref-seed1": 0.25}


def tiny_run(folder: Path, settings: BenchmarkSettings | None = None) -> Path:
    """A run's record and columns file as :func:`recourse.benchmark.run_benchmark` writes them,
    from generated task records (no model): returns the record's path."""
    folder.mkdir(parents=True, exist_ok=True)
    records = random_records(RATES, tasks=40, seed=5)
    settings = settings or BenchmarkSettings(n=40, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                             bootstrap_samples=100)
    saved = columns_of_records(records, list(RATES))
    rows = [_row("fp32", family="fp32"), *(replace(_row(name, family=family_of(name)),
                                                   **row_recourse(name, saved.rows, list(saved.attributes), settings))
                                           for name in RATES)]
    families = family_rows(rows, records, settings)
    result = BenchmarkResult(date="2026-12-03", command="python -m recourse benchmark …", split="test", n=40,
                             attributes=settings.attributes, accuracy_images=40, processes=1, seconds=1.0,
                             settings=asdict(settings), rows=tuple(rows), families=tuple(families),
                             claims=tuple(claims(families, analysis=settings.analysis)),
                             columns=write_columns(folder / COLUMNS_FILE, saved), **placement_fields(saved, settings))
    (folder / "benchmark.json").write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    return folder / "benchmark.json"


def _rewrite(path: Path, **changed: np.ndarray) -> None:
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    np.savez_compressed(path, **{**arrays, **changed})


@pytest.mark.slow
def test_a_run_saves_its_columns_and_recomputes_its_claims_from_them(tmp_path, capsys):
    path = tiny_run(tmp_path)
    record = json.loads(path.read_text())
    assert record["columns"] == {"file": COLUMNS_FILE, "sha256": file_sha256(tmp_path / COLUMNS_FILE)}
    saved = read_columns(tmp_path / COLUMNS_FILE)
    assert list(saved.rows) == list(RATES) and saved.tasks == tuple(range(40))
    assert saved.attributes[:2] == ("Smiling", "Bangs") and saved.rows["g"].teacher_partial.shape == (40, 2)
    _, again, problems = check_run(path)
    assert problems == [] and len(again.claims) == len(record["claims"]) > 0
    assert main(["recompute-claims", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "analysis v3" in out and "agrees with the record within 1e-09" in out
    assert "primary" in out and "pair " in out  # the pair of references counted once
    # the first analysis recomputes too, from the same columns
    committed = BenchmarkSettings(n=40, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                  bootstrap_samples=100, analysis=LEGACY_ANALYSIS)
    legacy = tiny_run(tmp_path / "legacy", committed)
    assert check_run(legacy)[2] == []


@pytest.mark.slow
def test_a_changed_column_or_record_is_found(tmp_path, capsys):
    path = tiny_run(tmp_path)
    columns = tmp_path / COLUMNS_FILE
    with np.load(columns, allow_pickle=False) as data:
        accepts = data["student_accepts_teacher"].copy()
    row = list(RATES).index("g")
    task = int(np.flatnonzero(accepts[row])[0])
    accepts[row, task] = False  # one task of one row: g now rejects the teacher's edit there
    _rewrite(columns, student_accepts_teacher=accepts)
    assert main(["recompute-claims", str(path)]) == 1
    out = capsys.readouterr().out
    assert "SHA-256" in out and "record.rows[1].vd: recorded" in out  # rows[1] is g
    # with the digest made to match, the numbers still give it away
    record = json.loads(path.read_text())
    record["columns"]["sha256"] = file_sha256(columns)
    path.write_text(json.dumps(record))
    problems = check_run(path)[2]
    assert problems and not any("SHA-256" in p for p in problems)
    assert any(".claims[" in p for p in problems) and any(".families[" in p for p in problems)
    # a record changed by more than the tolerance is found; by less, it is not
    fresh = tiny_run(tmp_path / "fresh")
    record = json.loads(fresh.read_text())
    record["claims"][0]["p"] *= 1 + 1e-12
    fresh.write_text(json.dumps(record))
    assert check_run(fresh)[2] == []
    record["claims"][0]["p"] += 1e-6
    fresh.write_text(json.dumps(record))
    assert [p.split(":")[0] for p in check_run(fresh)[2]] == ["record.claims[0].p"]


@pytest.mark.slow
def test_a_columns_file_is_never_unpickled_and_a_run_without_one_is_said(tmp_path, capsys):
    path = tiny_run(tmp_path)
    columns = tmp_path / COLUMNS_FILE
    with np.load(columns, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["rows"] = np.array([object()] * len(RATES), dtype=object)  # only a pickle can hold this
    np.savez(columns, **arrays)
    with pytest.raises(ValueError, match="not a columns file"):
        read_columns(columns)
    assert main(["recompute-claims", str(path)]) == 2
    assert "not a columns file" in capsys.readouterr().err
    record = json.loads(path.read_text())
    del record["columns"]
    path.write_text(json.dumps(record))
    assert main(["recompute-claims", str(path)]) == 2
    assert "saved no per-task columns" in capsys.readouterr().err
    assert main(["recompute-claims", str(tmp_path / "absent.json")]) == 2


# --- the analysis versions: records that spell them by date, or name none ---------------------

PRIMARY_RUN = "results/benchmark-primary-run/benchmark.json"  # recorded as "2026-12-03"


def test_a_records_dated_analysis_or_none_reads_as_its_version():
    """Records written before the analysis versions had names spell them by date; one that
    names none was made with the first. Each reads back as its version, and its settings are
    written back as they were."""
    assert DATED_ANALYSES == {"2026-12-02": LEGACY_ANALYSIS, "2026-12-03": FAMILIES_ANALYSIS}
    assert ANALYSES == ("v1", "v2", "v3") and ANALYSIS == "v3"
    assert [analysis_version(v) for v in (*ANALYSES, "2026-12-02", "2026-12-03")] == ["v1", "v2", "v3", "v1", "v2"]
    with pytest.raises(ValueError, match="analysis must be one of v1, v2, v3"):
        BenchmarkSettings(analysis="2026-12-01")
    assert BenchmarkSettings(analysis="2026-12-02").analysis == LEGACY_ANALYSIS
    for name, spelled, version in ((PRIMARY_RUN, "2026-12-03", FAMILIES_ANALYSIS),
                                   ("benchmark-denoised.json", None, LEGACY_ANALYSIS)):
        record = json.loads((assets_dir() / name).read_text())
        assert record["settings"].get("analysis") == spelled
        assert BenchmarkSettings.from_record(record["settings"]).analysis == version
        assert recorded_analysis(record["settings"]) == version
        assert BenchmarkResult.from_dict(record).to_dict()["settings"] == record["settings"]


@pytest.mark.slow
def test_the_committed_run_recorded_with_a_dated_analysis_recomputes_as_written():
    _, again, problems = check_run(assets_dir() / PRIMARY_RUN)
    assert again.analysis == FAMILIES_ANALYSIS and problems == [] and again.placements == {}
