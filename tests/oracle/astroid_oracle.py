"""The astroid oracle: which `self.<attr>` of each nn.Module subclass of a project can hold a torch RNN.

An independent answer to the question dp_rnn_lint.analysis.evaluator answers, computed with astroid
(pylint's inference engine) over a small stub of torch (tests/oracle/torch_stub.py), so that the two can be
compared (benchmarks/oracle.py, tests/test_oracle.py). Nothing here is used by the linter itself.

What is followed is what astroid follows: imports between the project's files (each file is built under
its real dotted module name), star imports, re-exports, aliases, function returns (with the call's
arguments bound), conditional expressions and the MRO. On top of astroid, this module only reads the
elements of nn.ModuleList(...) / list / tuple literals and comprehensions, and `.append` / `.extend` /
`.insert` calls made on such a list (a local name in the same function, or `self.<attr>` in any method).

Where astroid meets a value it cannot infer (a parameter, a name built by getattr, an instance of a class
whose bases it cannot resolve, an nn.ModuleList made elsewhere), the attribute is marked as one on which
it abstains, rather than one it says holds no RNN (the `unknown` output).

Known limits (astroid's, kept on purpose: the oracle reports what astroid can prove):
- a parameter's value is not known inside the function (`self.rnn = rnn_class(...)` contributes nothing),
  unless the assignment is reached through a call that astroid binds (a factory's return), and then the
  `if` on the argument is not pruned: both branches' kinds count;
- `str` methods are not evaluated: `getattr(nn, "gru".upper())` is unknown;
- an nn.ModuleList returned by a function is an instance without elements: only a ModuleList built in
  the assignment itself (or from a local list, or extended with `+=` / `.append`) is read.
A class defined in a function is named through it, without `<locals>` (`Outer.build.Inner`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from .torch_stub import stub_root

STUB = stub_root()
RNN_KINDS = {"torch.nn.RNN": "RNN", "torch.nn.LSTM": "LSTM", "torch.nn.GRU": "GRU"}
MODULE_QNAME = "torch.nn.Module"
MODULE_LIST_QNAME = "torch.nn.ModuleList"
_MUTATORS = ("append", "extend", "insert")
_MAX_DEPTH = 6  # how deep list elements, list variables and their mutations are followed
_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages"}

Key = Tuple[str, str]
Attributes = Dict[str, FrozenSet[str]]


class FileTimeout(BaseException):
    """Raised by the alarm when one file's inference runs past its limit (a BaseException, so that no
    `except Exception` inside astroid swallows it)."""


def astroid_rnn_attributes(root: str, paths: Sequence[str], time_limit: float = 20.0,
                           problems: Optional[List[Tuple[str, str]]] = None,
                           unknown: Optional[Dict[Key, FrozenSet[str]]] = None) -> Dict[Key, Attributes]:
    """For every nn.Module subclass in the files of `paths` (files or folders, relative to `root` or not):
    {(relpath with '/', class qualname): {attr: kinds among RNN/LSTM/GRU}}, attributes with no kind left
    out. A file astroid cannot read, or that runs past `time_limit` seconds, keeps the classes finished
    before; what went wrong is appended to `problems` as (relpath, message).

    `unknown`, when given, receives for each module class the attributes left out although some value
    assigned to them was beyond astroid (Uninferable, or an instance of a class whose bases it cannot
    resolve): where astroid abstains rather than says "no RNN"; and {"*"} for a class it does not take for a
    module because some base of it cannot be resolved."""
    import astroid  # imported here so that the module loads (and tests can skip) without astroid

    root_path = Path(root).resolve()
    files = python_files(root_path, paths)
    named = [(path, *_module_name(root_path, path)) for path in files]
    package_parents = sorted({str(search) for _, _, search, is_script in named if not is_script},
                             key=lambda folder: (folder != str(root_path), folder))
    base_path = [str(STUB), str(root_path), *(p for p in package_parents if p != str(root_path))]
    # Scripts outside packages import their neighbours by bare name (`from model import Net`), as Python
    # does from the script's folder; folders of scripts are read one at a time, with a fresh cache, since
    # two folders often hold modules of the same name.
    groups: Dict[Optional[str], List[Tuple[Path, str]]] = {}
    for path, modname, search, is_script in named:
        groups.setdefault(str(search) if is_script and search != root_path else None, []).append((path, modname))
    result: Dict[Key, Attributes] = {}
    for script_dir in sorted(groups, key=lambda folder: (folder is not None, folder or "")):
        search_path = base_path if script_dir is None else [str(STUB), script_dir, *base_path[1:]]
        with _astroid_session(astroid, search_path):
            for path, modname in groups[script_dir]:
                relpath = path.relative_to(root_path).as_posix()
                try:
                    with _time_limit(time_limit):
                        module = astroid.MANAGER.ast_from_file(str(path), modname, source=True)
                        for qualname, cls in _module_classes(module):
                            try:
                                attributes, abstained = _class_rnn_attributes(cls)
                            except (Exception, RecursionError) as error:
                                _note(problems, relpath, f"{qualname}: {type(error).__name__}: {error}"[:200])
                                continue
                            if attributes is not None:
                                result[(relpath, qualname)] = attributes
                            if unknown is not None and abstained:
                                unknown[(relpath, qualname)] = abstained
                except FileTimeout:
                    _note(problems, relpath, f"inference ran past {time_limit:g} s")
                except (Exception, RecursionError) as error:  # astroid's errors, a file it cannot parse
                    _note(problems, relpath, f"{type(error).__name__}: {error}"[:200])
    return result


def _note(problems: Optional[List[Tuple[str, str]]], relpath: str, message: str) -> None:
    if problems is not None:
        problems.append((relpath, message))


def python_files(root: Path, paths: Sequence[str] = (".",)) -> List[Path]:
    """The .py files of `paths` (files or folders, relative to `root` or absolute) that lie under `root`,
    hidden folders and __pycache__ left out, sorted."""
    found: Set[Path] = set()
    for given in paths:
        path = Path(given)
        path = (path if path.is_absolute() else root / path).resolve()
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
                found.update(Path(folder) / name for name in names if name.endswith(".py"))
        elif path.suffix == ".py" and path.is_file():
            found.add(path)
    return sorted(p for p in found if p == root or root in p.parents)


def _module_name(root: Path, path: Path) -> Tuple[str, Path, bool]:
    """(dotted module name, the folder it is imported from, whether it is a script outside packages)."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while folder != root and (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    is_script = not parts or parts == [path.stem] and path.stem != "__init__"
    return ".".join(parts) or "__init__", folder, is_script


