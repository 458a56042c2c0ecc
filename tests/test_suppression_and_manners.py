"""Adopting the tool on a large codebase: file-level `noqa`, `--add-noqa`, the unused-`noqa` report (DPR100),
and the command line's manners (files checked, no files found, `--output-file`, options without effect,
the cache at the project root)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# BUGGY: DPR001 on line 12 (self.lstm(packed)), DPR002 on line 13 (pad_packed_sequence).
from .test_cli import BUGGY, CLEAN


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DPR", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("comment, silenced", [
    ("# flake8: noqa", {"DPR001", "DPR002"}),
    ("# dp-rnn-lint: noqa", {"DPR001", "DPR002"}),
    ("# dp-rnn-lint: noqa: DPR002", {"DPR002"}),
    ("#dp-rnn-lint:noqa:DPR001,DPR002", {"DPR001", "DPR002"}),
    # flake8 7 silences the whole file whatever follows its file-level form, codes included.
    ("# flake8: noqa: DPR001", {"DPR001", "DPR002"}),
    ("#flake8: noqa", set()),  # flake8 wants `# flake8`
    ("x = 1  # flake8: noqa", set()),  # not a line of its own
])
def test_file_level_noqa_silences_the_same_codes_in_the_cli_and_under_flake8(tmp_path, comment, silenced):
    (tmp_path / "model.py").write_text(f"{comment}\n{BUGGY}")
    expected = {"DPR001", "DPR002"} - silenced
    cli = run("--format", "concise", "model.py", cwd=tmp_path)
    assert {line.split()[1] for line in cli.stdout.splitlines() if ": DPR" in line} == expected
    plugin = flake8("model.py", cwd=tmp_path)
    assert {line.split()[1] for line in plugin.stdout.splitlines() if ": DPR" in line} == expected


def test_add_noqa_merges_keeps_layout_and_is_idempotent(tmp_path):
    source = BUGGY.replace("        out, _ = self.lstm(packed)\n", "        out, _ = self.lstm(packed)  # noqa: E501\n")
    source = source.replace("\n", "\r\n")  # CRLF kept
    model = tmp_path / "model.py"
    model.write_bytes(source.encode())
    first = run("--add-noqa", ".", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stderr.strip() == "Added 2 noqa directives."
    fixed = model.read_bytes().decode()
    lines = fixed.split("\r\n")
    assert lines[11] == "        out, _ = self.lstm(packed)  # noqa: E501, DPR001"
    assert lines[12] == "        out, _ = pad_packed_sequence(out, batch_first=True)  # noqa: DPR002"
    # Nothing else changed: the other lines are the original ones, byte for byte.
    assert [line for i, line in enumerate(lines) if i not in (11, 12)] == \
        [line for i, line in enumerate(source.split("\r\n")) if i not in (11, 12)]
    compile(fixed, "model.py", "exec")
    assert run(".", cwd=tmp_path).returncode == 0
    second = run("--add-noqa", ".", cwd=tmp_path)
    assert second.stderr.strip() == "Added 0 noqa directives." and model.read_bytes().decode() == fixed


def test_add_noqa_puts_the_comment_after_a_backslash_continuation(tmp_path):
    source = BUGGY.replace("        out, _ = self.lstm(packed)\n", "        out, _ = \\\n            self.lstm(packed)\n")
    (tmp_path / "model.py").write_text(source)
    assert run("--add-noqa", "model.py", cwd=tmp_path).returncode == 0
    text = (tmp_path / "model.py").read_text()
    assert "        out, _ = \\\n            self.lstm(packed)  # noqa: DPR001\n" in text
    compile(text, "model.py", "exec")
    assert "DPR001" not in run("--format", "concise", "model.py", cwd=tmp_path).stdout


@pytest.mark.parametrize("args", [("--add-noqa", "--fix"), ("--add-noqa", "--diff"), ("--add-noqa", "-")])
def test_add_noqa_refuses_to_combine_with_other_writes(tmp_path, args):
    (tmp_path / "model.py").write_text(BUGGY)
    result = run(*args, "model.py", cwd=tmp_path)
    assert result.returncode == 2 and "--add-noqa" in result.stderr.splitlines()[-1]
    assert (tmp_path / "model.py").read_text() == BUGGY


def test_unused_noqa_is_reported_only_when_selected_and_only_for_our_codes(tmp_path):
    source = CLEAN.replace("\n", "  # noqa: DPR001, E501\n", 1)  # a clean model: nothing to silence
    (tmp_path / "model.py").write_text(source + "x = 1  # noqa\n")
    assert run("model.py", cwd=tmp_path).returncode == 0  # opt-in: `DPR` alone does not enable it
    result = run("--extend-select", "DPR100", "--format", "concise", "model.py", cwd=tmp_path)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if "DPR100" in line]
    assert line.startswith("model.py:1:") and "unused: `DPR001`" in line and "E501" not in line


def test_used_noqa_is_not_reported(tmp_path):
    source = BUGGY.replace("        out, _ = self.lstm(packed)\n", "        out, _ = self.lstm(packed)  # noqa: DPR001\n")
    (tmp_path / "model.py").write_text(source)
    result = run("--extend-select", "DPR100", "--format", "concise", "model.py", cwd=tmp_path)
    assert "DPR100" not in result.stdout and "DPR002" in result.stdout


def test_unused_noqa_in_a_file_without_rnn_words_and_from_the_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dp-rnn-lint]\nextend-select = ["DPR100"]\n')
    (tmp_path / "util.py").write_text("def f():\n    return 1  # noqa: DPR003\n")
    result = run("--format", "concise", ".", cwd=tmp_path)
    assert result.stdout.splitlines()[0].startswith("util.py:2:15: DPR100")


def test_summary_counts_the_files_checked_and_warns_about_a_folder_without_python_files(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.py").write_text(CLEAN)
    (tmp_path / "models" / "b.py").write_text("x = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("nothing to lint\n")
    result = run("models", "docs", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "All checks passed! Checked 2 files."
    assert result.stderr.strip() == "warning: no Python files found under docs"


def test_output_file_receives_the_report(tmp_path):
    (tmp_path / "model.py").write_text(BUGGY)
    result = run("--output-file", "report.txt", "--format", "concise", "model.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    report = (tmp_path / "report.txt").read_text()
    assert "model.py:12:18: DPR001" in report and "Checked 1 file." in report
    failed = run("-o", str(tmp_path / "missing" / "report.txt"), "model.py", cwd=tmp_path)
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1 and "cannot write the output file" in failed.stderr


@pytest.mark.parametrize("args, warning", [
    (("--show-fixes",), "--show-fixes does nothing without --fix"),
    (("--stdin-filename", "x.py"), "--stdin-filename does nothing unless the path is -"),
    (("--diff", "--statistics"), "--statistics does nothing with --diff"),
])
def test_options_without_effect_are_named(tmp_path, args, warning):
    (tmp_path / "model.py").write_text(CLEAN)
    result = run(*args, "model.py", cwd=tmp_path)
    assert warning in result.stderr


def test_the_cache_lives_at_the_project_root_whatever_the_working_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "model.py").write_text(BUGGY)
    result = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "."], cwd=package, capture_output=True, text=True,
                            timeout=60, env={**__import__("os").environ, "DP_RNN_LINT_CACHE_DIR": ""})
    assert result.returncode == 1
    assert (tmp_path / ".dp-rnn-lint-cache").is_dir()
    assert not (package / ".dp-rnn-lint-cache").exists()
