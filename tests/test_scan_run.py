"""Scanning any folder at scale: every file ranked or skipped with its reason, a cheap screening
choosing the full audits, kept shards that a resumed scan reuses, and processes that share
the work without changing the ranking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter, ImageOps

from recourse.attribution import AttributionConfig
from recourse.audit import screening
from recourse.audit.paired import Student
from recourse.audit.photo_folder import frame_photo, image_files
from recourse.audit.result import AuditSettings
from recourse.audit.scan import scan_images
from recourse.audit.scan_run import ScanPlan, audit_record, rank_records, run_scan
from recourse.data import ATTRIBUTES
from recourse.generation import CounterfactualConfig
from tests.conftest import BrightnessModel, NegateOne

ROOT = Path(__file__).resolve().parents[1]
PORTRAIT = ROOT / "assets" / "examples" / "grace-hopper.jpg"  # public domain (assets/examples/grace-hopper.json)
TINY = AuditSettings(CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5),
                     AttributionConfig(ig_steps=4, occlusion_window=4, occlusion_stride=4))


def mixed_folder(root: Path) -> Path:
    """A public-domain portrait beside what an auditor's folder also holds: a full-length picture
    (the portrait small on a large canvas), a pencil drawing of it, a face too small to frame,
    a blank photo, a broken file and a document."""
    portrait = Image.open(PORTRAIT).convert("RGB")
    (root / "people" / "more").mkdir(parents=True)
    portrait.save(root / "people" / "portrait.jpg")
    canvas = Image.new("RGB", (1600, 2400), (120, 130, 140))
    canvas.paste(portrait.resize((portrait.width * 6 // 10, portrait.height * 6 // 10)), (600, 200))
    canvas.save(root / "people" / "more" / "full-length.jpg")
    grey = portrait.convert("L")
    blurred = np.asarray(ImageOps.invert(grey).filter(ImageFilter.GaussianBlur(20)), np.float32)
    sketch = np.clip(np.asarray(grey, np.float32) * 255 / (256 - blurred), 0, 255).astype(np.uint8)
    Image.fromarray(sketch).save(root / "drawing.png")
    tiny = Image.new("RGB", (1600, 2400), (120, 130, 140))
    tiny.paste(portrait.resize((40, 50)), (700, 300))
    tiny.save(root / "people" / "crowd.jpg")
    Image.new("RGB", (300, 300), (200, 180, 160)).save(root / "wall.png")
    (root / "broken.jpg").write_bytes(b"not an image")
    (root / "notes.txt").write_text("not a photo")
    return root


def test_every_image_file_of_any_folder_is_framed_or_skipped_with_its_reason(tmp_path):
    folder = mixed_folder(tmp_path)
    files = [path.relative_to(folder).as_posix() for path in image_files(folder)]
    assert files == ["broken.jpg", "drawing.png", "people/crowd.jpg", "people/more/full-length.jpg",
                     "people/portrait.jpg", "wall.png"]  # recursive, in order; the document is not an image
    outcomes = {name: frame_photo(folder / name, 64) for name in files}
    reasons = {name: outcome[0] for name, outcome in outcomes.items() if isinstance(outcome, tuple)}
    assert reasons == {"broken.jpg": "unreadable", "drawing.png": "drawing", "people/crowd.jpg": "no face",
                       "wall.png": "no face"}
    for name in ("people/portrait.jpg", "people/more/full-length.jpg"):  # the full-length face found on a second look
        assert outcomes[name].shape == (3, 64, 64) and outcomes[name].dtype == np.uint8


def _pair():
    teacher = BrightnessModel()
    negated = NegateOne(teacher, ATTRIBUTES.index("Smiling")).eval()
    return teacher, Student("ptq-int8", negated, negated)


def _plan(root: Path, **changes) -> ScanPlan:
    return ScanPlan(root, "ptq-int8", "Smiling", TINY, **{"top": 2, "shard_size": 1, **changes})


def test_the_screening_chooses_the_full_audits_and_each_reproduces_its_row(hq_folder, tiny_generator):
    root, _ = hq_folder  # test split: 27000, 27001, 29999
    teacher, student = _pair()
    result = run_scan(_plan(root), teacher=teacher, student=student, generator=tiny_generator, judge=None)
    assert sorted(row.file for row in result.screened) == ["27000.jpg", "27001.jpg", "29999.jpg"]
    assert result.skipped == [] and len(result.audited) == 2
    chosen = {row.file for row in screening.shortlist(result.screened, 2)}
    assert {record["file"] for record in result.audited} == chosen
    assert [r["file"] for r in result.audited] == [r["file"] for r in rank_records(result.audited)]
    from recourse.audit.scan import read_folder

    names, images = read_folder(root, "test", 3, 16)
    for name, image in zip(names, images):
        if name in chosen:  # a listed face's full audit is the one-face scan of it
            *_, (_, _, cases) = scan_images((name,), [image], "ptq-int8", "Smiling", TINY, teacher=teacher,
                                            student=student, generator=tiny_generator, judge=None)
            assert audit_record(cases[0]) == next(r for r in result.audited if r["file"] == name)
    # a student that negates the audited logit rejects every recourse: the screening sees it
    assert all(row.student_at_teacher < 0 for row in result.screened if row.teacher_reach is not None)


def test_a_folder_no_larger_than_the_full_audits_is_not_edited_twice(tmp_path):
    """Where every photo gets its full audit, the screening's edits would only order what all get:
    the models' gradients order its list instead."""
    from types import SimpleNamespace

    from recourse.audit.scan_run import screens_by_edits
    from recourse.generation.spaces.bundle import EditSpaces
    from tests.spaces_fixtures import synthetic_space

    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth": synthetic_space()}))
    settings = AuditSettings(CounterfactualConfig(method="region-space", margin=1.0))
    plan = ScanPlan(tmp_path, "ptq-int8", "Wearing_Lipstick", settings, top=3)
    assert screens_by_edits(plan, generator, photos=4)
    assert not screens_by_edits(plan, generator, photos=3) and not screens_by_edits(plan, generator, photos=1)
    assert screens_by_edits(replace(plan, measure_screening=True), generator, photos=3)  # the recall's measurement


