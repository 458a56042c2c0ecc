"""`path:line:col: CODE message`, one line per finding, the way flake8 and ruff print."""

from __future__ import annotations

from typing import Sequence, TextIO

from ..engine import FileResult
from ..escaping import printable


def report_text(results: Sequence[FileResult], out: TextIO) -> None:
    for result in results:
        for finding in result.findings:
            out.write(f"{printable(finding.path)}:{finding.line}:{finding.col}: {finding.code} {printable(finding.message)}\n")
