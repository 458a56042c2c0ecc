"""nn.Module classes of one file, their methods, and which of their attributes hold RNNs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import libcst as cst

from .names import ASSIGN, DEF, IMPORT, PARAM, UNPACK, NameResolver, Scope
from .torch_names import (MODULE_LIST, MODULE_METHODS_RETURNING_SELF, PLAIN_BASES, TORCH_NN, canonical, is_module_base,
                          rnn_kind)
from .traversal import children
from .evaluator import EvaluatedClasses
from .values import describe_kinds

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
    guarded: bool = False  # handed in by callers, which may hand other modules too


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


def bind_arguments(call: cst.Call, function: cst.FunctionDef) -> Dict[str, cst.BaseExpression]:
    """What a call passes for each parameter of the function it runs, by name (a method's instance
    parameter is not passed). A parameter after a `*args` or `**kwargs` argument is not bound: what the
    unpacking holds is unknown."""
    params = [*function.params.posonly_params, *function.params.params]
    if self_name(function) is not None:
        params = params[1:]
    bound: Dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                position = len(params)  # what follows a *args cannot be placed
            continue
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif position < len(params):
            bound[params[position].name.value] = arg.value
            position += 1
    return bound


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


def literal_time_dimension(batch_first: Optional[cst.BaseExpression]) -> Optional[int]:
    """The time dimension of a padded tensor: 1 for `batch_first=True`, 0 for False or none given; None
    when it is an expression."""
    if batch_first is None or (isinstance(batch_first, cst.Name) and batch_first.value == "False"):
        return 0
    if isinstance(batch_first, cst.Name) and batch_first.value == "True":
        return 1
    return None


def returned_parts(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The returned expression, and the elements of returned tuples, lists and dicts, nested."""
    stack: List[cst.BaseExpression] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(element.value for element in reversed(node.elements))
        elif isinstance(node, cst.Dict):
            stack.extend(element.value for element in reversed(node.elements) if isinstance(element, cst.DictElement))
        else:
            yield node


def is_zero_literal(node: Optional[cst.BaseExpression]) -> bool:
    """`0`, `0.0`, `0x0`, `0_0`...: a number literal whose value is zero (libcst keeps its source text)."""
    if not isinstance(node, (cst.Integer, cst.Float)):
        return False
    try:
        return node.evaluated_value == 0
    except (ValueError, SyntaxError):
        return False


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


def _is_property_writer(function: cst.FunctionDef) -> bool:
    """`@name.setter` or `@name.deleter`: `self.name(...)` calls what the getter returns, never these."""
    return any(isinstance(decorator.decorator, cst.Attribute) and decorator.decorator.attr.value in ("setter", "deleter")
               for decorator in function.decorators)


