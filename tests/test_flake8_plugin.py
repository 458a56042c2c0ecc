"""The flake8 plugin: the contract flake8 expects, and the same findings as the CLI on every fixture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from dp_rnn_lint import __version__, engine
from dp_rnn_lint.flake8_plugin import DataParallelRnnChecker

from .conftest import FIXTURES, ROOT


def _lines(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_flake8_and_cli_report_the_same_findings_on_every_fixture():
    flake8 = _lines([sys.executable, "-m", "flake8", "--isolated", "--select=DPR", "fixtures"], ROOT)
    cli = _lines([sys.executable, "-m", "dp_rnn_lint", "--format", "concise", "fixtures"], ROOT)
    flake8_findings = sorted(line for line in flake8.stdout.splitlines() if line)
    cli_findings = sorted(line for line in cli.stdout.splitlines() if ": DPR" in line)
    assert len(cli_findings) > 30
    assert flake8_findings == cli_findings


def test_plugin_declares_name_and_version_and_is_registered():
    assert DataParallelRnnChecker.name == "dp-rnn-lint"
    assert DataParallelRnnChecker.version == __version__
    result = _lines([sys.executable, "-m", "flake8", "--version"], ROOT)
    assert "dp-rnn-lint" in result.stdout


def test_plugin_yields_0_based_columns_and_code_first_messages():
    path = FIXTURES / "DPR001" / "lstm_classifier.py"
    lines = path.read_text().splitlines(keepends=True)
    results = list(DataParallelRnnChecker(None, str(path), lines).run())
    [cli_finding] = engine.check_source(path.read_bytes(), str(path))
    [(line, col, text, kind)] = results
    assert (line, col + 1) == (cli_finding.line, cli_finding.col)
    assert text == f"DPR001 {cli_finding.message}"
    assert kind is DataParallelRnnChecker


def test_plugin_does_not_parse_files_that_cannot_hold_an_rnn(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("parsed a file without any RNN word")

    monkeypatch.setattr(engine, "parse_with_libcst", refuse)
    lines = ["import torch\n", "class Head(torch.nn.Module):\n", "    def forward(self, x):\n", "        return x\n"]
    assert list(DataParallelRnnChecker(None, "head.py", lines).run()) == []


def test_plugin_leaves_syntax_errors_to_flake8():
    lines = ["import torch.nn as nn\n", "lstm = nn.LSTM(\n"]
    assert list(DataParallelRnnChecker(None, "broken.py", lines).run()) == []


@pytest.mark.parametrize("comment, reported", [("# noqa: DPR001", False), ("# noqa: E501", True)])
def test_flake8_applies_noqa_itself(tmp_path, comment, reported):
    (tmp_path / "model.py").write_text(
        "import torch.nn as nn\n\n\nclass Encoder(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.gru = nn.GRU(4, 4)\n\n"
        f"    def forward(self, x):\n        return self.gru(x)[0]  {comment}\n"
    )
    result = _lines([sys.executable, "-m", "flake8", "--isolated", "--select=DPR", "model.py"], tmp_path)
    assert ("DPR001" in result.stdout) == reported


def test_the_projects_own_code_passes_flake8_with_its_setup_cfg():
    result = _lines([sys.executable, "-m", "flake8", "dp_rnn_lint", "tests"], ROOT)
    assert result.returncode == 0, result.stdout


def test_flake8_workers_save_what_they_summarised_for_the_next_run(tmp_path):
    # flake8 checks files in worker processes, which leave without running atexit handlers: the index's
    # summaries must still reach its cache, or every run summarises the project's files again.
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "seq2seq_project", project)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "flake8", "--isolated", "--select=DPR", "-j", "2", "."]
    environment = {**os.environ, "DP_RNN_LINT_CACHE_DIR": str(cache)}
    first = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120, env=environment)
    assert first.returncode == 1 and ": DPR" in first.stdout, first.stderr
    [index_file] = cache.rglob("index-*.json")
    entries = json.loads(index_file.read_text())["files"]
    # [2]: summarised when the index was built (saved then, by any process); [3]: the summary
    asked_for = [path for path, entry in entries.items() if not entry[2] and entry[3] is not None]
    assert asked_for, "no summary made for a file's context was saved"
    second = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120, env=environment)
    assert second.stdout == first.stdout
