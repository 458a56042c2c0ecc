"""A cheap, conservative first look at a file through Python's own `ast`: can it hold a finding at all?

The libcst analysis is the source of truth, and costs tens of milliseconds a file; most files that
mention an RNN (torch's own sources, data loading, docs) cannot hold a finding, and `ast` tells so in
a fraction of that. The screen only ever says "maybe" too often, never "no" wrongly: every rule needs
a `forward` method (DataParallel runs nothing else), and each rule declares what its findings start
from (rules/__init__.py), as `ScreenNeeds` hands it here: a class that mentions an RNN class
(directly, or through a name bound in the file to something that does, or through `getattr` on a
module), or a call of a torch function under any alias (perhaps one that does not pass a given
argument, as `pad_packed_sequence` without `total_length`). This module knows no rule codes and never
imports libcst.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .ast_walk import child_nodes, walk
from .torch_names import MODULE_METHODS_RETURNING_SELF

RNN_NAMES = frozenset({"RNN", "LSTM", "GRU"})
# What a rule's findings may start from: a class that holds a torch RNN (named directly, through a name
# bound to one, or looked up with getattr), which may also come from a base or factory in another file...
RNN_CLASS = "a class holding an RNN"
# ...or any forward pass, which may set state on self whatever the module holds (the state rule).
FORWARD_PASS = "a forward pass"
_RNN_WORDS = (b"rnn", b"lstm", b"gru")


@dataclass(frozen=True)
class CallSeed:
    """...or a call of a torch function (under any alias the file binds); with `missing` (keyword,
    position), only a call that does not pass that argument."""

    function: str
    missing: Optional[Tuple[str, int]] = None
    # Most findings live in a forward pass; a seed that may be anywhere (a DataParallel wrap in a training
    # script) makes the screen look at files without a `def forward` too.
    in_forward: bool = True
    # Only a call whose first argument (or `module=`) may be a torch RNN: it mentions an RNN class or a
    # name bound to one, or is an attribute of self in a file that mentions RNN classes.
    given_rnn: bool = False
    # Only a call one of whose arguments mentions a maximum taken in forward (`lengths.max()`,
    # `max(lengths)`, or a name bound to one there): a tensor sized to the longest sequence, as padding by
    # hand makes. Such a file must hold `<function>(` and `max(` (`.max(`, `amax(` too) in its text.
    sized_by_max: bool = False

    def words(self) -> Tuple[str, ...]:
        """The words all of which a file must contain for this seed to be in it."""
        return (f"{self.function}(", "max(") if self.sized_by_max else (self.function,)


@dataclass(frozen=True)
class ScreenNeeds:
    """What the selected rules' findings can start from: what the screen looks for."""

    calls: FrozenSet[CallSeed] = frozenset()
    rnn_class: bool = False
    forward_pass: bool = False

    @property
    def wrappers(self) -> FrozenSet[str]:
        """The functions whose seeds ask whether they are given an RNN (the DataParallel wraps)."""
        return frozenset(seed.function for seed in self.calls if seed.given_rnn)

    def words(self) -> Tuple[Tuple[bytes, ...], ...]:
        """Groups of lower-case words: a file must contain every word of one group for any of these to
        be in it."""
        groups = {tuple(word.lower().encode() for word in seed.words()) for seed in self.calls}
        groups |= {(word,) for word in (_RNN_WORDS if self.rnn_class else ())}
        return tuple(sorted(groups | ({(b"forward",)} if self.forward_pass else set())))


# Stands for `getattr(module, name)` in a set of identifiers: an RNN class may be looked up by name.
_GETATTR = "getattr()"

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The same conditions on the text, before any parse: the words each rule's seeds are spelled with.
_RNN_WORD = re.compile(rb"\b(?:RNN|LSTM|GRU)\b|getattr")
# A function named forward: only whitespace and line continuations can stand between `def` and its name.
_FORWARD_DEF = re.compile(rb"def[\s\\]+forward\b")
# An import of names from a module outside torch and the standard helpers.
_IMPORT_FROM_ELSEWHERE = re.compile(rb"^[ \t]*from[ \t]+(?!torch\b|typing\b|__future__\b|collections\b)[\w.]+[ \t]+import", re.M)
# A class statement with a base other than a plain `Module`, `nn.Module` or `torch.nn.Module`.
_CLASS_WITH_BASE = re.compile(rb"^[ \t]*class[ \t]+\w+[ \t]*\((?![ \t]*(?:torch\.)?(?:nn\.)?Module[ \t]*\))\s*[\w(]", re.M)


