"""Configuration: `[tool.dp-rnn-lint]` in pyproject.toml, --config and --isolated, command-line
overrides, per-file ignores, exclusions, .gitignore; and flake8's own configuration files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

BUGGY = (FIXTURES / "DPR001" / "lstm_classifier.py").read_text()
BUGGY_DPR002 = (FIXTURES / "DPR002" / "faq_lstm_batch_first.py").read_text()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--format", "concise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def flagged(result: subprocess.CompletedProcess) -> list:
    """`path CODE` for every finding printed."""
    return sorted(f"{line.split(':')[0]} {line.split(': ')[1].split()[0]}" for line in result.stdout.splitlines()
                  if ": DPR" in line)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with a model package, a legacy folder and a generated folder."""
    root = tmp_path / "project"
    for relative, text in {"models/tagger.py": BUGGY, "models/encoder.py": BUGGY_DPR002,
                           "models/legacy/old_tagger.py": BUGGY, "generated/tagger_copy.py": BUGGY}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def write_pyproject(folder: Path, table: str) -> None:
    (folder / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.dp-rnn-lint]\n" + table)


def test_without_configuration_every_file_is_linted(project):
    assert flagged(run(".", cwd=project)) == [
        "generated/tagger_copy.py DPR001", "models/encoder.py DPR002", "models/legacy/old_tagger.py DPR001",
        "models/tagger.py DPR001",
    ]


def test_pyproject_is_found_from_the_linted_path_upward(project, tmp_path):
    write_pyproject(project, 'select = ["DPR002"]\n')
    # Run from outside the project: the file is found from the linted folder, not the current one.
    result = run("project/models", cwd=tmp_path)
    assert flagged(result) == ["project/models/encoder.py DPR002"]


