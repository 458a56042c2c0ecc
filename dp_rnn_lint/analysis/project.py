"""The project index: which module classes DataParallel wraps, across files.

A class is defined in `model.py`, wrapped in `train.py`, and its RNN sits three submodules down: no
single file says whether it runs on DataParallel replicas. The index reads the project with Python's
`ast` (never libcst) and answers:

- every wrap site (`nn.DataParallel(X(...))`, `DataParallel(model, ...)` where `model = X(...)` or
  `model = build()` and `build` returns `X(...)`, `.cuda()`/`.to()` chains, `self.net = ...`, and
  `torch.nn.parallel.data_parallel(module, inputs)`) with the classes it wraps, or why it cannot tell;
- the wrapped set: each wrapped class, the classes reachable from it through submodules (any class of
  the project constructed in its methods, containers and factories included) and its bases.

Work is lazy: only files that mention DataParallel are parsed up front; others only when a name leads
there. Each file's summary (plain JSON) is cached on disk by path, size and mtime.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..files import (code_fingerprint, module_name_for, prepare_cache_folder, project_root, read_source_or_none,
                     replace_atomically, resolve_relative_import)
from .. import stages
from ..notebooks import cell_starts, in_cell, is_notebook
from .ast_walk import child_nodes
from .screen import closed_under, may_inherit_text
from .torch_names import MODULE_METHODS_RETURNING_SELF, PLAIN_BASES, canonical, is_module_base, rnn_kind, wrapped_module
from .values import RnnKind, Why

# What DataParallel is called under torch's public spellings; the function form takes the module first too.
DATA_PARALLEL_NAMES = frozenset({
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.data_parallel",
    "torch.nn.parallel.data_parallel.data_parallel",
})
# A file can only hold a wrap site where DataParallel (or data_parallel) is called, imported under
# another name, or aliased; a mention in prose (torch's own docstrings are full of them) is not one.
# `_replicate_for_data_parallel(` and `DistributedDataParallel(` are not wraps: the name must stand alone.
_WRAP_TEXT = re.compile(rb"(?<![\w])(?:DataParallel|data_parallel)(?:\s*\(|\s+as\s)"
                        rb"|=\s*(?:[\w.]*\.)?(?:DataParallel|data_parallel)\s*(?:$|#|;)", re.MULTILINE)


def mentions_wrap(data: bytes) -> bool:
    """Whether the text may hold a wrap site: the cheap test before any parse."""
    return (b"DataParallel" in data or b"data_parallel" in data) and _WRAP_TEXT.search(data) is not None


# An RNN class, or a call of one, as an argument: `Encoder(rnn_class=nn.GRU)`, `Wrapper(nn.LSTM(...))`.
_HANDS_RNN_TEXT = re.compile(rb"[(,]\s*(?:\w+\s*=\s*)?(?:[\w.]*\.)?(?:LSTM|GRU|RNN)\b(?!\s*\.)")
# ... or through a local name first: `module = nn.LSTM(...)`, then `super().__init__(module=module)`.
_RNN_TO_LOCAL_TEXT = re.compile(rb"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:[\w.]*\.)?(?:LSTM|GRU|RNN)[ \t]*\(", re.M)


def needs_summary_at_build(data: bytes) -> bool:
    """Whether the index summarises the file whatever is asked: it may wrap a model, or hand an RNN to a class."""
    return mentions_wrap(data) or (_mentions_rnn(data) and _may_hand_rnn(data))


def _may_hand_rnn(data: bytes) -> bool:
    """An RNN as an argument on a line that is neither an import (`from .rnn import GRU, LSTM`) nor a type
    test (`isinstance(module, (nn.LSTM, nn.GRU))`): torch's own sources are full of both."""
    for match in _HANDS_RNN_TEXT.finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.end())
        line = data[start:end if end >= 0 else len(data)].lstrip()
        if not (line.startswith((b"from ", b"import ")) or b"isinstance(" in line or b"issubclass(" in line):
            return True
    for name in set(_RNN_TO_LOCAL_TEXT.findall(data)):
        if re.search(rb"[(,]\s*(?:\w+\s*=\s*)?" + re.escape(name) + rb"\s*[,)]", data):
            return True
    return False


_MENTIONS_RNN, _MAY_INHERIT = 1, 2

# Import statements as the text shows them, for the cheap test of what a file's imports can reach
# (ProjectIndex.may_run_rnn_elsewhere). A statement starts a line or follows `;`; the names of a
# `from` import may be in parentheses over several lines, or continued with backslashes.
_FROM_IMPORT_TEXT = re.compile(rb"(?:^|;)[ \t]*from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*"
                               rb"(\([^)]*\)|(?:[^\n\\;#]|\\\n)*)", re.MULTILINE)
_IMPORT_TEXT = re.compile(rb"(?:^|;)[ \t]*import[ \t]+((?:[^\n\\;#]|\\\n)*)", re.MULTILINE)
_COMMENT_TEXT = re.compile(rb"#[^\n]*")


def imports_in_text(data: bytes) -> List[list]:
    """[dots, module, [names]] for each import statement in the text: `from ..a import b, c` is
    [2, "a", ["b", "c"]], `import a.b as c` is [0, "a.b", []]. Text in strings counts too: an import
    too many only makes the test that reads these say yes more often."""
    if b"import" not in data:
        return []
    found: List[list] = []
    for match in _FROM_IMPORT_TEXT.finditer(data):
        names = _COMMENT_TEXT.sub(b"", match.group(3)).strip(b"()").replace(b"\\\n", b" ")
        found.append([len(match.group(1)), match.group(2).decode("ascii", "replace"),
                      [item.split()[0].decode("ascii", "replace") for item in names.split(b",") if item.split()]])
    for match in _IMPORT_TEXT.finditer(data):
        for item in match.group(1).replace(b"\\\n", b" ").split(b","):
            if item.split():
                found.append([0, item.split()[0].decode("ascii", "replace"), []])
    return found


@dataclass
class FileEntry:
    """What the index knows of one file, kept in its cache between runs (as a list, see stored())."""

    size: int
    mtime_ns: int
    summarised_at_build: bool  # it mentions a wrap or hands RNNs to a class: summarised when the index is built
    summary: Optional[dict]  # None until asked for (most files are never asked)
    flags: int  # _text_flags()
    imports: Optional[list] = None  # imports_in_text(), None until asked for
    constructed: Optional[list] = None  # the class-like names the text calls (_CALLED_CLASS), None until asked for
    # the methods the text calls on something an instance holds (_HELD_METHOD_CALL_TEXT), made with `constructed`
    held_calls: Optional[list] = None

    @classmethod
    def of(cls, data: bytes, size: int, mtime_ns: int) -> "FileEntry":
        return cls(size, mtime_ns, needs_summary_at_build(data), None, _text_flags(data))

    @property
    def version(self) -> Tuple[int, int]:
        """(size, mtime_ns): what tells a file changed since this entry was made."""
        return self.size, self.mtime_ns

    def stored(self) -> list:
        return [self.size, self.mtime_ns, self.summarised_at_build, self.summary, self.flags, self.imports,
                self.constructed, self.held_calls]

    @classmethod
    def from_stored(cls, stored: object) -> Optional["FileEntry"]:
        """The entry a cache file holds, or None when it is not one this version wrote."""
        if not (isinstance(stored, list) and len(stored) == 8 and isinstance(stored[0], int) and isinstance(stored[1], int)
                and _usable_summary(stored[3]) and isinstance(stored[4], int)
                and (stored[5] is None or _usable_imports(stored[5]))
                and all(names is None or isinstance(names, list) and all(isinstance(n, str) for n in names)
                        for names in stored[6:8])
                and (stored[6] is None) == (stored[7] is None)):
            return None
        return cls(stored[0], stored[1], bool(stored[2]), stored[3], stored[4], stored[5], stored[6], stored[7])

    def completed_by(self, other: Optional["FileEntry"]) -> "FileEntry":
        """This entry with what it has not made yet taken from `other`, an entry of the same file as it is
        now (size and mtime) that another process made: flake8's workers each build the index."""
        if other is None or other.version != self.version:
            return self
        called = self if self.constructed is not None else other  # the two lists are made together
        return replace(self, summary=self.summary if self.summary is not None else other.summary,
                       imports=self.imports if self.imports is not None else other.imports,
                       constructed=called.constructed, held_calls=called.held_calls)


_RNN_NAME_IN_CALL = re.compile(r"RNN|LSTM|GRU")
# A call of a class-like name: `Encoder(`, `models.Encoder(` (the name before the parenthesis). No `\b`
# before it, which would make the scan of every file's text nearly twice as slow: `lstmEncoder(` also
# yields `Encoder`, a file looked at for nothing. Possessive, so a name that no `(` follows fails at once.
_CALLED_CLASS = re.compile(rb"([A-Z]\w*+)\s*+\(")
# `self.attention.init_states(`: a method called on something the instance holds, the only call of a held
# module's method the evaluator follows (possessive, as above; no `\b`, which makes it six times slower).
_HELD_METHOD_CALL_TEXT = re.compile(rb"self\.[A-Za-z_]\w*+\.([A-Za-z_]\w*+)\s*+\(")


def _text_flags(data: bytes) -> int:
    """What the text says a file can need of the project: _MENTIONS_RNN (it can build an RNN, for
    the files that derive from or import it) and _MAY_INHERIT (its classes may run an RNN of another
    file). A file with neither needs no facts about its classes, and is not parsed for them."""
    return (_MENTIONS_RNN if _mentions_rnn(data) else 0) | (_MAY_INHERIT if may_inherit_text(data) else 0)


def _mentions_rnn(data: bytes) -> bool:
    """Whether the file can build an RNN at all: a base or factory of another file matters only then."""
    # An RNN's name, not just `getattr` (which most large files use for other things). The substring
    # tests are much faster than the regular expression on the many files that fail them.
    if b"RNN" not in data and b"LSTM" not in data and b"GRU" not in data:
        return False
    return _RNN_NAME.search(data) is not None


