"""Output paths are checked before any data or model is loaded: a command whose output
cannot be written fails at once with exit 2 and says why."""

import pytest

from recourse.locations import writable_file, writable_folder


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("a file, not a folder")
    return path


@pytest.fixture
def nothing_loads(monkeypatch):
    """Loading data or a model fails the test: the check must come first."""
    import recourse.audit.pipeline
    import recourse.cli.common

    def loaded(*args, **kwargs):
        raise AssertionError("data or a model was loaded before the outputs were checked")

    for name in ("load_classifier", "load_framed_split", "load_images"):
        monkeypatch.setattr(recourse.cli.common, name, loaded)
    monkeypatch.setattr(recourse.audit.pipeline, "audit_image", loaded)


def _commands(a_file, tmp_path):
    blocked = a_file / "out"  # its parent is a file
    data = ["--data", str(tmp_path)]
    return [
        (["evaluate", *data, "--json", str(blocked / "accuracy.json")], f"{a_file} is a file, not a folder"),
        (["evaluate-counterfactuals", *data, "--json", str(blocked)], f"{a_file} is a file, not a folder"),
        (["audit", "photo.jpg", "--variant", "ptq-int8", "--attribute", "Smiling", "--json", str(blocked)],
         f"{a_file} is a file, not a folder"),
        (["audit", "photo.jpg", "--variant", "ptq-int8", "--attribute", "Smiling", "--json", str(tmp_path)],
         "it is a folder; give a file name"),
        (["audit", "photo.jpg", "--variant", "ptq-int8", "--attribute", "Smiling", "--out-dir", str(a_file)],
         f"cannot write into {a_file}: it is a file, not a folder"),
        (["counterfactual", "photo.jpg", "--attribute", "Smiling", "--out", str(blocked / "cf.png")],
         f"{a_file} is a file, not a folder"),
        (["counterfactual", "photo.jpg", "--attribute", "Smiling", "--out", str(tmp_path / "cf")],
         "give a picture file name such as cf.png"),
        (["counterfactual", "photo.jpg", "--attribute", "Smiling", "--out", str(tmp_path / "cf.txt")],
         "give a picture file name such as cf.png"),
        (["benchmark", *data, "--out", str(a_file)], f"cannot write into {a_file}: it is a file, not a folder"),
        (["benchmark", *data, "--out", str(blocked / "bench")], f"{a_file} is a file, not a folder"),
        (["quantize", *data, "--method", "ptq-int8", "--out", str(blocked)], f"{a_file} is a file, not a folder"),
        (["evaluate", *data, "--cache-dir", str(a_file)], f"cannot write into {a_file}"),
        (["train-classifier", *data, "--out", str(a_file)], f"cannot write into {a_file}"),
    ]


def test_every_unwritable_output_fails_before_the_work(a_file, tmp_path, nothing_loads, capsys, monkeypatch):
    from recourse.cli import main

    monkeypatch.chdir(tmp_path)
    for arguments, message in _commands(a_file, tmp_path):
        assert main(arguments) == 2, arguments
        error = capsys.readouterr().err
        assert error.startswith("error: cannot write") and message in error, (arguments, error)


def test_writable_outputs_pass_and_nothing_is_created(tmp_path):
    assert writable_file(tmp_path / "new" / "deeper" / "report.json") == tmp_path / "new" / "deeper" / "report.json"
    assert writable_folder(tmp_path / "bench" / "out") == tmp_path / "bench" / "out"
    writable_folder(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    import recourse.locations

    # file permissions do not stop root (these tests may run as root): the check asks os.access
    monkeypatch.setattr(recourse.locations.os, "access", lambda path, mode: path != tmp_path)
    with pytest.raises(ValueError, match=f"cannot write {tmp_path / 'new' / 'report.json'}: {tmp_path} is not writable"):
        writable_file(tmp_path / "new" / "report.json")


def test_a_missing_judges_file_is_said_before_the_work(tmp_path, nothing_loads, capsys):
    from recourse.cli import main

    missing = tmp_path / "judges.json"
    assert main(["evaluate-counterfactuals", "--data", str(tmp_path), "--judges-file", str(missing)]) == 2
    error = capsys.readouterr().err
    assert "no calibrated judges at" in error and "--no-independent-judges" in error
