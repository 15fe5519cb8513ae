import json
import re
from pathlib import Path

import pytest
import torch

from recourse.checkpoints import read_config, save_classifier
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.cli import main, reproduction
from tests.conftest import build_home, make_generator, random_faces, still_generator, tiny_classifier


@pytest.fixture
def tiny_checkpoint(tmp_path):
    torch.manual_seed(0)
    directory = tmp_path / "ckpt"
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), directory, {})
    return directory


def test_evaluate_writes_per_attribute_accuracy_and_baseline(hq_folder, tiny_checkpoint, tmp_path, capsys):
    root, labels = hq_folder
    out = tmp_path / "out.json"
    code = main(["evaluate", "--data", str(root), "--split", "test", "--checkpoint", str(tiny_checkpoint),
                 "--json", str(out), "--no-cache"])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["n_images"] == 3 and len(report["per_attribute"]) == 40
    per_attribute = list(report["per_attribute"].values())
    assert report["mean_accuracy"] == pytest.approx(sum(per_attribute) / 40, abs=0.01)
    assert 0 <= report["majority_baseline_mean"] <= 100
    assert "MEAN" in capsys.readouterr().out


def test_evaluate_all_on_original_celeba_layout(celeba_folder, tiny_checkpoint, tmp_path, capsys):
    root, _ = celeba_folder
    out = tmp_path / "out.json"
    assert main(["evaluate", "--data", str(root), "--split", "all", "--checkpoint", str(tiny_checkpoint),
                 "--json", str(out), "--no-cache"]) == 0
    assert json.loads(out.read_text())["n_images"] == 5
    assert "fixed crop" in capsys.readouterr().out  # noise photos have no face: the layout's crop is used


def test_train_classifier_cli_writes_a_documented_checkpoint(hq_folder, tmp_path):
    root, _ = hq_folder
    out = tmp_path / "trained"
    code = main(["train-classifier", "--data", str(root), "--preset", "oracle", "--epochs", "1",
                 "--out", str(out), "--state", str(tmp_path / "state.pt"), "--no-cache"])
    assert code == 0
    config = read_config(out)
    for key in ("widths", "resolution", "attributes", "mean", "std", "training_command", "data_split",
                "training_seconds", "test_accuracy", "history"):
        assert key in config, key
    assert config["role"] == "oracle" and config["activation"] == "silu"
    assert config["training_command"].startswith("python -m recourse train-classifier")


def test_train_classifier_cli_sets_the_adversarial_radius(hq_folder, tmp_path):
    root, _ = hq_folder
    out = tmp_path / "guide"
    assert main(["train-classifier", "--data", str(root), "--preset", "guide", "--epochs", "1",
                 "--adversarial-radius", "2.5", "--out", str(out), "--state", str(tmp_path / "state.pt"),
                 "--no-cache"]) == 0
    config = read_config(out)
    assert config["train_config"]["adversarial_radius"] == 2.5 and "--adversarial-radius 2.5" in config["training_command"]


@pytest.mark.parametrize("args, message", [
    (["evaluate", "--data", "/nonexistent"], "not a CelebA folder"),
    (["evaluate", "--data", ".", "--checkpoint", "/nonexistent"], "checkpoint config not found"),
])
def test_errors_are_one_clear_line(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_counterfactual_command_writes_three_panels(tmp_path, capsys):
    from PIL import Image

    faces = random_faces(20)
    make_generator(faces, latent_dim=4, width=8).save_pretrained(tmp_path / "gen")
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), tmp_path / "clf", {})
    Image.fromarray(faces[0].transpose(1, 2, 0)).save(tmp_path / "face.png")
    code = main(["counterfactual", str(tmp_path / "face.png"), "--attribute", "Smiling", "--out", str(tmp_path / "cf.png"),
                 "--checkpoint", str(tmp_path / "clf"), "--generator", str(tmp_path / "gen"), "--no-align", "--steps", "4"])
    assert code == 0
    picture = Image.open(tmp_path / "cf.png")
    assert picture.width >= 3 * 16 * 4 and picture.height >= 16 * 4  # three enlarged panels side by side
    assert re.search(r"shown at margin [\d.]+ \(.*\) of an edit aimed past [\d.]+: Smiling p =", capsys.readouterr().out)


