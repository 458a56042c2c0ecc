"""DPR008: PackedSequence crossing the DataParallel boundary.

## What it does
Flags a parameter used as a `PackedSequence` that `forward` did not pack itself (handed to an RNN whose
output is unpacked with `pad_packed_sequence`, given to `pad_packed_sequence`, or annotated
`PackedSequence`, however it is used then: a layer of cells stepping over `.data` by `.batch_sizes`), and
a `PackedSequence` that `forward` returns (the result of `pack_padded_sequence`, a `PackedSequence(...)`
built from fields, or an RNN run on one), in the `forward` of a class that `nn.DataParallel` wraps
directly (found by the project index).

## Why is this bad?
DataParallel splits every tensor of its inputs along dim 0 and concatenates every tensor of the
replicas' outputs along dim 0, field by field for a namedtuple such as `PackedSequence`. A packed
sequence's `data` holds the time steps of all sequences one after another and its `batch_sizes` holds
one count per time step, so neither can be split or joined that way: the replicas get packed batches
whose `batch_sizes` no longer add up to their data (the RNN fails, or runs on a mix of sequences), and a
returned one is gathered into a `PackedSequence` that describes no batch at all. Pack inside the wrapped
`forward`, from the padded tensor and the lengths, and unpack before returning. On `dp-rnn-lint verify`'s
CPU emulation of two replicas, a packed input fails inside the RNN with

    RuntimeError: start (4) + length (4) exceeds dimension size (7).

and a returned one differs from the single-device output.

## Example
```python
import torch.nn as nn
from torch.nn.utils.rnn import pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, batch_first=True)

    def forward(self, packed, max_length):
        self.gru.flatten_parameters()
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=max_length)
        return out


encoder = nn.DataParallel(Encoder())
```

## Use instead
```python
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, batch_first=True)

    def forward(self, padded, lengths):
        self.gru.flatten_parameters()
        packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=padded.size(1))
        return out


encoder = nn.DataParallel(Encoder())
```

## Known problems
It judges, as DPR007 does, only classes a wrap resolves to.

## Fix safety
No fix is offered: the wrapped forward's parameters or its result change, and so must every caller. The
message names the wrap site that makes the class a DataParallel target.

## How to suppress
Put `# noqa: DPR008` on the reported line.
"""

from __future__ import annotations

from typing import Iterator, Optional, Set

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import FunctionFlow, PackSite, Untraceable, Untraced, trace_to_pack
from ..analysis.forward_path import Invocation, PadCall
from ..analysis.modules import ModuleClass, call_argument, iter_nodes, returned_parts
from ..analysis.torch_names import PACK_PADDED_SEQUENCE, PACK_SEQUENCE, PACKED_SEQUENCE, canonical
from ..findings import Violation
from .base import Example, Rule

_PACKED_IN = (
    "forward treats its parameter `{name}` as a PackedSequence it did not pack: DataParallel scatters inputs by "
    "splitting every tensor along dim 0, and a packed sequence's data (time steps of all sequences) and "
    "batch_sizes (one count per step) cannot be split so; pass the padded tensor and the lengths, and pack "
    "inside forward (wrapped at {site})"
)
_PACKED_OUT = (
    "forward returns a PackedSequence ({what}): DataParallel gathers outputs by concatenating every tensor "
    "along dim 0, which for a packed sequence's data and batch_sizes describes no batch at all; unpack it with "
    "pad_packed_sequence(..., total_length=...) and return the padded tensor (wrapped at {site})"
)
# What makes a PackedSequence in forward: the pack calls, and the namedtuple built from fields by hand.
_PACKING = frozenset({PACK_PADDED_SEQUENCE, PACK_SEQUENCE, PACKED_SEQUENCE})


