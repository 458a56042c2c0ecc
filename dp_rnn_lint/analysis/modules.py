"""nn.Module classes of one file, their methods, and which of their attributes hold RNNs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import libcst as cst

from .names import ASSIGN, DEF, PARAM, NameResolver, Scope
from .torch_names import (MODULE_LIST, MODULE_METHODS_RETURNING_SELF, PLAIN_BASES, TORCH_NN, canonical, is_module_base,
                          rnn_kind)
from .traversal import children

# Words that mark a run-time name as naming an RNN class: getattr(nn, rnn_type), getattr(nn, cell).
_RNN_WORDS = re.compile(r"rnn|lstm|gru|cell", re.IGNORECASE)

# How deep to follow names through assignments before giving up (guards against cycles).
_MAX_DEPTH = 8
_LIST_GROWERS = ("append", "extend", "insert")


@dataclass(frozen=True)
class RnnSubmodule:
    """An attribute of a module class that holds an RNN, or an nn.ModuleList of them."""

    attr: str
    kind: str  # "nn.LSTM", "nn.LSTM or nn.GRU", "an RNN class chosen at run time"
    is_list: bool
    optional: bool = False  # also set to None somewhere (`nn.LSTM(...) if use_rnn else None`)
    # A torch RNN in some configurations only: other assignments hold another module (a custom RNN, a
    # weight-drop wrapper of it) that may have no flatten_parameters().
    guarded: bool = False


@dataclass
class _RnnValue:
    kind: str
    is_list: bool = False
    empty_list: bool = False  # nn.ModuleList() still to be filled by append
    optional: bool = False  # one branch of a conditional is None
    is_none: bool = False  # the literal None


@dataclass
class ModuleClass:
    node: cst.ClassDef
    scope: Scope
    bases: List["ModuleClass"] = field(default_factory=list)
    methods: Dict[str, cst.FunctionDef] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name.value

    def mro(self) -> List["ModuleClass"]:
        order: List[ModuleClass] = []
        stack = [self]
        while stack:
            cls = stack.pop(0)
            if cls not in order:
                order.append(cls)
                stack.extend(cls.bases)
        return order

    def find_method(self, name: str, after: Optional["ModuleClass"] = None) -> Optional[Tuple[cst.FunctionDef, "ModuleClass"]]:
        """The method `name` as seen from this class (or, for super(), from classes after `after`)."""
        order = self.mro()
        if after is not None and after in order:
            order = order[order.index(after) + 1:]
        for cls in order:
            if name in cls.methods:
                return cls.methods[name], cls
        return None


def self_name(method: cst.FunctionDef) -> Optional[str]:
    """The name of a method's instance parameter, None for static methods."""
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = list(method.params.posonly_params) + list(method.params.params)
    return params[0].name.value if params else None


def is_self_attribute(node: cst.CSTNode, self_param: Optional[str]) -> Optional[str]:
    """`attr` for `self.attr`, else None."""
    if (
        self_param is not None
        and isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == self_param
    ):
        return node.attr.value
    return None