_RNN_NAME = re.compile(rb"\b(?:RNN|LSTM|GRU)\b")
# These start at the dot, the receiver checked behind it, so that the search skips ahead to each dot
# (several times faster than a leading word boundary, which is tried at every position).
_SELF_ATTRIBUTE_TEXT = re.compile(rb"\.(?<=\bself\.)([A-Za-z_]\w*)")
_ATTRIBUTE_TEXT = re.compile(rb"\.([A-Za-z_]\w*)")
# Attributes of the usual names of a run's settings (`args.batch_size`, `self.opt.hidden_size`): read from
# the configuration, not from the model, so they say nothing about the model's own `self.batch_size`.
_SETTINGS_NAMES = ("args", "arguments", "opt", "opts", "option", "options", "config", "cfg", "conf", "hparams", "hps",
                   "hp", "hyperparams", "params", "flags", "FLAGS", "settings")
_SETTINGS_ATTRIBUTE_TEXT = re.compile(
    rb"\.(?:" + b"|".join(rb"(?<=\b" + name.encode() + rb"\.)" for name in _SETTINGS_NAMES) + rb")([A-Za-z_]\w*)")


# How far names are followed (assignments, factories, re-exports) before giving up.
_MAX_DEPTH = 12
_SITE_TEXT_LIMIT = 60
# The cache format; bump when the shape of a summary or of the saved wrap answers changes.
_SUMMARY_FORMAT = 13

UNKNOWN = None  # a value the summary cannot name (a parameter, a subscript...)
# What the project's bases say of a class.
MODULE, PLAIN, UNKNOWN_STATUS = "module", "plain", "unknown"


# -- one file's summary, from Python's tree ---------------------------------------------------------
def dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def base_name(node: ast.AST) -> Optional[str]:
    """A base class as a dotted name: `Base[T]` is `Base` (a generic's subscript does not change its class)."""
    return dotted(node.value if isinstance(node, ast.Subscript) else node)


def qualify(imports: Mapping[str, Optional[str]], name: str) -> Optional[str]:
    """A dotted name as written, its first part replaced through a file's import table."""
    first, _, rest = name.partition(".")
    if first in imports:
        target = imports[first]
        return None if target is None else (f"{target}.{rest}" if rest else target)
    return name


# Node types with no call, import, definition or return below them (most of a tree).
_LEAF_TYPES = frozenset({ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal}
                        | {kind for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
                           for kind in base.__subclasses__()})


class _Summarizer:
    """What the index needs of one file: names it imports, its classes (bases, the calls in their
    methods), what its functions return, and where its wrap sites are (what they wrap is the evaluator's answer)."""

    def __init__(self, tree: ast.Module, lines: Sequence[bytes], module: Optional[str], is_package: bool,
                 names_rnn: bool = True) -> None:
        self.tree = tree
        self.lines = lines
        # Whether the text names torch's RNN classes (LSTM, GRU, RNN) at all: a call can hand one to a
        # class only where some spelling of it (an import, an alias, `nn.LSTM`) is in the text.
        self.names_rnn = names_rnn
        self.module = module
        self.is_package = is_package
        self.imports: Dict[str, Optional[str]] = {}
        self.classes: Dict[str, dict] = {}
        self.functions: Dict[str, dict] = {}
        self.wraps: List[dict] = []
        # [callee as written (or "super:<class>"), parameter name or position, "class" or "instance", kind]
        self.hands: List[list] = []
        self._class_methods: Dict[str, List[ast.AST]] = {}
        # Names called at module level outside functions and classes (`RNN = make_rnn_class()`).
        self.top_calls: Set[str] = set()
        # `name = Call(...)` with one plain target: the call's id -> the name.
        self._assigned_calls: Dict[int, str] = {}
        # Per scope (by id), name -> the values assigned to it there: made once per scope, not per question.
        self._assignments: Dict[int, Dict[str, List[ast.AST]]] = {}

    def summary(self) -> dict:
        calls, returns = self._scan()
        self._bind_module_aliases()
        for name, nodes in returns.items():
            refs = [self.values(node.value, function, set(), None) if node.value is not None else [UNKNOWN]
                    for node, function in nodes]
            self.functions[name] = {"returns": [ref for found in refs for ref in found]}
        for call, function, cls in calls:
            if self._is_wrap(call):
                self._wrap_site(call)
            elif (call.args or call.keywords) and self.names_rnn:
                self._handed_rnns(call, function, cls)
        for qualname, info in self.classes.items():
            info["calls"] = sorted(info["calls"])
            forward = next((m for m in self._class_methods.get(qualname, ()) if m.name == "forward"), None)
            info["state"] = forward is not None and _may_pass_rnn_state(forward)
        return {"module": self.module, "package": self.is_package, "imports": self.imports,
                "classes": self.classes, "functions": self.functions, "wraps": self.wraps, "hands": self.hands,
                "calls": sorted(self.top_calls), "builds": self._builds(calls, returns)}

    def _builds(self, calls, returns: Dict[str, List[Tuple[ast.Return, ast.AST]]]) -> List[list]:
        """Each call of a class-like name (`Encoder(...)`: its last part capitalised), as [callee, line,
        the class whose body holds it or None, the class-like callees it is handed to]: handed directly
        (`Seq2Seq(Encoder(), ...)`) or through a name it is assigned to in the same function
        (`enc = Encoder(); model = Seq2Seq(enc, dec)`). What tells a project's root modules apart."""
        class_like = [(call, dotted(call.func), function, cls) for call, function, cls in calls]
        class_like = [item for item in class_like if item[1] is not None and _is_class_like(item[1])]
        handed_call: Dict[int, Set[str]] = {}
        handed_name: Dict[Tuple[int, str], Set[str]] = {}
        for call, callee, function, _ in class_like:
            for arg in [*call.args, *(keyword.value for keyword in call.keywords)]:
                if isinstance(arg, ast.Call):
                    handed_call.setdefault(id(arg), set()).add(callee)
                elif isinstance(arg, ast.Name):
                    handed_name.setdefault((id(function), arg.id), set()).add(callee)
        # What the module-level functions return: a call, or a name (the scan has their return statements).
        returned_calls = {id(node.value) for found in returns.values() for node, _ in found if node.value is not None}
        returned_names = {(id(function), node.value.id) for found in returns.values() for node, function in found
                          if isinstance(node.value, ast.Name)}
        builds = []
        for call, callee, function, cls in class_like:
            handed = set(handed_call.get(id(call), ()))
            name = self._assigned_calls.get(id(call))
            if name is not None:
                handed |= handed_name.get((id(function), name), set())
            if id(call) in returned_calls or (id(function), name) in returned_names:
                handed.add(RETURNED)  # a factory: whoever calls it may keep the module as a submodule
            builds.append([callee, call.lineno, cls, sorted(handed)])
        return builds

    def _scan(self):
        """One walk over the tree (walks of Python's tree dominate the index's cost): imports anywhere
        (a name imported in a function is rarely rebound, so they count as the file's), classes with the
        calls in their bodies, each module-level function's return statements, and every call with the
        function and class it sits in, to pick the wraps from once the imports are known."""
        calls: List[Tuple[ast.Call, Optional[ast.AST], Optional[str]]] = []
        returns: Dict[str, List[Tuple[ast.Return, ast.AST]]] = {}
        top_calls = self.top_calls
        decorators: Set[int] = set()  # a class's decorator calls, which build nothing the class holds
        # (node, enclosing function, enclosing class's qualname for `self.` lookups, the set the calls of
        # the class being read go to, the module-level function whose returns count, qualname prefix)
        stack = [(self.tree, None, None, None, None, "")]
        while stack:
            node, function, cls, class_calls, top, prefix = stack.pop()
            for child in child_nodes(node):
                kind = type(child)
                if kind in _LEAF_TYPES:
                    continue  # nothing the index needs can sit below these (most of a tree)
                if kind is ast.Call:
                    name = dotted(child.func)
                    if name is not None or _is_super_init(child.func):
                        calls.append((child, function, cls))
                        if (class_calls is not None and name is not None and not name.startswith("self.")
                                and name not in ("super", "self")):
                            class_calls.add(name)
                        elif class_calls is None and function is None and name is not None and id(child) not in decorators:
                            top_calls.add(name)
                elif kind is ast.ClassDef and function is None:
                    qualname = f"{prefix}{child.name}"
                    self._class_methods[qualname] = [item for item in child.body
                                                     if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
                    own: Set[str] = set()
                    # Methods besides forward and the special ones that run a module the instance holds or
                    # set state on it: what a holder's forward pass calling them can make matter.
                    others = sorted(name for name in _methods_using_held(self._class_methods[qualname])
                                    if name != "forward" and not name.startswith("__"))
                    self.classes[qualname] = {"line": child.lineno, "bases": [base_name(base) for base in child.bases],
                                              "calls": own, "methods": others}
                    decorators.update(id(part) for part in child.decorator_list)
                    for part in (*child.bases, *child.keywords, *child.decorator_list):
                        stack.append((part, function, cls, class_calls, top, prefix))
                    # The body's statements are walked as a module's are, in the class's context.
                    body = ast.Module(body=child.body, type_ignores=[])
                    stack.append((body, None, qualname, own, None, f"{qualname}."))
                    continue
                elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                    inner_top = None  # returns of a method or a nested function count for no function
                    if node is self.tree:
                        inner_top = child.name
                        returns.setdefault(inner_top, [])
                    stack.append((child, child, cls, class_calls, inner_top, prefix))
                    continue
                elif kind is ast.Lambda:
                    stack.append((child, child, cls, class_calls, None, prefix))
                    continue
                elif kind is ast.Import:
                    for alias in child.names:
                        if alias.asname:
                            self._bind(alias.asname, alias.name)
                        else:
                            self._bind(alias.name.split(".")[0], alias.name.split(".")[0])
                    continue
                elif kind is ast.ImportFrom:
                    base = (resolve_relative_import(self.module, self.is_package, child.level, child.module)
                            if child.level else child.module)
                    for alias in child.names:
                        if alias.name != "*":
                            self._bind(alias.asname or alias.name, f"{base}.{alias.name}" if base else None)
                    continue
                elif kind is ast.Return and top is not None and function is not None:
                    returns[top].append((child, function))
                elif (kind is ast.Assign and type(child.value) is ast.Call and len(child.targets) == 1
                      and type(child.targets[0]) is ast.Name):
                    self._assigned_calls[id(child.value)] = child.targets[0].id
                stack.append((child, function, cls, class_calls, top, prefix))
        calls.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        return calls, returns

    def _bind_module_aliases(self) -> None:
        for node in self.tree.body:  # module-level aliases: `DP = nn.DataParallel`
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, (ast.Name, ast.Attribute))):
                name = dotted(node.value)
                if name is not None:
                    self._bind(node.targets[0].id, self.qualify(name))

    def _bind(self, local: str, qualified: Optional[str]) -> None:
        if local in self.imports and self.imports[local] != qualified:
            self.imports[local] = None  # bound to two things: not followed
        else:
            self.imports[local] = qualified

    def qualify(self, name: str) -> Optional[str]:
        return qualify(self.imports, name)

    def _is_wrap(self, call: ast.Call) -> bool:
        name = dotted(call.func)
        return name is not None and self.qualify(name) in DATA_PARALLEL_NAMES

    def _handed_rnns(self, call: ast.Call, function: Optional[ast.AST], cls: Optional[str]) -> None:
        """RNN classes and instances a call passes (to a class, the index finds out later)."""
        callee = dotted(call.func)
        if callee is None:
            if cls is None:
                return
            callee = f"super:{cls}"  # super().__init__(module=nn.LSTM(...)): the class's base gets it
        arguments = [(str(position), arg) for position, arg in enumerate(call.args) if not isinstance(arg, ast.Starred)]
        arguments += [(keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg]
        to_a_class = callee.startswith("super:") or callee.rsplit(".", 1)[-1][:1].isupper()
        for key, value in arguments:
            if isinstance(value, ast.Name) and function is not None and to_a_class:
                # `module = nn.LSTM(...)` then `super().__init__(module=module)`: the one call it is set to
                found = self._assigned_values(value.id, function)
                if len(found) == 1 and isinstance(found[0], ast.Call) and not _is_parameter(value.id, function):
                    value = found[0]
            what = "instance" if isinstance(value, ast.Call) else "class"
            name = dotted(value.func if isinstance(value, ast.Call) else value)
            kind = rnn_kind(canonical(self.qualify(name))) if name else None
            if kind:
                self.hands.append([callee, key, what, f"nn.{kind}"])

    def _wrap_site(self, call: ast.Call) -> None:
        line = self.lines[call.lineno - 1] if call.lineno - 1 < len(self.lines) else b""
        column = _character_column(line, call.col_offset)
        end = call.end_col_offset if call.end_lineno == call.lineno else len(line)
        text = line[call.col_offset:end].decode("utf-8", "replace").strip()
        text = text if len(text) <= _SITE_TEXT_LIMIT else text[: _SITE_TEXT_LIMIT - 3] + "..."
        self.wraps.append({"line": call.lineno, "col": column, "text": text})

    # -- what an expression evaluates to, as dotted callee names -------------------------------------
    def values(self, expr: ast.AST, function: Optional[ast.AST], active: Set[str], cls: Optional[str],
               depth: int = 0) -> List[Optional[str]]:
        """The dotted names of the calls an expression's value comes from (`X` for `X(...)`, `build` for
        `build()`), UNKNOWN where it cannot be followed."""
        if depth > _MAX_DEPTH:
            return [UNKNOWN]
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in MODULE_METHODS_RETURNING_SELF:
                return self.values(expr.func.value, function, active, cls, depth + 1)
            if self._is_wrap(expr) and expr.args:
                return self.values(expr.args[0], function, active, cls, depth + 1)
            name = dotted(expr.func)
            if name is not None and name.startswith("self.") and cls and name.count(".") == 1:
                return self._method_returns(name[len("self."):], active, cls, depth)
            return [name if name is not None and not name.startswith("self.") else UNKNOWN]
        if isinstance(expr, ast.IfExp):
            return (self.values(expr.body, function, active, cls, depth + 1)
                    + self.values(expr.orelse, function, active, cls, depth + 1))
        if isinstance(expr, ast.Name):
            if expr.id in active:
                return []  # `model = model.cuda()`: the other assignments say what it is
            found = self._assigned(expr.id, function)
            if not found and function is not None:
                found = [(value, None) for value in self._assigned_values(expr.id, self.tree)]
                if found and _is_parameter(expr.id, function):
                    return [UNKNOWN]
            if not found:
                return [UNKNOWN]
            refs: List[Optional[str]] = []
            for value, scope in found:
                refs.extend(self.values(value, scope, active | {expr.id}, cls, depth + 1))
            return refs
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" and cls:
            key = f"self.{expr.attr}"
            if key in active:
                return []
            values = [(node.value, method) for method in self._class_methods.get(cls, ())
                      for node in _own_nodes(method, (ast.Assign, ast.AnnAssign))
                      if node.value is not None and any(dotted(t) == key for t in _targets(node))]
            if not values:
                return [UNKNOWN]
            refs = []
            for value, method in values:
                refs.extend(self.values(value, method, active | {key}, cls, depth + 1))
            return refs
        return [UNKNOWN]

    def _method_returns(self, method_name: str, active: Set[str], cls: str, depth: int) -> List[Optional[str]]:
        """`self.build_model()`: what a method of the same class returns (UNKNOWN for a method it inherits)."""
        key = f"self.{method_name}()"
        if key in active:
            return [UNKNOWN]
        method = next((m for m in self._class_methods.get(cls, ()) if m.name == method_name), None)
        returns = [node for node in _own_nodes(method, (ast.Return,))] if method is not None else []
        if not returns or any(node.value is None for node in returns):
            return [UNKNOWN]
        refs: List[Optional[str]] = []
        for node in returns:
            refs.extend(self.values(node.value, method, active | {key}, cls, depth + 1))
        return refs

    def _assigned(self, name: str, function: Optional[ast.AST]) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
        scope = function if function is not None else self.tree
        return [(value, function) for value in self._assigned_values(name, scope)]

    def _assigned_values(self, name: str, scope: ast.AST) -> List[ast.AST]:
        by_name = self._assignments.get(id(scope))
        if by_name is None:
            by_name = self._assignments[id(scope)] = {}
            for node in _own_nodes(scope, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                if node.value is None:
                    continue
                # One entry per assignment, even when it names the target twice (`a = a = f()`).
                for target in dict.fromkeys(t.id for t in _targets(node) if isinstance(t, ast.Name)):
                    by_name.setdefault(target, []).append(node)
        return [node.value for node in by_name.get(name, ())]


# What a build is "handed to" when the function holding it returns it (`def build_encoder(): return
# Encoder(...)`): the factory's callers, which the index does not follow, may keep it in a module.
RETURNED = "<returned>"


def _may_pass_rnn_state(forward: ast.AST) -> bool:
    """A cheap look at whether `forward` may hand an RNN's state across its boundary, as the
    hidden-state rules judge it: a parameter passed to a call as its second argument or `hx=`, a call's result
    returned whole, or a name returned that a call's result was unpacked into after its first element."""
    parameters = {arg.arg for arg in forward.args.args[1:] + forward.args.kwonlyargs}
    unpacked: Set[str] = set()
    returns: List[ast.AST] = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Call):
            second = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "hx"), None)
            names = second.elts if isinstance(second, (ast.Tuple, ast.List)) else [second]
            if any(isinstance(name, ast.Name) and name.id in parameters for name in names):
                return True
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    for element in target.elts[1:]:
                        inner = element.elts if isinstance(element, (ast.Tuple, ast.List)) else [element]
                        unpacked.update(name.id for name in inner if isinstance(name, ast.Name))
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)
    for value in returns:
        parts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        for part in parts:
            inner = part.elts if isinstance(part, (ast.Tuple, ast.List)) else [part]
            if any(isinstance(item, ast.Call) or isinstance(item, ast.Name) and item.id in unpacked for item in inner):
                return True
    return False


