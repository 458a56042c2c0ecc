"""DPR004: RNN hidden state crossing the DataParallel boundary.

## What it does
Flags an RNN's final hidden state `h_n` (or `(h_n, c_n)`) returned as it is, alone or inside a tuple,
list or dict, and a parameter passed to an RNN as its initial state as it is, in the `forward` of a
class that `nn.DataParallel` wraps directly (found by the project index: `nn.DataParallel(Model(...))`,
a model built by a factory, `data_parallel(model, ...)`).

Only batch-first RNNs (`batch_first=True`) are flagged: a sequence-first model's inputs are split along
the batch only by `DataParallel(model, dim=1)`, which splits and gathers its layers-first hidden state
along the batch as well.

### Root modules
In the default scope it also checks the project's root modules that build an RNN: classes that the
project builds only outside module classes (in a script, a function, a trainer object) and hands to
nothing that may keep them as a submodule (another module class's constructor, `nn.Sequential`,
`DistributedDataParallel`, any class of another package). Such a class is what a training script wraps
in DataParallel, even when the wrap is not in the project. The message says that the class was checked
as a root and where the project builds it. A class nothing in the project builds is not a root (a
registry or a configuration may build it as a submodule), nor is an encoder handed to `Seq2Seq(encoder,
decoder)`, whose state never leaves the replica running `Seq2Seq`, nor one a factory function returns
(`def build_encoder(): return Encoder(...)`: a module's `__init__` may call it). With `--scope wrapped` only wraps
count, unless a wrap could not be resolved.

## Why is this bad?
An RNN's hidden state is shaped `(num_layers * num_directions, batch, hidden)`: the batch is dim 1.
DataParallel splits inputs and concatenates outputs along dim 0. Returned from the wrapped forward,
the replicas' hidden states are concatenated along the layer dimension, and the caller silently gets
a tensor of the wrong shape (`(2 * layers, batch / 2, hidden)` on two GPUs). Passed in, the initial
state is split along the layers instead of the batch, and the RNN fails with a hidden-size error (with
one layer it is not split at all, and fewer replicas run than there are GPUs):

    RuntimeError: Expected hidden size (2, 4, 64), got [1, 8, 64]

## Example
```python
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(32, 64, num_layers=2, batch_first=True)

    def forward(self, x):
        self.gru.flatten_parameters()
        out, h_n = self.gru(x)
        return out, h_n


model = nn.DataParallel(Tagger())
```

## Use instead
```python
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(32, 64, num_layers=2, batch_first=True)

    def forward(self, x):
        # The caller receives the state batch first: (batch, layers, hidden). An initial state passed
        # in goes the same way: taken batch first, then `h0.transpose(0, 1).contiguous()`.
        self.gru.flatten_parameters()
        out, h_n = self.gru(x)
        return out, h_n.transpose(0, 1)


model = nn.DataParallel(Tagger())
```

## Known problems
DPR004 looks at RNN submodules the wrapped class runs in its own `forward`; a hidden state returned by a
submodule (`_, h = self.encoder(x)`) and then returned again is not followed. As roots it considers only
classes whose own body builds something named like an RNN (`nn.LSTM`, `PackedLSTM`), and a module kept
as `self.encoder = Encoder()` in a plain class and later handed on as `self.encoder` is not followed
(the class stays a root).

## Fix safety
No fix is offered: moving the batch dimension changes what callers pass and receive, so every caller
must change with it. The message names the wrap site that makes the class a DataParallel target, or
where the project builds it as a root module.

## How to suppress
Put `# noqa: DPR004` on the reported line.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import FunctionFlow
from ..analysis.forward_path import ForwardPath, Invocation
from ..analysis.modules import (ModuleClass, RnnSubmodule, call_argument, is_self_attribute, iter_nodes,
                                literal_time_dimension, returned_parts, self_name)
from ..findings import Violation
from .base import Example, Rule

_RETURNED = (
    "forward returns {what} as it is: its batch is dim 1, and DataParallel gathers outputs along dim 0, so the "
    "replicas' states are concatenated along the layer dimension and the caller gets a tensor of the wrong shape; "
    "return {advice} (batch first) and transpose it back where it is used ({site})"
)
_PASSED_IN = (
    "forward passes its {names} to {rnn} as the initial state unchanged: DataParallel scatters inputs along dim 0, "
    "which for a hidden state is the layer dimension, not the batch; take {them} batch first and pass {advice} "
    "({site})"
)
_ROOT_NOTE = (
    "checked as a root module: the project builds it at {site} and no other module holds it, so it is what a "
    "DataParallel wrap would run; no wrap of it was found"
)


class HiddenStateCrossesDataParallel(Rule):
    code = "DPR004"
    name = "rnn-hidden-state-crosses-data-parallel"
    summary = "RNN hidden state returned from or passed into a DataParallel-wrapped forward"

    valid_examples = (
        # Batch first on the way out.
        "import torch.nn as nn\n"
        "class Tagger(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8, batch_first=True)\n"
        "    def forward(self, x):\n"
        "        self.gru.flatten_parameters()\n"
        "        out, h_n = self.gru(x)\n"
        "        return out, h_n.transpose(0, 1)\n"
        "model = nn.DataParallel(Tagger())\n",
        # Not wrapped: nothing crosses a DataParallel boundary.
        "import torch.nn as nn\n"
        "class Tagger(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8, batch_first=True)\n"
        "    def forward(self, x):\n"
        "        self.gru.flatten_parameters()\n"
        "        return self.gru(x)\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "class Tagger(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lstm = nn.LSTM(8, 8, batch_first=True)\n"
            "    def forward(self, x):\n"
            "        self.lstm.flatten_parameters()\n"
            "        out, (h_n, c_n) = self.lstm(x)\n"
            "        return out, (h_n, c_n)\n"
            "model = nn.DataParallel(Tagger())\n",
            None,
        ),
        Example(
            "import torch.nn as nn\n"
            "class Tagger(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.gru = nn.GRU(8, 8, num_layers=2, batch_first=True)\n"
            "    def forward(self, x, hidden):\n"
            "        self.gru.flatten_parameters()\n"
            "        out, _ = self.gru(x, hidden)\n"
            "        return out\n"
            "def build():\n"
            "    return Tagger()\n"
            "model = nn.DataParallel(build(), device_ids=[0, 1])\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        for cls in analysis.model.classes:
            wrap = analysis.direct_wrap_site(cls)
            root = analysis.root_site(cls) if wrap is None else None
            if wrap is None and root is None:
                continue
            path = analysis.forward_path(cls)
            if path.forward is None or not path.rnns:
                continue
            yield from self._check_forward(analysis, cls, path, f"wrapped at {wrap}" if wrap else _ROOT_NOTE.format(site=root))

    def _check_forward(self, analysis: FileAnalysis, cls: ModuleClass, path: ForwardPath,
                       site: str) -> Iterator[Violation]:
        forward = path.forward
        flow = FunctionFlow(forward)
        # Not the members of a ModuleList that also holds other modules: which member is an RNN is unknown.
        # Nor a sequence-first RNN: its inputs split along the batch only under DataParallel(dim=1), which
        # splits and gathers its layers-first state along the batch too.
        runs = [event for event in path.events if isinstance(event, Invocation) and event.method is forward
                and not _mixed_list(path.rnns.get(event.attr)) and not _sequence_first(cls, event.attr)]
        for event in runs:
            names = _initial_state_parameters(event.call, flow)
            if names:
                several = len(names) > 1
                message = _PASSED_IN.format(
                    names=("parameters " if several else "parameter ") + " and ".join(f"`{n}`" for n in names),
                    rnn=analysis.module.code_for_node(event.call.func), them="them" if several else "it",
                    advice=" and ".join(f"{n}.transpose(0, 1).contiguous()" for n in names), site=site,
                )
                yield Violation(self.code, message, event.call)
        hidden = _hidden_state_bindings(forward, {event.call for event in runs}, flow)
        calls = {event.call for event in runs}
        for statement in iter_nodes(forward.body, (cst.Return,), skip_nested_scopes=True):
            if statement.value is None:
                continue
            parts = list(returned_parts(statement.value))
            outputs = [node for node in parts if isinstance(node, cst.Call) and node in calls]
            states = [node for node in parts if isinstance(node, cst.Name) and _is_hidden_state(node, hidden, flow)]
            # One finding per return statement: `return out, (h_n, c_n)` is one mistake.
            if outputs:
                what = f"the output of {analysis.module.code_for_node(outputs[0].func)}(...), whose second element is h_n,"
                advice = "the output and h_n.transpose(0, 1)"
                yield Violation(self.code, _RETURNED.format(what=what, advice=advice, site=site), outputs[0])
            elif states:
                what = "the RNN's hidden state " + ", ".join(f"`{node.value}`" for node in states)
                advice = " and ".join(f"{node.value}.transpose(0, 1)" for node in states)
                yield Violation(self.code, _RETURNED.format(what=what, advice=advice, site=site), states[0])


def _sequence_first(cls: ModuleClass, attr: str) -> bool:
    """Whether every construction of the RNN held in `attr` that the class shows is sequence first
    (`batch_first` False, or not given); False when any is batch first or cannot be read."""
    built = []
    for owner in cls.mro():
        for method in owner.methods.values():
            me = self_name(method)
            for node in iter_nodes(method.body, (cst.Assign,)):
                if any(is_self_attribute(target.target, me) == attr for target in node.targets):
                    built.append(node.value)
    calls = [value for value in built if isinstance(value, cst.Call)]
    if not calls or len(calls) != len(built):
        return False
    # batch_first is the fifth argument of nn.RNN, nn.LSTM and nn.GRU (input, hidden, layers, bias, batch_first).
    return all(literal_time_dimension(call_argument(call, 4, "batch_first")) == 0
               and not any(arg.star for arg in call.args) for call in calls)


def _initial_state_parameters(call: cst.Call, flow: FunctionFlow) -> List[str]:
    """Parameters of forward passed unchanged as `rnn(x, h0)`, `rnn(x, (h0, c0))` or `rnn(x, hx=h0)`."""
    state = call_argument(call, 1, "hx")
    if state is None:
        return []
    names = [e.value for e in state.elements] if isinstance(state, (cst.Tuple, cst.List)) else [state]
    found = []
    for node in names:
        if isinstance(node, cst.Name) and node.value in flow.parameters:
            seq = flow.seq_of.get(node)
            if seq is not None and flow.binding_before(node.value, seq) is None:
                found.append(node.value)
    return found


def _hidden_state_bindings(forward: cst.FunctionDef, calls: Set[cst.Call], flow: FunctionFlow) -> Dict[str, List[int]]:
    """For `out, h_n = self.rnn(x)` and `out, (h_n, c_n) = self.lstm(x)`: each state name and the
    position right after the RNN call, where its binding starts."""
    found: Dict[str, List[int]] = {}
    for node in iter_nodes(forward.body, (cst.Assign,), skip_nested_scopes=True):
        if node.value not in calls or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
            continue
        state = target.elements[1].value
        names = [e.value for e in state.elements] if isinstance(state, (cst.Tuple, cst.List)) else [state]
        seq = flow.seq_of.get(node.value)
        for name in names:
            if isinstance(name, cst.Name) and seq is not None:
                found.setdefault(name.value, []).append(seq)
    return found


def _is_hidden_state(node: cst.Name, hidden: Dict[str, List[int]], flow: FunctionFlow) -> bool:
    """The returned name still holds the state an RNN call bound (nothing rebound it since)."""
    seq = flow.seq_of.get(node)
    if seq is None or node.value not in hidden:
        return False
    site = flow.binding_before(node.value, seq)
    if site is None:
        return False
    return any(not flow.rebound_between(node.value, call_seq, site.seq) and site.seq > call_seq
               for call_seq in hidden[node.value])


def _mixed_list(rnn: Optional[RnnSubmodule]) -> bool:
    """A ModuleList only some of whose members (or members in some configurations) are torch RNNs."""
    return rnn is not None and rnn.is_list and rnn.guarded