class ModuleModel:
    """What one file's classes mean: which are nn.Modules and where their RNNs are."""

    def __init__(self, module: cst.Module, resolver: NameResolver, known_modules: FrozenSet[str] = frozenset(),
                 plain_classes: FrozenSet[str] = frozenset(),
                 inherited: Optional[Callable[[str], List[Tuple["ModuleModel", ModuleClass]]]] = None,
                 every_class: bool = False,
                 imported: Optional[Callable[[str], Optional[Tuple["ModuleModel", cst.CSTNode]]]] = None,
                 injected: Optional[Callable[[str], Dict[str, Tuple[str, str]]]] = None,
                 evaluated: Optional[EvaluatedClasses] = None) -> None:
        self.module = module
        self.resolver = resolver
        # The classes a class derives from in other files, with their files' models (the project index
        # says which); `every_class`: a model of a base file, whose classes are read whatever their bases.
        self._inherited = inherited or (lambda qualname: [])
        # A name this file imports from another file of the project: that file's model and the definition.
        self._imported = imported or (lambda local: None)
        # What callers elsewhere hand a class's __init__: {parameter or position: ("class" or "instance", kind)}.
        self._injected = injected or (lambda qualname: {})
        self._every_class = every_class
        # The project-wide evaluator's answers (imports of every kind, the whole MRO across files, factories in
        # other modules): a class it proves a module is one, and an RNN it proves an attribute holds counts.
        self._evaluated = evaluated
        self._self_classes: Optional[Tuple[str, Dict[str, str], Dict[str, str]]] = None
        self._collecting: Optional[ModuleClass] = None  # the class whose attributes are being collected
        # Classes the project index knows are nn.Modules through bases in other files, and those it knows
        # are not (every base leads to plain classes).
        self.known_modules = known_modules
        self.plain_classes = plain_classes
        self._class_scopes = {node: scope for node, scope in resolver.scopes.items() if isinstance(node, cst.ClassDef)}
        self._is_module_memo: Dict[cst.ClassDef, bool] = {}
        self._rnn_class_memo: Dict[cst.ClassDef, Optional[str]] = {}
        self._factory_memo: Dict[Tuple[cst.FunctionDef, int, int], Optional[List[Optional[_RnnValue]]]] = {}
        self.classes: List[ModuleClass] = []
        by_node: Dict[cst.ClassDef, ModuleClass] = {}
        undecided: List[ModuleClass] = []
        for node, scope in self._class_scopes.items():
            module = self._is_module(node) or (evaluated is not None and evaluated.is_module(self.qualname(node)))
            if module or self._base_unknown(node):
                cls = ModuleClass(node=node, scope=scope)
                for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                    if isinstance(statement, cst.FunctionDef) and not _is_property_writer(statement):
                        cls.methods[statement.name.value] = statement
                by_node[node] = cls
                (self.classes if module else undecided).append(cls)
        for cls in self.classes + undecided:
            cls.bases = [by_node[base] for base in self._same_file_bases(cls.node) if base in by_node]
        self._rnn_memo: Dict[int, Dict[str, RnnSubmodule]] = {}
        self._holders_memo: Dict[int, Dict[int, set]] = {}
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

    def forward_entries(self, cls: ModuleClass) -> List[Tuple[cst.FunctionDef, "ModuleClass"]]:
        """Where the forward pass starts in this file: `forward`, or, when a base in another file defines it,
        the methods of this file that forward runs on self (`self._forward(...)`)."""
        found = cls.find_method("forward")
        if found is not None:
            return [found]
        if self._evaluated is None or cls.node not in self._class_scopes:
            return []
        entries = []
        for name in self._evaluated.entries_from_elsewhere(self.qualname(cls.node)):
            hit = cls.find_method(name)
            if hit is not None:
                entries.append(hit)
        return entries

    def holding_attributes(self, cls: ModuleClass) -> Dict[int, set]:
        """For each other module class of this file (by id), its attributes that only ever hold an instance
        of `cls` (`self.text = TextProcessor(...)`). It evaluates every attribute of those classes: asked
        only when a caller's cheap look says it matters, and once per class."""
        if self._evaluated is None or cls.node not in self._class_scopes:
            return {}
        key = id(cls)
        if key not in self._holders_memo:
            others = [other for other in self.classes if other is not cls and other.node in self._class_scopes]
            held = self._evaluated.holders_of(self.qualname(cls.node), [self.qualname(other.node) for other in others])
            self._holders_memo[key] = {id(other): held[self.qualname(other.node)] for other in others
                                       if self.qualname(other.node) in held}
        return self._holders_memo[key]

    def called_from_other_forwards(self, cls: ModuleClass, names: FrozenSet[str]) -> List[str]:
        """Which of the methods `names` of `cls` the forward of another module class of this file calls on an
        attribute that holds an instance of `cls` (`self.encoder.encode_all(x)`): they run on the replicas
        as much as forward does."""
        found: List[str] = []
        for other in self.classes if names else ():
            forward = other.find_method("forward") if other is not cls else None
            me = self_name(forward[0]) if forward is not None else None
            if me is None:
                continue
            calls = [(is_self_attribute(call.func.value, me), call.func.attr.value)
                     for call in iter_nodes(forward[0].body, (cst.Call,))
                     if isinstance(call.func, cst.Attribute) and call.func.attr.value in names]
            calls = [(attr, method) for attr, method in calls if attr]
            if calls:  # only then are the holders worth evaluating
                held = self.holding_attributes(cls).get(id(other), set())
                found += [method for attr, method in calls if attr in held and method not in found]
        return found

    def _inherited_of(self, cls: ModuleClass) -> List[Tuple["ModuleModel", ModuleClass]]:
        return self._inherited(self.qualname(cls.node))

    def definition(self, qualname: str) -> Optional[cst.CSTNode]:
        """A module-level function or class of this file, by name."""
        for statement in self.module.body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == qualname:
                return statement
        return None

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
        """An RNN subclass of this file whose own forward calls self.flatten_parameters(), or replaces its
        weights before running (the missing flatten is reported in the subclass itself, where the fix must go)."""
        if not isinstance(func, cst.Name):
            return False
        for binding in self.resolver.bindings(func.value, scope):
            if binding.kind == DEF and isinstance(binding.node, cst.ClassDef) and self.weight_swap(binding.node):
                return True
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

    def rnn_subclasses(self) -> List[cst.ClassDef]:
        """The classes of this file that subclass torch's RNN, LSTM or GRU."""
        return [node for node in self._class_scopes if self.rnn_subclass_kind(node)]

    def weight_swap(self, node: cst.ClassDef) -> Optional[Tuple[cst.FunctionDef, cst.BaseStatement, cst.Call]]:
        """For an RNN subclass whose forward sets its own weights (`self.weight_hh_l0 = ...`,
        `setattr(self, name, ...)`, `self._flat_weights = ...`) and then runs `super().forward(...)` with no
        `self.flatten_parameters()` in between: (forward, the statement running it, the call)."""
        if not self.rnn_subclass_kind(node) or not isinstance(node.body, cst.IndentedBlock):
            return None
        forward = next((item for item in node.body.body
                        if isinstance(item, cst.FunctionDef) and item.name.value == "forward"), None)
        me = self_name(forward) if forward is not None else None
        if me is None or not isinstance(forward.body, cst.IndentedBlock):
            return None
        scope = self.resolver.scopes[forward]
        swapped = False
        for statement in forward.body.body:
            for inner in iter_nodes(statement, (cst.Assign, cst.Call), skip_nested_scopes=True):
                if isinstance(inner, cst.Assign):
                    swapped = swapped or any(_own_weight(t.target, me) for t in inner.targets)
                    continue
                func = inner.func
                if isinstance(func, cst.Attribute) and func.attr.value == "flatten_parameters" and (
                        isinstance(func.value, cst.Name) and func.value.value == me):
                    swapped = False
                elif (self.resolver.qualified_name(func, scope) == "builtins.setattr" and inner.args
                      and isinstance(inner.args[0].value, cst.Name) and inner.args[0].value.value == me):
                    swapped = True
                elif swapped and _runs_inherited_forward(inner, me):
                    return forward, statement, inner
        return None

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
                me, kinds, _ = self._self_classes  # `self.rnn_cell(...)`, where a method set `self.rnn_cell = nn.LSTM`
                attr = is_self_attribute(expr, me)
                return kinds.get(attr) if attr else None
            return None
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" and expr.args:
                # `RNN_TYPES.get(kind, nn.LSTM)`: a table lookup, with its default
                looked_up = cst.Subscript(value=expr.func.value, slice=[cst.SubscriptElement(cst.Index(expr.args[0].value))])
                kinds = [self.rnn_class_kind(looked_up, scope, depth + 1)]
                if len(expr.args) > 1:
                    kinds.append(self.rnn_class_kind(expr.args[1].value, scope, depth + 1))
                return _join_kinds(kinds)
            return self._getattr_rnn_class(expr, scope)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
            kinds = [
                self.rnn_class_kind(element.value, scope, depth + 1) if isinstance(element, cst.DictElement) else None
                for element in expr.value.elements
            ]
            return _join_kinds(kinds) if kinds else None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and self._self_classes is not None:
            me, _, containers = self._self_classes  # `self.RNN_TYPES[key](...)`: a class-level table of RNN classes
            attr = is_self_attribute(expr.value, me)
            return containers.get(attr) if attr else None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):
            owner = self.resolver.owner(expr.value.value, scope)
            found = owner.bindings[expr.value.value] if owner else ()
            if len(found) == 1 and found[0].kind == ASSIGN:
                values = self._dict_values(found[0].value, owner)
                if values:
                    return _join_kinds([self.rnn_class_kind(value, owner, depth + 1) for value in values])
        return None

    def _dict_values(self, node: Optional[cst.BaseExpression], scope: Scope) -> List[Optional[cst.BaseExpression]]:
        """The values of `{"lstm": nn.LSTM, ...}`, `dict(lstm=nn.LSTM, ...)` or `(nn.LSTM, nn.GRU)`; [] for
        anything else."""
        if isinstance(node, cst.Dict):
            return [e.value if isinstance(e, cst.DictElement) else None for e in node.elements]
        if isinstance(node, (cst.Tuple, cst.List)):
            return [None if isinstance(e, cst.StarredElement) else e.value for e in node.elements]
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
        if _RNN_WORDS.search(self.module.code_for_node(name)) or _RNN_WORDS.search(_function_name(scope)):
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
            elif binding.kind == PARAM and evaluate == self.rnn_class_kind and self._handed_in(name, owner, "class"):
                # `Encoder(rnn_class=nn.GRU)` somewhere in the project; the default, if any, counts too
                kinds.append(self._handed_in(name, owner, "class"))
                if binding.value is not None:
                    default = evaluate(binding.value, owner.parent or owner, depth + 1)
                    if default is not None:
                        kinds.append(default)
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
            factory = self._factory_value(expr.func, scope)
            if factory:
                return factory
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
            rebuilt = False  # an assignment uses the name itself: `rnn = WeightDrop(rnn)`
            for binding in owner.bindings[expr.value]:
                if binding.kind == PARAM and len(owner.bindings[expr.value]) == 1:
                    # `Wrapper(nn.LSTM(...))` somewhere in the project: whatever else callers hand it, guarded
                    kind = self._handed_in(expr.value, owner, "instance")
                    return _RnnValue(kind, guarded=True) if kind else None
                if binding.kind == ASSIGN and _moves_itself(binding.value, expr.value):
                    continue  # `rnn = rnn.to(device)`: the same module moved; the other assignments say what it is
                if binding.kind in (ASSIGN, UNPACK):
                    rebuilt = rebuilt or any(found.value == expr.value for found in iter_nodes(binding.value, (cst.Name,)))
                if binding.kind == UNPACK and isinstance(binding.value, cst.Call):
                    # `rnn, packs = make_rnn(...)`: what the factory returns in that position
                    values.append(self.factory_members(binding.value, owner, binding.count)[binding.index])
                    continue
                if binding.kind != ASSIGN:
                    return None
                values.append(self.rnn_instance(binding.value, owner, depth + 1))
            if rebuilt and len(values) > 1:
                # One module rebuilt in steps, whose last step says what it is, not alternatives of a type switch
                return None
            return _one_of(values)
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
        elif isinstance(items, cst.Attribute) and self._list_steps(items, scope) is not None:
            kinds.extend(self._list_steps(items, scope))
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
        known = [kind for kind in kinds if kind]  # not None (unknown) nor "" (the literal None)
        if not known:
            return None
        # Some members are another module (a type switch's custom layer, a weight-drop wrapper): only those
        # that are torch RNNs have flatten_parameters().
        return _RnnValue(_join_kinds(known), is_list=True, guarded=len(known) < len(kinds))

    def _list_steps(self, items: cst.Attribute, scope: Scope) -> Optional[List[Optional[str]]]:
        """`self.rnns = [nn.LSTM(...) for ...]` (or `[]` and appends) then `nn.ModuleList(self.rnns)`, in one
        method: the kinds of what the plain list got."""
        function = scope.node if scope.kind == "function" else None
        me = self_name(function) if isinstance(function, cst.FunctionDef) else None
        attr = is_self_attribute(items, me) if me else None
        if attr is None:
            return None
        kinds: List[Optional[str]] = []
        for node in iter_nodes(function.body, (cst.Assign, cst.AugAssign, cst.Call)):
            if isinstance(node, cst.Assign) and isinstance(node.value, _LIST_LITERALS):
                if not any(is_self_attribute(t.target, me) == attr for t in node.targets):
                    continue
                if isinstance(node.value, (cst.List, cst.Tuple)):
                    values = [self.rnn_instance(e.value, scope) for e in node.value.elements]
                else:
                    values = [self.rnn_instance(node.value.elt, self.resolver.scopes.get(node.value, scope))]
                kinds.extend(v.kind if v and not v.is_list else None for v in values)
            elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args
                  and node.func.attr.value in _LIST_GROWERS and is_self_attribute(node.func.value, me) == attr):
                kinds.append(self._grown_kind(node.func.attr.value, node, scope, 0))
            elif (isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign)
                  and is_self_attribute(node.target, me) == attr):
                kinds.append(self._grown_kind("extend", _single_arg_call(node.value), scope, 0))
        return kinds if kinds else None

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

    def _factory(self, func: cst.BaseExpression, scope: Scope) -> Optional[Tuple["ModuleModel", cst.FunctionDef]]:
        """The function a call runs, with the model of its file, when it is a function of this file or one
        imported from another file of the project, or a method of this file's class whose attributes are
        being collected (`self._build_rnn(...)`: the override of that class)."""
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self._collecting is not None:
            function = scope.node if scope.kind == "function" else None
            if isinstance(function, cst.FunctionDef) and func.value.value == self_name(function):
                found = self._collecting.find_method(func.attr.value)
                if found is not None and found[0] in self.resolver.scopes:
                    return self, found[0]
            return None
        if not isinstance(func, cst.Name):
            return None
        found = self.resolver.bindings(func.value, scope)
        if len(found) != 1:
            return None
        if found[0].kind == DEF and isinstance(found[0].node, cst.FunctionDef):
            return self, found[0].node
        if found[0].kind == IMPORT:
            target = self._imported(func.value)
            if target is not None and isinstance(target[1], cst.FunctionDef):
                return target  # type: ignore[return-value]
        return None

    def _factory_value(self, func: cst.BaseExpression, scope: Scope) -> Optional[_RnnValue]:
        """A function that builds and returns a new RNN (fairseq's `def LSTM(...)`, `make_rnn(...)`)."""
        target = self._factory(func, scope)
        if target is None:
            return None
        model, node = target
        values = model.returned_values(node)
        return values[0] if values and len(values) == 1 else None

    def factory_members(self, call: cst.Call, scope: Scope, count: int) -> List[Optional[_RnnValue]]:
        """`rnn, proj = make_layers(...)`: the RNN each member of the tuple the function returns is."""
        target = self._factory(call.func, scope)
        if target is None:
            return [None] * count
        values = target[0].returned_values(target[1], count)
        return values if values is not None else [None] * count

    def returned_values(self, node: cst.FunctionDef, count: int = 1) -> Optional[List[Optional[_RnnValue]]]:
        """What a function returns, position by position (`count` members of a tuple, or 1 for a single
        value): each an RNN (guarded when only some returns are one) or None. None when its returns
        disagree in shape."""
        # A method's returns may call other methods of the class being collected: per class (a function's
        # returns do not depend on it).
        function_scope = self.resolver.scopes[node]
        is_method = function_scope.parent is not None and function_scope.parent.kind == "class"
        key = (node, count, id(self._collecting) if is_method else 0)
        if key in self._factory_memo:
            return self._factory_memo[key]
        self._factory_memo[key] = None
        returns = [r.value for r in iter_nodes(node.body, (cst.Return,), skip_nested_scopes=True) if r.value is not None]
        per_position: List[List[Optional[_RnnValue]]] = [[] for _ in range(count)]
        for value in returns:
            members = [value] if count == 1 else (
                [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [])
            if len(members) != count:
                return None
            for position, member in enumerate(members):
                per_position[position].append(self.rnn_instance(member, function_scope))
        result = [_one_of(values) for values in per_position] if returns else None
        self._factory_memo[key] = result
        return result

    def _handed_in(self, name: str, owner: Scope, what: str) -> Optional[str]:
        """The RNN kind callers in the project hand to parameter `name` of a class's `__init__` (an RNN
        class or instance, `what`), by keyword or position; None when no caller does."""
        function = owner.node
        if not isinstance(function, cst.FunctionDef) or function.name.value != "__init__":
            return None
        cls = owner.parent.node if owner.parent is not None and owner.parent.kind == "class" else None
        if not isinstance(cls, cst.ClassDef) or cls not in self._class_scopes:
            return None
        handed = self._injected(self.qualname(cls))
        if not handed:
            return None
        params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        position = params.index(name) - 1 if name in params else None  # self is not passed
        kinds = [kind for key, (given, kind) in handed.items()
                 if given == what and (key == name or (position is not None and position >= 0 and key == str(position)))]
        return _join_kinds(kinds) if kinds else None

    # -- RNN attributes -----------------------------------------------------------------------------
    def rnn_submodules(self, cls: ModuleClass) -> Dict[str, RnnSubmodule]:
        """Attributes of `cls` (set in any of its methods or its bases') that hold RNNs."""
        key = id(cls)
        if key in self._rnn_memo:
            return self._rnn_memo[key]
        assigned: Dict[str, List[Optional[_RnnValue]]] = {}
        grown: Dict[str, List[Optional[str]]] = {}
        class_kinds = self.rnn_class_attributes(cls)
        self._collecting = cls
        for owner in cls.mro():
            for method in owner.methods.values():
                self._collect_assignments(method, assigned, grown, class_kinds)
        self._collecting = None
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
                result[attr] = RnnSubmodule(attr, _join_kinds([v.kind for v in rnns]), is_list=False, optional=optional,
                                            guarded=any(v.guarded for v in rnns))
            elif rnns and len(rnns) == len(values) and all(value.is_list for value in values):
                extra = grown.get(attr, [])
                kinds = [v.kind for v in values if not v.empty_list] + [kind for kind in extra if kind]
                if kinds:
                    # Appended members that are not torch RNNs (another module, None): only some are
                    guarded = any(v.guarded for v in values) or not all(extra)
                    result[attr] = RnnSubmodule(attr, _join_kinds(kinds), is_list=True, guarded=guarded)
        for model, base in self._inherited_of(cls):
            # What a base in another file builds, where this class does not set the attribute itself.
            for attr, rnn in model.rnn_submodules(base).items():
                if attr not in assigned and attr not in grown:
                    result.setdefault(attr, rnn)
        if self._evaluated is not None and cls.node in self._class_scopes:
            for attr, fact in self._evaluated.rnn_attributes(self.qualname(cls.node)).items():
                if attr not in result and not fact.guess:
                    result[attr] = RnnSubmodule(attr, describe_kinds(fact.kinds), is_list=fact.is_list,
                                                optional=fact.maybe_none and not fact.is_list, guarded=fact.sometimes)
        self._rnn_memo[key] = result
        return result

    def rnn_class_attributes(self, cls: ModuleClass) -> Dict[str, str]:
        """Attributes that hold an RNN class, not an instance (`self.rnn_cell = nn.LSTM`), set by the
        class, its bases in this file or its bases elsewhere: `self.rnn_cell(...)` builds one."""
        values: Dict[str, List[Optional[str]]] = {}
        for owner in cls.mro():
            body = owner.node.body.body if isinstance(owner.node.body, cst.IndentedBlock) else ()
            for statement in body:  # `rnn_class = nn.GRU` in the class body
                for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                    if (isinstance(small, cst.Assign) and len(small.targets) == 1
                            and isinstance(small.targets[0].target, cst.Name)):
                        kind = self.rnn_class_kind(small.value, owner.scope)
                        if kind:
                            values.setdefault(small.targets[0].target.value, []).append(kind)
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

    def rnn_class_tables(self, cls: ModuleClass) -> Dict[str, str]:
        """Class-level tables of RNN classes (`TYPES = (nn.LSTM, nn.GRU)`, `{"lstm": nn.LSTM}`), by name:
        `self.TYPES[i](...)` builds one of them."""
        tables: Dict[str, str] = {}
        for owner in reversed(cls.mro()):
            body = owner.node.body.body if isinstance(owner.node.body, cst.IndentedBlock) else ()
            for statement in body:
                if not isinstance(statement, cst.SimpleStatementLine):
                    continue
                for small in statement.body:
                    if (isinstance(small, cst.Assign) and len(small.targets) == 1
                            and isinstance(small.targets[0].target, cst.Name)):
                        values = self._dict_values(small.value, owner.scope)
                        kind = _join_kinds([self.rnn_class_kind(v, owner.scope) if v is not None else None for v in values])
                        if values and kind:
                            tables[small.targets[0].target.value] = kind
        return tables

    def assigned_attributes(self, cls: ModuleClass) -> set:
        """Every attribute name the class (or a base of this file) sets on self, whatever the value."""
        self.rnn_submodules(cls)
        return self._assigned_memo[id(cls)]

    def _collect_assignments(self, method: cst.FunctionDef, assigned: Dict, grown: Dict,
                             class_kinds: Dict[str, str]) -> None:
        me = self_name(method)
        if me is None:
            return
        tables = self.rnn_class_tables(self._collecting) if self._collecting is not None else {}
        self._self_classes = (me, class_kinds, tables) if class_kinds or tables else None
        try:
            self._collect_method_assignments(method, me, assigned, grown)
        finally:
            self._self_classes = None

    def _collect_method_assignments(self, method: cst.FunctionDef, me: str, assigned: Dict, grown: Dict) -> None:
        scope = self.resolver.scopes[method]
        rewrapped = self._rewrapped_lists(method, me, scope)
        # Where this method's values of each attribute start: `self.rnn = Wrapper(self.rnn)` in the method's
        # own body (not under an `if`) replaces what the method set before; it is not another configuration.
        started = {attr: len(values) for attr, values in assigned.items()}
        body = method.body.body if isinstance(method.body, cst.IndentedBlock) else ()
        unconditional = {small for line in body if isinstance(line, cst.SimpleStatementLine) for small in line.body}
        for node in iter_nodes(method.body, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)):
            inner = scope  # assignments in nested functions of __init__ are rare; the method scope is close enough
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    pairs = _paired_targets(target.target, node.value)
                    members = (self.factory_members(node.value, inner, len(pairs))
                               if isinstance(node.value, cst.Call) and len(pairs) > 1 else None)
                    for position, (element, value) in enumerate(pairs):
                        attr = is_self_attribute(element, me)
                        if not attr or (value is not None and _same_module_again(value, attr, me)):
                            continue
                        if attr in rewrapped and isinstance(value, _LIST_LITERALS):
                            continue  # `self.rnns = [...]` then `self.rnns = nn.ModuleList(self.rnns)`: the latter counts
                        if value is not None and attr not in rewrapped and node in unconditional and (
                                _rebuilds(value, attr, me)):
                            del assigned.setdefault(attr, [])[started.get(attr, 0):]
                        if members is not None:
                            assigned.setdefault(attr, []).append(members[position])
                        else:
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

    def _rewrapped_lists(self, method: cst.FunctionDef, me: str, scope: Scope) -> set:
        """Attributes a method sets to `nn.ModuleList(self.<same>)`: the plain list it held before is a step."""
        found = set()
        for node in iter_nodes(method.body, (cst.Assign,)):
            value = node.value
            if (isinstance(value, cst.Call) and value.args
                    and canonical(self.resolver.qualified_name(value.func, scope)) == MODULE_LIST):
                inner = is_self_attribute(value.args[0].value, me)
                if inner and any(is_self_attribute(t.target, me) == inner for t in node.targets):
                    found.add(inner)
        return found

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


