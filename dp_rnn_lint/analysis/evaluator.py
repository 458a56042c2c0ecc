"""What an expression can be, across the files of a project: one lazy, memoized evaluator.

`Evaluator.values(expr, scope)` answers with a frozenset of typed values (values.py). It follows names
through scopes, imports (absolute, relative, star, re-exports through a package's `__init__`), class
bodies and `self.<attr>` assignments over the whole MRO, calls of classes (instances) and of functions
(the union of what they return), conditionals, containers and their lookups, and `getattr(torch.nn, s)`
over the strings `s` can be. Files are bound (`binder.py`) when a name first leads into them, from disk,
once per process while their size and mtime hold. Everything is flow-insensitive: a name is every value
it is ever bound to in its scope.

On top of it sit the predicates the rules ask: one MRO walk (`mro`), `is_module_class`,
`rnn_class_kinds`, and `rnn_attributes(path, class)`: which attributes of a module class can hold a
torch RNN, of which kinds, and whether always.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from .. import stages
from ..files import project_root, read_source_or_none
from .binder import (ASSIGN, DEF, FROM_IMPORT, LOOP, MODULE_IMPORT, PARAM, SELF, Binding, ClassInfo, FileSummary, Scope,
                     bind_file, self_attribute)
from .screen import without_device_moves
from .torch_names import (MODULE_LIST, MODULE_METHODS_RETURNING_SELF, PLAIN_BASES, THIRD_PARTY_MODULE_BASES, canonical,
                          is_module_base, wrapped_module)
from .values import (NOTHING, Constant, Container, External, Instance, ProjectClass, ProjectFunction, ProjectModule,
                     RnnFact, RnnKind, Unknown, Value, Values, Why, external, torch_rnn_kind)

# How many nested evaluations one question may take before its answer is "too deep" (cycles, long chains).
_MAX_DEPTH = 60
_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))
_STRING_METHODS = {"upper": str.upper, "lower": str.lower, "capitalize": str.capitalize, "title": str.title,
                   "strip": str.strip}
_RNN_BASE = "torch.nn.RNNBase"
_TORCH_NN_MODULES = frozenset({"torch.nn", "torch.nn.modules", "torch.nn.modules.rnn"})
_CONTAINER_CLASSES = {MODULE_LIST: "ModuleList", "torch.nn.ModuleDict": "ModuleDict", "builtins.list": "list",
                      "builtins.tuple": "tuple", "builtins.set": "set"}

# Bound files shared by every evaluator of the process: path -> ((size, mtime_ns), summary or None).
_BOUND: Dict[str, Tuple[Tuple[int, int], Optional[FileSummary]]] = {}


def _bound_from_disk(path: str) -> Optional[FileSummary]:
    try:
        status = os.stat(path)
    except OSError:
        return None
    version = (status.st_size, status.st_mtime_ns)
    cached = _BOUND.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    summary = None
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        with stages.stage("python parse", path):
            tree = ast.parse(data, filename=path)
        with stages.stage("model", path):
            summary = bind_file(path, tree)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        summary = None
    _BOUND[path] = (version, summary)
    return summary


@stages.counted_methods("model")
class Evaluator:
    """Values of expressions across a project's files. `own` binds a file from a tree already parsed (the
    file being linted, whose text may not be on disk)."""

    def __init__(self, own: Optional[Tuple[str, ast.Module]] = None,
                 handed: Optional[Callable[[ProjectClass, str, Optional[int]], Values]] = None) -> None:
        self._own: Dict[str, FileSummary] = {}
        # What callers elsewhere in the project hand a class's __init__ parameter (by name or position).
        self._handed = handed
        if own is not None:
            path, tree = own
            self._own[os.path.abspath(path)] = bind_file(os.path.abspath(path), tree)
        self._memo: Dict[tuple, Values] = {}
        self._mro_memo: Dict[ProjectClass, Tuple[Union[ProjectClass, External], ...]] = {}
        self._depth = 0
        self._roots: Dict[str, Tuple[str, ...]] = {}
        self._comprehensions: Dict[int, Scope] = {}
        self._calls_memo: Dict[str, Dict[str, List[ast.Call]]] = {}
        # While a step that rebuilds an attribute from itself is evaluated (`self.layers =
        # nn.ModuleList(self.layers)`), what `self.<attr>` held before that step.
        self._before_rebuild: Dict[Tuple[ProjectClass, str], Values] = {}
        # Every file whose bindings an answer may rest on (a caller that caches answers keys them by these).
        self.read: Set[str] = set()

    # -- files ------------------------------------------------------------------------------------------
    def adopt(self, path: str, tree: ast.Module) -> None:
        """Bind a file from a tree already parsed (a notebook's Python view, text not on disk)."""
        self._own[os.path.abspath(path)] = bind_file(os.path.abspath(path), tree)

    def summary(self, path: str) -> Optional[FileSummary]:
        path = os.path.abspath(path)
        self.read.add(path)
        return self._own.get(path) or _bound_from_disk(path)

    def _import_roots(self, from_path: str) -> Tuple[str, ...]:
        """Where an absolute import made in the file `from_path` is looked for: its folder when that is no
        package (a script imports its neighbours; a package's module does not: `pkg/utils/torch.py` is not
        `torch`), the folder above its top package, and the project root (and its `src`)."""
        folder = os.path.dirname(from_path)
        if folder in self._roots:
            return self._roots[folder]
        roots = [] if os.path.isfile(os.path.join(folder, "__init__.py")) else [folder]
        top, enclosing = folder, []
        while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
            top = os.path.dirname(top)
            enclosing.append(top)
        roots.append(top)
        project = project_root(from_path)
        if project is not None:
            roots.extend([str(project), str(project / "src")])
        elif enclosing[:-1] and _holds_modules(enclosing[-2]):
            # No marker says where the project starts, and the folder above the outermost package may not
            # be it: a repository whose root folder has an `__init__.py` of its own and scripts beside it,
            # run from there (`from model.seq2seq import ...` in `model/`). That folder is a root too; a
            # package folder holding only subpackages is not (`import torch` in `texar/torch/` is torch's).
            roots.append(enclosing[-2])
        found = tuple(dict.fromkeys(roots))
        self._roots[folder] = found
        return found

    def module_path(self, module: str, level: int, from_path: str) -> Optional[str]:
        """The project file `import module` (with `level` leading dots) reaches from `from_path`."""
        parts = [part for part in module.split(".") if part]
        if level:
            base = os.path.dirname(from_path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            roots: Iterable[str] = (base,)
        else:
            roots = self._import_roots(from_path)
        for root in roots:
            stem = os.path.join(root, *parts)
            if parts and os.path.isfile(stem + ".py"):
                return stem + ".py"
            if os.path.isfile(os.path.join(stem, "__init__.py")):
                return os.path.join(stem, "__init__.py")
        return None

    # -- names --------------------------------------------------------------------------------------------
    def name_values(self, name: str, scope: Scope, receiver: Optional[ProjectClass] = None,
                    at: Optional[ast.AST] = None) -> Values:
        """What a name can be where it is read (`at`, a use in `scope`, when known)."""
        current: Optional[Scope] = scope
        first = True
        while current is not None:
            if (first or current.kind != "class") and name in current.bindings:
                bindings = current.bindings[name]
                if current.kind == "function":
                    bindings = _last_build(name, _reaching(bindings, at) if first else bindings)
                found = self._union(self.binding_values(b, current, receiver) for b in bindings)
                if name in current.grown:  # `layers = []`, then `layers.append(nn.GRU(...))`
                    found = self._with_grown(found, current.grown[name], current, receiver)
                return found
            if current.kind == "module":
                return self._module_name(current.path, name)
            current, first = current.parent, False
        return frozenset({Unknown(Why.UNRESOLVED)})

    def _with_grown(self, values: Values, grown: Sequence[Tuple[ast.AST, str]], scope: Scope,
                    receiver: Optional[ProjectClass]) -> Values:
        """The containers among `values` with what `append`, `insert`, `extend` or `+=` add to them."""
        added = self._union(self._members(self.values(value, scope, receiver)) if how == "extend"
                            else self.values(value, scope, receiver) for value, how in grown)
        return frozenset(Container(v.kind, v.members | added, None) if isinstance(v, Container) else v
                         for v in values)

    def _module_name(self, path: str, name: str) -> Values:
        """A module-level name of a file: its own binding, one a star import brings, or a builtin.
        Memoized; a cycle of imports (a re-export of a re-export of itself) sees nothing more."""
        return self._memoized(("module-name", path, name), frozenset({Unknown(Why.UNRESOLVED)}),
                              lambda: self._module_name_uncached(path, name))

    def _memoized(self, key: tuple, in_progress: Values, compute: Callable[[], Values]) -> Values:
        """The answer for `key`, computed once; a question asked again while it is being answered (a cycle)
        gets `in_progress`, and one asked too many steps deep is unknown."""
        found = self._memo.get(key)
        if found is not None:
            return found
        if self._depth > _MAX_DEPTH:
            return frozenset({Unknown(Why.TOO_DEEP)})
        self._memo[key] = in_progress
        self._depth += 1
        try:
            found = compute()
        finally:
            self._depth -= 1
        self._memo[key] = found
        return found

    def _module_name_uncached(self, path: str, name: str) -> Values:
        summary = self.summary(path)
        if summary is None:
            return frozenset({Unknown(Why.UNRESOLVED)})
        scope = summary.module_scope
        if name in scope.bindings:
            return self._union(self.binding_values(b, scope, None) for b in scope.bindings[name])
        for module, level in scope.stars:
            target = self.module_path(module, level, path)
            if target is not None:
                exported = self.summary(target)
                if exported is not None and (name in (exported.exports or ()) or (
                        exported.exports is None and not name.startswith("_"))):
                    found = self._module_name(target, name)
                    if not all(isinstance(value, Unknown) for value in found):
                        return found
            elif not level and module.split(".")[0] == "torch":
                return frozenset({external(f"{module}.{name}")})
        if name in _BUILTINS:
            return frozenset({External(f"builtins.{name}")})
        if name == "None":
            return frozenset({Constant(None)})
        return frozenset({Unknown(Why.UNRESOLVED)})

    def binding_values(self, binding: Binding, scope: Scope, receiver: Optional[ProjectClass]) -> Values:
        kind = binding.kind
        if kind == MODULE_IMPORT:
            target = self.module_path(binding.module, 0, scope.path)
            return frozenset({ProjectModule(target) if target else external(binding.module)})
        if kind == FROM_IMPORT:
            return self._imported(binding, scope.path)
        if kind == DEF:
            node = binding.value
            summary = self.summary(scope.path)
            inner = summary.scope_of(node) if summary is not None else None
            if inner is None:
                return frozenset({Unknown(Why.UNRESOLVED)})
            if isinstance(node, ast.ClassDef):
                return frozenset({ProjectClass(scope.path, inner.qualname)})
            return frozenset({ProjectFunction(scope.path, inner.qualname)})
        if kind == SELF:
            return frozenset({Instance(receiver or ProjectClass(scope.path, binding.name))})
        if kind == PARAM:
            return self._parameter_values(binding, scope, receiver)
        if kind in (ASSIGN, LOOP):
            values = self.values(binding.value, binding.scope or scope, receiver)
            if kind == LOOP:
                values = self._members(values)
            for position in binding.positions:
                values = self._member_at(values, position)
            if binding.starred:
                values = frozenset({Container("list", values)})
            return values
        return frozenset({Unknown(Why.UNSUPPORTED)})

    # -- parameters: what their callers pass -----------------------------------------------------------
    def _parameter_values(self, binding: Binding, function: Scope, receiver: Optional[ProjectClass]) -> Values:
        """A parameter is what its callers pass. Followed: a method reached through `super().m(...)` or
        `Base.m(self, ...)` from an override in the receiver's MRO (the receiver's own chain of calls), and
        what callers elsewhere hand a constructor (the project index finds those calls: `handed`). Anything
        else is unknown, with the default as one more value."""
        default = self.values(binding.value, binding.scope, receiver) if binding.value is not None else NOTHING
        node = function.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or binding.name is None:
            return frozenset({Unknown(Why.PARAMETER)}) | default
        owner = ProjectClass(function.path, function.owner_class) if function.owner_class else None
        first = [*node.args.posonlyargs, *node.args.args][:1]
        if _is_classmethod(node) and first and first[0].arg == binding.name and "." in function.qualname:
            # A classmethod's first parameter is the class it is called on (`cls(**config)` builds one).
            summary = self.summary(function.path)
            defining = function.qualname.rsplit(".", 1)[0]
            if summary is not None and defining in summary.classes:
                return frozenset({receiver or ProjectClass(function.path, defining)})
        if owner is not None and receiver is not None and receiver != owner:
            calls = self._calls_from_override(owner, node.name, receiver)
            if calls:
                found = set()
                for call, caller, skip_self in calls:
                    argument = _argument_for(call, node, binding.name, skip_self)
                    found |= self.values(argument, caller, receiver) if argument is not None else (
                        default or {Unknown(Why.PARAMETER)})
                return frozenset(found)
        if owner is not None and node.name == "__init__":
            position = _parameter_position(node, binding.name)
            handed = self._handed(owner, binding.name, position) if self._handed is not None else NOTHING
            if handed:
                # A module handed in (`Wrapper(nn.LSTM(...))`) says nothing of what other callers hand; a
                # class handed in (`Encoder(rnn_class=nn.GRU)`) is a type parameter, holding RNN classes.
                modules = any(isinstance(value, Instance) for value in handed)
                handed = handed | {Unknown(Why.OTHER_CALLERS if modules else Why.PARAMETER)}
            # The calls building the class in its own file (`build_model()` handing `Model` the encoder
            # it made): other files may build it with something else.
            built = self._constructor_arguments(owner, node, binding.name)
            if built:
                return handed | built | {Unknown(Why.OTHER_CALLERS)} | default
            if handed:
                return handed | default
        return frozenset({Unknown(Why.PARAMETER)}) | default

    def _constructor_arguments(self, owner: ProjectClass, init: ast.AST, name: str) -> Values:
        """What the calls of `owner` in its own file pass its __init__'s parameter `name`; nothing when no
        such call is found (a call that leaves it to its default, or passes `*args`, adds nothing)."""
        summary = self.summary(owner.path)
        if summary is None:
            return NOTHING
        simple = owner.qualname.rsplit(".", 1)[-1]
        found: Set[Value] = set()
        for call in self._calls_by_name(summary).get(simple, ()):
            scope = summary.scope_at(call)
            receiver = ProjectClass(owner.path, scope.owner_class) if scope.owner_class else None
            if owner not in self.values(call.func, scope, receiver):
                continue
            argument = _argument_for(call, init, name, skip_self=True)
            if argument is not None:
                found |= self.values(argument, scope, receiver)
        return frozenset(found)

    def _calls_by_name(self, summary: FileSummary) -> Dict[str, List[ast.Call]]:
        """The calls of a file by the last part of their callee's name (`Model` for `models.Model(...)`)."""
        found = self._calls_memo.get(summary.path)
        if found is None:
            found = {}
            for node in ast.walk(summary.tree):
                if isinstance(node, ast.Call):
                    func = node.func
                    simple = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                    if simple is not None:
                        found.setdefault(simple, []).append(node)
            self._calls_memo[summary.path] = found
        return found

    def _calls_from_override(self, owner: ProjectClass, method: str,
                             receiver: ProjectClass) -> List[Tuple[ast.Call, Scope, bool]]:
        """The calls by which the override just before `owner` in the receiver's MRO runs `owner`'s
        `method`: `super().method(...)` (self implicit) or `Owner.method(self, ...)`; [] when the receiver's
        classes do not override it (its callers are then whoever calls the receiver)."""
        chain = [cls for cls in self.mro(receiver) if isinstance(cls, ProjectClass)]
        if owner not in chain:
            return []
        overrides = [cls for cls in chain[:chain.index(owner)]
                     if (info := self.class_info(cls)) is not None and method in info.methods]
        if not overrides:
            return []
        caller_class = self.class_info(overrides[-1])
        node = caller_class.methods[method]
        summary = self.summary(overrides[-1].path)
        scope = summary.scope_of(node) if summary is not None else None
        if scope is None:
            return []
        found = []
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == method):
                continue
            target = call.func.value
            if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
                found.append((call, scope, True))
            elif owner in self.values(target, scope, receiver) and call.args:
                found.append((call, scope, False))
        return found

    def _imported(self, binding: Binding, path: str) -> Values:
        target = self.module_path(binding.module, binding.level, path)
        if target is not None:
            found = self._module_name(target, binding.name)
            if not all(isinstance(value, Unknown) for value in found):
                return found
            dotted = f"{binding.module}.{binding.name}" if binding.module else binding.name
            submodule = self.module_path(dotted, binding.level, path)
            return frozenset({ProjectModule(submodule)}) if submodule else found
        if binding.level:
            submodule = self.module_path(binding.name, binding.level, path) if not binding.module else None
            return frozenset({ProjectModule(submodule)}) if submodule else frozenset({Unknown(Why.UNRESOLVED)})
        return frozenset({external(f"{binding.module}.{binding.name}")})

    # -- expressions --------------------------------------------------------------------------------------
    def values(self, expr: ast.AST, scope: Scope, receiver: Optional[ProjectClass] = None) -> Values:
        # A cycle (a name defined through itself) sees nothing more than the other paths give.
        return self._memoized((id(expr), receiver), NOTHING, lambda: self._evaluate(expr, scope, receiver))

    def _evaluate(self, expr: ast.AST, scope: Scope, receiver: Optional[ProjectClass]) -> Values:
        if isinstance(expr, ast.Name):
            return self.name_values(expr.id, scope, receiver, at=expr)
        if isinstance(expr, ast.Attribute):
            bases = self.values(expr.value, scope, receiver)
            return self._union(self.attribute(base, expr.attr) for base in bases)
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, receiver)
        if isinstance(expr, ast.IfExp):
            return self.values(expr.body, scope, receiver) | self.values(expr.orelse, scope, receiver)
        if isinstance(expr, ast.BoolOp):
            return self._union(self.values(value, scope, receiver) for value in expr.values)
        if isinstance(expr, ast.Constant):
            return frozenset({Constant(expr.value)})
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return frozenset({self._literal(expr, scope, receiver)})
        if isinstance(expr, ast.Dict):
            members = self._union(self.values(value, scope, receiver) for value in expr.values)
            return frozenset({Container("dict", members)})
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return frozenset({Container("list", self.values(expr.elt, self._comprehension(expr, scope), receiver))})
        if isinstance(expr, ast.DictComp):
            return frozenset({Container("dict", self.values(expr.value, self._comprehension(expr, scope), receiver))})
        if isinstance(expr, ast.Subscript):
            bases = self.values(expr.value, scope, receiver)
            index = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
            return self._union(self._member_at(frozenset({base}), index) if isinstance(index, int)
                               else self._members(frozenset({base})) for base in bases)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mult)):
            sides = self.values(expr.left, scope, receiver) | self.values(expr.right, scope, receiver)
            containers = [value for value in sides if isinstance(value, Container)]
            if containers:
                return frozenset({Container("list", self._members(frozenset(containers)))})
            return frozenset({Unknown(Why.UNSUPPORTED)})
        if isinstance(expr, (ast.Starred, ast.NamedExpr)):
            return self.values(expr.value, scope, receiver)
        if isinstance(expr, ast.JoinedStr):
            return frozenset({Unknown(Why.RUNTIME_STRING)})
        return frozenset({Unknown(Why.UNSUPPORTED)})

    def _literal(self, expr: Union[ast.List, ast.Tuple, ast.Set], scope: Scope,
                 receiver: Optional[ProjectClass]) -> Container:
        kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(expr)]
        positions = [self.values(element, scope, receiver) for element in expr.elts]
        starred = any(isinstance(element, ast.Starred) for element in expr.elts)
        members = self._union(self._members(found) if isinstance(element, ast.Starred) else found
                              for element, found in zip(expr.elts, positions))
        return Container(kind, members, None if starred else tuple(positions))

    def _comprehension(self, expr: ast.AST, scope: Scope) -> Scope:
        """A scope for a comprehension's element: its loop names bound to members of what they loop over."""
        inner = self._comprehensions.get(id(expr))
        if inner is None:
            inner = Scope("function", expr, scope, scope.qualname, path=scope.path)
            for generator in expr.generators:
                self._bind_loop(generator.target, generator.iter, inner, ())
            self._comprehensions[id(expr)] = inner
        return inner

    def _bind_loop(self, target: ast.AST, iterable: ast.AST, scope: Scope, positions: Tuple[int, ...]) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id, Binding(LOOP, value=iterable, scope=scope.parent, positions=positions))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, element in enumerate(target.elts):
                self._bind_loop(element, iterable, scope, positions + (index,))

    # -- members of containers ------------------------------------------------------------------------
    def _members(self, values: Values) -> Values:
        """What the containers among the values can hold, anywhere in them."""
        return self._member_at(values, None)

    @staticmethod
    def _member_at(values: Values, position: Optional[int]) -> Values:
        """What the containers among the values hold at a position (None: anywhere)."""
        found = set()
        for value in values:
            if isinstance(value, Container) and position is not None and value.positions is not None and (
                    -len(value.positions) <= position < len(value.positions)):
                found |= value.positions[position]
            elif isinstance(value, Container):
                found |= value.members
            else:
                found.add(Unknown(Why.UNSUPPORTED))
        return frozenset(found)

    # -- attributes -------------------------------------------------------------------------------------
    def attribute(self, base: Value, attr: str) -> Values:
        if isinstance(base, External):
            return frozenset({external(f"{base.qualname}.{attr}", base.guess)})
        if isinstance(base, ProjectModule):
            found = self._module_name(base.path, attr)
            if all(isinstance(value, Unknown) for value in found):
                folder = os.path.dirname(base.path) if base.path.endswith("__init__.py") else None
                if folder is not None:
                    submodule = self.module_path(attr, 1, os.path.join(folder, "__init__.py"))
                    if submodule is not None:
                        return frozenset({ProjectModule(submodule)})
            return found
        if isinstance(base, ProjectClass):
            return self._class_attribute(base, attr, None)
        if isinstance(base, Instance) and isinstance(base.of, ProjectClass):
            return self.instance_attribute(base.of, attr)
        return frozenset({Unknown(Why.UNSUPPORTED)})

    def _class_attribute(self, cls: ProjectClass, attr: str, receiver: Optional[ProjectClass]) -> Values:
        for owner in self.mro(cls):
            if not isinstance(owner, ProjectClass):
                continue
            info = self.class_info(owner)
            if info is None:
                continue
            if attr in info.methods:
                return frozenset({ProjectFunction(owner.path, f"{owner.qualname}.{attr}", receiver)})
            if attr in info.body.bindings:
                return self._union(self.binding_values(b, info.body, receiver) for b in info.body.bindings[attr])
        return frozenset({Unknown(Why.UNRESOLVED)})

    def instance_attribute(self, cls: ProjectClass, attr: str) -> Values:
        """`self.<attr>` of an instance of `cls`: every value any method of its MRO assigns to it (with
        `self` the instance), what is added to it as a list, and class-level values and methods."""
        if (cls, attr) in self._before_rebuild:
            return self._before_rebuild[(cls, attr)]
        found = set(self.assigned_values(cls, attr))
        if not found:
            return self._class_attribute(cls, attr, cls)
        return frozenset(found)

    def assigned_values(self, cls: ProjectClass, attr: str) -> Values:
        found = set()
        grown = set()
        for owner in self.mro(cls):
            info = self.class_info(owner) if isinstance(owner, ProjectClass) else None
            if info is None:
                continue
            every = info.self_assigned.get(attr, ())
            for value, scope, positions in _last_self_build(attr, every, info.conditional):
                if _rebuilds_attribute(value, scope.self_name, attr):
                    earlier = every[:next(i for i, entry in enumerate(every) if entry[0] is value)]
                    self._before_rebuild[(cls, attr)] = self._union(
                        self._unpacked(self.values(v, s, cls), p) for v, s, p in earlier if s is scope)
                    try:
                        values = self.values(value, scope, cls)
                    finally:
                        del self._before_rebuild[(cls, attr)]
                else:
                    values = self.values(value, scope, cls)
                found |= self._unpacked(values, positions)
            for value, how, scope in info.self_grown.get(attr, ()):
                added = self.values(value, scope, cls)
                grown |= self._members(added) if how == "extend" else added
        if grown:
            found = {Container(v.kind, v.members | grown, None) if isinstance(v, Container) else v for v in found}
        return frozenset(found)

    def values_where(self, expr: ast.AST, scope: Scope, receiver: Optional[ProjectClass], line: int) -> Values:
        """What `expr` is where the statement at `line` of `scope` runs: a `self.<attr>` that this method set
        before that line is what it set there, whatever it stores in the attribute later
        (`self.model = self.build(); self.model = nn.DataParallel(self.model)` wraps what `build` made)."""
        saved = {}
        for node in ast.walk(expr):
            attr = self_attribute(node, scope.self_name)
            info = self.class_info(receiver) if receiver is not None and attr is not None else None
            if info is None or (receiver, attr) in saved:
                continue
            earlier = [(value, where, positions) for value, where, positions in info.self_assigned.get(attr, ())
                       if where is scope and getattr(value, "lineno", line) < line]
            if earlier:
                saved[(receiver, attr)] = self._before_rebuild.get((receiver, attr))
                self._before_rebuild[(receiver, attr)] = self._union(
                    self._unpacked(self.values(value, where, receiver), positions) for value, where, positions in earlier[-1:])
        try:
            return self.values(expr, scope, receiver)
        finally:
            for key, previous in saved.items():
                if previous is None:
                    self._before_rebuild.pop(key, None)
                else:
                    self._before_rebuild[key] = previous

    def _unpacked(self, values: Values, positions: Tuple[int, ...]) -> Values:
        for position in positions:
            values = self._member_at(values, position)
        return values

    # -- calls ------------------------------------------------------------------------------------------
    def _call(self, call: ast.Call, scope: Scope, receiver: Optional[ProjectClass]) -> Values:
        func = call.func
        if isinstance(func, ast.Attribute):
            bases = self.values(func.value, scope, receiver)
            method = func.attr
            if method in MODULE_METHODS_RETURNING_SELF and any(isinstance(base, (Instance, Container)) for base in bases):
                return frozenset(base for base in bases if isinstance(base, (Instance, Container))) or bases
            if method in _STRING_METHODS and any(isinstance(base, Constant) for base in bases):
                return frozenset(Constant(_STRING_METHODS[method](base.value))
                                 if isinstance(base, Constant) and isinstance(base.value, str)
                                 else Unknown(Why.RUNTIME_STRING) for base in bases)
            if method == "get" and call.args and any(isinstance(base, Container) for base in bases):
                found = self._members(frozenset(base for base in bases if isinstance(base, Container)))
                if len(call.args) > 1:
                    found |= self.values(call.args[1], scope, receiver)
                return found
            if method == "values" and any(isinstance(base, Container) for base in bases):
                return frozenset({Container("list", self._members(bases))})
            functions = self._union(self.attribute(base, method) for base in bases)
        else:
            functions = self.values(func, scope, receiver)
        return self._union(self._call_of(function, call, scope, receiver) for function in functions)

    def _call_of(self, function: Value, call: ast.Call, scope: Scope, receiver: Optional[ProjectClass]) -> Values:
        if isinstance(function, ProjectClass):
            return frozenset({Instance(function)})
        if isinstance(function, ProjectFunction):
            return self.returned(function)
        if isinstance(function, External):
            qualname = function.qualname
            if qualname == "builtins.getattr":
                return self._getattr(call, scope, receiver)
            if qualname == "builtins.dict":
                members = self._union(self.values(k.value, scope, receiver) for k in call.keywords)
                return frozenset({Container("dict", members)})
            if canonical(qualname) in _CONTAINER_CLASSES:
                qualname = canonical(qualname)
                members = self._members(self.values(call.args[0], scope, receiver)) if call.args else NOTHING
                return frozenset({Container(_CONTAINER_CLASSES[qualname], members)})
            if qualname.rsplit(".", 1)[-1][:1].isupper():
                return frozenset({Instance(function)})
            return frozenset({Unknown(Why.EXTERNAL_CALL)})
        if isinstance(function, Unknown):
            return frozenset({function})  # what calling an unknown makes is unknown for the same reason
        return frozenset({Unknown(Why.UNSUPPORTED)})

    def returned(self, function: ProjectFunction) -> Values:
        """The union of what a function returns (a method's, with `self` its receiver's instance)."""
        summary = self.summary(function.path)
        if summary is None:
            return frozenset({Unknown(Why.UNRESOLVED)})
        scope = summary.functions.get(function.qualname)  # methods and static methods too
        if scope is None:
            return frozenset({Unknown(Why.UNRESOLVED)})
        if function.receiver is not None and scope.owner_class is not None:
            # `self.build()` runs the receiver's override, if it has one
            override = self._class_attribute(function.receiver, function.qualname.rpartition(".")[2], function.receiver)
            chosen = [value for value in override if isinstance(value, ProjectFunction)]
            if chosen and chosen[0].qualname != function.qualname:
                return self.returned(chosen[0])
        if not scope.returns:
            return frozenset({Constant(None)})
        return self._union(self.values(value, scope, function.receiver) for value in scope.returns)

    def _getattr(self, call: ast.Call, scope: Scope, receiver: Optional[ProjectClass]) -> Values:
        """getattr(torch.nn, s): the torch classes the strings `s` can be; a string known only at run time
        may name any of torch's RNN classes (a guess, marked so), unless its literal parts say it is a cell."""
        if len(call.args) < 2:
            return frozenset({Unknown(Why.UNSUPPORTED)})
        owners = self.values(call.args[0], scope, receiver)
        name = call.args[1]
        names = self.values(name, scope, receiver)
        found = set()
        for owner in owners:
            for value in names:
                if isinstance(value, Constant) and isinstance(value.value, str):
                    found |= self.attribute(owner, value.value)
                elif isinstance(owner, External) and owner.qualname in _TORCH_NN_MODULES:
                    literal = "".join(n.value for n in ast.walk(name) if isinstance(n, ast.Constant) and isinstance(n.value, str))
                    if "Cell" not in literal:
                        spelled = (ast.unparse(name), scope.qualname.rpartition(".")[2])
                        found |= {External(f"torch.nn.{kind.value}", guess=spelled) for kind in RnnKind}
                else:
                    found.add(Unknown(Why.RUNTIME_STRING))
        if len(call.args) > 2:
            found |= self.values(call.args[2], scope, receiver)
        return frozenset(found)

    # -- classes ----------------------------------------------------------------------------------------
    def class_info(self, cls: ProjectClass) -> Optional[ClassInfo]:
        summary = self.summary(cls.path)
        return summary.classes.get(cls.qualname) if summary is not None else None

    def mro(self, cls: ProjectClass) -> Tuple[Union[ProjectClass, External], ...]:
        """The class and its ancestors, depth first and left to right, each once (the one base-class walk
        every question about bases is asked on)."""
        if cls in self._mro_memo:
            return self._mro_memo[cls]
        self._mro_memo[cls] = (cls,)  # a cycle stops here
        order: List[Union[ProjectClass, External]] = [cls]
        info = self.class_info(cls)
        for base in info.node.bases if info is not None else ():
            target = base.value if isinstance(base, ast.Subscript) else base
            for value in self.values(target, info.outer):
                ancestors = self.mro(value) if isinstance(value, ProjectClass) else (
                    (value,) if isinstance(value, External) else ())
                order.extend(ancestor for ancestor in ancestors if ancestor not in order)
        result = tuple(order)
        self._mro_memo[cls] = result
        return result

    def is_module_class(self, cls: ProjectClass) -> bool:
        return any(isinstance(owner, External) and _is_torch_module_class(owner.qualname) for owner in self.mro(cls))

    def may_be_module_class(self, cls: ProjectClass) -> bool:
        """Whether a class not known to be an nn.Module may still be one: some base along its MRO is a class
        of another package (not a plain one such as `object`, `abc.ABC`, `Exception`) or cannot be followed."""
        for owner in self.mro(cls):
            if isinstance(owner, External):
                name = canonical(owner.qualname)
                if name.startswith("builtins."):
                    name = name[len("builtins."):]
                if name not in PLAIN_BASES and not name.startswith("torch."):
                    return True
                continue
            info = self.class_info(owner)
            for base in info.node.bases if info is not None else ():
                target = base.value if isinstance(base, ast.Subscript) else base
                if any(isinstance(value, Unknown) for value in self.values(target, info.outer)):
                    return True
        return False

    def rnn_class_kinds(self, cls: Union[ProjectClass, External]) -> FrozenSet[RnnKind]:
        """The torch RNN kinds a class is (a subclass of nn.LSTM is an LSTM; of nn.RNNBase, any)."""
        torch_bases = [cls] if isinstance(cls, External) else [
            owner for owner in self.mro(cls)[1:] if isinstance(owner, External)]
        specific = frozenset(kind for kind in map(torch_rnn_kind, torch_bases) if kind is not None)
        if specific:
            return specific
        return frozenset(RnnKind) if any(canonical(base.qualname) == _RNN_BASE for base in torch_bases) else frozenset()

    def handles_own_weights(self, cls: ProjectClass) -> bool:
        """A project RNN class whose own forward compacts its weights, or replaces them (weight drop, where
        the compaction belongs in that forward, and is reported there): nothing for its users to add."""
        for owner in self.mro(cls):
            info = self.class_info(owner) if isinstance(owner, ProjectClass) else None
            forward = info.methods.get("forward") if info is not None else None
            if forward is None:
                continue
            me = self._instance_name(owner, forward)
            for node in ast.walk(forward):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "flatten_parameters" and isinstance(node.func.value, ast.Name)):
                    return True
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and (
                        node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == me):
                    return True
                if isinstance(node, ast.Assign) and any(_own_weight(target, me) for target in node.targets):
                    return True
            return False
        return False

    def _instance_name(self, owner: ProjectClass, method: ast.AST) -> Optional[str]:
        """The name a method's instance goes by (`self`), as the binder found it."""
        scope = self.summary(owner.path).scope_of(method)
        return scope.self_name if scope is not None else None

    def find_method(self, cls: ProjectClass, name: str) -> Optional[Tuple[ProjectClass, ast.AST]]:
        """The class of the MRO whose body defines a method, and the method."""
        for owner in self.mro(cls):
            info = self.class_info(owner) if isinstance(owner, ProjectClass) else None
            if info is not None and name in info.methods:
                return owner, info.methods[name]
        return None

    def entries_from_elsewhere(self, cls: ProjectClass) -> List[str]:
        """When `forward` comes from a base in another file: the methods it runs on `self` (through any number
        of that file's methods) that the class's own file defines, in the order they are first called. They
        are where the class's forward pass starts in its own file (`forward` dispatching to `_forward`)."""
        found = self.find_method(cls, "forward")
        if found is None or found[0].path == cls.path:
            return []
        entries: List[str] = []
        seen = set()
        pending = [found]
        while pending:
            owner, method = pending.pop(0)
            me = self._instance_name(owner, method)
            calls = sorted((node for node in ast.walk(method) if isinstance(node, ast.Call)),
                           key=lambda node: (node.lineno, node.col_offset))
            for call in calls:
                func = call.func
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == me):
                    continue
                if func.attr in seen:
                    continue
                seen.add(func.attr)
                target = self.find_method(cls, func.attr)
                if target is None:
                    continue
                if target[0].path == cls.path:
                    entries.append(func.attr)
                elif len(seen) < 50:
                    pending.append(target)
        return entries

    # -- which attributes hold torch RNNs -----------------------------------------------------------------
    def rnn_kinds_of(self, value: Value) -> FrozenSet[RnnKind]:
        """The RNN kinds an instance value is, when it is a torch RNN that needs compacting by its user."""
        if not isinstance(value, Instance):
            return frozenset()
        if isinstance(value.of, ProjectClass) and self.handles_own_weights(value.of):
            return frozenset()
        return self.rnn_class_kinds(value.of)

    def rnn_fact(self, values: Values) -> Optional[RnnFact]:
        """What a set of values says about RNNs: None when none of them is a torch RNN."""
        kinds, certain, other, maybe_none, is_list, reasons = set(), set(), False, False, False, set()
        guessed_from: Set[str] = set()
        other_modules = False
        for value in values:
            listed = isinstance(value, Container) and value.kind in ("list", "tuple", "ModuleList")
            for item in value.members if listed else (value,):
                found = self.rnn_kinds_of(item)
                if found:
                    kinds |= found
                    is_list = is_list or listed
                    if isinstance(item.of, External) and item.of.guess:
                        other = True  # a run-time string may name something else too
                        guessed_from.update(item.of.guess)
                    else:
                        certain |= found
                elif item == Constant(None) and not listed:
                    maybe_none = True
                elif item == Unknown(Why.PARAMETER):
                    other = True  # callers not followed: their default is what is known
                    if not listed:
                        reasons.add(item.why)
                else:
                    other = other_modules = True
                    if isinstance(item, Unknown) and not listed:
                        reasons.add(item.why)
        if not kinds:
            return None
        # Kinds known for certain on some path are the fact; a guess alone (no string the code holds names an
        # RNN) is marked, and the rules decide whether to act on it.
        return RnnFact(frozenset(certain or kinds), sometimes=other, is_list=is_list, guess=not certain,
                       maybe_none=maybe_none, reasons=frozenset(reasons), guessed_from=frozenset(guessed_from),
                       other_modules=other_modules)

    def assigned_attributes(self, path: str, qualname: str) -> Set[str]:
        """Every attribute a class or a base of it sets on `self`, whatever the value."""
        attrs: Set[str] = set()
        for owner in self.mro(ProjectClass(os.path.abspath(path), qualname)):
            info = self.class_info(owner) if isinstance(owner, ProjectClass) else None
            if info is not None:
                attrs |= set(info.self_assigned) | set(info.self_grown)
        return attrs

    def rnn_attributes(self, path: str, qualname: str) -> Dict[str, RnnFact]:
        """The attributes of a class that can hold a torch RNN (or a list of them), with what they hold."""
        cls = ProjectClass(os.path.abspath(path), qualname)
        facts = {}
        for attr in sorted(self.assigned_attributes(path, qualname)):
            fact = self.rnn_fact(self.assigned_values(cls, attr))
            if fact is not None:
                facts[attr] = fact
        return facts

    def module_classes(self, path: str) -> List[str]:
        summary = self.summary(path)
        if summary is None:
            return []
        return [name for name in summary.classes if self.is_module_class(ProjectClass(summary.path, name))]

    @staticmethod
    def _union(groups: Iterable[Values]) -> Values:
        found = set()
        for group in groups:
            found |= group
        return frozenset(found)


