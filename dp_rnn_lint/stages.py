"""Where a run's time goes, stage by stage (`dp-rnn-lint --stats`, as pyright's `--stats`).

Each stage's time is exclusive: a stage entered inside another (Python's parser inside the index's
summaries) pauses the outer one, so the rows add up to the work done. Worker processes keep their own
counts and hand them back with their results (`take`); the main process adds them up (`merge`). When
`--stats` is off, entering a stage is one test of a module flag.
"""

from __future__ import annotations

import os
import time
import types
from typing import Dict, List, Optional, Set, Tuple

import dp_rnn_lint as _package

# The stages in the order a file meets them.
STAGE_NAMES: Tuple[str, ...] = (
    "start-up and imports",  # the interpreter's start and imports, to the command line parsed
    "walking and reading",  # finding the files, reading their bytes, the cheapest word test
    "text screen",  # the word and text tests of a first look
    "python parse",  # Python's `ast` parser, wherever it runs
    "ast screen",  # the screens on Python's tree
    "index summaries",  # the project index's summary of a file
    "index build and contexts",  # wrap sites, what they wrap, each file's context
    "model",  # binding files and the evaluator's answers
    "libcst parse",  # libcst's parser, for the files that reach the rules
    "file model",  # module classes and forward paths on libcst
    "rules",  # the rules' own work
    "fixes",  # applying fixes and checking the fixed code
    "other",  # the rest: handing out work, the engine's glue, reports
)
# The main process waiting for its workers: shown, not counted as work.
WAITING = "waiting for workers"
# Set in the environment too, so that workers started by `spawn` (not only `fork`) count.
_ENVIRONMENT_FLAG = "DP_RNN_LINT_STATS"

# CPU time of the process, not wall time: on a loaded machine (more processes than cores) a stage's
# wall time would include the time it waited for a core.
_clock = time.process_time
_PACKAGE_IMPORTED = _package.IMPORT_STARTED
_enabled = os.environ.get(_ENVIRONMENT_FLAG) == "1"
_seconds: Dict[str, float] = {}
_files: Dict[str, Set[str]] = {}
_entries: Dict[str, int] = {}
_stack: List[Tuple[str, Optional[str]]] = []  # the open stages, innermost last, with their files
_since = 0.0


def forget_inherited() -> None:
    """A worker pool's initializer: a forked worker's counts and open stages are its parent's to report.
    (Not os.register_at_fork: a handler registered there made whole runs without a fork 7% slower,
    measured on the real-models corpus with one job.)"""
    global _seconds, _files, _entries, _stack
    _seconds, _files, _entries, _stack = {}, {}, {}, []


def enable() -> None:
    global _enabled
    if not _enabled:
        for cls, name in _COUNTED_CLASSES:
            _count_methods(cls, name)
    _enabled = True
    os.environ[_ENVIRONMENT_FLAG] = "1"
    _add("start-up and imports", _clock())  # the interpreter's start counts too


class _Stage:
    __slots__ = ("name", "path")

    def __init__(self, name: str, path: Optional[str]) -> None:
        self.name, self.path = name, path

    def __enter__(self) -> None:
        global _since
        now = _clock()
        outer, outer_path = _stack[-1] if _stack else (None, None)
        if outer is not None:
            _add(outer, now - _since)
        # A stage that does not know its file works for the file of the stage around it, if that knows.
        path = self.path if self.path is not None else outer_path
        _stack.append((self.name, path))
        _since = now
        if outer != self.name:  # a stage entered again inside itself is the same entry
            _entries[self.name] = _entries.get(self.name, 0) + 1
        if path is not None:
            _files.setdefault(self.name, set()).add(path)

    def __exit__(self, *exc_info) -> None:
        global _since
        now = _clock()
        _add(_stack.pop()[0], now - _since)
        _since = now


class _Off:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        pass


_OFF = _Off()


