"""Many files at once: the result cache first, then the files that need parsing spread over a pool of
processes, results back in the order the files were found.

Reading a file and the word pre-filter cost microseconds and stay in this process; what can cost
milliseconds (Python's parser, the screen, libcst) goes to the workers.

A task may come without its context (what the project index says of the file): building the index
reads every file and parses those that wrap, which most runs (a tree where no file can hold a finding)
never need. Such files get a first look by the cheap stages alone, a few at a time; the index is built
only when one of them needs the analysis, and from then on every file goes straight to it.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Deque, Iterable, List, Optional, Set, Tuple

from .analysis.project import FileContext, ProjectIndex, entry_from_first_look
from .cache import MAY_INHERIT, NEEDS_ANALYSIS, ResultCache
from .engine import (FileResult, Selection, Unsettled, first_look_verdict, lint_path, result_without_candidates,
                     settled_by_context, worth_a_look)
from .files import FileProblem, read_source, read_source_and_stat
from . import stages

if TYPE_CHECKING:
    from concurrent.futures import Executor

# concurrent.futures and multiprocessing (with logging, subprocess, tempfile...) load only when a pool
# is made: a run over a few files (pre-commit passes the changed ones) starts faster without them.

# Below this many files to parse, starting worker processes costs more than it saves.
_MIN_FILES_FOR_POOL = 4
# First looks go out this many files at a time at first, then twice as many each time, so that few
# files are looked at twice when one turns out to need the index after all.
_FIRST_LOOK_CHUNK = 4
# Contexts are made this many files at a time (a context may cost the main process a parse): the first
# files go to the workers while the main process makes the others'.
_CONTEXT_BATCH = 16


@dataclass(frozen=True)
class Task:
    path: str
    selection: Selection
    problem: Optional[str] = None  # found while walking: reported as it is
    # What the project index says about the file; None: asked of lint_files' index when the file needs it.
    context: Optional[FileContext] = FileContext()
    scope: str = "any"  # the scope the index's context is asked for
    named: bool = False  # named on the command line: its syntax is checked whatever its words say
    unsafe_fixes: bool = False  # fixing applies unsafe fixes too (its settings say so)

    def fixes_to_apply(self, options: "Options", findings) -> bool:
        """Whether fixing would change the file: a result with such findings must be computed, not cached."""
        return options.fix and any(f.applicable(self.unsafe_fixes) for f in findings)


@dataclass(frozen=True)
class Options:
    fix: bool = False
    write: bool = False
    describe_fixes: bool = False


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class _Deferred:
    """A first look's answer for a file the cheap stages cannot settle: the bytes the worker read, whether
    the file needs the analysis whatever its context (else only if it may inherit an RNN), and the index's
    entry for it when its context needs one (the worker parsed it already)."""

    source: bytes
    needs_analysis: bool = True
    entry: Optional[list] = None


@dataclass
class _Waiting:
    """A file waiting for its context: the bytes a first look read (None: not read here yet)."""

    position: int
    source: Optional[bytes] = None
    needs_analysis: bool = True


def lint_files(tasks: Iterable[Task], options: Options, jobs: int = 1, cache: Optional[ResultCache] = None,
               index: Optional[Callable[[Optional[Executor]], ProjectIndex]] = None) -> List[FileResult]:
    """Every task's result, in order. `index` builds the project index (in the given pool, if any) for
    the tasks that come without a context; it is called at most once, and only if one needs it."""
    tasks = list(tasks)
    results: List[Optional[FileResult]] = [None] * len(tasks)
    # JSON and SARIF need each fix's edits, which the cache does not keep.
    cache = cache if not options.describe_fixes else None
    ready: List[int] = []  # files with a context, for the analysis
    looks: List[int] = []  # files without one, for the cheap stages first
    deferred: List[_Waiting] = []  # files the cache says need the analysis, waiting for their context
    for position, task in enumerate(tasks):
        if task.problem is not None:
            results[position] = FileResult(task.path, problem=task.problem)
            continue
        try:
            with stages.stage("walking and reading", task.path):
                source = read_source(task.path)
                worth = worth_a_look(source, task.selection)
        except FileProblem as problem:
            results[position] = FileResult(task.path, problem=str(problem))
            continue
        if not worth:
            results[position] = _slim(result_without_candidates(source, task.path, task.selection, task.named))
            continue
        if task.context is None and index is None:
            tasks[position] = task = replace(task, context=FileContext())
        if task.context is None:
            known = cache.get_first_look(cache.first_look_key(task.path, source, task.selection, task.named), task.path,
                                         source) if cache else None
            if known == NEEDS_ANALYSIS or known == MAY_INHERIT:
                deferred.append(_Waiting(position, needs_analysis=known == NEEDS_ANALYSIS))
            elif known is not None and not task.fixes_to_apply(options, known.findings):
                results[position] = _slim(known)
            else:
                looks.append(position)
        elif not _answer_from_cache(cache, tasks[position], source, options, results, position):
            ready.append(position)  # the worker reads the file again: contents never queue up here

    files = len(ready) + len(looks) + len(deferred)
    with _Workers(jobs, files) as (pool, workers):
        _Schedule(tasks, results, options, cache, index, pool, workers, files).run(ready, looks, deferred)
    return [result for result in results if result is not None]


def _answer_from_cache(cache: Optional[ResultCache], task: Task, source: bytes, options: Options,
                       results: List[Optional[FileResult]], position: int) -> bool:
    if cache is None:
        return False
    cached = cache.get(cache.key(task.path, source, task.selection, task.context, task.named), task.path, source)
    if cached is None or task.fixes_to_apply(options, cached.findings):
        return False
    results[position] = _slim(cached)
    return True


class _Schedule:
    """Hands chunks of files to the pool, a few chunks ahead of the results, and builds the index when
    the first file that needs it comes back from a first look."""

    def __init__(self, tasks: List[Task], results: List[Optional[FileResult]], options: Options,
                 cache: Optional[ResultCache], index: Optional[Callable[[Optional[Executor]], ProjectIndex]],
                 pool: Executor, workers: int, files: int) -> None:
        self.tasks, self.results, self.options, self.cache = tasks, results, options, cache
        self.index, self.built = index, None
        # (path, index entry) from first looks that came back before the index was built
        self.entries: List[Tuple[str, list]] = []
        # Files whose first look found that they need the analysis: the screens need not run again.
        self.screened: Set[int] = set()
        self.pool, self.workers = pool, workers
        self.chunk = max(1, files // (workers * 8))
        self.look_chunk = min(_FIRST_LOOK_CHUNK, self.chunk)

    def run(self, ready: List[int], looks: List[int], deferred: List[_Waiting]) -> None:
        """`deferred`: files the cache knows to need the analysis (or to, if they may inherit an RNN)."""
        ready_queue: Deque[int] = deque(ready)
        look_queue: Deque[int] = deque(looks)
        waiting: List[_Waiting] = list(deferred)
        in_flight: Deque[Tuple[bool, List[int], Any]] = deque()  # futures
        limit = 2 * self.workers if self.workers > 1 else 1  # a few chunks ahead keeps every worker busy
        while ready_queue or look_queue or in_flight or waiting:
            if waiting:
                if self.built is None:
                    self.built = self.index(self.pool if self.workers > 1 else None)
                    for path, entry in self.entries:
                        self.built.adopt(path, entry)
                    self.entries = []
                    # Every context is known now. A file whose context costs a parse here (what its
                    # classes' bases and imports are) keeps its first look: most are settled by it, and
                    # the others bring their summaries, parsed in the worker.
                    costly = {position for position in look_queue if self.built.context_is_costly(self.tasks[position].path)}
                    waiting.extend(_Waiting(position) for position in look_queue if position not in costly)
                    look_queue = deque(position for position in look_queue if position in costly)
                batch, waiting = waiting[:_CONTEXT_BATCH], waiting[_CONTEXT_BATCH:]
                ready_queue.extend(self._with_contexts(batch))
            while len(in_flight) < limit and (ready_queue or look_queue):
                if ready_queue:
                    chunk = [ready_queue.popleft() for _ in range(min(self.chunk, len(ready_queue)))]
                    work = [(self.tasks[i].path, self.tasks[i].selection, self.options, self.tasks[i].context,
                             self.tasks[i].named, i in self.screened, self.tasks[i].unsafe_fixes) for i in chunk]
                    in_flight.append((False, chunk, self.pool.submit(_lint_chunk, work)))
                else:
                    chunk = [look_queue.popleft() for _ in range(min(self.look_chunk, len(look_queue)))]
                    self.look_chunk = min(self.look_chunk * 2, self.chunk)
                    work = [(self.tasks[i].path, self.tasks[i].selection, self.tasks[i].named) for i in chunk]
                    in_flight.append((True, chunk, self.pool.submit(_first_look_chunk, work)))
            if not in_flight or (waiting and not in_flight[0][2].done()):
                continue  # with contexts left to make, the main process waits for no worker
            first_look, chunk, future = in_flight.popleft()
            with stages.stage(stages.WAITING):
                outcomes, counts = future.result()
            stages.merge(counts)
            for position, outcome in zip(chunk, outcomes):
                if first_look:
                    self._looked(position, outcome, waiting)
                else:
                    if self.cache is not None and outcome.original is not None:
                        _remember(self.cache, self.tasks[position], outcome, self.options)
                    self.results[position] = _slim(outcome)

    def _looked(self, position: int, outcome, waiting: List[_Waiting]) -> None:
        task = self.tasks[position]
        if isinstance(outcome, _Deferred):
            waiting.append(_Waiting(position, outcome.source, outcome.needs_analysis))
            if outcome.needs_analysis:
                self.screened.add(position)
            if outcome.entry is not None:
                if self.built is None:
                    self.entries.append((task.path, outcome.entry))
                else:
                    self.built.adopt(task.path, outcome.entry)
            if self.cache is not None:
                self.cache.put_needs_analysis(self.cache.first_look_key(task.path, outcome.source, task.selection,
                                                                        task.named),
                                              may_inherit_only=not outcome.needs_analysis)
            return
        if self.cache is not None and outcome.original is not None:
            self.cache.put(self.cache.first_look_key(task.path, outcome.original, task.selection, task.named), outcome)
        self.results[position] = _slim(outcome)

    def _with_contexts(self, waiting: List[_Waiting]) -> List[int]:
        """The files given their contexts, less those the cache answers under that context and those
        settled by what they may inherit: nothing another file builds can reach them, or their context
        says that nothing of what they inherit or import builds an RNN."""
        left = []
        for item in waiting:
            position, source = item.position, item.source
            task = self.tasks[position]
            if not item.needs_analysis and not self.built.may_run_rnn_elsewhere(task.path):
                self.results[position] = FileResult(task.path)
                continue
            task = self.tasks[position] = replace(task, context=self.built.context_for(task.path, task.scope))
            if source is None and (self.cache is not None or not item.needs_analysis):
                try:
                    source = read_source(task.path)
                except FileProblem:
                    pass  # the worker reports it
            if source is not None and not item.needs_analysis and settled_by_context(task.context, task.selection):
                result = FileResult(task.path, original=source)
                if self.cache is not None:
                    self.cache.put(self.cache.key(task.path, source, task.selection, task.context, task.named), result)
                self.results[position] = _slim(result)
                continue
            if source is None or not _answer_from_cache(self.cache, task, source, self.options, self.results, position):
                left.append(position)
        return left


def _slim(result: FileResult) -> FileResult:
    """The result without the file's content unless output shows it (source lines, diffs): memory stays
    flat however many files there are."""
    if not result.findings and result.fixed is None:
        result.original = None
    return result


class _InProcess:
    """Runs each call as it is submitted, with the part of an executor's interface the schedule uses:
    one code path for one process and many."""

    def submit(self, function, *args, **kwargs) -> "_Done":
        try:
            return _Done(function(*args, **kwargs))
        except Exception as error:  # handed to whoever asks for the result, as a pool's future would
            return _Done(error=error)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class _Done:
    def __init__(self, value: Any = None, error: Optional[BaseException] = None) -> None:
        self.value, self.error = value, error

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class _Workers:
    """The pool for `files` files: worker processes, or this process where they would not pay."""

    def __init__(self, jobs: int, files: int) -> None:
        self.count = min(jobs, files)
        if self.count < 2 or files < _MIN_FILES_FOR_POOL:
            self.count, self.pool = 1, _InProcess()
        else:
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.count, mp_context=_context(),
                                            initializer=stages.forget_inherited)

    def __enter__(self) -> Tuple["Executor", int]:
        return self.pool, self.count

    def __exit__(self, *exc_info) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _context():
    # fork shares what this process already imported; elsewhere the platform's default start method.
    if sys.platform.startswith("linux"):
        import multiprocessing

        return multiprocessing.get_context("fork")
    return None


def _lint_chunk(work: List[Tuple[str, Selection, Options, FileContext, bool, bool, bool]]):
    """The chunk's results, with the worker's stage counts (`--stats`) since its last chunk."""
    with stages.stage("other"):
        return [_lint_one(item) for item in work], stages.take()


def _lint_one(item: Tuple[str, Selection, Options, FileContext, bool, bool, bool]) -> FileResult:
    path, selection, options, context, named, screened, unsafe_fixes = item
    result = lint_path(path, selection, fix=options.fix, write=options.write, describe_fixes=options.describe_fixes,
                       context=context, check_syntax=named, screened=screened, unsafe_fixes=unsafe_fixes)
    # Syntax-tree edits stay in the worker: they are large and only the applying process needs them.
    return replace(result, findings=[finding.detached() for finding in result.findings])


def _first_look_chunk(work: List[Tuple[str, Selection, bool]]):
    with stages.stage("other"):
        return [_first_look_one(path, selection, named) for path, selection, named in work], stages.take()


def _first_look_one(path: str, selection: Selection, named: bool = False):
    """The file's result if the cheap stages settle it, else _Deferred with what was read."""
    try:
        with stages.stage("walking and reading", path):
            source, stat = read_source_and_stat(path)
    except FileProblem as problem:
        return FileResult(path, problem=str(problem))
    verdict = first_look_verdict(source, path, selection, named)
    if not isinstance(verdict, Unsettled):
        return verdict
    return _Deferred(source, verdict.needs_analysis,
                     entry_from_first_look(path, source, stat.st_size, stat.st_mtime_ns, verdict.tree))


def _remember(cache: ResultCache, task: Task, result: FileResult, options: Options) -> None:
    """Store the answer under the content the worker actually read (result.original); never a failed write,
    which says nothing about what a later run finds."""
    if result.write_failed:
        return
    if result.fixed is None:
        if not task.fixes_to_apply(options, result.findings):
            cache.put(cache.key(task.path, result.original, task.selection, task.context, task.named), result)
    elif options.write and result.problem is None:
        # What is left in the file as written is the lint result of its new content.
        cache.put(cache.key(task.path, result.fixed, task.selection, task.context, task.named), replace(result, note=None))