def may_have_findings_text(source, needs: ScreenNeeds) -> bool:
    """False when the text alone shows that nothing the rules need can be in the file: no `def forward`,
    or none of the called functions' names, and (for RNN_CLASS) neither an RNN class name nor `getattr`."""
    data = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
    if any(not seed.in_forward and seed.function.encode() in data for seed in needs.calls):
        return True
    if (b"forward" not in data or _FORWARD_DEF.search(data) is None) and (
            not needs.rnn_class or _CLASS_WITH_BASE.search(data) is None or _IMPORT_FROM_ELSEWHERE.search(data) is None):
        return False  # no forward here, and none a class may inherit from a base of another file
    if needs.forward_pass and _FORWARD_DEF.search(data) is not None:
        return True
    return (any(all(word.encode() in data for word in seed.words()) for seed in needs.calls)
            or (needs.rnn_class and _RNN_WORD.search(data) is not None))


def may_have_findings(tree: ast.Module, needs: ScreenNeeds) -> bool:
    """False only when nothing the rules need can be in the file."""
    nodes = walk(tree)  # walked once: every check below reads this list
    if not any(isinstance(node, _FUNCTIONS) and node.name == "forward" for node in nodes):
        # A class on a base of the project may inherit its forward (which runs `self._forward()` here): the
        # RNN seeds still count. Otherwise only the seeds that may be anywhere do.
        imported = _imported_from_outside_torch(nodes)
        inherits = needs.rnn_class and any(isinstance(node, ast.ClassDef) and _has_project_base(node, imported)
                                           for node in nodes)
        anywhere = frozenset(seed for seed in needs.calls if not seed.in_forward)
        if not anywhere and not inherits:
            return False
        needs = ScreenNeeds(calls=anywhere, rnn_class=inherits)
    elif needs.forward_pass:
        return True
    torch_nn = _torch_nn_names(nodes)
    # Every name a binding below can mention is among these: where none of a rule's seeds is, no name
    # can lead to one, and the closures need not be built at all.
    used = _identifiers_in(nodes, torch_nn) | _imported_names(nodes)
    wanted_calls = [seed for seed in sorted(needs.calls, key=lambda seed: seed.function) if _meets(used, {seed.function})]
    rnn_seeds: Set[str] = set()
    if needs.rnn_class or any(seed.given_rnn for seed in wanted_calls):
        # `nn.LSTM` is torch's whatever the file calls LSTM; a bare `LSTM` is only when the file does not
        # define a class of that name itself.
        rnn_seeds = (set(RNN_NAMES) - _own_rnn_named_definitions(tree, nodes)) | {f".{name}" for name in RNN_NAMES} | {_GETATTR}
        if not _meets(used, rnn_seeds):
            rnn_seeds = set()
    wanted_calls = [seed for seed in wanted_calls if rnn_seeds or not seed.given_rnn]
    seeds = rnn_seeds if needs.rnn_class else set()
    if not (wanted_calls or seeds):
        return False
    calls = [node for node in nodes if isinstance(node, ast.Call)]
    # What each name the file binds mentions, read once for the closures below.
    mentions = _mentions(_bindings(tree), torch_nn)
    rnn_names = _grown(rnn_seeds, mentions) if rnn_seeds else set()
    maxima: Optional[Set[str]] = None
    forward_calls: List[ast.Call] = []
    for seed in wanted_calls:
        names = _grown({seed.function}, mentions)
        if seed.sized_by_max and maxima is None:
            # Sized in a forward pass, by a maximum taken there: only forward's own nodes count.
            in_forward = [inner for node in nodes if isinstance(node, _FUNCTIONS) and node.name == "forward"
                          for inner in walk(node)]
            maxima = _maxima(in_forward)
            forward_calls = [node for node in in_forward if isinstance(node, ast.Call)]
        if any(callee_name(call.func) in names and (seed.missing is None or not _passes(call, *seed.missing))
               and (not seed.given_rnn or _may_be_given_rnn(call, rnn_names))
               and (not seed.sized_by_max or any(_mentions_any(arg, maxima) for arg in _arguments(call)))
               for call in (forward_calls if seed.sized_by_max else calls)):
            return True
    if seeds:
        return any(isinstance(node, ast.ClassDef) and _class_may_hold_rnn(node, rnn_names, torch_nn) for node in nodes)
    return False