def stage(name: str, path: Optional[str] = None):
    """A context manager counting the time inside it (less any stage inside it) under `name`, and the
    file `path`, if given, as one that reached the stage."""
    return _Stage(name, path) if _enabled else _OFF


# Classes whose public methods count as a stage once counting is on: (class, stage).
_COUNTED_CLASSES: List[Tuple[type, str]] = []


def counted_methods(name: str):
    """A class decorator: once `--stats` is on, calls of the class's public methods (and of its
    constructor) are in stage `name`. The wrappers are put in only then: the evaluator's methods call each
    other tens of thousands of times a run, and a wrapper that only tests a flag still costs a few percent."""
    def decorate(cls):
        _COUNTED_CLASSES.append((cls, name))
        if _enabled:
            _count_methods(cls, name)
        return cls
    return decorate


def _count_methods(cls: type, name: str) -> None:
    for attribute, value in list(vars(cls).items()):
        # Plain functions only: a staticmethod, classmethod or property wrapped so would bind differently.
        if isinstance(value, types.FunctionType) and (attribute == "__init__" or not attribute.startswith("_")):
            setattr(cls, attribute, _counted(name, value))


def _counted(name: str, function):
    """`function`, its every call in stage `name` (put in only once counting is on)."""
    def wrapper(*args, **kwargs):
        with _Stage(name, None):
            return function(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = function.__name__, function.__doc__, function
    return wrapper


def _add(name: str, seconds: float) -> None:
    _seconds[name] = _seconds.get(name, 0.0) + seconds


Counts = Tuple[Dict[str, float], Dict[str, Set[str]], Dict[str, int]]


def take() -> Optional[Counts]:
    """This process's counts since the last take (None when off), for a worker to hand back."""
    global _seconds, _files, _entries, _since
    if not _enabled:
        return None
    taken = (_seconds, _files, _entries)
    _seconds, _files, _entries = {}, {}, {}
    if _stack:  # the open stage's time so far goes with these counts; it keeps counting from now
        now = _clock()
        open_stage = _stack[-1][0]
        taken[0][open_stage] = taken[0].get(open_stage, 0.0) + now - _since
        _since = now
    return taken


def merge(counts: Optional[Counts]) -> None:
    """Add a worker's counts to this process's."""
    if counts is None:
        return
    seconds, files, entries = counts
    for name, value in seconds.items():
        _add(name, value)
    for name, value in entries.items():
        _entries[name] = _entries.get(name, 0) + value
    for name, paths in files.items():
        _files.setdefault(name, set()).update(paths)


def table(wall_seconds: float, jobs: int) -> str:
    """The counts as a table: for each stage the files that reached it (where it knows them), how many
    times it was entered, and its seconds summed over every process."""
    work = sum(seconds for name, seconds in _seconds.items() if name != WAITING)
    rows = [("stage", "files", "entered", "seconds", "share")]
    for name in STAGE_NAMES:
        seconds = _seconds.get(name, 0.0)
        files = _files.get(name)
        rows.append((name, str(len(files)) if files is not None else "-", str(_entries.get(name, 0)),
                     f"{seconds:.3f}", f"{100 * seconds / (work or 1.0):.0f}%"))
    rows.append(("all stages", "-", "-", f"{work:.3f}", "100%"))
    width = max(len(row[0]) for row in rows)
    lines = [f"{name:<{width}}  {files:>6}  {entered:>8}  {seconds:>8}  {share:>5}"
             for name, files, entered, seconds, share in rows]
    lines.append(f"wall time {wall_seconds:.3f} s, {jobs} job{'s' if jobs != 1 else ''}; stage seconds are summed "
                 f"over every process; the main process waited {_seconds.get(WAITING, 0.0):.3f} s for workers")
    return "\n".join(lines) + "\n"


def wall_seconds() -> float:
    """Wall seconds since the package's first import."""
    return time.perf_counter() - _PACKAGE_IMPORTED
