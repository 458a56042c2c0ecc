"""Rule pages: one per rule, written from the rule's docstring, with examples that really behave."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dp_rnn_lint.docs import DOCS_FOLDER, rule_page
from dp_rnn_lint.engine import Selection, check_source
from dp_rnn_lint.rules import ALL_RULES

from .conftest import ROOT


def python_block(page: str, heading: str) -> str:
    section = page.split(f"## {heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_every_rule_has_a_page_in_step_with_its_docstring(rule):
    page = DOCS_FOLDER / f"{rule.code}.md"
    assert page.read_text(encoding="utf-8") == rule_page(rule), "run `python -m dp_rnn_lint.docs`"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_page_examples_are_flagged_and_fixed_as_shown(rule):
    page = rule_page(rule)
    bad, good = python_block(page, "Example"), python_block(page, "Use instead")
    assert [f.code for f in check_source(bad, "example.py", Selection(preview=True))] == [rule.code]
    assert check_source(good, "example.py", Selection(preview=True)) == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_page_says_what_users_see_and_how_to_suppress(rule):
    page = rule_page(rule)
    for heading in ("## What it does", "## Why is this bad?", "## Fix safety", "## How to suppress"):
        assert heading in page
    # The error or warning users meet, so that searching for it finds the page.
    symptoms = ("not part of single contiguous chunk", "Gather got an input of invalid size",
                "'lengths' argument should be a 1D CPU int64 tensor", "Expected hidden size", "exceeds dimension size",
                # A trap that raises nothing says so: searching for the symptom (a lost state) finds the page.
                "with no error or warning")
    assert any(symptom in page for symptom in symptoms)
    assert f"# noqa: {rule.code}" in page


def run(*args):
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_rule_command_prints_a_page_and_lists_all():
    assert run("rule", "DPR001").stdout == rule_page(ALL_RULES[0])
    listed = run("rule", "--all").stdout.splitlines()
    assert [line.split()[0] for line in listed] == [rule.code for rule in ALL_RULES] + ["DPR100"]
    assert run("rule", "unused-noqa").stdout == run("rule", "dpr100").stdout
    assert run("rule", "DPR100").stdout.startswith("# DPR100: `noqa` comment")
    unknown = run("rule", "E501")
    assert unknown.returncode == 2 and "unknown rule 'E501'" in unknown.stderr
    assert run("rule", ALL_RULES[1].name).stdout == rule_page(ALL_RULES[1])


def test_verify_refuses_fewer_than_two_replicas():
    result = run("verify", "--replicas", "1", "fixtures/DPR002/faq_lstm_batch_first.py")
    assert result.returncode == 2 and "--replicas must be at least 2" in result.stderr


def test_readme_links_every_rule_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"(docs/rules/{rule.code}.md)" in readme


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_the_declared_fix_safety_is_what_the_examples_get(rule):
    """The registry says each rule's fix safety (rules/__init__.py); the fixes its examples get agree."""
    from dp_rnn_lint.rules import FIX_SAFETIES, NEEDS_BY_CODE

    declared = NEEDS_BY_CODE[rule.code].fix
    assert declared in FIX_SAFETIES
    fixes = [finding.fix for example in rule.invalid_examples
             for finding in check_source(example.source, "example.py", Selection(preview=True)) if finding.code == rule.code]
    offered = {fix.applicability for fix in fixes if fix is not None}
    if declared == "safe or unsafe":  # decided per finding: the examples need not show both
        assert offered and offered <= {"safe", "unsafe"}
    else:
        assert offered == {"none": set(), "safe": {"safe"}, "unsafe": {"unsafe"}}[declared]