def _methods_using_held(methods: Sequence[ast.AST]) -> Set[str]:
    """The names of a class's methods that call something the instance holds (`self.rnn(x)`,
    `self.layers[i](x)`, `self.rnn.forward(x)`: not one of the class's methods) or set an attribute on it
    (`self.state = None`), themselves or through the class's methods they call on self."""
    own = {method.name for method in methods}
    direct: Set[str] = set()
    calls: Dict[str, Set[str]] = {}
    for method in methods:
        args = method.args.posonlyargs + method.args.args
        me = args[0].arg if args else None
        called = calls[method.name] = set()
        for node in ast.walk(method) if me else ():
            kind = type(node)
            if kind is ast.Attribute and type(node.ctx) is ast.Store and type(node.value) is ast.Name and node.value.id == me:
                direct.add(method.name)
            elif kind is ast.Call:
                func = node.func
                if type(func) is ast.Attribute and func.attr == "forward":
                    func = func.value
                while type(func) is ast.Subscript:
                    func = func.value
                if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == me:
                    if func.attr in own:
                        called.add(func.attr)
                    else:
                        direct.add(method.name)
    return closed_under(direct, calls)  # through the methods they call on self


def _is_class_like(callee: str) -> bool:
    last = callee.rsplit(".", 1)[-1]
    return last[:1].isupper() and not callee.startswith("self.")


def _is_super_init(func: ast.AST) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "super")