_LIST_LITERALS = (cst.List, cst.Tuple, cst.ListComp)


def _own_weight(target: cst.BaseExpression, me: str) -> bool:
    """`self.weight_hh_l0 = ...`, `self._flat_weights = ...`, `self._parameters[name] = ...`."""
    if isinstance(target, cst.Subscript):
        target = target.value
        return is_self_attribute(target, me) == "_parameters"
    attr = is_self_attribute(target, me)
    return attr is not None and attr.startswith(("weight_", "bias_", "_flat_weights"))


def _runs_inherited_forward(call: cst.Call, me: str) -> bool:
    """`super().forward(...)`, `super(Cls, self).forward(...)` or `nn.LSTM.forward(self, ...)`."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "forward":
        return False
    owner = func.value
    if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value == "super":
        return True
    return (bool(call.args) and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == me
            and isinstance(owner, (cst.Name, cst.Attribute)))


def _function_name(scope: Scope) -> str:
    """The name of the function a scope is in ("" at module level): a factory's name says what it builds."""
    while scope is not None and scope.kind not in ("function", "module"):
        scope = scope.parent
    node = scope.node if scope is not None else None
    return node.name.value if isinstance(node, cst.FunctionDef) else ""


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


def _rebuilds(value: cst.BaseExpression, attr: str, me: str) -> bool:
    """`self.rnn = DynamicRNN(self.rnn)`: a new value made from the attribute's own."""
    return any(is_self_attribute(node, me) == attr for node in iter_nodes(value, (cst.Attribute,)))


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


