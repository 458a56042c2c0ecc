"""GitHub Actions workflow commands: one `::error` annotation per finding, which GitHub shows on the
file and line of a pull request's diff:

    ::error title=dp-rnn-lint (DPR001),file=model.py,line=12,col=18,endLine=12,endColumn=27::message

The title carries the code and the properties the place, so the message is the message alone (a
notebook's finding starts with its cell and place in it, `cell 4:8:18: `, which the diff cannot show).
A file that could not be linted gets an `::error` on the file, a skipped one a `::notice`.
"""

from __future__ import annotations

from typing import Sequence, TextIO, Tuple

from ..findings import FileResult
from ..escaping import printable
from .text import located_problem

TOOL_NAME = "dp-rnn-lint"


def escape_data(text: str) -> str:
    """The message after `::`, escaped as the runner unescapes it (`%` first, so escapes stay escapes)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file=...`): as data, and `:` and `,`, which would end the value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: Sequence[Tuple[str, str]], message: str) -> str:
    listed = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    return f"::{command} {listed}::{escape_data(message)}\n"


def report_github(results: Sequence[FileResult], out: TextIO) -> None:
    for result in results:
        for finding in result.findings:
            properties = [
                ("title", f"{TOOL_NAME} ({finding.code})"),
                ("file", finding.path),
                ("line", str(finding.line)),
                ("col", str(finding.col)),
            ]
            if finding.end_line is not None and finding.end_col is not None:
                properties += [("endLine", str(finding.end_line)), ("endColumn", str(finding.end_col))]
            cell = f"cell {finding.cell}:{finding.line}:{finding.col}: " if finding.cell is not None else ""
            out.write(workflow_command("error", properties, cell + printable(finding.message)))
        for command, text in (("error", result.problem), ("notice", result.note)):
            if text:
                out.write(workflow_command(command, (("title", TOOL_NAME), ("file", result.path)),
                                           located_problem(result.path, text)))
