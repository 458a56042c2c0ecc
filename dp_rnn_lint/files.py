"""Finding the files to lint, reading them as bytes, and writing fixes without ever losing one."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from pathlib import Path
from typing import Dict, Iterable, Iterator, Optional, Sequence, Set, Tuple

from . import notebooks

# What a folder walk lints: Python files and Jupyter notebooks (read as their code cells).
LINTED_SUFFIXES = (".py", notebooks.NOTEBOOK_SUFFIX)

# Files that mark a project's root, as the CLI and the flake8 plugin look for it from a linted file upward.
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")

# Folders nobody wants linted: VCS data, caches, virtual environments, build output.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".eggs", "__pycache__",
    "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".dp-rnn-lint-cache",
)


class FileProblem(Exception):
    """A file that cannot be read, decoded, parsed or written: one line for the user."""


def matches_pattern(path: str, pattern: str, root: Optional[Path] = None) -> bool:
    """A file pattern matches the file's (or folder's) name, its path from `root` (default: the current
    folder) or from anywhere below it (`models/legacy` matches `src/models/legacy`), or its absolute path."""
    return _matches_any(_pattern_subjects(path, root), (pattern,))


def _pattern_subjects(path: str, root: Optional[Path]) -> Tuple[str, str, str]:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root or os.getcwd()).replace(os.sep, "/")
    return os.path.basename(absolute), relative, absolute


def _matches_any(subjects: Tuple[str, str, str], patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    whole, below = _compiled_patterns(tuple(patterns))
    name, relative, absolute = (os.path.normcase(subject) for subject in subjects)
    return bool(whole.match(name) or whole.match(relative) or below.match(relative) or whole.match(absolute))


@functools.lru_cache(maxsize=64)
def _compiled_patterns(patterns: Tuple[str, ...]) -> Tuple["re.Pattern[str]", "re.Pattern[str]"]:
    """The patterns as fnmatch reads them, each set joined into one expression: a walk asks about every
    path it meets, and one match per subject costs far less than one fnmatch call per pattern."""
    plain = [os.path.normcase(pattern.rstrip("/")) for pattern in patterns]
    whole = re.compile("|".join(fnmatch.translate(pattern) for pattern in plain))
    below = re.compile("|".join(fnmatch.translate(os.path.normcase(f"*/{pattern}")) for pattern in plain))
    return whole, below


def excluded_path(path: str, patterns: Sequence[str], root: Optional[Path] = None) -> bool:
    """Whether the path, or a folder it lies in below `root` (default: the current folder), matches an
    exclusion pattern. Folders above `root` do not count: a checkout under `~/build/` is not excluded."""
    top = Path(os.path.abspath(root or os.getcwd()))
    current = Path(os.path.abspath(path))
    for each in (current, *current.parents):
        if each == top or top not in each.parents:
            return each == current and _matches_any(_pattern_subjects(str(each), root), patterns)
        if _matches_any(_pattern_subjects(str(each), root), patterns):
            return True
    return False


def discover(paths: Iterable[str], exclude: Sequence[str] = DEFAULT_EXCLUDES, root: Optional[Path] = None,
             respect_gitignore: bool = False, force_exclude: bool = False) -> Iterator[Tuple[str, Optional[str]]]:
    """Yield (path, problem) for every Python file and notebook under the given paths, in a stable order.

    A file given explicitly is linted whatever its name, unless force_exclude (for pre-commit, which
    names every file); folders are walked for `*.py` and `*.ipynb` files, skipping virtual environments, anything
    matching `exclude` (patterns relative to `root`) and, with respect_gitignore, what git ignores.
    """
    for given in paths:
        start = Path(given)
        if force_exclude and excluded_path(given, exclude, root):
            continue
        try:
            if start.is_dir():
                visible = git_visible_paths(start) if respect_gitignore else None
                walk = _Walk(tuple(exclude), root, visible, os.path.realpath(start))
                absolute = os.path.abspath(start)
                relative = os.path.relpath(absolute, walk.base).replace(os.sep, "/")
                yield from _walk(str(start), walk, absolute, relative, "")
                continue
            if start.is_symlink() and not start.exists():
                yield str(start), "broken symbolic link"
            elif not start.exists():
                yield str(start), "no such file or directory"
            elif not stat.S_ISREG(start.stat().st_mode):
                yield str(start), "not a regular file"  # a FIFO or device would block or never end
            else:
                yield str(start), None
        except OSError as error:
            yield str(start), f"cannot access: {error.strerror or error}"


def git_visible_paths(folder: Path) -> Optional[Set[str]]:
    """Files under `folder` that git does not ignore (tracked or not), and their folders, relative to
    `folder`; None when it is not in a git work tree or git is not installed."""
    import subprocess  # here, not at the top: most runs that need no git never load it

    try:
        listed = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True, timeout=120, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    if not listed.stdout and _git_ignores_folder(folder):
        return None  # a folder git ignores was named on purpose: it is walked as if git did not know it
    visible: Set[str] = set()
    for name in listed.stdout.split(b"\0"):
        if name:
            relative = os.fsdecode(name)
            visible.add(relative)
            parent = os.path.dirname(relative)
            while parent and parent not in visible:
                visible.add(parent)
                parent = os.path.dirname(parent)
    return visible


def _git_ignores_folder(folder: Path) -> bool:
    import subprocess

    try:
        checked = subprocess.run(["git", "-C", str(folder), "check-ignore", "-q", "."], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return checked.returncode == 0


# The project markers each walked folder's listing held, by absolute folder: the project root of a walked
# file is then found without a stat per marker and folder.
_markers_listed: Dict[str, Tuple[str, ...]] = {}


class _Walk:
    def __init__(self, patterns: Tuple[str, ...], root: Optional[Path], visible: Optional[Set[str]], top: str) -> None:
        # A pattern that is a plain name (most are: `build`, `.venv`) can match only an entry of that name,
        # whatever the path: a set answers it. The others are matched against every path of the entry.
        names, path_patterns = set(), []
        for pattern in patterns:
            if _PATH_OR_GLOB.search(pattern.rstrip("/")):
                path_patterns.append(pattern)
            else:
                names.add(os.path.normcase(pattern.rstrip("/")))
        self.excluded_names = frozenset(names)
        self.path_patterns = tuple(path_patterns)
        self.base = os.path.abspath(root or os.getcwd())  # exclusion patterns are relative to it
        self.visible = visible  # paths git does not ignore, relative to the walked folder
        self.top = top  # the walked folder, resolved: file symlinks must point inside it


# What makes an exclusion pattern more than a name: a folder separator or a glob character.
_PATH_OR_GLOB = re.compile(r"[*?\[/]" if os.sep == "/" else r"[*?\[/\\]")


def _walk(folder: str, walk: _Walk, absolute: str, relative: str, below_start: str
          ) -> Iterator[Tuple[str, Optional[str]]]:
    """`absolute`: the folder's absolute path; `relative`: its path from the exclusion patterns' base;
    `below_start`: its path from the walked folder ("" for that folder). Each entry's paths are the folder's
    joined with its name: one `abspath`/`relpath` per entry would cost more than the rest of a warm run."""
    # Folder symlinks are never followed, and a file symlink only when it points inside the folder
    # given on the command line: walking `models/` must not lint (or fix) files elsewhere.
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        yield folder, f"cannot list folder: {error.strerror or error}"
        return
    if below_start and any(entry.name == "pyvenv.cfg" and _is_file(entry) for entry in entries):
        return  # a virtual environment below the walked folder
    _markers_listed[absolute] = tuple(entry.name for entry in entries if entry.name in PROJECT_MARKERS)
    for entry in entries:
        name = entry.name
        if os.path.normcase(name) in walk.excluded_names:
            continue
        entry_absolute = os.path.join(absolute, name)
        entry_relative = name if relative == os.curdir else f"{relative}/{name}"
        if walk.path_patterns and _matches_any((name, entry_relative, entry_absolute), walk.path_patterns):
            continue
        entry_below_start = f"{below_start}/{name}" if below_start else name
        if walk.visible is not None and entry_below_start not in walk.visible:
            continue
        path = name if folder == os.curdir else os.path.join(folder, name)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir:
            yield from _walk(path, walk, entry_absolute, entry_relative, entry_below_start)
        elif name.endswith(LINTED_SUFFIXES):
            try:
                # The directory entry's type says "regular file" without a stat, except behind a symlink.
                is_file = entry.is_file() and (not entry.is_symlink() or stat.S_ISREG(entry.stat().st_mode))
            except OSError:
                is_file = False
            if is_file and entry.is_symlink() and not _inside(os.path.realpath(path), walk.top):
                continue
            if is_file:
                yield path, None
            elif entry.is_symlink():
                yield path, "broken symbolic link (or a symbolic link loop)"


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def read_source(path: str) -> bytes:
    """The file's bytes; for a notebook, the Python view of its code cells (see notebooks.py)."""
    raw = read_bytes(path)
    if not notebooks.is_notebook(path):
        return raw
    try:
        return notebooks.view_of(raw)
    except notebooks.NotebookProblem as error:
        raise FileProblem(str(error)) from error


