"""DPR003: `pack_padded_sequence` lengths left on the GPU in a forward pass.

## What it does
Flags calls of `torch.nn.utils.rnn.pack_padded_sequence` (under any import spelling) in `forward`, or
in a method `forward` reaches, whose `lengths` come from a tensor parameter of `forward` (directly,
through helper methods' parameters, through tensor methods such as `mask.sum(1)` or
`lengths.long()`, or through comparisons, arithmetic and torch functions that keep the device:
`(tokens != pad).sum(1)`, `(lengths + 1) // 2`, `torch.div(lengths, 2)`) without a conversion to the
CPU (`.cpu()`, `.to("cpu")`, `.tolist()`...). A parameter is a list, not a tensor, when its annotation
or default says so, or when the classes that hold the module (in any file of the project) call it, and
every such call passes a Python list (`self.text(q, list(q_len))`). A module that nothing wraps or builds
as a root, run only by the classes holding it, is not flagged when every such call passes the lengths on
the CPU (`self.chars(x, lengths.cpu())`): DataParallel scatters only the wrapped module's arguments.

With `--scope wrapped`, it also flags lengths that are a list parameter of the forward of a class
DataParallel runs.

## Why is this bad?
`nn.DataParallel` scatters every tensor argument of the wrapped module's `forward` onto the replicas'
GPUs, and `pack_padded_sequence` only takes lengths on the CPU:

    RuntimeError: 'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor

A model that works on one device, with the lengths kept on the CPU by the training loop, fails as soon
as it is wrapped. A Python list of lengths is not split by the scatter at all: every replica receives
the whole batch's lengths for its slice of the batch, and packing fails or mixes up sequences.

## Example
```python
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, padded, lengths):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return h_n[-1]
```

## Use instead
```python
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, padded, lengths):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return h_n[-1]
```

## Preview
By default only lengths the code shows to be a tensor are reported (annotated as one, or used as one:
`lengths.max()`, `mask.sum(1)`, `torch.div(lengths, 2)`). A parameter nothing in the code types is
reported only with `--preview`: on code outside the labelled corpus most such parameters were lists the
callers build in other files (benchmarks/review.tsv), which `pack_padded_sequence` takes on the CPU.

## Known problems
DPR003 follows lengths back to a parameter of `forward` through assignments, tensor methods
(`mask.sum(1)`, `lengths.long()`), comparisons, arithmetic and torch functions that keep the device
(`(tokens != pad).sum(1)`, `(lengths + 1) // 2`, `torch.div`, `torch.clamp`), closures defined in
`forward` and the arguments of helper methods `forward` calls; lengths that come from an attribute of an
object (`batch.lengths`), a free function, an augmented assignment (`lengths -= 1`) or arithmetic
between two parameters are not followed. A module that nothing wraps or builds as a root is judged by
what the classes holding it (in any file) pass its `forward`: lists or `.cpu()` lengths from every one
of them are not flagged; callers that are scripts or functions rather than classes are not read.

## Fix safety
The fix appends `.cpu()` to the lengths argument. On a tensor already on the CPU, `.cpu()` returns
the tensor itself, so on one device nothing changes. It is safe when the parameter is known to be a
tensor (annotated as one, or used as one: `lengths.max()`, `mask.sum(1)`), and unsafe when nothing in
the code says so: were it a list, `.cpu()` would raise; `--fix` applies the unsafe form only with
`--unsafe-fixes` (or `unsafe-fixes = true`). List parameters (annotated `List[int]`, or
with a list default) get no fix: the caller must pass a tensor, which changes its contract.

## How to suppress
Put `# noqa: DPR003` on the reported line (the line where the call starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Set

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import FunctionFlow
from ..analysis.forward_path import ForwardPath, PackCall
from ..analysis.modules import bind_arguments, call_argument, is_atomic, iter_nodes, self_name, string_value
from ..analysis.traversal import children
from ..findings import AppendMethodCall, Fix, Violation
from .base import Example, Rule

# Methods whose result is no longer a tensor on the replica's device (or not a tensor at all).
_LEAVES_THE_DEVICE = frozenset({"cpu", "tolist", "numpy", "item", "size", "dim", "numel", "nelement", "stride"})
# List methods: a parameter used only through these may be a list.
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse",
                           "copy", "clear"})
_LIST_ANNOTATIONS = ("List", "list", "Sequence", "Tuple", "tuple", "Iterable")
# torch functions whose result stays on the device of their first argument (`torch.div(lengths, 2)`).
_TORCH_FUNCTIONS_KEEPING_THE_DEVICE = frozenset({
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
    "fmod", "clamp", "clip", "clamp_min", "clamp_max", "ceil", "floor", "round", "trunc", "abs", "neg",
    "sum", "count_nonzero", "cumsum", "ne", "not_equal", "eq", "gt", "ge", "lt", "le", "sort", "squeeze",
    "flatten", "reshape",
})
# Operators whose result is on the device of their tensor operand: `lengths - 1`, `(tokens != pad)`.
_ARITHMETIC_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo)
_COMPARISON_OPERATORS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                         cst.GreaterThanEqual)

_MESSAGE = (
    "pack_padded_sequence() gets lengths from the forward parameter `{param}` without moving them to the CPU: "
    "DataParallel scatters tensor arguments onto each replica's GPU, and pack_padded_sequence refuses lengths "
    "that are not a CPU int64 tensor; pass {shown}.cpu()"
)
_LIST_MESSAGE = (
    "pack_padded_sequence() gets lengths from `{param}`, a list parameter of forward: DataParallel does not split "
    "lists, so every replica receives the whole batch's lengths for its slice of the batch; pass the lengths as a "
    "tensor and call .cpu() on it here"
)


@dataclass(frozen=True)
class _Origin:
    """The forward parameter the lengths come from, and how the argument reached the pack call."""

    param: cst.Param
    tensor_methods: bool  # a tensor method was applied on the way (`mask.sum(1)`): it is a tensor


class PackLengthsOnGpu(Rule):
    code = "DPR003"
    name = "pack-padded-sequence-lengths-on-gpu"
    summary = "pack_padded_sequence lengths from a forward parameter left on the GPU"

    valid_examples = (
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def forward(self, x, lengths):\n"
        "        return pack_padded_sequence(x, lengths.cpu(), batch_first=True)\n",
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def forward(self, x, mask):\n"
        "        lengths = mask.sum(1).to('cpu')\n"
        "        return pack_padded_sequence(x, lengths, batch_first=True)\n",
        # Arithmetic on lengths already on the CPU stays there.
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def forward(self, x, lengths):\n"
        "        return pack_padded_sequence(x, (lengths.cpu() + 1) // 2, batch_first=True)\n",
        # Not in a forward pass: a collate function runs in the data loader, never on a replica.
        "from torch.nn.utils.rnn import pack_padded_sequence\n"
        "def collate(padded, lengths):\n"
        "    return pack_padded_sequence(padded, lengths, batch_first=True)\n",
    )
    invalid_examples = (
        Example(
            "import torch\n"
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths: torch.Tensor):\n"
            "        return pack_padded_sequence(x, lengths, batch_first=True)\n",
            "import torch\n"
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths: torch.Tensor):\n"
            "        return pack_padded_sequence(x, lengths.cpu(), batch_first=True)\n",
        ),
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, mask):\n"
            "        return self.encode(x, mask.sum(-1))\n"
            "    def encode(self, x, lengths):\n"
            "        return pack_padded_sequence(x, lengths, enforce_sorted=False)\n",
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, mask):\n"
            "        return self.encode(x, mask.sum(-1))\n"
            "    def encode(self, x, lengths):\n"
            "        return pack_padded_sequence(x, lengths.cpu(), enforce_sorted=False)\n",
        ),
        # Counting, comparing and arithmetic keep the lengths on the device of the tensor they come from.
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, tokens, frames):\n"
            "        lengths = (tokens != 0).sum(1)\n"
            "        return pack_padded_sequence(frames, (lengths + 1) // 2, batch_first=True)\n",
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, tokens, frames):\n"
            "        lengths = (tokens != 0).sum(1)\n"
            "        return pack_padded_sequence(frames, ((lengths + 1) // 2).cpu(), batch_first=True)\n",
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        seen: Set[cst.Call] = set()
        flows: Dict[cst.CSTNode, FunctionFlow] = {}
        for cls in analysis.checked_classes:
            path = analysis.forward_path(cls)
            wrapped = analysis.context.scope == "wrapped" and analysis.context.wrap_site(analysis.model.qualname(cls.node))
            for event in path.events:
                if not isinstance(event, PackCall) or event.call in seen:
                    continue
                seen.add(event.call)
                violation = self._check_call(analysis, path, event, flows, bool(wrapped), analysis.scope_note(cls))
                if violation is not None:
                    yield violation

    def _check_call(self, analysis: FileAnalysis, path: ForwardPath, event: PackCall, flows: Dict,
                    wrapped: bool, note: str) -> Optional[Violation]:
        lengths = _lengths_argument(event.call)
        if lengths is None:
            return None
        if event.function is event.method:
            origin = _trace(path, event.method, lengths, flows, depth=0)
        else:
            # `def pack(x): return pack_padded_sequence(x, lengths)` inside the method: the lengths are
            # the method's own when the nested function neither binds the name nor the method rebinds it.
            origin = _trace_closure(path, event, lengths, flows)
        if origin is None:
            return None
        param = origin.param
        name = param.name.value
        kind = _parameter_kind(analysis, path.forward, param, origin.tensor_methods)
        qualname = analysis.model.qualname(path.cls.node)
        held = analysis.evaluated.holders_pass_the_cpu(qualname, name, analysis.context.files_building(qualname))
        if held is not None and not (wrapped or analysis.root_site(path.cls) or analysis.direct_wrap_site(path.cls)):
            return None  # only run by modules holding it, which pass the lengths on the CPU (a scatter passes none)
        if kind == "unknown" and held == "list":
            kind = "list"
        if kind == "list":
            if not wrapped:
                return None  # only known to break where DataParallel runs the class
            return Violation(self.code, _LIST_MESSAGE.format(param=name) + note, event.call)
        if kind == "unknown" and not self.preview_modes:
            return None  # a parameter nothing shows to be a tensor: in preview (its callers often pass lists)
        shown = analysis.module.code_for_node(lengths).strip()
        message = _MESSAGE.format(param=name, shown=shown if is_atomic(lengths) else f"({shown})")
        fix = Fix((AppendMethodCall(lengths, "cpu", shown),), safe=kind == "tensor")
        return Violation(self.code, message + note, event.call, fix)


def _lengths_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    if any(arg.star for arg in call.args):
        return None  # *args or **kwargs may carry the lengths
    return call_argument(call, 1, "lengths")


def _flow(function: cst.FunctionDef, flows: Dict) -> FunctionFlow:
    if function not in flows:
        flows[function] = FunctionFlow(function)
    return flows[function]


def _trace(path: ForwardPath, method: cst.FunctionDef, expr: cst.BaseExpression, flows: Dict, depth: int,
           before: Optional[int] = None, tensor_methods: bool = False) -> Optional[_Origin]:
    """The forward parameter `expr` (in `method`) is computed from while staying a tensor on the same
    device, or None when it is converted, comes from elsewhere, or cannot be followed."""
    if depth > 12:
        return None
    flow = _flow(method, flows)
    me = self_name(method)
    if isinstance(expr, cst.Call):
        first_argument = _torch_function_argument(path, method, expr)
        if first_argument is not None:
            # torch.div(list, 2) raises: the argument is a tensor.
            return _trace(path, method, first_argument, flows, depth + 1, flow.seq_of.get(expr, before),
                          tensor_methods=True)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if _leaves_the_device(expr):
            return None
        receiver = expr.func.value
        if isinstance(receiver, cst.Name) and receiver.value == me:
            return None  # self.method(...): not a tensor method
        return _trace(path, method, receiver, flows, depth + 1, flow.seq_of.get(expr, before), tensor_methods=True)
    if isinstance(expr, cst.Subscript):
        if not tensor_methods and _constant_index(expr):
            return None  # `batch[1]`: a member of a tuple or list parameter, whatever it is
        return _trace(path, method, expr.value, flows, depth + 1, before, tensor_methods)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC_OPERATORS):
        return _trace_operands(path, method, expr.left, expr.right, flows, depth, before, tensor_methods)
    if (isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1
            and isinstance(expr.comparisons[0].operator, _COMPARISON_OPERATORS)):
        return _trace_operands(path, method, expr.left, expr.comparisons[0].comparator, flows, depth, before,
                               tensor_methods)
    if not isinstance(expr, cst.Name) or expr.value == me:
        return None
    seq = flow.seq_of.get(expr, before)
    if seq is None:
        return None
    site = flow.binding_before(expr.value, seq)
    if site is not None:
        if site.value is None or (site.tuple_index is not None and not isinstance(site.value, cst.Call)):
            return None  # a loop target, `with ... as`, or unpacking something that is not a tensor method's result
        return _trace(path, method, site.value, flows, depth + 1, site.seq, tensor_methods)
    return _from_parameter(path, method, _parameter(method, expr.value), flows, depth, tensor_methods)


def _trace_operands(path: ForwardPath, method: cst.FunctionDef, left: cst.BaseExpression,
                    right: cst.BaseExpression, flows: Dict, depth: int, before: Optional[int],
                    tensor_methods: bool) -> Optional[_Origin]:
    """The origin of `left <op> right` when one side comes from a forward parameter and the other from
    none (`lengths - 1`, `tokens != self.pad`), or both from the same one. Two different parameters
    (`lengths - offset`) are left alone: nothing says which, if either, is the tensor."""
    # Each side is traced on its own: what is applied to the result says nothing about the other operand.
    left_origin = _tensor_operand(_trace(path, method, left, flows, depth + 1, before))
    right_origin = _tensor_operand(_trace(path, method, right, flows, depth + 1, before))
    if left_origin is not None and right_origin is not None and left_origin.param is not right_origin.param:
        return None
    found = [origin for origin in (left_origin, right_origin) if origin is not None]
    if not found:
        return None
    return _Origin(found[0].param, tensor_methods or any(origin.tensor_methods for origin in found))


def _tensor_operand(origin: Optional[_Origin]) -> Optional[_Origin]:
    """None for a parameter with a number default (`pad_index=0`): a Python number, on no device."""
    if origin is not None and not origin.tensor_methods and isinstance(origin.param.default, (cst.Integer, cst.Float)):
        return None
    return origin


def _torch_function_argument(path: ForwardPath, method: cst.FunctionDef, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The first argument of `torch.div(lengths, 2)` and the like, whose device the result keeps; None for
    any other call."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name not in _TORCH_FUNCTIONS_KEEPING_THE_DEVICE:
        return None  # checked first: resolving names costs more than a set lookup
    scope = path.model.resolver.scopes.get(method)
    if scope is None or path.model.resolver.qualified_name(func, scope) != f"torch.{name}":
        return None
    argument = call_argument(call, 0, "input")
    if argument is None or any(arg.star for arg in call.args):
        return None
    return argument


def _trace_closure(path: ForwardPath, event: PackCall, lengths: cst.BaseExpression, flows: Dict) -> Optional[_Origin]:
    if not isinstance(lengths, cst.Name) or not isinstance(event.function, (cst.FunctionDef, cst.Lambda)):
        return None
    inner = _flow(event.function, flows)
    if lengths.value in inner.parameters or lengths.value in inner.bindings:
        return None
    if lengths.value in _flow(event.method, flows).bindings:
        return None  # rebound in the method: which value the nested function sees depends on when it runs
    return _from_parameter(path, event.method, _parameter(event.method, lengths.value), flows, 0, False)


def _from_parameter(path: ForwardPath, method: cst.FunctionDef, param: Optional[cst.Param], flows: Dict, depth: int,
                    tensor_methods: bool) -> Optional[_Origin]:
    """The forward parameter a parameter of `method` comes from: itself in forward, else what the
    helper's caller passes for it, traced on."""
    if param is None:
        return None
    if method is path.forward:
        return _Origin(param, tensor_methods)
    entry = path.entries.get(method)
    if entry is None:
        return None
    argument = bind_arguments(entry.call, method).get(param.name.value)
    if argument is None:
        return None
    return _trace(path, entry.caller, argument, flows, depth + 1, None, tensor_methods)


