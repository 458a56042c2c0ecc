"""DPR005: DataParallel wrapping an RNN directly.

## What it does
Flags `nn.DataParallel(rnn)` and `data_parallel(rnn, inputs)` whose module is a torch RNN itself: an
`nn.LSTM`/`nn.GRU`/`nn.RNN` on every path, as the project's evaluator finds it: built in the call, a name
bound to one, what a function of any file of the project returns when its every return is one, or an
RNN attribute of the class the call is in (`nn.DataParallel(self.lstm)`, `self.lstm =
nn.DataParallel(self.lstm)` in a method, or `self.lstm = nn.DataParallel(nn.LSTM(...))` in `__init__`).

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

## Known problems
DPR005 asks the evaluator what the wrapped module is (a constructor call, a name bound to one, what a
function of any file of the project returns, an RNN attribute of the enclosing class) and reports it
when it is a torch RNN on every path; a factory that returns an RNN only on some paths is not reported.

## Fix safety
No fix is offered: the RNN must move into a module of its own (or the wrap must move to the module that
holds it), which changes the model's structure and the names of its saved weights.

## How to suppress
Put `# noqa: DPR005` on the reported line.
"""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileAnalysis
from ..analysis.modules import call_argument
from ..analysis.project import shown_path
from ..analysis.torch_names import canonical
from ..analysis.values import describe_kinds
from ..findings import Violation
from .base import Example, Rule

_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                       "torch.nn.parallel.data_parallel.DataParallel"})
_FUNCTIONS = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})
_MESSAGE = (
    "{wrap} wraps a torch RNN directly ({what}): the replicas run the RNN's own forward, where "
    "nothing can call flatten_parameters(), so every call warns that the weights are not one contiguous chunk and "
    "copies them; wrap a module whose forward calls self.<rnn>.flatten_parameters() first instead"
)


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
            same = analysis.ast_call(call)
            fact = analysis.evaluated.wrapped_rnn(same) if same is not None else None
            # A torch RNN on every path: nothing else (another module, None, a list) is ever wrapped there.
            if fact is not None and not (fact.is_list or fact.sometimes or fact.maybe_none or fact.guess):
                wrap = "nn.DataParallel(...)" if callee in _WRAPPERS else "data_parallel(...)"
                factory = analysis.evaluated.factory_of(same)
                made = f"what {shown_path(factory.path)}:{factory.qualname}() returns, " if factory is not None else ""
                what = f"`{_shown(analysis.module.code_for_node(module))}` is {made}an {describe_kinds(fact.kinds)}"
                yield Violation(self.code, _MESSAGE.format(wrap=wrap, what=what), call)


def _shown(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."