def _moves_itself(value: Optional[cst.BaseExpression], name: str) -> bool:
    """`name.to(device)`, `name.cuda()`, `name.float().cuda()`: the module `name` holds, moved or cast."""
    moved = False
    while (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
           and value.func.attr.value in MODULE_METHODS_RETURNING_SELF):
        value, moved = value.func.value, True
    return moved and isinstance(value, cst.Name) and value.value == name


def _one_of(values: List[Optional[_RnnValue]]) -> Optional[_RnnValue]:
    """The RNN a name (or a function's return) holds, given what each of its assignments (or returns)
    builds: the RNNs' kinds joined, guarded when some of them build another module instead (a type
    switch: `rnn = SRU(...)` in one branch, `rnn = getattr(nn, kind)(...)` in the other)."""
    if not values:
        return None
    rnns = [v for v in values if v is not None and not v.is_list and not v.is_none and not v.optional]
    if len(rnns) == len(values):
        return _RnnValue(_join_kinds([v.kind for v in rnns]), guarded=any(v.guarded for v in rnns))
    if rnns and len(rnns) + values.count(None) == len(values):
        return _RnnValue(_join_kinds([v.kind for v in rnns]), guarded=True)
    return None


def _join_kinds(kinds: List[Optional[str]]) -> Optional[str]:
    if not kinds or any(kind is None for kind in kinds):
        return None
    unique: List[str] = []
    for kind in kinds:
        for part in kind.split(" or "):
            if part and part not in unique:
                unique.append(part)
    return " or ".join(unique)