def _targets(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    return [node.target]


def _is_parameter(name: str, function: ast.AST) -> bool:
    args = function.args
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return any(arg.arg == name for arg in every)


def _own_nodes(scope: ast.AST, types) -> Iterable[ast.AST]:
    """Nodes of the given types in a scope's body, not in nested functions or classes."""
    stack = child_nodes(scope)
    while stack:
        node = stack.pop()
        if isinstance(node, types):
            yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(child_nodes(node))


_EMPTY_SUMMARY = {"module": None, "package": False, "imports": {}, "classes": {}, "functions": {}, "wraps": [],
                  "hands": [], "calls": [], "builds": []}
# Below this many files to summarise, starting worker processes costs more than it saves.
_MIN_FILES_FOR_POOL = 16


def _summarize_file(path: str) -> dict:
    data = read_source_or_none(path)
    return (summarize(data, path) if data is not None else None) or _EMPTY_SUMMARY


def _summarize_file_counted(path: str) -> Tuple[dict, Optional[stages.Counts]]:
    """In a worker: the summary, with the worker's stage counts (`--stats`)."""
    return _summarize_file(path), stages.take()


def _summarized_in_pool(results: Iterable[Tuple[dict, Optional[stages.Counts]]]) -> List[dict]:
    summaries = []
    for summary, counts in results:
        stages.merge(counts)
        summaries.append(summary)
    return summaries


def _usable_summary(summary) -> bool:
    """None (not summarised yet), or a summary of the shape this version writes: a cache file edited or
    damaged by hand must not break a run."""
    if summary is None:
        return True
    return (isinstance(summary, dict) and isinstance(summary.get("imports"), dict)
            and isinstance(summary.get("classes"), dict) and isinstance(summary.get("functions"), dict)
            and isinstance(summary.get("wraps"), list) and isinstance(summary.get("hands"), list)
            and isinstance(summary.get("calls"), list) and isinstance(summary.get("builds"), list)
            and all(isinstance(build, list) and len(build) == 4 for build in summary["builds"])
            and all(isinstance(info, dict) and isinstance(info.get("bases"), list) and isinstance(info.get("calls"), list)
                    and isinstance(info.get("methods"), list) for info in summary["classes"].values())
            and all(isinstance(info, dict) and isinstance(info.get("returns"), list)
                    for info in summary["functions"].values())
            and all(isinstance(wrap, dict) and {"line", "col", "text"} <= set(wrap) for wrap in summary["wraps"]))


def _usable_imports(imports) -> bool:
    return isinstance(imports, list) and all(
        isinstance(item, list) and len(item) == 3 and isinstance(item[0], int) and isinstance(item[1], str)
        and isinstance(item[2], list) and all(isinstance(name, str) for name in item[2]) for item in imports)


def summarize(source: bytes, path: str, tree: Optional[ast.Module] = None) -> Optional[dict]:
    """The file's summary, or None when Python cannot parse it (the linter reports that elsewhere).
    `tree`: Python's tree of the source, when the caller has parsed it already."""
    try:
        if tree is None:
            with stages.stage("python parse", path):
                tree = ast.parse(source)
        with stages.stage("index summaries", path):
            module, is_package = module_name_for(path)
            names_rnn = any(word in source for word in (b"LSTM", b"GRU", b"RNN"))
            return _Summarizer(tree, source.splitlines(), module, is_package, names_rnn).summary()
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def entry_from_first_look(path: str, data: bytes, size: int, mtime_ns: int,
                          tree: Optional[ast.Module]) -> Optional[FileEntry]:
    """The index's entry for a file a worker's first look has parsed (`size` and `mtime_ns` taken before
    it read `data`), with its summary when the file's context will ask for it: the parse is then made
    once, in the worker, instead of again in the process that asks. None when no context needs it."""
    entry = FileEntry.of(data, size, mtime_ns)
    if not entry.flags or tree is None or entry.summarised_at_build:
        return None  # a file that wraps or hands RNNs is summarised when the index is built, in any case
    entry.summary = summarize(data, _path_key(path), tree) or _EMPTY_SUMMARY
    return entry


# -- the index --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WrapSite:
    path: str  # as the user sees it
    line: int  # in a notebook, the line of its Python view
    col: int
    text: str
    cell: Optional[Tuple[int, int]] = None  # in a notebook: (cell number, line in the cell)

    def __str__(self) -> str:
        return f"{self.path}:cell {self.cell[0]}:{self.cell[1]}" if self.cell else f"{self.path}:{self.line}"


@dataclass(frozen=True)
class UnresolvedWrap:
    site: WrapSite
    reason: str


ClassKey = Tuple[str, str]  # (file path, qualified name in the file)


@dataclass
class ProjectIndex:
    wrapped: Dict[ClassKey, WrapSite] = field(default_factory=dict)  # class -> the first wrap that reaches it
    direct: Dict[ClassKey, List[WrapSite]] = field(default_factory=dict)  # wrap targets themselves
    unresolved: List[UnresolvedWrap] = field(default_factory=list)
    sites: List[WrapSite] = field(default_factory=list)
    # file -> (the wrap as written, RNN kinds): DataParallel calls whose module the evaluator says can be a
    # torch RNN (`nn.DataParallel(make_encoder(32))`, a factory of another file returning nn.GRU)
    rnn_wraps: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)
    # file holding wrapped classes -> the files whose wraps reach them
    wrap_files: Dict[str, Set[str]] = field(default_factory=dict)
    files_parsed: int = 0
    _by_file: Optional[Dict[str, Tuple[list, list]]] = field(default=None, repr=False, compare=False)
    # What answers which classes are modules, file by file as they are asked for (None: nothing is).
    _builder: Optional["IndexBuilder"] = field(default=None, repr=False, compare=False)

    def context_for(self, path: str, scope: str) -> "FileContext":
        with stages.stage("index build and contexts", path):
            return self._context_for(path, scope)

    def _context_for(self, path: str, scope: str) -> "FileContext":
        if self._by_file is None:  # grouped once: a run asks for every file's context
            self._by_file = {}
            for (file, name), site in self.wrapped.items():
                self._by_file.setdefault(file, ([], []))[0].append((name, str(site)))
            for (file, name), sites in self.direct.items():
                self._by_file.setdefault(file, ([], []))[1].append((name, str(sites[0])))
        key = _path_key(path)
        wrapped, direct = self._by_file.get(key, ((), ()))
        facts = self._builder.class_facts(path) if self._builder is not None else {}
        if (wrapped or direct) and self._builder is not None:
            facts["read_elsewhere"] = self._builder.attributes_read_elsewhere(key)
        wraps = self.rnn_wraps.get(key)
        if wraps:
            facts["rnn_wraps"] = tuple(sorted(set(wraps)))
        return FileContext(
            scope=scope,
            wrapped=tuple(sorted(wrapped)),
            direct=tuple(sorted(direct)),
            unresolved=tuple(str(item.site) for item in self.unresolved) if scope == "wrapped" else (),
            **facts,
        )

    def context_is_costly(self, path: str) -> bool:
        """Whether the file's context needs its summary (a parse): its text can build an RNN or may
        inherit one, so what its classes' bases and imports are is asked."""
        if self._builder is None:
            return False
        key = _path_key(path)
        return key in self._builder.paths and bool(self._builder._entry(key, need_summary=False).flags)

    def may_run_rnn_elsewhere(self, path: str) -> bool:
        """Whether a class of the file may run an RNN built in another file (IndexBuilder.may_run_rnn_elsewhere):
        when not, a file that would need the analysis only for that is clean, and its context is not asked."""
        key = _path_key(path)
        if key in self.rnn_wraps:
            return True
        return self._builder is not None and key in self._builder.paths and self._builder.may_run_rnn_elsewhere(key)

    def adopt(self, path: str, entry: list) -> None:
        """Take a file's entry made by a first look (entry_from_first_look) unless the index already has
        its summary or saw other contents (size, mtime) for it."""
        if self._builder is not None:
            self._builder.adopt(_path_key(path), entry)

    def save(self) -> None:
        """Cache what was summarised since the index was built (the files whose contexts were asked for)."""
        if self._builder is not None:
            self._builder.save_cache()


@dataclass(frozen=True)
class FileContext:
    """What the project index says about one file, as its rules need it (small, picklable, and part of
    the result cache's key)."""

    scope: str = "any"  # "any": every module class is checked; "wrapped": only the wrapped set
    wrapped: Tuple[Tuple[str, str], ...] = ()  # (class qualname, wrap site) for this file's wrapped classes
    direct: Tuple[Tuple[str, str], ...] = ()  # (class qualname, wrap site) for this file's wrap targets
    unresolved: Tuple[str, ...] = ()  # in wrapped scope: wrap sites that could not be resolved
    # (class qualname, its bases in other files as (path, qualname, size, mtime_ns)): what it inherits
    inherited: Tuple[Tuple[str, tuple], ...] = ()
    # (local name, "class" or "function", path, qualname, size, mtime_ns): what the file imports from
    # files of the project that mention an RNN
    imported: Tuple[Tuple[str, str, str, str, int, int], ...] = ()
    # Whether a base or an import of the file lives in another file that mentions an RNN: the file is
    # then analysed even when nothing in it names an RNN.
    rnn_elsewhere: bool = False
    # (class qualname, parameter name or position, "class" or "instance", kind): RNN classes and instances
    # that calls anywhere in the project pass to the class (`Encoder(rnn_class=nn.GRU)`, `Wrapper(nn.LSTM(...))`)
    injected: Tuple[Tuple[str, str, str, str], ...] = ()
    # (class qualname, where it is built): this file's module classes that build a torch RNN and that the
    # project builds only as roots, held by no other module (IndexBuilder.root_site)
    roots: Tuple[Tuple[str, str], ...] = ()
    # For a file with a class DataParallel wraps: the attributes it sets on `self` that another file of
    # the project mentions (`model.module.attention`, `core.print_loss()`), so they are read after a call
    read_elsewhere: Tuple[str, ...] = ()
    # (the wrap as written, RNN kinds): this file's DataParallel calls whose module can be a torch RNN, as
    # the evaluator says (what a factory of another file returns, say)
    rnn_wraps: Tuple[Tuple[str, str], ...] = ()
    # (class qualname, ((path, size, mtime_ns), ...)): for this file's classes that pack sequences or have
    # methods besides forward, the other files that may build them or call those methods (and hold them in
    # a module, calling their forward or methods: IndexBuilder.files_calling, _calling_methods)
    built_elsewhere: Tuple[Tuple[str, tuple], ...] = ()

    def files_building(self, qualname: str) -> Tuple[str, ...]:
        """The other files of the project that may build a class of this file (see IndexBuilder.files_calling)."""
        return tuple(item[0] for item in dict(self.built_elsewhere).get(qualname, ()))

    def handed_in(self, qualname: str) -> Dict[str, FrozenSet[Tuple[str, RnnKind]]]:
        """What callers in the project hand a class of this file: {parameter or position: {(what, kind)}},
        `what` being "class" (`rnn_class=nn.GRU`) or "instance" (`rnn=nn.LSTM(...)`). The summaries on
        disk spell the kind `nn.LSTM`; it is typed here, where it leaves the index."""
        handed: Dict[str, Set[Tuple[str, RnnKind]]] = {}
        for name, key, what, kind in self.injected:
            if name == qualname:
                handed.setdefault(key, set()).add((what, RnnKind(kind.rsplit(".", 1)[-1])))
        return {key: frozenset(pairs) for key, pairs in handed.items()}

    def wrap_site(self, qualname: str) -> Optional[str]:
        return dict(self.wrapped).get(qualname)

    def direct_site(self, qualname: str) -> Optional[str]:
        return dict(self.direct).get(qualname)

    def root_site(self, qualname: str) -> Optional[str]:
        """Where the class is built as a root module: in the default scope, and in wrapped scope when a
        wrap could not be resolved (it may wrap this class); otherwise only wraps count there."""
        return dict(self.roots).get(qualname) if self.scope != "wrapped" or self.unresolved else None

    def in_scope(self, qualname: str) -> bool:
        return self.scope != "wrapped" or bool(self.unresolved) or qualname in dict(self.wrapped)

    def scope_note(self, qualname: str) -> str:
        """What a finding's message adds in wrapped scope: where the class is wrapped."""
        if self.scope != "wrapped":
            return ""
        site = self.wrap_site(qualname)
        if site:
            return f" (wrapped at {site})"
        if self.unresolved:
            return f" (checked because the DataParallel wrap at {self.unresolved[0]} could not be resolved)"
        return ""


