"""The cheap screens only save time: on every fixture project, a normal run reports exactly what a run
reports where every screen lets every file through to the full analysis."""

from __future__ import annotations

import pytest

from dp_rnn_lint import cli, engine
from dp_rnn_lint.analysis import project, screen

from .conftest import FIXTURES

PROJECTS = sorted(path for path in (FIXTURES / "projects").iterdir() if path.is_dir())


def _findings(capsys, root) -> list:
    cli.main(["--isolated", "--no-cache", "-j", "1", "--format", "concise", "--exit-zero", str(root)])
    return sorted(line for line in capsys.readouterr().out.splitlines() if ": DPR" in line)


def _let_everything_through(monkeypatch) -> None:
    always = lambda *args, **kwargs: True  # noqa: E731
    monkeypatch.setattr(engine, "worth_a_look", always)
    monkeypatch.setattr(engine, "_candidate_words_found", lambda *args: engine._STRONG_WORDS)
    for module in (engine, screen):
        monkeypatch.setattr(module, "may_have_findings_text", always, raising=False)
        monkeypatch.setattr(module, "may_have_findings", always, raising=False)
        monkeypatch.setattr(module, "may_inherit_text", always, raising=False)
        monkeypatch.setattr(module, "inherits_from_elsewhere", always, raising=False)
    for name in ("mentions_wrap", "needs_summary_at_build", "_mentions_rnn", "_may_hand_rnn"):
        monkeypatch.setattr(project, name, always)
    monkeypatch.setattr(engine, "mentions_wrap", always)


@pytest.mark.parametrize("root", PROJECTS, ids=lambda path: path.name)
def test_a_screened_run_reports_what_analysing_every_file_reports(root, capsys, monkeypatch):
    screened = _findings(capsys, root)
    assert screened, "every sample project has findings"
    _let_everything_through(monkeypatch)
    forced = _findings(capsys, root)
    assert forced == screened
