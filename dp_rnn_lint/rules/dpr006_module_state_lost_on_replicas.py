"""DPR006: module state written in the forward pass is lost on DataParallel's replicas.

## What it does
Flags `self.<attr> = ...`, `self.<attr> += ...` and `setattr(self, "<attr>", ...)` on the forward path of
a module class that holds an RNN, where the attribute is not a submodule or parameter, when the class
reads the attribute back on the forward path (a stateful model keeping its last hidden state for the next
call), or when DataParallel is known to run the class (`--scope wrapped`, or a wrap the project index
resolves to it).

## Why is this bad?
DataParallel runs each call on fresh replicas of the module and throws them away afterwards. An attribute
a replica sets in `forward` is set on that replica only: the original module never sees it, so the next
call starts again from the value the attribute had before DataParallel was used (for a hidden state kept
between batches of a stream: from nothing, every time), with no error or warning. On one device the
same code works, which is why it is easy to miss.

## Example
```python
import torch.nn as nn


class StreamingLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.hidden = None

    def forward(self, x):
        self.lstm.flatten_parameters()
        out, self.hidden = self.lstm(x, self.hidden)
        return out
```

## Use instead
```python
import torch.nn as nn


class StreamingLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)

    def forward(self, x, hidden=None):
        # The caller keeps the state between calls, batch first (see DPR004).
        self.lstm.flatten_parameters()
        out, hidden = self.lstm(x, hidden)
        return out, hidden
```

## Fix safety
No fix is offered: where the state should live (returned to the caller, or a buffer updated in place)
is a design decision, and the callers change with it.

## How to suppress
Put `# noqa: DPR006` on the reported line.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.modules import ModuleClass, iter_nodes, self_name
from ..analysis.torch_names import canonical, is_module_base, rnn_kind
from ..findings import Violation
from .base import Example, Rule

_MESSAGE = (
    "forward sets self.{attr}, which is not a submodule or parameter: under DataParallel each call runs on "
    "fresh replicas that are discarded afterwards, so the value never reaches the module and the next call "
    "{sees}; return it to the caller (or keep it in a buffer updated in place){note}"
)
_READ_BACK = "reads the old value again"
_NOT_READ = "and the caller see the old value"
_STRUCTURAL_CALLS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


class ModuleStateLostOnReplicas(Rule):
    code = "DPR006"
    name = "module-state-lost-on-replicas"
    summary = "forward stores state on self, which DataParallel's replicas discard"

    valid_examples = (
        # The state goes back to the caller.
        "import torch.nn as nn\n"
        "class LM(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8)\n"
        "    def forward(self, x, hidden=None):\n"
        "        self.gru.flatten_parameters()\n"
        "        return self.gru(x, hidden)\n",
        # A buffer updated in place: the first replica shares the module's buffer.
        "import torch\n"
        "import torch.nn as nn\n"
        "class LM(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(8, 8)\n"
        "        self.register_buffer('calls', torch.zeros(()))\n"
        "    def forward(self, x):\n"
        "        self.gru.flatten_parameters()\n"
        "        self.calls.add_(1)\n"
        "        return self.gru(x)[0]\n",
    )
    invalid_examples = (
        Example(
            "import torch.nn as nn\n"
            "class LM(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.gru = nn.GRU(8, 8)\n"
            "        self.hidden = None\n"
            "    def forward(self, x):\n"
            "        self.gru.flatten_parameters()\n"
            "        out, hidden = self.gru(x, self.hidden)\n"
            "        self.hidden = hidden.detach()\n"
            "        return out\n",
            None,
        ),
    )

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        for cls in analysis.checked_classes:
            path = analysis.forward_path(cls)
            if path.forward is None or not path.rnns:
                continue
            qualname = analysis.model.qualname(cls.node)
            site = analysis.context.wrap_site(qualname) or analysis.direct_wrap_site(cls)
            methods = [path.forward, *path.entries]
            writes, reads = _state_writes_and_reads(methods)
            structural, buffers = _structural_attributes(analysis, cls)
            reported: Set[str] = set()
            for attr, node in writes:
                if attr in structural or attr in path.rnns or attr in reported:
                    continue
                if attr in buffers and isinstance(node, cst.Attribute) and id(node) in _augmented(methods):
                    continue  # `self.steps += 1` on a buffer updates it in place
                if attr not in reads and site is None:
                    continue  # never read back, and nothing says DataParallel runs the class
                reported.add(attr)
                note = f" (wrapped at {site})" if site else ""
                sees = _READ_BACK if attr in reads else _NOT_READ
                yield Violation(self.code, _MESSAGE.format(attr=attr, sees=sees, note=note), node)


def _state_writes_and_reads(methods: List[cst.FunctionDef]) -> Tuple[List[Tuple[str, cst.CSTNode]], Set[str]]:
    """(attribute, node) for each `self.<attr>` written in the methods, and the attributes they read."""
    writes: List[Tuple[str, cst.CSTNode]] = []
    targets: Set[int] = set()
    reads: Set[str] = set()
    for method in methods:
        me = self_name(method)
        if me is None:
            continue
        for node in iter_nodes(method.body, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call), skip_nested_scopes=True):
            if isinstance(node, cst.Call):
                attr = _setattr_on(node, me)
                if attr is not None:
                    writes.append((attr, node))
                continue
            found = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in found:
                for element in _target_elements(target):
                    if _is_self_attribute(element, me):
                        writes.append((element.attr.value, element))
                        targets.add(id(element))
                        if isinstance(node, cst.AugAssign):
                            reads.add(element.attr.value)  # `self.steps += 1` reads it first
        for node in iter_nodes(method.body, (cst.Attribute,), skip_nested_scopes=True):
            if id(node) not in targets and _is_self_attribute(node, me):
                reads.add(node.attr.value)
    return writes, reads


def _augmented(methods: List[cst.FunctionDef]) -> Set[int]:
    """The targets of augmented assignments (`self.x += ...`) in the methods, by identity."""
    return {id(node.target) for method in methods
            for node in iter_nodes(method.body, (cst.AugAssign,), skip_nested_scopes=True)}


def _target_elements(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_elements(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_elements(target.value)
    else:
        yield target


def _is_self_attribute(node: cst.CSTNode, me: str) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me


def _setattr_on(call: cst.Call, me: str) -> Optional[str]:
    if not (isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) >= 2):
        return None
    owner, name = call.args[0].value, call.args[1].value
    if isinstance(owner, cst.Name) and owner.value == me and isinstance(name, cst.SimpleString):
        return name.evaluated_value if isinstance(name.evaluated_value, str) else None
    return None


def _structural_attributes(analysis: FileAnalysis, cls: ModuleClass) -> Tuple[Set[str], Set[str]]:
    """Attributes of the class (and its bases in this file) that hold submodules or parameters, and the
    names of its registered buffers."""
    found: Set[str] = set()
    buffers: Set[str] = set()
    for owner in cls.mro():
        for method in owner.methods.values():
            me = self_name(method)
            if me is None:
                continue
            scope = analysis.resolver.scope_of(method)
            for node in iter_nodes(method.body, (cst.Assign, cst.Call), skip_nested_scopes=True):
                if isinstance(node, cst.Call):
                    func = node.func
                    if (isinstance(func, cst.Attribute) and node.args and isinstance(node.args[0].value, cst.SimpleString)):
                        name = str(node.args[0].value.evaluated_value)
                        if func.attr.value in ("register_parameter", "add_module", "register_module"):
                            found.add(name)
                        elif func.attr.value == "register_buffer":
                            buffers.add(name)
                    continue
                if not isinstance(node.value, cst.Call):
                    continue
                callee = canonical(analysis.resolver.qualified_name(node.value.func, scope))
                local = next((c for c in analysis.model.classes if isinstance(node.value.func, cst.Name)
                              and c.name == node.value.func.value), None)
                if callee in _STRUCTURAL_CALLS or is_module_base(callee) or rnn_kind(callee) or local is not None or (
                        callee is not None and callee.startswith("torch.nn.") and callee.rsplit(".", 1)[1][:1].isupper()):
                    for target in node.targets:
                        if _is_self_attribute(target.target, me):
                            found.add(target.target.attr.value)
    return found, buffers
