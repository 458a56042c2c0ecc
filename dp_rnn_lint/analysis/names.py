"""Resolve names to torch's qualified names through a file's own imports and scopes.

A small replacement for libcst's QualifiedNameProvider, which is correct but several times slower
than parsing: we only ever ask about a handful of torch names, so one pass that records imports and
bindings per scope is enough. Resolution follows Python's rules where they matter to us: a name bound
in a function (parameter, assignment, loop target...) shadows the module's import; class bodies do
not enclose their methods; `global` sends a name to the module scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Union

import libcst as cst

from ..files import resolve_relative_import
from .traversal import Visitor, walk

# How a name got bound; only "import" bindings carry a qualified name directly.
IMPORT, ASSIGN, PARAM, DEF, OTHER = "import", "assign", "param", "def", "other"
UNPACK = "unpack"  # one plain name of `a, b = value`: member `index` of `count` of the value


@dataclass
class Binding:
    kind: str
    qualified_name: Optional[str] = None  # for imports
    value: Optional[cst.BaseExpression] = None  # for single-name assignments and parameter defaults
    node: Optional[cst.CSTNode] = None  # the def/class node for DEF bindings
    index: Optional[int] = None  # for UNPACK bindings: the name's position in the target
    count: Optional[int] = None  # for UNPACK bindings: how many names the target has


@dataclass
class Scope:
    node: cst.CSTNode
    kind: str  # "module", "class", "function", "comprehension"
    parent: Optional["Scope"]
    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    global_names: set = field(default_factory=set)

    def bind(self, name: str, binding: Binding) -> None:
        if name in self.global_names and self.kind != "module":
            self.module_scope().bindings.setdefault(name, []).append(binding)
            return
        self.bindings.setdefault(name, []).append(binding)

    def module_scope(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a chain of Name/Attribute nodes, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


class ScopeBuilder(Visitor):
    """One pass over a module that records every scope and what each name is bound to."""

    def __init__(self, module_name: Optional[str] = None, is_package: bool = False) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self.scopes: Dict[cst.CSTNode, Scope] = {}
        # Every call in the order visited, which is source order: it lets the engine place findings
        # (always calls) from Python's own tree instead of a costly position pass.
        self.calls: List[cst.Call] = []
        self.call_scopes: Dict[cst.Call, Scope] = {}  # the scope each call is evaluated in
        self._stack: List[Scope] = []

    # -- scope bookkeeping -------------------------------------------------------------------------
    @property
    def current(self) -> Scope:
        return self._stack[-1]

    def _push(self, node: cst.CSTNode, kind: str) -> None:
        parent = self._stack[-1] if self._stack else None
        scope = Scope(node=node, kind=kind, parent=parent)
        self.scopes[node] = scope
        self._stack.append(scope)

    def _pop(self) -> None:
        self._stack.pop()

    def visit_Module(self, node: cst.Module) -> None:
        self._push(node, "module")

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        self.call_scopes[node] = self._stack[-1]

    def leave_Module(self, original_node: cst.Module) -> None:
        self._pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.current.bind(node.name.value, Binding(DEF, node=node))
        # Decorators and bases are evaluated in the enclosing scope.
        for decorator in node.decorators:
            walk(decorator, self)
        for base in node.bases:
            walk(base, self)
        for keyword in node.keywords:
            walk(keyword, self)
        self._push(node, "class")
        walk(node.body, self)
        self._pop()
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.current.bind(node.name.value, Binding(DEF, node=node))
        for decorator in node.decorators:
            walk(decorator, self)
        return self.visit_Lambda(node)

    def visit_Lambda(self, node: Union[cst.Lambda, cst.FunctionDef]) -> None:
        # Parameter defaults are evaluated in the enclosing scope, the body in the function's own.
        self._visit_param_defaults(node.params)
        self._push(node, "function")
        self._bind_params(node.params)
        walk(node.body, self)
        self._pop()
        return False

    def _visit_param_defaults(self, params: cst.Parameters) -> None:
        for param in _all_params(params):
            if param.default is not None:
                walk(param.default, self)

    def _bind_params(self, params: cst.Parameters) -> None:
        for param in _all_params(params):
            self.current.bind(param.name.value, Binding(PARAM, value=param.default))

    def _visit_comprehension(self, node: cst.CSTNode) -> None:
        # The first iterable is evaluated outside; everything else inside the comprehension's scope.
        first_call = len(self.calls)
        for_in = node.for_in
        walk(for_in.iter, self)
        self._push(node, "comprehension")
        comp = for_in
        first = True
        while comp is not None:
            if not first:
                walk(comp.iter, self)
            first = False
            self._bind_target(comp.target, None)
            for condition in comp.ifs:
                walk(condition, self)
            comp = comp.inner_for_in
        element_call = len(self.calls)
        for name in ("elt", "key", "value"):
            child = getattr(node, name, None)
            if child is not None:
                walk(child, self)
        # The element comes first in the source: keep the recorded calls in source order.
        self.calls[first_call:] = self.calls[element_call:] + self.calls[first_call:element_call]
        self._pop()
        return False

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _visit_comprehension

    # -- bindings ---------------------------------------------------------------------------------
    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.current.global_names.add(item.name.value)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.current.bind(alias.asname.name.value, Binding(IMPORT, qualified_name=full))
            else:
                top = full.split(".")[0]
                self.current.bind(top, Binding(IMPORT, qualified_name=top))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        target = dotted_name(node.module) if node.module is not None else None
        if node.relative:
            base = resolve_relative_import(self.module_name, self.is_package, len(node.relative), target)
        else:
            base = target
        if isinstance(node.names, cst.ImportStar):
            return  # star imports are not followed
        for alias in node.names:
            imported = dotted_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else imported
            if local is None:
                continue
            qualified = f"{base}.{imported}" if base else None
            self.current.bind(local, Binding(IMPORT, qualified_name=qualified))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        scope = self.current
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent  # PEP 572: the walrus binds in the enclosing function
        if isinstance(node.target, cst.Name):
            scope.bind(node.target.value, Binding(ASSIGN, value=node.value))

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name, None)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind_target(node.name, None)

    def _bind_target(self, target: cst.CSTNode, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, cst.Name):
            self.current.bind(target.value, Binding(ASSIGN if value is not None else OTHER, value=value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            plain = value is not None and all(isinstance(element, cst.Element) and isinstance(element.value, cst.Name)
                                              for element in elements)  # no `*rest`: positions would shift
            for position, element in enumerate(elements):
                if plain:
                    self.current.bind(element.value.value,
                                      Binding(UNPACK, value=value, index=position, count=len(elements)))
                else:
                    self._bind_target(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)


def _all_params(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    yield from params.kwonly_params
    if params.star_kwarg is not None:
        yield params.star_kwarg


def parameter_names(params: cst.Parameters) -> List[str]:
    return [param.name.value for param in _all_params(params)]


class NameResolver:
    """Answers "what does this expression name?" for a module, given the scope the expression sits in."""

    def __init__(self, module: cst.Module, module_name: Optional[str] = None, is_package: bool = False) -> None:
        builder = ScopeBuilder(module_name, is_package)
        walk(module, builder)
        self.scopes = builder.scopes
        self.calls = builder.calls
        self.call_scopes = builder.call_scopes
        self.module_scope = builder.scopes[module]
        self.module_name = module_name

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.scopes[node]

    def owner(self, name: str, scope: Scope) -> Optional[Scope]:
        """The scope whose binding of `name` is visible from `scope` (LEGB, class scopes skipped)."""
        if name in scope.global_names:
            return self.module_scope if name in self.module_scope.bindings else None
        current: Optional[Scope] = scope
        first = True
        while current is not None:
            if (first or current.kind != "class") and name in current.bindings:
                return current
            first = False
            current = current.parent
        return None

    def bindings(self, name: str, scope: Scope) -> Sequence[Binding]:
        owner = self.owner(name, scope)
        return owner.bindings[name] if owner is not None else ()

    def qualified_name(self, node: cst.CSTNode, scope: Scope, _depth: int = 0) -> Optional[str]:
        """torch.nn.LSTM for `nn.LSTM` after `import torch.nn as nn`; None when the name is not an import."""
        if _depth > 8:
            return None
        if isinstance(node, cst.Attribute):
            base = self.qualified_name(node.value, scope, _depth + 1)
            return None if base is None else f"{base}.{node.attr.value}"
        if not isinstance(node, cst.Name):
            return None
        owner = self.owner(node.value, scope)
        if owner is None:
            return f"builtins.{node.value}"
        found = owner.bindings[node.value]
        qualified = {b.qualified_name for b in found if b.kind == IMPORT}
        if len(qualified) == 1 and all(b.kind == IMPORT for b in found):
            return qualified.pop()
        # `LSTM = nn.LSTM` at one place: an alias of the import.
        if len(found) == 1 and found[0].kind == ASSIGN and isinstance(found[0].value, (cst.Name, cst.Attribute)):
            return self.qualified_name(found[0].value, owner, _depth + 1)
        if len(found) == 1 and found[0].kind == DEF and self.module_name and owner is self.module_scope:
            # A class or function defined at module level: qualified by this module's own name.
            return f"{self.module_name}.{node.value}"
        return None