def test_counterfactual_command_rejects_unknown_attribute_and_faceless_photo(tmp_path, capsys):
    from PIL import Image

    Image.new("RGB", (200, 200), (128, 128, 128)).save(tmp_path / "wall.png")
    assert main(["counterfactual", str(tmp_path / "wall.png"), "--attribute", "Smile", "--out", str(tmp_path / "x.png")]) == 2
    assert "unknown attribute 'Smile'" in capsys.readouterr().err
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), tmp_path / "clf", {})
    code = main(["counterfactual", str(tmp_path / "wall.png"), "--attribute", "Smiling", "--out", str(tmp_path / "x.png"),
                 "--checkpoint", str(tmp_path / "clf")])
    assert code == 2
    assert "no face found" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_quantize_command_saves_a_loadable_variant(hq_folder, tiny_checkpoint, tmp_path):
    from recourse.compression import load_variant

    root, _ = hq_folder
    code = main(["quantize", "--method", "ptq-int8", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 "--calibration-images", "3", "--out", str(tmp_path / "variant"), "--no-cache"])
    assert code == 0
    variant = load_variant(tmp_path / "variant")
    assert variant.integer is not None and variant.details["command"].startswith("python -m recourse quantize")


@pytest.mark.slow
def test_quantize_cf_ptq_makes_the_teachers_recourse_points_once(hq_folder, tmp_path, tiny_generator, bright_checkpoint):
    """The real recourse points (the teacher's counterfactuals, seconds of work), made once."""
    from recourse.compression import load_variant

    root, _ = hq_folder  # three training images
    tiny_generator.save_pretrained(tmp_path / "generator")
    cache = tmp_path / "cache"
    # a teacher whose decisions the tiny generator flips, so that there are points to use
    args = ["quantize", "--method", "cf-ptq", "--data", str(root), "--checkpoint", str(bright_checkpoint),
            "--generator", str(tmp_path / "generator"), "--recourse-points", "3", "--calibration-images", "2",
            "--steps", "10", "--margin", "2", "--no-cache", "--cache-dir", str(cache)]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    made = list(cache.glob("recourse-points-*-3.safetensors"))
    assert len(made) == 1  # the teacher's counterfactuals on the 3 training images, cached
    note = json.loads(made[0].with_suffix(".json").read_text())
    stamp = made[0].stat().st_mtime_ns
    assert main([*args, "--out", str(tmp_path / "two")]) == 0
    assert sorted(cache.glob("recourse-points-*")) == sorted([made[0], made[0].with_suffix(".json")])
    assert made[0].stat().st_mtime_ns == stamp  # read back, not made again
    one, two = load_variant(tmp_path / "one"), load_variant(tmp_path / "two")
    for variant in (one, two):
        assert variant.config.method == "cf-ptq" and variant.details["recourse_points"] == note["valid"] > 0
        # making the points counts in T_make, also when they are read from the cache
        assert variant.details["recourse_points_seconds"] == round(note["seconds"], 1)
        assert variant.seconds >= note["seconds"]
        # the points' generation settings are recorded, so that the command still makes them once
        # the defaults change: today it needs nothing added, under the cone's defaults its method
        made_with = variant.details["counterfactual"]
        assert made_with["margin"] == 2 and made_with["steps"] == 10 and made_with["method"] == "region-space"
        assert reproduction(variant.details["command"], made_with) == variant.details["command"]
        assert reproduction(variant.details["command"], {**made_with, "method": "pca-walk-cone"}).endswith(
            " --counterfactual-method pca-walk-cone")


def test_options_that_do_not_apply_to_a_method_are_refused(hq_folder, tiny_checkpoint, capsys):
    root, _ = hq_folder
    with pytest.raises(SystemExit):
        main(["quantize", "--method", "ptq-int8", "--data", str(root), "--fine-tuning-steps"])
    assert main(["quantize", "--method", "ptq-int8", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 "--fine-tuning-steps", "5", "--no-cache"]) == 2  # not a fine-tuning method
    assert "--fine-tuning-steps does not apply to --method ptq-int8" in capsys.readouterr().err