class PackedSequenceCrossesDataParallel(Rule):
    code = "DPR008"
    name = "packed-sequence-crosses-data-parallel"
    summary = "PackedSequence passed into or returned from a DataParallel-wrapped forward"

    valid_examples = (
        # Packed and unpacked inside the wrapped forward.
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8, batch_first=True)\n"
        "    def forward(self, x, lengths):\n"
        "        self.gru.flatten_parameters()\n"
        "        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)\n"
        "        out, _ = self.gru(packed)\n"
        "        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]\n"
        "model = nn.DataParallel(Encoder())\n",
        # Not wrapped: nothing crosses a DataParallel boundary.
        "import torch.nn as nn\n"
        "from torch.nn.utils.rnn import pad_packed_sequence\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8, batch_first=True)\n"
        "    def forward(self, packed):\n"
        "        self.gru.flatten_parameters()\n"
        "        out, _ = self.gru(packed)\n"
        "        return pad_packed_sequence(out, batch_first=True, total_length=20)[0]\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pad_packed_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.gru = nn.GRU(8, 8, batch_first=True)\n"
            "    def forward(self, packed):\n"
            "        self.gru.flatten_parameters()\n"
            "        out, _ = self.gru(packed)\n"
            "        return pad_packed_sequence(out, batch_first=True, total_length=20)[0]\n"
            "model = nn.DataParallel(Encoder())\n",
            None,
        ),
        Example(
            "import torch.nn as nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lstm = nn.LSTM(8, 8, batch_first=True)\n"
            "    def forward(self, x, lengths):\n"
            "        self.lstm.flatten_parameters()\n"
            "        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)\n"
            "        out, _ = self.lstm(packed)\n"
            "        return out\n"
            "model = nn.DataParallel(Encoder())\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        for cls in analysis.model.classes:
            site = analysis.direct_wrap_site(cls)
            if site is None:
                continue
            path = analysis.forward_path(cls)
            if path.forward is not None:
                yield from _Forward(analysis, cls, path, site).violations()


class _Forward:
    """One wrapped class's forward, with the questions both checks ask of it."""

    def __init__(self, analysis: FileAnalysis, cls: ModuleClass, path, site: str) -> None:
        self.analysis = analysis
        self.forward: cst.FunctionDef = path.forward
        self.events = path.events
        self.site = site
        self.flow = FunctionFlow(self.forward)
        self.scope = analysis.resolver.scope_of(self.forward)
        self.rnn_attributes = set(path.rnns)

    def violations(self) -> Iterator[Violation]:
        flagged: Set[str] = set()
        for name, node in self._packed_parameters():
            if name not in flagged:
                flagged.add(name)
                yield Violation(PackedSequenceCrossesDataParallel.code, _PACKED_IN.format(name=name, site=self.site), node)
        for node, what in self._returned_packed():
            yield Violation(PackedSequenceCrossesDataParallel.code, _PACKED_OUT.format(what=what, site=self.site), node)

    # -- what the calls are ------------------------------------------------------------------------
    def _qualified(self, call: cst.Call) -> Optional[str]:
        return canonical(self.analysis.resolver.qualified_name(call.func, self.scope))

    def _is_pack_call(self, call: cst.Call) -> bool:
        return self._qualified(call) in _PACKING

    def _is_module_call(self, call: cst.Call) -> bool:
        # An RNN of the class runs: `self.rnn(...)`, `self.layers[i](...)`, `.forward(...)`, or a local name
        # (`layer(...)` over a list of them). Not a method or another submodule (`self.unpack(out)` may well
        # unpack), nor an imported function (`pad_packed_sequence(out)` returns padded tensors).
        if self._qualified(call) is not None:
            return False
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if isinstance(func, cst.Subscript):
            func = func.value
        return isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and func.attr.value in self.rnn_attributes)

    def _trace(self, expr: cst.BaseExpression, rnn_output: bool = False):
        return trace_to_pack(self.flow, expr, self._is_pack_call, self._is_module_call, rnn_output=rnn_output)

    def _unchanged_parameter(self, node: cst.BaseExpression) -> Optional[str]:
        """The parameter of forward that `node` names, when nothing in forward rebound it before."""
        if not isinstance(node, cst.Name) or node.value not in self.flow.parameters:
            return None
        seq = self.flow.seq_of.get(node)
        return node.value if seq is not None and self.flow.binding_before(node.value, seq) is None else None

    # -- a parameter used as a PackedSequence ------------------------------------------------------
    def _packed_parameters(self) -> Iterator[tuple]:
        annotated = {param.name.value for param in self.forward.params.params
                     if param.annotation is not None and _names_packed_sequence(param.annotation.annotation)}
        packed_parameters = set()
        for event in self.events:
            if isinstance(event, PadCall) and event.function is self.forward:
                sequence = call_argument(event.call, 0, "sequence")
                if sequence is None:
                    continue
                name = self._unchanged_parameter(sequence)
                if name is not None:
                    yield name, event.call
                    continue
                origin = self._trace(sequence)
                if isinstance(origin, Untraced) and origin.why is Untraceable.PARAMETER:
                    packed_parameters.add(origin.name)  # unpacked here, packed by the caller
        for event in self.events:
            if isinstance(event, Invocation) and event.method is self.forward:
                first = call_argument(event.call, 0, "input")
                name = self._unchanged_parameter(first) if first is not None else None
                if name is not None and (name in annotated or name in packed_parameters):
                    yield name, event.call
                    annotated.discard(name)
        # Annotated so but used only through its fields (a layer of cells stepping over `.data` by
        # `.batch_sizes`): the annotation says what callers pass, and scattering it fails all the same.
        for param in self.forward.params.params:
            if param.name.value in annotated:
                yield param.name.value, param

    # -- a PackedSequence returned ---------------------------------------------------------------
    def _returned_packed(self) -> Iterator[tuple]:
        for statement in iter_nodes(self.forward.body, (cst.Return,), skip_nested_scopes=True):
            if statement.value is None:
                continue
            for part in returned_parts(statement.value):
                what = self._packed_origin(part)
                if what is not None:
                    yield part, what
                    break  # one finding per return statement

    def _packed_origin(self, part: cst.BaseExpression) -> Optional[str]:
        code = self.analysis.module.code_for_node
        if isinstance(part, cst.Call):
            if self._is_pack_call(part):
                return f"the result of {code(part.func)}(...)"
            if self._is_module_call(part) and isinstance(self._trace(part, rnn_output=True), PackSite):
                return f"the output of {code(part.func)}(...), run on a packed sequence"
            return None
        if isinstance(part, cst.Name) and isinstance(self._trace(part), PackSite):
            return f"`{part.value}`, packed in forward"
        return None


def _names_packed_sequence(annotation: cst.BaseExpression) -> bool:
    node = annotation.value if isinstance(annotation, cst.Subscript) else annotation  # Optional[...] is not looked into
    return (isinstance(node, cst.Name) and node.value == "PackedSequence") or (
        isinstance(node, cst.Attribute) and node.attr.value == "PackedSequence")