def may_inherit_text(data: bytes) -> bool:
    """Whether the text may hold a class with a forward whose base is not torch's nn.Module, or a file
    importing names from outside torch: such a base may build the RNN forward runs, and such a name be a
    factory of RNNs, in another file (only the project index can tell)."""
    return _FORWARD_DEF.search(data) is not None and (
        _CLASS_WITH_BASE.search(data) is not None or _IMPORT_FROM_ELSEWHERE.search(data) is not None)


def inherits_from_elsewhere(tree: ast.Module) -> bool:
    """Whether a class with its own forward derives from a name imported from outside torch, or the file
    stores on self what such a name returns (`self.rnn = build_rnn(...)`): a class or factory of another
    file of the project, or of another package, may build the RNN forward runs."""
    nodes = walk(tree)
    imported = _imported_from_outside_torch(nodes)
    used = []
    for node in nodes:
        kind = type(node)
        if kind is ast.ClassDef:
            if any(isinstance(item, _FUNCTIONS) and item.name == "forward" for item in node.body):
                used += [base.value if isinstance(base, ast.Subscript) else base for base in node.bases]
        elif kind is ast.Assign and type(node.value) is ast.Call and any(
                isinstance(target, (ast.Attribute, ast.Tuple)) for target in node.targets):
            used.append(node.value.func)
    for root in used:
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and imported.get(root.id):
            return True
    return False


def _imported_from_outside_torch(nodes: Sequence[ast.AST]) -> Dict[str, bool]:
    """Each name the file's imports bind: whether it comes from outside torch."""
    imported: Dict[str, bool] = {}
    for node in nodes:
        if type(node) is ast.ImportFrom:
            for alias in node.names:
                imported[alias.asname or alias.name] = node.level > 0 or not (node.module or "").startswith("torch")
        elif type(node) is ast.Import:
            for alias in node.names:
                imported[(alias.asname or alias.name).split(".")[0]] = not alias.name.startswith("torch")
    return imported


