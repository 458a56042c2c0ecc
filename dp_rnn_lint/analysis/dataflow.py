"""Where names are bound and read inside one function, in source order.

Enough flow to trace `pad_packed_sequence(out)` back through `out, _ = self.lstm(packed)` to the
`pack_padded_sequence(x, ...)` that made `packed`, and to tell whether `x` was rebound in between.
The latest binding earlier in the source wins, except one in the other arm of an `if` that holds the
use; loops are not told apart.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from .modules import call_argument, iter_nodes
from .names import parameter_names
from .statements import StatementTracker
from .traversal import Visitor, children, walk


@dataclass(frozen=True)
class BindingSite:
    seq: int
    value: Optional[cst.BaseExpression]  # None when the bound value cannot be followed (loop target...)
    tuple_index: Optional[int]  # position in `a, b = value`, None for a plain `a = value`
    target: Optional[cst.CSTNode] = None  # the bound name's node, where the binding is in the source
    augmented: bool = False  # `x += ...`: a new value made from the old one


class FunctionFlow(Visitor):
    """Bindings and references of one function body; nested functions and classes are opaque."""

    def __init__(self, function: Union[cst.FunctionDef, cst.Lambda]) -> None:
        self.function = function
        self.parameters: Set[str] = set(parameter_names(function.params))
        self.seq_of: Dict[cst.CSTNode, int] = {}
        # For each call: the statement a new line may go right before, or None when nowhere is safe.
        self.insertion_point: Dict[cst.CSTNode, Optional[cst.BaseStatement]] = {}
        self.bindings: Dict[str, List[BindingSite]] = {}
        self._seq = 0
        self._parents: Optional[Dict[int, cst.CSTNode]] = None
        self._statements = StatementTracker()
        walk(function.body, self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._seq += 1
        node_type = type(node)
        if node_type is cst.FunctionDef or node_type is cst.ClassDef:
            self._bind(node.name.value, None, None)
            return False
        if node_type is cst.Lambda:
            return False
        self._statements.enter(node)
        if node_type is cst.Name:
            self.seq_of[node] = self._seq
        elif node_type is cst.Call:
            self.seq_of[node] = self._seq
            self.insertion_point[node] = self._statements.insertion_point()
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._seq += 1
        super().on_leave(original_node)
        self._statements.leave(original_node)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        for target in original_node.targets:
            self._bind_target(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self._bind_target(original_node.target, original_node.value)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        if isinstance(original_node.target, cst.Name):
            name = original_node.target
            self.bindings.setdefault(name.value, []).append(BindingSite(self._seq, None, None, name, augmented=True))
        else:
            self._bind_target(original_node.target, None)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self._bind_target(original_node.target, original_node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None, opaque=True)

    def leave_WithItem(self, original_node: cst.WithItem) -> None:
        if original_node.asname is not None:
            self._bind_target(original_node.asname.name, None, opaque=True)

    def leave_Del(self, original_node: cst.Del) -> None:
        # `del x` unbinds x: a later `x.size(1)` would fail, so it counts as a rebinding.
        self._bind_target(original_node.target, None, opaque=True)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name, None, opaque=True)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind_target(node.name, None, opaque=True)

    def _bind_target(self, target: cst.CSTNode, value: Optional[cst.BaseExpression], opaque: bool = False) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value, None, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name):
                    self._bind(element.value.value, None if opaque else value, index, element.value)
                else:
                    self._bind_target(element.value, None, opaque=True)

    def _bind(self, name: str, value: Optional[cst.BaseExpression], index: Optional[int],
              target: Optional[cst.CSTNode] = None) -> None:
        self.bindings.setdefault(name, []).append(BindingSite(self._seq, value, index, target))

    def binding_before(self, name: str, seq: int, use: Optional[cst.CSTNode] = None) -> Optional[BindingSite]:
        """The binding of `name` that a read at `seq` sees last; given the read's node, one in the other
        arm of an `if` holding the read does not count."""
        found = [site for site in self.bindings.get(name, ()) if site.seq < seq
                 and (use is None or site.target is None or not self.in_other_arms(site.target, use))]
        return found[-1] if found else None

    def binding_read(self, name: cst.Name) -> Optional[BindingSite]:
        """The binding a read of this name (a node of the function) sees, or None (a parameter, a global)."""
        seq = self.seq_of.get(name)
        return self.binding_before(name.value, seq, name) if seq is not None else None

    def binding_in_other_arm(self, name: str, site: BindingSite, use: cst.CSTNode) -> Optional[BindingSite]:
        """When `site` is in one arm of an `if` that ends before `use`, the last binding of `name` in
        the other arm: the value `use` sees when that arm ran instead."""
        if site.target is None:
            return None
        seq = self.seq_of.get(use)
        branch = self._innermost_if_apart(site.target, use)
        if branch is None or seq is None:
            return None
        found = [other for other in self.bindings.get(name, ()) if other.seq < seq and other.target is not None
                 and self._innermost_if_apart(other.target, use) is branch and self.in_other_arms(other.target, site.target)]
        return found[-1] if found else None

    def parent_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parents is None:
            parents: Dict[int, cst.CSTNode] = {}
            stack: list = [self.function]
            while stack:
                current = stack.pop()
                for child in children(current):
                    parents[id(child)] = current
                    stack.append(child)
            self._parents = parents
        return self._parents.get(id(node))

    def _arms(self, node: cst.CSTNode) -> Dict[int, Tuple[cst.If, str]]:
        """For each `if` above the node (by id): the `if` and the arm the node is in."""
        arms: Dict[int, Tuple[cst.If, str]] = {}
        child, parent = node, self.parent_of(node)
        while parent is not None:
            if isinstance(parent, cst.If) and child is not parent.test:
                arms[id(parent)] = (parent, "body" if child is parent.body else "orelse")
            child, parent = parent, self.parent_of(parent)
        return arms

    def in_other_arms(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """Whether the two nodes sit in different arms of one `if` (so at most one of them runs)."""
        second_arms = self._arms(second)
        return any(key in second_arms and second_arms[key][1] != arm for key, (_, arm) in self._arms(first).items())

    def _innermost_if_apart(self, node: cst.CSTNode, use: cst.CSTNode) -> Optional[cst.If]:
        """The innermost `if` holding `node` in one of its arms but not holding `use`."""
        use_arms = self._arms(use)
        child, parent = node, self.parent_of(node)
        while parent is not None:
            if isinstance(parent, cst.If) and child is not parent.test and id(parent) not in use_arms:
                return parent
            child, parent = parent, self.parent_of(parent)
        return None

    def rebound_between(self, name: str, start: int, end: int) -> bool:
        return any(start < site.seq < end for site in self.bindings.get(name, ()))


def names_used(root: cst.CSTNode) -> Set[str]:
    """Every identifier under root, nested scopes included: what a new local must not collide with."""
    found: Set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)  # `x.rnn` does not use the name `rnn`
        elif isinstance(node, cst.Arg):
            stack.append(node.value)  # nor does the keyword of `f(rnn=x)`
        else:
            stack.extend(children(node))
    return found


def fresh_name(base: str, taken: Set[str]) -> str:
    if base not in taken:
        return base
    number = 1
    while f"{base}_{number}" in taken:
        number += 1
    return f"{base}_{number}"


@dataclass(frozen=True)
class PackSite:
    call: cst.Call  # the pack_padded_sequence(...) call
    # When the pack is in a helper method whose result was followed: the call of the helper in the
    # traced function, and the helper's flow.
    helper_call: Optional[cst.Call] = None
    helper_flow: Optional["FunctionFlow"] = None


@dataclass(frozen=True)
class PackedSources:
    """What else a packed sequence can come from, besides the pack call and an RNN run on one."""

    # PackedSequence(data, batch_sizes, ...): the same steps as the sequence whose batch_sizes it takes.
    is_rebuild: Callable[[cst.Call], bool] = lambda call: False
    # A helper method of the class that returns a packed sequence (its FunctionDef), or None.
    helper_of: Callable[[cst.Call], Optional[cst.FunctionDef]] = lambda call: None


class Untraceable(enum.Enum):
    """Why a packed sequence could not be followed back to the call that packed it (`{name}`: the name)."""

    TOO_FAR = "the packed sequence's origin is too far away to follow"
    REBUILT = "the packed sequence is rebuilt from batch sizes this linter cannot follow"
    CALL = "the packed sequence comes from a call this linter cannot follow"
    EXPRESSION = "the packed sequence comes from an expression this linter cannot follow"
    ORIGIN = "the packed sequence's origin cannot be followed"
    PARAMETER = "the packed sequence is the parameter `{name}`"  # packed by the caller
    NOT_ASSIGNED = "`{name}` is not assigned in this function (a global, or a variable of an enclosing function)"
    AUGMENTED = "`{name}` is built up with an augmented assignment (`{name} += ...`), which this linter does not follow"
    OTHER_BINDING = "`{name}` is bound by a loop, `with` or another statement this linter cannot follow"
    NOT_RNN_OUTPUT = "`{name}` is not the output of an RNN call"
    HELPER_RETURNS = "the packed sequence comes from `{name}()`, which does not return one value"


@dataclass(frozen=True)
class Untraced:
    why: Untraceable
    name: str = ""

    def __str__(self) -> str:
        return self.why.value.format(name=self.name)


def trace_to_pack(
    flow: FunctionFlow,
    expr: cst.BaseExpression,
    is_pack_call: Callable[[cst.Call], bool],
    is_module_call: Callable[[cst.Call], bool],
    before: Optional[int] = None,
    depth: int = 0,
    rnn_output: bool = False,
    sources: PackedSources = PackedSources(),
) -> Union[PackSite, "Untraced"]:
    """Follow a PackedSequence expression back to the call that packed it; why not (`Untraced`) on failure.

    `rnn_output` says the expression's value is the first element of what a call returned: an RNN
    run on a PackedSequence returns `(PackedSequence, hidden)`, so the call is followed to its input.
    """
    if depth > 12:
        return Untraced(Untraceable.TOO_FAR)

    def follow(node: cst.BaseExpression, at: Optional[int], output: bool = False) -> Union[PackSite, "Untraced"]:
        return trace_to_pack(flow, node, is_pack_call, is_module_call, at, depth + 1, output, sources)

    if isinstance(expr, cst.Call):
        if is_pack_call(expr):
            return PackSite(expr)
        positional = [arg for arg in expr.args if arg.keyword is None and not arg.star]
        if rnn_output and positional and is_module_call(expr):
            return follow(positional[0].value, flow.seq_of.get(expr, before))
        if not rnn_output and sources.is_rebuild(expr):
            batch_sizes = call_argument(expr, 1, "batch_sizes")
            if isinstance(batch_sizes, cst.Attribute) and batch_sizes.attr.value == "batch_sizes":
                return follow(batch_sizes.value, flow.seq_of.get(expr, before))
            return Untraced(Untraceable.REBUILT)
        helper = None if rnn_output else sources.helper_of(expr)
        if helper is not None:
            return _through_helper(expr, helper, is_pack_call, is_module_call, depth, sources)
        return Untraced(Untraceable.CALL)
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, (cst.Call, cst.Name)):
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0":
            # `self.rnn(packed)[0]`, or `res[0]` after `res = self.rnn(packed)`
            return follow(expr.value, flow.seq_of.get(expr.value, before), output=True)
        return Untraced(Untraceable.EXPRESSION)
    if isinstance(expr, cst.Name):
        seq = flow.seq_of.get(expr, before)
        if seq is None:
            return Untraced(Untraceable.ORIGIN)
        site = flow.binding_before(expr.value, seq, expr)
        if site is None:
            if expr.value in flow.parameters:
                return Untraced(Untraceable.PARAMETER, expr.value)
            return Untraced(Untraceable.NOT_ASSIGNED, expr.value)
        found = _follow_binding(expr.value, site, rnn_output, follow)
        if isinstance(found, Untraced):
            # `if not packed: x = pack(...) else: x = given`: the arm that packs is the one to measure in
            # (the fix leaves the other paths as they were).
            other = flow.binding_in_other_arm(expr.value, site, expr)
            alternative = _follow_binding(expr.value, other, rnn_output, follow) if other is not None else None
            if isinstance(alternative, PackSite):
                return alternative
        return found
    return Untraced(Untraceable.EXPRESSION)


def _follow_binding(name: str, site: BindingSite, rnn_output: bool, follow) -> Union[PackSite, "Untraced"]:
    if site.augmented:
        return Untraced(Untraceable.AUGMENTED, name)
    if site.value is None:
        return Untraced(Untraceable.OTHER_BINDING, name)
    if site.tuple_index is None:
        return follow(site.value, site.seq, output=rnn_output)
    if site.tuple_index == 0 and isinstance(site.value, cst.Call) and not rnn_output:
        return follow(site.value, site.seq, output=True)
    return Untraced(Untraceable.NOT_RNN_OUTPUT, name)


def _through_helper(call: cst.Call, helper: cst.FunctionDef, is_pack_call, is_module_call, depth: int,
                    sources: PackedSources) -> Union[PackSite, "Untraced"]:
    """`encoded = self.encode(x, lengths)`: the helper's single returned value, followed inside it."""
    returns = list(iter_nodes(helper.body, (cst.Return,), skip_nested_scopes=True))
    if len(returns) != 1 or returns[0].value is None:
        return Untraced(Untraceable.HELPER_RETURNS, helper.name.value)
    inner = FunctionFlow(helper)
    site = trace_to_pack(inner, returns[0].value, is_pack_call, is_module_call, inner.seq_of.get(returns[0].value),
                         depth + 1, False, PackedSources(sources.is_rebuild))
    if isinstance(site, Untraced):
        return site
    return PackSite(site.call, call, inner)
