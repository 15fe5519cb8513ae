"""The package as a new user meets it (issue 24): declared dependency ranges that hold the
tested versions, --help without heavy imports, one line naming RECOURSE_HOME where the models
are missing, a counterfactual for any variant, and one default margin for single faces.
The installed wheel itself is tried by .ci/install-check."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement

from recourse.cli import build_parser, main
from tests.conftest import build_home, make_generator, random_faces, tiny_classifier
from tests.test_cli import portrait

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return {Requirement(r).name.lower().replace("_", "-"): Requirement(r) for r in project["dependencies"] + extras}


def test_every_pinned_requirement_lies_in_the_declared_range():
    declared = _declared()
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    checked = 0
    for pin in filter(None, pins):
        requirement = Requirement(pin)
        name = requirement.name.lower().replace("_", "-")
        if name in declared:
            version = next(iter(requirement.specifier)).version
            assert declared[name].specifier.contains(version), f"{pin} is outside pyproject's {declared[name]}"
            checked += 1
    assert checked >= 12


def test_every_declared_range_has_an_upper_bound():
    """An open range resolves to whatever is released next (OpenCV 5 removed the face detector)."""
    for name, requirement in _declared().items():
        assert any(s.operator in ("<", "==", "<=") for s in requirement.specifier), f"{requirement} has no upper bound"


def test_the_opencv_range_is_the_one_faces_names():
    from recourse.faces import OPENCV_RANGE

    assert _declared()["opencv-python-headless"] == Requirement(OPENCV_RANGE)


def test_an_opencv_without_the_haar_detector_is_named_not_an_attribute_error(monkeypatch):
    from recourse import faces

    monkeypatch.setitem(sys.modules, "cv2", SimpleNamespace(__version__="5.0.0"))  # what OpenCV 5 lacks
    faces._cascade.cache_clear()
    try:
        with pytest.raises(faces.FaceDetectorError, match=r"OpenCV 5\.0\.0 has no Haar face detector.*<5"):
            faces._cascade(faces.CASCADES[0])
    finally:
        faces._cascade.cache_clear()


def test_the_light_names_agree_with_the_modules_that_define_them():
    from recourse import data, names
    from recourse.compression import METHODS
    from recourse.generation import STOP_SEARCHES

    assert names.METHODS == METHODS and names.STOP_SEARCHES == STOP_SEARCHES
    from recourse.generation import METHODS as COUNTERFACTUAL_METHODS
    assert names.COUNTERFACTUAL_METHODS == tuple(COUNTERFACTUAL_METHODS)
    assert data.ATTRIBUTES is names.ATTRIBUTES and len(names.ATTRIBUTES) == 40


def test_help_imports_no_heavy_module():
    """What made --help take 8 s: torch, diffusers, captum, OpenCV imported before argparse ran."""
    code = ("import sys; from recourse.cli import build_parser; build_parser().format_help(); "
            "print(sorted(m for m in ('torch', 'diffusers', 'captum', 'cv2', 'gradio') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_single_face_commands_and_the_app_share_one_default_stop():
    """The picture at the visible stop and the numbers at the benchmark's margin, both read
    from the committed files, for audit, counterfactual, scan and the app alike."""
    from recourse.audit.stops import committed_stops
    from recourse.cli.common import _single_face_settings

    parser = build_parser()
    for command in ("audit", "counterfactual", "scan"):
        sub = parser._subparsers._group_actions[0].choices[command]
        margin = next(a for a in sub._actions if a.dest == "margin")
        assert margin.default is None and "its attribute's own visible stop" in margin.help, command
        assert "the one chosen on validation" in margin.help and "a margin given is used as given" in margin.help
    settings = _single_face_settings(parser.parse_args(["audit", "x.jpg", "--variant", "ptq-int8", "--attribute",
                                                        "Smiling"]))
    assert settings.stops == committed_stops() and settings.stops.numbers_at == "benchmark"
    moved = _single_face_settings(parser.parse_args(["audit", "x.jpg", "--variant", "ptq-int8", "--attribute",
                                                     "Smiling", "--margin", "4", "--numbers-at", "boundary"]))
    assert moved.stops.visible == 4 and moved.stops.numbers == 0
    sources = (ROOT / "app.py", *sorted((ROOT / "recourse" / "ui").glob("*.py")))  # the app and its parts
    app_source = "".join(path.read_text() for path in sources)
    assert "product_settings(" in app_source and "committed_stops()" in app_source


def test_the_help_names_the_generators_own_defaults():
    from recourse.cli.common import DATASET_MARGIN, DENOISED_EDIT_STEPS, DENOISED_REGION_EDIT_STEPS, DENOISED_SIGMA
    from recourse.generation import CounterfactualConfig

    defaults = CounterfactualConfig()
    assert (DATASET_MARGIN, DENOISED_SIGMA, DENOISED_EDIT_STEPS) == (defaults.margin, defaults.sigma, defaults.edit_steps)
    assert DENOISED_REGION_EDIT_STEPS == defaults.region_edit_steps
    commands = build_parser()._subparsers._group_actions[0].choices
    for command in ("benchmark", "evaluate-counterfactuals", "quantize"):
        margin = next(a for a in commands[command]._actions if a.dest == "margin")
        assert margin.default is None and f"default {defaults.margin:g}, the dataset commands'" in margin.help, command
    for command in ("benchmark", "evaluate-counterfactuals", "quantize", "counterfactual", "audit", "scan"):
        method = next(a for a in commands[command]._actions if a.dest == "counterfactual_method")
        assert method.default is None and f"{defaults.method} (the default)" in method.help, command


def test_the_benchmark_command_names_the_analyses_of_the_settings():
    from recourse.benchmark.settings import ANALYSES, ANALYSIS, LEGACY_ANALYSIS
    from recourse.cli import benchmark

    assert (benchmark.ANALYSES, benchmark.ANALYSIS, benchmark.LEGACY_ANALYSIS) == (ANALYSES, ANALYSIS, LEGACY_ANALYSIS)
    analysis = next(a for a in build_parser()._subparsers._group_actions[0].choices["benchmark"]._actions
                    if a.dest == "analysis")
    assert analysis.default == ANALYSIS and set(analysis.choices) == set(ANALYSES)


@pytest.mark.parametrize("command", [
    ["audit", "photo.jpg", "--variant", "ptq-int4", "--attribute", "Smiling"],
    ["counterfactual", "photo.jpg", "--variant", "ptq-int4", "--attribute", "Smiling", "--out", "cf.png"],
    ["counterfactual", "photo.jpg", "--attribute", "Smiling", "--out", "cf.png"],
])
def test_missing_models_are_one_line_naming_recourse_home(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RECOURSE_HOME", str(tmp_path / "nowhere"))
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "RECOURSE_HOME" in error and "checkpoints" in error


def test_installed_package_outside_a_clone_looks_in_the_working_directory(tmp_path, monkeypatch):
    from recourse import locations

    monkeypatch.delenv("RECOURSE_HOME", raising=False)
    monkeypatch.setattr(locations, "_SOURCE_ROOT", tmp_path / "site-packages")  # no checkpoints/ beside the package
    monkeypatch.chdir(tmp_path)
    assert locations.checkpoints_dir() == tmp_path / "checkpoints"
    assert "the working directory" in locations.home_message()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["--variant", "--checkpoint"])
def test_counterfactual_of_a_4_bit_variant(how, project_home, tmp_path, capsys):
    """Was 'unknown architecture None': a variant's folder read as a classifier's."""
    from PIL import Image

    build_home(project_home, tiny_classifier(seed=0, gain=8.0), make_generator(random_faces(20), 4, 8), ("ptq-int4",))
    chosen = ["--variant", "ptq-int4"] if how == "--variant" else \
        ["--checkpoint", str(project_home / "checkpoints" / "variants" / "ptq-int4")]
    out = tmp_path / "cf.png"
    assert main(["counterfactual", str(portrait()), "--attribute", "Smiling", "--out", str(out), *chosen,
                 "--finish-steps", "4"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"ptq-int4 \((its fake-quantized twin guided, its integer model decided|it guided and decided)"
                     r"\), shown at margin [\d.]+ \(.*\) of an edit aimed past [\d.]+: Smiling p = ", printed), printed
    assert Image.open(out).width > Image.open(out).height


def test_counterfactual_refuses_a_variant_and_a_checkpoint_together(project_home, tmp_path, capsys):
    build_home(project_home, tiny_classifier(seed=0), make_generator(random_faces(20), 4, 8), ("ptq-int4",))
    assert main(["counterfactual", str(portrait()), "--attribute", "Smiling", "--out", str(tmp_path / "cf.png"),
                 "--variant", "ptq-int4", "--checkpoint", str(tmp_path)]) == 2
    assert "give --variant or --checkpoint, not both" in capsys.readouterr().err
