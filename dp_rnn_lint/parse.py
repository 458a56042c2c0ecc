"""Reading a file's text and building its syntax trees: decoding as Python does, Python's own verdict on the
syntax, libcst's parse (with its node checks off where Python already accepted the source), and a thread
with a deep stack for deeply nested code. Below the engine; knows nothing of rules or findings.
"""

from __future__ import annotations

import ast
import io
import sys
import threading
import tokenize
import warnings
from typing import TYPE_CHECKING, Callable, Optional, Tuple, Union

from . import stages
from .files import FileProblem

if TYPE_CHECKING:
    import libcst as cst


# Larger files that could hold an RNN are skipped with a note: analysis costs about 25 s per MiB, and
# source files this large are generated code, not hand-written models.
MAX_FILE_BYTES = 1024 * 1024


def source_encoding(source: bytes) -> str:
    """The encoding Python reads the file in (PEP 263 cookie, BOM, UTF-8 by default); text written back
    in it keeps the file's bytes elsewhere."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:
        raise FileProblem(f"cannot decode: {error}") from error
    return encoding


def decode(source: bytes) -> str:
    """The text of a file, decoded as Python would (PEP 263 cookie, BOM, UTF-8 by default)."""
    encoding = source_encoding(source)
    try:
        return source.decode(encoding)
    except UnicodeDecodeError as error:
        line = source[: error.start].count(b"\n") + 1
        raise FileProblem(
            f"cannot decode: byte 0x{source[error.start]:02x} on line {line} is not valid {encoding} "
            "(add a coding cookie if the file uses another encoding)"
        ) from error
    except LookupError as error:
        raise FileProblem(f"cannot decode: unknown encoding {encoding!r}") from error


def check_readable(source: Union[str, bytes]) -> None:
    """FileProblem for a file that is not text at all: NUL bytes, or bytes that do not decode."""
    if ("\0" if isinstance(source, str) else b"\0") in source:
        raise FileProblem("cannot parse: the file contains NUL bytes (is it a binary file?)")
    if isinstance(source, bytes):
        decode(source)


def python_verdict(source: Union[str, bytes]) -> Tuple[Optional[ast.Module], Optional[str], bool]:
    """What Python's own parser says of the source: (its tree, or None; its error in the user's words,
    or None; whether the error is nesting too deep for it).

    Judged at Python's default recursion limit (files are handled with a higher one): what plain
    Python cannot compile for depth is refused before libcst's native parser, which can crash the
    whole process (SIGSEGV) on a few thousand levels, or spend minutes on it.
    """
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT)
    try:
        with warnings.catch_warnings(), stages.stage("python parse"):
            warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours to print
            tree = ast.parse(source)
    except (RecursionError, MemoryError):
        return None, "cannot parse: nested too deeply for Python's parser", True
    except SyntaxError as error:
        position = f"{error.lineno}:{(error.offset or 0) or 1}: " if error.lineno else ""
        return None, f"{position}cannot parse: {error.msg}", "too many nested" in str(error.msg)
    except ValueError as error:
        return None, f"cannot parse: {error}", False
    finally:
        sys.setrecursionlimit(limit)
    return tree, None, False


def parses(source: Union[str, bytes]) -> bool:
    """Whether Python's parser accepts the source, asked without building its tree: `symtable` parses and
    reads scopes at about a third of ast.parse's cost. True means ast.parse would succeed too; False
    (a syntax error, or one only the compiler's scope rules raise, or nesting) means: ask ast.parse."""
    import symtable

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT)  # as python_verdict judges depth
    try:
        with warnings.catch_warnings(), stages.stage("python parse"):
            warnings.simplefilter("ignore")
            symtable.symtable(source, "<source>", "exec")
    except Exception:  # SyntaxError, RecursionError, MemoryError, ValueError: ast.parse gives the verdict
        return False
    finally:
        sys.setrecursionlimit(limit)
    return True


def parse(source: Union[str, bytes], path: str) -> cst.Module:
    """The module's syntax tree; FileProblem with one line for the user when there is none."""
    check_readable(source)
    _, python_error, too_deep = python_verdict(source)
    if too_deep:
        raise FileProblem(python_error)
    return parse_with_libcst(source, python_error)


def parse_with_libcst(source: Union[str, bytes], python_error: Optional[str]) -> cst.Module:
    import libcst as cst

    # Other errors of Python's parser still go to libcst, which knows newer syntax than this Python;
    # when libcst fails too, Python's wording is the one users know.
    try:
        with stages.stage("libcst parse"):
            if python_error is None:
                return parse_unchecked(source)
            return cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        if python_error:
            raise FileProblem(python_error) from error
        message = str(error.message).strip().splitlines()[0] if error.message else "invalid syntax"
        raise FileProblem(f"{error.raw_line}:{error.raw_column + 1}: cannot parse: {message}") from error
    except (SyntaxError, ValueError) as error:
        raise FileProblem(python_error or f"cannot parse: {error}") from error
    except RecursionError as error:
        raise FileProblem("cannot parse: nested too deeply") from error


# libcst checks every node as it is built (CSTNode.__post_init__ calls _validate), about an eighth of a
# parse. Nodes its parser builds from source that Python's parser accepted pass those checks, as
# libcst's own note on __post_init__ observes, so a parse of such source turns them off. Nodes built
# meanwhile on other threads go unchecked too, which only loses a check, never changes a node.
_checks_lock = threading.Lock()
_unchecked_parses = 0
_node_checks: Optional[Callable] = None  # libcst's CSTNode.__post_init__, while parses have it off


def _skip_node_checks(node: object) -> None:
    pass


def parse_unchecked(source: Union[str, bytes]) -> cst.Module:
    import libcst as cst

    global _unchecked_parses, _node_checks
    with _checks_lock:
        if _unchecked_parses == 0:
            _node_checks = cst.CSTNode.__dict__.get("__post_init__")
            if _node_checks is not None:
                cst.CSTNode.__post_init__ = _skip_node_checks
        _unchecked_parses += 1
    try:
        return cst.parse_module(source)
    finally:
        with _checks_lock:
            _unchecked_parses -= 1
            if _unchecked_parses == 0 and _node_checks is not None:
                cst.CSTNode.__post_init__ = _node_checks


def too_large(source: Union[str, bytes]) -> Optional[str]:
    size = len(source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source)
    if size > MAX_FILE_BYTES:
        return f"skipped: {size / 1024 / 1024:.1f} MiB is over the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit for one file"
    return None


# libcst's native parser and its visitors recurse once per level of nesting, and some valid code is
# deep (a `a or b or ...` chain of ten thousand terms): on the default 8 MiB stack that is a
# segmentation fault that kills the whole run. Each file is therefore handled on a thread with a
# large stack (reserved, not used, unless needed) and a high recursion limit.
_STACK_BYTES = 512 * 1024 * 1024
_RECURSION_LIMIT = 60_000
_PYTHON_RECURSION_LIMIT = 1000
_stack_lock = threading.Lock()


def run_with_deep_stack(function, *args, **kwargs):
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # handed back to the caller's thread below
            outcome["error"] = error

    with _stack_lock:
        previous_size = threading.stack_size(_STACK_BYTES)
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, _RECURSION_LIMIT))
        try:
            thread = threading.Thread(target=target, name="dp-rnn-lint-file")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(previous_size)
            sys.setrecursionlimit(previous_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
