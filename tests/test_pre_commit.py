"""The pre-commit hooks, run as a user tries them: `pre-commit try-repo` against this checkout, in a scratch repository.

pre-commit installs the hooks into a virtualenv of their own (pip installs this checkout, libcst and flake8), so
these tests need the package index and take a few seconds per pre-commit call. `try-repo` clones the hooks and
installs them into a temporary store of its own on every call and deletes it afterwards: nothing is reused from
one call to the next, whatever PRE_COMMIT_HOME says. So the module makes three calls in all, shared by its tests:
the checking hook, the fixing hook, then every hook again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Dict

import pytest

from .conftest import ROOT

BUGGY = """\
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out
"""

FIXED = BUGGY.replace("        out, _ = self.lstm(x)\n", "        self.lstm.flatten_parameters()\n        out, _ = self.lstm(x)\n")

# Generous: the first call of a hook builds a virtualenv and pip installs into it from the package index.
TIMEOUT = 600

# pre-commit's summary line for each hook: its name, dots, then the result.
_STATUS = re.compile(r"^([\w-]+?)\.+(Passed|Failed)$", re.MULTILINE)


def _require_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH, and pre-commit needs it")


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> Dict[str, str]:
    """Our environment without what an outer git hook or pre-commit run would leak in (GIT_*, PRE_COMMIT*, SKIP)
    or colour requests. PATH, HOME and pip's settings stay, so that pip reaches the index as it does here.

    PRE_COMMIT_HOME is one temporary folder for the whole module: try-repo keeps no environments there, but
    pre-commit writes its error log there, and the user's own cache stays untouched.
    """
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_", "PRE_COMMIT")) and key not in ("SKIP", "FORCE_COLOR", "NO_COLOR")}
    env["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    return env


def _git(*args: str, cwd: Path, env: Dict[str, str]) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, f"git {' '.join(args)} failed in {cwd}:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory, environment) -> Path:
    """A clone of this checkout with its whole working tree staged, new files included.

    try-repo takes a checkout's commits, staged files and changes to tracked files, but not files that git does
    not track yet: a new `.pre-commit-hooks.yaml` or module would be missing. Given this clone, it tries exactly
    what is on disk here (it still makes its own shadow commit of the staged changes).
    """
    _require_git()
    clone = tmp_path_factory.mktemp("hooks") / "dp-rnn-lint"
    _git("clone", "--quiet", str(ROOT), str(clone), cwd=clone.parent, env=environment)
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT, env=environment)
    for name in sorted(set(filter(None, listed.split("\0")))):
        source, target = ROOT / name, clone / name
        if target.is_symlink() or target.is_file():
            target.unlink()
        if source.is_symlink() or source.is_file():  # anything else is a deleted file, or a submodule's folder
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    _git("add", "--all", cwd=clone, env=environment)
    return clone


@pytest.fixture(scope="module")
def project(tmp_path_factory, environment) -> Path:
    """A user's repository holding one model that misses flatten_parameters()."""
    _require_git()
    path = tmp_path_factory.mktemp("project")
    _git("init", "--quiet", cwd=path, env=environment)
    for key, value in [("user.name", "dp-rnn-lint tests"), ("user.email", "tests@example.invalid"),
                       ("commit.gpgsign", "false")]:
        _git("config", key, value, cwd=path, env=environment)
    (path / "model.py").write_text(BUGGY)
    _git("add", "model.py", cwd=path, env=environment)
    return path


def _try_repo(hooks_repo: Path, project: Path, environment: Dict[str, str], *hook: str) -> subprocess.CompletedProcess:
    """`pre-commit try-repo HOOKS_REPO [HOOK] --all-files` in the project; stdout holds stderr too."""
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks_repo), *hook, "--all-files", "--color", "never"]
    try:
        result = subprocess.run(command, cwd=project, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pre-commit try-repo {' '.join(hook)} ran over {TIMEOUT} s: can pip reach the package index?",
                    pytrace=False)
    if re.search(r"^An (unexpected )?error has occurred", result.stdout, re.MULTILINE):
        # pre-commit's own message says what failed (pip's output included) and where its full log is.
        pytest.fail(f"pre-commit could not run the hooks (could pip reach the package index?):\n{result.stdout}",
                    pytrace=False)
    return result


