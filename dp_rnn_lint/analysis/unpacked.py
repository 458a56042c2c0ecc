"""Where the tensor `pad_packed_sequence` returns goes, inside the function that unpacks it.

A padded tensor only hurts under DataParallel when it leaves the replica with its time dimension, padded
to the longest sequence of the replica's own slice: returned (gathering fails) or stored on the module.
Code that unpacks only to work on the padded tensor (concatenate, dropout, reverse, a loop over time
steps with a cell) and packs the result again before `forward` returns sends no padded tensor across, and
neither does a sum over time of zero padding (the same on every replica as on one device). A mean or a
maximum over time does differ: it counts the replica's own padding.

The walk follows names in source order: after an `if`, a name holds what it holds after either branch; a
loop's body is read twice so that a value carried to the next iteration is seen; a `self.<name>(...)` call
of the project's (a helper method, a submodule's forward, in any file) is followed a few calls deep; and
anything it cannot follow (a closure, a helper it cannot find that may keep the tensor) counts as leaving.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

import libcst as cst

from .dataflow import FunctionFlow
from .modules import bind_arguments, call_argument, is_zero_literal, iter_nodes
from .torch_names import PACK_PADDED_SEQUENCE, PACK_SEQUENCE, PACKED_SEQUENCE
from .traversal import children

# What a value holds, as far as the walk is concerned.
PADDED = "padded"  # a tensor padded to the replica's longest sequence (or something holding one)
PAIR = "pair"  # what pad_packed_sequence returns: (padded, lengths)
# A matrix product of a padded tensor: it keeps the replica's length or, where it runs over time (attention
# pooling: `torch.bmm(weights, states)`), sums over the padded steps with weights that usually count them.
# Which, the walk cannot tell without shapes, so the message gives both readings.
PRODUCT = "product"

# The calls that pack a padded tensor again: what they return is a PackedSequence, not a padded tensor.
REPACKS = frozenset({PACK_PADDED_SEQUENCE, PACK_SEQUENCE, PACKED_SEQUENCE})

# Why the padded tensor counts as leaving the replica.
RETURNED, STORED, POOLED, UNFOLLOWED = "returned", "stored", "pooled", "unfollowed"

# Tensor methods whose result has no time dimension to pad.
_SCALAR_METHODS = frozenset({"size", "dim", "ndimension", "numel", "item", "nelement", "element_size",
                             "get_device", "is_contiguous", "data_ptr", "stride", "storage_offset"})
_SCALAR_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "layout",
                                "batch_sizes", "grad_fn", "is_leaf"})
# Reductions that, over the time dimension, pool the padding into the result.
_REDUCTIONS = frozenset({"sum", "nansum", "mean", "nanmean", "max", "min", "amax", "amin", "prod", "logsumexp",
                         "norm", "std", "var", "median", "nanmedian", "mode", "argmax", "argmin", "all", "any",
                         "count_nonzero"})
# Reductions the padding cannot change, by padding value: a sum over zeros, a maximum over -inf, a
# minimum over +inf is what one device gets.
_ZERO_FREE = frozenset({"sum", "nansum"})
_MINUS_INFINITY_FREE = frozenset({"max", "amax"})
_PLUS_INFINITY_FREE = frozenset({"min", "amin"})

# Matrix products, by function or tensor method (`@` is one too).
_PRODUCTS = frozenset({"bmm", "matmul", "mm", "einsum", "baddbmm", "addbmm", "tensordot"})

# Concatenations: with a tensor made to be filled in, they pad a tensor out along time.
_CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
# Tensors made to be filled in, by their own name or as a method of a tensor (`x.new_zeros(...)`); those
# with a fill value (FILLED_CREATORS) take it second.
_CREATORS = frozenset({"torch.zeros", "torch.full"})
_CREATOR_METHODS = frozenset({"new_zeros", "new_full"})
# A tensor's methods that make a new tensor of the sizes they are given, unrelated to its own contents.
_FRESH_TENSOR_METHODS = frozenset({"new_zeros", "new_full", "new_ones", "new_empty"})
FILLED_CREATORS = frozenset({"full", "new_full"})

# Builtins whose result holds no tensor.
_NOT_TENSORS = frozenset({"len", "isinstance", "type", "id", "print", "hasattr", "callable", "repr", "str"})
# torch.nn.functional losses not named `*_loss`; with their default reduction a loss is one number.
_LOSSES = frozenset({"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"})
# List and dict methods that put their argument in the receiver.
_CONTAINER_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft"})


def padding_free_reductions(padding: Optional[cst.BaseExpression]) -> FrozenSet[str]:
    """The reductions over time that padding with this value (None: the default, zero) leaves unchanged."""
    if padding is None or is_zero_literal(padding):
        return _ZERO_FREE
    negative = isinstance(padding, cst.UnaryOperation) and isinstance(padding.operator, cst.Minus)
    value = padding.expression if negative else padding
    infinite = (isinstance(value, cst.Attribute) and value.attr.value == "inf") or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "float"
        and len(value.args) == 1 and isinstance(value.args[0].value, cst.SimpleString))
    if not infinite:
        return frozenset()
    if isinstance(value, cst.Call):
        text = str(value.args[0].value.evaluated_value).strip().lower()
        if text not in ("inf", "-inf", "+inf", "infinity", "-infinity"):
            return frozenset()
        negative = negative != text.startswith("-")
    return _MINUS_INFINITY_FREE if negative else _PLUS_INFINITY_FREE


@dataclass(frozen=True)
class Escape:
    """How the padded tensor leaves: RETURNED, STORED (on the module or beyond the function), POOLED (a
    reduction over time that counts the padding) or UNFOLLOWED (a use the walk cannot follow)."""

    kind: str
    node: cst.CSTNode
    reduction: str = ""  # the reduction's name, for POOLED
    # For POOLED over a negative dimension (`mean(-1)`): it, since which dimension that is depends on the
    # tensor's rank, which the walk does not know. The result keeps the replica's length or counts its
    # padding; both are wrong under DataParallel.
    negative_dim: Optional[int] = None
    # For RETURNED and STORED: the matrix product (`torch.bmm`, `@`) the tensor went through on its way out,
    # if it did; empty when the padded tensor itself leaves.
    product: str = ""


@dataclass(frozen=True)
class Callee:
    """A function of the project that a `self.<name>(...)` call runs (a helper method, or a submodule's
    forward, in any file), with how names resolve there and what `self.<name>(...)` runs there in turn."""

    function: cst.FunctionDef
    qualified: Callable[[cst.Call], Optional[str]]
    callees: Callable[[cst.Call], Optional["Callee"]]


# How many calls deep the walk follows the padded tensor into helpers and submodules.
_MAX_CALL_DEPTH = 3


def where_unpacked_goes(function: cst.FunctionDef, pad_call: cst.Call, time_dim: Optional[int],
                        padding_free: FrozenSet[str], qualified: Callable[[cst.Call], Optional[str]],
                        is_repack: Callable[[Optional[str]], bool], returns_pair: bool = True,
                        callees: Optional[Callable[[cst.Call], Optional[Callee]]] = None) -> Optional[Escape]:
    """The first way the tensor `pad_call` returns leaves `function` padded, or None when every use packs
    it again, pools it harmlessly or drops its time dimension. `time_dim`: 1 with batch_first, 0 without,
    None when unknown; `qualified`: a call's canonical qualified name; `is_repack`: whether a qualified name
    packs (pack_padded_sequence, pack_sequence, PackedSequence); `returns_pair`: the call returns
    (padded, lengths) as pad_packed_sequence does, rather than the padded tensor (pad_sequence)."""
    walk = _Walk(function, pad_call, time_dim, padding_free, qualified, is_repack, callees)
    walk.seed = PAIR if returns_pair else PADDED
    walk.statements(function.body.body if isinstance(function.body, cst.IndentedBlock) else [function.body])
    return walk.escape


class _Walk:
    def __init__(self, function: cst.FunctionDef, pad_call: Optional[cst.Call], time_dim: Optional[int],
                 padding_free: FrozenSet[str], qualified: Callable[[cst.Call], Optional[str]],
                 is_repack: Callable[[Optional[str]], bool],
                 callees: Optional[Callable[[cst.Call], Optional[Callee]]] = None, depth: int = 0) -> None:
        self.function = function
        self.callees = callees
        self.depth = depth
        self._flow: Optional[FunctionFlow] = None  # the function's bindings, made when first needed
        self.pad_call = pad_call
        self.time_dim = time_dim
        self.padding_free = padding_free
        self.qualified = qualified
        self.is_repack = is_repack
        self.names: Dict[str, str] = {}  # local name -> PADDED or PAIR
        self.escape: Optional[Escape] = None
        self.seed = PAIR  # what the pad call's value is
        # The matrix product behind the value last read (by name or made), for the message, and the
        # product behind each name holding one.
        self.product = ""
        self.product_of: Dict[str, str] = {}

    def leave(self, kind: str, node: cst.CSTNode, reduction: str = "", negative_dim: Optional[int] = None,
              found: Optional[str] = None) -> None:
        """`found`: what left, for RETURNED and STORED (a product's result, or the padded tensor)."""
        if self.escape is None:
            self.escape = Escape(kind, node, reduction, negative_dim, self.product if found == PRODUCT else "")

    # -- statements ---------------------------------------------------------------------------------
    def statements(self, body: Iterable[cst.CSTNode]) -> None:
        for statement in body:
            if self.escape is not None:
                return
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            for small in node.body:
                self.small_statement(small)
        elif kind is cst.If:
            # Either branch may run: a name holds after the `if` what it holds after either.
            self.value(node.test)
            equal_if_true, equal_if_false = self.length_made_equal(node.test)
            before = dict(self.names)
            if equal_if_true is not None:
                self.names.pop(equal_if_true, None)
            self.block(node.body)
            taken, self.names = self.names, before
            if equal_if_false is not None:
                # `if steps != mask.size(1): out = torch.cat([out, zeros], 1)`: otherwise it is as long already
                self.names = {name: found for name, found in before.items() if name != equal_if_false}
            if isinstance(node.orelse, cst.If):
                self.statement(node.orelse)
            elif node.orelse is not None:
                self.block(node.orelse.body)
            self.names = _merged(taken, self.names)
        elif kind in (cst.For, cst.While):
            if kind is cst.For:
                self.bind(node.target, self.value(node.iter), node)
            else:
                self.value(node.test)
            for _ in range(2):  # a value carried into the next iteration is seen on the second reading
                self.block(node.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
        elif kind is cst.With:
            for item in node.items:
                found = self.value(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, found, node)
            self.block(node.body)
        elif kind in (cst.Try, cst.TryStar):
            self.block(node.body)
            for handler in node.handlers:
                self.block(handler.body)
            for extra in (node.orelse, node.finalbody):
                if extra is not None:
                    self.block(extra.body)
        elif kind in (cst.FunctionDef, cst.ClassDef):
            if self.mentions_tainted(node):
                self.leave(UNFOLLOWED, node)  # a closure over the padded tensor: where it runs is unknown
        elif self.mentions_tainted(node) or self.holds_pad_call(node):
            self.leave(UNFOLLOWED, node)  # match statements and the like

    def block(self, body: cst.BaseSuite) -> None:
        if isinstance(body, cst.IndentedBlock):
            self.statements(body.body)
        else:
            for small in body.body:
                self.small_statement(small)

    def small_statement(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.Assign:
            found = self.value(node.value)
            for target in node.targets:
                self.bind(target.target, found, node)
        elif kind is cst.AnnAssign:
            if node.value is not None:
                self.bind(node.target, self.value(node.value), node)
        elif kind is cst.AugAssign:
            found = self.value(node.value)
            if found is not None:
                held = self.names.get(node.target.value) if isinstance(node.target, cst.Name) else None
                self.bind(node.target, _padded_of([held, found]), node)
        elif kind is cst.Return:
            found = self.value(node.value) if node.value is not None else None
            if found is not None:
                self.leave(RETURNED, node, found=found)
        elif kind is cst.Expr:
            self.expression_statement(node.value)
        elif kind in (cst.Global, cst.Nonlocal):
            if any(name.name.value in self.names for name in node.names):
                self.leave(STORED, node)
        elif kind is cst.Del:
            pass
        elif self.mentions_tainted(node) or self.holds_pad_call(node):
            self.value_of_children(node)

    def expression_statement(self, node: cst.BaseExpression) -> None:
        if isinstance(node, (cst.Yield, cst.Await)) and node.value is not None and not isinstance(node.value, cst.From):
            found = self.value(node.value)
            if found is not None:
                self.leave(RETURNED, node, found=found)
            return
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            receiver = node.func.value
            put = _padded_of([self.value(arg.value) for arg in node.args]) if node.func.attr.value in _CONTAINER_METHODS else None
            if put is not None:
                if isinstance(receiver, cst.Name):
                    # `outputs.append(step)`: the list holds it now
                    self.names[receiver.value] = _padded_of([self.names.get(receiver.value), put])
                else:
                    self.leave(STORED, node, found=put)  # `self.cache.append(out)`
                return
            arguments = [self.value(arg.value) for arg in node.args] if _root_name(receiver) in ("self", "cls") else []
            if any(arguments):
                escape = self.follow(node, arguments)
                if escape is not None and escape.kind != RETURNED:
                    # A helper or submodule that keeps what it is given (or may: one the walk cannot follow)
                    self.leave(escape.kind, node, escape.reduction, escape.negative_dim)
                return  # what it returns, if anything, is dropped
        self.value(node)

    def value_of_children(self, node: cst.CSTNode) -> None:
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                self.value(child)

    def bind(self, target: cst.CSTNode, found: Optional[str], statement: cst.CSTNode) -> None:
        kind = type(target)
        if kind is cst.Name:
            if found is None:
                self.names.pop(target.value, None)
            else:
                self.names[target.value] = found
                if found == PRODUCT:
                    self.product_of[target.value] = self.product
        elif kind in (cst.Tuple, cst.List):
            for index, element in enumerate(target.elements):
                # `out, lengths = pad_packed_sequence(...)`: only the first is padded.
                part = (PADDED if index == 0 else None) if found == PAIR else found
                self.bind(element.value, part, statement)
        elif kind is cst.StarredElement:
            self.bind(target.value, found, statement)
        elif found is not None:
            root = _root_name(target)
            if kind is cst.Subscript and root is not None and root not in ("self", "cls") and isinstance(target.value, cst.Name):
                self.names[root] = _padded_of([self.names.get(root), found])  # `steps[t] = out[:, t]`: a local container
            else:
                self.leave(STORED, statement, found=found)

    # -- expressions --------------------------------------------------------------------------------
    def value(self, node: cst.CSTNode) -> Optional[str]:
        """PADDED, PAIR or None: what the expression's value holds. Pooling reductions are reported here."""
        if self.escape is not None:
            return None
        if node is self.pad_call:
            for arg in node.args:
                self.value(arg.value)
            return self.seed
        kind = type(node)
        if kind is cst.Name:
            found = self.names.get(node.value)
            if found == PRODUCT:
                self.product = self.product_of.get(node.value, self.product)
            return found
        if kind is cst.Attribute:
            found = self.value(node.value)
            return None if found is None or node.attr.value in _SCALAR_ATTRIBUTES else _padded(found)
        if kind is cst.Subscript:
            return self.subscript(node)
        if kind is cst.Call:
            return self.call(node)
        if kind in (cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            if self.holds_pad_call(node):
                self.leave(UNFOLLOWED, node)
                return None
            return PADDED if self.mentions_tainted(node) else None
        if kind is cst.NamedExpr:
            found = self.value(node.value)
            self.bind(node.target, found, node)
            return found
        if kind in (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.ConcatenatedString, cst.FormattedString):
            return None
        if kind is cst.BinaryOperation and isinstance(node.operator, cst.MatrixMultiply):
            return self.through_product("@") if self.value_in(node) else None
        # Operators, containers, conditional expressions: padded when any part is.
        return self.value_in(node)

    def value_in(self, node: cst.CSTNode) -> Optional[str]:
        """The value of the expressions below a node that is not one itself (a dict element, a comprehension)."""
        parts = []
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                parts.append(self.value(child))
            elif isinstance(child, cst.CSTNode):
                parts.append(self.value_in(child))
        return _padded_of(parts)

    def subscript(self, node: cst.Subscript) -> Optional[str]:
        found = self.value(node.value)
        for element in node.slice:
            self.value_in(element)
        if found is None:
            return None
        if found == PAIR:
            index = _integer_index(node)
            return PADDED if index == 0 else None if index is not None else PADDED
        # One step of the time dimension (`out[:, t]`) has no time dimension left.
        for position, element in enumerate(node.slice):
            if isinstance(element.slice, cst.Index) and _is_scalar(element.slice.value):
                if self.time_dim is not None and position == self.time_dim:
                    return None
        return _padded(found)

    def call(self, node: cst.Call) -> Optional[str]:
        func = node.func
        arguments = [self.value(arg.value) for arg in node.args]
        if isinstance(func, cst.Attribute):
            receiver = self.value(func.value)
            method = func.attr.value
            if receiver is not None:
                if method in _SCALAR_METHODS:
                    return None
                if method in _FRESH_TENSOR_METHODS:
                    # `out.new_zeros(batch, steps, dim)`: a new tensor of the sizes given, as long as the
                    # replica's padded length only when a size measures the padded tensor's time dimension
                    sizes = creation_sizes(node, method) if method in _CREATOR_METHODS else [
                        arg.value for arg in node.args if arg.keyword is None]
                    return PADDED if any(self.measures_padded_time(size) for size in sizes) or not sizes else None
                if method == "gather" and self._along_time(call_argument(node, 0, "dim")):
                    return None  # `out.gather(1, positions)`: read at given steps, as long as the index
                if method in _REDUCTIONS:
                    return self.reduction(node, method, call_argument(node, 0, "dim"), receiver)
            if method in _PRODUCTS and (receiver is not None or any(arguments)):
                # `torch.bmm(weights, states)`, or a tensor's own method: `weights.bmm(states)`
                return self.through_product(self.qualified(node) or f".{method}()")
            if receiver is not None:
                return _padded(receiver)
        else:
            self.value(func)
        name = self.qualified(node)
        if self.is_repack(name):
            return None  # packed again: what it returns is a PackedSequence, not a padded tensor
        if name in _CONCATENATIONS and self.pads_out_to_an_input_length(node):
            return None  # as long as an input, whatever the replica's longest sequence
        if _is_reduced_loss(name, node):
            return None  # a loss over the batch: one number, whatever the padding (ignore_index skips it)
        if not any(arguments):
            return None
        if isinstance(func, cst.Name) and func.value in _NOT_TENSORS and name in (None, f"builtins.{func.value}"):
            return None
        function = name.rsplit(".", 1)[-1] if name is not None and name.startswith("torch.") else None
        if function == "gather" and arguments[:1] in ([PADDED], [PRODUCT]) and self._along_time(
                call_argument(node, 1, "dim")):
            return None  # torch.gather(out, 1, positions): the steps the index names, as many as it has
        if function in _REDUCTIONS and arguments[:1] in ([PADDED], [PRODUCT]):  # torch.mean(out, 1)
            return self.reduction(node, function, call_argument(node, 1, "dim"), arguments[0])
        if function in _PRODUCTS:
            return self.through_product(name)
        if isinstance(func, cst.Attribute) and _root_name(func.value) in ("self", "cls"):
            escape = self.follow(node, arguments)
            if escape is None:
                return None  # the helper or submodule drops the time dimension before anything leaves it
            if escape.kind in (RETURNED, UNFOLLOWED):
                return _padded_of(arguments)
            self.leave(escape.kind, node, escape.reduction, escape.negative_dim)
            return None
        return _padded_of(arguments)  # a layer, an activation, torch.cat: the time dimension is still there

    def follow(self, call: cst.Call, arguments: List[Optional[str]]) -> Optional[Escape]:
        """Where the padded tensor goes in the project function a `self.<name>(...)` call runs: that walk's
        escape (RETURNED: it comes back out), None when it drops the time dimension there, UNFOLLOWED when
        the function is not the project's or is too many calls deep."""
        callee = self.callees(call) if self.callees is not None and self.depth < _MAX_CALL_DEPTH else None
        if callee is None or not isinstance(callee.function.body, cst.IndentedBlock):
            return Escape(UNFOLLOWED, call)
        bound = bind_arguments(call, callee.function)
        by_expression = {id(arg.value): found for arg, found in zip(call.args, arguments)}
        inner = _Walk(callee.function, None, self.time_dim, self.padding_free, callee.qualified, self.is_repack,
                      callee.callees, self.depth + 1)
        for parameter, expression in bound.items():
            found = by_expression.get(id(expression))
            if found is not None:
                inner.names[parameter] = found
                if found == PRODUCT:
                    inner.product_of[parameter] = self.product
        if not inner.names:
            return Escape(UNFOLLOWED, call)  # passed in a way the binding cannot place (`*args`)
        inner.statements(callee.function.body.body)
        return inner.escape

    def _along_time(self, dim: Optional[cst.BaseExpression]) -> bool:
        return self.time_dim is not None and _integer_value(dim) == self.time_dim

    def through_product(self, name: str) -> str:
        self.product = name
        return PRODUCT

    def reduction(self, node: cst.Call, method: str, dim: Optional[cst.BaseExpression], found: str) -> Optional[str]:
        over = _integer_value(dim) if dim is not None else None
        if dim is not None and over is not None and over >= 0 and self.time_dim is not None and over != self.time_dim:
            return _padded(found)  # over another dimension: the time dimension is still there
        if method in self.padding_free:
            # Over time (or everything) the padding adds nothing; over an unknown dimension the time
            # dimension may still be there.
            return None if dim is None or (over is not None and over == self.time_dim) else _padded(found)
        self.leave(POOLED, node, method, over if over is not None and over < 0 else None)
        return None

    # -- padding out to an input's length -----------------------------------------------------------
    def flow(self) -> FunctionFlow:
        if self._flow is None:
            self._flow = FunctionFlow(self.function)
        return self._flow

    def latest(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """What a name read here was last set to by a plain assignment (the node itself otherwise)."""
        for _ in range(3):
            site = self.flow().binding_read(node) if isinstance(node, cst.Name) else None
            if site is None or site.value is None or site.tuple_index is not None:
                return node
            node = site.value
        return node

    def measured_length(self, node: cst.BaseExpression) -> Optional[Tuple[str, int]]:
        """(tensor name, dimension) for `x.size(1)`, `x.shape[1]`, or a name set to one of them or unpacked
        from `x.size()` / `x.shape` (`batch, steps = mask.size()`)."""
        site = self.flow().binding_read(node) if isinstance(node, cst.Name) else None
        if site is not None and site.value is not None and site.tuple_index is not None:
            whole = _whole_shape_of(site.value)
            return (whole, site.tuple_index) if whole is not None else None
        node = self.latest(node)
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size"
                and isinstance(node.func.value, cst.Name) and len(node.args) == 1):
            dim = _integer_value(node.args[0].value)
            return (node.func.value.value, dim) if dim is not None else None
        if isinstance(node, cst.Subscript) and _integer_index(node) is not None:
            whole = _whole_shape_of(node.value)
            return (whole, _integer_index(node)) if whole is not None else None
        return None

    def measures_padded_time(self, node: cst.BaseExpression) -> bool:
        """A size that is (or may be) the padded tensor's own time length: `out.size(1)`, `steps` from
        `batch, steps, dim = out.size()`; sizes the walk cannot read count too."""
        measured = self.measured_length(node)
        if measured is None:
            return not _is_scalar_size(self.latest(node))
        return measured[0] in self.names and (self.time_dim is None or measured[1] == self.time_dim)

    def length_made_equal(self, test: cst.BaseExpression) -> Tuple[Optional[str], Optional[str]]:
        """For `if steps != mask.size(1):` (or `<`), where `steps` is the padded tensor's own time length and
        the other side an input's: the name whose length equals the input's where the test is false; for
        `==`, where it is true. (None, None) for any other test."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None, None
        operator = test.comparisons[0].operator
        left, right = test.left, test.comparisons[0].comparator
        difference = self.latest(left)
        if (_integer_value(right) == 0 and isinstance(difference, cst.BinaryOperation)
                and isinstance(difference.operator, cst.Subtract)):
            left, right = difference.left, difference.right  # `missing = total - out.size(1)`, `if missing > 0:`
        sides = (self.measured_length(left), self.measured_length(right))
        for own, other in (sides, sides[::-1]):
            if (own is not None and other is not None and own[0] in self.names and other[0] not in self.names
                    and (self.time_dim is None or own[1] == self.time_dim)):
                if isinstance(operator, (cst.NotEqual, cst.LessThan, cst.GreaterThan)):
                    return None, own[0]
                if isinstance(operator, cst.Equal):
                    return own[0], None
        return None, None

    def pads_out_to_an_input_length(self, call: cst.Call) -> bool:
        """`torch.cat([out, zeros], 1)` where `zeros` has `mask.size(1) - out.size(1)` steps (AllenNLP's
        wrapper pads its output back so): the result is as long as an input, on every replica alike."""
        parts = call_argument(call, 0, "tensors")
        dim = _integer_value(call_argument(call, 1, "dim"))
        if self.time_dim is None or dim != self.time_dim or not isinstance(parts, (cst.List, cst.Tuple)):
            return False
        if len(parts.elements) != 2 or not isinstance(parts.elements[0].value, cst.Name):
            return False
        padded, filler = (element.value for element in parts.elements)
        made = self.latest(filler)
        while (isinstance(made, cst.Call) and isinstance(made.func, cst.Attribute)
               and made.func.attr.value in _SAME_SHAPE_METHODS):
            made = self.latest(made.func.value)  # `torch.zeros(...).type(out.data.type())`: the same zeros
        creator = tensor_creator(made, self.qualified(made)) if isinstance(made, cst.Call) else None
        if padded.value not in self.names or creator is None:
            return False
        sizes = creation_sizes(made, creator)
        if len(sizes) <= self.time_dim:
            return False
        steps = self.latest(sizes[self.time_dim])
        if not (isinstance(steps, cst.BinaryOperation) and isinstance(steps.operator, cst.Subtract)):
            return False
        full, own = self.measured_length(steps.left), self.measured_length(steps.right)
        # The full length is measured on an input: a name the function has not set by then (a parameter),
        # not a tensor it builds, which may be as long as this replica's longest sequence.
        seq = self.flow().seq_of.get(call)
        return (own == (padded.value, self.time_dim) and full is not None and seq is not None
                and self.flow().binding_before(full[0], seq) is None)

    # -- helpers ------------------------------------------------------------------------------------
    def mentions_tainted(self, node: cst.CSTNode) -> bool:
        return any(found.value in self.names for found in iter_nodes(node, (cst.Name,)))

    def holds_pad_call(self, node: cst.CSTNode) -> bool:
        return any(found is self.pad_call for found in iter_nodes(node, (cst.Call,)))


# Tensor methods whose result has the shape of the tensor they are called on (a cast, a move, a copy).
_SAME_SHAPE_METHODS = frozenset({"type", "type_as", "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long",
                                 "int", "bool", "byte", "detach", "contiguous", "clone", "requires_grad_"})


def _whole_shape_of(node: cst.BaseExpression) -> Optional[str]:
    """The tensor name of `x.size()` or `x.shape`."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size"
            and not node.args and isinstance(node.func.value, cst.Name)):
        return node.func.value.value
    if isinstance(node, cst.Attribute) and node.attr.value == "shape" and isinstance(node.value, cst.Name):
        return node.value.value
    return None


def tensor_creator(call: cst.Call, name: Optional[str]) -> Optional[str]:
    """"zeros", "full", "new_zeros" or "new_full" for a call that makes a tensor to be filled in; `name`:
    the call's qualified name (None for a tensor's own method)."""
    if name in _CREATORS:
        return name.rsplit(".", 1)[-1]
    func = call.func
    if name is None and isinstance(func, cst.Attribute) and func.attr.value in _CREATOR_METHODS:
        return func.attr.value
    return None


def creation_sizes(call: cst.Call, creator: str) -> List[cst.BaseExpression]:
    """The sizes, dimension by dimension, of the tensor a tensor_creator call makes: given one by one
    (`x.new_zeros(b, t, d)`) or as a tuple (`torch.zeros((b, t, d))`, `size=`, always for the `full`s);
    [] when they cannot be read."""
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    keyword = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "size"), None)
    if creator in FILLED_CREATORS or len(positional) == 1 or keyword is not None:
        first = keyword if keyword is not None else (positional[0] if positional else None)
        return [element.value for element in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else []
    return positional


def _padded(found: str) -> str:
    """What an operation on a padded value returns: a product's result stays one, anything else is padded."""
    return PRODUCT if found == PRODUCT else PADDED


def _is_scalar_size(node: cst.BaseExpression) -> bool:
    """A size that is no tensor's length: a number, an attribute (`self.hidden_size`), arithmetic of those."""
    if isinstance(node, (cst.Integer, cst.Attribute)):
        return True
    if isinstance(node, cst.BinaryOperation):
        return _is_scalar_size(node.left) and _is_scalar_size(node.right)
    return False


def _merged(one: Dict[str, str], other: Dict[str, str]) -> Dict[str, str]:
    """What each name holds after one of two branches ran."""
    merged = {}
    for name in {**one, **other}:
        first, second = one.get(name), other.get(name)
        merged[name] = first if first == second else _padded_of([first, second])
    return merged


def _padded_of(parts: Iterable[Optional[str]]) -> Optional[str]:
    """What an expression made of these parts holds: the padded tensor itself outweighs a product of it."""
    found = {_padded(part) for part in parts if part is not None}
    return PADDED if PADDED in found else PRODUCT if found else None


def _is_reduced_loss(name: Optional[str], call: cst.Call) -> bool:
    if name is None or not name.startswith("torch.nn.functional."):
        return False
    function = name.rsplit(".", 1)[1]
    if not (function.endswith("_loss") or function in _LOSSES):
        return False
    reduction = call_argument(call, 99, "reduction")  # by keyword only: its position differs per loss
    return reduction is None or (isinstance(reduction, cst.SimpleString) and reduction.evaluated_value in ("mean", "sum"))


def _root_name(node: cst.CSTNode) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _integer_value(node: Optional[cst.CSTNode]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _integer_value(node.expression)
        return None if inner is None else -inner
    return None


def _integer_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _integer_value(node.slice[0].slice.value)
    return None


def _is_scalar(node: cst.BaseExpression) -> bool:
    """An index that picks given positions: a number, a name (a loop counter, the positions of tokens), or
    arithmetic on them. Not `-1`: the last padded step is a different step on each replica."""
    if isinstance(node, (cst.Integer, cst.Name)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Minus) and _is_scalar(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _is_scalar(node.left) and _is_scalar(node.right)
    return False


__all__ = ["Escape", "FILLED_CREATORS", "RETURNED", "STORED", "POOLED", "UNFOLLOWED", "creation_sizes", "tensor_creator",
           "where_unpacked_goes"]