def _leaves_the_device(call: cst.Call) -> bool:
    method = call.func.attr.value
    if method in _LEAVES_THE_DEVICE:
        return True
    if method == "to":
        return any(_names_the_cpu(arg.value) for arg in call.args if arg.keyword is None or arg.keyword.value == "device")
    if method == "type":
        # `.type(torch.LongTensor)` names a CPU tensor type: the copy is on the CPU.
        return any(_names_a_cpu_tensor_type(arg.value) for arg in call.args)
    return False


def _names_a_cpu_tensor_type(node: cst.BaseExpression) -> bool:
    """torch.LongTensor, "torch.IntTensor"; not torch.cuda.LongTensor nor a dtype."""
    text = string_value(node)
    if text is None and isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        text = f"{node.value.value}.{node.attr.value}"
    return text is not None and text.startswith("torch.") and text.endswith("Tensor") and text.count(".") == 1


def _names_the_cpu(node: cst.BaseExpression) -> bool:
    """"cpu", torch.device("cpu"), torch.device("cpu", 0)."""
    text = string_value(node)
    if text is not None:
        return text.split(":")[0] == "cpu"
    if isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name)) and node.args:
        func_name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
        return func_name == "device" and _names_the_cpu(node.args[0].value)
    return False


def _parameter(method: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    params = method.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param
    return None


def _parameter_kind(analysis: FileAnalysis, forward: Optional[cst.FunctionDef], param: cst.Param,
                    tensor_methods: bool) -> str:
    """"list", "tensor" (known to be one), or "unknown"."""
    if param.annotation is not None:
        text = analysis.module.code_for_node(param.annotation.annotation)
        if "Tensor" in text:
            return "tensor"
        if any(word in text for word in _LIST_ANNOTATIONS):
            return "list"
    if isinstance(param.default, (cst.List, cst.Tuple)):
        return "list"
    if forward is not None and _tested_for_truth(forward, param.name.value):
        return "list"  # `if lengths:` raises for a tensor of more than one element: the code means a list
    if tensor_methods or (forward is not None and _used_as_tensor(forward, param.name.value)):
        return "tensor"
    return "unknown"


def _constant_index(node: cst.Subscript) -> bool:
    return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and isinstance(
        node.slice[0].slice.value, cst.Integer)


def _tested_for_truth(function: cst.FunctionDef, name: str) -> bool:
    """Whether the function tests the name's truth (`if lengths:`, `not lengths`, `lengths and ...`)."""
    for node in iter_nodes(function.body, (cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation)):
        if isinstance(node, (cst.If, cst.While, cst.IfExp)):
            tested = [node.test]
        elif isinstance(node, cst.UnaryOperation):
            tested = [node.expression] if isinstance(node.operator, cst.Not) else []
        else:
            tested = [node.left, node.right]
        if any(isinstance(test, cst.Name) and test.value == name for test in tested):
            return True
    return False


def _used_as_tensor(function: cst.FunctionDef, name: str) -> bool:
    """`lengths.max()`, `lengths.size(0)`, `lengths.device`: attributes lists do not have."""
    stack = [function.body]
    while stack:
        node = stack.pop()
        if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == name
                and node.attr.value not in _LIST_METHODS):
            return True
        stack.extend(children(node))
    return False
