"""The test suite itself on a machine that lacks an optional test dependency."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT


def test_a_run_without_hypothesmith_skips_the_property_tests_without_a_traceback(tmp_path):
    # The terminal summary imports the property tests' counts; their module skips itself when hypothesmith is
    # missing, and pytest's skip is not an Exception.
    script = ("import sys, pytest\n"
              "sys.modules['hypothesmith'] = None\n"
              "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_properties.py', 'tests/test_names.py']))\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert result.returncode == 0 and "skipped" in result.stdout, result.stdout
