"""A new rule needs only its module and its registry entry: a toy rule from a package of its own, registered
before a run, is screened in by what it declares, run, reported, fixed and documented, with no other file
of dp-rnn-lint naming it. (Each run is a fresh interpreter, so the registration stays in it.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOY_RULE = '''\
"""DPR900: pad-sequence-without-batch-first

## What it does
Flags `pad_sequence(...)` in a forward pass that does not say `batch_first=`.

## Why is this bad?
A toy reason, for the test of a new rule's journey.

## Example
```python
out = pad_sequence(chunks)
```

## Use instead
```python
out = pad_sequence(chunks, batch_first=False)
```

## Fix safety
Safe: `batch_first=False` is the default spelled out.
"""

from __future__ import annotations

import libcst as cst

from dp_rnn_lint.findings import AppendKeywordArgument, Fix, Violation
from dp_rnn_lint.rules.base import Example, Rule


class _Calls(cst.CSTVisitor):
    def __init__(self):
        self.functions = []
        self.found = []

    def visit_FunctionDef(self, node):
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, node):
        self.functions.pop()

    def visit_Call(self, node):
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
        keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if "forward" in self.functions and name == "pad_sequence" and "batch_first" not in keywords:
            self.found.append(node)


class PadSequenceWithoutBatchFirst(Rule):
    code = "DPR900"
    name = "pad-sequence-without-batch-first"
    summary = "pad_sequence() in forward without batch_first="
    valid_examples = ("def forward(self, x):\\n    return pad_sequence(x, batch_first=True)\\n",)
    invalid_examples = (Example("def forward(self, x):\\n    return pad_sequence(x)\\n",
                                "def forward(self, x):\\n    return pad_sequence(x, batch_first=False)\\n"),)

    def check(self, analysis):
        calls = _Calls()
        analysis.module.visit(calls)
        for call in calls.found:
            fix = Fix((AppendKeywordArgument(call, "batch_first", "False"),))
            yield Violation(self.code, "pad_sequence() without batch_first= (a toy rule)", call, fix)
'''

# Registers the toy rule, then runs the command line with the arguments given.
DRIVER = '''\
import sys
from dp_rnn_lint import rules
from dp_rnn_lint.analysis.screen import CallSeed
rules.register(rules.RuleEntry("toyrules.dpr900_pad_sequence_batch_first",
                               rules.RuleNeeds((CallSeed("pad_sequence"),), fix="safe")))
from dp_rnn_lint.cli import main
sys.exit(main(sys.argv[1:]))
'''

# No RNN class, no pad_packed_sequence or pack_padded_sequence: no built-in rule's screen lets it through.
MODEL = textwrap.dedent("""\
    import torch
    from torch.nn.utils.rnn import pad_sequence


    class Chunker(torch.nn.Module):
        def forward(self, chunks):
            return pad_sequence(chunks)
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "toyrules").mkdir()
    (tmp_path / "toyrules" / "__init__.py").write_text("")
    (tmp_path / "toyrules" / "dpr900_pad_sequence_batch_first.py").write_text(TOY_RULE)
    (tmp_path / "driver.py").write_text(DRIVER)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def run(project: Path, *args: str, registered: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "driver.py"] if registered else [sys.executable, "-m", "dp_rnn_lint"]
    return subprocess.run([*command, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_a_registered_rule_is_screened_in_run_and_reported(project):
    assert run(project, "--no-cache", "--format", "concise", "model.py", registered=False).returncode == 0
    found = run(project, "--no-cache", "--format", "concise", "model.py")
    assert found.returncode == 1, found.stderr
    assert "model.py:7:16: DPR900 pad_sequence() without batch_first= (a toy rule)" in found.stdout
    assert run(project, "--no-cache", "--ignore", "DPR900", "model.py").returncode == 0
    selected = run(project, "--no-cache", "--select", "DPR900", "--format", "json", "model.py")
    assert '"code": "DPR900"' in selected.stdout and '"applicability": "safe"' in selected.stdout


def test_a_registered_rule_is_fixed_and_documented(project):
    fixed = run(project, "--no-cache", "--fix", "model.py")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "return pad_sequence(chunks, batch_first=False)\n" in (project / "model.py").read_text()
    page = run(project, "rule", "DPR900")
    assert page.returncode == 0 and page.stdout.startswith("# DPR900: pad-sequence-without-batch-first\n")
    assert "## Fix safety" in page.stdout
    listed = run(project, "rule", "--all")
    assert "DPR900  pad-sequence-without-batch-first" in listed.stdout


def test_the_toy_rules_examples_hold(project):
    """Its VALID and INVALID examples drive the same checks the built-in rules' examples do."""
    program = DRIVER.split("from dp_rnn_lint.cli")[0] + textwrap.dedent("""\
        from dp_rnn_lint.engine import Selection, check_source, lint_source
        rule = rules.RULES_BY_CODE["DPR900"]
        only = Selection(select=("DPR900",))
        for source in rule.valid_examples:
            assert check_source(source, "valid.py", only) == [], source
        for example in rule.invalid_examples:
            assert [f.code for f in check_source(example.source, "invalid.py", only)] == ["DPR900"]
            assert lint_source(example.source.encode(), "invalid.py", only, fix=True).fixed == example.fixed.encode()
        from dp_rnn_lint import docs
        assert "DPR900.md" in docs.rule_pages()
    """)
    (project / "examples.py").write_text(program)
    env = {**os.environ, "PYTHONPATH": str(project)}
    done = subprocess.run([sys.executable, "examples.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_no_module_outside_the_rules_names_a_rule_code():
    package = Path(__file__).resolve().parent.parent / "dp_rnn_lint"
    named = []
    for path in [package / "engine.py", package / "cli.py", *sorted((package / "analysis").glob("*.py"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "DPR00" in line:
                named.append(f"{path.name}:{number}: {line.strip()}")
    assert named == []
