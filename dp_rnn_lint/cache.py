"""A result cache: what linting a file found, keyed by its content, its path, the settings and this
version, so that a second run over an unchanged tree reads answers instead of parsing.

One small JSON file per entry, written to a temporary name and renamed into place: two runs sharing
the folder can only ever see whole entries, and a damaged entry is a miss, never an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

from . import __version__
from .files import code_fingerprint, prepare_cache_folder, project_root, replace_atomically
from .findings import FileResult, Finding, Fix
from .rules import Selection

if TYPE_CHECKING:
    from .analysis.project import FileContext

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
    def key(path: str, source: bytes, selection: Selection, context: Union[FileContext, str], named: bool = False) -> str:
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
            "findings": [_stored_finding(f) for f in result.findings],
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


# A file younger than this may still change within the tick of the clock that stamped it, keeping its size
# and modification time: a run that read one is not saved whole (git calls this "racily clean").
_RACY_SECONDS = 3.0


class RunCache:
    """A whole run's results, for the same command over an unchanged tree, as ruff answers a repeated run
    from file sizes and times without reading the files: keyed by this linter's code, every linted file's
    path, settings and size and modification time, and those of every other file the project index would
    read. One entry per command (`slot`), overwritten by each run; a damaged entry is a miss.

    `linted`: for each linted file, (path, the problem found walking to it, its selection, what else of
    its settings changes findings, whether it was named); `index_files`: the files the index would read."""

    def __init__(self, folder: Path, slot: str, linted: List[Tuple[str, Optional[str], Selection, str, bool]],
                 index_files: List[str]) -> None:
        import zlib

        self.folder = folder / __version__
        # One file per command; two commands that share one only replace each other's entry (the key differs).
        self.entry = self.folder / "runs" / f"{zlib.crc32(slot.encode('utf-8', 'surrogateescape')):08x}.run"
        self.newest_mtime_ns = 0
        linted_paths = {path for path, *_ in linted}
        stats: Dict[str, str] = {}
        for path in sorted(linted_paths | set(index_files)):
            try:
                info = os.stat(path)
                stats[path] = f"{info.st_size}:{info.st_mtime_ns}"
                self.newest_mtime_ns = max(self.newest_mtime_ns, info.st_mtime_ns)
            except OSError as error:
                stats[path] = f"unreadable:{error.errno}"
        spelled: Dict[int, str] = {}  # each selection's repr, by identity: a tree's files mostly share one
        lines = [code_fingerprint() + "\n"]
        for path, problem, selection, settings, named in linted:
            shown = spelled.get(id(selection))
            if shown is None:
                shown = spelled[id(selection)] = repr(selection)
            lines.append(f"{path}\0{problem}\0{shown}\0{settings}\0{named}\0{stats[path]}\n")
        lines += [f"{path}\0{stats[path]}\n" for path in sorted(set(index_files) - linted_paths)]
        # The key is kept whole and compared whole, not hashed: no collision can answer for another tree, and
        # a repeated run needs no hash function loaded.
        self.key = "".join(lines).encode("utf-8", "surrogateescape")

    def get(self) -> Optional[List[FileResult]]:
        import json

        try:
            with open(self.entry, "rb") as handle:
                stored = handle.read()
            size, _, rest = stored.partition(b"\n")
            if rest[:int(size)] != self.key:
                return None
            results = [FileResult(item) if isinstance(item, str)
                       else ResultCache._result(item, item["path"], item["original"].encode("utf-8", "surrogateescape")
                                                if item["original"] is not None else None)
                       for item in json.loads(rest[int(size):])["results"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return None if None in results else results  # a damaged entry: lint again

    def put(self, results: List[FileResult]) -> None:
        import json
        import time

        if time.time_ns() - self.newest_mtime_ns < _RACY_SECONDS * 1e9 or not prepare_cache_folder(self.folder):
            return
        # A clean file's result is its path alone (most are): the entry is read by every repeated run.
        stored = {"results": [
            result.path if not result.findings and result.problem is None and result.note is None else
            {"path": result.path, "problem": result.problem, "note": result.note,
             "original": result.original.decode("utf-8", "surrogateescape") if result.original is not None else None,
             "findings": [_stored_finding(f) for f in result.findings]}
            for result in results]}
        try:
            self.entry.parent.mkdir(exist_ok=True)
            # The entry: the key's length on a line, the key, then the results as JSON.
            replace_atomically(str(self.entry), b"%d\n" % len(self.key) + self.key + json.dumps(stored).encode("utf-8"),
                               prefix=".run-")
        except OSError:
            pass  # an unwritable cache makes the next run slower, not wrong


def _stored_finding(finding: Finding) -> dict:
    return {"line": finding.line, "col": finding.col, "end_line": finding.end_line, "end_col": finding.end_col,
            "code": finding.code, "message": finding.message, "fixable": finding.fixable,
            "safe": bool(finding.fix and finding.fix.safe), "fix": finding.fix.description if finding.fix else ""}
