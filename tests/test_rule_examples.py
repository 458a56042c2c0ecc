"""Each rule's own examples (the ones its documentation shows) are flagged, fixed and left alone as stated."""

from __future__ import annotations

import pytest

from dp_rnn_lint.engine import Selection, check_source, lint_source
from dp_rnn_lint.rules import ALL_RULES

INVALID = [(rule, example) for rule in ALL_RULES for example in rule.invalid_examples]
VALID = [(rule, source) for rule in ALL_RULES for source in rule.valid_examples]


@pytest.mark.parametrize("rule, example", INVALID, ids=lambda v: getattr(v, "code", "example"))
def test_invalid_example_is_flagged_and_fixed_as_documented(rule, example):
    selection = Selection(select=(rule.code,), preview=True)
    found = check_source(example.source, "example.py", selection)
    assert [f.code for f in found] == [rule.code]
    result = lint_source(example.source.encode(), "example.py", selection, fix=True, unsafe_fixes=True)
    if example.fixed is None:
        assert result.fixed is None and not found[0].fixable
    else:
        assert result.fixed.decode() == example.fixed
        assert check_source(example.fixed, "example.py", selection) == []


@pytest.mark.parametrize("rule, source", VALID, ids=lambda v: getattr(v, "code", "example"))
def test_valid_example_is_clean(rule, source):
    assert check_source(source, "example.py", Selection(select=(rule.code,), preview=True)) == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_every_rule_is_documented_in_ruff_sections(rule):
    doc = rule.documentation()
    assert doc.startswith(f"{rule.code}: ")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc, section
    assert rule.invalid_examples and rule.valid_examples