@stages.counted_methods("model")
class EvaluatedClasses:
    """The evaluator's answers about the classes of the file being linted, made on first question (most
    files never ask). `source` gives the file's text when no tree was parsed for it already."""

    def __init__(self, path: str, tree: Optional[ast.Module], source: Callable[[], str],
                 handed_in: Optional[Callable[[str], Dict[str, FrozenSet[Tuple[str, RnnKind]]]]] = None) -> None:
        self._path = os.path.abspath(path) if path else os.path.abspath("<source>.py")
        self._tree = tree
        self._source = source
        self._evaluator: Optional[Evaluator] = None
        # The project index's calls elsewhere that hand a class of this file an RNN class or instance:
        # {parameter name or position: ("class" or "instance", "nn.LSTM or nn.GRU")}.
        self._handed_in = handed_in

    @property
    def path(self) -> str:
        return self._path

    @property
    def tree(self) -> ast.Module:
        """The file's `ast` tree, the one the evaluator binds (its nodes are the ones queries take)."""
        return self.evaluator.summary(self._path).tree

    def scope_at(self, node: ast.AST) -> Optional[Scope]:
        """The innermost function or class scope of the file holding a node of `tree` (the module's else)."""
        return self.evaluator.summary(self._path).scope_at(node)

    def factory_of(self, call: ast.Call) -> Optional[ProjectFunction]:
        """The project function whose return a DataParallel call wraps, directly or through one local name
        (`layer = recurrent_layer("gru", size)`, then `nn.DataParallel(layer)`), for the message."""
        module = wrapped_module(call)
        scope = self.scope_at(call)
        if isinstance(module, ast.Name) and scope is not None:
            bound = scope.bindings.get(module.id, [])
            module = bound[0].value if len(bound) == 1 and bound[0].kind == ASSIGN and not bound[0].positions else None
        if not isinstance(module, ast.Call) or scope is None:
            return None
        try:
            functions = [value for value in self.evaluator.values(module.func, scope) if isinstance(value, ProjectFunction)]
        except RecursionError:
            return None
        return functions[0] if len(functions) == 1 else None

    def wrapped_rnn(self, call: ast.Call) -> Optional[RnnFact]:
        """What the module a DataParallel call wraps is (its first argument or `module=`), as far as RNNs go,
        leaving out DataParallel wraps of it (`self.rnn = nn.DataParallel(self.rnn)` wraps what `self.rnn`
        held before)."""
        module = wrapped_module(call)
        if module is None:
            return None
        try:
            scope = self.scope_at(call)
            receiver = ProjectClass(self._path, scope.owner_class) if scope is not None and scope.owner_class else None
            values = self.evaluator.values(module, scope, receiver)
            return self.evaluator.rnn_fact(frozenset(value for value in values if not is_data_parallel(value)))
        except RecursionError:
            return None

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            if self._tree is not None:
                tree = self._tree
            else:
                with stages.stage("python parse", self._path):
                    tree = ast.parse(self._source())
            self._evaluator = Evaluator(own=(self._path, tree), handed=self._handed if self._handed_in else None)
        return self._evaluator

    def _handed(self, cls: ProjectClass, name: str, position: Optional[int]) -> Values:
        """What callers elsewhere hand parameter `name` (at `position`) of the __init__ of a class of this file."""
        if cls.path != self._path:
            return NOTHING
        found = set()
        for key, handed in self._handed_in(cls.qualname).items():
            if key == name or (position is not None and key == str(position)):
                for what, kind in handed:
                    torch_class = External(f"torch.nn.{kind.value}")
                    found.add(Instance(torch_class) if what == "instance" else torch_class)
        return frozenset(found)

    # The per-file model already stands on its own: where the evaluator runs out of stack (code nested
    # past what Python's recursion allows), the file is analysed without its answers rather than lost.
    def is_module(self, qualname: str) -> bool:
        try:
            return self.evaluator.is_module_class(ProjectClass(self._path, qualname))
        except RecursionError:
            return False

    def may_be_module(self, qualname: str) -> bool:
        try:
            return self.evaluator.may_be_module_class(ProjectClass(self._path, qualname))
        except RecursionError:
            return True

    def rnn_class_kinds(self, qualname: str) -> FrozenSet[RnnKind]:
        """The torch RNN kinds a class of this file is, through any of its bases (a subclass of nn.LSTM)."""
        try:
            return self.evaluator.rnn_class_kinds(ProjectClass(self._path, qualname))
        except RecursionError:
            return frozenset()

    def rnn_attributes(self, qualname: str) -> Dict[str, RnnFact]:
        try:
            return self.evaluator.rnn_attributes(self._path, qualname)
        except RecursionError:
            return {}

    def may_run_rnn(self) -> bool:
        """Whether a class of the file subclasses a torch RNN or has an attribute (set here or by a base, in
        any file) that can hold one: without either, no rule that starts from an RNN class finds anything
        here. Out of stack, yes (the analysis decides)."""
        summary = self.evaluator.summary(self._path)
        if summary is None:
            return True
        try:
            return any(self.evaluator.rnn_class_kinds(ProjectClass(self._path, qualname))
                       or self.evaluator.rnn_attributes(self._path, qualname) for qualname in summary.classes)
        except RecursionError:
            return True

    def assigned_attributes(self, qualname: str) -> Set[str]:
        try:
            return self.evaluator.assigned_attributes(self._path, qualname)
        except RecursionError:
            return set()

    def held_class(self, qualname: str, attr: str) -> Optional[ProjectClass]:
        """The project class whose instance `self.<attr>` of a class of this file always holds, if one does."""
        try:
            values = self.evaluator.assigned_values(ProjectClass(self._path, qualname), attr)
        except RecursionError:
            return None
        if len(values) == 1:
            value = next(iter(values))
            if isinstance(value, Instance) and isinstance(value.of, ProjectClass):
                return value.of
        return None

    def holders_pass_the_cpu(self, qualname: str, param: str, files: Sequence[str]) -> Optional[str]:
        """What every call a holder makes of a class of this file (`self.encoder(x, lengths.cpu())` in a
        module class, of this file or of `files`, whose attribute holds an instance of it) passes parameter
        `param` of its forward: "list" when a Python list each time, "cpu" when a value on the CPU each
        time (a list, `x.cpu()`, `x.tolist()`, `x.numpy()`), None otherwise or when no holder's call is
        found."""
        target = ProjectClass(self._path, qualname)
        try:
            found = self.evaluator.find_method(target, "forward")
            if found is None:
                return None
            forward = found[1]
            verdicts = []
            for path in dict.fromkeys([self._path, *files]):
                summary = self.evaluator.summary(path)
                for name, info in summary.classes.items() if summary is not None else ():
                    holder = ProjectClass(summary.path, name)
                    attrs = {attr for attr in info.self_assigned
                             if Instance(target) in self.evaluator.assigned_values(holder, attr)}
                    for method in info.methods.values() if attrs else ():
                        scope = summary.scope_of(method)
                        for call in ast.walk(method):
                            if isinstance(call, ast.Call) and _calls_held(call.func, scope.self_name) in attrs:
                                argument = _argument_for(call, forward, param, skip_self=True)
                                verdicts.append(self._on_the_cpu(argument, scope, 0) if argument is not None else None)
        except RecursionError:
            return None
        if not verdicts or None in verdicts:
            return None
        return "list" if all(verdict == "list" for verdict in verdicts) else "cpu"

    def _on_the_cpu(self, expr: ast.AST, scope: Scope, depth: int) -> Optional[str]:
        """"list" for a Python list, "cpu" for another value on the CPU, None when it may be on a GPU."""
        if isinstance(expr, (ast.List, ast.ListComp)):
            return "list"
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr == "tolist":
                return "list"
            if isinstance(func, ast.Name) and func.id == "list":
                return "list" if External("builtins.list") in self.evaluator.values(func, scope) else None
            if isinstance(func, ast.Attribute) and func.attr in ("cpu", "numpy"):
                return "cpu"
            if isinstance(func, ast.Attribute) and func.attr == "to" and expr.args and isinstance(
                    expr.args[0], ast.Constant) and expr.args[0].value == "cpu":
                return "cpu"
            return None
        if isinstance(expr, ast.Name) and depth < 3:
            bound = scope.bindings.get(expr.id, [])
            found = {self._on_the_cpu(b.value, b.scope or scope, depth + 1)
                     if b.kind == ASSIGN and not b.positions and b.value is not None else None for b in bound}
            return found.pop() if len(found) == 1 else ("cpu" if found and None not in found else None)
        return None

    def returned_torch_call(self, function_name: str, qualified: str) -> Optional[ast.Call]:
        """The call of the torch function `qualified` that a function of the file (or one it imports)
        returns, when it returns one (`def pad_targets(t): return pad_sequence(t, batch_first=True)`)."""
        try:
            summary = self.evaluator.summary(self._path)
            if summary is None:
                return None
            for value in self.evaluator.name_values(function_name, summary.module_scope):
                if not isinstance(value, ProjectFunction):
                    continue
                scope = self.evaluator.summary(value.path).functions.get(value.qualname)
                for returned in scope.returns if scope is not None else ():
                    bound = scope.bindings.get(returned.id, []) if isinstance(returned, ast.Name) else []
                    if len(bound) == 1 and bound[0].kind == ASSIGN and not bound[0].positions:
                        returned = bound[0].value  # `padded = pad_sequence(...)`, then `return padded`
                    if isinstance(returned, ast.Call) and any(
                            isinstance(callee, External) and canonical(callee.qualname) == qualified
                            for callee in self.evaluator.values(returned.func, scope)):
                        return returned
        except RecursionError:
            return None
        return None

    def methods_run_by_holders(self, qualname: str, names: FrozenSet[str], files: Sequence[str]) -> Dict[str, str]:
        """Which of the methods `names` of a class of this file the forward pass of a module class (of this
        file or of `files`, those that may build it) calls on an attribute that can hold an instance of it
        (`self.q_emb.forward_all(q)`, `q_emb` handed to the holder's constructor): under DataParallel they
        run on the replicas as forward does. The holder's forward pass is its forward and the methods it
        runs on self. {method: the holder's qualified name}."""
        target = ProjectClass(self._path, qualname)
        found: Dict[str, str] = {}
        called = re.compile(rb"\.(?:" + b"|".join(re.escape(name.encode()) for name in sorted(names)) + rb")\s*\(")
        try:
            for path in dict.fromkeys([self._path, *files]):
                if path != self._path and not called.search(read_source_or_none(path) or b""):
                    continue  # no call of these methods there: not worth binding the file
                summary = self.evaluator.summary(path)
                for name in summary.classes if summary is not None else ():
                    holder = ProjectClass(summary.path, name)
                    if holder == target:
                        continue
                    for attr, method in self._held_calls(holder, names):
                        if method not in found and Instance(target) in self.evaluator.instance_attribute(holder, attr):
                            found[method] = name
        except RecursionError:
            return found
        return found

    def _held_calls(self, holder: ProjectClass, names: FrozenSet[str]) -> List[Tuple[str, str]]:
        """(attribute, method) for each `self.<attribute>.<method>(...)` with a method among `names` on the
        forward pass of `holder`, when it is a module class."""
        start = self.evaluator.find_method(holder, "forward")
        if start is None:
            return []
        calls: List[Tuple[str, str]] = []
        pending, seen = [start], set()
        while pending and len(seen) < _MAX_PATH_METHODS:
            owner, method = pending.pop()
            if id(method) in seen:
                continue
            seen.add(id(method))
            summary = self.evaluator.summary(owner.path)
            scope = summary.scope_of(method) if summary is not None else None
            me = scope.self_name if scope is not None else None
            for call in ast.walk(method) if me else ():
                func = call.func if isinstance(call, ast.Call) else None
                if not isinstance(func, ast.Attribute):
                    continue
                attr = self_attribute(func.value, me)
                if attr is not None and func.attr in names:
                    calls.append((attr, func.attr))
                elif self_attribute(func, me) is not None:
                    helper = self.evaluator.find_method(holder, func.attr)
                    if helper is not None:
                        pending.append(helper)
        if calls and not (self.evaluator.is_module_class(holder) or self.evaluator.may_be_module_class(holder)):
            return []
        return calls

    def entries_from_elsewhere(self, qualname: str) -> List[str]:
        try:
            return self.evaluator.entries_from_elsewhere(ProjectClass(self._path, qualname))
        except RecursionError:
            return []