def without_device_moves(value: ast.AST) -> ast.AST:
    """`make_encoder(32)` for `make_encoder(32).cuda()`: a move returns the module it is called on."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in MODULE_METHODS_RETURNING_SELF:
        value = value.func.value
    return value


def wraps_imported_call(tree: ast.Module, wrappers: FrozenSet[str]) -> bool:
    """Whether a DataParallel wrap (a call of one of `wrappers`) in the file is given what a function imported from outside torch
    returns (`nn.DataParallel(make_encoder(32))`, or a name bound to such a call): a factory of another
    file of the project may build the RNN it wraps. Functions are told from classes by their lower-case
    first letter, as PEP 8 names them: a wrapped model class builds no RNN that DataParallel runs bare."""
    nodes = walk(tree)
    called_for: Dict[str, List[ast.AST]] = {}  # name -> the callees of the calls bound to it
    given: List[ast.AST] = []
    for node in nodes:
        if type(node) in (ast.Assign, ast.AnnAssign) and node.value is not None:
            value = without_device_moves(node.value)
            if type(value) is ast.Call:
                for target in (node.targets if type(node) is ast.Assign else [node.target]):
                    if type(target) is ast.Name:
                        called_for.setdefault(target.id, []).append(value.func)
        elif type(node) is ast.Call and callee_name(node.func) in wrappers:
            value = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "module"), None)
            if value is not None:
                given.append(without_device_moves(value))
    imported: Optional[Dict[str, bool]] = None
    for value in given:
        callees = [value.func] if type(value) is ast.Call else called_for.get(value.id, []) if type(value) is ast.Name else []
        for func in callees:
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and callee_name(func).lstrip("_")[:1].islower():
                imported = _imported_from_outside_torch(nodes) if imported is None else imported
                if imported.get(root.id):
                    return True
    return False


def _has_project_base(cls: ast.ClassDef, imported: Dict[str, bool]) -> bool:
    """A base imported from outside torch (a class of another file of the project, or of another package):
    it may define the forward this class runs. A base of the same file would put `def forward` in its text."""
    for base in cls.bases:
        root = base.value if isinstance(base, ast.Subscript) else base
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and imported.get(root.id):
            return True
    return False


def _class_may_hold_rnn(cls: ast.ClassDef, rnn_names: Set[str], torch_nn: Set[str]) -> bool:
    """Whether the class may create an RNN (a call of something that mentions an RNN class) or store
    one in an attribute. Names count where they are visible: each method's own (a local
    `cell = nn.LSTM`, a parameter's default) in that method, and the class body's (a class attribute,
    reached as `self.cell`) everywhere in the class."""
    if not _meets(_identifiers(cls, torch_nn), rnn_names):
        return False  # nothing in the class can lead to an RNN, whatever it binds
    methods = [node for node in cls.body if isinstance(node, _FUNCTIONS)]
    others = [node for node in cls.body if not isinstance(node, _FUNCTIONS)]
    class_level = [binding for node in others for binding in _bindings(node)]
    if _creates_or_stores(others, _closure(class_level, rnn_names, torch_nn), torch_nn):
        return True
    for method in methods:
        own = [(name, value) for name, value in _bindings(method) if value is not method]
        if _creates_or_stores([method], _closure(class_level + own, rnn_names, torch_nn), torch_nn):
            return True
    return False


def _creates_or_stores(nodes: Iterable[ast.AST], names: Set[str], torch_nn: Set[str]) -> bool:
    for top in nodes:
        for node in walk(top):
            if isinstance(node, ast.Call) and _meets(_identifiers(node.func, torch_nn), names):
                return True
            if (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
                    and any(isinstance(target, ast.Attribute)
                            for target in getattr(node, "targets", [getattr(node, "target", None)]))
                    and _meets(_identifiers(node.value, torch_nn), names)):
                return True
    return False


def _torch_nn_names(nodes: List[ast.AST]) -> Set[str]:
    """Names that may stand for torch.nn (or torch.nn.modules): `nn`, `modules`, and import aliases."""
    names = {"nn", "modules"}
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.asname for alias in node.names if alias.asname and alias.name.startswith("torch.nn"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            names.update(alias.asname for alias in node.names if alias.asname and alias.name in ("nn", "modules"))
    return names


def _outside_classes(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node, but only the header of a class: what a class body binds is the class's own business
    (and a class that mentions an RNN makes the file a candidate whatever its names are)."""
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield child
            else:
                stack.append(child)


def _bindings(tree: ast.Module) -> Iterator[Tuple[str, ast.AST]]:
    """(name, what it is bound to) for the names the file binds outside class bodies: imports, classes
    (by their bases), functions, assignments, loop targets and parameters with defaults."""
    for node in _outside_classes(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                yield alias.asname or alias.name, ast.Name(id=alias.name)
        elif isinstance(node, ast.ClassDef):
            yield node.name, ast.Tuple(elts=[*node.bases, *(keyword.value for keyword in node.keywords)], ctx=ast.Load())
        elif isinstance(node, _FUNCTIONS):
            yield node.name, node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
                               ast.comprehension, ast.withitem)):
            value = getattr(node, "value", None) or getattr(node, "iter", None) or getattr(node, "context_expr", None)
            targets = getattr(node, "targets", None) or [getattr(node, "target", None), getattr(node, "optional_vars", None)]
            for target in targets:
                for name in _target_names(target):
                    if value is not None:
                        yield name, value
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            for arg, default in zip(positional[len(positional) - len(node.defaults):], node.defaults):
                yield arg.arg, default
            for arg, default in zip(node.kwonlyargs, node.kw_defaults):
                if default is not None:
                    yield arg.arg, default


def _target_names(target) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _closure(bindings: Iterable[Tuple[str, ast.AST]], seeds: Set[str], torch_nn: Set[str]) -> Set[str]:
    """The seeds, and every name bound to something that mentions one of them (until nothing changes)."""
    return _grown(seeds, _mentions(bindings, torch_nn))


def _mentions(bindings: Iterable[Tuple[str, ast.AST]], torch_nn: Set[str]) -> Dict[str, Set[str]]:
    """For each bound name, the identifiers of everything it is bound to."""
    mentions: Dict[str, Set[str]] = {}
    for name, value in bindings:
        mentions.setdefault(name, set()).update(_identifiers(value, torch_nn))
    return mentions


