"""The suite says what it did not run, and its full tier (RECOURSE_FULL=1, as CI runs it) runs everything."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import PREREQUISITES, ROOT, missing


def test_a_missing_prerequisite_skips_with_its_reason(monkeypatch):
    monkeypatch.delenv("RECOURSE_FULL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium not installed"):
        missing("chromium not installed")


def test_in_the_full_tier_a_missing_prerequisite_fails(monkeypatch):
    monkeypatch.setenv("RECOURSE_FULL", "1")
    with pytest.raises(pytest.fail.Exception, match="chromium not installed.*RECOURSE_FULL=1"):
        missing("chromium not installed")


def test_every_declared_prerequisite_is_known():
    """A misspelt name in @pytest.mark.requires would fail at setup; all names in use exist."""
    used = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        for arguments in re.findall(r"mark\.requires\(([^)]*)\)", path.read_text()):
            used |= set(re.findall(r"[\"']([a-z_]+)[\"']", arguments))
    assert {"hq_data", "chromium", "committed_variants"} <= used <= set(PREREQUISITES), used


@pytest.mark.slow
def test_the_run_lists_its_skips(tmp_path):
    """The pytest settings print each skip's reason at the end of a run (-rfEs)."""
    (tmp_path / "test_one.py").write_text("import pytest\n\ndef test_skipped():\n    pytest.skip('no chromium here')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_one.py")],
                          capture_output=True, text=True, timeout=120)
    assert "SKIPPED [1] " in done.stdout and "no chromium here" in done.stdout, done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("full, ran", [("0", "1 passed, 1 deselected"), ("1", "2 passed")])
def test_the_fast_tier_leaves_out_the_slow_tests_and_the_full_tier_runs_them(tmp_path, full, ran):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems, pytest_report_header\n")
    (tmp_path / "test_two.py").write_text("import pytest\n\ndef test_fast():\n    pass\n\n"
                                         "@pytest.mark.slow\ndef test_slow():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_two.py")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "RECOURSE_FULL": full, "PYTHONPATH": str(ROOT)})
    assert ran in done.stdout, done.stdout
