"""DPR006: module state written in the forward pass is lost on DataParallel's replicas.

## What it does
Flags `self.<attr> = ...`, `self.<attr> += ...` and `setattr(self, "<attr>", ...)` on the forward path of
a module class that holds an RNN, where the attribute is not a submodule or parameter, when `forward`
reads the attribute before setting it, so that it uses a value from an earlier call (a stateful model
keeping its last hidden state for the next batch), or when DataParallel is known to run the class
(`--scope wrapped`, or a wrap the project index resolves to it; a class a wrap resolves to is checked
whether or not it holds an RNN itself). A value set and then read within one call is scratch, not
state: it is not flagged unless the class is known to be wrapped and something outside the call uses
the attribute (`__init__` or another method mentions it, or another file of the project does, as a
training loop printing `model.module.last_loss`; `args.batch_size` or `config.batch_size` there is a
setting, not a read of `self.batch_size`). `self.n += 1` is judged only where the class sets `n`
to a plain number (a buffer updated in place is fine).

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

## Preview
This rule runs only with `--preview` (`preview = true`; `--dp-rnn-preview` with flake8). On code outside
the labelled corpus, too many of its findings were scratch state a helper sets before `forward` reads it
in the same call (benchmarks/review.tsv): it stays in preview until its reviewed precision reaches 0.9.

## Fix safety
No fix is offered: where the state should live (returned to the caller, or a buffer updated in place)
is a design decision, and the callers change with it.

## How to suppress
Put `# noqa: DPR006` on the reported line.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.modules import ModuleClass, is_self_attribute, iter_nodes, self_name
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
            if path.forward is None:
                continue
            direct = analysis.direct_wrap_site(cls)
            if not path.rnns and direct is None:
                continue  # a class DataParallel wraps itself is checked whatever it holds; others need an RNN
            qualname = analysis.model.qualname(cls.node)
            site = analysis.context.wrap_site(qualname) or direct
            events = _Events()
            events.walk(path.forward.body, self_name(path.forward))
            # The same with the helpers forward calls run where it calls them: a helper that sets
            # `self.batch_size` before forward reads it has written first, whatever the file's order says.
            in_order = _Events({method.name.value: method for method in path.entries})
            in_order.walk(path.forward.body, self_name(path.forward))
            helper_events = _Events()
            for helper in path.entries:
                helper_events.walk(helper.body, self_name(helper))
            structural, plain = _attribute_kinds(analysis, cls)
            read_after: Optional[Set[str]] = None  # what the module is used for after a call (made when asked)
            reported: Set[str] = set()
            for kind, attr, node in events.order + helper_events.order:
                if kind != "write" or attr in reported or attr in structural or attr in path.rnns:
                    continue
                if isinstance(node, _Augmented) and attr not in plain:
                    continue  # `self.steps += 1` may update a buffer in place: only a plain value is judged
                read_back = in_order.read_before_write(attr)
                if not read_back and site is None:
                    continue  # set before it is read (or never read), and nothing says DataParallel runs it
                if not read_back:
                    if read_after is None:
                        read_after = _mentioned_off_the_path(analysis, path) | set(analysis.context.read_elsewhere)
                    if attr not in read_after:
                        continue  # nothing but this call uses it: losing it with the replica loses nothing
                reported.add(attr)
                note = f" (wrapped at {site})" if site else ""
                sees = _READ_BACK if read_back else _NOT_READ
                yield Violation(self.code, _MESSAGE.format(attr=attr, sees=sees, note=note), _located(node))


class _Augmented:
    """An augmented assignment's target, as written (`self.steps` of `self.steps += 1`)."""

    def __init__(self, target: cst.Attribute) -> None:
        self.target = target


def _located(node) -> cst.CSTNode:
    return node.target if isinstance(node, _Augmented) else node


class _Events:
    """Reads and writes of `self.<attr>` in a method's body, in the order they run: a right-hand side is
    read before its targets are written."""

    def __init__(self, helpers: Optional[Dict[str, cst.FunctionDef]] = None) -> None:
        self.order: List[Tuple[str, str, object]] = []
        self._helpers = helpers or {}  # methods called as `self.<name>(...)`, walked where they are called
        self._entered: Set[str] = set()
        self._conditions = 0  # how many ifs, loops and trys hold the node being walked
        self._conditional_writes: Set[int] = set()

    def read_before_write(self, attr: str) -> bool:
        """Whether a read of the attribute can run before any write of it: a write under a condition (`if
        new_epoch: self.clear_totals()`) may not run, so it does not count."""
        for kind, name, node in self.order:
            if name == attr and kind == "read":
                return True
            if name == attr and id(node) not in self._conditional_writes:
                return False
        return False

    def walk(self, node: cst.CSTNode, me: Optional[str]) -> None:
        if me is None or isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return
        if isinstance(node, (cst.If, cst.For, cst.While, cst.Try, cst.IfExp)):
            self._conditions += 1
            try:
                for child in node.children:
                    self.walk(child, me)
            finally:
                self._conditions -= 1
            return
        if isinstance(node, cst.Assign):
            self.walk(node.value, me)
            for target in node.targets:
                self._write_target(target.target, me, target.target)
            return
        if isinstance(node, cst.AnnAssign):
            if node.value is not None:  # `self.scale: float` alone sets nothing
                self.walk(node.value, me)
                self._write_target(node.target, me, node.target)
            return
        if isinstance(node, cst.AugAssign):
            self.walk(node.value, me)
            if is_self_attribute(node.target, me) is not None:
                self._event("read", node.target.attr.value, node.target)
                self._event("write", node.target.attr.value, _Augmented(node.target))
            else:
                self.walk(node.target, me)
            return
        if isinstance(node, cst.Call):
            for child in node.children:
                self.walk(child, me)
            attr = _setattr_on(node, me)
            if attr is not None:
                self._event("write", attr, node)
            helper = is_self_attribute(node.func, me)
            if helper in self._helpers and helper not in self._entered:
                self._entered.add(helper)  # its first call decides what it wrote before forward reads on
                method = self._helpers[helper]
                self.walk(method.body, self_name(method))
            return
        if is_self_attribute(node, me) is not None:
            self._event("read", node.attr.value, node)
            return
        for child in node.children:
            self.walk(child, me)

    def _write_target(self, target: cst.BaseExpression, me: str, node: cst.CSTNode) -> None:
        for element in _target_elements(target):
            if is_self_attribute(element, me) is not None:
                self._event("write", element.attr.value, element)
            else:
                self.walk(element, me)  # `self.cache[key] = v` reads self.cache

    def _event(self, kind: str, attr: str, node) -> None:
        self.order.append((kind, attr, node))
        if kind == "write" and self._conditions:
            self._conditional_writes.add(id(node))