# How many methods of a holder's forward pass are read for its calls of a held module's methods.
_MAX_PATH_METHODS = 32

_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                            "torch.nn.parallel.data_parallel.DataParallel"})


def is_data_parallel(value: Value) -> bool:
    return isinstance(value, Instance) and isinstance(value.of, External) and value.of.qualname in _DATA_PARALLEL


def _is_torch_module_class(qualname: str) -> bool:
    """torch.nn's module classes under any spelling (`nn.Module`, `nn.modules.rnn.RNNCellBase`,
    `nn.parallel.DistributedDataParallel`), and the third-party bases that are modules."""
    if is_module_base(qualname) or canonical(qualname) in THIRD_PARTY_MODULE_BASES:
        return True
    namespace, _, last = qualname.rpartition(".")
    return namespace in ("torch.nn.parallel", "torch.nn.parallel.distributed", "torch.nn.parallel.data_parallel") and (
        is_module_base(f"torch.nn.{last}"))


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(node))


def _holds_modules(folder: str) -> bool:
    """Whether a folder holds a Python module of its own besides `__init__.py` (a script run from it)."""
    try:
        return any(name.endswith(".py") and name != "__init__.py" for name in os.listdir(folder))
    except OSError:
        return False


def _calls_held(func: ast.AST, me: Optional[str]) -> Optional[str]:
    """`encoder` for `self.encoder(...)` or `self.encoder.forward(...)`: a call of a held module."""
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return self_attribute(func, me)


