"""`--scope wrapped` through the CLI, configuration and flake8, on the multi-file sample project."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import FIXTURES

SAMPLE = FIXTURES / "projects" / "seq2seq_project"


@pytest.fixture
def project(tmp_path):
    """A copy of the sample project, so that configuration files can be added to it."""
    target = tmp_path / "seq2seq_project"
    shutil.copytree(SAMPLE, target)
    return target


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def flake8(cwd, *args):
    return subprocess.run([sys.executable, "-m", "flake8", "--select=DPR", *args, "."], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def reported(output: str) -> set:
    """(path, code) of each finding line of the concise format or flake8."""
    found = set()
    for line in output.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[3].strip()[:3] == "DPR":
            found.add((parts[0].lstrip("./"), parts[3].split()[0]))
    return found


# Markers in the sample project: `expect:` in both scopes, `expect-scope-any:` or `expect-scope-wrapped:` in one.
_MARKER = re.compile(r"#\s*expect(?:-scope-(?P<scope>any|wrapped))?:\s*(?P<codes>DPR\d{3}(?:\s+unfixable)?"
                     r"(?:\s*,\s*DPR\d{3}(?:\s+unfixable)?)*)")


def expected(scope: str, skip: str = "") -> set:
    """(path, line, code) the markers announce for a scope."""
    found = set()
    for path in sorted(SAMPLE.rglob("*.py")):
        relative = path.relative_to(SAMPLE).as_posix()
        if skip and relative.startswith(skip):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _MARKER.search(line)
            if match and match.group("scope") in (None, scope):
                found |= {(relative, number, item.split()[0]) for item in match.group("codes").split(",")}
    return found


def located(output: str) -> set:
    found = set()
    for line in output.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[3].strip()[:3] == "DPR":
            found.add((parts[0].removeprefix("./"), int(parts[1]), parts[3].split()[0]))
    return found


@pytest.mark.parametrize("scope, cli_options, flake8_options, markers", [
    ("any", [], [], ("any",)),
    ("wrapped", ["--extend-exclude", "scripts"], ["--extend-exclude=scripts"], ("wrapped",)),
    # The unresolved wrap in scripts/ keeps every class a candidate: what either scope alone would find.
    ("wrapped", [], [], ("any", "wrapped")),
], ids=["any", "wrapped", "wrapped-with-unresolved-wrap"])
def test_cli_and_flake8_report_what_the_sample_projects_markers_say(project, scope, cli_options, flake8_options, markers):
    want = set().union(*(expected(marker) for marker in markers))
    cli = run(project, "--format", "concise", "--preview", "--scope", scope, *cli_options)
    assert located(cli.stdout) == want, cli.stdout
    plugin = flake8(project, f"--dp-rnn-scope={scope}", "--dp-rnn-preview", *flake8_options)
    assert located(plugin.stdout) == want, plugin.stdout


def test_wrapped_scope_checks_only_wrapped_classes_and_names_the_wrap(project):
    everything = reported(run(project, "--format", "concise", "--select", "DPR001").stdout)
    assert ("seq2seq/legacy.py", "DPR001") in everything
    result = run(project, "--format", "concise", "--select", "DPR001", "--scope", "wrapped", "--extend-exclude", "scripts")
    assert reported(result.stdout) == everything - {("seq2seq/legacy.py", "DPR001")}
    assert "(wrapped at train.py:9)" in result.stdout
    assert "could not be resolved" not in result.stdout


def test_an_unresolved_wrap_keeps_every_class_and_is_listed_in_the_summary(project):
    result = run(project, "--select", "DPR001", "--scope", "wrapped")
    assert "seq2seq/legacy.py" in result.stdout
    assert "checked because the DataParallel wrap at scripts/evaluate.py:9 could not be resolved" in result.stdout
    assert ("Scope wrapped: every module class was checked, because 1 DataParallel wrap could not be resolved:\n"
            "  scripts/evaluate.py:9:13: nn.DataParallel(torch.load(checkpoint, weights_only=False))") in result.stdout
    # Machine-readable output keeps stdout clean: the list goes to stderr.
    as_json = run(project, "--select", "DPR001", "--scope", "wrapped", "--format", "json")
    assert "scripts/evaluate.py:9:13" in as_json.stderr and "Scope wrapped" not in as_json.stdout


def test_scope_any_lists_no_unresolved_wraps(project):
    result = run(project, "--select", "DPR001")
    assert "Scope wrapped" not in result.stdout + result.stderr
    assert "wrapped at" not in result.stdout


def test_scope_from_pyproject_and_the_command_line_overriding_it(project):
    (project / "pyproject.toml").write_text('[tool.dp-rnn-lint]\nscope = "wrapped"\nextend-exclude = ["scripts"]\n')
    configured = run(project, "--format", "concise", "--select", "DPR001")
    assert "legacy.py" not in configured.stdout and "(wrapped at train.py:9)" in configured.stdout
    overridden = run(project, "--format", "concise", "--select", "DPR001", "--scope", "any")
    assert "legacy.py" in overridden.stdout


@pytest.mark.parametrize("value, shown", [('"everything"', "'everything'"), ("true", "True")])
def test_a_bad_scope_is_one_error_line(project, value, shown):
    (project / "pyproject.toml").write_text(f"[tool.dp-rnn-lint]\nscope = {value}\n")
    result = run(project, "--select", "DPR001")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: pyproject.toml: [tool.dp-rnn-lint] scope: expected one of 'any', 'wrapped', got {shown}"
    ]


def test_bad_scope_option_is_a_usage_error(project):
    result = run(project, "--scope", "all")
    assert result.returncode == 2 and "invalid choice: 'all'" in result.stderr


def test_flake8_option_and_setup_cfg_scope(project):
    everything = reported(flake8(project, "--extend-exclude=scripts").stdout)
    assert ("seq2seq/legacy.py", "DPR001") in everything
    option = flake8(project, "--extend-exclude=scripts", "--dp-rnn-scope=wrapped")
    assert ("seq2seq/legacy.py", "DPR001") not in reported(option.stdout)
    assert ("seq2seq/reranker.py", "DPR003") in reported(option.stdout)  # list lengths: wrapped scope only
    assert "(wrapped at train.py:9)" in option.stdout
    with open(project / "setup.cfg", "a") as config:
        config.write("\n[flake8]\ndp-rnn-scope = wrapped\nextend-exclude = scripts\n")
    configured = flake8(project)
    assert reported(configured.stdout) == reported(option.stdout)
    # The unresolved wrap in scripts/ counts again once flake8 no longer excludes it.
    included = flake8(project, "--extend-exclude=no-such-folder")
    assert ("seq2seq/legacy.py", "DPR001") in reported(included.stdout)


def test_flake8_builds_no_project_index_for_files_that_cannot_hold_a_finding(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "setup.cfg").write_text("[metadata]\nname = plain\n")
    (project / "train.py").write_text("import torch.nn as nn\nfrom model import Net\nnet = nn.DataParallel(Net())\n")
    (project / "model.py").write_text("import torch.nn as nn\n\nclass Net(nn.Linear):\n    pass\n")
    cache = tmp_path / "cache"
    env = {**os.environ, "DP_RNN_LINT_CACHE_DIR": str(cache)}
    result = subprocess.run([sys.executable, "-m", "flake8", "--select=DPR", "."], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not list(cache.rglob("index-*.json"))
    # A file that could hold a finding does make it build (and cache) the index.
    (project / "model.py").write_text("import torch.nn as nn\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                                      "        super().__init__()\n        self.gru = nn.GRU(4, 4)\n\n"
                                      "    def forward(self, x):\n        return self.gru(x)[0]\n")
    result = subprocess.run([sys.executable, "-m", "flake8", "--select=DPR", "."], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert "DPR001" in result.stdout
    assert list(cache.rglob("index-*.json"))
