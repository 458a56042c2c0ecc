"""What a run loads before it can lint: on a tree with nothing to find, start-up is most of the cost,
so modules only some runs need (libcst, the pool, the cache's and the index's json and hashlib, TOML,
git's subprocess, difflib) are imported where those runs need them."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import sys
from dp_rnn_lint.cli import main
status = main({args!r})
unwanted = sorted(name for name in {unwanted!r} if name in sys.modules)
assert not unwanted, "loaded: " + ", ".join(unwanted)
sys.exit(status)
"""

NEVER_FOR_PLAIN_TEXT = ("libcst", "concurrent.futures", "multiprocessing", "json", "hashlib", "tempfile", "subprocess",
                        "tomllib", "difflib")


def run(tmp_path, args, unwanted):
    return subprocess.run([sys.executable, "-c", PROGRAM.format(args=args, unwanted=unwanted)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def small_tree(tmp_path):
    # A file pre-commit might pass: it mentions an LSTM, and the screen finds nothing to analyse in it.
    (tmp_path / "data.py").write_text("import torch\n\ndef load_lstm_weights(path):\n    return torch.load(path)\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    return tmp_path


def test_a_small_run_without_cache_or_configuration_loads_none_of_the_optional_modules(small_tree):
    result = run(small_tree, ["--isolated", "--no-cache", "--no-respect-gitignore", "data.py", "plain.py"],
                 NEVER_FOR_PLAIN_TEXT)
    assert result.returncode == 0, result.stderr


def test_a_small_run_with_the_cache_and_a_configuration_file_starts_no_pool_and_no_libcst(small_tree):
    (small_tree / "pyproject.toml").write_text("[tool.dp-rnn-lint]\nselect = ['DPR']\n")
    result = run(small_tree, ["--no-respect-gitignore", "data.py", "plain.py"], ("libcst", "concurrent.futures"))
    assert result.returncode == 0, result.stderr
