"""``python app.py`` launched for real on localhost and driven through gradio_client."""

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from recourse.audit import VARIANTS, VARIANTS_DIR
from scripts.app_screenshot import start_app

ROOT = Path(__file__).resolve().parents[1]
AVAILABLE = [v for v in VARIANTS if (VARIANTS_DIR / v / "config.json").is_file()]
FLIP = "flip the full-precision decision"

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="no compressed variant under checkpoints/variants/")


def photo() -> Path:
    """A public-domain portrait shipped inside the matplotlib wheel (not a dataset photo)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from gradio_client import Client

    log = tmp_path_factory.mktemp("app") / "app.log"
    try:
        with start_app(log=log) as url:
            yield Client(url, verbose=False)
    except (RuntimeError, TimeoutError) as error:
        raise RuntimeError(f"{error}\n{log.read_text()[-3000:]}") from None


def audit(client, path, variant=None, attribute="Smiling", target=FLIP, steps=20, guidance=40.0, seed=0):
    from gradio_client import handle_file

    return client.predict(handle_file(str(path)), variant or AVAILABLE[0], attribute, target, steps, guidance, seed,
                          api_name="/audit")


def values_of(outputs) -> dict:
    """The 'All values' JSON among the audit's outputs."""
    return next(o for o in outputs if isinstance(o, dict) and "recourse" in o)


def test_upload_audit_equals_the_cli(client, tmp_path):
    outputs = audit(client, photo())
    ui = values_of(outputs)
    out = tmp_path / "audit.json"
    # The CLI in its own process, like the app, with the same thread settings.
    done = subprocess.run([sys.executable, "-m", "recourse", "audit", str(photo()), "--variant", AVAILABLE[0],
                           "--attribute", "Smiling", "--json", str(out)], cwd=ROOT, env=os.environ.copy(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cli = json.loads(out.read_text())
    for key in ("recourse", "teacher_probabilities", "student_probabilities", "diverging_attributes", "attributions",
                "probabilities_after", "target", "seed", "settings", "student_model", "verdict"):
        assert ui[key] == cli[key], key
    # the files the UI offers for export carry the same values
    exported = json.loads(Path(next(o for o in outputs if isinstance(o, str) and o.endswith(".json"))).read_text())
    assert exported["recourse"] == cli["recourse"]
    report = Path(next(o for o in outputs if isinstance(o, str) and o.endswith(".html"))).read_text()
    assert html.escape(cli["verdict"]) in report and html.escape("V_g(x'_f)") in report
    # every image came back: the aligned face, two counterfactuals, two differences, four maps
    assert sum(1 for o in outputs if isinstance(o, str) and o.endswith(".png")) == 9


def bomb(path: Path) -> None:
    """A small PNG file that claims 12000 × 12000 pixels."""
    Image.new("1", (12000, 12000)).save(path, optimize=True)


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b"plain text, not an image"), "not a readable image"),
    (lambda p: p.write_bytes(photo().read_bytes()[:5000]), "not a readable image"),
    (bomb, "larger than the 64,000,000-pixel limit"),
    (lambda p: Image.new("RGB", (400, 300), (190, 170, 150)).save(p, format="PNG"), "no face found"),
    (lambda p: Image.new("RGB", (20, 20)).save(p, format="PNG"), "too small"),
], ids=["not-an-image", "truncated", "decompression-bomb", "no-face", "tiny"])
def test_bad_uploads_get_a_clear_message(client, tmp_path, make, message):
    from gradio_client.exceptions import AppError

    path = tmp_path / "upload.png"
    make(path)
    with pytest.raises(AppError, match=message) as error:
        audit(client, path)
    assert str(tmp_path) not in str(error.value)  # the user's file name, not the server's temp path


@pytest.mark.parametrize("arguments, message", [
    ({"variant": "int3-magic"}, "int3-magic is not in the list of choices"),
    ({"attribute": "Smile"}, "Smile is not in the list of choices"),
    ({"target": "maybe"}, "maybe is not in the list of choices"),
    ({"steps": 0}, "less than minimum value"),
    ({"seed": -1}, "less than minimum value"),
])
def test_bad_api_values_get_a_clear_message(client, arguments, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=message):
        audit(client, photo(), **arguments)


def test_the_app_still_serves_after_bad_input(client):
    values = values_of(audit(client, photo(), attribute="Young", target="1 (attribute present)"))
    assert values["attribute"] == "Young" and values["target"] == 1


def test_find_failures_ranks_a_folder(client, hq_folder):
    root, _ = hq_folder  # three test-split images of noise
    rows, status = client.predict(str(root), "test", 3, AVAILABLE[0], "Smiling", api_name="/find_failures")
    table = rows["data"] if isinstance(rows, dict) else rows
    assert [row[0] for row in table] == [1, 2, 3] and "3 of 3" in status
    scores = [row[3] for row in table if not isinstance(row[3], str)]
    assert scores == sorted(scores, reverse=True)


def test_find_failures_rejects_a_non_dataset_folder(client, tmp_path):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="not a CelebA folder"):
        client.predict(str(tmp_path), "test", 3, AVAILABLE[0], "Smiling", api_name="/find_failures")


def test_benchmark_tab_reads_its_file(monkeypatch, tmp_path):
    import app

    monkeypatch.setattr(app, "BENCHMARK", tmp_path / "benchmark.json")
    caption, table, plot = app.benchmark_view()
    assert "No benchmark yet" in caption and table is None and plot is None
    rows = [{"method": "fp32", "acc": 90.6, "vd": None, "crg": None, "dirsim": None, "per_attribute": {}},
            {"method": "ptq-int4", "acc": 90.1, "vd": 4.0, "crg": 0.2, "dirsim": 80.0, "per_attribute": {"Smiling": {}}}]
    (tmp_path / "benchmark.json").write_text(json.dumps({"rows": rows, "date": "2026-11-30", "command": "cmd"}))
    caption, table, plot = app.benchmark_view()
    assert "2026-11-30" in caption and list(table["method"]) == ["fp32", "ptq-int4"]
    assert table["per_attribute"][1] == '{"Smiling": {}}'  # nested values shown as JSON
    assert [axis.get_xlabel()[:3] for axis in plot.axes] == ["VD ", "CRG", "Dir"]
    (tmp_path / "benchmark.json").write_text("{not json")
    assert "not a benchmark file" in app.benchmark_view()[0]


def test_gallery_faces_have_provenance():
    import app

    faces = app.gallery_faces()
    assert len(faces) >= 2
    for path, title in faces:
        provenance = json.loads(Path(path).with_suffix(".json").read_text())
        assert provenance["title"] == title and provenance["source"] and provenance["license"]
        assert np.asarray(Image.open(path)).shape == (64, 64, 3)
