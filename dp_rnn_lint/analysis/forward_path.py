"""What runs on a DataParallel replica: `forward` and every method it reaches through `self.m(...)`.

The walk flattens that path into events in execution order (calls are recorded when they return,
so arguments come first, and a helper's events are spliced in where it is first called). Branches are not
told apart: a statement counts as having run once it appears earlier in the source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from .modules import ModuleClass, ModuleModel, RnnSubmodule, bind_arguments, is_self_attribute, iter_nodes, self_name
from .names import Scope
from .statements import StatementTracker
from .torch_names import PACK_PADDED_SEQUENCE, PAD_PACKED_SEQUENCE, canonical
from .traversal import Visitor, walk


# Where an event sits among the conditionals of the forward pass (helpers' inside the call site's):
# (the conditional's id, its arm, whether that arm runs only in eval mode), outermost first.
Conditions = Tuple[Tuple[int, str, bool], ...]


def dominates(earlier: "Union[Invocation, Flatten]", later: "Union[Invocation, Flatten]") -> bool:
    """Whether `earlier` (before `later` on the path) has run whenever `later` runs. An arm of a conditional
    is taken to run (the data decides, and the fix goes where the RNN runs), except that the other arm of
    the same conditional never shares a run with it, and an arm that runs only in eval mode (`if not
    self.training:`) is not taken for training, which is what DataParallel runs."""
    inside = {(node, arm) for node, arm, _ in later.conditions}
    arms_of = {node for node, _, _ in later.conditions}
    for node, arm, eval_only in earlier.conditions:
        if (node, arm) in inside:
            continue
        if node in arms_of or eval_only:
            return False
    return True


@dataclass(frozen=True)
class Invocation:
    """The RNN held in `attr` runs."""

    attr: str
    call: cst.Call
    method: cst.FunctionDef  # the method (not a nested function) whose body holds the call
    statement: Optional[cst.BaseStatement]  # where a line can go just before the call; None if nowhere safe
    conditions: Conditions = ()


# A flatten_parameters() call on a loop variable over self.modules(): it reaches every RNN.
EVERY_RNN = "*"


@dataclass(frozen=True)
class Flatten:
    attr: str  # or EVERY_RNN
    call: cst.Call
    method: cst.FunctionDef
    conditions: Conditions = ()


@dataclass(frozen=True)
class WeightReplacement:
    """The RNN's weights are swapped for new tensors (weight drop), which undoes flattening."""

    attr: str
    node: cst.CSTNode
    statements: tuple = ()  # the statements around it, outermost first


@dataclass(frozen=True)
class PadCall:
    call: cst.Call
    function: Union[cst.FunctionDef, cst.Lambda]  # innermost function holding the call
    scope: Scope


@dataclass(frozen=True)
class PackCall:
    call: cst.Call
    function: Union[cst.FunctionDef, cst.Lambda]  # innermost function holding the call
    method: cst.FunctionDef  # the method on the forward path whose body holds it


@dataclass(frozen=True)
class HelperEntry:
    """Where the forward path first enters a helper method: `self.encode(x, lengths)` in `caller`."""

    call: cst.Call
    caller: cst.FunctionDef


Event = Union[Invocation, Flatten, WeightReplacement, PadCall, PackCall]


