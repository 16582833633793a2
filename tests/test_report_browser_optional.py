"""Chromium is optional for the test command: without it the report's browser check is
skipped with its reason printed; with ``CHANGERATE_REQUIRE_BROWSER=1`` (CI) it fails."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def _run_browser_tests(tmp_path, **env):
    bindir = tmp_path / "bin"  # PATH holds only the interpreter: no chromium on it
    bindir.mkdir()
    os.symlink(sys.executable, bindir / "python")
    clean = {k: v for k, v in os.environ.items() if k not in ("CHROMIUM", "CHANGERATE_REQUIRE_BROWSER")}
    clean.update(PATH=str(bindir), **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            str(TESTS / "test_report_browser.py"),
        ],
        capture_output=True,
        text=True,
        env=clean,
        cwd=TESTS.parent,
        timeout=300,
    )


def test_without_chromium_the_browser_check_is_skipped_with_its_reason(tmp_path):
    proc = _run_browser_tests(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 skipped" in proc.stdout
    assert "no Chromium on this machine" in proc.stdout  # -ra (the addopts) prints the reason
    assert "apt-get install chromium" in proc.stdout


def test_ci_requires_chromium(tmp_path):
    proc = _run_browser_tests(tmp_path, CHANGERATE_REQUIRE_BROWSER="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CHANGERATE_REQUIRE_BROWSER=1 but no Chromium found" in proc.stdout