def read_source_or_none(path: str) -> Optional[bytes]:
    """The file's source (a notebook's Python view), or None when it cannot be read: for a look at
    another file, whose own linting reports the problem."""
    try:
        return read_source(path)
    except FileProblem:
        return None


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise FileProblem(f"cannot read: {error.strerror or error}") from error


def read_source_and_stat(path: str) -> Tuple[bytes, os.stat_result]:
    """The file's bytes and its stat, taken before the read: a file changed meanwhile then never matches
    what is recorded of it (size, mtime)."""
    try:
        found = os.stat(path)
    except OSError as error:
        raise FileProblem(f"cannot read: {error.strerror or error}") from error
    return read_source(path), found


def write_atomically(path: str, data: bytes, expected_original: bytes) -> None:
    """Replace the file's content in one step, keeping its mode; refuse when it changed on disk.
    For a notebook, `data` and `expected_original` are Python views: the changed cells are spliced
    into the notebook's JSON."""
    raw = current = read_bytes(path)
    notebook = None
    if notebooks.is_notebook(path):
        try:
            notebook = notebooks.parse_notebook(raw)
            current = notebooks.python_view(notebook)
        except notebooks.NotebookProblem:
            current = None  # it was a readable notebook when it was linted
    if current != expected_original:
        raise FileProblem("changed on disk while it was being fixed; not overwritten")
    if notebook is not None:
        try:
            data = notebooks.with_fixed_view(notebook, expected_original, data)
        except notebooks.NotebookProblem as error:
            raise FileProblem(str(error)) from error
    target = os.path.realpath(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as error:
        raise FileProblem(f"cannot write: {error.strerror or error}") from error
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # os.replace would swap even a read-only file; its mode says the user does not want that.
        raise FileProblem("read-only file; not fixed")
    try:
        replace_atomically(target, data, prefix=".dp-rnn-lint-", mode=mode, durable=True)
    except OSError as error:
        raise FileProblem(f"cannot write: {error.strerror or error}") from error


def replace_atomically(target: str, data: bytes, prefix: str, mode: Optional[int] = None, durable: bool = False) -> None:
    """Write `data` to a temporary file beside `target`, then swap it in: readers see the old content or
    the new, never half of it, and a failure leaves no temporary file behind. `durable` syncs the data to
    disk first (a user's file; a cache entry can be lost without harm). Raises OSError."""
    import tempfile  # here, not at the top: most runs write nothing

    descriptor, temporary = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=os.path.dirname(target) or ".")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def prepare_cache_folder(versioned: Path) -> bool:
    """Create a cache's version folder (the result cache's and the index's); False when it cannot be written."""
    try:
        versioned.mkdir(parents=True, exist_ok=True)
        top = versioned.parent
        # As ruff does for its cache: git ignores the folder, and backup tools know it is a cache.
        for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")):
            if not (top / name).exists():
                (top / name).write_text(text)
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """This installation's version and the size and mtime of each of its own modules: cached results are
    kept under it, so that a changed linter (an editable install, a development version that kept its
    number) never answers with what an older one found."""
    import zlib  # not hashlib: loading OpenSSL costs a twentieth of a repeated run, and nobody forges a module's mtime

    from . import __version__

    package = os.path.dirname(os.path.abspath(__file__))
    stamps = []
    for folder, subfolders, names in os.walk(package):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")  # the source alone counts
        for name in sorted(names):
            if name.endswith(".py"):
                try:
                    info = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                relative = os.path.relpath(os.path.join(folder, name), package)
                stamps.append(f"{relative}:{info.st_size}:{info.st_mtime_ns}\0")
    stamped = "".join(stamps).encode("utf-8", "surrogateescape")
    return f"{__version__}-{zlib.crc32(stamped):08x}{zlib.adler32(stamped):08x}"