def _nearest(files: Sequence[str], near: Optional[str]) -> Optional[str]:
    """The one file that shares the longest leading folders with `near`; None when that is not one file."""
    if near is None:
        return None
    folder = os.path.dirname(near)
    shared = [len(os.path.commonpath([os.path.dirname(file), folder])) for file in files]
    best = max(shared)
    closest = [file for file, length in zip(files, shared) if length == best]
    return closest[0] if len(closest) == 1 else None


def _path_key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def shown_path(path: str) -> str:
    """A path relative to the working folder when it is under it: what messages print."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith("..") else relative


class IndexBuilder:
    """Builds the index over a set of files; `sources` overrides what is on disk (standard input)."""

    def __init__(self, paths: Iterable[str], sources: Optional[Mapping[str, bytes]] = None,
                 cache_file: Optional[Path] = None) -> None:
        self.paths = {_path_key(path): path for path in paths}
        self.sources = {_path_key(path): data for path, data in (sources or {}).items()}
        self.cache_file = cache_file
        self._stored_wraps: Optional[dict] = None  # _EvaluatedWraps' answers as last saved, with their files
        # The cache file's (inode, size, mtime_ns) when it was read: every save replaces it by a new file
        self._cache_file_read: Optional[Tuple[int, int, int]] = None
        self._cached: Dict[str, list] = self._load_cache()  # path key -> FileEntry.stored(), as last saved
        self._entries: Dict[str, FileEntry] = {}
        self._modules: Dict[str, List[str]] = {}
        self._by_suffix: Dict[Tuple[str, ...], List[str]] = {}
        self._top_names: Set[str] = set()
        self._status_memo: Dict[ClassKey, str] = {}
        # What calls in the project hand each class: (parameter or position, "class" or "instance", kind).
        self._handed: Dict[ClassKey, List[Tuple[str, str, str]]] = {}
        self._unsaved = False  # entries made or summarised since the cache was read or written
        self.files_parsed = 0
        self._module_of: Dict[str, Tuple[Optional[str], bool]] = {}
        self._reaches_rnn: Dict[str, bool] = {}
        self._imports_resolved: Dict[str, Set[str]] = {}
        self._roots: Dict[ClassKey, Optional[str]] = {}
        # (class-like name -> the files calling it, method name -> the files calling `self.x.name(`)
        self._called: Optional[Tuple[Dict[str, List[str]], Dict[str, List[str]]]] = None
        # Each wrapped class's file's self-attribute names, and the files mentioning each name (state rules)
        self._wrap_files: Dict[str, Set[str]] = {}  # the built index's wrap_files
        self._evaluated_wraps: Optional["_EvaluatedWraps"] = None
        self._self_names: Dict[str, Set[str]] = {}
        self._mentions: Optional[Dict[str, Set[str]]] = None
        # (module, the importing file's folder) -> the module's file: the same imports are resolved from
        # every file of a folder, and picking among copies compares paths.
        self._module_files: Dict[Tuple[str, Optional[str]], Optional[str]] = {}
        for key in self.paths:
            module, is_package = self._module_of[key] = module_name_for(key)
            if module:
                self._modules.setdefault(module, []).append(key)
                self._top_names.add(module.split(".")[0])
            parts = Path(key).with_suffix("").parts
            for length in range(1, min(len(parts), 6) + 1):
                self._by_suffix.setdefault(tuple(parts[-length:]), []).append(key)
            self._top_names.update(parts[-3:])

    # -- per-file entries, cached by size and mtime ---------------------------------------------------
    def _load_cache(self) -> Dict[str, list]:
        self._cache_file_read = self._cache_file_version()  # before the read: a file replaced meanwhile is read again
        files, wraps = self._read_cache_file()
        self._stored_wraps = wraps
        return files

    def _cache_file_version(self) -> Optional[Tuple[int, int, int]]:
        try:
            found = os.stat(self.cache_file) if self.cache_file is not None else None
        except OSError:
            return None
        return (found.st_ino, found.st_size, found.st_mtime_ns) if found is not None else None

    def _read_cache_file(self) -> Tuple[Dict[str, list], Optional[dict]]:
        """The cache file's entries and saved wrap answers; nothing when it is absent, damaged or of
        another format."""
        if self.cache_file is None:
            return {}, None
        import json  # json, tempfile and hashlib load where used: most runs never build an index

        try:
            with open(self.cache_file, encoding="utf-8") as handle:
                stored = json.load(handle)
            if stored.get("format") != _SUMMARY_FORMAT or not isinstance(stored["files"], dict):
                return {}, None
            return stored["files"], stored["wraps"] if isinstance(stored.get("wraps"), dict) else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}, None

    def save_cache(self) -> None:
        if self.cache_file is None or not self._unsaved:
            return
        self._unsaved = False
        import json

        if not prepare_cache_folder(self.cache_file.parent):
            return
        try:
            # Another process of the same run (a flake8 worker beside this one) may have saved summaries
            # since this one read the file: those of the same files as they are now are kept. Unchanged
            # since (one process alone), the file holds nothing this index did not load.
            changed = self._cache_file_version() not in (None, self._cache_file_read)
            on_disk = self._read_cache_file()[0] if changed else {}
            files = {key: entry.completed_by(FileEntry.from_stored(on_disk.get(key))).stored()
                     for key, entry in self._entries.items()}
            wraps = self._evaluated_wraps.stored() if self._evaluated_wraps is not None else self._stored_wraps
            stored = json.dumps({"format": _SUMMARY_FORMAT, "files": files, "wraps": wraps}).encode("utf-8")
            replace_atomically(str(self.cache_file), stored, prefix=".index-")
        except OSError:
            pass  # an unwritable cache makes the next run slower, not wrong

    def _entry(self, key: str, need_summary: bool, defer: bool = False) -> FileEntry:
        """The file's entry; the summary is made now when it is needed or the file mentions a wrap,
        unless `defer` (build() then makes those in a pool)."""
        entry = self._entries.get(key)
        if entry is not None and (entry.summary is not None or not need_summary):
            return entry
        if key in self.sources:
            data = self.sources[key]
            entry = FileEntry.of(data, len(data), 0)
            if need_summary or entry.summarised_at_build:  # standard input: never deferred, it is not on disk
                entry.summary = self._summarize(data, key)
            self._entries[key] = entry
            return entry
        try:
            stat = os.stat(key)
        except OSError:
            entry = FileEntry.of(b"", 0, 0)
            self._entries[key] = entry
            return entry
        cached = FileEntry.from_stored(self._cached.get(key))
        if (cached is not None and cached.size == stat.st_size and cached.mtime_ns == stat.st_mtime_ns
                and (cached.summary is not None or not (need_summary or cached.summarised_at_build))):
            self._entries[key] = cached
            return cached
        self._unsaved = True
        data = self._read(key)
        entry = FileEntry.of(data, stat.st_size, stat.st_mtime_ns)
        if need_summary or (entry.summarised_at_build and not defer):
            entry.summary = self._summarize(data, key)
        self._entries[key] = entry
        return entry

    def _read(self, key: str) -> bytes:
        return self.sources[key] if key in self.sources else read_source_or_none(key) or b""

    def adopt(self, key: str, entry: FileEntry) -> None:
        current = self._entries.get(key)
        if key not in self.paths or key in self.sources:
            return
        if current is not None and (current.summary is not None or current.version != entry.version):
            return
        self._entries[key] = entry
        self._unsaved = True
        self.files_parsed += 1

    def _summarize(self, data: bytes, key: str) -> dict:
        self.files_parsed += 1
        return summarize(data, key) or _EMPTY_SUMMARY

    def _summaries(self, keys: List[str], jobs: int, pool=None) -> Iterable[dict]:
        """The summaries of files that mention a wrap, in a pool of processes when there are many: the
        caller's `pool` (a concurrent.futures executor of `jobs` processes) when it has one."""
        self.files_parsed += len(keys)
        if jobs < 2 or len(keys) < _MIN_FILES_FOR_POOL or (pool is None and not sys.platform.startswith("linux")):
            return [_summarize_file(key) for key in keys]
        workers = min(jobs, len(keys))
        chunk = max(1, len(keys) // (workers * 8))
        if pool is not None:
            return _summarized_in_pool(pool.map(_summarize_file_counted, keys, chunksize=chunk))
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=stages.forget_inherited) as own:
            return _summarized_in_pool(own.map(_summarize_file_counted, keys, chunksize=chunk))

    def summary(self, key: str) -> dict:
        return self._entry(key, need_summary=True).summary

    # -- what a file's imports reach, from its text alone ------------------------------------------------
    def may_run_rnn_elsewhere(self, key: str) -> bool:
        """Whether a class of the file may run an RNN another file builds: a call in the project hands
        one to a class of it, or its import statements reach, directly or through the imports of the
        files they name, a file that mentions an RNN. A cheap, conservative test of what class_facts
        says as rnn_elsewhere (its bases and factories are all reached through imports): no parse."""
        if any(file == key for file, _ in self._handed):
            return True
        return any(self._reaches(file) for file in self._imported_files(key) if file != key)

    def _imported_files(self, key: str) -> Set[str]:
        """The project files the file's import statements name (resolved once per file and run)."""
        if key in self._imports_resolved:
            return self._imports_resolved[key]
        module, is_package = self._module_of.get(key) or module_name_for(key)
        entry = self._entry(key, need_summary=False)
        if entry.imports is None:
            entry.imports = imports_in_text(self._read(key))
            self._unsaved = True
        files = set()
        for dots, name, names in entry.imports:
            target = resolve_relative_import(module, is_package, dots, name or None) if dots else name
            if not target:
                continue
            # `from a import b` may import the module a.b or a name of a: the longest one that is a file.
            for dotted_name in [f"{target}.{item}" for item in names if item != "*"] or [target]:
                parts = dotted_name.split(".")
                for length in range(len(parts), 0, -1):
                    file = self._module_file(".".join(parts[:length]), near=key)
                    if file is not None:
                        files.add(file)
                        break
        self._imports_resolved[key] = files
        return files

    def _reaches(self, start: str) -> bool:
        """Whether the file mentions an RNN or its imports reach one that does (each file decided once)."""
        if start in self._reaches_rnn:
            return self._reaches_rnn[start]
        seen, stack = {start}, [start]
        while stack:
            file = stack.pop()
            known = self._reaches_rnn.get(file)
            if known or (known is None and self._mentions_rnn(file)):
                self._reaches_rnn[start] = True
                return True
            if known is None:
                for other in self._imported_files(file):
                    if other not in seen:
                        seen.add(other)
                        stack.append(other)
        # Nothing reached from here mentions an RNN: nor from any file on the way.
        for file in seen:
            self._reaches_rnn[file] = False
        return False

    # -- names across files ---------------------------------------------------------------------------
    def _mentions_rnn(self, file: str) -> bool:
        """Whether a file of the project can build an RNN at all (its text names one): a base or factory
        there matters only then."""
        return bool(self._entry(file, need_summary=False).flags & _MENTIONS_RNN)

    def _may_define_rnn_code(self, qualified: str, near: Optional[str] = None) -> bool:
        """Whether the module an imported name comes from mentions an RNN, or is a package (which may
        re-export one); False for names of other packages. Known without parsing the module."""
        parts = qualified.split(".")
        for length in range(len(parts) - 1, 0, -1):
            file = self._module_file(".".join(parts[:length]), near)
            if file is not None:
                return self._mentions_rnn(file) or file.endswith("__init__.py")
        return False

    def _module_file(self, module: str, near: Optional[str] = None) -> Optional[str]:
        """The file of a module name. Where several files have that name (copies of one package in one
        tree), the one beside the importing file `near`: the tree its own imports run from."""
        memo_key = (module, os.path.dirname(near) if near is not None else None)
        if memo_key not in self._module_files:
            self._module_files[memo_key] = self._module_file_uncached(module, near)
        return self._module_files[memo_key]

    def _module_file_uncached(self, module: str, near: Optional[str]) -> Optional[str]:
        tail = tuple(module.split("."))
        for found in (self._modules.get(module), self._by_suffix.get(tail), self._by_suffix.get(tail + ("__init__",))):
            # The last two: a folder without __init__.py (a namespace package, a scripts folder) by the path's tail.
            if found:
                chosen = found[0] if len(found) == 1 else _nearest(found, near)
                if chosen is not None:
                    return chosen
        return None

    def resolve(self, file: str, name: str, depth: int = 0) -> Tuple[str, object]:
        """What a dotted name used in `file` is: ("class", ClassKey), ("function", (file, name)),
        ("external", qualified) for a name outside the project, ("unknown", why)."""
        if depth > _MAX_DEPTH:
            return "unknown", f"`{name}` is too far away to follow"
        summary = self.summary(file)
        first, _, rest = name.partition(".")
        if first in summary["classes"] or first in summary["functions"]:
            return self._inside(file, name, depth)
        imports = summary["imports"]
        if first in imports:
            qualified = imports[first]
            if qualified is None:
                return "unknown", f"`{first}` is imported or bound in two ways"
            return self.resolve_qualified(f"{qualified}.{rest}" if rest else qualified, depth + 1, near=file)
        return "unknown", f"`{first}` is not defined or imported in {shown_path(self.paths.get(file, file))}"

    def _inside(self, file: str, name: str, depth: int) -> Tuple[str, object]:
        summary = self.summary(file)
        parts = name.split(".")
        for length in range(len(parts), 0, -1):
            head = ".".join(parts[:length])
            if head in summary["classes"]:
                # `Model.from_config(...)`: a classmethod constructor is taken to build the class.
                return "class", (file, head)
        if parts[0] in summary["functions"] and len(parts) == 1:
            return "function", (file, parts[0])
        return "unknown", f"`{name}` is not a class or function of {shown_path(self.paths.get(file, file))}"

    def resolve_qualified(self, qualified: str, depth: int, near: Optional[str] = None) -> Tuple[str, object]:
        parts = qualified.split(".")
        for length in range(len(parts), 0, -1):
            file = self._module_file(".".join(parts[:length]), near)
            if file is None:
                continue
            rest = ".".join(parts[length:])
            if not rest:
                return "unknown", f"`{qualified}` is a module"
            summary = self.summary(file)
            first = rest.split(".")[0]
            if first in summary["classes"] or first in summary["functions"]:
                return self._inside(file, rest, depth)
            if first in summary["imports"]:  # a re-export: `from .model import Seq2Seq` in __init__.py
                return self.resolve(file, rest, depth + 1)
            return "unknown", f"`{qualified}` is not found in {shown_path(self.paths.get(file, file))}"
        if parts[0] in self._top_names:
            return "unknown", f"`{qualified}` is not among the files linted"
        if parts[-1][:1].isupper():
            return "external", qualified  # a class of another package: no class of ours runs in it
        return "unknown", f"`{qualified}` is a function of another package; what it returns is unknown"

    def module_status(self, key: ClassKey, depth: int = 0) -> str:
        """MODULE when the class's bases lead to nn.Module through any file of the project, PLAIN when
        every base leads to classes that are not modules, UNKNOWN when some base cannot be followed (a
        class of another package, a name the index cannot resolve)."""
        if key in self._status_memo:
            return self._status_memo[key]
        file, name = key
        info = self.summary(file)["classes"].get(name)
        if info is None or depth > _MAX_DEPTH:
            return UNKNOWN_STATUS
        self._status_memo[key] = UNKNOWN_STATUS  # a cycle of bases proves nothing
        imports = self.summary(file)["imports"]
        statuses = []
        for base in info["bases"]:
            if base is None:
                statuses.append(UNKNOWN_STATUS)  # `Base(...)` or `make_base()`: nothing to follow
                continue
            qualified = canonical(qualify(imports, base))
            if is_module_base(qualified) or rnn_kind(qualified):
                statuses.append(MODULE)
                break
            if qualified in PLAIN_BASES or (qualified or "").startswith("torch."):
                statuses.append(PLAIN)
                continue
            kind, found = self.resolve(file, base, depth + 1)
            if kind == "class" and found != key:
                statuses.append(self.module_status(found, depth + 1))
            elif kind == "external" and (is_module_base(canonical(found)) or rnn_kind(canonical(found))):
                statuses.append(MODULE)  # `Module = nn.Module` in one file, imported as a base in another
                break
            else:
                statuses.append(UNKNOWN_STATUS)
        status = (MODULE if MODULE in statuses else UNKNOWN_STATUS if UNKNOWN_STATUS in statuses else PLAIN)
        self._status_memo[key] = status
        return status

    def class_facts(self, path: str) -> dict:
        """What the project says of a file's classes and imports, by qualified name: `inherited` (each
        class's bases in other files, reached through any file), `imported` (the names the file imports
        from other files of the project that can build an RNN: a factory, or a class an RNN may be handed
        to), `rnn_elsewhere` (whether any of those files mentions an RNN), and for its module classes the
        RNNs callers hand them (`injected`), where they are built as roots (`roots`) and the files that
        may hold them (`built_elsewhere`). A file is given as (path, qualified name, size, mtime_ns), so
        that a change to it changes the context. (Which classes are modules is the evaluator's answer, in
        the worker; the index's own `module_status` only picks the classes these facts are made for.)"""
        key = _path_key(path)
        if key not in self.paths or not self._entry(key, need_summary=False).flags:
            return {}
        modules, inherited = [], []
        rnn_elsewhere = False
        summary = self.summary(key)
        for name in summary["classes"]:
            if self.module_status((key, name)) == MODULE:
                modules.append(name)
            elsewhere = [(self.paths[file], base, *self._entries[file].version)
                         for file, base in self._bases_of((key, name)) if file != key]
            if elsewhere:
                inherited.append((name, tuple(elsewhere)))
                rnn_elsewhere = rnn_elsewhere or any(self._mentions_rnn(_path_key(item[0])) for item in elsewhere)
        imported = []
        # What the file calls where an RNN it builds can end up on a class: in the classes, at module level
        # (a decorator excepted), or in what the functions these call return. An imported function used
        # otherwise (as a class's decorator, in a function no class calls) builds nothing a class holds.
        called = set(summary["calls"]).union(*(info["calls"] for info in summary["classes"].values()))
        functions = summary["functions"]
        pending = [name for name in called if name in functions]
        while pending:
            for ref in functions[pending.pop()]["returns"]:
                if ref is not None and ref not in called:
                    called.add(ref)
                    if ref in functions:
                        pending.append(ref)
        for local, qualified in summary["imports"].items():
            if qualified is None or local in summary["classes"] or local in summary["functions"]:
                continue
            if not self._may_define_rnn_code(qualified, near=key):
                continue  # its module mentions no RNN: nothing there to follow (and no file to parse)
            kind, found = self.resolve_qualified(qualified, 1, near=key)
            if kind not in ("class", "function") or found[0] == key or not self._mentions_rnn(found[0]):
                continue
            if kind == "class" and self.module_status(found) == PLAIN:
                continue  # known not to be a module (a tensor subclass, a config): it cannot be an RNN
            if kind == "function" and not any(name == local or name.startswith(local + ".") for name in called):
                continue
            imported.append((local, kind, self.paths[found[0]], found[1], *self._entries[found[0]].version))
        # Root modules, among the classes that build an RNN themselves (a torch RNN, or a class whose name
        # says it is one: `PackedLSTM`, `WeightDropGRU`): what rules needing the root modules check where no
        # wrap of them is found. Finding where a class is built costs a look at the whole project, so only
        # these ask.
        roots = []
        for name in modules:
            info = summary["classes"][name]
            if info.get("state") and any(_RNN_NAME_IN_CALL.search(call) for call in info["calls"]):
                site = self.root_site((key, name))
                if site is not None:
                    roots.append((name, site))
        # Where the classes that pack sequences, or have methods besides forward, may be held by another
        # module: the files that call them. Their forward's arguments are what the holders pass, and the
        # methods their forward calls on the held instance run on the replicas too (the evaluator reads both).
        builders = []
        for name in modules:
            info = summary["classes"][name]
            packs = any(call.rsplit(".", 1)[-1] == "pack_padded_sequence" for call in info["calls"])
            # A holder calling the class's methods imports its file (the class itself, or a factory of it).
            files = self._calling_methods(key, info["methods"]) if info["methods"] else []
            if packs:
                files += [file for file in self.files_calling(key, name) if file not in files]
            if files:
                builders.append((name, tuple((self.paths[file], *self._entries[file].version) for file in files)))
        injected = [(name, *entry) for (file, name), entries in self._handed.items() if file == key for entry in entries]
        rnn_elsewhere = rnn_elsewhere or bool(imported) or bool(injected)
        return {"inherited": tuple(sorted(inherited)),
                "imported": tuple(sorted(imported)), "rnn_elsewhere": rnn_elsewhere, "injected": tuple(sorted(injected)),
                "roots": tuple(sorted(roots)), "built_elsewhere": tuple(sorted(builders))}

    # -- root modules ---------------------------------------------------------------------------------
    def _called_names(self, key: str) -> FileEntry:
        """The file's entry with the class-like names its text calls and the methods it calls on what an
        instance holds, both made by one read of the text (from the cache when the file has not changed)."""
        entry = self._entry(key, need_summary=False)
        if entry.constructed is None or entry.held_calls is None:
            data = self._read(key)
            entry.constructed = sorted({name.decode("ascii", "replace") for name in _CALLED_CLASS.findall(data)})
            entry.held_calls = sorted({name.decode("ascii", "replace") for name in _HELD_METHOD_CALL_TEXT.findall(data)})
            self._unsaved = True
        return entry

    def attributes_read_elsewhere(self, key: str) -> Tuple[str, ...]:
        """The names the file uses as `self.<name>` that some other file of the project mentions as
        `<object>.<name>` (not as its own `self.<name>`, nor as a setting, `args.<name>`): a plain text
        search, made once per run for every file holding a class DataParallel runs, over the files of the
        project of this file and of the files whose wraps reach it, so that a run over several projects
        says what a run over this one says."""
        if self._mentions is None:
            self._self_names = {file: {match.decode() for match in _SELF_ATTRIBUTE_TEXT.findall(self._read(file))}
                                for file in self._wrap_files}
            wanted = {name.encode() for name in set().union(*self._self_names.values())}
            self._mentions = {}
            for other in self.paths if wanted else ():
                data = self._read(other)
                attributes = _ATTRIBUTE_TEXT.findall(data)
                hits = wanted.intersection(attributes)
                if hits:  # through another object than the file's own `self` or the run's settings
                    counts = Counter(attributes)
                    counts.subtract(_SELF_ATTRIBUTE_TEXT.findall(data))
                    counts.subtract(_SETTINGS_ATTRIBUTE_TEXT.findall(data))
                    for name in hits:
                        if counts[name] > 0:
                            self._mentions.setdefault(name.decode(), set()).add(other)
        names = self._self_names.get(key, set())
        roots = {project_root(file) for file in (key, *self._wrap_files.get(key, ()))}
        within = tuple(_path_key(str(root)).rstrip(os.sep) + os.sep if root is not None else "" for root in roots)
        return tuple(sorted(name for name in names
                            if any(other != key and other.startswith(within) for other in self._mentions.get(name, ()))))

    def files_calling(self, key: str, name: str) -> List[str]:
        """The other files of the project whose text calls the class `name` of file `key` by its simple
        name and may import it (a cheap look: whether a call there builds this class is the evaluator's)."""
        found = [file for file in self._callers_of(key, name) if file != key]
        for file in found:
            self._entry(file, need_summary=False)  # its version goes into the context
        return found

    def _calling_methods(self, key: str, methods: Sequence[str]) -> List[str]:
        """The other files of the project that may import file `key` and whose text calls one of `methods`
        on something an instance holds (`self.attention.init_states(x)`): where a module holding an instance
        of a class of `key` may call its methods, however the instance was built. The map of called names
        is made once, on first use (_called_maps)."""
        held_calls = self._called_maps()[1]
        candidates = sorted({file for name in methods for file in held_calls.get(name, ())} - {key})
        found = [file for file in candidates if self._may_import_from(file, key, through_packages_only=True)]
        for file in found:
            self._entry(file, need_summary=False)  # its version goes into the context
        return found

    def _callers_of(self, key: str, name: str) -> List[str]:
        """The files of the project (`key` too) whose text calls a class `name` of file `key` by its simple
        name and may import it from there; the map of called names is made once, on first use (_called_maps)."""
        calling = self._called_maps()[0]
        # Another file's `Encoder(...)` that cannot import this one is another class of that name.
        return [file for file in calling.get(name.rsplit(".", 1)[-1], ()) if self._may_import_from(file, key)]

    def _called_maps(self) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
        """(class-like name -> the files calling it, method name -> the files calling it on what an instance
        holds), over every file of the project in one pass of their entries, made on first use."""
        if self._called is None:
            calling: Dict[str, List[str]] = {}
            held_calls: Dict[str, List[str]] = {}
            for file in sorted(self.paths, key=lambda k: self.paths[k]):
                entry = self._called_names(file)
                for called in entry.constructed:
                    calling.setdefault(called, []).append(file)
                for name in entry.held_calls:
                    held_calls.setdefault(name, []).append(file)
            self._called = calling, held_calls
        return self._called

    def root_site(self, start: ClassKey) -> Optional[str]:
        """Where the project builds the module class as a root, a module no other one holds: every call
        of it anywhere is outside module classes and handed to no class-like callee that may keep it (a
        module class, a class the index cannot place, a class of another package such as nn.Sequential).
        None when one is not, or when nothing in the project builds it (it may be built in ways the index
        cannot see, a registry or configuration)."""
        if start in self._roots:
            return self._roots[start]
        self._roots[start] = None
        simple = start[1].rsplit(".", 1)[-1]
        sites: List[str] = []
        for file in self._callers_of(start[0], start[1]):
            for callee, line, owner, handed in self.summary(file)["builds"]:
                if callee.rsplit(".", 1)[-1] != simple or self.resolve(file, callee) != ("class", start):
                    continue
                if owner is not None and self.module_status((file, owner)) != PLAIN:
                    return None  # built inside a module class (or one that may be): a submodule
                if RETURNED in handed or any(self._may_keep_module(file, other) for other in handed):
                    return None
                cell = self._cell_of(file, line)
                sites.append(f"{shown_path(self.paths[file])}:" + (f"cell {cell[0]}:{cell[1]}" if cell else str(line)))
        self._roots[start] = sites[0] if sites else None
        return self._roots[start]

    def _cell_of(self, key: str, line: int) -> Optional[Tuple[int, int]]:
        """(cell, line in it) of a line of a notebook's Python view; None for a Python file."""
        if not is_notebook(key):
            return None
        found = in_cell(line, cell_starts(self._read(key).decode("utf-8", "replace")))
        return (found[0], found[1]) if found[0] is not None else None

    def _may_import_from(self, file: str, target: str, through_packages_only: bool = False) -> bool:
        """Whether a name used in `file` can be a class defined in `target`: the same file, a file its
        import statements name, or one re-exported by a file those name (a package's `__init__`; with
        `through_packages_only`, only that: far fewer files' imports to resolve, where many files are asked)."""
        if file == target:
            return True
        imported = self._imported_files(file)
        return target in imported or any(target in self._imported_files(other) for other in imported
                                         if not through_packages_only or other.endswith("__init__.py"))

    def _may_keep_module(self, file: str, callee: str) -> bool:
        """Whether a class-like callee handed a module may make it a submodule: anything but a project
        class known not to be a module, or a function."""
        kind, found = self.resolve(file, callee)
        if kind == "class":
            return self.module_status(found) != PLAIN
        return kind != "function"

    def _hand_in(self, file: str, hand: list) -> None:
        """Note an RNN handed to a project class at a call in `file` (see _Summarizer._handed_rnns)."""
        callee, key, what, kind = hand
        if callee.startswith("super:"):
            info = self.summary(file)["classes"].get(callee[len("super:"):])
            bases = [base for base in (info or {}).get("bases", ()) if base is not None]
            if not bases:
                return
            callee = bases[0]
        found_kind, found = self.resolve(file, callee)
        if found_kind == "class":
            entry = (key, what, kind)
            if entry not in self._handed.setdefault(found, []):
                self._handed[found].append(entry)

    def _bases_of(self, start: ClassKey) -> List[ClassKey]:
        """The project classes a class derives from, nearest first, through any file."""
        found: List[ClassKey] = []
        queue = [start]
        while queue and len(found) < _MAX_DEPTH * 4:
            file, name = queue.pop(0)
            info = self.summary(file)["classes"].get(name)
            for base in (info or {}).get("bases", ()):
                if base is None:
                    continue
                kind, target = self.resolve(file, base)
                if kind == "class" and target != start and target not in found:
                    found.append(target)
                    queue.append(target)
        return found

    # -- the whole index ------------------------------------------------------------------------------
    def build(self, jobs: int = 1, pool=None) -> ProjectIndex:
        index = ProjectIndex()
        keys = sorted(self.paths, key=lambda k: self.paths[k])
        entries = [(key, self._entry(key, need_summary=False, defer=True)) for key in keys]
        pending = [(key, entry) for key, entry in entries if entry.summarised_at_build and entry.summary is None]
        for (_, entry), summary in zip(pending, self._summaries([key for key, _ in pending], jobs, pool)):
            entry.summary = summary
        for key, entry in entries:
            if not entry.summarised_at_build or entry.summary is None:
                continue
            for hand in entry.summary["hands"]:
                self._hand_in(key, hand)
            for wrap in entry.summary["wraps"]:
                site = WrapSite(shown_path(self.paths[key]), wrap["line"], wrap["col"], wrap["text"],
                                self._cell_of(key, wrap["line"]))
                index.sites.append(site)
                targets, reason, kinds = self._evaluated.targets(key, wrap)
                if kinds is not None:  # the file wraps a torch RNN, perhaps one another file's factory builds
                    index.rnn_wraps.setdefault(key, []).append((wrap["text"], kinds))
                if reason:
                    index.unresolved.append(UnresolvedWrap(site, reason))
                    continue
                for target in targets:
                    index.direct.setdefault(target, []).append(site)
                    self._reach(target, site, index, key)
        index.files_parsed = self.files_parsed
        index._builder = self
        self._wrap_files = index.wrap_files
        return index

    @property
    def _evaluated(self) -> "_EvaluatedWraps":
        if self._evaluated_wraps is None:
            self._evaluated_wraps = _EvaluatedWraps(self)
        return self._evaluated_wraps

    def _reach(self, start: ClassKey, site: WrapSite, index: ProjectIndex, wrap_file: str) -> None:
        """The class, its submodules and bases, and theirs, all run on the replicas of this wrap."""
        stack = [start]
        while stack:
            key = stack.pop()
            index.wrap_files.setdefault(key[0], set()).add(wrap_file)
            if key in index.wrapped:
                continue
            index.wrapped[key] = site
            stack.extend(k for k in self._evaluated.held_and_bases(key) if k not in index.wrapped)


