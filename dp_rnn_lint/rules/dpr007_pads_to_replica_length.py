"""DPR007: padding to a replica-local length in a DataParallel-wrapped forward.

## What it does
Flags `pad_sequence(...)` in the `forward` of a class that `nn.DataParallel` wraps directly (found by the
project index) when the padded result leaves `forward` with its padded time dimension: returned (alone or
inside a tuple, list or dict), stored on the module, or pooled over time in a way that counts the
padding (a mean or a maximum). Packed again, or padded out before it leaves (`F.pad`, or `torch.cat`
with zeros as many steps long as an input's length minus its own), it is not flagged. A matrix product
of it (`torch.bmm`, `torch.matmul`, `@`, `torch.einsum`) that leaves is flagged with both readings in
the message, since which one holds depends on shapes the linter does not follow: the product keeps the
replica's length, or, run over time as attention pooling does, it weighs the replica's own padding (a
softmax over the padded steps gives them weight). A call of a function that returns what `pad_sequence`
makes (`return pad_sequence(rows, batch_first=True)`, in the file or imported from the project) counts as
the `pad_sequence` call itself.

Padding by hand is flagged the same way: `torch.zeros(...)`, `torch.full(...)`, `x.new_zeros(...)` or
`x.new_full(...)` in that `forward` with a dimension that is a maximum taken there over what the
replica was given (`lengths.max()`, `max(lengths)`, `int(...)` or `.item()` of one, or a name bound to
one), filled in and then leaving `forward` as above. A maximum over module state (`max(self.sizes)`)
or a size read from an input (`words.size(1)`) is the same on every replica, and is not flagged.

## Why is this bad?
`pad_sequence` pads to the longest sequence it is given. Inside the wrapped forward each replica sees
only its slice of the batch, so each pads to the longest sequence of its own slice: the replicas' outputs
differ in the time dimension and DataParallel cannot concatenate them,

    RuntimeError: Gather got an input of invalid size: got [2, 5, 8], but expected [2, 7, 8]

or, pooled over time, a replica's mean counts other padding than one device would. Pad in the collate
function, before DataParallel splits the batch, or pad inside `forward` to a length the caller passes.

## Example
```python
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence


class Chunker(nn.Module):
    def __init__(self):
        super().__init__()
        self.project = nn.Linear(8, 8)

    def forward(self, padded, lengths):
        rows = [self.project(row[:length]) for row, length in zip(padded, lengths.tolist())]
        return pad_sequence(rows, batch_first=True)


model = nn.DataParallel(Chunker())
```

## Use instead
```python
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


class Chunker(nn.Module):
    def __init__(self):
        super().__init__()
        self.project = nn.Linear(8, 8)

    def forward(self, padded, lengths):
        rows = [self.project(row[:length]) for row, length in zip(padded, lengths.tolist())]
        out = pad_sequence(rows, batch_first=True)
        # Back to the full batch's padded length, which every replica shares.
        return F.pad(out, (0, 0, 0, padded.size(1) - out.size(1)))


model = nn.DataParallel(Chunker())
```

## Known problems
DPR007 follows padding by hand only through `torch.zeros`/`torch.full`/`new_zeros`/`new_full` sized by a
maximum taken in `forward` (`torch.cat` of `F.pad`-ed rows, or `torch.stack` of rows padded one by one,
are not followed), and the maximum only through names bound in `forward` itself. It judges, as DPR008
does, only classes a wrap resolves to.

## Fix safety
No fix is offered: `pad_sequence` takes no target length, and the length to pad to depends on the caller
(by hand: size the tensor by the padded input, `words.size(1)`, or by a length the caller passes).
The message names the wrap site.

## How to suppress
Put `# noqa: DPR007` on the reported line.
"""

from __future__ import annotations

import ast

from typing import Iterator, Optional

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import FunctionFlow
from ..analysis.modules import call_argument, iter_nodes, literal_time_dimension
from ..analysis.torch_names import PAD_SEQUENCE
from ..analysis.unpacked import (FILLED_CREATORS, POOLED, REPACKS, STORED, creation_sizes, padding_free_reductions,
                                 tensor_creator, where_unpacked_goes)
from ..findings import Violation
from .base import Example, Rule

_MESSAGE = (
    "{what} to the longest sequence of this replica's slice of the batch, "
    "and the result {how}: the replicas' time dimensions differ, so gathering fails or{effect}; pad in the "
    "collate function, or pad to a length the caller passes (F.pad to padded.size(1)) (wrapped at {site})"
)
_HOW = {STORED: "is stored on the module", POOLED: "is pooled over time ({reduction})"}
# Uses after which nothing padded to the replica's length leaves: packed again, or padded out with F.pad
# (to a length the caller chose, as the page shows).
_REPACKS = REPACKS | {"torch.nn.functional.pad"}


