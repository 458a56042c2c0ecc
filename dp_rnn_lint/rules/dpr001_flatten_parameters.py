"""DPR001: RNN used in a forward pass without `flatten_parameters()`.

## What it does
Flags an `nn.RNN`, `nn.LSTM` or `nn.GRU` submodule (or an `nn.ModuleList` of them) that runs in
`forward`, or in a method `forward` reaches through `self.method(...)`, without a call to its
`flatten_parameters()` earlier on that path. The RNN may be built by the class, by a base class in
any file of the project, by a factory function of any module, or handed to the constructor by callers
elsewhere in the project (an RNN class, or an RNN instance); `nn` may come through a star import, the
class may be the project's own subclass of `nn.LSTM` (through mixins too), and a class may be chosen
by `getattr(nn, name)` where `name` holds a string naming one. Also flags a subclass of `nn.LSTM`,
`nn.GRU` or `nn.RNN` whose `forward` replaces its own weights and then runs `super().forward(...)`.

Each path through `forward` counts: an RNN run in both arms of an `if` is reported in each arm that has
no compaction before it, a `flatten_parameters()` under `if not self.training:` does not cover training,
an RNN handed to a helper (`self.run(x, self.lstm)`) is reported where the helper calls it, and when
`forward` comes from a base class in another file, the methods of the class it runs (`self._forward()`)
are the forward pass; so is a method that the forward pass of another module class calls on its instance
of the class (`self.question.encode_all(q)`), in this file or in one that builds the class, the instance
built there or handed to the holder's constructor by a function of the holder's file.

## Why is this bad?
`nn.DataParallel` replicates the model onto every GPU for every forward pass. A replica's RNN weights
are views into the broadcast parameters, not one contiguous chunk, so cuDNN warns on every call

    UserWarning: RNN module weights are not part of single contiguous chunk of memory. This means
    they need to be compacted at every call, possibly greatly increasing memory usage. To compact
    weights again call flatten_parameters().

and copies the weights each time. Only code in the forward pass runs on the replicas, so a call in
`__init__` does not help, and one after the RNN has run comes too late.

## Example
```python
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out
```

## Use instead
```python
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, x):
        self.lstm.flatten_parameters()
        out, _ = self.lstm(x)
        return out
```

## Known problems
A method of a submodule that another module's forward calls directly (`self.q_emb.forward_all(q)` rather
than `self.q_emb(q)`) counts as part of the forward pass only when both classes are in one file and the
outer class builds the submodule itself; an RNN kept by an object that is not a module (a helper stack
the forward builds, as an RNNG parser's stack LSTM) is not followed. What counts as an RNN and the limits
of the analysis every rule shares: docs/limits.md.

## Fix safety
Safe. The fix inserts `self.<rnn>.flatten_parameters()` as the first statement of the method that
runs the RNN (a loop over the members for an `nn.ModuleList`; guarded by `if self.<rnn> is not None:`
when the attribute is `None` in some configurations). On one device the weights are already
contiguous and the call does nothing. When the method swaps the RNN's weights before running it
(weight drop, as in AWD-LSTM), the call goes just before the statement that runs the RNN; in an RNN
subclass that swaps its own weights, `self.flatten_parameters()` goes just before the statement that
runs `super().forward(...)`. Where the attribute holds a torch RNN only in some configurations (a type
switch, a factory that returns another module on some paths, or a module callers hand in), the call is
guarded by `if isinstance(self.<rnn>, nn.RNNBase):`; for an `nn.ModuleList` whose members are torch
RNNs only in some configurations, or only some of them (a custom layer, a weight-drop wrapper), the
loop's call is guarded the same way, member by member.

An RNN handed to a helper is compacted in the method that hands it over, where it has its name.

No fix is offered when it could not be placed safely: the weights are replaced on the RNN's own line,
the method is shared with another class of the file whose attribute is not the same kind of RNN, or
the method's docstring shares its line with code.

## How to suppress
Put `# noqa: DPR001` on the reported line (the line where the call starts); a suppressed finding is
not fixed either. With flake8, `--extend-ignore=DPR001` or a `per-file-ignores` entry works as usual.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.dataflow import fresh_name, names_used
from ..analysis.forward_path import (EVERY_RNN, Flatten, Invocation, WeightReplacement, dominates, entry_of,
                                     flatten_call_sites)
from ..analysis.modules import RnnSubmodule, self_name
from ..analysis.names import IMPORT
from ..findings import Fix, InsertAtBodyStart, InsertBeforeStatement, Violation
from .base import Example, Rule


class FlattenParameters(Rule):
    code = "DPR001"
    name = "rnn-without-flatten-parameters"
    summary = "RNN used in a forward pass without flatten_parameters()"

    valid_examples = (
        "import torch.nn as nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lstm = nn.LSTM(8, 8)\n"
        "    def forward(self, x):\n"
        "        self.lstm.flatten_parameters()\n"
        "        return self.lstm(x)[0]\n",
        # Cells have no flatten_parameters().
        "import torch.nn as nn\n"
        "class Decoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.cell = nn.LSTMCell(8, 8)\n"
        "    def forward(self, x, state):\n"
        "        return self.cell(x, state)\n",
        # Not on the forward path: DataParallel never runs generate() on replicas.
        "import torch.nn as nn\n"
        "class LanguageModel(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8)\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "    def generate(self, x):\n"
        "        return self.gru(x)[0]\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lstm = nn.LSTM(8, 8)\n"
            "    def forward(self, x):\n"
            "        return self.lstm(x)[0]\n",
            "import torch.nn as nn\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lstm = nn.LSTM(8, 8)\n"
            "    def forward(self, x):\n"
            "        self.lstm.flatten_parameters()\n"
            "        return self.lstm(x)[0]\n",
        ),
        Example(
            "from torch import nn\n"
            "class Stack(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.layers = nn.ModuleList([nn.GRU(8, 8) for _ in range(2)])\n"
            "    def forward(self, x):\n"
            "        for layer in self.layers:\n"
            "            x, _ = layer(x)\n"
            "        return x\n",
            "from torch import nn\n"
            "class Stack(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.layers = nn.ModuleList([nn.GRU(8, 8) for _ in range(2)])\n"
            "    def forward(self, x):\n"
            "        for rnn in self.layers:\n"
            "            rnn.flatten_parameters()\n"
            "        for layer in self.layers:\n"
            "            x, _ = layer(x)\n"
            "        return x\n",
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        for cls in analysis.checked_classes:
            path = analysis.forward_path(cls)
            if not path.rnns:
                continue
            for attr, rnn in path.rnns.items():
                yield from self._check_attribute(analysis, cls, path, attr, rnn)
        yield from self._check_rnn_subclasses(analysis)

    def _check_rnn_subclasses(self, analysis: FileAnalysis) -> Iterator[Violation]:
        """An nn.LSTM subclass whose forward replaces its weights and then runs torch's forward: the weights
        it runs are not one chunk, on every device; the fix compacts them after the replacement."""
        model = analysis.model
        for node in model.rnn_subclasses():
            if not analysis.context.in_scope(model.qualname(node)):
                continue
            found = model.weight_swap(node)
            if found is None:
                continue
            forward, statement, call = found
            me = self_name(forward) or "self"
            message = (
                f"{node.name.value} ({model.rnn_subclass_kind(node)} subclass) replaces its weights in forward and then "
                f"runs the inherited forward without {me}.flatten_parameters() after the replacement: under "
                "DataParallel every replica's RNN weights are non-contiguous and get copied on every call"
            )
            fix = Fix((InsertBeforeStatement(statement, ((0, f"{me}.flatten_parameters()"),)),))
            yield Violation(self.code, message, call, fix)

    def _check_attribute(self, analysis, cls, path, attr: str, rnn: RnnSubmodule) -> Iterator[Violation]:
        """A finding at each call that runs the RNN first on some path through forward's conditionals with
        no compaction before it on that path (one fix serves calls of the same method)."""
        events = path.events
        for first, event in enumerate(events):
            if not (isinstance(event, Invocation) and event.attr == attr):
                continue
            replaced = [i for i, e in enumerate(events[:first]) if isinstance(e, WeightReplacement) and e.attr == attr]
            start = replaced[-1] if replaced else -1
            if any((isinstance(e, Flatten) and e.attr in (attr, EVERY_RNN) or isinstance(e, Invocation) and e.attr == attr)
                   and dominates(e, event) for e in events[start + 1:first]):
                continue  # compacted first on every path here, or run before on every path (reported there)
            yield self._violation(analysis, cls, events, first, attr, rnn, replaced)

    def _violation(self, analysis, cls, events, first: int, attr: str, rnn: RnnSubmodule, replaced) -> Violation:
        invocation: Invocation = events[first]
        replacement = events[replaced[-1]] if replaced else None
        me = self_name(invocation.method) or "self"
        target = f"{me}.{attr}"
        if rnn.is_list:
            # Mixed members, or members of another module in some configurations: only the RNNs compact.
            kind = f"{rnn.kind} members among other modules, a ModuleList" if rnn.guarded else f"{rnn.kind}, a ModuleList"
        else:
            kind = f"{rnn.kind} in some configurations, another module in others" if rnn.guarded else rnn.kind
        message = (
            f"{target} ({kind}) runs in the forward pass without "
            f"{'flatten_parameters() on each member' if rnn.is_list else target + '.flatten_parameters()'} before it: "
            "under DataParallel every replica's RNN weights are non-contiguous and get copied on every call"
        )
        message += self._context(analysis, cls, events, first, attr, bool(replaced)) + analysis.scope_note(cls)
        fix = None
        if _same_rnn_in_every_class_sharing(analysis, invocation.method, attr, rnn):
            fix = self._fix(invocation, attr, rnn, me, replacement, _rnn_base_spelling(analysis))
        return Violation(self.code, message, invocation.call, fix, subject=target)

    @staticmethod
    def _context(analysis, cls, events, first: int, attr: str, weights_replaced: bool) -> str:
        if weights_replaced:
            return "; its weights are replaced first, so flatten_parameters() must come after that, just before the RNN runs"
        before = [e for e in events[:first] if isinstance(e, Flatten) and e.attr in (attr, EVERY_RNN)]
        if any(eval_only for e in before for _, _, eval_only in e.conditions):
            return ("; the flatten_parameters() call before it runs only in eval mode (under a test of self.training), "
                    "and DataParallel trains in train mode")
        entry = entry_of(events[first])
        holder = analysis.forward_path(cls).held_entries.get(entry)
        if holder is not None:
            return (f"; {entry}() runs on the replicas too: the forward pass of {holder} calls it on its instance of "
                    f"{analysis.model.qualname(cls.node)}, and a flatten_parameters() call in forward does not cover it")
        after = [e for e in events[first:] if isinstance(e, Flatten) and e.attr == attr]
        if any(dominates(events[first], e) for e in after):
            return "; the flatten_parameters() call on the forward path comes after the RNN has run"
        if before or after:
            return "; the flatten_parameters() call on the forward path is in another branch, not on this path"
        sites = flatten_call_sites(analysis.model, cls, attr)
        if "__init__" in sites:
            return "; the call in __init__ runs only once, on the original module, never on the replicas"
        if sites:
            return f"; the call in {sites[0]}() is not on the forward path"
        return ""

    @staticmethod
    def _fix(invocation: Invocation, attr: str, rnn: RnnSubmodule, me: str, replacement,
             rnn_base: str) -> Optional[Fix]:
        if rnn.is_list:
            loop_name = fresh_name("rnn", names_used(invocation.method))
            lines = ((0, f"for {loop_name} in {me}.{attr}:"), (1, f"{loop_name}.flatten_parameters()"))
            if rnn.guarded:  # members of another module (a custom layer, a weight-drop wrapper) are skipped
                lines = (lines[0], (1, f"if isinstance({loop_name}, {rnn_base}):"), (2, f"{loop_name}.flatten_parameters()"))
        elif rnn.guarded:
            # Only the configurations that build a torch RNN have flatten_parameters() to call.
            lines = ((0, f"if isinstance({me}.{attr}, {rnn_base}):"), (1, f"{me}.{attr}.flatten_parameters()"))
        elif rnn.optional:
            # `self.rnn = nn.LSTM(...) if use_rnn else None`: flatten only when there is one.
            lines = ((0, f"if {me}.{attr} is not None:"), (1, f"{me}.{attr}.flatten_parameters()"))
        else:
            lines = ((0, f"{me}.{attr}.flatten_parameters()"),)
        if replacement is not None:
            # Just before the statement that runs the RNN, which must come after the replacement.
            if invocation.statement is None or invocation.statement in replacement.statements:
                return None
            return Fix((InsertBeforeStatement(invocation.statement, lines),))
        if _starts_with_docstring_and_more(invocation.method):
            return None  # `"""Doc."""; out = self.rnn(x)`: nothing can go first without losing the docstring
        return Fix((InsertAtBodyStart(invocation.method, lines),))


def _same_rnn_in_every_class_sharing(analysis: FileAnalysis, method, attr: str, rnn: RnnSubmodule) -> bool:
    """A fix in a method inherited by several classes runs for all of them: only safe when `attr`
    holds the same kind of RNN (or list of them) in each."""
    for cls in analysis.model.classes:
        owners = [owner for owner in cls.mro() if method in owner.methods.values()]
        if not owners:
            continue
        if attr not in analysis.model.assigned_attributes(cls):
            continue  # a class that never sets it cannot run the method (an abstract base)
        other = analysis.model.rnn_submodules(cls).get(attr)
        if (other is None or other.is_list != rnn.is_list or (other.optional and not rnn.optional)
                or (other.guarded and not rnn.guarded)):
            return False
    return True


def _rnn_base_spelling(analysis: FileAnalysis) -> str:
    """How the file names torch.nn.RNNBase through its own imports (`nn.RNNBase`, `torch.nn.RNNBase`)."""
    scope = analysis.resolver.module_scope
    spellings = {}
    for name, bindings in scope.bindings.items():
        if len(bindings) == 1 and bindings[0].kind == IMPORT:
            spellings.setdefault(bindings[0].qualified_name, name)
    if "torch.nn" in spellings:
        return f"{spellings['torch.nn']}.RNNBase"
    if "torch" in spellings:
        return f"{spellings['torch']}.nn.RNNBase"
    return "__import__('torch').nn.RNNBase"


def _starts_with_docstring_and_more(method) -> bool:
    body = method.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return False
    first = body.body[0]
    return (
        isinstance(first, cst.SimpleStatementLine)
        and len(first.body) > 1
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
