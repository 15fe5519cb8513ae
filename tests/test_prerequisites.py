"""The suite says what it did not run, and CI (RECOURSE_REQUIRE_ALL=1) runs everything."""

import re
import subprocess
import sys

import pytest

from tests.conftest import PREREQUISITES, ROOT, missing


def test_a_missing_prerequisite_skips_with_its_reason(monkeypatch):
    monkeypatch.delenv("RECOURSE_REQUIRE_ALL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium not installed"):
        missing("chromium not installed")


def test_under_require_all_a_missing_prerequisite_fails(monkeypatch):
    monkeypatch.setenv("RECOURSE_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match="chromium not installed.*RECOURSE_REQUIRE_ALL=1"):
        missing("chromium not installed")


def test_every_declared_prerequisite_is_known():
    """A misspelt name in @pytest.mark.requires would fail at setup; all names in use exist."""
    used = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        for arguments in re.findall(r"mark\.requires\(([^)]*)\)", path.read_text()):
            used |= set(re.findall(r"[\"']([a-z_]+)[\"']", arguments))
    assert {"hq_data", "chromium", "committed_variants"} <= used <= set(PREREQUISITES), used


def test_the_run_lists_its_skips(tmp_path):
    """The pytest settings print each skip's reason at the end of a run (-rfEs)."""
    (tmp_path / "test_one.py").write_text("import pytest\n\ndef test_skipped():\n    pytest.skip('no chromium here')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_one.py")],
                          capture_output=True, text=True, timeout=120)
    assert "SKIPPED [1] " in done.stdout and "no chromium here" in done.stdout, done.stdout
