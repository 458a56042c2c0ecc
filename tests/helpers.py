"""Small helpers for tests that lint snippets."""

from __future__ import annotations

import textwrap
from typing import List, Tuple

from dp_rnn_lint.engine import Selection, check_source, lint_source, own_context


def findings(source: str, path: str = "model.py", code: str = "DPR") -> List[Tuple[int, str]]:
    """(line, code) for every finding in a dedented snippet."""
    found = check_source(textwrap.dedent(source), path, Selection(select=(code,), preview=True))
    return [(f.line, f.code) for f in found]


def messages(source: str, code: str = "DPR") -> List[str]:
    return [f.message for f in check_source(textwrap.dedent(source), "model.py", Selection(select=(code,), preview=True))]


def fixed(source: str, code: str = "DPR") -> str:
    """The snippet after --fix --unsafe-fixes (the snippet itself when nothing changed): what the fixes do,
    whatever their safety."""
    data = textwrap.dedent(source).encode()
    result = lint_source(data, "model.py", Selection(select=(code,), preview=True), fix=True, unsafe_fixes=True)
    assert result.problem is None, result.problem
    return (result.fixed or data).decode()


def unscreened_findings(source, path: str = "model.py") -> List[Tuple[int, int, str]]:
    """(line, col, code) from the libcst analysis run on the file whatever the cheap screen says, placed
    by libcst's own positions: what `check_source` must find too, since the screen may only skip files
    without findings and Python's tree must place them where libcst does."""
    from dp_rnn_lint import engine, parse

    module = parse.parse(source, path)
    context = own_context(source, path)
    found = parse.run_with_deep_stack(engine._analysed, module, path, Selection(preview=True).rules(), None, module.code, context)
    return [(f.line, f.col, f.code) for f in found]
