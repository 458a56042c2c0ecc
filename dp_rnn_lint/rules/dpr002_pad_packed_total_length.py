"""DPR002: `pad_packed_sequence` without `total_length` in a forward pass.

## What it does
Flags calls of `torch.nn.utils.rnn.pad_packed_sequence` (under any import spelling) in `forward`, or
in a method `forward` reaches, that do not pass `total_length`, when the padded tensor (or what is
computed from it) leaves the module: returned from `forward`, stored on the module or outside the
function, handed to a function it cannot follow that may keep it, or pooled over time in a way that
counts the padding.

It follows the unpacked tensor through assignments, tensor methods, operators, layers, containers and
loops in the function that unpacks it, and from there through the project's own code on the forward
path: a helper method's return into the methods of `forward` that call it (every call of it), and a
`self.<name>(...)` call of the project's (a method of the class, or the `forward` of the project module
that `self.<name>` holds, in any file) into that function, a few calls deep, so a submodule that sums
the tensor over time or decodes it step by step is seen to drop the time dimension. After an `if`, a
name holds what it held after either branch. Not flagged, because no tensor padded to one replica's length
leaves: the tensor is packed again before it leaves (`pack_padded_sequence`, `pack_sequence`,
`PackedSequence(...)`: stacked layers, a loop over time steps with a cell, reversing sequences within
their lengths, a layer that returns a `PackedSequence`); it is only summed over time with zero padding;
it is only indexed at given steps (`out[:, t]` in a loop, `out[rows, positions]`, `torch.gather(out, 1,
positions)` along time); or it is padded back
out along time to an input's length before it leaves, as AllenNLP's encoder wrapper does
(`torch.cat([out, out.new_zeros(batch, mask.size(1) - out.size(1), size)], 1)`, the sizes possibly
through names), also when that runs only `if steps != mask.size(1):` (or `if missing > 0:`), since
otherwise it is as long as the input already. A new tensor made from it (`out.new_zeros(batch, size)`)
holds its padding only when one of its sizes is the padded length.

### Reductions over time
A sum over time is the same on every replica as on one device, because the padding is zeros (it is
flagged when `padding_value` is not zero); so is a maximum over padding of `-inf` and a minimum over
`+inf`. A loss over the batch with its default reduction (`F.cross_entropy(...)`) is one number and
leaves no time dimension. A mean, a maximum or minimum over other padding, a norm and the other reductions
count the padding: each replica pads to its own longest sequence, so the same sequence is pooled over a
different number of steps than on one device. The gather succeeds and the numbers are wrong; these are
flagged, with a message that says so. So is `out[:, -1]`, the last padded step, which is a different
step on each replica. A reduction over a dimension that is not time keeps the time dimension, and the
result is followed further. A reduction over a negative dimension (`mean(-1)`) is
flagged by the reductions that count padding, with a message that gives both readings: which dimension
`-1` is depends on the tensor's rank, which the linter does not follow, and either way the result is
wrong under DataParallel (it keeps the replica's length, or counts its padding). A matrix product of the
output (`torch.bmm`, `torch.matmul`, `@`, `torch.einsum`) that leaves `forward` is flagged the same way: it
keeps the replica's length, or, run over time as attention pooling does, it sums the padded steps with
weights that usually count them (a softmax over the padded steps); which, the linter cannot tell without
shapes, and the message gives both.

## Why is this bad?
`nn.DataParallel` splits the batch across GPUs. Each replica's `pad_packed_sequence` pads to the
longest sequence *in its own slice*, so the replicas return outputs of different lengths in the time
dimension and gathering them fails:

    RuntimeError: Gather got an input of invalid size: got [2, 7, 64], but expected [2, 9, 64]

PyTorch's FAQ ("My recurrent network doesn't work with data parallelism") gives the cure: pad every
replica to the padded input's full length with `total_length=padded_input.size(1)`.

## Example
```python
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, padded, lengths):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out
```

## Use instead
```python
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, padded, lengths):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=padded.size(1))
        return out
```

## Fix safety
Unsafe, in ruff's sense: on one device the output's length can change (below), so `--fix` and `--diff`
apply it only with `--unsafe-fixes` (or `unsafe-fixes = true` in `[tool.dp-rnn-lint]`); without it the
summary counts it as a hidden fix, and JSON and SARIF output label it `unsafe`.

Why not safe: the output keeps its length on one device exactly when each batch is padded to its
longest sequence, and that is decided by the data loader's collate function, which the linter cannot
link to the model it feeds. In the common pattern (a collate function that calls `pad_sequence` on the
batch's items and returns their lengths) nothing changes on one device. Inputs padded to a fixed
length (a bucket size, `max_len`) come back that long after the fix, where they came back as long as
the batch's longest sequence before.

The fix traces the packed sequence back to its `pack_padded_sequence(padded, ...)` call (the input
given by position or as `input=`; through RNN calls, `out[0]` of an RNN's result, and
`PackedSequence(data, packed.batch_sizes)` rebuilt from another packed sequence) and passes the padded
tensor's time dimension: `.size(1)` with `batch_first=True`, `.size(0)` without, and
`.size(1 if <expr> else 0)` when `batch_first` is an expression.

- When the padded name is rebound by the pack statement itself or before the pad call, the size is
  stored in a new local (`total_length`) just before the pack statement.
- When the padded input is an expression (`pack_padded_sequence(self.embed(tokens), ...)`), it is
  first stored in a new local (`padded = self.embed(tokens)`) just before the pack statement, and the
  pack call is given that local: only when the expression is the first thing its statement evaluates
  besides plain names and attributes, so what runs, and in what order, is unchanged.
- When the pack runs only in a branch or loop that the pad call is not in (`if not isinstance(x,
  PackedSequence): x = pack_padded_sequence(x, ...)`, or an `else` arm that takes the caller's packed
  sequence), the size is measured in that branch and `total_length = None` (pad_packed_sequence's
  default) goes before the branch, so the other paths behave as before.
- When the padded input is cut to the batch's longest sequence just before it is packed (`x =
  x[order][:, :lengths.max()]`: slices and sort orders only), the size is measured before the cut,
  since after it each replica has its own length again. When the pack's input is an expression computed
  from a tensor cut so, nothing in `forward` still has the full length, and no fix is offered.
- When a helper method packs one of its parameters and returns the packed sequence
  (`encoded = self.encode(embedded, lengths)`), the size is measured from what the call passes.

On one device the output changes only when the input was padded beyond the batch's longest sequence: it
is then padded to the input's length instead of the longest sequence's, which is what DataParallel needs.
When the packed sequence cannot be traced (a parameter of `forward`, a list of packed sequences, a call
the linter cannot follow), the finding is reported without a fix and the message says why; for a
parameter, pass `total_length` from the caller or pack inside the wrapped `forward`.

## Known problems
- Dimensions are read by number, as the code writes them: the walk does not follow `permute` or
  `transpose`, so after one a reduction or an index over dimension 0 or 1 is read as over the time
  dimension the pad call named, whichever dimension it now is.
- A helper method is followed from each of its calls on the forward path; one reached only from outside
  `forward` is not, and its return counts as leaving.
- Functions of the project reached other than through `self.<name>(...)` (a module-level function, a
  local name bound to a layer) are not followed: a layer keeps the time dimension, and a call that may
  keep its argument counts as leaving.

## How to suppress
Put `# noqa: DPR002` on the reported line (the line where the call starts); a suppressed finding is
not fixed either. With flake8, `--extend-ignore=DPR002` or a `per-file-ignores` entry works as usual.
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterator, Optional, Tuple, Union

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import (FunctionFlow, PackedSources, PackSite, Untraceable, Untraced, fresh_name, names_used,
                                 trace_to_pack)
from ..analysis.forward_path import PadCall
from ..analysis.modules import ModuleClass, call_argument, iter_nodes, literal_time_dimension
from ..analysis.names import dotted_name
from ..analysis.traversal import children
from ..analysis.torch_names import PACK_PADDED_SEQUENCE, PACKED_SEQUENCE, canonical
from ..analysis.unpacked import (POOLED, REPACKS, RETURNED, STORED, UNFOLLOWED, Escape, padding_free_reductions,
                                 where_unpacked_goes)
from ..findings import AppendKeywordArgument, Fix, InsertBeforeStatement, ReplaceExpression, Violation
from .base import Example, Rule

_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass: under DataParallel each replica pads "
    "to the longest sequence in its own slice of the batch and gathering the outputs fails"
)
_STORED_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass, and its output stored beyond the call: "
    "under DataParallel each replica pads to the longest sequence in its own slice of the batch, so what it "
    "stores has that replica's length (and a store on a replica is lost with it)"
)
_POOLED_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass, and its output pooled over time with "
    "{reduction}(): under DataParallel each replica pads to the longest sequence in its own slice of the batch, "
    "so the {reduction} counts that replica's padding and differs from the result on one device"
)
_PRODUCT_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass, and its output goes through a matrix product "
    "({product}) that {leaves}: under DataParallel each replica pads to the longest sequence in its own slice of "
    "the batch, so the product keeps that replica's length (and gathering fails) or, if it runs over time "
    "(attention pooling), weighs that replica's padding"
)
_REDUCED_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass, and its output reduced with {reduction}() "
    "over dimension {dim}: under DataParallel each replica pads to the longest sequence in its own slice of the "
    "batch, so the result keeps that replica's length (and gathering fails), or, if {dim} is the time dimension, "
    "the {reduction} counts that replica's padding"
)


class PadPackedTotalLength(Rule):
    code = "DPR002"
    name = "pad-packed-sequence-without-total-length"
    summary = "pad_packed_sequence without total_length in a forward pass"

    valid_examples = (
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def forward(self, x, lengths):\n"
        "        packed = pack_padded_sequence(x, lengths, batch_first=True)\n"
        "        out, _ = self.rnn(packed)\n"
        "        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]\n",
        # Data loading code does not run on replicas.
        "from torch.nn.utils.rnn import pad_packed_sequence\n"
        "def collate(batch):\n"
        "    return pad_packed_sequence(batch)\n",
        # Unpacked only to work on the padded tensor, and packed again: nothing padded leaves forward.
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def forward(self, packed):\n"
        "        out, _ = self.rnn(packed)\n"
        "        padded, lengths = pad_packed_sequence(out, batch_first=True)\n"
        "        return pack_padded_sequence(self.norm(padded), lengths, batch_first=True)\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        packed = pack_padded_sequence(x, lengths, batch_first=True)\n"
            "        out, _ = self.rnn(packed)\n"
            "        return pad_packed_sequence(out, batch_first=True)[0]\n",
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        packed = pack_padded_sequence(x, lengths, batch_first=True)\n"
            "        out, _ = self.rnn(packed)\n"
            "        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]\n",
        ),
        Example(
            "import torch.nn as nn\n"
            "import torch.nn.utils.rnn as rnn_utils\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        x = rnn_utils.pack_padded_sequence(x, lengths)\n"
            "        x, _ = self.rnn(x)\n"
            "        x, _ = rnn_utils.pad_packed_sequence(x)\n"
            "        return x\n",
            "import torch.nn as nn\n"
            "import torch.nn.utils.rnn as rnn_utils\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        total_length = x.size(0)\n"
            "        x = rnn_utils.pack_padded_sequence(x, lengths)\n"
            "        x, _ = self.rnn(x)\n"
            "        x, _ = rnn_utils.pad_packed_sequence(x, total_length=total_length)\n"
            "        return x\n",
        ),
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pad_packed_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, packed):\n"
            "        out, _ = self.rnn(packed)\n"
            "        return pad_packed_sequence(out)[0]\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        seen = set()
        flows: Dict[cst.CSTNode, FunctionFlow] = {}
        for cls in analysis.checked_classes:
            for event in analysis.forward_path(cls).events:
                if not isinstance(event, PadCall) or event.call in seen:
                    continue
                seen.add(event.call)
                if _has_total_length(event.call):
                    continue
                escape = _where_unpacked_goes(analysis, event, cls)
                if escape is None:
                    continue  # packed again (or summed over time) before it leaves: nothing padded crosses
                yield self._violation(analysis, event, flows, analysis.scope_note(cls), escape)

    def _violation(self, analysis: FileAnalysis, event: PadCall, flows: Dict, note: str, escape: Escape) -> Violation:
        message = (_REDUCED_MESSAGE.format(reduction=escape.reduction, dim=escape.negative_dim)
                   if escape.kind == POOLED and escape.negative_dim is not None
                   else _POOLED_MESSAGE.format(reduction=escape.reduction) if escape.kind == POOLED
                   else _PRODUCT_MESSAGE.format(product=escape.product, leaves="is stored beyond the call"
                                                if escape.kind == STORED else "leaves forward") if escape.product
                   else _STORED_MESSAGE if escape.kind == STORED else _MESSAGE)
        outcome = self._trace(analysis, event, flows)
        if isinstance(outcome, (str, Untraced)):
            packed_by_the_caller = isinstance(outcome, Untraced) and outcome.why is Untraceable.PARAMETER
            outcome = str(outcome)
            if packed_by_the_caller:
                # The padded length exists only where the caller packs.
                outcome += (" and nothing here measures the padded input: pass total_length from the caller, or "
                            "pack inside the wrapped forward")
            advice = (
                "; pass total_length= the padded input's time dimension (.size(1) when packed with "
                f"batch_first=True, else .size(0)), measured before packing ({outcome}, so no fix is offered)"
            )
            return Violation(self.code, message + advice + note, event.call)
        measured, edits, rebound = outcome  # what to measure, in the user's own code
        advice = f"; pass total_length={measured}" + (" measured before it is packed" if rebound else "")
        # Unsafe: on one device the padded length changes when inputs are padded past the batch maximum.
        return Violation(self.code, message + advice + note, event.call, Fix(edits, safe=False))

    def _trace(self, analysis: FileAnalysis, event: PadCall, flows: Dict) -> Union[str, Untraced, Tuple[str, tuple, bool]]:
        if not isinstance(event.function, cst.FunctionDef):
            return "the call is inside a lambda"
        sequence = call_argument(event.call, 0, "sequence")
        if any(arg.star for arg in event.call.args) or sequence is None:
            return "its arguments are not plain positional and keyword arguments"
        if len([arg for arg in event.call.args if arg.keyword is None]) >= 4:
            return "total_length is passed positionally as None"
        flow = flows.get(event.function)
        if flow is None:
            flow = flows[event.function] = FunctionFlow(event.function)

        qualified = _qualified_names(analysis, event)

        def is_pack_call(call: cst.Call) -> bool:
            return qualified(call) == PACK_PADDED_SEQUENCE

        method_names = {name for cls in analysis.model.classes for name in cls.methods}

        def is_module_call(call: cst.Call) -> bool:
            # An RNN runs as `self.rnn(...)`, `self.layers[i](...)`, `layer(...)` or `.forward(...)`;
            # `self.combine(a, packed)` is a method whose first argument says nothing.
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "forward":
                func = func.value
            if isinstance(func, cst.Subscript):
                func = func.value
            if isinstance(func, cst.Name):
                return True
            return isinstance(func, cst.Attribute) and func.attr.value not in method_names

        def is_rebuild(call: cst.Call) -> bool:
            return qualified(call) == PACKED_SEQUENCE

        owner = next((cls for cls in analysis.model.classes if event.function in cls.methods.values()), None)

        def helper_of(call: cst.Call) -> Optional[cst.FunctionDef]:
            # `self.encode(x, lengths)`: a method of the class holding the unpacking
            func = call.func
            if owner is None or not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                                     and func.value.value == "self"):
                return None
            found = owner.find_method(func.attr.value)
            return found[0] if found else None

        site = trace_to_pack(flow, sequence, is_pack_call, is_module_call, sources=PackedSources(is_rebuild, helper_of))
        if isinstance(site, Untraced):
            return site
        if site.helper_call is not None:
            return self._fix_through_helper(analysis, flow, site, event)
        return self._fix_for(analysis, flow, site, event)

    def _fix_through_helper(self, analysis: FileAnalysis, flow: FunctionFlow, site: PackSite, event: PadCall):
        """The helper packs one of its parameters: measured from what the call passes for it."""
        helper_flow = site.helper_flow
        helper = helper_flow.function
        padded = call_argument(site.call, 0, "input")
        if not isinstance(padded, cst.Name) or padded.value not in helper_flow.parameters:
            return f"the helper `{helper.name.value}()` packs a tensor it makes itself, not one it is given"
        if helper_flow.insertion_point.get(site.call) not in helper.body.body:
            return f"the helper `{helper.name.value}()` packs only in some of its branches"
        pack_seq = helper_flow.seq_of.get(site.call)
        if any(binding.seq < pack_seq for binding in helper_flow.bindings.get(padded.value, ())):
            return f"the helper `{helper.name.value}()` changes `{padded.value}` before packing it"
        batch_first = call_argument(site.call, 2, "batch_first")
        if literal_time_dimension(batch_first) is None:
            return f"batch_first in the helper `{helper.name.value}()` is an expression"
        params = [param.name.value for param in helper.params.params]
        position = params.index(padded.value) - 1 if padded.value in params else -1  # after self
        given = call_argument(site.helper_call, position, padded.value) if position >= 0 else None
        if not isinstance(given, cst.Name):
            return f"what the call of `{helper.name.value}()` passes for `{padded.value}` is not a name"
        call_seq, pad_seq = flow.seq_of.get(site.helper_call), flow.seq_of.get(event.call)
        if call_seq is None or pad_seq is None or flow.rebound_between(given.value, call_seq, pad_seq):
            return f"`{given.value}` changes between the call of `{helper.name.value}()` and the unpacking"
        size_expr = f"{given.value}.size({_time_dimension(analysis.module, batch_first)})"
        return size_expr, (AppendKeywordArgument(event.call, "total_length", size_expr),), False

    def _fix_for(self, analysis: FileAnalysis, flow: FunctionFlow, site: PackSite, event: PadCall):
        if any(arg.star for arg in site.call.args):
            return "pack_padded_sequence() gets *args or **kwargs, so batch_first is unknown"
        padded = call_argument(site.call, 0, "input")
        if padded is None:
            return "pack_padded_sequence() gets no input this linter can find"
        batch_first = call_argument(site.call, 2, "batch_first")
        dimension = _time_dimension(analysis.module, batch_first)
        pack_seq = flow.seq_of.get(site.call)
        pad_seq = flow.seq_of.get(event.call)
        if pack_seq is None or pad_seq is None:
            return "the pack and pad calls are in different functions"
        statement = flow.insertion_point.get(site.call)
        parents = _parents(event.function)
        # Packed in a branch or loop the unpacking is not in: measured there, None on the other paths
        # (pad_packed_sequence's default, so those paths behave as before).
        outer = _outermost_apart(statement, event.call, parents) if statement is not None else None
        taken = names_used(event.function)
        edits = []
        if not isinstance(padded, cst.Name):
            if statement is None or not _hoistable(site.call, padded, statement, parents):
                return ("the input to pack_padded_sequence() is an expression that cannot be moved to a line of "
                        "its own before the call")
            cut = next((name.value for name in iter_nodes(padded, (cst.Name,))
                        if name.value in flow.bindings and _before_cuts(flow, name, statement, parents) is not statement), None)
            if cut is not None:
                return (f"the input to pack_padded_sequence() is computed from `{cut}` after it was cut to this "
                        "replica's longest sequence, which leaves no full length to measure")
            local = fresh_name("padded", taken)
            taken = taken | {local}
            code = analysis.module.code_for_node(padded)
            edits += [InsertBeforeStatement(statement, ((0, f"{local} = {_on_one_line(code)}"),)),
                      ReplaceExpression(padded, local, code.strip())]
            padded_name, rebound = local, False
            # The message names the user's own expression: `padded` exists only once the fix has run.
            shown = _on_one_line(code).strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            stored = f" (the fix first stores `{shown}` in a new local, `{local}`)"
        else:
            padded_name, rebound = padded.value, flow.rebound_between(padded.value, pack_seq, pad_seq)
        measure_at = statement
        if isinstance(padded, cst.Name) and statement is not None:
            # `x = x[:, :lengths.max()]` before packing cuts x to this replica's longest sequence: the
            # full length is the one before the cut.
            before_cut = _before_cuts(flow, padded, statement, parents)
            if before_cut is not statement:
                measure_at, rebound = before_cut, True
        size_expr = f"{padded_name}.size({dimension})"
        advice = f"{shown}.size({dimension}){stored}" if not isinstance(padded, cst.Name) else size_expr
        if not rebound and outer is None:
            return advice, (*edits, AppendKeywordArgument(event.call, "total_length", size_expr)), False
        if statement is None:
            return "no line can go just before the pack_padded_sequence() call (it shares its line or is in an elif)"
        total = fresh_name("total_length", taken)
        if outer is not None:
            edits.insert(0, InsertBeforeStatement(outer, ((0, f"{total} = None"),)))
        # After the hoisted input, before the pack statement: the same statement gets both lines, in order.
        edits.append(InsertBeforeStatement(measure_at, ((0, f"{total} = {size_expr}"),)))
        edits.append(AppendKeywordArgument(event.call, "total_length", total))
        return advice, _merged(edits), True


def _before_cuts(flow: FunctionFlow, padded: cst.Name, statement: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> cst.CSTNode:
    """The statement before which `padded` still has its full length: the pack statement, or the first
    of the statements just before it, in its block, that only slice `padded` into itself (`x = x[:, :n]`,
    `x = x[order]` with `order` from a sort)."""
    block = parents.get(id(statement))
    earliest, use = statement, padded
    while isinstance(block, cst.IndentedBlock):
        site = flow.binding_before(padded.value, flow.seq_of.get(use, 0), use)
        if site is None or site.target is None or not _slices_of(flow, site.value, padded.value):
            break
        line = site.target
        while line is not None and not isinstance(line, cst.SimpleStatementLine):
            line = parents.get(id(line))
        if line is None or parents.get(id(line)) is not block or not isinstance(line.body[0], cst.Assign) \
                or line.body[0].value is not site.value or len(line.body[0].targets) != 1:
            break
        earliest = line
        use = next(node for node in iter_nodes(site.value, (cst.Name,)) if node.value == padded.value)
    return earliest


def _slices_of(flow: FunctionFlow, value: Optional[cst.BaseExpression], name: str) -> bool:
    """Whether `value` is `name` subscripted only by slices and by sort orders, which keep every
    dimension where it was."""
    if not isinstance(value, cst.Subscript):
        return False
    while isinstance(value, cst.Subscript):
        for element in value.slice:
            if isinstance(element.slice, cst.Slice):
                continue
            index = element.slice.value if isinstance(element.slice, cst.Index) else None
            if not (len(value.slice) == 1 and _is_sort_order(flow, index)):
                return False
        value = value.value
    return isinstance(value, cst.Name) and value.value == name


def _is_sort_order(flow: FunctionFlow, index: Optional[cst.BaseExpression]) -> bool:
    """`order` from `_, order = t.sort(...)` / `torch.sort(...)`, or `t.argsort(...)` itself: a tensor of
    positions, so indexing with it keeps the dimension."""
    def sorts(call: Optional[cst.BaseExpression], names: Tuple[str, ...]) -> bool:
        return isinstance(call, cst.Call) and isinstance(call.func, (cst.Attribute, cst.Name)) and \
            (call.func.attr.value if isinstance(call.func, cst.Attribute) else call.func.value) in names
    if sorts(index, ("argsort",)):
        return True
    if not isinstance(index, cst.Name) or flow.seq_of.get(index) is None:
        return False
    site = flow.binding_before(index.value, flow.seq_of[index], index)
    return site is not None and (site.tuple_index == 1 and sorts(site.value, ("sort",))
                                 or site.tuple_index is None and sorts(site.value, ("argsort",)))


def _merged(edits: list) -> tuple:
    """Insertions before the same statement as one edit, in order (each edit's lines go in as one block)."""
    merged: list = []
    for edit in edits:
        previous = next((e for e in merged if isinstance(e, InsertBeforeStatement) and isinstance(edit, InsertBeforeStatement)
                         and e.statement is edit.statement), None)
        if previous is None:
            merged.append(edit)
        else:
            merged[merged.index(previous)] = InsertBeforeStatement(previous.statement, previous.lines + edit.lines)
    return tuple(merged)


def _parents(function: cst.FunctionDef) -> Dict[int, cst.CSTNode]:
    found: Dict[int, cst.CSTNode] = {}
    stack: list = [function]
    while stack:
        node = stack.pop()
        for child in children(node):
            found[id(child)] = node
            stack.append(child)
    return found


def _ancestors(node: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> list:
    chain = []
    while id(node) in parents:
        node = parents[id(node)]
        chain.append(node)
    return chain


def _outermost_apart(statement: cst.CSTNode, pad_call: cst.Call, parents: Dict[int, cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The statement holding the pack statement that sits in the innermost block also holding the pad
    call, when that is not the pack statement itself (the pack runs in a branch or loop the pad is not
    in); None when the pack statement's own block holds the pad call."""
    pad_blocks = {id(node) for node in _ancestors(pad_call, parents) if isinstance(node, (cst.IndentedBlock, cst.Module))}
    child = statement
    for node in _ancestors(statement, parents):
        if isinstance(node, (cst.IndentedBlock, cst.Module)) and id(node) in pad_blocks:
            return None if child is statement else child
        if isinstance(node, cst.BaseCompoundStatement):
            child = node
    return None


def _hoistable(pack: cst.Call, padded: cst.BaseExpression, statement: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> bool:
    """Whether storing the pack call's input in a local just before `statement` keeps what runs, and in
    what order: the input is the first thing the statement evaluates besides plain names and attributes
    (the call's first argument, in a call that is the first argument of a call ... that is the statement's
    value), and it neither binds names nor suspends."""
    if not pack.args or pack.args[0].value is not padded:
        return False
    if next(iter_nodes(padded, (cst.NamedExpr, cst.Yield, cst.Await, cst.Lambda)), None) is not None:
        return False
    node: cst.CSTNode = pack
    while True:
        parent = parents.get(id(node))
        if parent is None:
            return False
        if isinstance(parent, cst.Arg):
            call = parents.get(id(parent))
            if not isinstance(call, cst.Call) or call.args[0] is not parent or dotted_name(call.func) is None:
                return False
            node = call
        elif isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)) and parent.value is node:
            line = parents.get(id(parent))
            return line is statement and isinstance(line, cst.SimpleStatementLine) and line.body[0] is parent
        else:
            return False


def _on_one_line(code: str) -> str:
    """The expression as a statement's value: wrapped in parentheses when it spans lines, which inside the
    call's own parentheses needed none."""
    code = code.strip()
    return f"({code})" if "\n" in code else code


def _where_unpacked_goes(analysis: FileAnalysis, event: PadCall, cls: ModuleClass) -> Optional[Escape]:
    if not isinstance(event.function, cst.FunctionDef):
        return Escape(UNFOLLOWED, event.call)  # a lambda's result goes wherever its caller takes it
    time_dim = literal_time_dimension(call_argument(event.call, 1, "batch_first"))
    padding = call_argument(event.call, 2, "padding_value")
    padding_free = padding_free_reductions(padding)
    # Names resolve where the pad call is; `self.<name>(...)` runs the helper or submodule of the method's class.
    _, callees = analysis.walk_context(analysis.owner_of(event.function, cls), event.function)

    escape = where_unpacked_goes(event.function, event.call, time_dim, padding_free, _qualified_names(analysis, event),
                                 REPACKS.__contains__, callees=callees)
    return _past_helpers(analysis, cls, event.function, escape, time_dim, padding_free)


def _past_helpers(analysis: FileAnalysis, cls: ModuleClass, function: cst.FunctionDef, escape: Optional[Escape],
                  time_dim: Optional[int], padding_free: FrozenSet[str]) -> Optional[Escape]:
    """Returned by a helper of forward, the padded tensor leaves the module only where a caller on the forward
    path lets out what the helper returns: the first such way, at any of the helper's calls there."""
    path = analysis.forward_path(cls)
    on_path = [path.forward, *path.entries] if path.forward is not None else list(path.entries)
    pending, seen = [(function, escape)], {function}
    while pending:
        helper, found = pending.pop(0)
        if found is None or found.kind != RETURNED or helper not in path.entries:
            if found is not None:
                return found
            continue
        name = helper.name.value
        for caller in on_path:
            for call in iter_nodes(caller.body, (cst.Call,), skip_nested_scopes=True):
                func = call.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == name
                        and isinstance(func.value, cst.Name) and func.value.value == "self"):
                    continue
                qualified, callees = analysis.walk_context(analysis.owner_of(caller, cls), caller)
                outer = where_unpacked_goes(caller, call, time_dim, padding_free, qualified, REPACKS.__contains__,
                                            returns_pair=False, callees=callees)
                if outer is not None and (outer.kind != RETURNED or caller in seen or caller not in path.entries):
                    return outer
                if outer is not None:
                    seen.add(caller)
                    pending.append((caller, outer))
    return None


def _qualified_names(analysis: FileAnalysis, event: PadCall) -> Callable[[cst.Call], Optional[str]]:
    """A call's canonical qualified name, as seen where the pad call is."""
    def qualified(call: cst.Call) -> Optional[str]:
        return canonical(analysis.resolver.qualified_name(call.func, event.scope))
    return qualified


def _has_total_length(call: cst.Call) -> bool:
    if any(arg.star for arg in call.args):
        return True  # *args/**kwargs may carry it; do not guess
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) >= 4:
        return not _is_none(positional[3].value)
    return any(
        arg.keyword is not None and arg.keyword.value == "total_length" and not _is_none(arg.value) for arg in call.args
    )


def _is_none(node: cst.BaseExpression) -> bool:
    # `total_length=None` is the default spelled out: the same trap.
    return isinstance(node, cst.Name) and node.value == "None"


def _time_dimension(module: cst.Module, batch_first: Optional[cst.BaseExpression]) -> str:
    known = literal_time_dimension(batch_first)
    return str(known) if known is not None else f"1 if {module.code_for_node(batch_first)} else 0"