# Why a wrapped value is not followed, said of the wrap's argument.
_UNFOLLOWED = {
    Why.PARAMETER: "comes from a parameter whose callers are not followed",
    Why.OTHER_CALLERS: "comes from a parameter whose callers are not followed",
    Why.EXTERNAL_CALL: "is what a function of another package returns, which is unknown",
    Why.UNRESOLVED: "uses a name that is neither defined nor imported",
    Why.TOO_DEEP: "takes too many steps to follow",
    Why.RUNTIME_STRING: "is chosen by a string known only at run time",
    Why.UNSUPPORTED: "is an expression the evaluator does not model",
}


# Wrap files one evaluator binds from the index's bytes before the next answers start from a fresh one: a
# bound file keeps its syntax tree, and a project of thousands of wrap sites (2,000 generated models, each
# wrapped) held them all at once (660 MB). Answers already made are kept; an evaluator's memo, keyed by
# nodes, goes with it.
_WRAP_FILES_PER_EVALUATOR = 32


class _EvaluatedWraps:
    """What a DataParallel call of the project wraps, and what then runs on the replicas, as the evaluator
    says: the module argument's values (names through scopes and imports, factories' returns, `.cuda()`),
    and from each wrapped class its project bases and the module classes its attributes hold."""

    def __init__(self, builder: "IndexBuilder") -> None:
        self._builder = builder
        self._evaluator = None
        self._bound: Dict[str, bytes] = {}  # the files bound from the index's bytes, with those bytes
        self._read_before: Set[str] = set()  # the files earlier evaluators of the build read
        # Answers of an earlier run, kept while every file they rest on is as it was then (all or nothing:
        # the evaluator's memo lets one answer rest on files another read).
        stored = builder._stored_wraps or {}
        files = stored.get("files") if isinstance(stored.get("files"), list) else None
        self._files: Dict[str, list] = {}
        self._sites: Dict[str, list] = {}
        self._held: Dict[str, list] = {}
        self._cacheable = True
        # The project's files themselves too: a module that appears may answer an import that failed.
        if files and stored.get("project") == self._project() and all(_still(entry) for entry in files):
            self._files = {entry[0]: entry for entry in files}
            self._sites = dict(stored.get("sites") or {})
            self._held = dict(stored.get("held") or {})

    @property
    def evaluator(self):
        if self._evaluator is None:
            from .evaluator import Evaluator

            self._evaluator = Evaluator()
        return self._evaluator

    def stored(self) -> Optional[dict]:
        """What the index cache keeps of these answers, with the version of every file they rest on."""
        if not self._cacheable:
            return None
        files = dict(self._files)
        for path in self._read_before | (self._evaluator.read if self._evaluator is not None else set()):
            try:
                status = os.stat(path)
            except OSError:
                continue  # a file that is not there: an answer resting on it is re-made when it appears
            files[path] = [path, status.st_size, status.st_mtime_ns]
        return {"files": sorted(files.values()), "sites": self._sites, "held": self._held, "project": self._project()}

    def _project(self) -> str:
        import hashlib

        return hashlib.sha256("\n".join(sorted(self._builder.paths)).encode("utf-8", "surrogateescape")).hexdigest()

    def targets(self, key: str, wrap: dict) -> Tuple[List[ClassKey], Optional[str], Optional[str]]:
        """The project classes the wrap's module can be; the reason when it may be something unknown; the
        torch RNN kinds it can be (`nn.LSTM or nn.GRU`, from a factory of another file say), or None."""
        site = f"{key}\n{wrap['line']}\n{wrap['col']}"
        if site not in self._sites:
            targets, reason, kinds = self._targets(key, wrap)
            self._sites[site] = [[list(target) for target in targets], reason, kinds]
            self._builder._unsaved = True
        targets, reason, kinds = self._sites[site]
        return [tuple(target) for target in targets], reason, kinds

    def held_and_bases(self, key: ClassKey) -> List[ClassKey]:
        """The project bases of a class and the project module classes its attributes hold."""
        name = f"{key[0]}\n{key[1]}"
        if name not in self._held:
            self._held[name] = [list(found) for found in self._held_and_bases(key)]
            self._builder._unsaved = True
        return [tuple(found) for found in self._held[name]]

    def _summary(self, key: str):
        """The file's bindings, from the index's own bytes (a notebook's Python view, text not on disk)."""
        path = os.path.abspath(self._builder.paths.get(key, key))
        if key in self._builder.sources:
            self._cacheable = False  # text not on disk: nothing to check a saved answer against
        if key not in self._bound:
            if len(self._bound) >= _WRAP_FILES_PER_EVALUATOR:
                if self._evaluator is not None:  # None only if no file bound so far parsed
                    self._read_before |= self._evaluator.read
                self._evaluator, self._bound = None, {}
            self._bound[key] = data = self._builder._read(key)
            try:
                with stages.stage("python parse", path):
                    tree = ast.parse(data)
                self.evaluator.adopt(path, tree)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        return self.evaluator.summary(path)

    def _targets(self, key: str, wrap: dict) -> Tuple[List[ClassKey], Optional[str], Optional[str]]:
        summary = self._summary(key)
        call = _call_at(summary.tree, wrap["line"], wrap["col"], self._bound[key]) if summary else None
        if call is None:
            return [], "the wrapped value cannot be followed (the call is not found again)", None
        target = wrapped_module(call)
        if target is None:
            return [], "the wrapped value cannot be followed (no module argument)", None
        from .evaluator import is_data_parallel
        from .values import Instance, ProjectClass, Unknown, describe_kinds

        scope = summary.scope_at(call)
        receiver = next((ProjectClass(summary.path, info.qualname) for info in summary.classes.values()
                         if scope.node in info.methods.values()), None)
        try:
            values = self.evaluator.values_where(target, scope, receiver, call.lineno)
            fact = self.evaluator.rnn_fact(frozenset(value for value in values if not is_data_parallel(value)))
        except RecursionError:
            return [], "the wrapped value cannot be followed (nested too deeply)", None
        kinds = describe_kinds(fact.kinds) if fact is not None else None
        unknown = sorted((value.why for value in values if isinstance(value, Unknown)), key=lambda why: why.name)
        if unknown or not values:
            shown = ast.unparse(target)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return [], f"`{shown}` {_UNFOLLOWED[unknown[0] if unknown else Why.UNSUPPORTED]}", kinds
        return sorted({(_path_key(value.of.path), value.of.qualname) for value in values
                       if isinstance(value, Instance) and isinstance(value.of, ProjectClass)}), None, kinds

    def _held_and_bases(self, key: ClassKey) -> List[ClassKey]:
        from .values import Container, Instance, ProjectClass

        cls = ProjectClass(os.path.abspath(self._builder.paths.get(key[0], key[0])), key[1])
        if self._summary(key[0]) is None and self.evaluator.summary(cls.path) is None:
            return []
        found: Set[ProjectClass] = set()
        try:
            found.update(base for base in self.evaluator.mro(cls)[1:] if isinstance(base, ProjectClass))
            info = self.evaluator.class_info(cls)
            for owner in [cls, *found]:
                owner_info = info if owner == cls else self.evaluator.class_info(owner)
                for attr in (owner_info.self_assigned if owner_info is not None else ()):
                    pending = list(self.evaluator.assigned_values(cls, attr))
                    while pending:
                        value = pending.pop()
                        if isinstance(value, Container):
                            pending.extend(value.members)
                        elif (isinstance(value, Instance) and isinstance(value.of, ProjectClass)
                              and self.evaluator.is_module_class(value.of)):
                            found.add(value.of)
        except RecursionError:
            pass
        return sorted((_path_key(found_cls.path), found_cls.qualname) for found_cls in found)