def test_quantize_width_options_reach_the_method(hq_folder, tiny_checkpoint, tmp_path):
    from recourse.compression import load_variant

    root, _ = hq_folder
    base = ["quantize", "--data", str(root), "--checkpoint", str(tiny_checkpoint), "--calibration-images", "3",
            "--no-cache"]
    assert main([*base, "--method", "gptq", "--bits", "3", "--ends-bits", "6", "--out", str(tmp_path / "g")]) == 0
    gptq = load_variant(tmp_path / "g")
    assert (gptq.config.bits, gptq.config.ends_bits) == (3, 6)
    assert list(gptq.layer_bits.values()) == [6, 3, 3, 6]  # stem, the stage's two convolutions, head
    assert main([*base, "--method", "ptq-int4", "--ends-bits", "8", "--out", str(tmp_path / "p")]) == 0
    assert list(load_variant(tmp_path / "p").layer_bits.values()) == [8, 4, 4, 8]
    assert main([*base, "--method", "mixedprec-qat", "--bit-choices", "2", "4", "--budget", "2",
                 "--fine-tuning-steps", "0", "--out", str(tmp_path / "m")]) == 0
    mixed = load_variant(tmp_path / "m")
    assert mixed.config.bit_choices == (2, 4) and set(mixed.layer_bits.values()) == {2}


@pytest.mark.parametrize("method, option, value", [("ptq-int4", "--bits", "3"), ("ptq-int8", "--ends-bits", "8"),
                                                   ("gptq", "--bit-choices", "4"), ("ptq-int4", "--bit-choices", "4")])
