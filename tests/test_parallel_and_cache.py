"""Linting many files: the process pool gives what one process gives, in the same order, and the result
cache answers for unchanged files, notices changes, and survives damage and concurrent runs."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dp_rnn_lint import runner
from dp_rnn_lint.cache import ResultCache
from dp_rnn_lint.engine import Selection
from dp_rnn_lint.runner import Options, Task, lint_files

from .conftest import FIXTURES


def run(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DP_RNN_LINT_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("*.fixed.py", "*.md"))
    return root


def test_a_pool_of_processes_reports_what_one_process_does_in_the_same_order(tree, tmp_path):
    one = run("--no-cache", "-j", "1", ".", cwd=tree, cache=tmp_path / "c")
    pool = run("--no-cache", "-j", "2", ".", cwd=tree, cache=tmp_path / "c")
    assert one.stdout.count(": DPR") > 30
    assert (pool.returncode, pool.stdout, pool.stderr) == (one.returncode, one.stdout, one.stderr)


def test_fixing_in_a_pool_writes_what_fixing_in_one_process_writes(tree, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(tree, other)
    one = run("--no-cache", "-j", "1", "--fix", ".", cwd=tree, cache=tmp_path / "c")
    pool = run("--no-cache", "-j", "2", "--fix", ".", cwd=other, cache=tmp_path / "c")
    assert pool.stdout == one.stdout and "fixed" in one.stdout
    for path in sorted(tree.rglob("*.py")):
        assert (other / path.relative_to(tree)).read_bytes() == path.read_bytes(), path.name


def test_jobs_must_be_a_positive_number(tree, tmp_path):
    result = run("-j", "0", ".", cwd=tree, cache=tmp_path / "c")
    assert result.returncode == 2 and "-j/--jobs" in result.stderr


def test_a_second_run_is_answered_from_the_cache(tree, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    tasks = [Task(str(path), Selection()) for path in sorted(tree.rglob("*.py"))]
    first = lint_files(tasks, Options(), jobs=1, cache=cache)

    def must_not_lint(*args, **kwargs):
        raise AssertionError("linted a file the cache should have answered for")

    monkeypatch.setattr(runner, "lint_path", must_not_lint)
    second = lint_files(tasks, Options(), jobs=1, cache=cache)
    summary = [[(f.line, f.col, f.code, f.message, f.fixable) for f in r.findings] for r in first]
    assert [[(f.line, f.col, f.code, f.message, f.fixable) for f in r.findings] for r in second] == summary
    assert any(summary)


def test_the_cache_notices_a_changed_file_and_changed_settings(tree, tmp_path):
    cache = tmp_path / "cache"
    model = tree / "DPR001" / "lstm_classifier.py"
    assert "lstm_classifier.py" in run("--format", "concise", ".", cwd=tree, cache=cache).stdout
    # Fixed by hand: the finding must disappear although the old answer is cached.
    model.write_bytes((FIXTURES / "DPR001" / "lstm_classifier.fixed.py").read_bytes())
    assert "lstm_classifier.py" not in run("--format", "concise", ".", cwd=tree, cache=cache).stdout
    only_dpr002 = run("--format", "concise", "--select", "DPR002", ".", cwd=tree, cache=cache)
    assert "DPR001" not in only_dpr002.stdout and "DPR002" in only_dpr002.stdout


def test_no_cache_writes_nothing_and_a_damaged_entry_is_a_miss(tree, tmp_path):
    cache = tmp_path / "cache"
    run("--no-cache", ".", cwd=tree, cache=cache)
    assert not cache.exists()
    expected = run(".", cwd=tree, cache=cache).stdout
    entries = list(cache.rglob("*.json"))
    assert entries and (cache / ".gitignore").read_text() == "*\n"
    for entry in entries:
        entry.write_text("{ damaged")
    assert run(".", cwd=tree, cache=cache).stdout == expected


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_folder_leaves_the_run_uncached_not_failed(tree, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = run(".", cwd=tree, cache=cache)
    finally:
        cache.chmod(stat.S_IRWXU)
    assert result.returncode == 1 and result.stdout.count(": DPR") > 30 and "Traceback" not in result.stderr


def test_a_cache_file_where_the_folder_should_be_leaves_the_run_uncached_not_failed(tree, tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("not a folder")
    result = run(".", cwd=tree, cache=cache)
    assert result.returncode == 1 and result.stdout.count(": DPR") > 30 and "Traceback" not in result.stderr


def test_concurrent_runs_sharing_a_cache_both_report_everything(tree, tmp_path):
    cache = tmp_path / "cache"
    expected = run("--no-cache", ".", cwd=tree, cache=cache).stdout
    env = {**os.environ, "DP_RNN_LINT_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "dp_rnn_lint", "--isolated", "."]
    runs = [subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(3)]
    outputs = [process.communicate(timeout=120) for process in runs]
    assert [out for out, _ in outputs] == [expected] * 3
    assert run(".", cwd=tree, cache=cache).stdout == expected


def test_fix_after_a_cached_lint_still_fixes_and_the_next_run_agrees_with_an_uncached_one(tree, tmp_path):
    cache = tmp_path / "cache"
    run(".", cwd=tree, cache=cache)
    assert "fixed" in run("--fix", ".", cwd=tree, cache=cache).stdout
    uncached = run("--no-cache", ".", cwd=tree, cache=cache)
    assert run(".", cwd=tree, cache=cache).stdout == uncached.stdout
    assert run("--fix", ".", cwd=tree, cache=cache).stdout == uncached.stdout
