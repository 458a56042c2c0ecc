"""The run cache: linting a folder again with nothing changed answers from the last run without reading
a file; any change to a file the run reads (its size or modification time), a new file, or other
settings make it lint again; files too young to trust by their times are never saved whole."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dp_rnn_lint import cli, runner

from .conftest import FIXTURES

AN_HOUR_AGO = time.time() - 3600


def age(root: Path) -> None:
    """Every file's modification time an hour back: old enough for the run cache to trust."""
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "seq2seq_project", root)
    age(root)
    return root


@pytest.fixture
def lint_runs(monkeypatch):
    """How many times a run linted files (rather than answering from the run cache)."""
    calls = []
    original = runner.lint_files  # the command line imports it where it first needs it

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "lint_files", counting)
    return calls


def run(capsys, root: Path, cache: Path, *options: str):
    status = cli.main(["--isolated", "-j", "1", "--cache-dir", str(cache), *options, str(root)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_second_run_over_an_unchanged_folder_is_answered_whole(project, tmp_path, capsys, lint_runs):
    first = run(capsys, project, tmp_path / "cache")
    assert first[0] == 1 and ": DPR" in first[1]
    second = run(capsys, project, tmp_path / "cache")
    assert second == first
    assert len(lint_runs) == 1


def test_a_run_answered_whole_never_loads_the_engine_the_analysis_or_libcst(project, tmp_path):
    # Importing them costs about a third of such a run (benchmarks/RESULTS.md: a second run over the
    # real-models tree against a tenth of ruff's cold run).
    command = ["--isolated", "-j", "1", "--cache-dir", str(tmp_path / "cache"), str(project)]
    probe = ("import sys\nfrom dp_rnn_lint import cli\nstatus = cli.main(sys.argv[1:])\n"
             "loaded = [name for name in ('dp_rnn_lint.engine', 'dp_rnn_lint.runner', 'dp_rnn_lint.analysis.project',"
             " 'libcst') if name in sys.modules]\nprint('loaded:', loaded, file=sys.stderr)\nsys.exit(status)\n")
    first = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, timeout=120)
    second = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, timeout=120)
    assert first.returncode == second.returncode == 1 and second.stdout == first.stdout
    assert "'dp_rnn_lint.engine'" in first.stderr  # the first run lints, so the probe sees what it loads
    assert "loaded: []" in second.stderr


def test_a_damaged_or_truncated_run_entry_is_a_miss(project, tmp_path, capsys, lint_runs):
    cache = tmp_path / "cache"
    first = run(capsys, project, cache)
    [entry] = cache.rglob("runs/*.run")
    whole = entry.read_bytes()
    key_size = int(whole.split(b"\n", 1)[0])
    another_key = whole.replace(b"DPR", b"XYZ", 1)  # the first DPR is in the key (the selection)
    assert whole.index(b"DPR") < whole.index(b"\n") + 1 + key_size
    for damaged in (b"", b"garbage", whole[: key_size // 2], whole[:-10], another_key):
        entry.write_bytes(damaged)
        assert run(capsys, project, cache) == first
    assert len(lint_runs) == 6  # every damaged entry linted again (and the last run saved a whole one)
    assert run(capsys, project, cache) == first and len(lint_runs) == 6


def test_a_changed_file_a_new_file_or_other_settings_lint_again(project, tmp_path, capsys, lint_runs):
    cache = tmp_path / "cache"
    first = run(capsys, project, cache)
    model = next(path for path in project.rglob("*.py") if ": DPR" in first[1] and path.name in first[1])
    model.write_text(model.read_text() + "\n# edited\n")
    os.utime(model, (AN_HOUR_AGO + 60, AN_HOUR_AGO + 60))
    run(capsys, project, cache)
    assert len(lint_runs) == 2
    (project / "extra.py").write_text("x = 1\n")
    age(project)
    run(capsys, project, cache)
    assert len(lint_runs) == 3
    selected = run(capsys, project, cache, "--select", "DPR002")
    assert len(lint_runs) == 4 and "DPR001" not in selected[1]
    # Each of those was saved in turn: the same command again is answered.
    run(capsys, project, cache, "--select", "DPR002")
    assert len(lint_runs) == 4


def test_files_too_young_to_trust_are_never_saved_whole(tmp_path, capsys, lint_runs):
    root = tmp_path / "young"
    shutil.copytree(FIXTURES / "projects" / "seq2seq_project", root)
    for path in root.rglob("*.py"):
        os.utime(path)  # modified just now
    run(capsys, root, tmp_path / "cache")
    run(capsys, root, tmp_path / "cache")
    assert len(lint_runs) == 2


def test_fixes_and_machine_readable_output_always_lint(project, tmp_path, capsys, lint_runs):
    cache = tmp_path / "cache"
    run(capsys, project, cache)
    run(capsys, project, cache, "--format", "json")  # carries each fix's edits, which the cache does not keep
    run(capsys, project, cache, "--diff")
    assert len(lint_runs) == 3
