"""`dp-rnn-lint server`: a language server over stdio (pygls, the optional `server` extra).

Diagnostics on open, change and save from the engine the command line uses, with the project index of
the file's project kept warm in this process (rebuilt when a Python file is saved, so a base class or a
DataParallel wrap in another file counts as it does on disk). Code actions: each finding's fix (an unsafe
one says so, as ruff labels them), `# noqa: CODE` on its line, and `source.fixAll.dp-rnn-lint` for the
safe fixes. Notebook documents (LSP 3.17) are linted as the command lints a `.ipynb` file, and each
cell gets its own diagnostics (quick fixes are offered for Python files only). Settings: the file's `[tool.dp-rnn-lint]` as the command line reads it, with the client's
initialization options on top (`select`, `ignore`, `preview`, `unsafeFixes`, `scope`), as command-line
options are. A document that does not parse keeps its last diagnostics.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from . import __version__, notebooks
from .config import ConfigError, SettingsResolver, code_list
from .engine import lint_source
from .files import FileProblem
from .findings import Finding
from .flake8_plugin import _PROJECT_INDEXES, context_in_project
from .noqa import with_noqa_added

FIX_ALL = "source.fixAll.dp-rnn-lint"
SOURCE = "dp-rnn-lint"


class DpRnnLintServer(LanguageServer):
    def __init__(self) -> None:
        cells = [types.NotebookCellLanguage(language="python")]
        super().__init__("dp-rnn-lint", __version__, notebook_document_sync=types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(notebook="jupyter-notebook", cells=cells)]))
        self.overrides: Dict[str, object] = {}  # the client's options, named as Settings names them
        self.settings = SettingsResolver(self.overrides)
        self.findings: Dict[str, List[Finding]] = {}  # uri -> the findings of its last good lint

    def configure(self, options: object) -> None:
        if not isinstance(options, dict):
            return
        overrides: Dict[str, object] = {}
        try:
            for key, name in (("select", "select"), ("ignore", "ignore")):
                if key in options:
                    overrides[name] = code_list(options[key], f"initializationOptions.{key}")
        except ConfigError as error:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=str(error)))
        for key, name in (("preview", "preview"), ("unsafeFixes", "unsafe_fixes")):
            if isinstance(options.get(key), bool):
                overrides[name] = options[key]
        if options.get("scope") in ("any", "wrapped"):
            overrides["scope"] = options["scope"]
        self.overrides = overrides
        self.settings = SettingsResolver(overrides)


server = DpRnnLintServer()


def _path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _lint(uri: str, text: str, fix: bool = False, unsafe_fixes: Optional[bool] = None):
    path = _path(uri)
    settings = server.settings.for_path(path)  # ConfigError: a broken pyproject.toml, said by the caller
    context = None
    if os.path.isabs(path):
        try:
            context = context_in_project(path, settings.scope, None)
        except (OSError, FileProblem):
            context = None
    return lint_source(text.encode("utf-8", "surrogateescape"), path, settings.selection_for(path), fix=fix,
                       describe_fixes=True, context=context,
                       unsafe_fixes=settings.unsafe_fixes if unsafe_fixes is None else unsafe_fixes)


def _utf16(line_text: str, col: int) -> int:
    """A 1-based character column as LSP's 0-based UTF-16 offset on that line."""
    return len(line_text[: col - 1].encode("utf-16-le")) // 2


def _position(lines: List[str], line: int, col: int) -> types.Position:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return types.Position(line=line - 1, character=_utf16(text, col))


def _diagnostic(finding: Finding, lines: List[str]) -> types.Diagnostic:
    end = _position(lines, finding.end_line or finding.line, finding.end_col or finding.col)
    return types.Diagnostic(range=types.Range(start=_position(lines, finding.line, finding.col), end=end),
                            message=finding.message, severity=types.DiagnosticSeverity.Warning,
                            code=finding.code, source=SOURCE)


def _linted(uri: str, text: str):
    """The document's result, or None when it yields no diagnostics to publish: a document that does not
    parse (yet) keeps its last ones; a broken configuration is said once, as a message."""
    try:
        result = _lint(uri, text)
    except FileProblem:
        return None
    except ConfigError as error:
        server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=str(error)))
        return None
    return result if result.problem is None else None


def _publish(uri: str, text: str) -> None:
    result = _linted(uri, text)
    if result is None:
        return
    server.findings[uri] = result.findings
    lines = text.splitlines()
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, diagnostics=[_diagnostic(finding, lines) for finding in result.findings]))


