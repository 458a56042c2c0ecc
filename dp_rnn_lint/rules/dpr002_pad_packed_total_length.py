"""DPR002: `pad_packed_sequence` without `total_length` in a forward pass.

## What it does
Flags calls of `torch.nn.utils.rnn.pad_packed_sequence` (under any import spelling) in `forward`, or
in a method `forward` reaches, that do not pass `total_length`.

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
Unsafe, in ruff's sense: on one device the output's length can change (below). `--fix` applies it all
the same, because that change is what DataParallel needs; JSON and SARIF output label it `unsafe`.

The fix traces the packed sequence back to its `pack_padded_sequence(padded, ...)` call and passes
the padded tensor's time dimension: `.size(1)` with `batch_first=True`, `.size(0)` without, and
`.size(1 if <expr> else 0)` when `batch_first` is an expression. When the padded name is rebound by
the pack statement itself or before the pad call, the size is stored in a new local just before the
pack statement. On one device the output changes only when the input was padded beyond the batch's
longest sequence: it is then padded to the input's length instead of the longest sequence's, which
is what DataParallel needs. When the packed sequence cannot be traced (a parameter, a non-name
input), the finding is reported without a fix.

## How to suppress
Put `# noqa: DPR002` on the reported line (the line where the call starts); a suppressed finding is
not fixed either. With flake8, `--extend-ignore=DPR002` or a `per-file-ignores` entry works as usual.
"""

from __future__ import annotations

from typing import Dict, Iterator, Optional, Tuple, Union

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import FunctionFlow, PackSite, fresh_name, names_used, trace_to_pack
from ..analysis.forward_path import PadCall
from ..analysis.modules import call_argument
from ..analysis.torch_names import PACK_PADDED_SEQUENCE, canonical
from ..findings import AppendKeywordArgument, Fix, InsertBeforeStatement, Violation
from .base import Example, Rule

_MESSAGE = (
    "pad_packed_sequence() without total_length in the forward pass: under DataParallel each replica pads "
    "to the longest sequence in its own slice of the batch and gathering the outputs fails"
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
                yield self._violation(analysis, event, flows, analysis.scope_note(cls))

    def _violation(self, analysis: FileAnalysis, event: PadCall, flows: Dict, note: str) -> Violation:
        outcome = self._trace(analysis, event, flows)
        if isinstance(outcome, str):
            advice = (
                "; pass total_length= the padded input's time dimension (.size(1) when packed with "
                f"batch_first=True, else .size(0)), measured before packing ({outcome}, so no fix is offered)"
            )
            return Violation(self.code, _MESSAGE + advice + note, event.call)
        size_expr, edits, rebound = outcome
        advice = f"; pass total_length={size_expr}" + (" measured before it is packed" if rebound else "")
        # Unsafe: on one device the padded length changes when inputs are padded past the batch maximum.
        return Violation(self.code, _MESSAGE + advice + note, event.call, Fix(edits, safe=False))

    def _trace(self, analysis: FileAnalysis, event: PadCall, flows: Dict) -> Union[str, Tuple[str, tuple, bool]]:
        if not isinstance(event.function, cst.FunctionDef):
            return "the call is inside a lambda"
        if any(arg.star for arg in event.call.args) or not event.call.args or event.call.args[0].keyword is not None:
            return "its arguments are not plain positional and keyword arguments"
        if len([arg for arg in event.call.args if arg.keyword is None]) >= 4:
            return "total_length is passed positionally as None"
        flow = flows.get(event.function)
        if flow is None:
            flow = flows[event.function] = FunctionFlow(event.function)

        def is_pack_call(call: cst.Call) -> bool:
            return canonical(analysis.resolver.qualified_name(call.func, event.scope)) == PACK_PADDED_SEQUENCE

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

        site = trace_to_pack(flow, event.call.args[0].value, is_pack_call, is_module_call)
        if isinstance(site, str):
            return site
        return self._fix_for(analysis, flow, site, event)

    def _fix_for(self, analysis: FileAnalysis, flow: FunctionFlow, site: PackSite, event: PadCall):
        if any(arg.star for arg in site.call.args):
            return "pack_padded_sequence() gets *args or **kwargs, so batch_first is unknown"
        padded = call_argument(site.call, 0, "input")
        if not isinstance(padded, cst.Name):
            return "the input to pack_padded_sequence() is an expression, not a name"
        batch_first = call_argument(site.call, 2, "batch_first")
        dimension = _time_dimension(analysis.module, batch_first)
        size_expr = f"{padded.value}.size({dimension})"
        pack_seq = flow.seq_of.get(padded)
        pad_seq = flow.seq_of.get(event.call)
        if pack_seq is None or pad_seq is None:
            return "the pack and pad calls are in different functions"
        if not flow.rebound_between(padded.value, pack_seq, pad_seq):
            return size_expr, (AppendKeywordArgument(event.call, "total_length", size_expr),), False
        statement = flow.insertion_point.get(site.call)
        if statement is None:
            return "no line can go just before the pack_padded_sequence() call (it shares its line or is in an elif)"
        local = fresh_name("total_length", names_used(event.function))
        edits = (
            InsertBeforeStatement(statement, ((0, f"{local} = {size_expr}"),)),
            AppendKeywordArgument(event.call, "total_length", local),
        )
        return size_expr, edits, True


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
    if batch_first is None or (isinstance(batch_first, cst.Name) and batch_first.value == "False"):
        return "0"
    if isinstance(batch_first, cst.Name) and batch_first.value == "True":
        return "1"
    return f"1 if {module.code_for_node(batch_first)} else 0"