@contextlib.contextmanager
def _astroid_session(astroid, search_path: List[str]) -> Iterator[None]:
    """astroid with a clean cache (its modules are cached by dotted name, and its module finder caches what
    sys.path gave) and `search_path` in front of sys.path."""
    saved = list(sys.path)
    astroid.MANAGER.clear_cache()
    sys.path[:0] = search_path
    try:
        yield
    finally:
        sys.path[:] = saved


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise FileTimeout after `seconds` (only in the main thread of a POSIX process; no limit elsewhere)."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise FileTimeout()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _module_classes(module) -> Iterator[Tuple[str, object]]:
    """(qualname, ClassDef) of every class of the module; a class defined in a function is named through
    it, without Python's `<locals>` (`Outer.build.Inner`)."""
    from astroid import nodes

    stack = [(module, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.get_children():
            if isinstance(child, (nodes.ClassDef, nodes.FunctionDef)):
                qualname = prefix + child.name
                if isinstance(child, nodes.ClassDef):
                    yield qualname, child
                stack.append((child, qualname + "."))
            elif isinstance(child, nodes.NodeNG) and not isinstance(child, nodes.Lambda):
                stack.append((child, prefix))  # a class under `if`, `try`, `with`, in a loop


def _ancestors(cls) -> List[object]:
    try:
        return list(cls.ancestors())
    except (Exception, RecursionError):
        return []


def _class_rnn_attributes(cls) -> Tuple[Optional[Attributes], FrozenSet[str]]:
    """(None when astroid does not see `cls` as an nn.Module subclass, else its RNN attributes; the
    attributes without a kind for which astroid could not infer every value)."""
    ancestors = _ancestors(cls)
    if not any(ancestor.qname() == MODULE_QNAME for ancestor in ancestors):
        return None, frozenset() if _bases_resolved([cls, *ancestors]) else frozenset({"*"})
    owners = [cls, *(a for a in ancestors if not _in_stub(a))]
    kinds: Dict[str, Set[str]] = {}
    uncertain: Set[str] = set()
    for owner in owners:
        for attr, targets in _self_assignments(owner).items():
            found = kinds.setdefault(attr, set())
            for target in targets:
                finder = _KindFinder()
                found |= finder.assigned(target)
                if finder.uncertain:
                    uncertain.add(attr)
    for owner in owners:
        for attr, call in _self_mutations(owner):
            if attr in kinds:
                finder = _KindFinder()
                kinds[attr] |= finder.mutation(call, 0)
                if finder.uncertain:
                    uncertain.add(attr)
    attributes = {attr: frozenset(found) for attr, found in sorted(kinds.items()) if found}
    return attributes, frozenset(uncertain - set(attributes))


def _in_stub(cls) -> bool:
    file = cls.root().file or ""
    return file.startswith(str(STUB))


def _methods(cls) -> Iterator[object]:
    from astroid import nodes

    stack = list(cls.body)
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.FunctionDef):
            yield node
        elif isinstance(node, (nodes.If, nodes.Try)):
            stack.extend(node.get_children())


def _self_name(method) -> Optional[str]:
    positional = [*(method.args.posonlyargs or ()), *(method.args.args or ())]
    if not positional or method.type == "staticmethod":
        return None
    return positional[0].name


def _self_assignments(cls) -> Dict[str, List[object]]:
    """attr -> the AssignAttr nodes `self.<attr> = ...` in the class's own methods (closures included)."""
    from astroid import nodes

    found: Dict[str, List[object]] = {}
    for method in _methods(cls):
        self_name = _self_name(method)
        if self_name is None:
            continue
        for target in method.nodes_of_class(nodes.AssignAttr, skip_klass=nodes.ClassDef):
            if isinstance(target.expr, nodes.Name) and target.expr.name == self_name:
                found.setdefault(target.attrname, []).append(target)
    return found


def _self_mutations(cls) -> Iterator[Tuple[str, object]]:
    """(attr, call) for every `self.<attr>.append(...)` / `.extend` / `.insert` in the class's methods."""
    from astroid import nodes

    for method in _methods(cls):
        self_name = _self_name(method)
        if self_name is None:
            continue
        for call in method.nodes_of_class(nodes.Call, skip_klass=nodes.ClassDef):
            func = call.func
            if (isinstance(func, nodes.Attribute) and func.attrname in _MUTATORS
                    and isinstance(func.expr, nodes.Attribute) and isinstance(func.expr.expr, nodes.Name)
                    and func.expr.expr.name == self_name):
                yield func.expr.attrname, call


def _class_kinds(cls) -> Tuple[Set[str], bool]:
    """(the RNN kinds `cls` is, whether astroid could resolve all of its bases when it is none)."""
    classes = [cls, *_ancestors(cls)]
    kinds = {RNN_KINDS[c.qname()] for c in classes if c.qname() in RNN_KINDS}
    return kinds, bool(kinds) or _bases_resolved(classes)


def _bases_resolved(classes) -> bool:
    from astroid import util

    for klass in classes:
        for base in klass.bases:
            try:
                values = list(base.infer())
            except (Exception, RecursionError):
                return False
            if not values or any(isinstance(value, util.UninferableBase) for value in values):
                return False
    return True


def _is_module_list(cls) -> bool:
    return any(c.qname() == MODULE_LIST_QNAME for c in (cls, *_ancestors(cls)))


class _KindFinder:
    """The RNN kinds one assignment (or one `.append`) can store, and whether astroid met a value it
    could not infer on the way (`uncertain`)."""

    def __init__(self) -> None:
        self.uncertain = False
        self.module_list_seen = False  # an nn.ModuleList instance, whose elements inference does not keep

    def infer(self, node) -> List[object]:
        from astroid import util

        try:
            values = list(node.infer())
        except (Exception, RecursionError):  # InferenceError, NameInferenceError, astroid's own bugs
            self.uncertain = True
            return []
        known = [value for value in values if not isinstance(value, util.UninferableBase)]
        if len(known) < len(values):
            self.uncertain = True
        return known

    def assigned(self, target) -> Set[str]:
        """Kinds of the values `self.<attr> = value` can bind: astroid's inference of the target, plus
        the elements of a container built in the assignment itself."""
        from astroid import nodes

        kinds: Set[str] = set()
        for value in self.infer(target):
            kinds |= self.value(value, 0)
        parent = target.parent
        built_here = False
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None and (
                target in getattr(parent, "targets", ()) or getattr(parent, "target", None) is target):
            kinds |= self.built(parent.value, 0)
            built_here = isinstance(parent.value, nodes.Call) and self.is_module_list_call(parent.value)
        elif isinstance(parent, nodes.AugAssign) and parent.op == "+=":
            kinds |= self.elements(parent.value, 0)  # self.layers += [nn.LSTM(...)]
            built_here = True
        # A ModuleList made elsewhere (returned by a function, say) has elements astroid does not know.
        self.uncertain |= self.module_list_seen and not built_here
        return kinds

    def value(self, value, depth: int) -> Set[str]:
        """Kinds of one inferred value: an RNN instance, or a list/tuple/set holding some."""
        from astroid import bases, nodes

        if depth > _MAX_DEPTH:
            return set()
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            kinds: Set[str] = set()
            for element in value.elts:
                kinds |= self.expression(element, depth + 1)
            return kinds
        if isinstance(value, bases.Instance) and isinstance(getattr(value, "_proxied", None), nodes.ClassDef):
            kinds, resolved = _class_kinds(value._proxied)
            self.uncertain |= not resolved
            self.module_list_seen |= _is_module_list(value._proxied)
            return kinds
        return set()

    def expression(self, node, depth: int) -> Set[str]:
        """Kinds of what an expression can evaluate to (or of an inferred value standing in a container)."""
        from astroid import bases, nodes

        if depth > _MAX_DEPTH:
            return set()
        if isinstance(node, bases.Instance) and not isinstance(node, nodes.NodeNG):
            return self.value(node, depth)
        kinds: Set[str] = set()
        for value in self.infer(node):
            kinds |= self.value(value, depth + 1)
        return kinds | self.built(node, depth + 1)

    def elements(self, node, depth: int) -> Set[str]:
        """Kinds of the elements of an iterable expression."""
        from astroid import nodes

        if depth > _MAX_DEPTH:
            return set()
        kinds: Set[str] = set()
        for value in self.infer(node):
            if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
                kinds |= self.value(value, depth + 1)
        return kinds | self.built(node, depth + 1)

    def built(self, node, depth: int) -> Set[str]:
        """Kinds of the elements of containers that astroid's inference loses: nn.ModuleList(elements), a
        comprehension, list concatenation or repetition, a starred element, what is appended to a list
        variable."""
        from astroid import nodes

        if depth > _MAX_DEPTH or not isinstance(node, nodes.NodeNG):
            return set()
        if isinstance(node, (nodes.ListComp, nodes.GeneratorExp, nodes.SetComp)):
            return self.expression(node.elt, depth + 1)
        if isinstance(node, nodes.Starred):
            return self.elements(node.value, depth + 1)
        if isinstance(node, nodes.BinOp) and node.op in ("+", "*"):
            return self.elements(node.left, depth + 1) | self.elements(node.right, depth + 1)
        if isinstance(node, nodes.Call) and self.is_module_list_call(node):
            argument = node.args[0] if node.args else next(
                (keyword.value for keyword in node.keywords or () if keyword.arg == "modules"), None)
            return self.elements(argument, depth + 1) if argument is not None else set()
        if isinstance(node, nodes.Name):
            return self.local_mutations(node, depth + 1)
        return set()

    def is_module_list_call(self, call) -> bool:
        from astroid import nodes

        return any(isinstance(value, nodes.ClassDef) and _is_module_list(value) for value in self.infer(call.func))

    def local_mutations(self, name, depth: int) -> Set[str]:
        """Kinds added by `.append` / `.insert` / `.extend` calls on the variable `name` in its own scope."""
        from astroid import nodes

        kinds: Set[str] = set()
        # nodes_of_class never skips the node it starts from, only nested functions and classes.
        for call in name.scope().nodes_of_class(nodes.Call, skip_klass=(nodes.ClassDef, nodes.FunctionDef)):
            func = call.func
            if (isinstance(func, nodes.Attribute) and func.attrname in _MUTATORS
                    and isinstance(func.expr, nodes.Name) and func.expr.name == name.name):
                kinds |= self.mutation(call, depth)
        return kinds

    def mutation(self, call, depth: int) -> Set[str]:
        """Kinds of what one `.append(x)` / `.insert(i, x)` / `.extend(xs)` adds."""
        if not call.args:
            return set()
        if call.func.attrname == "extend":
            return self.elements(call.args[0], depth + 1)
        return self.expression(call.args[-1], depth + 1)
