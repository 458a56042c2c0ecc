"""A JSON list of findings, one object each, with 1-based line and column."""

from __future__ import annotations

import json
from typing import Sequence, TextIO

from ..engine import FileResult


def report_json(results: Sequence[FileResult], out: TextIO) -> None:
    items = [
        {
            "path": finding.path,
            "line": finding.line,
            "col": finding.col,
            "code": finding.code,
            "message": finding.message,
            "fixable": finding.fixable,
        }
        for result in results
        for finding in result.findings
    ]
    json.dump(items, out, indent=2)
    out.write("\n")