def test_width_options_that_do_not_apply_to_a_method_are_refused(hq_folder, tiny_checkpoint, capsys, method, option,
                                                                 value):
    root, _ = hq_folder
    assert main(["quantize", "--method", method, "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 option, value, "--no-cache"]) == 2
    assert f"{option} does not apply to --method {method}" in capsys.readouterr().err


def test_invalid_widths_are_refused_naming_the_setting(hq_folder, tiny_checkpoint, capsys):
    root, _ = hq_folder
    assert main(["quantize", "--method", "gptq", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 "--bits", "7", "--no-cache"]) == 2
    assert "bits must be one of (2, 3, 4, 5, 6, 8), got 7" in capsys.readouterr().err


def portrait() -> Path:
    """A public-domain portrait shipped inside the matplotlib wheel (not a dataset photo)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"


@pytest.mark.slow
def test_audit_command_reports_a_recourse_that_changes_nothing(project_home, tmp_path, capsys):
    """The home's generator edits nothing and the target is what both models already decide:
    CRG_i and DirSim_i are undefined, which the command prints and files instead of crashing."""
    from recourse import models
    from recourse.data import ATTRIBUTES, to_float_images
    from recourse.faces import align_face

    teacher = tiny_classifier(seed=0)
    build_home(project_home, teacher, still_generator(16))
    x = to_float_images(align_face(portrait(), 16).image)[None]
    with torch.no_grad():
        teacher_logits, student_logits = teacher(x)[0], models.load_student("ptq-int8").decider(x)[0]
    agreed = [i for i in range(40) if (teacher_logits[i] >= 0) == (student_logits[i] >= 0)]
    index = max(agreed, key=lambda i: abs(float(teacher_logits[i])))  # the safest agreed decision
    target = int(teacher_logits[index] >= 0)
    out = tmp_path / "audit.json"
    assert main(["audit", str(portrait()), "--variant", "ptq-int8", "--attribute", ATTRIBUTES[index],
                 "--target", str(target), "--steps", "4", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "V_f(x'_f)=1 V_g(x'_f)=1 V_g(x'_g)=1 CRG_i=- DirSim_i=- (the full-precision recourse changes nothing)" \
        in printed
    assert "cannot be compared with the full-precision one: the full-precision recourse changes nothing." in printed
    record = json.loads(out.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    assert record["recourse"]["crg"] is None and record["recourse"]["dirsim"] is None
    assert record["recourse"]["teacher_cost"] == 0 and record["verdict"] in printed
    assert record["images"]["teacher_counterfactual"].startswith("data:image/png;base64,")
    # the home has no stronger judge and its faces are 16 px: both said, neither hidden
    assert record["missing"]["strong_judge"] == "not trained" and "strong judge: not trained" in printed
    assert record["identity"] is None and "identity kept in x'_f / x'_g: not measured (16-px faces" in printed


@pytest.mark.parametrize("arguments, message", [
    (["--variant", "nope", "--attribute", "Smiling"], "unknown variant 'nope'"),
    (["--variant", "ptq-int8", "--attribute", "Smile"], "unknown attribute 'Smile'"),
    (["--variant", "kd-quant", "--attribute", "Smiling"], "variant 'kd-quant' is not available"),
    (["--variant", "ptq-int8", "--attribute", "Smiling", "--target", "2"], None),  # refused by the parser
])
@pytest.mark.slow
def test_audit_command_errors_exit_2_with_a_message(project_home, capsys, arguments, message):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    if message is None:
        with pytest.raises(SystemExit) as exit_:
            main(["audit", str(portrait()), *arguments])
        assert exit_.value.code == 2
        return
    assert main(["audit", str(portrait()), *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and str(project_home) not in error


@pytest.mark.parametrize("content, message", [(b"not an image", "not a readable image"), (None, "no such file")])
def test_audit_command_bad_image_exits_2(project_home, tmp_path, capsys, content, message):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    path = tmp_path / "photo.jpg"
    if content is not None:
        path.write_bytes(content)
    assert main(["audit", str(path), "--variant", "ptq-int8", "--attribute", "Smiling"]) == 2
    assert message in capsys.readouterr().err


def test_audit_out_dir_paths_one_file_per_photo():
    from recourse.cli.audit import out_dir_paths

    assert out_dir_paths("out/audits", ["a/face.jpg"]) == ["out/audits/face.json"]
    assert out_dir_paths(None, ["a.jpg", "b.jpg"]) == [None, None]
    assert out_dir_paths("out", ["x/a.jpg", "b.png", "y/a.jpg", "a-2.jpg"]) == [
        "out/a.json", "out/b.json", "out/a-2.json", "out/a-2-2.json"]  # none overwritten


def _two_photos(tmp_path) -> list[Path]:
    """The portrait and a copy of it under another name: two photos, two audits."""
    import shutil

    second = tmp_path / "second.jpg"
    shutil.copy(portrait(), second)
    return [portrait(), second]


SHORT_AUDIT = ["--variant", "ptq-int8", "--attribute", "Smiling", "--edit-steps", "1", "--region-mask", "off"]


def test_audit_json_of_several_photos_is_one_json_lines_file(project_home, tmp_path, capsys):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    photos = _two_photos(tmp_path)
    out = tmp_path / "audits" / "audits.jsonl"
    assert main(["audit", *map(str, photos), *SHORT_AUDIT, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert [path.name for path in out.parent.iterdir()] == ["audits.jsonl"]  # one file, whatever the count
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [record["image"] for record in records] == [str(photo) for photo in photos]
    for record in records:  # each line the whole audit, as one photo's JSON was
        assert {"command", "recourse", "verdict", "paths", "images"} <= set(record) and record["verdict"] in printed
    assert f"wrote {out}: 2 audits" in printed


def test_audit_json_of_one_photo_is_one_line_and_one_json_document(project_home, tmp_path, capsys):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    out = tmp_path / "audit.jsonl"
    out.write_text("an earlier call's audits\n")  # replaced: the file holds this call's audits only
    assert main(["audit", str(portrait()), *SHORT_AUDIT, "--json", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 1
    assert json.loads(out.read_text())["image"] == str(portrait())


def test_audit_out_dir_writes_one_json_per_photo_named_after_it(project_home, tmp_path, capsys):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    photos = _two_photos(tmp_path)
    out = tmp_path / "audits"
    assert main(["audit", *map(str, photos), *SHORT_AUDIT, "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sorted(path.name for path in out.iterdir()) == ["grace_hopper.json", "second.json"]
    for photo in photos:
        record = json.loads((out / f"{photo.stem}.json").read_text())
        assert record["image"] == str(photo) and record["verdict"] in printed
        assert f"wrote {out / photo.stem}.json" in printed


def test_audit_prints_where_the_models_part_on_both_paths(project_home, tmp_path, monkeypatch, capsys):
    """The sentence the app shows under each path plot, from the same function on the same result."""
    import recourse.audit.pipeline
    from recourse.audit.edit_path import divergence_sentence

    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    results, audit_image = [], recourse.audit.pipeline.audit_image
    monkeypatch.setattr(recourse.audit.pipeline, "audit_image", lambda *a, **k: results.append(audit_image(*a, **k)) or
                        results[-1])
    assert main(["audit", *map(str, _two_photos(tmp_path)), *SHORT_AUDIT]) == 0
    printed = capsys.readouterr().out
    assert len(results) == 2 and all(len(result.paths) == 2 for result in results)
    for result in results:
        for path in result.paths:
            assert divergence_sentence(path, "ptq-int8") in printed


def test_audit_command_audits_several_photos_with_the_models_loaded_once(project_home, tmp_path, monkeypatch, capsys):
    """Several photos in one call: the models load once, every audited photo is a line of the
    JSON Lines file, and a bad photo is said while the others still run (exit 2)."""
    from recourse import models

    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    loads = []
    for name in ("load_teacher", "load_student", "load_generator"):
        loader = getattr(models, name)
        counted = lambda *args, _loader=loader, _name=name: loads.append(_name) or _loader(*args)  # noqa: E731
        counted.cache_clear = loader.cache_clear if hasattr(loader, "cache_clear") else lambda: None
        monkeypatch.setattr(models, name, counted)
    first, second = _two_photos(tmp_path)
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not an image")
    out = tmp_path / "audits" / "audits.jsonl"
    code = main(["audit", str(first), str(bad), str(second), *SHORT_AUDIT, "--json", str(out)])  # a short edit
    assert code == 2  # one photo failed
    assert sorted(loads) == ["load_generator", "load_student", "load_teacher"]  # once for the three photos
    printed = capsys.readouterr()
    assert "[1/3]" in printed.out and "[3/3]" in printed.out
    assert "bad.jpg: not a readable image" in printed.err and "1 of 3 photos not audited" in printed.err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [record["image"] for record in records] == [str(first), str(second)]
    assert all(record["verdict"] in printed.out for record in records)


def _forget_loaded_instruments() -> None:
    """Every model, judge, dlib model and stop an audit caches, forgotten: the next audit loads them."""
    from recourse.audit import stops
    from recourse.instruments import age_gender, dlib_faces, fer_smile, identity, readings
    from tests.conftest import clear_loaded_models

    clear_loaded_models()
    for cached in (stops.committed_stops, identity.face_descriptor, dlib_faces.shape_predictor, dlib_faces.face_detector,
                   age_gender.default_models, fer_smile.default_model, readings.calibrations):
        cached.cache_clear()


def _counted_loads(monkeypatch) -> list[str]:
    """A list that each read of a model file appends its name to: the checked checkpoint reads
    (classifiers, variants, generator, ONNX judges), the denoiser's weights and dlib's models."""
    import dlib

    import recourse.checkpoints
    import recourse.generation.generators
    import recourse.instruments.age_gender

    loads = []

    def counting(function, name_of):
        return lambda *args, **kwargs: loads.append(name_of(*args)) or function(*args, **kwargs)

    for module in (recourse.checkpoints, recourse.instruments.age_gender):
        monkeypatch.setattr(module, "verified_bytes",
                            counting(recourse.checkpoints.verified_bytes, lambda path, *_: str(path)))
    generators = recourse.generation.generators
    monkeypatch.setattr(generators, "load_file", counting(generators.load_file, lambda path, *_: str(path)))
    for name in ("shape_predictor", "face_recognition_model_v1"):
        monkeypatch.setattr(dlib, name, counting(getattr(dlib, name), lambda path, *_: str(path)))
    monkeypatch.setattr(dlib, "get_frontal_face_detector",
                        counting(dlib.get_frontal_face_detector, lambda *_: "dlib face detector"))
    return loads


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_audit_of_three_photos_loads_what_one_photo_loads(monkeypatch, tmp_path, capsys):
    """Every model file (the pair, the generator, the judges, dlib's models) is read as often
    for three photos as for one: nothing is loaded again per photo."""
    from collections import Counter

    from tests.conftest import ROOT

    photos = [str(portrait()), *(str(p) for p in sorted((ROOT / "assets" / "gallery").glob("*.png"))[:2])]
    short = ["--variant", "ptq-int8", "--attribute", "Smiling", "--edit-steps", "1"]  # region mask on: its landmarks
    loads = _counted_loads(monkeypatch)
    counts = []
    for images in (photos[:1], photos):
        _forget_loaded_instruments()
        loads.clear()
        assert main(["audit", *images, *short]) == 0
        counts.append(Counter(loads))
    _forget_loaded_instruments()
    assert counts[0] and counts[1] == counts[0]
    assert any("shape_predictor" in name for name in counts[0])  # the dlib models were among them


def test_audit_command_of_several_photos_says_a_settings_error_once(project_home, tmp_path, capsys):
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    assert main(["audit", str(portrait()), str(portrait()), "--variant", "nope", "--attribute", "Smiling"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("unknown variant 'nope'") == 1 and "[1/2]" not in captured.out