def _parameter_position(function: ast.AST, name: str) -> Optional[int]:
    """The position callers pass a parameter at, not counting a method's `self`."""
    positional = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]
    return positional.index(name) - 1 if name in positional[1:] else None


def _argument_for(call: ast.Call, function: ast.AST, name: str, skip_self: bool) -> Optional[ast.AST]:
    """The argument a call passes to a parameter of a method, by keyword or position; None when it passes
    none it can be told apart from (`*args`, `**kwargs`, left to its default)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    positional = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)][1:]
    arguments = list(call.args) if skip_self else list(call.args[1:])
    if name in positional:
        index = positional.index(name)
        if any(isinstance(arg, ast.Starred) for arg in arguments[:index + 1]):
            return None
        if index < len(arguments):
            return arguments[index]
    return None


def _moves_itself(value: ast.AST, name: str) -> bool:
    """`rnn = rnn.to(device)`: the same module, moved or cast."""
    moved = without_device_moves(value)
    return isinstance(moved, ast.Name) and moved.id == name


def _is_classmethod(node: ast.AST) -> bool:
    return any(isinstance(decorator, ast.Name) and decorator.id == "classmethod" for decorator in node.decorator_list)


def _reaching(bindings: List[Binding], use: Optional[ast.AST]) -> List[Binding]:
    """The bindings of a local name that can reach a use of it: an assignment in the function's straight-line
    code (no if, loop or try around it) hides every binding before it from the uses after it, and cannot
    reach a use above it. Conditional ones are kept (a loop may bring a later one round)."""
    line = getattr(use, "lineno", None)
    if line is None:
        return bindings
    kept = [b for b in bindings
            if b.conditional or b.kind != ASSIGN or getattr(b.value, "lineno", 0) < line]
    last = max((index for index, b in enumerate(kept) if b.kind == ASSIGN and not b.conditional
                and getattr(b.value, "lineno", line) < line), default=None)
    return kept[last:] if last is not None else kept


def _last_build(name: str, bindings: List[Binding]) -> List[Binding]:
    """A local name's bindings that can reach its uses. One flow-sensitive step, the one module code needs:
    a name rebuilt from itself (`rnn = WeightDrop(rnn)`) is what its last rebuilding step makes, whatever it
    was before; `rnn = rnn.to(device)` is the same module and adds nothing."""
    kept = [b for b in bindings if not (b.kind == ASSIGN and _moves_itself(b.value, name))] or bindings
    rebuilt = [index for index, b in enumerate(kept) if b.kind == ASSIGN and not b.conditional and _mentions(b.value, name)]
    return kept[rebuilt[-1]:] if rebuilt else kept


def _last_self_build(attr: str, assigned: Sequence[Tuple[ast.AST, Scope, Tuple[int, ...]]], conditional: set):
    """`self.rnn = nn.LSTM(...)` then `self.rnn = Wrapper(self.rnn)` in one method: the attribute is what the
    last step that reads it makes (the same flow-sensitive step as `_last_build`, for attributes), unless
    that step may not run (`if wdrop: self.rnn = WeightDrop(self.rnn)`)."""
    kept = list(assigned)
    for index in range(len(kept) - 1, 0, -1):
        value, scope, _ = kept[index]
        if id(value) in conditional:
            continue
        if _rebuilds_attribute(value, scope.self_name, attr):
            return [entry for entry in kept[:index] if entry[1] is not scope] + kept[index:]
    return kept


def _rebuilds_attribute(value: ast.AST, me: Optional[str], attr: str) -> bool:
    """`self.rnn = Wrapper(self.rnn)`: a value made from the attribute itself (a move, `self.rnn.cuda()`,
    is the same module and not a rebuild)."""
    if self_attribute(without_device_moves(value), me) == attr:
        return False
    return any(self_attribute(node, me) == attr for node in ast.walk(value))


def _own_weight(target: ast.AST, me: Optional[str]) -> bool:
    """`self.weight_hh_l0 = ...`, `self._flat_weights = ...`, `self._parameters[name] = ...`."""
    if isinstance(target, ast.Subscript):
        return self_attribute(target.value, me) == "_parameters"
    attr = self_attribute(target, me)
    return attr is not None and attr.startswith(("weight_", "bias_", "_flat_weights"))


def project_rnn_attributes(root: str, paths: Sequence[str]) -> Dict[Tuple[str, str], Dict[str, FrozenSet[str]]]:
    """For every nn.Module class of the files: the attributes that can hold a torch RNN and their kinds
    ("LSTM", ...), keyed by (path relative to root with '/', class qualname). The oracle compares this."""
    evaluator = Evaluator()
    root = os.path.abspath(root)
    found = {}
    for path in paths:
        absolute = os.path.abspath(path)
        relative = os.path.relpath(absolute, root).replace(os.sep, "/")
        for qualname in evaluator.module_classes(absolute):
            facts = evaluator.rnn_attributes(absolute, qualname)
            # A guess alone (a run-time string only) is not a verdict the rules act on.
            found[(relative, qualname)] = {attr: frozenset(kind.value for kind in fact.kinds)
                                           for attr, fact in facts.items() if not fact.guess}
    return found
