"""A JSON list of findings, one object each, with 1-based line and column (in a notebook: within the
cell named by `cell`), and each fix's edits."""

from __future__ import annotations

import json
from typing import Optional, Sequence, TextIO

from ..findings import FileResult, Finding


def fix_object(finding: Finding) -> Optional[dict]:
    """The fix as ruff's JSON writes it: applicability, a message, and edits (end exclusive)."""
    if finding.fix is None or not finding.edits:
        return None
    return {
        "applicability": finding.fix.applicability,
        "message": finding.fix.description,
        "edits": [
            {
                "content": edit.content,
                "location": {"row": edit.line, "column": edit.col},
                "end_location": {"row": edit.end_line, "column": edit.end_col},
            }
            for edit in finding.edits
        ],
    }


def report_json(results: Sequence[FileResult], out: TextIO) -> None:
    items = [
        {
            "path": finding.path,
            "cell": finding.cell,  # a notebook's cell (1-based) that line counts in; null for a Python file
            "line": finding.line,
            "col": finding.col,
            "code": finding.code,
            "message": finding.message,
            "fixable": finding.fixable,
            "fix": fix_object(finding),
        }
        for result in results
        for finding in result.findings
    ]
    json.dump(items, out, indent=2)
    out.write("\n")
