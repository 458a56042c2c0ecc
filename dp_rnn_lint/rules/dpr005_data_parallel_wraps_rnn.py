"""DPR005: DataParallel wrapping an RNN directly.

## What it does
Flags `nn.DataParallel(rnn)` and `data_parallel(rnn, inputs)` whose module is a torch RNN itself: an
`nn.LSTM`/`nn.GRU`/`nn.RNN` built in the call, a name bound to one in the same function or module, what
a factory function returns when its every return is one (in the same file, or in another file of the
project, which the project index follows), or an RNN attribute of the class the call is in
(`nn.DataParallel(self.lstm)`, or `self.lstm = nn.DataParallel(nn.LSTM(...))` in `__init__`).

## Why is this bad?
DataParallel copies the module onto each GPU for every call and runs the copies' `forward`. For an RNN
that is `nn.LSTM.forward` itself: no code of yours runs on the replicas first, so nothing can call
`flatten_parameters()` there. Every replica's weights are non-contiguous, PyTorch warns on every call and
compacts a copy of them each time (slow, and memory-hungry):

    UserWarning: RNN module weights are not part of single contiguous chunk of memory. This means they
    need to be compacted at every call, possibly greatly increasing memory usage. To compact weights
    again call flatten_parameters().

Calling `flatten_parameters()` on the DataParallel object fails (it has no such method), and calling it on
the RNN before wrapping does not reach the replicas.

## Example
```python
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.DataParallel(nn.LSTM(16, 32, batch_first=True))

    def forward(self, x):
        return self.lstm(x)[0]
```

## Use instead
```python
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, batch_first=True)

    def forward(self, x):
        self.lstm.flatten_parameters()
        return self.lstm(x)[0]


encoder = nn.DataParallel(Encoder())
```

## Fix safety
No fix is offered: the RNN must move into a module of its own (or the wrap must move to the module that
holds it), which changes the model's structure and the names of its saved weights.

## How to suppress
Put `# noqa: DPR005` on the reported line.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.modules import call_argument, iter_nodes
from ..analysis.names import UNPACK, Scope
from ..analysis.torch_names import MODULE_METHODS_RETURNING_SELF, canonical, rnn_kind
from ..findings import Violation
from .base import Example, Rule

_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                       "torch.nn.parallel.data_parallel.DataParallel"})
_FUNCTIONS = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})
_MESSAGE = (
    "{wrap} wraps an nn.{kind} directly ({what}): the replicas run nn.{kind}.forward, where nothing can call "
    "flatten_parameters(), so every call warns that the weights are not one contiguous chunk and copies them; "
    "wrap a module whose forward calls self.<rnn>.flatten_parameters() first instead"
)
_MAX_DEPTH = 8


class DataParallelWrapsRnn(Rule):
    code = "DPR005"
    name = "data-parallel-wraps-rnn"
    summary = "nn.DataParallel given a torch RNN itself rather than a module that flattens it"

    valid_examples = (
        "import torch.nn as nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lstm = nn.LSTM(8, 8)\n"
        "    def forward(self, x):\n"
        "        self.lstm.flatten_parameters()\n"
        "        return self.lstm(x)[0]\n"
        "model = nn.DataParallel(Encoder())\n",
        # DistributedDataParallel runs the RNN's own forward too, but on one device per process.
        "import torch.nn as nn\n"
        "model = nn.parallel.DistributedDataParallel(nn.LSTM(8, 8).cuda(0), device_ids=[0])\n",
    )
    invalid_examples = (
        Example("import torch.nn as nn\nmodel = nn.DataParallel(nn.GRU(8, 8).cuda())\n", None),
        Example(
            "import torch\n"
            "class Tagger(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.rnn = torch.nn.LSTM(8, 8)\n"
            "        self.parallel = torch.nn.DataParallel(self.rnn)\n"
            "    def forward(self, x):\n"
            "        return self.parallel(x)[0]\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        resolver = analysis.resolver
        for call in resolver.calls:
            scope = resolver.call_scopes[call]
            callee = canonical(resolver.qualified_name(call.func, scope))
            if callee not in _WRAPPERS and callee not in _FUNCTIONS:
                continue
            module = call_argument(call, 0, "module")
            if module is None:
                continue
            found = _rnn_of(analysis, module, scope, 0)
            if found is not None:
                kind, what = found
                wrap = "nn.DataParallel(...)" if callee in _WRAPPERS else "data_parallel(...)"
                yield Violation(self.code, _MESSAGE.format(wrap=wrap, what=what, kind=kind), call)


def _rnn_of(analysis: FileAnalysis, node: cst.BaseExpression, scope: Scope, depth: int) -> Optional[tuple]:
    """(kind, how it reads) when `node` is a torch RNN: built here, named, or an RNN attribute of the class."""
    if depth > _MAX_DEPTH:
        return None
    code = analysis.module.code_for_node
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MODULE_METHODS_RETURNING_SELF:
            return _rnn_of(analysis, func.value, scope, depth + 1)  # `nn.GRU(...).cuda()`
        kind = rnn_kind(analysis.resolver.qualified_name(func, scope))
        if kind:
            return kind, f"a new {code(func)}"
        return _returned_by(analysis, func, scope, depth) or _built_elsewhere(analysis, func)
    if isinstance(node, cst.Name):
        bindings = analysis.resolver.bindings(node.value, scope)
        # A member of an unpacked tuple (`rnn, _ = build()`) carries the whole value: not followed here.
        values = [binding.value if binding.kind != UNPACK else None for binding in bindings]
        if not values or any(value is None for value in values):
            return None  # a parameter, a loop variable, or an assignment this cannot follow
        found = [_rnn_of(analysis, value, scope, depth + 1) for value in values]
        if all(found):
            return found[0][0], f"`{node.value}`, which holds {found[0][1]}"
        return None
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        cls = _enclosing_class(analysis, scope)
        # What the attribute holds besides this very wrap: `self.rnn = nn.DataParallel(self.rnn)` in a
        # method wraps the LSTM `__init__` stored there.
        fact = analysis.evaluated.attribute_fact(analysis.model.qualname(cls.node), node.attr.value) if cls else None
        always_one_rnn = fact is not None and len(fact.kinds) == 1 and not (
            fact.is_list or fact.sometimes or fact.maybe_none or fact.guess)
        if always_one_rnn:
            kind = next(iter(fact.kinds)).value
            return kind, f"self.{node.attr.value} (nn.{kind})"
    return None


def _built_elsewhere(analysis: FileAnalysis, func: cst.BaseExpression) -> Optional[tuple]:
    """What a factory function of another file of the project builds, as the project index found it."""
    if not isinstance(func, (cst.Name, cst.Attribute)):
        return None
    found = analysis.context.rnn_factory(analysis.module.code_for_node(func))
    if found is None:
        return None
    kind, where = found
    kinds = kind.split(" or ")
    either = f", an nn.{' or an nn.'.join(kinds)}" if len(kinds) > 1 else ""
    return kinds[0], f"what {where}() returns{either}"


def _returned_by(analysis: FileAnalysis, func: cst.BaseExpression, scope: Scope, depth: int) -> Optional[tuple]:
    """What a function of this file returns, when every return statement gives a torch RNN."""
    if not isinstance(func, cst.Name):
        return None
    definitions = [binding.node for binding in analysis.resolver.bindings(func.value, scope)]
    if len(definitions) != 1 or not isinstance(definitions[0], cst.FunctionDef):
        return None
    function = definitions[0]
    inner = analysis.resolver.scope_of(function)
    returns = [node.value for node in iter_nodes(function.body, (cst.Return,), skip_nested_scopes=True)]
    found = [_rnn_of(analysis, value, inner, depth + 1) if value is not None else None for value in returns]
    if found and all(found):
        return found[0][0], f"{found[0][1]} from {func.value}()"
    return None


def _enclosing_class(analysis: FileAnalysis, scope: Optional[Scope]):
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    if scope is None:
        return None
    return next((cls for cls in analysis.model.classes if cls.node is scope.node), None)