def call_argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    """The argument a call passes for a parameter, by its keyword or its position (not counting *args)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if len(positional) > position else None


def is_atomic(expression: cst.BaseExpression) -> bool:
    """Whether `.method()` can follow the expression as it is: a name, attribute, call, subscript or
    anything already in parentheses (`a + b` needs them first)."""
    return isinstance(expression, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or bool(expression.lpar)


def string_value(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


_TYPE_MATCHES: Dict[tuple, Dict[type, bool]] = {}
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def iter_nodes(root: cst.CSTNode, types: tuple, skip_nested_scopes: bool = False) -> Iterator[cst.CSTNode]:
    """Every node of the given types under root, in source order."""
    # Whether a node type is one of `types`, asked of libcst's ABCs once per type and call site's tuple.
    matches = _TYPE_MATCHES.get(types)
    if matches is None:
        matches = _TYPE_MATCHES[types] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        node_type = type(node)
        match = matches.get(node_type)
        if match is None:
            match = matches[node_type] = issubclass(node_type, types)
        if match:
            yield node
        if skip_nested_scopes and node_type in _NESTED_SCOPES and node is not root:
            continue
        stack.extend(reversed(children(node)))


class ModuleModel:
    """What one file's classes mean: which are nn.Modules and where their RNNs are."""

    def __init__(self, module: cst.Module, resolver: NameResolver, known_modules: FrozenSet[str] = frozenset(),
                 plain_classes: FrozenSet[str] = frozenset(),
                 inherited: Optional[Callable[[str], List[Tuple["ModuleModel", ModuleClass]]]] = None,
                 every_class: bool = False) -> None:
        self.module = module
        self.resolver = resolver
        # The classes a class derives from in other files, with their files' models (the project index
        # says which); `every_class`: a model of a base file, whose classes are read whatever their bases.
        self._inherited = inherited or (lambda qualname: [])
        self._every_class = every_class
        self._self_classes: Optional[Tuple[str, Dict[str, str]]] = None
        # Classes the project index knows are nn.Modules through bases in other files, and those it knows
        # are not (every base leads to plain classes).
        self.known_modules = known_modules
        self.plain_classes = plain_classes
        self._class_scopes = {node: scope for node, scope in resolver.scopes.items() if isinstance(node, cst.ClassDef)}
        self._is_module_memo: Dict[cst.ClassDef, bool] = {}
        self._rnn_class_memo: Dict[cst.ClassDef, Optional[str]] = {}
        self._factory_memo: Dict[cst.FunctionDef, Optional[str]] = {}
        self.classes: List[ModuleClass] = []
        by_node: Dict[cst.ClassDef, ModuleClass] = {}
        undecided: List[ModuleClass] = []
        for node, scope in self._class_scopes.items():
            module = self._is_module(node)
            if module or self._base_unknown(node):
                cls = ModuleClass(node=node, scope=scope)
                for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                    if isinstance(statement, cst.FunctionDef):
                        cls.methods[statement.name.value] = statement
                by_node[node] = cls
                (self.classes if module else undecided).append(cls)
        for cls in self.classes + undecided:
            cls.bases = [by_node[base] for base in self._same_file_bases(cls.node) if base in by_node]
        self._rnn_memo: Dict[int, Dict[str, RnnSubmodule]] = {}
        self._assigned_memo: Dict[int, set] = {}
        # A class whose base nothing here can follow (another package's, a name the project index could
        # not resolve) is taken as a module when it defines forward and builds a torch RNN on self: the RNN
        # is evidence enough.
        evidence = [cls for cls in undecided if cls.find_method("forward") and self.rnn_submodules(cls)]
        if evidence:
            chosen = set(map(id, evidence))
            self.classes = [cls for cls in by_node.values() if cls in self.classes or id(cls) in chosen]

    # -- classes ------------------------------------------------------------------------------------
    def qualname(self, node: cst.ClassDef) -> str:
        """`Outer.Inner` for a class nested in a class; `<locals>` marks one defined in a function."""
        names = [node.name.value]
        scope = self._class_scopes[node].parent
        while scope is not None and scope.kind != "module":
            names.insert(0, scope.node.name.value if scope.kind == "class" else "<locals>")
            scope = scope.parent
        return ".".join(names)

    def _same_file_bases(self, node: cst.ClassDef) -> List[cst.ClassDef]:
        scope = self._class_scopes[node].parent
        bases = []
        for arg in node.bases:
            base = _unsubscripted(arg.value)
            if isinstance(base, cst.Name):
                found = self.resolver.bindings(base.value, scope)
                for binding in found:
                    if binding.kind == DEF and isinstance(binding.node, cst.ClassDef) and binding.node is not node:
                        bases.append(binding.node)
        return bases

    def _inherited_of(self, cls: ModuleClass) -> List[Tuple["ModuleModel", ModuleClass]]:
        return self._inherited(self.qualname(cls.node))

    def class_named(self, qualname: str) -> Optional[ModuleClass]:
        return next((cls for cls in self.classes if self.qualname(cls.node) == qualname), None)

    def _is_module(self, node: cst.ClassDef, depth: int = 0) -> bool:
        if self._every_class:
            return True
        if node in self._is_module_memo:
            return self._is_module_memo[node]
        self._is_module_memo[node] = False  # cycle guard
        scope = self._class_scopes[node].parent
        result = any(is_module_base(self.resolver.qualified_name(_unsubscripted(arg.value), scope)) for arg in node.bases)
        if not result and self.known_modules:
            result = self.qualname(node) in self.known_modules
        if not result and depth < _MAX_DEPTH:
            result = any(self._is_module(base, depth + 1) for base in self._same_file_bases(node))
        self._is_module_memo[node] = result
        return result

    def _base_unknown(self, node: cst.ClassDef, depth: int = 0) -> bool:
        """Whether some base of a class that is not known to be a module may still be one: a base of
        another file the project index could not follow, or of another package (no index: any import)."""
        if self.qualname(node) in self.plain_classes or depth > _MAX_DEPTH:
            return False
        scope = self._class_scopes[node].parent
        same_file = self._same_file_bases(node)
        same_names = {found.name.value for found in same_file}
        for arg in node.bases:
            base = _unsubscripted(arg.value)
            if isinstance(base, cst.Name) and base.value in same_names:
                continue
            qualified = canonical(self.resolver.qualified_name(base, scope))
            if qualified is not None and qualified.startswith("builtins."):
                qualified = qualified[len("builtins."):]
            if qualified is None or (qualified not in PLAIN_BASES and not qualified.startswith("torch.")):
                return True
        return any(self._base_unknown(found, depth + 1) for found in same_file)

    def _flattens_itself(self, func: cst.BaseExpression, scope: Scope) -> bool:
        """An RNN subclass of this file whose own forward calls self.flatten_parameters()."""
        if not isinstance(func, cst.Name):
            return False
        for binding in self.resolver.bindings(func.value, scope):
            if binding.kind == DEF and isinstance(binding.node, cst.ClassDef):
                body = binding.node.body.body if isinstance(binding.node.body, cst.IndentedBlock) else ()
                for statement in body:
                    if isinstance(statement, cst.FunctionDef) and statement.name.value == "forward":
                        me = self_name(statement)
                        for call in iter_nodes(statement.body, (cst.Call,)):
                            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "flatten_parameters":
                                if isinstance(call.func.value, cst.Name) and call.func.value.value == me:
                                    return True
        return False

    def rnn_subclass_kind(self, node: cst.ClassDef, depth: int = 0) -> Optional[str]:
        """"nn.LSTM" when a class of this file subclasses torch's LSTM (directly or via this file)."""
        if node in self._rnn_class_memo:
            return self._rnn_class_memo[node]
        self._rnn_class_memo[node] = None
        scope = self._class_scopes[node].parent
        kind = None
        for arg in node.bases:
            found = rnn_kind(self.resolver.qualified_name(arg.value, scope))
            if found:
                kind = f"nn.{found}"
                break
        if kind is None and depth < _MAX_DEPTH:
            for base in self._same_file_bases(node):
                kind = self.rnn_subclass_kind(base, depth + 1)
                if kind:
                    break
        self._rnn_class_memo[node] = kind
        return kind

    # -- what an expression evaluates to ------------------------------------------------------------
    def rnn_class_kind(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[str]:
        """The RNN class an expression evaluates to ("nn.LSTM"), or None when it is not one."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.IfExp):
            body = self.rnn_class_kind(expr.body, scope, depth + 1)
            orelse = self.rnn_class_kind(expr.orelse, scope, depth + 1)
            return _join_kinds([body, orelse])
        if isinstance(expr, (cst.Name, cst.Attribute)):
            found = rnn_kind(self.resolver.qualified_name(expr, scope))
            if found:
                return f"nn.{found}"
            if isinstance(expr, cst.Name):
                return self._name_kind(expr.value, scope, depth, self.rnn_class_kind)
            if self._self_classes is not None:
                me, kinds = self._self_classes  # `self.rnn_cell(...)`, where a method set `self.rnn_cell = nn.LSTM`
                attr = is_self_attribute(expr, me)
                return kinds.get(attr) if attr else None
            return None
        if isinstance(expr, cst.Call):
            return self._getattr_rnn_class(expr, scope)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
            kinds = [
                self.rnn_class_kind(element.value, scope, depth + 1) if isinstance(element, cst.DictElement) else None
                for element in expr.value.elements
            ]
            return _join_kinds(kinds) if kinds else None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):
            owner = self.resolver.owner(expr.value.value, scope)
            found = owner.bindings[expr.value.value] if owner else ()
            if len(found) == 1 and found[0].kind == ASSIGN:
                values = self._dict_values(found[0].value, owner)
                if values:
                    return _join_kinds([self.rnn_class_kind(value, owner, depth + 1) for value in values])
        return None

    def _dict_values(self, node: Optional[cst.BaseExpression], scope: Scope) -> List[Optional[cst.BaseExpression]]:
        """The values of `{"lstm": nn.LSTM, ...}` or `dict(lstm=nn.LSTM, ...)`; [] for anything else."""
        if isinstance(node, cst.Dict):
            return [e.value if isinstance(e, cst.DictElement) else None for e in node.elements]
        if (
            isinstance(node, cst.Call)
            and self.resolver.qualified_name(node.func, scope) == "builtins.dict"
            and node.args
            and all(arg.keyword is not None for arg in node.args)
        ):
            return [arg.value for arg in node.args]
        return []

    def _getattr_rnn_class(self, call: cst.Call, scope: Scope) -> Optional[str]:
        """getattr(nn, "LSTM") or getattr(nn, rnn_type): a class looked up on torch.nn by name."""
        if self.resolver.qualified_name(call.func, scope) != "builtins.getattr" or len(call.args) < 2:
            return None
        if canonical(self.resolver.qualified_name(call.args[0].value, scope)) not in (TORCH_NN, "torch.nn.modules"):
            return None
        name = call.args[1].value
        if any("Cell" in part for part in _literal_parts(name)):
            return None  # getattr(nn, f"{rnn_type}Cell"): a cell, which has no flatten_parameters()
        literals = self._string_values(name, scope)
        if literals:
            kinds = [rnn_kind(f"torch.nn.{literal}") for literal in literals]
            return _join_kinds([f"nn.{kind}" if kind else None for kind in kinds])
        # A name chosen at run time: only an RNN when it says so (`rnn_type`, `cell`, `args.lstm_kind`);
        # `getattr(nn, activation)` must not get a flatten_parameters() call.
        if _RNN_WORDS.search(self.module.code_for_node(name)):
            return "an RNN class chosen at run time"
        return None

    def _string_values(self, node: cst.BaseExpression, scope: Scope) -> List[str]:
        """The string literals a name can hold (its assignments and parameter default), [] if unknown."""
        literal = string_value(node)
        if literal is not None:
            return [literal]
        if not isinstance(node, cst.Name):
            return []
        owner = self.resolver.owner(node.value, scope)
        values = []
        for binding in owner.bindings[node.value] if owner else ():
            value = string_value(binding.value) if binding.value is not None else None
            if binding.kind not in (ASSIGN, PARAM) or value is None:
                return []
            values.append(value)
        return values

    def _name_kind(self, name: str, scope: Scope, depth: int, evaluate) -> Optional[str]:
        """Follow a plain name to every value bound to it; all must agree that it is an RNN."""
        owner = self.resolver.owner(name, scope)
        if owner is None:
            return None
        kinds = []
        for binding in owner.bindings[name]:
            if binding.kind == ASSIGN:
                kinds.append(evaluate(binding.value, owner, depth + 1))
            elif binding.kind == PARAM and binding.value is not None:
                kinds.append(evaluate(binding.value, owner.parent or owner, depth + 1))
            elif binding.kind == DEF and isinstance(binding.node, cst.ClassDef) and evaluate == self.rnn_class_kind:
                kinds.append(self.rnn_subclass_kind(binding.node))
            else:
                return None
        return _join_kinds(kinds) if kinds else None

    def rnn_instance(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[_RnnValue]:
        """What an expression builds when it builds an RNN or an nn.ModuleList of RNNs."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            kind = self.rnn_class_kind(expr.func, scope, depth + 1)
            if kind:
                if self._flattens_itself(expr.func, scope):
                    return None  # its own forward calls self.flatten_parameters(): nothing to add
                return _RnnValue(kind)
            factory = self._factory_kind(expr.func, scope)
            if factory:
                return _RnnValue(factory)
            if canonical(self.resolver.qualified_name(expr.func, scope)) == MODULE_LIST:
                return self._module_list(expr, scope, depth)
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in MODULE_METHODS_RETURNING_SELF:
                return self.rnn_instance(expr.func.value, scope, depth + 1)
            return None
        if isinstance(expr, cst.Name) and expr.value == "None":
            return _RnnValue("", is_none=True)
        if isinstance(expr, cst.IfExp):
            body = self.rnn_instance(expr.body, scope, depth + 1)
            orelse = self.rnn_instance(expr.orelse, scope, depth + 1)
            if not body or not orelse or body.is_list or orelse.is_list or (body.is_none and orelse.is_none):
                return None
            if body.is_none or orelse.is_none:
                return _RnnValue(orelse.kind if body.is_none else body.kind, optional=True)
            return _RnnValue(_join_kinds([body.kind, orelse.kind]), optional=body.optional or orelse.optional)
        if isinstance(expr, cst.Name):
            owner = self.resolver.owner(expr.value, scope)
            if owner is None or owner.kind == "module":
                return None
            values = []
            for binding in owner.bindings[expr.value]:
                if binding.kind != ASSIGN:
                    return None
                values.append(self.rnn_instance(binding.value, owner, depth + 1))
            if values and all(v is not None and not v.is_list and not v.is_none and not v.optional for v in values):
                return _RnnValue(_join_kinds([v.kind for v in values]))
        return None

    def _module_list(self, call: cst.Call, scope: Scope, depth: int) -> Optional[_RnnValue]:
        if not call.args:
            return _RnnValue("", is_list=True, empty_list=True)
        items = call.args[0].value
        kinds: List[Optional[str]] = []
        if isinstance(items, (cst.List, cst.Tuple)):
            for element in items.elements:
                value = self.rnn_instance(element.value, scope, depth + 1)
                kinds.append(value.kind if value and not value.is_list else None)
        elif isinstance(items, (cst.ListComp, cst.GeneratorExp)):
            inner = self.resolver.scopes.get(items, scope)
            value = self.rnn_instance(items.elt, inner, depth + 1)
            kinds.append(value.kind if value and not value.is_list else None)
        elif isinstance(items, cst.Name):
            # layers = [] ... layers.append(nn.LSTM(...)) ... nn.ModuleList(layers)
            owner = self.resolver.owner(items.value, scope)
            if owner is None or owner.kind != "function":
                return None
            for binding in owner.bindings[items.value]:
                if binding.kind != ASSIGN:
                    return None
                if isinstance(binding.value, (cst.List, cst.Tuple)):
                    for element in binding.value.elements:
                        value = self.rnn_instance(element.value, owner, depth + 1)
                        kinds.append(value.kind if value and not value.is_list else None)
                elif isinstance(binding.value, cst.ListComp):
                    value = self.rnn_instance(binding.value.elt, self.resolver.scopes.get(binding.value, owner), depth + 1)
                    kinds.append(value.kind if value and not value.is_list else None)
                else:
                    return None
            for call_node in iter_nodes(owner.node, (cst.Call,), skip_nested_scopes=True):
                func = call_node.func
                if (
                    isinstance(func, cst.Attribute)
                    and isinstance(func.value, cst.Name)
                    and func.value.value == items.value
                    and func.attr.value in _LIST_GROWERS
                    and call_node.args
                ):
                    kinds.append(self._grown_kind(func.attr.value, call_node, owner, depth))
        else:
            return None
        if not kinds or any(kind is None for kind in kinds):
            return None
        return _RnnValue(_join_kinds(kinds), is_list=True)

    def _grown_kind(self, method: str, call: cst.Call, scope: Scope, depth: int) -> Optional[str]:
        """The kind of what `.append(x)`, `.insert(i, x)` or `.extend([...])` adds to a list."""
        arg = call.args[-1].value if method == "insert" else call.args[0].value
        if method == "extend":
            if isinstance(arg, (cst.List, cst.Tuple)):
                values = [self.rnn_instance(e.value, scope, depth + 1) for e in arg.elements]
            elif isinstance(arg, (cst.ListComp, cst.GeneratorExp)):
                values = [self.rnn_instance(arg.elt, self.resolver.scopes.get(arg, scope), depth + 1)]
            else:
                return None
            if values and all(v and not v.is_list for v in values):
                return _join_kinds([v.kind for v in values])
            return None
        value = self.rnn_instance(arg, scope, depth + 1)
        return value.kind if value and not value.is_list else None

    def _factory_kind(self, func: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """A function of this file that builds and returns a new RNN (fairseq's `def LSTM(...)`)."""
        if not isinstance(func, cst.Name):
            return None
        found = self.resolver.bindings(func.value, scope)
        if len(found) != 1 or found[0].kind != DEF or not isinstance(found[0].node, cst.FunctionDef):
            return None
        node = found[0].node
        if node in self._factory_memo:
            return self._factory_memo[node]
        self._factory_memo[node] = None
        function_scope = self.resolver.scopes[node]
        returns = list(iter_nodes(node.body, (cst.Return,), skip_nested_scopes=True))
        kinds = []
        for statement in returns:
            value = self.rnn_instance(statement.value, function_scope) if statement.value is not None else None
            kinds.append(value.kind if value and not value.is_list else None)
        kind = _join_kinds(kinds) if kinds else None
        self._factory_memo[node] = kind
        return kind

    # -- RNN attributes -----------------------------------------------------------------------------
    def rnn_submodules(self, cls: ModuleClass) -> Dict[str, RnnSubmodule]:
        """Attributes of `cls` (set in any of its methods or its bases') that hold RNNs."""
        key = id(cls)
        if key in self._rnn_memo:
            return self._rnn_memo[key]
        assigned: Dict[str, List[Optional[_RnnValue]]] = {}
        grown: Dict[str, List[Optional[str]]] = {}
        class_kinds = self.rnn_class_attributes(cls)
        for owner in cls.mro():
            for method in owner.methods.values():
                self._collect_assignments(method, assigned, grown, class_kinds)
        self._assigned_memo[key] = set(assigned) | set(grown)
        result = {}
        for attr, values in assigned.items():
            if any(value is None for value in values):
                rnns = [v for v in values if v is not None and not v.is_none]
                if rnns and all(not v.is_list for v in rnns):
                    result[attr] = RnnSubmodule(attr, _join_kinds([v.kind for v in rnns]), is_list=False, guarded=True)
                continue
            rnns = [v for v in values if not v.is_none]
            if rnns and all(not value.is_list for value in rnns):
                optional = len(rnns) < len(values) or any(v.optional for v in rnns)
                result[attr] = RnnSubmodule(attr, _join_kinds([v.kind for v in rnns]), is_list=False, optional=optional)
            elif rnns and len(rnns) == len(values) and all(value.is_list for value in values):
                extra = grown.get(attr, [])
                if any(kind is None for kind in extra):
                    continue
                kinds = [v.kind for v in values if not v.empty_list] + list(extra)
                if kinds:
                    result[attr] = RnnSubmodule(attr, _join_kinds(kinds), is_list=True)
        for model, base in self._inherited_of(cls):
            # What a base in another file builds, where this class does not set the attribute itself.
            for attr, rnn in model.rnn_submodules(base).items():
                if attr not in assigned and attr not in grown:
                    result.setdefault(attr, rnn)
        self._rnn_memo[key] = result
        return result

    def rnn_class_attributes(self, cls: ModuleClass) -> Dict[str, str]:
        """Attributes that hold an RNN class, not an instance (`self.rnn_cell = nn.LSTM`), set by the
        class, its bases in this file or its bases elsewhere: `self.rnn_cell(...)` builds one."""
        values: Dict[str, List[Optional[str]]] = {}
        for owner in cls.mro():
            for method in owner.methods.values():
                me = self_name(method)
                if me is None:
                    continue
                scope = self.resolver.scopes[method]
                for node in iter_nodes(method.body, (cst.Assign,)):
                    for target in node.targets:
                        attr = is_self_attribute(target.target, me)
                        if attr:
                            values.setdefault(attr, []).append(self.rnn_class_kind(node.value, scope))
        kinds = {attr: _join_kinds(found) for attr, found in values.items() if _join_kinds(found)}
        for model, base in self._inherited_of(cls):
            for attr, kind in model.rnn_class_attributes(base).items():
                kinds.setdefault(attr, kind)
        return kinds

    def assigned_attributes(self, cls: ModuleClass) -> set:
        """Every attribute name the class (or a base of this file) sets on self, whatever the value."""
        self.rnn_submodules(cls)
        return self._assigned_memo[id(cls)]

    def _collect_assignments(self, method: cst.FunctionDef, assigned: Dict, grown: Dict,
                             class_kinds: Dict[str, str]) -> None:
        me = self_name(method)
        if me is None:
            return
        self._self_classes = (me, class_kinds) if class_kinds else None
        try:
            self._collect_method_assignments(method, me, assigned, grown)
        finally:
            self._self_classes = None

    def _collect_method_assignments(self, method: cst.FunctionDef, me: str, assigned: Dict, grown: Dict) -> None:
        scope = self.resolver.scopes[method]
        for node in iter_nodes(method.body, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)):
            inner = scope  # assignments in nested functions of __init__ are rare; the method scope is close enough
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    for element, value in _paired_targets(target.target, node.value):
                        attr = is_self_attribute(element, me)
                        if attr and not (value is not None and _same_module_again(value, attr, me)):
                            assigned.setdefault(attr, []).append(self.rnn_instance(value, inner) if value else None)
            elif isinstance(node, cst.AugAssign):
                attr = is_self_attribute(node.target, me)
                if attr and isinstance(node.operator, cst.AddAssign):
                    grown.setdefault(attr, []).append(self._grown_kind("extend", _single_arg_call(node.value), inner, 0))
            elif isinstance(node, cst.AnnAssign):
                attr = is_self_attribute(node.target, me)
                if attr and node.value is not None:
                    assigned.setdefault(attr, []).append(self.rnn_instance(node.value, inner))
            else:
                func = node.func
                registered = self._registered_attribute(node, me, inner)
                if registered is not None:
                    name, value = registered
                    assigned.setdefault(name, []).append(self.rnn_instance(value, inner))
                elif isinstance(func, cst.Attribute) and func.attr.value in _LIST_GROWERS and node.args:
                    attr = is_self_attribute(func.value, me)
                    if attr:
                        grown.setdefault(attr, []).append(self._grown_kind(func.attr.value, node, inner, 0))

    def _registered_attribute(self, call: cst.Call, me: str, scope: Scope) -> Optional[Tuple[str, cst.BaseExpression]]:
        """`setattr(self, "rnn", value)` and `self.add_module("rnn", value)` set an attribute too."""
        func = call.func
        if len(call.args) == 3 and self.resolver.qualified_name(func, scope) == "builtins.setattr":
            target, name = call.args[0].value, string_value(call.args[1].value)
            if isinstance(target, cst.Name) and target.value == me and name:
                return name, call.args[2].value
        if len(call.args) == 2 and is_self_attribute(func, me) in ("add_module", "register_module"):
            name = string_value(call.args[0].value)
            if name:
                return name, call.args[1].value
        return None


def _literal_parts(expression: cst.BaseExpression) -> List[str]:
    """The literal text inside an expression that builds a name: `'{}Cell'.format(t)`, `f"{t}Cell"`, `t + 'Cell'`."""
    parts = []
    for node in iter_nodes(expression, (cst.SimpleString, cst.FormattedStringText)):
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str):
                parts.append(value)
        else:
            parts.append(node.value)
    return parts