class ForwardPath:
    """The events of one module class's forward pass."""

    def __init__(self, model: ModuleModel, cls: ModuleClass, holder_files: Sequence[str] = ()) -> None:
        self.model = model
        self.cls = cls
        self.rnns: Dict[str, RnnSubmodule] = model.rnn_submodules(cls)
        self._inlined: Set[tuple] = set()  # (helper, the RNN attributes its call hands it)
        # How each helper on the path was first reached, to follow its parameters back to forward's.
        self.entries: Dict[cst.FunctionDef, HelperEntry] = {}
        found = cls.find_method("forward")
        self.forward: Optional[cst.FunctionDef] = found[0] if found else None
        # forward itself, or the methods a forward inherited from another file runs here (`self._forward`)
        self.events: List[Event] = []
        entered = model.forward_entries(cls)
        # Each entry is a way in of its own (the arms of one conditional, as dominates() reads them): a
        # compaction in forward does not cover an RNN another module runs through `encode_all()`.
        for method, owner in entered:
            self.events.extend(self.walk(method, owner, set(), conditions=_entry(method)))
        # Methods that run an RNN off this path, which another module's forward calls on its instance of
        # this class (`self.q_emb.forward_all(q)`): on the replicas, they are forward too.
        walked = {method for method, _ in entered} | {key[0] for key in self._inlined}
        running = frozenset(name for owner in cls.mro() for name, method in owner.methods.items()
                            if name != "forward" and not name.startswith("__") and method not in walked
                            and _mentions_attribute(method, self.rnns))
        # method name -> the class whose forward calls it on its instance of this one
        self.held_entries: Dict[str, str] = {}
        for name, holder in model.called_from_other_forwards(cls, running, holder_files).items():
            found = cls.find_method(name)
            if found is not None and found[0] not in walked:
                walked.add(found[0])
                self.held_entries[name] = holder
                self.events.extend(self.walk(found[0], found[1], set(), conditions=_entry(found[0])))

    def walk(self, method: cst.FunctionDef, owner: ModuleClass, active: Set[cst.FunctionDef],
             handed: Optional[Dict[str, str]] = None, caller: Optional[tuple] = None,
             conditions: Conditions = ()) -> List[Event]:
        """The events of one method; `handed`: its parameters that the call passes an RNN attribute for,
        run where `caller` (the calling method and the statement holding the call) can compact it first;
        `conditions`: those of the call that enters the method."""
        walker = _MethodWalker(self, method, owner, active | {method}, handed or {}, caller, conditions)
        walk(method.body, walker)
        return walker.events


# Node types by exact type: the parser builds only these classes, and a set lookup costs far less than
# isinstance against libcst's ABCs, once per node of every forward walked.
_FUNCTIONS = frozenset({cst.FunctionDef, cst.Lambda})
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})


