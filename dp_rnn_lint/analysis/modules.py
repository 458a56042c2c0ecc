"""nn.Module classes of one file, their methods, and which of their attributes hold RNNs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .names import DEF, NameResolver, Scope
from .torch_names import MODULE_METHODS_RETURNING_SELF
from .traversal import children
from .evaluator import EvaluatedClasses
from .values import RnnKind, describe_kinds

# Words that mark a run-time name as naming an RNN class: getattr(nn, rnn_type), getattr(nn, cell). A
# guess from spelling, which users extend with the `extend-rnn-words` setting.
RNN_WORDS = ("rnn", "lstm", "gru", "cell")


@dataclass(frozen=True)
class RnnSubmodule:
    """An attribute of a module class that holds an RNN, or an nn.ModuleList of them."""

    attr: str
    kinds: FrozenSet[RnnKind]
    is_list: bool
    chosen_at_run_time: bool = False  # only a run-time string names the class (`getattr(nn, rnn_type)`)
    guessed_by: str = ""  # then: the spelling whose word says RNN (`rnn_type`), on which the verdict rests
    optional: bool = False  # also set to None somewhere (`nn.LSTM(...) if use_rnn else None`)
    # A torch RNN in some configurations only: other assignments hold another module (a custom RNN, a
    # weight-drop wrapper of it) that may have no flatten_parameters().
    guarded: bool = False

    @property
    def kind(self) -> str:
        """What the messages call it: `nn.LSTM`, `nn.LSTM or nn.GRU`."""
        if self.chosen_at_run_time:
            # The verdict rests on a spelling: the message says which (`extend-rnn-words` adds words).
            return f"an RNN class chosen at run time, going by the name `{self.guessed_by}`"
        return describe_kinds(self.kinds)


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

    def __init__(self, module: cst.Module, resolver: NameResolver, every_class: bool = False,
                 evaluated: Optional[EvaluatedClasses] = None, rnn_words: Sequence[str] = ()) -> None:
        self.module = module
        self.resolver = resolver
        self._rnn_words = re.compile("|".join(re.escape(word) for word in sorted({*RNN_WORDS, *rnn_words})),
                                     re.IGNORECASE)
        # `every_class`: every class of the file is read as a module class, whatever its bases (tests).
        self._every_class = every_class
        # The project-wide evaluator: which classes are modules (their MRO across files), what their
        # attributes hold (imports of every kind, factories, callers).
        self._evaluated = evaluated or EvaluatedClasses("", None, lambda tree=module: tree.code)
        self._class_scopes = {node: scope for node, scope in resolver.scopes.items() if isinstance(node, cst.ClassDef)}
        self._rnn_class_memo: Dict[cst.ClassDef, Optional[str]] = {}
        self.classes: List[ModuleClass] = []
        by_node: Dict[cst.ClassDef, ModuleClass] = {}
        undecided: List[ModuleClass] = []
        for node, scope in self._class_scopes.items():
            qualname = self.qualname(node)
            module = self._every_class or self._evaluated.is_module(qualname)
            if module or self._evaluated.may_be_module(qualname):
                cls = ModuleClass(node=node, scope=scope)
                for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                    if isinstance(statement, cst.FunctionDef) and not _is_property_writer(statement):
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

    def forward_entries(self, cls: ModuleClass) -> List[Tuple[cst.FunctionDef, "ModuleClass"]]:
        """Where the forward pass starts in this file: `forward`, or, when a base in another file defines it,
        the methods of this file that forward runs on self (`self._forward(...)`)."""
        found = cls.find_method("forward")
        if found is not None:
            return [found]
        if cls.node not in self._class_scopes:
            return []
        entries = []
        for name in self._evaluated.entries_from_elsewhere(self.qualname(cls.node)):
            hit = cls.find_method(name)
            if hit is not None:
                entries.append(hit)
        return entries

    def called_from_other_forwards(self, cls: ModuleClass, names: FrozenSet[str],
                                   files: Sequence[str] = ()) -> Dict[str, str]:
        """Which of the methods `names` of `cls` the forward pass of another module class (of this file or
        of `files`) calls on an attribute that can hold an instance of `cls` (`self.encoder.encode_all(x)`):
        they run on the replicas as much as forward does. {method: the holder class's qualified name}."""
        if not names or cls.node not in self._class_scopes:
            return {}
        return self._evaluated.methods_run_by_holders(self.qualname(cls.node), names, files)

    def rnn_subclass_kind(self, node: cst.ClassDef) -> Optional[str]:
        """"nn.LSTM" when a class of this file subclasses torch's RNN, LSTM or GRU (through any base, in any
        file); None for anything else, nn.RNNBase's own subclasses included (no kind to name)."""
        if node not in self._rnn_class_memo:
            kinds = self._evaluated.rnn_class_kinds(self.qualname(node))
            self._rnn_class_memo[node] = describe_kinds(kinds) if kinds and kinds != frozenset(RnnKind) else None
        return self._rnn_class_memo[node]

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
    # -- RNN attributes -----------------------------------------------------------------------------
    def rnn_submodules(self, cls: ModuleClass) -> Dict[str, RnnSubmodule]:
        """Attributes of `cls` (set in any of its methods or its bases', in any file) that hold torch RNNs, as
        the evaluator finds them. A class only a run-time string names (`getattr(nn, rnn_type)`) counts when
        the string's expression or its function says it names an RNN (a guess, and the message says so)."""
        key = id(cls)
        if key not in self._rnn_memo:
            result = {}
            for attr, fact in self._evaluated.rnn_attributes(self.qualname(cls.node)).items():
                saying_rnn = sorted(name for name in fact.guessed_from if self._rnn_words.search(name))
                says_rnn = bool(saying_rnn)
                if fact.guess and not says_rnn:
                    continue
                # A run-time string whose spelling does not say RNN may name another module too.
                guarded = fact.other_modules or bool(fact.guessed_from and not says_rnn)
                result[attr] = RnnSubmodule(attr, fact.kinds, is_list=fact.is_list, chosen_at_run_time=fact.guess,
                                            guessed_by=saying_rnn[0] if fact.guess else "",
                                            optional=fact.maybe_none and not fact.is_list, guarded=guarded)
            self._rnn_memo[key] = result
        return self._rnn_memo[key]

    def assigned_attributes(self, cls: ModuleClass) -> set:
        """Every attribute name the class (or a base of it) sets on self, whatever the value."""
        key = id(cls)
        if key not in self._assigned_memo:
            self._assigned_memo[key] = self._evaluated.assigned_attributes(self.qualname(cls.node))
        return self._assigned_memo[key]


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


def _unsubscripted(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`Base` for a generic base `Base[T]`."""
    return expression.value if isinstance(expression, cst.Subscript) else expression


def _moves_itself(value: Optional[cst.BaseExpression], name: str) -> bool:
    """`name.to(device)`, `name.cuda()`, `name.float().cuda()`: the module `name` holds, moved or cast."""
    moved, stripped = without_calls_of(value, MODULE_METHODS_RETURNING_SELF)
    return stripped and isinstance(moved, cst.Name) and moved.value == name


def without_calls_of(value: Optional[cst.BaseExpression], methods: FrozenSet[str]) -> Tuple[Optional[cst.BaseExpression], bool]:
    """What a chain of calls of these methods is made on (`x` for `x.float().cuda()`), and whether there
    was any such call."""
    stripped = False
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in methods:
        value, stripped = value.func.value, True
    return value, stripped