def project_root(path: str) -> Optional[Path]:
    """The nearest folder upward from `path` holding pyproject.toml, setup.cfg, setup.py or .git."""
    return _folder_project_root(os.path.dirname(os.path.abspath(path)))


@functools.lru_cache(maxsize=4096)
def _folder_project_root(folder: str) -> Optional[Path]:
    """Asked once per folder and process, each folder's answer built on its parent's: a run over a tree
    asks for every file."""
    markers = _markers_listed.get(folder, PROJECT_MARKERS)
    if any(os.path.exists(os.path.join(folder, marker)) for marker in markers):
        return Path(folder)
    parent = os.path.dirname(folder)
    return None if parent == folder else _folder_project_root(parent)


def module_name_for(path: str) -> Tuple[Optional[str], bool]:
    """The dotted module name a file is imported as (walking up through packages), and whether
    it is a package's __init__; used to resolve relative imports."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    stem, suffix = os.path.splitext(name)
    if suffix != ".py":
        return None, False
    is_package = stem == "__init__"
    parts = list(_package_parts(folder)) + ([] if is_package else [stem])
    if not parts or not all(part.isidentifier() for part in parts):
        return None, is_package
    return ".".join(parts), is_package


def resolve_relative_import(module: Optional[str], is_package: bool, level: int, target: Optional[str]) -> Optional[str]:
    """The absolute module `from .target import x` (level dots) names, seen from `module`; None when it
    cannot be told (no module name, or more dots than packages)."""
    if module is None:
        return None
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if target:
        base = base + target.split(".")
    return ".".join(base) if base else None


@functools.lru_cache(maxsize=4096)
def _package_parts(folder: str) -> Tuple[str, ...]:
    """The package names a folder's files are imported under: its own and its parents' while they hold
    an __init__.py (cached: every file of a folder asks the same question)."""
    parent, name = os.path.split(folder)
    if parent == folder or not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ()
    return _package_parts(parent) + (name,)