def test_a_resumed_scan_reuses_what_was_kept_and_ranks_the_same(hq_folder, tiny_generator, tmp_path, monkeypatch):
    root, _ = hq_folder
    teacher, student = _pair()
    out = tmp_path / "kept"
    first = run_scan(_plan(root, out=out), teacher=teacher, student=student, generator=tiny_generator, judge=None)
    shards = sorted((out / "screen").glob("shard-*.json"))
    assert len(shards) == 3 and len(list((out / "audits").glob("*.json"))) == 2
    lost = [row["file"] for row in json.loads(shards[1].read_text())["rows"]]
    shards[1].unlink()  # as a kill between two shards leaves it
    screened = []
    real_screen = screening.screen
    monkeypatch.setattr("recourse.audit.scan_run.screen",
                        lambda files, *a: screened.extend(files) or real_screen(files, *a))
    monkeypatch.setattr("recourse.audit.scan.paired_recourse",
                        lambda *a, **k: pytest.fail("a kept audit was run again"))
    again = run_scan(_plan(root, out=out), teacher=teacher, student=student, generator=tiny_generator, judge=None)
    assert screened == lost  # only the lost shard is screened again
    assert again.audited == first.audited and again.screened == first.screened
    # the rates count only what each run did itself: the resumed run ran no audit
    assert first.made == {"screening": len(first.screened) + len(first.skipped), "audits": 2}
    assert again.made == {"screening": len(lost), "audits": 0} and again.rates()["audits"] is None


def test_a_folder_without_images_is_refused_clearly(tmp_path):
    teacher, student = _pair()
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="no image files in it or its subfolders"):
        run_scan(_plan(tmp_path), teacher=teacher, student=student, judge=None)


WORKER = """
import json, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from recourse.audit.scan_run import run_scan
from tests.conftest import make_generator, random_faces
from tests.test_scan_run import _pair, _plan
faces = random_faces(64); faces[:32] //= 2
teacher, student = _pair()
result = run_scan(_plan(Path(sys.argv[1]), out=Path(sys.argv[2])), teacher=teacher, student=student,
                  generator=make_generator(faces), judge=None)
if result is not None:
    Path(sys.argv[3]).write_text(json.dumps(result.to_dict()["audited"] + [r.file for r in result.screened]))
"""


@pytest.mark.slow
def test_two_processes_rank_as_one(hq_folder, tmp_path):
    root, _ = hq_folder
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER.format(root=str(ROOT)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    answers = {}
    for processes in (1, 2):
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
                   str(worker), str(root), str(tmp_path / f"kept{processes}"), str(tmp_path / f"ranked{processes}.json")]
        done = subprocess.run(command, cwd=ROOT, env=env, timeout=300, capture_output=True, text=True)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        answers[processes] = json.loads((tmp_path / f"ranked{processes}.json").read_text())
    assert answers[1] == answers[2]
    # each process kept its own shards: the two-process run screened shards 0 and 2 in one, 1 in the other
    assert len(list((tmp_path / "kept2" / "screen").glob("shard-*.json"))) == 3
