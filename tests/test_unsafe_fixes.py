"""Fix safety as ruff has it: `--fix` and `--diff` apply safe fixes; unsafe ones only with `--unsafe-fixes`
(or `unsafe-fixes = true`), and the summary says how many are hidden."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# BUGGY: DPR001's fix is safe; DPR002's is unsafe (the padded length may change on one device).
from .test_cli import BUGGY

# The issue's case: `lengths` may be a Python list, so `.cpu()` (DPR003's fix) is unsafe here.
LIST_LENGTHS = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)

    def forward(self, x, lengths):
        self.gru.flatten_parameters()
        packed = pack_padded_sequence(x, lengths, batch_first=True)
        return self.gru(packed)[1]
"""

HIDDEN_ONE = "1 hidden fix can be enabled with the `--unsafe-fixes` option."


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # DPR003 on lengths nothing types runs in preview: these tests are about its unsafe fix.
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--no-cache", "--preview", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(BUGGY)
    return tmp_path


def test_lint_summary_counts_safe_fixes_and_names_the_hidden_ones(project):
    result = run("--format", "concise", "model.py", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-2:] == ["Found 2 errors (1 fixable with `dp-rnn-lint --fix`). Checked 1 file.", HIDDEN_ONE]


def test_fix_applies_only_the_safe_fix_by_default(project):
    result = run("--fix", "model.py", cwd=project)
    text = (project / "model.py").read_text()
    assert "self.lstm.flatten_parameters()" in text
    assert "total_length" not in text
    assert result.returncode == 1  # the DPR002 finding remains
    assert result.stdout.splitlines()[-2:] == ["Found 2 errors (1 fixed, 1 remaining). Checked 1 file.", HIDDEN_ONE]


def test_unsafe_fixes_flag_applies_both(project):
    result = run("--fix", "--unsafe-fixes", "model.py", cwd=project)
    text = (project / "model.py").read_text()
    assert "self.lstm.flatten_parameters()" in text and "total_length=x.size(1)" in text
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "Found 2 errors (2 fixed, 0 remaining). Checked 1 file."


def test_the_setting_enables_unsafe_fixes_and_the_flag_can_turn_them_off(project):
    (project / "pyproject.toml").write_text("[tool.dp-rnn-lint]\nunsafe-fixes = true\n")
    off = run("--diff", "--no-unsafe-fixes", "model.py", cwd=project)
    assert "total_length" not in off.stdout and "flatten_parameters" in off.stdout
    assert off.stderr.splitlines()[-1] == "Would fix 1 error (1 hidden fix can be enabled with the `--unsafe-fixes` option)."
    run("--fix", "model.py", cwd=project)
    assert "total_length=x.size(1)" in (project / "model.py").read_text()


def test_a_bad_unsafe_fixes_setting_is_one_error_line(project):
    (project / "pyproject.toml").write_text("[tool.dp-rnn-lint]\nunsafe-fixes = 'yes'\n")
    result = run("model.py", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: pyproject.toml: [tool.dp-rnn-lint] unsafe-fixes: expected true or false, got 'yes'"


def test_diff_follows_the_same_choice(project):
    safe_only = run("--diff", "model.py", cwd=project)
    assert "+        self.lstm.flatten_parameters()" in safe_only.stdout
    assert "total_length" not in safe_only.stdout
    both = run("--diff", "--unsafe-fixes", "model.py", cwd=project)
    assert "total_length=x.size(1)" in both.stdout
    assert both.stderr.splitlines()[-1] == "Would fix 2 errors."
    assert (project / "model.py").read_text() == BUGGY  # --diff writes nothing


def test_list_lengths_are_left_alone_without_the_opt_in(tmp_path):
    # `.cpu()` on a list raises AttributeError; nothing says `lengths` is a tensor, so --fix must not add it.
    (tmp_path / "model.py").write_text(LIST_LENGTHS)
    result = run("--fix", "model.py", cwd=tmp_path)
    assert (tmp_path / "model.py").read_text() == LIST_LENGTHS
    assert result.stdout.splitlines()[-2:] == ["Found 1 error. Checked 1 file.", HIDDEN_ONE]


def test_json_still_reports_the_unsafe_fix_with_its_applicability(project):
    result = run("--format", "json", "model.py", cwd=project)
    fixes = {item["code"]: item["fix"]["applicability"] for item in json.loads(result.stdout)}
    assert fixes == {"DPR001": "safe", "DPR002": "unsafe"}


def test_a_cached_result_does_not_stand_in_for_an_unsafe_fix(tmp_path):
    (tmp_path / "model.py").write_text(BUGGY)
    cached = ["--cache-dir", str(tmp_path / "cache")]
    command = [sys.executable, "-m", "dp_rnn_lint", *cached]
    subprocess.run([*command, "--fix", "model.py"], cwd=tmp_path, capture_output=True, timeout=60)
    assert "total_length" not in (tmp_path / "model.py").read_text()
    subprocess.run([*command, "--fix", "--unsafe-fixes", "model.py"], cwd=tmp_path, capture_output=True, timeout=60)
    assert "total_length=x.size(1)" in (tmp_path / "model.py").read_text()


def test_statistics_mark_only_what_fix_would_apply(project):
    lines = run("--statistics", "model.py", cwd=project).stdout.splitlines()
    assert any(line.split()[1:3] == ["DPR001", "*"] for line in lines)
    assert not any(line.split()[1:3] == ["DPR002", "*"] for line in lines)
    marked = run("--statistics", "--unsafe-fixes", "model.py", cwd=project).stdout.splitlines()
    assert any(line.split()[1:3] == ["DPR002", "*"] for line in marked)