def test_pyproject_without_our_table_is_passed_over_for_one_further_up(project):
    write_pyproject(project, 'ignore = ["DPR001"]\n')
    (project / "models" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert flagged(run(".", cwd=project / "models")) == ["encoder.py DPR002"]


def test_per_file_ignores_from_pyproject_are_relative_to_its_folder(project):
    write_pyproject(project, '[tool.dp-rnn-lint.per-file-ignores]\n"models/legacy/*" = ["DPR001"]\n"generated/*" = ["DPR"]\n')
    assert flagged(run(".", cwd=project)) == ["models/encoder.py DPR002", "models/tagger.py DPR001"]
    # The same patterns apply when linting from inside the project.
    assert flagged(run(".", cwd=project / "models")) == ["encoder.py DPR002", "tagger.py DPR001"]


def test_command_line_options_replace_the_files_values(project):
    write_pyproject(project, 'select = ["DPR002"]\n')
    assert flagged(run("--select", "DPR001", "models", cwd=project)) == [
        "models/legacy/old_tagger.py DPR001", "models/tagger.py DPR001",
    ]
    assert flagged(run("--per-file-ignores", "models/*:DPR002", "--select", "DPR", "models", cwd=project)) == [
        "models/legacy/old_tagger.py DPR001", "models/tagger.py DPR001",
    ]


def test_exclude_replaces_the_defaults_and_extend_exclude_adds_to_them(project):
    (project / "build").mkdir()
    (project / "build" / "copy.py").write_text(BUGGY)
    write_pyproject(project, 'extend-exclude = ["generated"]\n')
    assert "build/copy.py DPR001" not in flagged(run(".", cwd=project))
    assert "generated/tagger_copy.py DPR001" not in flagged(run(".", cwd=project))
    # --extend-exclude on the command line adds to the file's list.
    assert flagged(run("--extend-exclude", "legacy", ".", cwd=project)) == ["models/encoder.py DPR002", "models/tagger.py DPR001"]
    # --exclude replaces the defaults, so build/ is linted again, as in ruff and flake8; the file's
    # extend-exclude still applies.
    assert flagged(run("--exclude", "models", ".", cwd=project)) == ["build/copy.py DPR001"]


def test_an_excluded_file_named_explicitly_is_still_linted(project):
    write_pyproject(project, 'exclude = ["generated"]\n')
    assert flagged(run("generated/tagger_copy.py", cwd=project)) == ["generated/tagger_copy.py DPR001"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_files_git_ignores_are_skipped_unless_told_otherwise(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text("generated/\nold_*.py\n")
    assert flagged(run(".", cwd=project)) == ["models/encoder.py DPR002", "models/tagger.py DPR001"]
    assert flagged(run("models", cwd=project)) == ["models/encoder.py DPR002", "models/tagger.py DPR001"]
    # Named explicitly, an ignored file or folder is linted.
    assert flagged(run("generated/tagger_copy.py", cwd=project)) == ["generated/tagger_copy.py DPR001"]
    assert flagged(run("generated", cwd=project)) == ["generated/tagger_copy.py DPR001"]
    assert len(flagged(run("--no-respect-gitignore", ".", cwd=project))) == 4
    write_pyproject(project, "respect-gitignore = false\n")
    assert len(flagged(run(".", cwd=project))) == 4


def test_config_option_names_the_file_and_isolated_ignores_every_file(project, tmp_path):
    write_pyproject(project, 'select = ["DPR002"]\n')
    (tmp_path / "strict.toml").write_text('select = ["DPR001"]\nextend-exclude = ["legacy"]\n')
    assert flagged(run("--config", "../strict.toml", ".", cwd=project)) == [
        "generated/tagger_copy.py DPR001", "models/tagger.py DPR001",
    ]
    assert len(flagged(run("--isolated", ".", cwd=project))) == 4
    both = run("--isolated", "--config", "../strict.toml", ".", cwd=project)
    assert both.returncode == 2 and "--config and --isolated" in both.stderr


@pytest.mark.parametrize("table, expected", [
    ('selct = ["DPR"]\n', "pyproject.toml: [tool.dp-rnn-lint] unknown key 'selct'"),
    ('select = "DPR9"\n', "pyproject.toml: [tool.dp-rnn-lint] select: unknown rule code or prefix 'DPR9'"),
    ("respect-gitignore = 'yes'\n", "pyproject.toml: [tool.dp-rnn-lint] respect-gitignore: expected true or false"),
    ("exclude = 3\n", "pyproject.toml: [tool.dp-rnn-lint] exclude: expected a list of file patterns"),
    ('per-file-ignores = ["x"]\n', "pyproject.toml: [tool.dp-rnn-lint] per-file-ignores: expected a table"),
    ("select = [\n", "pyproject.toml: cannot parse TOML"),
    ("select = []\n", "pyproject.toml: [tool.dp-rnn-lint] select: selects no rule"),
    ('extend-rnn-words = ["two words"]\n', "pyproject.toml: [tool.dp-rnn-lint] extend-rnn-words: expected words of identifiers"),
    ("extend-rnn-words = 3\n", "pyproject.toml: [tool.dp-rnn-lint] extend-rnn-words: expected a list of words"),
])
def test_a_bad_configuration_is_one_error_line_naming_file_and_key_and_nothing_is_fixed(project, table, expected):
    write_pyproject(project, table)
    result = run("--fix", ".", cwd=project)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: " + expected), line
    assert (project / "models" / "tagger.py").read_text() == BUGGY


@pytest.mark.parametrize("name", ["dp_rnn_lint", "DP-RNN-LINT", "dp.rnn.lint"])
def test_a_misspelt_table_is_an_error_not_silence(project, name):
    (project / "pyproject.toml").write_text(f'[tool."{name}"]\nselect = ["DPR002"]\n')
    result = run(".", cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f'error: pyproject.toml: [tool.{name}] is not read; the table is [tool.dp-rnn-lint]'


def test_an_empty_select_on_the_command_line_is_a_usage_error(project):
    result = run("--select", "", ".", cwd=project)
    assert result.returncode == 2 and "--select: selects no rule" in result.stderr


def test_a_missing_config_file_is_an_error_naming_it(project):
    result = run("--config", "missing.toml", ".", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: missing.toml: cannot read: No such file or directory"


def test_standard_input_uses_the_configuration_found_from_the_stdin_filename(project):
    write_pyproject(project, '[tool.dp-rnn-lint.per-file-ignores]\n"models/legacy/*" = ["DPR001"]\n')
    command = [sys.executable, "-m", "dp_rnn_lint", "--format", "concise", "-", "--stdin-filename"]
    ignored = subprocess.run([*command, "models/legacy/new.py"], cwd=project, input=BUGGY, capture_output=True, text=True)
    reported = subprocess.run([*command, "models/new.py"], cwd=project, input=BUGGY, capture_output=True, text=True)
    assert ignored.returncode == 0 and reported.returncode == 1


@pytest.mark.parametrize("config_name, section", [("setup.cfg", "flake8"), (".flake8", "flake8"), ("tox.ini", "flake8")])
def test_flake8_reads_select_per_file_ignores_and_exclude_for_our_codes(project, config_name, section):
    (project / config_name).write_text(
        f"[{section}]\nselect = DPR\nextend-exclude = generated\nper-file-ignores =\n    models/legacy/*:DPR001\n"
    )
    result = subprocess.run([sys.executable, "-m", "flake8", "."], cwd=project, capture_output=True, text=True, timeout=120)
    assert sorted(line.split(":")[0] + " " + line.split()[1] for line in result.stdout.splitlines()) == [
        "./models/encoder.py DPR002", "./models/tagger.py DPR001",
    ]


def test_force_exclude_applies_exclusions_to_files_named_explicitly(project):
    # pre-commit names every staged file, so exclusions must apply to named files when asked.
    write_pyproject(project, 'extend-exclude = ["generated", "old_*.py"]\nforce-exclude = true\n')
    named = ["generated/tagger_copy.py", "models/legacy/old_tagger.py", "models/tagger.py"]
    assert flagged(run(*named, cwd=project)) == ["models/tagger.py DPR001"]
    assert len(flagged(run("--no-force-exclude", *named, cwd=project))) == 3
    # A folder above the project that matches a pattern does not exclude the project.
    (project / "pyproject.toml").unlink()
    assert len(flagged(run("--force-exclude", "--extend-exclude", project.parent.name, *named, cwd=project))) == 3
    stdin = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--fix", "--force-exclude", "--extend-exclude", "generated",
                            "-", "--stdin-filename", "generated/new.py"], cwd=project, input=BUGGY, capture_output=True,
                           text=True)
    assert stdin.returncode == 0 and stdin.stdout == BUGGY


# A class chosen by a run-time name that says nothing about RNNs: found only with the user's word for it.
RUN_TIME_CLASS = """\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, unit, size):
        super().__init__()
        self.seq = getattr(nn, unit.upper())(size, size)

    def forward(self, x):
        out, _ = self.seq(x)
        return out
"""


def test_extend_rnn_words_lets_a_run_time_name_count_as_an_rnn_and_the_message_says_so(tmp_path):
    (tmp_path / "encoder.py").write_text(RUN_TIME_CLASS)
    assert run("encoder.py", cwd=tmp_path).returncode == 0
    by_option = run("--extend-rnn-words", "Unit", "encoder.py", cwd=tmp_path)
    assert by_option.returncode == 1
    assert "an RNN class chosen at run time, going by the name `unit.upper()`" in by_option.stdout
    write_pyproject(tmp_path, 'extend-rnn-words = ["unit"]\n')
    assert flagged(run("encoder.py", cwd=tmp_path)) == ["encoder.py DPR001"]
    # The cache keeps the verdict of each set of words apart.
    assert run("--isolated", "encoder.py", cwd=tmp_path).returncode == 0
    assert flagged(run("encoder.py", cwd=tmp_path)) == ["encoder.py DPR001"]


def test_flake8_takes_extend_rnn_words_and_rejects_a_bad_one(tmp_path):
    (tmp_path / "encoder.py").write_text(RUN_TIME_CLASS)
    command = [sys.executable, "-m", "flake8", "--select=DPR", "encoder.py"]
    assert subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout == ""
    found = subprocess.run([*command, "--dp-rnn-extend-rnn-words=unit"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert [line.split()[1] for line in found.stdout.splitlines()] == ["DPR001"]
    bad = subprocess.run([*command, "--dp-rnn-extend-rnn-words=un-it"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "expected words of identifiers" in bad.stderr
    assert "Traceback" not in bad.stderr
