"""The command builds the project index only when a file needs the analysis: a tree where the cheap
stages settle every file never pays for it, and the findings are those of an index built up front."""

from __future__ import annotations

import io
import shutil
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from dp_rnn_lint import cli, runner
from dp_rnn_lint.analysis import project
from dp_rnn_lint.analysis.project import ProjectIndex, build_index
from dp_rnn_lint.cache import ResultCache
from dp_rnn_lint.engine import Selection
from dp_rnn_lint.runner import Options, Task, lint_files

from .conftest import FIXTURES

# Mentions RNNs and wraps a model in DataParallel, but holds no class that could have a finding.
DATA_LOADING = """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    def collate(batch):
        # Padded for an LSTM; the lengths go with it.
        return pad_sequence([item[0] for item in batch], batch_first=True)

    def parallel(model):
        return torch.nn.DataParallel(model)
"""


def lint(tree: Path, *args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        cli.main(["--isolated", "--no-cache", "--format", "concise", *args, str(tree)])
    return out.getvalue()


def summary(results):
    return [(r.path, r.problem, r.note, [(f.line, f.col, f.code, f.message, f.fixable) for f in r.findings])
            for r in results]


@pytest.fixture
def counted_index(monkeypatch):
    calls = []
    real = project.build_index  # the command line imports it where it first needs it

    def counting(*args, **kwargs):
        calls.append(kwargs.get("pool"))
        return real(*args, **kwargs)

    monkeypatch.setattr(project, "build_index", counting)
    return calls


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_tree_where_no_file_needs_the_analysis_never_builds_the_index(tmp_path, counted_index, jobs):
    for number in range(6):
        (tmp_path / f"loader_{number}.py").write_text(textwrap.dedent(DATA_LOADING))
    assert lint(tmp_path, "-j", jobs).strip() == "All checks passed! Checked 6 files."
    assert counted_index == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_first_file_that_needs_the_analysis_builds_the_index_once(tmp_path, counted_index, jobs):
    shutil.copytree(FIXTURES / "projects" / "seq2seq_project", tmp_path / "project")
    output = lint(tmp_path / "project", "-j", jobs)
    assert len(counted_index) == 1
    # DPR004 is about wrap targets only: its finding shows the index was asked.
    assert "tagger.py:16:40: DPR004" in output


@pytest.mark.parametrize("jobs", [1, 2])
def test_findings_with_the_index_asked_lazily_are_those_with_it_built_up_front(jobs):
    paths = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    index = build_index(paths)
    eager = [Task(path, Selection(), context=index.context_for(path, "any")) for path in paths]
    lazy = [Task(path, Selection(), context=None) for path in paths]
    expected = summary(lint_files(eager, Options(), jobs=jobs))
    assert any(findings for *_, findings in expected)
    assert summary(lint_files(lazy, Options(), jobs=jobs, index=lambda pool: build_index(paths, pool=pool))) == expected


def test_once_the_index_is_built_only_files_whose_context_costs_a_parse_get_a_first_look(tmp_path, monkeypatch):
    # A file that can build an RNN needs its summary for its context (a parse in this process), so it is
    # looked at first, as most such files are settled there; the others go straight to the analysis.
    model = (FIXTURES / "DPR001" / "lstm_classifier.py").read_text()
    notes = "# rnn notes: nothing here runs one\n\n\ndef forward(x):\n    return x\n"
    paths, costly = [], []
    for number in range(20):
        path = tmp_path / f"model_{number}.py"
        path.write_text(model)
        paths.append(str(path))
        costly.append(str(path))
        other = tmp_path / f"notes_{number}.py"
        other.write_text(notes)
        paths.append(str(other))
    looks = []
    real = runner.first_look_verdict

    def counting(source, path, selection, check_syntax=False):
        looks.append(path)
        return real(source, path, selection, check_syntax)

    monkeypatch.setattr(runner, "first_look_verdict", counting)
    tasks = [Task(path, Selection(), context=None) for path in paths]
    results = lint_files(tasks, Options(), jobs=1, index=lambda pool: build_index(paths))
    assert all(result.findings for result in results if result.path in costly)
    assert set(costly) <= set(looks)
    assert len(set(looks) - set(costly)) <= runner._FIRST_LOOK_CHUNK  # the notes looked at before the index


def test_a_second_lazy_run_is_answered_from_the_cache_without_linting(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree, ignore=shutil.ignore_patterns("*.fixed.py", "*.md"))
    paths = sorted(str(p) for p in tree.rglob("*.py"))
    cache = ResultCache(tmp_path / "cache")
    tasks = [Task(path, Selection(), context=None) for path in paths]
    built = []

    def index(pool):
        built.append(pool)
        return build_index(paths)

    first = summary(lint_files(tasks, Options(), jobs=1, cache=cache, index=index))

    def must_not_run(*args, **kwargs):
        raise AssertionError("the cache should have answered for this file")

    monkeypatch.setattr(runner, "lint_path", must_not_run)
    monkeypatch.setattr(runner, "first_look_verdict", must_not_run)
    assert summary(lint_files(tasks, Options(), jobs=1, cache=cache, index=index)) == first
    assert any(findings for *_, findings in first)
    # Files needing the analysis are cached under their context, which the index gives: built each run.
    assert len(built) == 2


def test_a_second_run_over_files_the_cheap_stages_settle_builds_no_index(tmp_path):
    paths = []
    for number in range(5):
        path = tmp_path / f"loader_{number}.py"
        path.write_text(textwrap.dedent(DATA_LOADING))
        paths.append(str(path))
    cache = ResultCache(tmp_path / "cache")
    tasks = [Task(path, Selection(), context=None) for path in paths]

    def no_index(pool):
        raise AssertionError("no file needs the index")

    for _ in range(2):
        assert all(not result.findings for result in lint_files(tasks, Options(), jobs=1, cache=cache, index=no_index))


# A model file whose class derives from a base of another file (its text names no RNN), beside one
# whose imports reach a base that builds an LSTM.
PLAIN_BASE = """
    import torch.nn as nn

    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
"""
RNN_BASE = """
    import torch.nn as nn

    class RecurrentBase(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4, batch_first=True)
"""
ON_PLAIN_BASE = """
    from base import Base

    class Head(Base):
        def forward(self, x):
            return self.proj(x)
"""
ON_RNN_BASE = """
    from rnn_base import RecurrentBase

    class Tagger(RecurrentBase):
        def forward(self, x):
            out, _ = self.rnn(x)
            return out
"""


@pytest.mark.parametrize("cached", [False, True])
def test_a_file_whose_imports_reach_no_rnn_gets_no_context_and_no_analysis(tmp_path, monkeypatch, cached):
    for name, text in {"base.py": PLAIN_BASE, "rnn_base.py": RNN_BASE, "head.py": ON_PLAIN_BASE,
                       "tagger.py": ON_RNN_BASE}.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    paths = sorted(str(p) for p in tmp_path.glob("*.py"))
    cache = ResultCache(tmp_path / "cache") if cached else None
    tasks = [Task(path, Selection(), context=None) for path in paths]
    if cached:
        lint_files(tasks, Options(), jobs=1, cache=cache, index=lambda pool: build_index(paths))
    contexts, linted = [], []
    real_context, real_lint = ProjectIndex.context_for, runner.lint_path

    def context_for(self, path, scope):
        contexts.append(Path(path).name)
        return real_context(self, path, scope)

    def lint_path(path, *args, **kwargs):
        linted.append(Path(path).name)
        return real_lint(path, *args, **kwargs)

    monkeypatch.setattr(ProjectIndex, "context_for", context_for)
    monkeypatch.setattr(runner, "lint_path", lint_path)
    linted_results = lint_files(tasks, Options(), jobs=1, cache=cache, index=lambda pool: build_index(paths))
    results = {Path(r.path).name: r for r in linted_results}
    assert [f.code for f in results["tagger.py"].findings] == ["DPR001"]
    assert not results["head.py"].findings and results["head.py"].problem is None
    assert "head.py" not in contexts and "head.py" not in linted
    assert ("tagger.py" in linted) == (not cached)