def _same_module_again(value: cst.BaseExpression, attr: str, me: str) -> bool:
    """`self.rnn = self.rnn.cuda()`: the attribute keeps the module it holds."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            value.func.attr.value in MODULE_METHODS_RETURNING_SELF):
        value = value.func.value
    return is_self_attribute(value, me) == attr


def _unsubscripted(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`Base` for a generic base `Base[T]`."""
    return expression.value if isinstance(expression, cst.Subscript) else expression


def _single_arg_call(value: cst.BaseExpression) -> cst.Call:
    """`self.layers += [x]` reads as `self.layers.extend([x])`."""
    return cst.Call(func=cst.Name("extend"), args=[cst.Arg(value=value)])


def _paired_targets(target: cst.BaseExpression, value: cst.BaseExpression):
    """(target, value) pairs of an assignment; `a, b = x, y` pairs element-wise, `a, b = f()` gives no value."""
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = [e.value for e in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
            if not any(isinstance(e, cst.StarredElement) for e in value.elements):
                return list(zip(elements, [e.value for e in value.elements]))
        return [(element, None) for element in elements]
    return [(target, value)]


def _join_kinds(kinds: List[Optional[str]]) -> Optional[str]:
    if not kinds or any(kind is None for kind in kinds):
        return None
    unique: List[str] = []
    for kind in kinds:
        for part in kind.split(" or "):
            if part and part not in unique:
                unique.append(part)
    return " or ".join(unique)
