"""A result cache: what linting a file found, keyed by its content, its path, the settings and this
version, so that a second run over an unchanged tree reads answers instead of parsing.

One small JSON file per entry, written to a temporary name and renamed into place: two runs sharing
the folder can only ever see whole entries, and a damaged entry is a miss, never an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from . import __version__
from .analysis.project import FileContext
from .engine import FileResult, Selection
from .files import code_fingerprint, prepare_cache_folder, project_root, replace_atomically
from .findings import Finding, Fix

CACHE_DIR_ENV = "DP_RNN_LINT_CACHE_DIR"
DEFAULT_CACHE_DIR = ".dp-rnn-lint-cache"
# Stands for the context in the key of a first look, which no project index context can equal.
FIRST_LOOK = "first look: the cheap stages alone"
# What get_first_look answers for a file the cheap stages cannot settle.
NEEDS_ANALYSIS, MAY_INHERIT = "needs analysis", "may inherit"


def default_cache_dir(near: Optional[str] = None) -> Path:
    """$DP_RNN_LINT_CACHE_DIR, else the cache folder at the root of the project that holds `near` (a file
    or folder; default: the current folder), as ruff keeps its cache beside pyproject.toml: the same cache
    whatever folder the command runs from. Outside any project: in the current folder."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    start = near or "."
    root = project_root(os.path.join(start, "_") if os.path.isdir(start) else start)
    return root / DEFAULT_CACHE_DIR if root is not None else Path(DEFAULT_CACHE_DIR)


class ResultCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder / __version__
        self._ready = False
        self._usable = True

    @staticmethod
    def key(path: str, source: bytes, selection: Selection, context: Union[FileContext, str] = FileContext(),
            named: bool = False) -> str:
        # The context (which classes are wrapped, and where) changes findings without changing the file; so
        # does being named on the command line (its syntax is then always checked).
        import hashlib  # json, hashlib and tempfile load where used: a run without the cache never needs them

        digest = hashlib.sha256()
        for part in (code_fingerprint(), path, repr(selection), repr(context), "named" if named else ""):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(source)
        return digest.hexdigest()

    @staticmethod
    def first_look_key(path: str, source: bytes, selection: Selection, named: bool = False) -> str:
        """The key of what the cheap stages alone say of a file: no project index is needed to ask it."""
        return ResultCache.key(path, source, selection, FIRST_LOOK, named)

    def get(self, key: str, path: str, source: bytes) -> Optional[FileResult]:
        stored = self._read(key)
        return None if stored is None or stored.get("needs_analysis") else self._result(stored, path, source)

    def get_first_look(self, key: str, path: str, source: bytes) -> Union[FileResult, str, None]:
        """Under a first_look_key: the file's result; NEEDS_ANALYSIS when the file needs the analysis (and
        so the index's context: its result is under the context's key), MAY_INHERIT when it does only if
        its classes may run an RNN of another file; None when nothing is known."""
        stored = self._read(key)
        if stored is None:
            return None
        if stored.get("needs_analysis") is True:
            return MAY_INHERIT if stored.get("may_inherit_only") is True else NEEDS_ANALYSIS
        return self._result(stored, path, source)

    def put_needs_analysis(self, key: str, may_inherit_only: bool = False) -> None:
        self._write(key, {"needs_analysis": True, "may_inherit_only": may_inherit_only})

    def _read(self, key: str) -> Optional[dict]:
        import json

        try:
            with open(self._entry(key), encoding="utf-8") as handle:
                stored = json.load(handle)
        except (OSError, ValueError):
            return None  # absent or damaged: lint the file
        return stored if isinstance(stored, dict) else None

    @staticmethod
    def _result(stored: dict, path: str, source: bytes) -> Optional[FileResult]:
        try:
            findings = [
                Finding(path, item["line"], item["col"], item["code"], item["message"],
                        Fix((), item["safe"], item["fix"]) if item["fixable"] else None,
                        end_line=item["end_line"], end_col=item["end_col"])
                for item in stored["findings"]
            ]
            return FileResult(path, findings, stored["problem"], original=source, note=stored["note"])
        except (KeyError, TypeError):
            return None  # damaged: lint the file

    def put(self, key: str, result: FileResult) -> None:
        self._write(key, {
            "findings": [
                {"line": f.line, "col": f.col, "end_line": f.end_line, "end_col": f.end_col, "code": f.code,
                 "message": f.message, "fixable": f.fixable, "safe": bool(f.fix and f.fix.safe),
                 "fix": f.fix.description if f.fix else ""}
                for f in result.findings
            ],
            "problem": result.problem,
            "note": result.note,
        })

    def _write(self, key: str, stored: dict) -> None:
        if not self._usable or not self._prepare():
            return
        import json

        entry = self._entry(key)
        try:
            entry.parent.mkdir(exist_ok=True)
            replace_atomically(str(entry), json.dumps(stored).encode("utf-8"), prefix=".entry-")
        except OSError:
            self._usable = False  # a read-only or full disk makes the run uncached, not failed

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def _prepare(self) -> bool:
        if self._ready:
            return True
        if not prepare_cache_folder(self.folder):
            self._usable = False
            return False
        self._ready = True
        return True