@pytest.fixture(scope="module")
def runs(hooks_repo, project, environment) -> SimpleNamespace:
    """The three calls, in order: the checking hook, the fixing hook, then every hook of the manifest again."""
    check = _try_repo(hooks_repo, project, environment, "dp-rnn-lint")
    fix = _try_repo(hooks_repo, project, environment, "dp-rnn-lint-fix")
    fixed_source = (project / "model.py").read_text()
    again = _try_repo(hooks_repo, project, environment)  # both hooks, in id order: the checker, then the fixer
    return SimpleNamespace(check=check, fix=fix, fixed_source=fixed_source, again=again)


def _statuses(output: str) -> Dict[str, str]:
    return dict(_STATUS.findall(output))


def test_hooks_file_is_a_valid_manifest(environment):
    result = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", ".pre-commit-hooks.yaml"],
                            cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_hook_fails_and_names_the_finding(runs):
    output = runs.check.stdout
    assert runs.check.returncode == 1, output
    assert _statuses(output) == {"dp-rnn-lint": "Failed"}, output
    assert "- hook id: dp-rnn-lint\n- exit code: 1\n" in output
    assert "model.py:10:18: DPR001 self.lstm (nn.LSTM) runs in the forward pass" in output
    assert "files were modified" not in output


def test_fix_hook_rewrites_the_file_and_fails(runs):
    output = runs.fix.stdout
    assert runs.fix.returncode == 1, output
    assert _statuses(output) == {"dp-rnn-lint-fix": "Failed"}, output
    assert "- hook id: dp-rnn-lint-fix\n- files were modified by this hook\n" in output
    assert runs.fixed_source == FIXED


def test_second_run_of_both_hooks_passes(runs, project):
    output = runs.again.stdout
    assert runs.again.returncode == 0, output
    assert _statuses(output) == {"dp-rnn-lint": "Passed", "dp-rnn-lint-fix": "Passed"}, output
    assert (project / "model.py").read_text() == FIXED


STREAMING = """\
import torch.nn as nn


class StreamingTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 8, num_layers=2, batch_first=True)

    def forward(self, x):
        self.gru.flatten_parameters()
        states, h_n = self.gru(x)
        return states, h_n
"""
TRAIN = "import torch.nn as nn\n\nfrom model import StreamingTagger\n\nnet = nn.DataParallel(StreamingTagger())\n"


def test_a_wrap_in_another_file_is_reported_once_with_one_summary(hooks_repo, environment, tmp_path):
    # pre-commit would split many files over parallel batches; the hooks ask it for one process, so the
    # index sees the wrap in train.py and the run prints one summary.
    _require_git()
    _git("init", "--quiet", cwd=tmp_path, env=environment)
    (tmp_path / "model.py").write_text(STREAMING)
    (tmp_path / "train.py").write_text(TRAIN)
    for number in range(12):
        (tmp_path / f"util_{number}.py").write_text(f"VALUE_{number} = {number}\n")
    # The hooks take notebooks too (`types_or: [python, jupyter]`): its one cell holds a DPR001.
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": STREAMING.replace("        self.gru.flatten_parameters()\n", "").splitlines(True)}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "prototype.ipynb").write_text(json.dumps(notebook, indent=1))
    _git("add", ".", cwd=tmp_path, env=environment)
    result = _try_repo(hooks_repo, tmp_path, environment, "dp-rnn-lint")
    assert result.returncode == 1, result.stdout
    assert result.stdout.count(": DPR004 ") == 1, result.stdout
    assert "prototype.ipynb:cell 1:10:23: DPR001 " in result.stdout, result.stdout
    summaries = re.findall(r"^(?:Found \d+ error|All checks passed!|No findings\.)", result.stdout, re.MULTILINE)
    assert len(summaries) == 1, result.stdout
