"""Jupyter notebooks as Python files, the way ruff reads them.

The engine lints a notebook's *view*: its code cells joined into one Python text, each behind a marker
line that names the cell, with IPython's magics and shell escapes (`%time`, `!pip`, `x = !ls`, `obj?`,
`%%bash` cells) masked as `pass` statements that carry the original line in a comment. Findings are then
mapped back to `cell N:line:col`, and a fixed view is spliced back into the notebook's JSON: only the
`"source"` values of the cells whose code changed are rewritten, in the layout they had, so outputs,
metadata and every other byte stay as they were. Standard library only; it imports nothing of ours.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple


class NotebookProblem(ValueError):
    """A notebook that cannot be read or written back: one line for the user."""


NOTEBOOK_SUFFIX = ".ipynb"
# Line 1 of every view, so that a coding comment in the first cell cannot change how the view decodes.
_VIEW_HEADER = "# -*- coding: utf-8 -*-\n"
_MARKER = "# ~~ dp-rnn-lint: notebook cell {} ~~"
# IPython removes a cell's leading indent before running it; the view keeps the cell's columns and
# opens a block on the marker line instead.
_INDENTED_CELL = "if True:  "
_MARKER_LINE = re.compile(r"^(?:if True:  )?# ~~ dp-rnn-lint: notebook cell (\d+) ~~\r?$", re.MULTILINE)
_MASK = "pass  # dp-rnn-lint masked IPython: "
_MASKED_LINE = re.compile(r"^([ \t]*)pass  # dp-rnn-lint masked IPython: (.*)$")
# A line masked whole (a continuation line, a cell magic's first line): it comes back as the comment holds it.
_MASK_VERBATIM = "pass  # dp-rnn-lint masked IPython line: "
_MASKED_VERBATIM = re.compile(r"^[ \t]*pass  # dp-rnn-lint masked IPython line: (.*)$")
# Cell magics whose body IPython runs as Python: the body is linted, the magic's line masked.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy"})
# Lines IPython rewrites before Python sees them: line magics, shell escapes, help, and assignments
# from a magic or the shell.
_IPYTHON_LINE = re.compile(r"^[ \t]*(?:[%!?]|[\w.]+\?{1,2}[ \t]*$|[\w.\[\], \t]+=[ \t]*[%!])")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based among all the notebook's cells, as ruff and editors count them
    code: bool  # a Python code cell (markdown and raw cells are not linted)
    source: str
    span: Tuple[int, int]  # where the cell's "source" value lies in the notebook's JSON text


@dataclass(frozen=True)
class Notebook:
    text: str  # the JSON, decoded (without a byte-order mark)
    bom: bool
    cells: Tuple[Cell, ...]


def parse_notebook(raw: bytes) -> Notebook:
    """The notebook's cells and where their sources are; NotebookProblem when it is not a notebook."""
    import json  # here, not at the top: runs without a notebook never load it

    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookProblem(f"notebook is not UTF-8: byte {error.start} cannot be decoded") from error
    try:
        document = json.loads(text)
    except ValueError as error:
        raise NotebookProblem(f"notebook is not valid JSON: {error}") from error
    except RecursionError as error:
        raise NotebookProblem("notebook is not a notebook: its JSON is nested too deeply") from error
    version = document.get("nbformat") if isinstance(document, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version < 4:
        # Versions 1-3 keep cells in "worksheets"; Jupyter converts them, this tool does not read them.
        raise NotebookProblem(f"an nbformat {version} notebook: only nbformat 4 is read "
                              "(`jupyter nbconvert --to notebook --nbformat 4` converts it)")
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookProblem("not a Jupyter notebook (nbformat 4): no \"cells\" list")
    for number, cell in enumerate(document["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotebookProblem(f"cell {number} is not a JSON object")
    python = _is_python(document.get("metadata"))
    cells = []
    for number, (cell, span) in enumerate(zip(document["cells"], _source_spans(text)), start=1):
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookProblem(f"cell {number}: \"source\" is neither a string nor a list of strings")
        cells.append(Cell(number, python and cell.get("cell_type") == "code", source, span))
    return Notebook(text, bom, tuple(cells))


def _is_python(metadata: object) -> bool:
    """Notebooks of other kernels (R, Julia) are not Python, whatever their cells say."""
    if not isinstance(metadata, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return value[field].lower() == "python"
    return True


def _source_spans(text: str) -> List[Optional[Tuple[int, int]]]:
    """For each element of the top-level "cells" array, the span of its "source" value (None when it
    has none). The JSON is known to be valid: this walk only finds positions."""
    spans: List[Optional[Tuple[int, int]]] = []
    seen_cells = False
    for key, start in _members(text, _skip(text, 0)):
        if key != "cells":
            continue
        if seen_cells:
            raise NotebookProblem("the notebook has two \"cells\" lists")
        seen_cells = True
        for element in _elements(text, start):
            found = None
            for cell_key, value in _members(text, element):
                if cell_key == "source":
                    found = (value, _value_end(text, value))
            spans.append(found)
    return spans


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()


def _members(text: str, at: int):
    """(key, value start) for each member of the object at `at`, reading past each value."""
    from json.decoder import scanstring

    at = _skip(text, at + 1)
    while text[at] != "}":
        key, at = scanstring(text, at + 1)
        at = _skip(text, _skip(text, at) + 1)  # past the colon
        yield key, at
        at = _skip(text, _value_end(text, at))
        if text[at] == ",":
            at = _skip(text, at + 1)


def _elements(text: str, at: int):
    at = _skip(text, at + 1)
    while text[at] != "]":
        yield at
        at = _skip(text, _value_end(text, at))
        if text[at] == ",":
            at = _skip(text, at + 1)


def _value_end(text: str, at: int) -> int:
    return _decoder().raw_decode(text, at)[1]


@functools.lru_cache(maxsize=1)
def _decoder():
    import json

    return json.JSONDecoder()


# --- the view -------------------------------------------------------------------------------------

def python_view(notebook: Notebook) -> bytes:
    """The code cells as one Python text (UTF-8): a header line, then per code cell its marker line
    and its lines, IPython-only lines masked. Lines end as the cells' do (CRLF when they use it), so
    that a fix writes the cells' own line ending."""
    code = [cell for cell in notebook.cells if cell.code]
    newline = "\r\n" if any("\r\n" in cell.source for cell in code[:1]) else "\n"
    parts = [_VIEW_HEADER.replace("\n", newline)]
    for cell in code:
        body = _masked(cell.source)
        parts.append((_INDENTED_CELL if _starts_indented(body) else "") + _MARKER.format(cell.number) + newline)
        # Every cell ends with a line break, so that the next marker starts a line (with_fixed_view
        # takes it off again where the cell had none).
        parts.append(body + (newline if body and not body.endswith("\n") else ""))
    return "".join(parts).encode("utf-8")


def view_of(raw: bytes) -> bytes:
    return python_view(parse_notebook(raw))


def _starts_indented(body: str) -> bool:
    """Whether the cell's first statement line is indented (IPython dedents such a cell). A leading
    comment cannot open the view's block, so such a cell is left as written."""
    for line in body.splitlines():
        if line.strip():
            return line[:1] in " \t" and not line.lstrip().startswith("#")
    return False


def _masked(source: str) -> str:
    lines = source.splitlines(keepends=True)
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split(None, 1)[0] if lines[0][2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return "".join(_mask(line, "") for line in lines)  # a cell magic: none of it is Python
        return _mask(lines[0], "") + _masked("".join(lines[1:]))
    if not any(_IPYTHON_LINE.match(line) for line in lines) or _parses(source):
        return source
    masked: List[str] = []
    continued_from: Optional[str] = None  # the indent of the magic a backslash continues
    depth = 0  # open brackets of the Python lines so far: a line inside them continues an expression
    for line in lines:
        if continued_from is not None:
            masked.append(_mask(line, continued_from))
        elif depth == 0 and _IPYTHON_LINE.match(line):
            masked.append(_mask(line))
        else:
            masked.append(line)
            depth = max(0, depth + _bracket_change(line))
            continue
        body = line.rstrip("\r\n")
        if body.endswith("\\"):
            continued_from = continued_from if continued_from is not None else body[: len(body) - len(body.lstrip(" \t"))]
        else:
            continued_from = None
    return "".join(masked)


def _bracket_change(line: str) -> int:
    """Opened minus closed brackets on a line, outside string literals and comments (a rough count: it
    only decides whether the next line may be an IPython line)."""
    change, quote, position = 0, "", 0
    while position < len(line):
        char = line[position]
        if quote:
            if char == "\\":
                position += 1
            elif line.startswith(quote, position):
                position += len(quote) - 1
                quote = ""
        elif char in "\"'":
            quote = line[position:position + 3] if line.startswith(char * 3, position) else char
            position += len(quote) - 1
        elif char == "#":
            break
        elif char in "([{":
            change += 1
        elif char in ")]}":
            change -= 1
        position += 1
    return change


def _parses(source: str) -> bool:
    import ast

    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _mask(line: str, verbatim_at: Optional[str] = None) -> str:
    """`pass` at the line's own indent, keeping the rest of the line in a comment; or, `verbatim_at` an
    indent, `pass` there with the whole line kept (a continuation, whose own indent means nothing)."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if verbatim_at is not None:
        return f"{verbatim_at}{_MASK_VERBATIM}{body}{ending}"
    indent = body[: len(body) - len(body.lstrip(" \t"))]
    return f"{indent}{_MASK}{body[len(indent):]}{ending}"


def unmasked(text: str) -> str:
    """The view's text with every masked line back as it was written."""
    lines = text.splitlines(keepends=True)
    for position, line in enumerate(lines):
        body = line.rstrip("\r\n")
        verbatim = _MASKED_VERBATIM.match(body)
        found = None if verbatim else _MASKED_LINE.match(body)
        if verbatim:
            lines[position] = verbatim.group(1) + line[len(body):]
        elif found:
            lines[position] = found.group(1) + found.group(2) + line[len(body):]
    return "".join(lines)


def cell_texts(view: str) -> List[Tuple[int, int, str]]:
    """(cell number, view line of the cell's first line, the cell's text as the view has it)."""
    markers = list(_MARKER_LINE.finditer(view))
    cells = []
    for position, marker in enumerate(markers):
        start = marker.end() + 1  # past the marker's line break
        end = markers[position + 1].start() if position + 1 < len(markers) else len(view)
        # Lines counted as Python counts them (a lone \r ends one too), as the findings' lines are.
        first_line = len(_LINE_BREAK.findall(view, 0, marker.start())) + 2
        cells.append((int(marker.group(1)), first_line, view[start:end]))
    return cells


# --- positions ------------------------------------------------------------------------------------

def cell_starts(view: str) -> List[Tuple[int, int]]:
    """(view line of the cell's first line, cell number), in view order."""
    return [(first_line, number) for number, first_line, _ in cell_texts(view)]


def in_cell(line: int, starts: Sequence[Tuple[int, int]]) -> Tuple[Optional[int], int]:
    """A view line as (cell number, line in that cell); (None, line) before the first cell."""
    found: Tuple[Optional[int], int] = (None, line)
    for first_line, number in starts:
        if first_line > line:
            break
        found = (number, line - first_line + 1)
    return found


def located_in_cells(findings: Sequence, starts: Sequence[Tuple[int, int]]) -> list:
    """The findings with their lines (and their fix edits' lines) counted within their cells."""
    located = []
    for finding in findings:
        cell, line = in_cell(finding.line, starts)
        if cell is None:
            located.append(finding)
            continue
        first = finding.line - line  # the view line just before the cell's first
        end_line = finding.end_line - first if finding.end_line is not None else None
        edits = tuple(replace(edit, line=edit.line - first, end_line=edit.end_line - first) for edit in finding.edits)
        located.append(replace(finding, line=line, end_line=end_line, edits=edits, cell=cell))
    return located


# --- writing a fixed view back --------------------------------------------------------------------

def with_fixed_view(notebook: Notebook, view: bytes, fixed_view: bytes) -> bytes:
    """The notebook's bytes with the cells whose code differs between the two views rewritten (the
    notebook as parse_notebook read it: the caller has parsed it already to make `view`)."""
    before = {number: text for number, _, text in cell_texts(view.decode("utf-8"))}
    after = cell_texts(fixed_view.decode("utf-8"))
    if [number for number, _, _ in after] != list(before):
        raise NotebookProblem("a fix moved a notebook cell's boundary; not fixed")
    by_number = {cell.number: cell for cell in notebook.cells}
    newline = "\r\n" if view.startswith(_VIEW_HEADER.replace("\n", "\r\n").encode()) else "\n"
    ascii_only = notebook.text.isascii()
    replacements = []
    for number, _, text in after:
        if text == before[number]:
            continue
        cell = by_number[number]
        if cell.span is None:
            raise NotebookProblem(f"cell {number} has no \"source\" to fix; not fixed")
        source = unmasked(text)
        if not cell.source.endswith("\n") and source.endswith(newline):
            source = source[:-len(newline)]  # the view ends every cell with a line break; the cell did not
        start, end = cell.span
        replacements.append((start, end, _source_json(notebook.text[start:end], source, ascii_only)))
    text = notebook.text
    for start, end, value in sorted(replacements, reverse=True):
        text = text[:start] + value + text[end:]
    return (b"\xef\xbb\xbf" if notebook.bom else b"") + text.encode("utf-8")


def _source_json(old: str, source: str, ascii_only: bool) -> str:
    """The new "source" value written the way the old one was: a string, or a list of lines with the
    old list's spacing; lines that did not change keep their exact old JSON text."""
    import json

    if not old.startswith("["):
        return json.dumps(source, ensure_ascii=ascii_only)
    tokens = [(at, _value_end(old, at)) for at in _elements(old, 0)]
    if not tokens:
        return json.dumps(source.splitlines(keepends=True), ensure_ascii=ascii_only)
    known: Dict[str, str] = {json.loads(old[s:e]): old[s:e] for s, e in tokens}
    opening, closing = old[1:tokens[0][0]], old[tokens[-1][1]:-1]
    separator = old[tokens[0][1]:tokens[1][0]] if len(tokens) > 1 else "," + opening
    lines = source.splitlines(keepends=True)
    if len(tokens) == 1 and len(json.loads(old[tokens[0][0]:tokens[0][1]]).splitlines()) > 1:
        lines = [source]  # one element holding every line: kept so
    rendered = [known.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    return "[" + opening + separator.join(rendered) + closing + "]"