def _always_exits(body: cst.BaseSuite) -> bool:
    """Whether a block ends by leaving the function: its last statement returns or raises."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    if isinstance(last, cst.SimpleStatementSuite):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return isinstance(last, (cst.Return, cst.Raise))


class _MethodWalker(Visitor):
    def __init__(self, path: ForwardPath, method: cst.FunctionDef, owner: ModuleClass, active: Set[cst.FunctionDef],
                 handed: Dict[str, str], caller: Optional[tuple], conditions: Conditions) -> None:
        self.path = path
        self.model = path.model
        self.method = method
        self.owner = owner
        self.active = active
        self.me = self_name(method)
        self.events: List[Event] = []
        self._scopes: List[Scope] = [self.model.resolver.scopes[method]]
        self._functions: List[Union[cst.FunctionDef, cst.Lambda]] = [method]
        self._statements = StatementTracker()
        # Local names that stand for an RNN attribute: loop variables over a ModuleList, `rnn = self.rnn`.
        self._loop_aliases: List[Dict[str, str]] = []
        self._aliases: Dict[str, str] = dict(handed)
        self._loop_depth = 0
        self.handed: Dict[str, str] = dict(handed)  # parameters the call passed an RNN attribute for
        self.caller: Optional[tuple] = caller  # (method, statement) of that call
        self._conditions: List[Tuple[int, str, bool]] = list(conditions)  # the arms around the node visited
        self._arms: Dict[int, Tuple[int, str, bool]] = {}  # the arm each branch node starts, until visited
        self._entered: Set[int] = set()
        # Statements after `if ...: return` (no else) run only when the test is false: the else arm.
        self._after_exit: Dict[int, List[Tuple[int, str, bool]]] = {}
        self._entered_after_exit: Dict[int, int] = {}

    def _mark_code_after_early_exits(self, statements: Sequence[cst.BaseStatement]) -> None:
        for index, statement in enumerate(statements):
            if type(statement) is cst.If and statement.orelse is None and _always_exits(statement.body):
                eval_arm = _eval_only_arm(statement.test, self.me)
                for later in statements[index + 1:]:
                    self._after_exit.setdefault(id(later), []).append((id(statement), "else", eval_arm == "else"))

    # -- bookkeeping --------------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        self._statements.enter(node)
        node_type = type(node)
        if node_type is cst.If or node_type is cst.IfExp:
            eval_arm = _eval_only_arm(node.test, self.me) if node_type is cst.If else None
            self._arms[id(node.body)] = (id(node), "body", eval_arm == "body")
            if node.orelse is not None:
                self._arms[id(node.orelse)] = (id(node), "else", eval_arm == "else")
        elif node_type is cst.Try:
            for position, handler in enumerate(node.handlers):
                self._arms[id(handler)] = (id(node), f"except {position}", False)
        elif node_type is cst.IndentedBlock or node_type is cst.Module:
            self._mark_code_after_early_exits(node.body)
        arm = self._arms.pop(id(node), None)
        if arm is not None:
            self._conditions.append(arm)
            self._entered.add(id(node))
        for arm in self._after_exit.pop(id(node), ()):
            self._conditions.append(arm)
            self._entered_after_exit[id(node)] = self._entered_after_exit.get(id(node), 0) + 1
        if node_type in _FUNCTIONS:
            self._functions.append(node)
            self._scopes.append(self.model.resolver.scopes[node])
        elif node_type in _COMPREHENSIONS:
            self._scopes.append(self.model.resolver.scopes.get(node, self._scopes[-1]))
            self._loop_aliases.append(self._comprehension_aliases(node))
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self._statements.leave(original_node)
        for _ in range(self._entered_after_exit.pop(id(original_node), 0)):
            self._conditions.pop()
        if id(original_node) in self._entered:
            self._entered.discard(id(original_node))
            self._conditions.pop()
        node_type = type(original_node)
        if node_type in _FUNCTIONS:
            self._functions.pop()
            self._scopes.pop()
        elif node_type in _COMPREHENSIONS:
            self._scopes.pop()
            self._loop_aliases.pop()

    @property
    def scope(self) -> Scope:
        return self._scopes[-1]

    # -- which expressions stand for an RNN ---------------------------------------------------------
    def rnn_attr(self, node: cst.CSTNode) -> Optional[str]:
        """The RNN attribute an expression refers to: `self.lstm`, `self.layers[i]`, a loop variable."""
        attr = is_self_attribute(node, self.me)
        if attr in self.path.rnns:
            return attr
        if isinstance(node, cst.Subscript):
            attr = is_self_attribute(node.value, self.me)
            if attr in self.path.rnns and self.path.rnns[attr].is_list:
                return attr
        if isinstance(node, cst.Name):
            for aliases in reversed(self._loop_aliases):
                if node.value in aliases:
                    return aliases[node.value]
            return self._aliases.get(node.value)
        return None

    def _list_attr(self, node: cst.CSTNode) -> Optional[str]:
        attr = is_self_attribute(node, self.me)
        if attr in self.path.rnns and self.path.rnns[attr].is_list:
            return attr
        return None

    def _iteration_aliases(self, target: cst.CSTNode, iterable: cst.CSTNode) -> Dict[str, str]:
        """`for layer in self.layers`, `enumerate(self.layers)`, `zip(self.layers, ...)`, `self.modules()`."""
        attr = self._list_attr(iterable)
        if attr and isinstance(target, cst.Name):
            return {target.value: attr}
        if isinstance(iterable, cst.Call):
            source = is_self_attribute(iterable.func, self.me)
            if source in ("modules", "children") and isinstance(target, cst.Name):
                return {target.value: EVERY_RNN}
            if (
                source in ("named_modules", "named_children")
                and isinstance(target, (cst.Tuple, cst.List))
                and len(target.elements) == 2
                and isinstance(target.elements[1].value, cst.Name)
            ):
                return {target.elements[1].value.value: EVERY_RNN}
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            if iterable.func.value == "reversed" and iterable.args:
                return self._iteration_aliases(target, iterable.args[0].value)
            if not isinstance(target, (cst.Tuple, cst.List)):
                return {}
            elements = [e.value for e in target.elements]
            if iterable.func.value == "enumerate" and iterable.args and len(elements) == 2:
                return self._iteration_aliases(elements[1], iterable.args[0].value)
            if iterable.func.value == "zip":
                found: Dict[str, str] = {}
                for element, arg in zip(elements, iterable.args):
                    found.update(self._iteration_aliases(element, arg.value))
                return found
        return {}

    def _comprehension_aliases(self, node: cst.CSTNode) -> Dict[str, str]:
        found: Dict[str, str] = {}
        comp = node.for_in
        while comp is not None:
            found.update(self._iteration_aliases(comp.target, comp.iter))
            comp = comp.inner_for_in
        return found

    # -- statements ---------------------------------------------------------------------------------
    def visit_For(self, node: cst.For) -> None:
        self._loop_aliases.append(self._iteration_aliases(node.target, node.iter))
        self._loop_depth += 1

    def leave_For(self, original_node: cst.For) -> None:
        self._loop_aliases.pop()
        self._loop_depth -= 1

    def visit_While(self, node: cst.While) -> None:
        self._loop_depth += 1

    def leave_While(self, original_node: cst.While) -> None:
        self._loop_depth -= 1

    def leave_Assign(self, original_node: cst.Assign) -> None:
        for target in original_node.targets:
            node = target.target
            if isinstance(node, cst.Name):
                attr = self.rnn_attr(original_node.value)
                if attr:
                    self._aliases[node.value] = attr
                else:
                    self._aliases.pop(node.value, None)
            self._note_weight_replacement(node)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self._note_weight_replacement(original_node.target)

    def _note_weight_replacement(self, target: cst.CSTNode) -> None:
        # self.rnn.weight_hh_l0 = ...  or  self.rnn._parameters["weight_hh_l0"] = ...
        if isinstance(target, cst.Attribute) and target.attr.value.startswith(("weight_", "bias_")):
            attr = self.rnn_attr(target.value)
            if attr:
                self.events.append(WeightReplacement(attr, target, self._statements.statements))
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute):
            if target.value.attr.value == "_parameters":
                attr = self.rnn_attr(target.value.value)
                if attr:
                    self.events.append(WeightReplacement(attr, target, self._statements.statements))

    # -- calls --------------------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call) -> None:
        func = original_node.func
        # self.lstm(x), self.layers[i](x), layer(x) inside `for layer in self.layers`
        attr = self.rnn_attr(func)
        if attr and attr != EVERY_RNN:
            if isinstance(func, cst.Name) and self.handed.get(func.value) == attr and self.caller is not None:
                # An RNN handed to this helper: only the caller names it, so it is compacted there.
                self.events.append(Invocation(attr, original_node, *self.caller, tuple(self._conditions)))
                return
            self._invocation(attr, original_node)
            return
        if isinstance(func, cst.Attribute):
            target_attr = self.rnn_attr(func.value)
            if target_attr:
                if func.attr.value == "flatten_parameters":
                    # `self.layers[0].flatten_parameters()` flattens one member, not the list; in a loop
                    # over indices it may flatten them all.
                    if not isinstance(func.value, cst.Subscript) or self._loop_depth or len(self._loop_aliases):
                        self.events.append(Flatten(target_attr, original_node, self.method, tuple(self._conditions)))
                elif func.attr.value in ("forward", "__call__") and target_attr != EVERY_RNN:
                    self._invocation(target_attr, original_node)
                elif func.attr.value == "register_parameter":
                    self.events.append(WeightReplacement(target_attr, original_node, self._statements.statements))
                return
            helper = is_self_attribute(func, self.me)
            if helper is not None:
                self._inline(helper, after=None, call=original_node)
                return
            if self._is_super_call(func.value):
                self._inline(func.attr.value, after=self.owner, call=original_node)
                return
        qualified = self.model.resolver.qualified_name(func, self.scope)
        if qualified == "builtins.setattr" and len(original_node.args) == 3:
            attr = self.rnn_attr(original_node.args[0].value)
            if attr and attr != EVERY_RNN:
                self.events.append(WeightReplacement(attr, original_node, self._statements.statements))
            return
        name = canonical(qualified)
        if name == PAD_PACKED_SEQUENCE:
            self.events.append(PadCall(original_node, self._functions[-1], self.scope))
        elif name == PACK_PADDED_SEQUENCE:
            self.events.append(PackCall(original_node, self._functions[-1], self.method))

    def _invocation(self, attr: str, call: cst.Call) -> None:
        self.events.append(Invocation(attr, call, self.method, self._statements.insertion_point(),
                                      tuple(self._conditions)))

    def _is_super_call(self, node: cst.CSTNode) -> bool:
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "super"
            and self.model.resolver.qualified_name(node.func, self.scope) == "builtins.super"
        )

    def _inline(self, name: str, after: Optional[ModuleClass], call: cst.Call) -> None:
        found = self.path.cls.find_method(name, after=after)
        if found is None:
            return
        method, owner = found
        # `self.run_packed(x, self.lstm)`: inside the helper, calling that parameter runs the LSTM.
        handed = {param: attr for param, value in bind_arguments(call, method).items()
                  for attr in [self.rnn_attr(value)] if attr and attr != EVERY_RNN}
        key = (method, frozenset(handed.items()))
        if method in self.active or key in self.path._inlined:
            # Recursion, or a helper already spliced in at an earlier call with the same RNNs: its first
            # run is what decides whether flatten_parameters() came before the RNN, and splicing it at
            # every call would grow exponentially with nested helpers.
            return
        self.path._inlined.add(key)
        self.path.entries.setdefault(method, HelperEntry(call, self.method))
        caller = (self.method, self._statements.insertion_point())
        self.events.extend(self.path.walk(method, owner, self.active, handed, caller, tuple(self._conditions)))


_ENTRIES = -1  # the "conditional" whose arms are a class's ways into its forward pass


def _entry(method: cst.FunctionDef) -> Conditions:
    return ((_ENTRIES, method.name.value, False),)


def entry_of(event: Event) -> Optional[str]:
    """The name of the method by which the event's path enters the class (forward, or a method another
    module's forward calls)."""
    return next((arm for test, arm, _ in event.conditions if isinstance(test, int) and test == _ENTRIES), None)


