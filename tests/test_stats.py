"""`--stats`: where a run's time goes, stage by stage. Its counts are exclusive (a stage inside another
pauses the outer one), workers' counts reach the main process, and a forked worker does not report its
parent's counts again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

from dp_rnn_lint import stages

from .conftest import FIXTURES

_ROW = re.compile(r"^(?P<stage>\S.*?)\s+(?P<files>\d+|-)\s+(?P<entered>\d+|-)\s+(?P<seconds>[\d.]+)\s+\d+%$")


def run(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DP_RNN_LINT_CACHE_DIR": str(cache)}
    env.pop("DP_RNN_LINT_STATS", None)
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


def table(stderr: str) -> Dict[str, Tuple[str, str, float]]:
    """stage -> (files, entered, seconds), from the table `--stats` prints."""
    rows = {}
    for line in stderr.splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["stage"]] = (match["files"], match["entered"], float(match["seconds"]))
    return rows


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture projects and rule fixtures under one project root: enough files for a pool of workers."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("*.fixed.py", "*.md", "*.ipynb"))
    (root / "pyproject.toml").write_text("[project]\nname = 'stats'\n")
    return root


def test_stats_print_every_stage_and_leave_the_findings_alone(project, tmp_path):
    plain = run("--no-cache", "-j", "1", ".", cwd=project, cache=tmp_path / "c")
    counted = run("--no-cache", "-j", "1", "--stats", ".", cwd=project, cache=tmp_path / "c")
    assert counted.stdout == plain.stdout and counted.returncode == plain.returncode
    rows = table(counted.stderr)
    assert list(rows) == list(stages.STAGE_NAMES) + ["all stages"]
    python_files = len(list(project.rglob("*.py")))
    assert rows["walking and reading"][0] == str(python_files)
    # Only files with something to find reach libcst and the rules; every one that does is counted.
    reached_rules = int(rows["rules"][0])
    assert 0 < reached_rules < python_files and rows["libcst parse"][0] == str(reached_rules)
    assert abs(sum(seconds for name, (_, _, seconds) in rows.items() if name != "all stages")
               - rows["all stages"][2]) < 0.01
    assert re.search(r"^wall time [\d.]+ s, 1 job;", counted.stderr, re.M)
    assert "stage " not in plain.stderr


def test_workers_counts_reach_the_table_once(project, tmp_path):
    one = table(run("--no-cache", "-j", "1", "--stats", ".", cwd=project, cache=tmp_path / "c").stderr)
    pool = table(run("--no-cache", "-j", "2", "--stats", ".", cwd=project, cache=tmp_path / "c").stderr)
    # The same files reach each stage whatever the number of processes: a worker's counts come back with
    # its results, and a forked worker does not count its parent's stages a second time.
    for stage in ("walking and reading", "text screen", "libcst parse", "rules", "file model"):
        assert pool[stage][0] == one[stage][0], stage
    assert pool["rules"][1] == one["rules"][1]


def test_a_stage_inside_another_pauses_it(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 6.0, 10.0, 12.0])
    monkeypatch.setattr(stages, "_enabled", True)
    monkeypatch.setattr(stages, "_clock", lambda: next(clock))
    monkeypatch.setattr(stages, "_seconds", {})
    monkeypatch.setattr(stages, "_entries", {})
    monkeypatch.setattr(stages, "_files", {})
    monkeypatch.setattr(stages, "_stack", [])
    with stages.stage("rules", "a.py"):  # 0
        with stages.stage("model"):  # 1
            pass  # 3
        with stages.stage("rules"):  # 6: the same stage inside itself is not a new entry
            pass  # 10
        pass  # 12
    # rules: 0-1, 3-6, 6-10 (inside itself) and 10-12; model: 1-3
    assert stages._seconds == {"rules": 10.0, "model": 2.0}
    assert stages._entries == {"rules": 1, "model": 1}
    # A stage that does not know its file works for the file of the stage around it.
    assert stages._files == {"rules": {"a.py"}, "model": {"a.py"}}


def test_off_means_nothing_is_counted(monkeypatch):
    monkeypatch.setattr(stages, "_enabled", False)
    monkeypatch.setattr(stages, "_seconds", {})
    with stages.stage("rules", "a.py"):
        pass
    assert stages._seconds == {} and stages.take() is None