class PadsToReplicaLength(Rule):
    code = "DPR007"
    name = "pad-sequence-to-replica-length"
    summary = "pad_sequence() or padding by hand in a DataParallel-wrapped forward, to the replica's longest sequence"

    valid_examples = (
        # Summed over time: zero padding adds nothing, whatever length a replica padded to.
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pad_sequence\n"
        "class Pooler(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.project = nn.Linear(8, 8)\n"
        "    def forward(self, padded, lengths):\n"
        "        rows = [self.project(row[:n]) for row, n in zip(padded, lengths.tolist())]\n"
        "        return pad_sequence(rows, batch_first=True).sum(1)\n"
        "model = nn.DataParallel(Pooler())\n",
        # A collate function pads the whole batch before DataParallel splits it.
        "from torch.nn.utils.rnn import pad_sequence\n"
        "def collate(batch):\n"
        "    return pad_sequence([item for item, _ in batch], batch_first=True)\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pad_sequence\n"
            "class Chunker(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.project = nn.Linear(8, 8)\n"
            "    def forward(self, padded, lengths):\n"
            "        rows = [self.project(row[:n]) for row, n in zip(padded, lengths.tolist())]\n"
            "        return pad_sequence(rows, batch_first=True)\n"
            "model = nn.DataParallel(Chunker())\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        for cls in analysis.model.classes:
            site = analysis.direct_wrap_site(cls)
            forward = analysis.forward_path(cls).forward if site is not None else None
            if forward is None:
                continue
            qualified, callees = analysis.walk_context(cls, forward)
            flow: Optional[FunctionFlow] = None
            for call in iter_nodes(forward.body, (cst.Call,), skip_nested_scopes=True):
                name = qualified(call)
                helper = (analysis.evaluated.returned_torch_call(call.func.value, PAD_SEQUENCE)
                          if isinstance(call.func, cst.Name) and name != PAD_SEQUENCE else None)
                if name == PAD_SEQUENCE:
                    what = "pad_sequence() in the wrapped forward pads"
                    time_dim = literal_time_dimension(call_argument(call, 1, "batch_first"))
                    padding = call_argument(call, 2, "padding_value")
                elif helper is not None:
                    # `return pad_targets(targets)`, a function returning pad_sequence(...): the same padding.
                    what = f"{call.func.value}() pads with pad_sequence() in the wrapped forward"
                    time_dim = _ast_time_dimension(helper)
                    given = _ast_argument(helper, 2, "padding_value")  # the helper's own expression, read as libcst
                    padding = None if given is None else cst.parse_expression(ast.unparse(given))
                else:
                    creator = tensor_creator(call, name)
                    if creator is None:
                        continue
                    flow = flow or FunctionFlow(forward)
                    sized = _sized_by_replica_maximum(call, creator, flow)
                    if sized is None:
                        continue
                    time_dim, size = sized
                    code = analysis.module.code_for_node
                    what = (f"{code(call.func)}(...) in the wrapped forward makes a tensor as long as `{code(size)}`, "
                            "which pads by hand")
                    padding = call_argument(call, 1, "fill_value") if creator in FILLED_CREATORS else None
                escape = where_unpacked_goes(forward, call, time_dim, padding_free_reductions(padding), qualified,
                                             _REPACKS.__contains__, returns_pair=False, callees=callees)
                if escape is None:
                    continue
                how = _HOW.get(escape.kind, "leaves forward").format(reduction=escape.reduction)
                if escape.kind == POOLED and escape.negative_dim is not None:
                    how = (f"is reduced over dimension {escape.negative_dim} ({escape.reduction}), which keeps this "
                           "replica's length or, if it is time, counts its padding")
                effect = " a pooled value counts other padding than one device would" if escape.kind == POOLED else (
                    " the caller sees a batch padded differently per replica")
                if escape.product:
                    how = f"goes through a matrix product ({escape.product}) and {how}"
                    effect = (", where the product runs over time (attention pooling), it weighs other padding than one "
                              "device would")
                yield Violation(self.code, _MESSAGE.format(what=what, how=how, effect=effect, site=site), call)


def _ast_argument(call: ast.Call, position: int, keyword: str) -> Optional[ast.AST]:
    for found in call.keywords:
        if found.arg == keyword:
            return found.value
    positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return positional[position] if position < len(positional) else None


def _ast_time_dimension(call: ast.Call) -> Optional[int]:
    """1 for `batch_first=True`, 0 for False or none given, None for an expression (as the libcst one)."""
    batch_first = _ast_argument(call, 1, "batch_first")
    if batch_first is None or (isinstance(batch_first, ast.Constant) and batch_first.value is False):
        return 0
    if isinstance(batch_first, ast.Constant) and batch_first.value is True:
        return 1
    return None


_MAXIMA = frozenset({"max", "amax"})


def _sized_by_replica_maximum(call: cst.Call, creator: str, flow: FunctionFlow):
    """(position of the size, the size) when one dimension of the new tensor is a maximum taken in
    forward over what the replica was given (`lengths.max()`, `max(lengths)`, or a name bound to one):
    under DataParallel each replica takes its own."""
    for position, size in enumerate(creation_sizes(call, creator)):
        if _replica_maximum(size, flow, 0):
            return position, size
    return None


def _replica_maximum(expr: cst.BaseExpression, flow: FunctionFlow, depth: int) -> bool:
    if depth > 6:
        return False
    if isinstance(expr, cst.Name):
        site = flow.binding_read(expr)
        return site is not None and site.value is not None and site.tuple_index is None and \
            _replica_maximum(site.value, flow, depth + 1)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("item", "int", "long", "tolist") and not expr.args:
        return _replica_maximum(func.value, flow, depth + 1)  # `lengths.max().item()`
    if isinstance(func, cst.Name) and func.value == "int" and len(expr.args) == 1:
        return _replica_maximum(expr.args[0].value, flow, depth + 1)
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name not in _MAXIMA:
        return False
    # Over what forward was given or computed, not over module state (`max(self.sizes)`) or constants.
    on_torch = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "torch"
    over = [func.value] if isinstance(func, cst.Attribute) and not on_torch else []
    over += [arg.value for arg in expr.args]
    return any(_from_the_batch(node, flow) for node in over)


def _from_the_batch(node: cst.BaseExpression, flow: FunctionFlow) -> bool:
    """Whether the expression reads a parameter or a local of forward (other than self)."""
    for name in iter_nodes(node, (cst.Name,)):
        if name.value != "self" and (name.value in flow.parameters or name.value in flow.bindings):
            return True
    return False