def _mentions_attribute(method: cst.FunctionDef, attrs) -> bool:
    """Whether a method reads `self.<attr>` for one of the attributes."""
    me = self_name(method)
    return me is not None and any(is_self_attribute(node, me) in attrs for node in iter_nodes(method.body, (cst.Attribute,)))


def _eval_only_arm(test: cst.BaseExpression, me: Optional[str]) -> Optional[str]:
    """Which arm of `if <test>:` runs only in eval mode: "body" for `not self.training` (or `self.training
    is False`), "else" for `self.training` (or `is True`); None when the test is about something else."""
    negated = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.Is, cst.Equal)) and isinstance(target.comparator, cst.Name) and (
                target.comparator.value in ("True", "False")):
            negated = negated != (target.comparator.value == "False")
            test = test.left
        elif isinstance(target.operator, (cst.IsNot, cst.NotEqual)) and isinstance(target.comparator, cst.Name) and (
                target.comparator.value in ("True", "False")):
            negated = negated != (target.comparator.value == "True")
            test = test.left
    if is_self_attribute(test, me) != "training":
        return None
    return "body" if negated else "else"


def flatten_call_sites(model: ModuleModel, cls: ModuleClass, attr: str) -> List[str]:
    """Names of the class's methods that call flatten_parameters() on `attr` at all, on the path or not."""
    sites = []
    for owner in cls.mro():
        for name, method in owner.methods.items():
            me = self_name(method)
            for node in iter_nodes(method, (cst.Call,)):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value == "flatten_parameters":
                    target = func.value
                    if isinstance(target, cst.Subscript):
                        target = target.value
                    if is_self_attribute(target, me) == attr and name not in sites:
                        sites.append(name)
    return sites


__all__ = ["EVERY_RNN", "ForwardPath", "Invocation", "Flatten", "WeightReplacement", "PadCall", "PackCall", "HelperEntry",
           "flatten_call_sites"]
