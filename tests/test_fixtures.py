"""Every fixture: the findings its markers announce, its golden fixed file, and the fix properties."""

from __future__ import annotations

import pytest

from dp_rnn_lint.engine import Selection, lint_source
from dp_rnn_lint.rules import RULE_CODES

from .conftest import expected_findings, fixture_files, fixture_id, golden_path

FIXTURES = fixture_files()
WITH_GOLDEN = [p for p in FIXTURES if golden_path(p).exists()]


def found(path, source=None, fix=False):
    # Every rule, those in preview too: the fixtures show what each rule does.
    result = lint_source(path.read_bytes() if source is None else source, str(path), Selection(preview=True), fix=fix,
                         unsafe_fixes=True)
    assert result.problem is None, result.problem
    return result, {(f.line, f.code, f.fixable) for f in result.findings}


def test_every_rule_has_buggy_and_clean_fixtures():
    for code in RULE_CODES:
        names = [p.name for p in FIXTURES if p.parent.name == code]
        assert any(n.startswith("clean_") for n in names), code
        assert any(expected_findings(p) for p in FIXTURES if p.parent.name == code), code


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_findings_match_the_markers(path):
    _, actual = found(path)
    assert actual == expected_findings(path)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_finding_columns_point_at_the_flagged_code(path):
    result, _ = found(path)
    lines = path.read_bytes().decode("utf-8").splitlines()
    for finding in result.findings:
        text = lines[finding.line - 1][finding.col - 1:]
        if finding.code in ("DPR004", "DPR008") and "returns" in finding.message and "(" not in text.split()[0]:
            assert text.split()[0].strip(",)") in finding.message, text  # the returned value's name
        elif finding.code == "DPR008" and "treats its parameter" in finding.message and "(" not in text.split()[0]:
            assert f"`{text.split(':')[0]}`" in finding.message, text  # the annotated parameter
        elif finding.code == "DPR006":
            assert text.startswith("self.") and text[5:].split()[0] in finding.message, text  # the attribute set
        else:
            assert "(" in text, text  # the call


@pytest.mark.parametrize("path", WITH_GOLDEN, ids=fixture_id)
def test_fix_produces_the_golden_file(path):
    result, _ = found(path, fix=True)
    assert result.fixed is not None, "no fix was applied"
    assert result.fixed == golden_path(path).read_bytes()


@pytest.mark.parametrize("path", WITH_GOLDEN, ids=fixture_id)
def test_fixed_file_compiles_and_keeps_only_unfixable_findings(path):
    golden = golden_path(path)
    compile(golden.read_bytes(), str(golden), "exec")
    result, actual = found(golden)
    assert actual == expected_findings(path, fixed=True)
    assert all(not finding.fixable for finding in result.findings)


@pytest.mark.parametrize("path", WITH_GOLDEN, ids=fixture_id)
def test_what_the_fixing_run_reports_left_is_what_a_run_over_the_fixed_file_reports(path):
    # --fix checks its edited tree without parsing the fixed text again.
    fixing, _ = found(path, fix=True)
    fresh, _ = found(golden_path(path))
    assert [(f.line, f.col, f.code, f.message, f.fixable) for f in fixing.findings] == [
        (f.line, f.col, f.code, f.message, f.fixable) for f in fresh.findings]
    assert fixing.fixed_count == len(expected_findings(path)) - len(expected_findings(path, fixed=True))


@pytest.mark.parametrize("path", WITH_GOLDEN, ids=fixture_id)
def test_second_fix_changes_nothing(path):
    result, _ = found(golden_path(path), fix=True)
    assert result.fixed is None


@pytest.mark.parametrize("path", [p for p in FIXTURES if not golden_path(p).exists()], ids=fixture_id)
def test_files_without_golden_are_left_alone_by_fix(path):
    result, _ = found(path, fix=True)
    assert result.fixed is None