def _publish_notebook(uri: str) -> None:
    """Lint a notebook document's cells together, as its `.ipynb` file would be, and give each cell its own."""
    notebook = server.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return
    texts = [server.workspace.get_text_document(cell.document).source for cell in notebook.cells]
    document = {"cells": [{"cell_type": "code" if cell.kind == types.NotebookCellKind.Code else "markdown",
                           "source": text, "metadata": {}} for cell, text in zip(notebook.cells, texts)],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    try:
        view = notebooks.python_view(notebooks.parse_notebook(json.dumps(document).encode()))
    except notebooks.NotebookProblem:
        return
    result = _linted(uri, view.decode("utf-8", "surrogateescape"))
    if result is None:
        return
    located = notebooks.located_in_cells(result.findings, notebooks.cell_starts(view.decode("utf-8", "surrogateescape")))
    for number, (cell, text) in enumerate(zip(notebook.cells, texts), start=1):
        lines = text.splitlines()
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=cell.document, diagnostics=[_diagnostic(finding, lines) for finding in located if finding.cell == number]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(params: types.DidOpenNotebookDocumentParams) -> None:
    _publish_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(params: types.DidChangeNotebookDocumentParams) -> None:
    _publish_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(params: types.DidSaveNotebookDocumentParams) -> None:
    _PROJECT_INDEXES.clear()
    _publish_notebook(params.notebook_document.uri)


@server.feature(types.INITIALIZE)
def initialize(params: types.InitializeParams) -> None:
    server.configure(params.initialization_options)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: types.DidOpenTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.text)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: types.DidChangeTextDocumentParams) -> None:
    document = server.workspace.get_text_document(params.text_document.uri)
    _publish(document.uri, document.source)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(params: types.DidSaveTextDocumentParams) -> None:
    _PROJECT_INDEXES.clear()  # what another file holds may have changed on disk: the index is rebuilt
    server.settings = SettingsResolver(server.overrides)  # and a saved pyproject.toml is read again
    document = server.workspace.get_text_document(params.text_document.uri)
    _publish(document.uri, document.source)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(params: types.DidCloseTextDocumentParams) -> None:
    server.findings.pop(params.text_document.uri, None)
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def _whole(text: str, new_text: str, uri: str) -> types.WorkspaceEdit:
    lines = text.splitlines()
    end = types.Position(line=len(lines), character=0)
    return types.WorkspaceEdit(changes={uri: [types.TextEdit(range=types.Range(
        start=types.Position(line=0, character=0), end=end), new_text=new_text)]})


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
def code_action(params: types.CodeActionParams) -> List[types.CodeAction]:
    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    text = document.source
    lines = text.splitlines()
    wanted = params.context.only
    actions: List[types.CodeAction] = []
    if wanted is None or any(kind.startswith(types.CodeActionKind.QuickFix) for kind in wanted):
        start, end = params.range.start.line + 1, params.range.end.line + 1
        for finding in server.findings.get(uri, []):
            if not start <= finding.line <= end:
                continue
            diagnostic = _diagnostic(finding, lines)
            if finding.fix is not None and finding.edits:
                label = "" if finding.fix.safe else " (unsafe)"
                edits = [types.TextEdit(range=types.Range(start=_position(lines, edit.line, edit.col),
                                                          end=_position(lines, edit.end_line, edit.end_col)),
                                        new_text=edit.content) for edit in finding.edits]
                actions.append(types.CodeAction(title=f"{finding.code}{label}: {finding.fix.description}",
                                                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                                edit=types.WorkspaceEdit(changes={uri: edits}),
                                                is_preferred=finding.fix.safe))
            noqa, _ = with_noqa_added(text, [finding])
            actions.append(types.CodeAction(title=f"{finding.code}: add `# noqa: {finding.code}`",
                                            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                            edit=_whole(text, noqa, uri)))
    if wanted is not None and any(FIX_ALL.startswith(kind) for kind in wanted):
        try:
            result = _lint(uri, text, fix=True, unsafe_fixes=False)  # fixAll: the safe fixes only
        except (FileProblem, ConfigError):
            result = None
        if result is not None and result.fixed is not None:
            actions.append(types.CodeAction(title="dp-rnn-lint: fix all safe fixes", kind=FIX_ALL,
                                            edit=_whole(text, result.fixed.decode("utf-8", "surrogateescape"), uri)))
    return actions


def main(argv: Optional[List[str]] = None) -> int:
    server.start_io()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
