"""Finding the files to lint, reading them as bytes, and writing fixes without ever losing one."""

from __future__ import annotations

import fnmatch
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

# Folders nobody wants linted: VCS data, caches, virtual environments, build output.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".eggs", "__pycache__",
    "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
)


class FileProblem(Exception):
    """A file that cannot be read, decoded, parsed or written: one line for the user."""


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def _excluded(path: Path, patterns: Sequence[str]) -> bool:
    name = path.name
    text = path.as_posix()
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(text, p) or fnmatch.fnmatch(text, f"*/{p}") for p in patterns)


def discover(paths: Iterable[str], exclude: Sequence[str] = ()) -> Iterator[Tuple[str, Optional[str]]]:
    """Yield (path, problem) for every Python file under the given paths, in a stable order.

    A file given explicitly is always linted, whatever its name; folders are walked for `*.py`
    files, skipping DEFAULT_EXCLUDES, virtual environments and anything matching `exclude`.
    """
    patterns = tuple(exclude)
    for given in paths:
        root = Path(given)
        try:
            if root.is_dir():
                yield from _walk(root, patterns + DEFAULT_EXCLUDES)
                continue
            if root.is_symlink() and not root.exists():
                yield str(root), "broken symbolic link"
            elif not root.exists():
                yield str(root), "no such file or directory"
            elif not stat.S_ISREG(root.stat().st_mode):
                yield str(root), "not a regular file"  # a FIFO or device would block or never end
            else:
                yield str(root), None
        except OSError as error:
            yield str(root), f"cannot access: {error.strerror or error}"


def _walk(root: Path, patterns: Sequence[str], top: Optional[str] = None) -> Iterator[Tuple[str, Optional[str]]]:
    # Folder symlinks are never followed, and a file symlink only when it points inside the folder
    # given on the command line: walking `models/` must not lint (or fix) files elsewhere.
    top = top or os.path.realpath(root)
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError as error:
        yield str(root), f"cannot list folder: {error.strerror or error}"
        return
    for entry in entries:
        path = Path(entry.path)
        if _excluded(path, patterns):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file() and stat.S_ISREG(entry.stat().st_mode)
        except OSError:
            is_dir, is_file = False, False
        if is_dir:
            if not _is_virtualenv(path):
                yield from _walk(path, patterns, top)
        elif entry.name.endswith(".py"):
            if is_file and entry.is_symlink() and not _inside(os.path.realpath(entry.path), top):
                continue
            if is_file:
                yield str(path), None
            elif entry.is_symlink():
                yield str(path), "broken symbolic link (or a symbolic link loop)"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def read_source(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise FileProblem(f"cannot read: {error.strerror or error}") from error


def write_atomically(path: str, data: bytes, expected_original: bytes) -> None:
    """Replace the file's content in one step, keeping its mode; refuse when it changed on disk."""
    if read_source(path) != expected_original:
        raise FileProblem("changed on disk while it was being fixed; not overwritten")
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as error:
        raise FileProblem(f"cannot write: {error.strerror or error}") from error
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # os.replace would swap even a read-only file; its mode says the user does not want that.
        raise FileProblem("read-only file; not fixed")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=".dp-rnn-lint-", suffix=".tmp", dir=folder)
    except OSError as error:
        raise FileProblem(f"cannot write: {error.strerror or error}") from error
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise FileProblem(f"cannot write: {error.strerror or error}") from error


def module_name_for(path: str) -> Tuple[Optional[str], bool]:
    """The dotted module name a file is imported as (walking up through packages), and whether
    it is a package's __init__; used to resolve relative imports."""
    file = Path(os.path.abspath(path))
    if file.suffix != ".py":
        return None, False
    is_package = file.stem == "__init__"
    parts: List[str] = [] if is_package else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:
        return None, is_package
    if not all(part.isidentifier() for part in parts):
        return None, is_package
    return ".".join(parts), is_package
