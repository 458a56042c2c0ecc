"""Human output: `path:line:col: CODE message` per finding; the default `text` format adds the source
line with a caret under the flagged code, the way ruff and rustc show it.

Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org); FORCE_COLOR turns
it on for a pipe (CI logs that render colour).
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Dict, List, Optional, Sequence, TextIO

from .. import notebooks
from ..escaping import printable
from ..files import FileProblem
from ..findings import FileResult, Finding
from ..parse import decode

_BOLD, _RED, _BLUE, _RESET = "\033[1m", "\033[1;31m", "\033[1;34m", "\033[0m"
# libcst counts lines as Python does: \r\n, \r and \n all end one.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def use_colour(out: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def finding_line(finding: Finding, colour: bool = False) -> str:
    path, code = printable(finding.path), finding.code
    if colour:
        path, code = f"{_BOLD}{path}{_RESET}", f"{_RED}{code}{_RESET}"
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{path}:{cell}{finding.line}:{finding.col}: {code} {printable(finding.message)}"


def located_problem(path: str, problem: str) -> str:
    """`path: problem`, or `path:line:col: problem` when the problem starts with its position."""
    problem = printable(problem)
    positioned = problem[:1].isdigit() or re.match(r"cell \d+:\d", problem)
    return f"{printable(path)}{':' if positioned else ': '}{problem}"


def report_concise(results: Sequence[FileResult], out: TextIO) -> None:
    colour = use_colour(out)
    for result in results:
        for finding in result.findings:
            out.write(finding_line(finding, colour) + "\n")


def report_text(results: Sequence[FileResult], out: TextIO) -> None:
    colour = use_colour(out)
    for result in results:
        lines = _source_lines(result) if result.findings else {}
        for finding in result.findings:
            out.write(finding_line(finding, colour) + "\n")
            shown = lines.get(finding.cell, [])
            if 0 < finding.line <= len(shown):
                out.write(_excerpt(finding, shown[finding.line - 1], colour))
            out.write("\n")


def _source_lines(result: FileResult) -> Dict[Optional[int], List[str]]:
    """The lines findings point at: the file's (under the key None), or each notebook cell's as written."""
    # After --fix the findings left point into the fixed content.
    data = result.fixed if result.fixed is not None else result.original
    if data is None:
        return {}
    try:
        text = decode(data)
    except FileProblem:
        return {}
    if not notebooks.is_notebook(result.path):
        return {None: _LINE_BREAK.split(text)}
    return {number: _LINE_BREAK.split(notebooks.unmasked(cell)) for number, _, cell in notebooks.cell_texts(text)}


def _excerpt(finding: Finding, line: str, colour: bool) -> str:
    """The source line under a gutter with its number, and carets under the flagged code."""
    number = str(finding.line)
    gutter = " " * len(number)
    start = finding.col - 1
    end = finding.end_col - 1 if finding.end_line == finding.line and finding.end_col else len(line.rstrip())
    shown_before, shown_flagged = _shown(line[:start]), _shown(line[start:end])
    mark = "^" * max(_width(shown_flagged), 1) + f" {finding.code}"
    bar = "|"
    if colour:
        number, bar, mark = f"{_BLUE}{number}{_RESET}", f"{_BLUE}|{_RESET}", f"{_RED}{mark}{_RESET}"
    return (
        f"{gutter} {bar}\n"
        f"{number} {bar} {_shown(line)}\n"
        f"{gutter} {bar} {' ' * _width(shown_before)}{mark}\n"
    )


_TAB = "    "


def _shown(text: str) -> str:
    return printable(text.replace("\t", _TAB))


def _width(text: str) -> int:
    # Wide (East Asian) characters take two terminal cells, so carets stay under the code.
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
