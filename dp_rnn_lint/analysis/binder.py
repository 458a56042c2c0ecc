"""One pass over a file's `ast`: its scopes and bindings, classes, functions and what they return.

The binder records declarations and nothing else (as pyright's binder does); what a name or expression
can *be* is the evaluator's question (`evaluator.py`), answered lazily and across files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# Binding kinds
MODULE_IMPORT = "module-import"  # import a.b as c (module "a.b"); import a.b (binds "a", module "a")
FROM_IMPORT = "from-import"  # from .a import b (module "a", level 1, name "b")
ASSIGN = "assign"  # name = value (unpacked by `positions` from the value)
PARAM = "param"  # a parameter; `value` is its default
SELF = "self"  # the first parameter of a method: an instance of the class
DEF = "def"  # def or class statement
LOOP = "loop"  # for name in value: a member of value
OTHER = "other"  # with ... as name, except ... as name, a global: unknown

_LIST_GROWERS = ("append", "extend", "insert")
_REGISTERS = ("add_module", "register_module")


@dataclass
class Binding:
    kind: str
    value: Optional[ast.AST] = None  # the value, default, definition or iterable
    scope: Optional["Scope"] = None  # where `value` is evaluated
    module: Optional[str] = None
    level: int = 0
    name: Optional[str] = None
    positions: Tuple[int, ...] = ()  # `a, (b, c) = v`: c is v[1][1]
    starred: bool = False  # `*rest = v`
    conditional: bool = False  # under an if, a loop, a try or a match of its function: it may not run


@dataclass
class Scope:
    kind: str  # "module", "class" or "function"
    node: ast.AST
    parent: Optional["Scope"]
    qualname: str = ""
    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    stars: List[Tuple[str, int]] = field(default_factory=list)  # from m import *: (module, level)
    grown: Dict[str, List[Tuple[ast.AST, str]]] = field(default_factory=dict)  # name.append(v): (v, "append")
    returns: List[ast.AST] = field(default_factory=list)
    self_name: Optional[str] = None  # in a method: the name its instance goes by
    owner_class: Optional[str] = None  # in a method: the qualname of its class
    path: str = ""  # the file the scope is in

    def bind(self, name: str, binding: Binding) -> None:
        binding.scope = binding.scope or self
        self.bindings.setdefault(name, []).append(binding)


@dataclass
class ClassInfo:
    qualname: str
    node: ast.ClassDef
    outer: Scope  # where the class statement runs: its bases are evaluated there
    body: Scope
    methods: Dict[str, ast.AST] = field(default_factory=dict)
    # self.<attr> = value in any method: (value, the method's scope, unpack positions)
    self_assigned: Dict[str, List[Tuple[ast.AST, Scope, Tuple[int, ...]]]] = field(default_factory=dict)
    # self.<attr>.append(v) / .extend(v) / += v: (v, how, the method's scope)
    self_grown: Dict[str, List[Tuple[ast.AST, str, Scope]]] = field(default_factory=dict)
    conditional: set = field(default_factory=set)  # ids of the self_assigned values that may not run


@dataclass
class FileSummary:
    path: str
    tree: ast.Module
    module_scope: Scope
    classes: Dict[str, ClassInfo] = field(default_factory=dict)
    functions: Dict[str, Scope] = field(default_factory=dict)  # qualname -> the scope of a function or method
    scopes: Dict[int, Scope] = field(default_factory=dict)  # id(def node) -> its scope
    exports: Optional[List[str]] = None  # __all__, when it is a literal list of strings

    def scope_of(self, node: ast.AST) -> Optional[Scope]:
        return self.scopes.get(id(node))

    def scope_at(self, node: ast.AST) -> Scope:
        """The innermost function or class scope holding a node of `tree` (the module's else)."""
        found, line = self.module_scope, getattr(node, "lineno", 0)
        for scope in self.scopes.values():
            definition = scope.node
            if (definition.lineno <= line <= (definition.end_lineno or 0)
                    and (found.kind == "module" or definition.lineno >= found.node.lineno)):
                found = scope
        return found


def bind_file(path: str, tree: ast.Module) -> FileSummary:
    module = Scope("module", tree, None, path=path)
    summary = FileSummary(path, tree, module)
    _Binder(summary).body(tree.body, module, None)
    return summary


def self_attribute(node: ast.AST, me: Optional[str]) -> Optional[str]:
    """`rnn` for `self.rnn`, where `me` is the name the method's instance goes by."""
    if me and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me:
        return node.attr
    return None


class _Binder:
    def __init__(self, summary: FileSummary) -> None:
        self.summary = summary
        self.conditional = 0  # how many ifs, loops, trys and matches of the current function hold the statement

    # -- statements -----------------------------------------------------------------------------------
    def body(self, statements: List[ast.stmt], scope: Scope, cls: Optional[ClassInfo]) -> None:
        for statement in statements:
            self.statement(statement, scope, cls)

    def statement(self, node: ast.stmt, scope: Scope, cls: Optional[ClassInfo]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, scope, cls)
        elif isinstance(node, ast.ClassDef):
            self.klass(node, scope)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.bind(alias.asname, Binding(MODULE_IMPORT, module=alias.name))
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top, Binding(MODULE_IMPORT, module=top))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    scope.stars.append((node.module or "", node.level))
                else:
                    scope.bind(alias.asname or alias.name,
                               Binding(FROM_IMPORT, module=node.module or "", level=node.level, name=alias.name))
        elif isinstance(node, ast.Assign):
            self.expressions(node.value, scope, cls)
            for target in node.targets:
                self.target(target, node.value, scope, cls, ())
            if scope.kind == "module" and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                if isinstance(node.value, (ast.List, ast.Tuple)) and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts):
                    self.summary.exports = [e.value for e in node.value.elts]
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expressions(node.value, scope, cls)
                self.target(node.target, node.value, scope, cls, ())
        elif isinstance(node, ast.AugAssign):
            self.expressions(node.value, scope, cls)
            if isinstance(node.op, ast.Add):
                self.grow(node.target, node.value, "extend", scope, cls)
            if isinstance(node.target, ast.Name):
                scope.bind(node.target.id, Binding(OTHER))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.expressions(node.iter, scope, cls)
            self.target(node.target, node.iter, scope, cls, (), loop=True)
            self.conditional += 1
            self.body(node.body, scope, cls)
            self.body(node.orelse, scope, cls)
            self.conditional -= 1
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expressions(item.context_expr, scope, cls)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, None, scope, cls, ())
            self.body(node.body, scope, cls)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expressions(node.value, scope, cls)
                scope.returns.append(node.value)
        elif isinstance(node, ast.Expr):
            self.expressions(node.value, scope, cls)
        else:
            branching = isinstance(node, (ast.If, ast.While, ast.Try, getattr(ast, "TryStar", ast.Try),
                                          getattr(ast, "Match", ast.If)))
            self.conditional += branching
            self._children(node, scope, cls)
            self.conditional -= branching

    def _children(self, node: ast.stmt, scope: Scope, cls: Optional[ClassInfo]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statement(child, scope, cls)
            elif isinstance(child, ast.ExceptHandler):
                if child.name:
                    scope.bind(child.name, Binding(OTHER))
                self.body(child.body, scope, cls)
            elif isinstance(child, ast.expr):
                self.expressions(child, scope, cls)
            elif hasattr(ast, "match_case") and isinstance(child, ast.match_case):
                self.body(child.body, scope, cls)

    def function(self, node: ast.AST, scope: Scope, cls: Optional[ClassInfo]) -> None:
        scope.bind(node.name, Binding(DEF, value=node))
        outer, self.conditional = self.conditional, 0
        try:
            self._function(node, scope, cls)
        finally:
            self.conditional = outer

    def _function(self, node: ast.AST, scope: Scope, cls: Optional[ClassInfo]) -> None:
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.expressions(default, scope, cls)
        qualname = f"{scope.qualname}.{node.name}" if scope.qualname else node.name
        inner = Scope("function", node, scope, qualname, path=scope.path)
        self.summary.scopes[id(node)] = inner
        self.summary.functions.setdefault(qualname, inner)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        method = cls is not None and scope is cls.body and "staticmethod" not in decorators
        for index, (arg, default) in enumerate(zip(positional, defaults)):
            if index == 0 and method and "classmethod" not in decorators:
                inner.self_name, inner.owner_class = arg.arg, cls.qualname
                inner.bind(arg.arg, Binding(SELF, name=cls.qualname))
            else:
                inner.bind(arg.arg, Binding(PARAM, value=default, scope=scope, name=arg.arg))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            inner.bind(arg.arg, Binding(PARAM, value=default, scope=scope, name=arg.arg))
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                inner.bind(arg.arg, Binding(OTHER))
        if method:
            cls.methods[node.name] = node
        self.body(node.body, inner, cls if method else None)

    def klass(self, node: ast.ClassDef, scope: Scope) -> None:
        scope.bind(node.name, Binding(DEF, value=node))
        for base in node.bases:
            self.expressions(base, scope, None)
        qualname = f"{scope.qualname}.{node.name}" if scope.qualname else node.name
        body = Scope("class", node, scope, qualname, path=scope.path)
        self.summary.scopes[id(node)] = body
        info = ClassInfo(qualname, node, scope, body)
        self.summary.classes.setdefault(qualname, info)
        self.body(node.body, body, info)

    def target(self, target: ast.AST, value: Optional[ast.AST], scope: Scope, cls: Optional[ClassInfo],
               positions: Tuple[int, ...], loop: bool = False, starred: bool = False) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                scope.bind(target.id, Binding(OTHER))
            else:
                scope.bind(target.id, Binding(LOOP if loop else ASSIGN, value=value, positions=positions, starred=starred,
                                              conditional=self.conditional > 0))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self.target(element.value, value, scope, cls, positions + (index,), loop, starred=True)
                else:
                    self.target(element, value, scope, cls, positions + (index,), loop)
        elif isinstance(target, ast.Attribute):
            attr = self_attribute(target, scope.self_name)
            if attr is not None and cls is not None and value is not None and not loop:
                cls.self_assigned.setdefault(attr, []).append((value, scope, positions))
                if self.conditional:
                    cls.conditional.add(id(value))
        elif isinstance(target, ast.Starred):
            self.target(target.value, value, scope, cls, positions, loop, starred=True)

    def grow(self, target: ast.AST, value: ast.AST, how: str, scope: Scope, cls: Optional[ClassInfo]) -> None:
        if isinstance(target, ast.Name):
            scope.grown.setdefault(target.id, []).append((value, how))
        attr = self_attribute(target, scope.self_name)
        if attr is not None and cls is not None:
            cls.self_grown.setdefault(attr, []).append((value, how, scope))

    # -- expressions: only the calls that add to a list or register a submodule, and nested scopes -----
    def expressions(self, node: ast.AST, scope: Scope, cls: Optional[ClassInfo]) -> None:
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue  # their names are their own; what they build is evaluated where they are used
            if isinstance(current, ast.NamedExpr) and isinstance(current.target, ast.Name):
                scope.bind(current.target.id, Binding(ASSIGN, value=current.value))
            if isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute) and current.args:
                method = current.func.attr
                if method in _LIST_GROWERS:
                    self.grow(current.func.value, current.args[-1], method, scope, cls)
                elif method in _REGISTERS and len(current.args) == 2 and cls is not None:
                    self.register(current, current.func.value, current.args[0], current.args[1], scope, cls)
            if (isinstance(current, ast.Call) and isinstance(current.func, ast.Name) and current.func.id == "setattr"
                    and len(current.args) == 3 and cls is not None):
                self.register(current, current.args[0], current.args[1], current.args[2], scope, cls)
            stack.extend(ast.iter_child_nodes(current))

    def register(self, call: ast.Call, owner: ast.AST, name: ast.AST, value: ast.AST, scope: Scope,
                 cls: ClassInfo) -> None:
        """`self.add_module("rnn", v)` / `setattr(self, "rnn", v)`: an attribute set under a literal name."""
        if (isinstance(owner, ast.Name) and owner.id == scope.self_name and isinstance(name, ast.Constant)
                and isinstance(name.value, str)):
            cls.self_assigned.setdefault(name.value, []).append((value, scope, ()))