def _target_elements(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_elements(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_elements(target.value)
    else:
        yield target


def _setattr_on(call: cst.Call, me: str) -> Optional[str]:
    if not (isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) >= 2):
        return None
    owner, name = call.args[0].value, call.args[1].value
    if isinstance(owner, cst.Name) and owner.value == me and isinstance(name, cst.SimpleString):
        return name.evaluated_value if isinstance(name.evaluated_value, str) else None
    return None


def _is_plain_value(value: cst.BaseExpression) -> bool:
    """A number, a string, None or a bool: no tensor, so no buffer."""
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.UnaryOperation)) or (
        isinstance(value, cst.Name) and value.value in ("None", "True", "False"))


def _mentioned_off_the_path(analysis: FileAnalysis, path) -> Set[str]:
    """Attribute names (of any object) that this file uses outside the forward path: set up in
    `__init__`, read by another method (`print_loss` reading `self.loss`), or by code that uses the module
    (`model.attention`). An attribute only the forward path mentions is scratch of the call."""
    on_path: Set[int] = set()
    for function in (path.forward, *path.entries):
        on_path.update(id(node) for node in iter_nodes(function, (cst.Attribute,)))
    own = {id(node) for node in iter_nodes(path.cls.node, (cst.Attribute,))}
    # Another class's `self.<name>` is its own attribute, not a use of this one.
    return {node.attr.value for node in iter_nodes(analysis.module, (cst.Attribute,))
            if id(node) not in on_path and (id(node) in own or not (isinstance(node.value, cst.Name)
                                                                    and node.value.value == "self"))}


def _attribute_kinds(analysis: FileAnalysis, cls: ModuleClass) -> Tuple[Set[str], Set[str]]:
    """Attributes of the class (and its bases in this file) that hold submodules or parameters, and those
    it sets to a plain value (a number, a string, None, a bool: no tensor, so no buffer)."""
    found: Set[str] = set()
    plain: Set[str] = set()
    for owner in cls.mro():
        for method in owner.methods.values():
            me = self_name(method)
            if me is None:
                continue
            scope = analysis.resolver.scope_of(method)
            for node in iter_nodes(method.body, (cst.Assign, cst.Call), skip_nested_scopes=True):
                if isinstance(node, cst.Call):
                    func = node.func
                    if (isinstance(func, cst.Attribute) and node.args and isinstance(node.args[0].value, cst.SimpleString)
                            and func.attr.value in ("register_parameter", "add_module", "register_module")):
                        found.add(str(node.args[0].value.evaluated_value))
                    continue
                if _is_plain_value(node.value):
                    plain.update(target.target.attr.value for target in node.targets
                                 if is_self_attribute(target.target, me) is not None)
                    continue
                if isinstance(node.value, cst.Tuple):  # `self.loss, self.steps = 0, 0`
                    for target in node.targets:
                        if isinstance(target.target, cst.Tuple) and len(target.target.elements) == len(node.value.elements):
                            plain.update(element.value.attr.value
                                         for element, value in zip(target.target.elements, node.value.elements)
                                         if _is_plain_value(value.value) and is_self_attribute(element.value, me) is not None)
                    continue
                if not isinstance(node.value, cst.Call):
                    continue
                callee = canonical(analysis.resolver.qualified_name(node.value.func, scope))
                local = next((c for c in analysis.model.classes if isinstance(node.value.func, cst.Name)
                              and c.name == node.value.func.value), None)
                if callee in _STRUCTURAL_CALLS or is_module_base(callee) or rnn_kind(callee) or local is not None or (
                        callee is not None and callee.startswith("torch.nn.") and callee.rsplit(".", 1)[1][:1].isupper()):
                    for target in node.targets:
                        if is_self_attribute(target.target, me) is not None:
                            found.add(target.target.attr.value)
    return found, plain
