"""Many files at once: the result cache first, then the files that need parsing spread over a pool of
processes, results back in the order the files were found.

Reading a file and the word pre-filter cost microseconds and stay in this process; what can cost
milliseconds (Python's parser, the screen, libcst) goes to the workers.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, List, Optional, Tuple

from .analysis.project import FileContext
from .cache import ResultCache
from .engine import FileResult, Selection, lint_path, lint_source, may_contain_candidates
from .files import FileProblem, read_source

# Below this many files to parse, starting worker processes costs more than it saves.
_MIN_FILES_FOR_POOL = 4


@dataclass(frozen=True)
class Task:
    path: str
    selection: Selection
    problem: Optional[str] = None  # found while walking: reported as it is
    context: FileContext = FileContext()  # what the project index says about the file


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


def lint_files(tasks: Iterable[Task], options: Options, jobs: int = 1,
               cache: Optional[ResultCache] = None) -> List[FileResult]:
    tasks = list(tasks)
    results: List[Optional[FileResult]] = [None] * len(tasks)
    pending: List[int] = []
    # JSON and SARIF need each fix's edits, which the cache does not keep.
    cache = cache if not options.describe_fixes else None
    for index, task in enumerate(tasks):
        if task.problem is not None:
            results[index] = FileResult(task.path, problem=task.problem)
            continue
        try:
            source = read_source(task.path)
        except FileProblem as problem:
            results[index] = FileResult(task.path, problem=str(problem))
            continue
        if not may_contain_candidates(source):
            results[index] = _slim(lint_source(source, task.path, task.selection, context=task.context))  # never parsed
            continue
        cached = cache.get(cache.key(task.path, source, task.selection, task.context), task.path, source) if cache else None
        if cached is not None and not (options.fix and any(f.fixable for f in cached.findings)):
            results[index] = _slim(cached)
        else:
            pending.append(index)  # the worker reads the file again: contents never queue up here

    work = [(tasks[index].path, tasks[index].selection, options, tasks[index].context) for index in pending]
    for index, result in zip(pending, _run(work, jobs)):
        if cache is not None and result.original is not None:
            _remember(cache, tasks[index], result, options)
        results[index] = _slim(result)
    return [result for result in results if result is not None]


def _slim(result: FileResult) -> FileResult:
    """The result without the file's content unless output shows it (source lines, diffs): memory stays
    flat however many files there are."""
    if not result.findings and result.fixed is None:
        result.original = None
    return result


def _run(work: List[Tuple[str, Selection, Options, FileContext]], jobs: int) -> Iterator[FileResult]:
    workers = min(jobs, len(work))
    if workers < 2 or len(work) < _MIN_FILES_FOR_POOL:
        yield from map(_lint_one, work)
        return
    chunk = max(1, len(work) // (workers * 8))
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        yield from pool.map(_lint_one, work, chunksize=chunk)


def _context():
    # fork shares what this process already imported; elsewhere the platform's default start method.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return None


def _lint_one(item: Tuple[str, Selection, Options, FileContext]) -> FileResult:
    path, selection, options, context = item
    result = lint_path(path, selection, fix=options.fix, write=options.write, describe_fixes=options.describe_fixes,
                       context=context)
    # Syntax-tree edits stay in the worker: they are large and only the applying process needs them.
    return replace(result, findings=[finding.detached() for finding in result.findings])


def _remember(cache: ResultCache, task: Task, result: FileResult, options: Options) -> None:
    """Store the answer under the content the worker actually read (result.original)."""
    if result.fixed is None:
        if not options.fix or not any(f.fixable for f in result.findings):
            cache.put(cache.key(task.path, result.original, task.selection, task.context), result)
    elif options.write and result.problem is None:
        # What is left in the file as written is the lint result of its new content.
        cache.put(cache.key(task.path, result.fixed, task.selection, task.context), replace(result, note=None))