def _grown(seeds: Set[str], mentions: Dict[str, Set[str]]) -> Set[str]:
    """The seeds, and every name whose mentions meet them (until nothing changes)."""
    names = set(seeds)
    changed = True
    while changed:
        changed = False
        for name, used in mentions.items():
            if name not in names and _meets(used, names):
                names.add(name)
                changed = True
    return names


def _identifiers(node: ast.AST, torch_nn: Set[str]) -> Set[str]:
    """Names used under `node`, attribute names (as `.name`), plus _GETATTR for `getattr(m, ...)` where
    `m` may be torch.nn (as the rules look RNN classes up by name only there)."""
    return _identifiers_in(walk(node), torch_nn)


def _identifiers_in(nodes: Iterable[ast.AST], torch_nn: Set[str]) -> Set[str]:
    """_identifiers() over a list of nodes already walked."""
    found: Set[str] = set()
    for child in nodes:
        kind = type(child)
        if kind is ast.Name:
            found.add(child.id)
        elif kind is ast.Attribute:
            found.add("." + child.attr)
        elif (kind is ast.Call and isinstance(child.func, ast.Name) and child.func.id == "getattr"
              and child.args and _mentions_any(child.args[0], torch_nn)):
            found.add(_GETATTR)
    return found


def _imported_names(nodes: Iterable[ast.AST]) -> Set[str]:
    """The names `from m import name` brings in, as _bindings() spells what they are bound to."""
    return {alias.name for node in nodes if isinstance(node, ast.ImportFrom) for alias in node.names}


def _meets(identifiers: Set[str], names: Set[str]) -> bool:
    """Whether identifiers from _identifiers() mention one of `names`: a name as itself, an attribute
    (`self.cell`, `nn.LSTM`) by its last part or, for names given in attribute form (`.LSTM`), only as an
    attribute."""
    for identifier in identifiers:
        if identifier in names or (identifier[:1] == "." and identifier[1:] in names):
            return True
    return False


def _own_rnn_named_definitions(tree: ast.Module, nodes: List[ast.AST]) -> Set[str]:
    """RNN class names the module itself defines (`class LSTM(RNNBase)`, as torch's quantized modules do)
    and never imports: a bare `LSTM(...)` there names that class, which counts only if its bases do."""
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in RNN_NAMES}
    if not defined:
        return set()
    imported = {alias.asname or alias.name.split(".")[0] for node in nodes
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    return defined - imported


def _maxima(nodes: Sequence[ast.AST]) -> Set[str]:
    """"max" and "amax", and the names these nodes assign from what mentions one (or a name so assigned)."""
    bound: Dict[str, Set[str]] = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            used = {found.id if isinstance(found, ast.Name) else found.attr for found in walk(node.value)
                    if isinstance(found, (ast.Name, ast.Attribute))}
            for target in targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, set()).update(used)
    return closed_under({"max", "amax"}, bound)


def closed_under(found: Set[str], uses: Dict[str, Set[str]]) -> Set[str]:
    """`found` and every name whose `uses` meet what is found, until nothing more joins (a name assigned
    from one found, a method calling one found)."""
    found = set(found)
    changed = True
    while changed:
        changed = False
        for name, used in uses.items():
            if name not in found and used & found:
                found.add(name)
                changed = True
    return found


def _arguments(call: ast.Call) -> List[ast.AST]:
    return [*call.args, *(keyword.value for keyword in call.keywords)]


def _may_be_given_rnn(call: ast.Call, rnn_names: Set[str]) -> bool:
    given = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else next(
        (keyword.value for keyword in call.keywords if keyword.arg == "module"), None)
    if given is None:
        return any(keyword.arg is None for keyword in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)
    root = given
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return (isinstance(root, ast.Name) and root.id == "self") or _mentions_any(given, rnn_names)


def _mentions_any(node: ast.AST, names: Set[str]) -> bool:
    return any((isinstance(child, ast.Name) and child.id in names) or (isinstance(child, ast.Attribute) and child.attr in names)
               for child in walk(node))


def callee_name(func: ast.AST) -> str:
    """`f` for `f(...)` and `obj.f(...)`; "" for anything else called."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _passes(call: ast.Call, keyword: str, position: int) -> bool:
    """Whether the call may pass the argument: `*args`/`**kwargs` may carry it; `None` (the usual
    default) spelled out does not count."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return True
    if len(call.args) > position:
        return not _is_none(call.args[position])
    return any(each.arg == keyword and not _is_none(each.value) for each in call.keywords)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