def _still(entry: object) -> bool:
    """Whether a file is as a saved [path, size, mtime_ns] says."""
    try:
        path, size, mtime_ns = entry
        status = os.stat(path)
    except (OSError, TypeError, ValueError):
        return False
    return status.st_size == size and status.st_mtime_ns == mtime_ns


def _character_column(line: bytes, col_offset: int) -> int:
    """ast's column (UTF-8 bytes from the line's start) as the 1-based character column messages count."""
    return len(line[:col_offset].decode("utf-8", "replace")) + 1


def _call_at(tree: ast.Module, line: int, col: int, data: bytes) -> Optional[ast.Call]:
    """The call starting at a line and 1-based character column (as the summaries record wrap sites)."""
    lines = data.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else b""
    starting = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.lineno == line
                and _character_column(text, node.col_offset) == col]
    # `nn.DataParallel(model).cuda()` starts where the wrap does: the innermost call is the wrap.
    return min(starting, key=lambda node: ((node.end_lineno or 0), node.end_col_offset or 0), default=None)


def index_cache_file(cache_dir: Optional[Path], anchor: str) -> Optional[Path]:
    """Where the index of files under `anchor` (a project root or the working folder) is cached."""
    if cache_dir is None:
        return None
    import hashlib

    from .. import __version__

    # The summaries are what this code of the linter makes of each file: another code, another index.
    digest = hashlib.sha256((_path_key(anchor) + "\0" + code_fingerprint()).encode("utf-8", "surrogateescape"))
    return cache_dir / __version__ / f"index-{digest.hexdigest()[:16]}.json"


def build_index(paths: Iterable[str], sources: Optional[Mapping[str, bytes]] = None,
                cache_file: Optional[Path] = None, jobs: int = 1, pool=None) -> ProjectIndex:
    """`pool`: a process pool of `jobs` workers to summarise wrap files in, instead of one of its own."""
    with stages.stage("index build and contexts"):
        builder = IndexBuilder(paths, sources, cache_file)
        index = builder.build(jobs, pool)
        builder.save_cache()
        return index
