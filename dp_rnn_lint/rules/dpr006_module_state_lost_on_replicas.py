"""DPR006: module state written in the forward pass is lost on DataParallel's replicas.

## What it does
Flags `self.<attr> = ...`, `self.<attr> += ...` and `setattr(self, "<attr>", ...)` on the forward path of
a module class (forward and the methods it calls on self), where the attribute is not a submodule or
parameter, when a read of the attribute on the forward path can run before this call writes it, so that
it uses a value from an earlier call (a stateful model keeping its last hidden state for the next batch,
a step counter, a one-time initialisation from the first batch), or when DataParallel is known to run the
class (`--scope wrapped`, or a wrap the project index resolves to it) and something outside the call reads
the attribute (another method of the file reads it, or another file of the project mentions it, as a
training loop printing `model.module.last_loss`; `args.batch_size` or `config.batch_size` there is a
setting, not a read of `self.batch_size`; setting it in `__init__` or a `reset()` reads nothing). Every
write of such an attribute that can outlive the call is reported.

Whether a read can come first is decided path by path: a write in both arms of an `if` counts, an arm
that ends in `return` or `raise` does not reach what follows, and a test that no call can change (a
setting only `__init__` sets, `self.cfg.mode.startswith("dep")`, a helper's parameter the call leaves at
a constant default) takes the same arm on every call, so its write counts. `self.training` is not such a
test: `model.eval()` changes it between calls. A value set and then read within one call is scratch, not
state. Not reported: a write of the constant `__init__` gives (losing it leaves that value anyway)
unless another method moves the attribute away from it (`print_loss` counting in `self.print_every`),
a value moved to another device or dtype (`self.window = self.window.to(x.device)`), a write that every
path overwrites before the call ends, state forward puts back to `__init__`'s value before it returns,
state that the forward pass of a module holding the class sets afresh in each of its calls through a
method of the class (a decoder calling `self.attention.init_states(x)` before it steps the attention in a
loop: the state lives for one call of the decoder), and `self.n += 1` unless the class sets `n` to a plain
number (a buffer updated in place is fine).

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
This rule runs only with `--preview` (`preview = true`; `--dp-rnn-preview` with flake8), and then looks at
every file with a `def forward`. On code outside the labelled corpus too many of its findings were not
lost state (benchmarks/review.tsv): caches recomputed when missing are reported as state, and so is state
a module carries between the calls its holder makes within one forward when the holder resets it in a
way not followed (below). It stays in preview until its reviewed precision reaches 0.9.

## Known problems
A holder's reset is followed only as `self.<attr>.<method>(...)` on the holder's forward pass, the holder
found in the class's file or in a file of the project that imports it, and only for a class whose file
names an RNN or imports from the project (the index's cheap screen): a reset through a loop over held
modules (`for m in self.cell.attention_mechanisms: m.clear_cache()`) is not seen, and the state is
reported. A forward inherited from a base class in another file is not
read: state that the base's methods carry (ELMo's `_EncoderBase._update_states`) is not found. Paths are
merged, not followed one by one: a write made under `if self.stateful and self.state is None:` and
always replaced under a later `if self.stateful:` is reported with the write that replaces it. In a
class a wrap resolves to, an attribute nothing but the forward path mentions is taken as scratch of the
call; "mentions" is a search by name: another file's `obj.<name>` counts whatever `obj` is
(`stats.batch_size` keeps a scratch `self.batch_size` flagged), except the usual names of a run's
settings (`args`, `opt`, `config`, `cfg`, `hparams`, `params`, `flags` and a few more:
`args.batch_size` is a setting), and a read through `getattr` is not seen.

## Fix safety
No fix is offered: where the state should live (returned to the caller, or a buffer updated in place)
is a design decision, and the callers change with it.

## How to suppress
Put `# noqa: DPR006` on the reported line.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from ..analysis import FileAnalysis
from ..analysis.modules import ModuleClass, bind_arguments, is_self_attribute, iter_nodes, self_name, without_calls_of
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
            qualname = analysis.model.qualname(cls.node)
            site = analysis.context.wrap_site(qualname) or direct
            events = _Events()
            events.walk(path.forward.body, self_name(path.forward))
            helper_events = _Events()
            for helper in path.entries:
                helper_events.walk(helper.body, self_name(helper))
            writes = [(attr, node) for kind, attr, node in events.order + helper_events.order if kind == "write"]
            # The same with the helpers forward calls run where it calls them: a helper that sets
            # `self.batch_size` before forward reads it has written first, whatever the file's order says.
            # A test on an attribute no call and no other method changes comes out the same on every call;
            # `training` changes between calls (`model.eval()`).
            initial = _initial_constants(analysis, cls)
            moved_elsewhere = _written_off_the_path(analysis, cls, path, initial)
            changing = {attr for attr, _ in writes} | moved_elsewhere | {"training"}
            in_order = _Events({method.name.value: method for method in path.entries}, changing=changing)
            in_order.walk(path.forward.body, self_name(path.forward))
            in_order.finish()
            structural, plain = _attribute_kinds(analysis, cls)
            assigned = {**events.assigned, **helper_events.assigned}
            read_after: Optional[Set[str]] = None  # what the module is used for after a call (made when asked)
            reset: Optional[Set[str]] = None  # what holders set afresh in each of their calls (made when asked)

            # A write of __init__'s value is lost harmlessly only while no other method moves the attribute
            # away from it (`print_loss` counting in `self.print_every` between forward's resets).

            def resets(attr: str, node: object) -> bool:
                value = assigned.get(id(node))
                return (attr in initial and attr not in moved_elsewhere and value is not None
                        and analysis.module.code_for_node(value) == initial[attr])

            verdicts: Dict[str, Optional[str]] = {}  # attribute -> what the next call sees, None: not lost
            for attr in _reset_before_returning(analysis, path.forward, initial):
                verdicts[attr] = None  # nothing this call leaves in it reaches the next one
            for attr, node in writes:
                if attr in structural or attr in path.rnns:
                    continue
                if isinstance(node, _Augmented) and attr not in plain:
                    continue  # `self.steps += 1` may update a buffer in place: only a plain value is judged
                if resets(attr, node):
                    continue  # it writes __init__'s value, which is what a lost write leaves anyway
                if _moves_itself(assigned.get(id(node)), attr):
                    continue  # `self.n = self.n.to(x.device)`: the next call moves it again, nothing is lost
                if attr not in verdicts:
                    verdicts[attr] = None
                    read_back = in_order.read_before_write(attr)
                    if read_back:
                        if reset is None:
                            reset = _reset_by_holders(analysis, cls)
                        # A holder starting it afresh in each of its calls: an earlier call's value is not read.
                        read_back = attr not in reset
                    if read_back:
                        verdicts[attr] = _READ_BACK
                    elif site is not None:
                        if read_after is None:
                            read_after = _mentioned_off_the_path(analysis, path) | set(analysis.context.read_elsewhere)
                        if attr in read_after:  # otherwise nothing but this call uses it: scratch
                            verdicts[attr] = _NOT_READ
                if verdicts[attr] is None or not in_order.is_live_out(node):
                    continue  # not lost state, or a write this call always overwrites before it ends
                note = f" (wrapped at {site})" if site else ""
                yield Violation(self.code, _MESSAGE.format(attr=attr, sees=verdicts[attr], note=note), _located(node))


_CONVERSIONS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "type_as", "contiguous"})


def _moves_itself(value: Optional[cst.BaseExpression], attr: str) -> bool:
    """`self.<attr>.to(device)` (and the other tensor methods that change only device, dtype or layout)."""
    moved, stripped = without_calls_of(value, _CONVERSIONS)
    return stripped and isinstance(moved, cst.Attribute) and moved.attr.value == attr and isinstance(moved.value, cst.Name)


def _written_off_the_path(analysis: FileAnalysis, cls: ModuleClass, path, initial: Dict[str, str]) -> Set[str]:
    """Attributes that methods other than `__init__` and those on the forward path set to something else
    than `__init__`'s constant (a `reset()` writing the constants again changes nothing)."""
    on_path = {path.forward, *path.entries}
    found: Set[str] = set()
    for owner in cls.mro():
        for name, method in owner.methods.items():
            me = self_name(method)
            if name == "__init__" or method in on_path or me is None:
                continue
            for node in iter_nodes(method.body, _ASSIGNMENTS, skip_nested_scopes=True):
                for element, assigned in _assigned_elements(node):
                    attr = is_self_attribute(element, me)
                    if attr is not None and not (assigned is not None and attr in initial
                                                 and analysis.module.code_for_node(assigned) == initial[attr]):
                        found.add(attr)
    return found


def _initial_constants(analysis: FileAnalysis, cls: ModuleClass) -> Dict[str, str]:
    """The plain constants `__init__` (the class's, or a base's in this file) gives attributes, as written."""
    found: Dict[str, str] = {}
    for owner in reversed(cls.mro()):
        init = owner.methods.get("__init__")
        me = self_name(init) if init is not None else None
        if me is None:
            continue
        # __init__ itself, and the methods it calls on the instance (`self.reset()` setting the totals)
        bodies = [(init.body, me)]
        for call in iter_nodes(init.body, (cst.Call,), skip_nested_scopes=True):
            called = is_self_attribute(call.func, me)
            method = cls.find_method(called) if called else None
            if method is not None and self_name(method[0]) is not None:
                bodies.append((method[0].body, self_name(method[0])))
        for body, owner_self in bodies:
            for node in iter_nodes(body, (cst.Assign, cst.AnnAssign), skip_nested_scopes=True):
                for element, value in _assigned_elements(node):
                    attr = is_self_attribute(element, owner_self)
                    if attr is not None and value is not None and _is_initial_literal(value):
                        found[attr] = analysis.module.code_for_node(value)
    return found


class _Augmented:
    """An augmented assignment's target, as written (`self.steps` of `self.steps += 1`)."""

    def __init__(self, target: cst.Attribute) -> None:
        self.target = target


def _located(node) -> cst.CSTNode:
    return node.target if isinstance(node, _Augmented) else node


class _Events:
    """Reads and writes of `self.<attr>` in a method's body, in the order they run: a right-hand side is
    read before its targets are written.

    A write counts as conditional when a branch of the same call may skip it; a test that comes out the
    same on every call (`if self.bos_type == "feats":` on a setting no call changes, a helper's
    `if not keep_states:` whose parameter the call leaves at its constant default) is no such branch: on
    one call the write runs before the read, or on no call at all. Both arms of an `if` writing the
    attribute is a write too.

    Alongside, which writes can be the last before the call ends (`live_out`): a write every path
    overwrites later in the same call (`self.state = zeros` when None, then `self.state = h_n`) loses
    nothing when its replica goes."""

    def __init__(self, helpers: Optional[Dict[str, cst.FunctionDef]] = None,
                 changing: Optional[Set[str]] = None) -> None:
        self.order: List[Tuple[str, str, object]] = []
        self.assigned: Dict[int, cst.BaseExpression] = {}  # a write's node -> the value it assigns
        self._helpers = helpers or {}  # methods called as `self.<name>(...)`, walked where they are called
        self._entered: Set[str] = set()
        # Attributes some call writes: a test reading one may come out differently from call to call.
        # None: every test may (the first walk, which only collects writes).
        self._changing = changing
        self._fixed: List[Set[str]] = [set()]  # per method walked: parameters with one constant at every call
        self._written: Set[str] = set()  # attributes every path to the node being walked has written
        # attribute -> the writes whose value may still be in it at the node being walked
        self._pending: Dict[str, Set[int]] = {}
        # per method being walked: the path states at its `return`s (forward's are the call's end)
        self._exits: List[List[Tuple[Set[str], Dict[str, Set[int]]]]] = [[]]
        self._read_first: Set[str] = set()
        self.live_out: Set[int] = set()

    def read_before_write(self, attr: str) -> bool:
        """Whether a read of the attribute can run before this call writes it: on some path to the read,
        nothing wrote it (a write under a condition, `if new_epoch: self.clear_totals()`, may not run)."""
        return attr in self._read_first

    def walk(self, node: cst.CSTNode, me: Optional[str]) -> None:
        if me is None or isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return
        if isinstance(node, cst.If):
            self._walk_if(node, me)
            return
        if isinstance(node, cst.IfExp):
            self.walk(node.test, me)
            before = self._state()
            arms = []
            for arm in (node.body, node.orelse):
                self._restore(before)
                self.walk(arm, me)
                arms.append(self._state())
            self._merge(arms, steady=False)
            return
        if isinstance(node, (cst.For, cst.While, cst.Try)):
            before = self._state()  # a loop may run no time, a try may stop anywhere
            for child in node.children:
                self.walk(child, me)
            self._merge([before, self._state()], steady=False)
            return
        if isinstance(node, cst.Return):
            if node.value is not None:
                self.walk(node.value, me)
            self._exits[-1].append(self._state())
            return
        if isinstance(node, cst.Assign):
            self.walk(node.value, me)
            for target in node.targets:
                self._write_target(target.target, me, node.value)
            return
        if isinstance(node, cst.AnnAssign):
            if node.value is not None:  # `self.scale: float` alone sets nothing
                self.walk(node.value, me)
                self._write_target(node.target, me, node.value)
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
                self._fixed.append(_fixed_parameters(node, method))
                self._exits.append([])
                try:
                    self.walk(method.body, self_name(method))
                finally:
                    self._fixed.pop()
                    exits = self._exits.pop()
                if exits:  # the helper ends at its returns as well as at its last line
                    self._merge([*exits, self._state()], steady=False)
            return
        if is_self_attribute(node, me) is not None:
            self._event("read", node.attr.value, node)
            return
        for child in node.children:
            self.walk(child, me)

    def _walk_if(self, node: cst.If, me: str) -> None:
        self.walk(node.test, me)
        before = self._state()
        arms = []
        for arm in (node.body, node.orelse):
            self._restore(before)
            if arm is not None:
                self.walk(arm, me)  # an `elif` is an If of its own
            if arm is None or not _leaves(arm):  # an arm that returns left its state at the return
                arms.append(self._state())
        if not arms:
            self._restore(before)  # nothing after the `if` runs; what follows is unreachable
        else:
            # A test every call answers alike: what one arm writes, it writes on every call that reaches it.
            self._merge(arms, steady=self._same_every_call(node.test, me))

    def _state(self) -> Tuple[Set[str], Dict[str, Set[int]]]:
        return set(self._written), {attr: set(writes) for attr, writes in self._pending.items()}

    def _restore(self, state: Tuple[Set[str], Dict[str, Set[int]]]) -> None:
        self._written, self._pending = set(state[0]), {attr: set(writes) for attr, writes in state[1].items()}

    def _merge(self, states: List[Tuple[Set[str], Dict[str, Set[int]]]], steady: bool) -> None:
        """The state after paths meet: written on every path (on one, for a steady test); any write still
        pending on some path may still be in the attribute."""
        written = [state[0] for state in states]
        self._written = set().union(*written) if steady else set.intersection(*written)
        self._pending = {}
        for _, pending in states:
            for attr, writes in pending.items():
                self._pending.setdefault(attr, set()).update(writes)

    def finish(self) -> None:
        """At the end of forward: every write still pending there, or at a return of forward, is live."""
        for _, pending in [*self._exits[0], self._state()]:
            for writes in pending.values():
                self.live_out.update(writes)

    def is_live_out(self, node: object) -> bool:
        return _key(node) in self.live_out

    def _same_every_call(self, test: cst.BaseExpression, me: str) -> bool:
        """Whether the test comes out the same on every call: constants, settings on `self` that no call
        writes, and parameters every call leaves at (or passes) one constant."""
        if self._changing is None:
            return False
        if _is_plain_value(test):
            return True
        if isinstance(test, cst.Name):
            return test.value == me or test.value in self._fixed[-1]
        if isinstance(test, cst.Attribute):
            attr = is_self_attribute(test, me)
            if attr is not None:
                return attr not in self._changing
            return self._same_every_call(test.value, me)  # `self.config.use_bos`
        if isinstance(test, cst.UnaryOperation):
            return self._same_every_call(test.expression, me)
        if isinstance(test, cst.BooleanOperation):
            return self._same_every_call(test.left, me) and self._same_every_call(test.right, me)
        if isinstance(test, cst.Comparison):
            return self._same_every_call(test.left, me) and all(
                self._same_every_call(target.comparator, me) for target in test.comparisons)
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and len(test.args) == 2:
            subject, second = test.args[0].value, test.args[1].value
            if test.func.value == "isinstance":
                return self._same_every_call(subject, me)  # the classes it names are code, not state
            if test.func.value == "hasattr" and isinstance(second, cst.SimpleString):
                # `hasattr(self, "cache")` changes once a call sets the attribute.
                name = second.evaluated_value
                return isinstance(name, str) and name not in self._changing and self._same_every_call(subject, me)
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute):
            # A query of a setting: `self.args.attnnet.startswith("dep_")`.
            return self._same_every_call(test.func.value, me) and all(
                self._same_every_call(arg.value, me) for arg in test.args)
        return False

    def _write_target(self, target: cst.BaseExpression, me: str, value: cst.BaseExpression) -> None:
        for element, assigned in _paired_targets(target, value):
            if is_self_attribute(element, me) is not None:
                self._event("write", element.attr.value, element)
                if assigned is not None:
                    self.assigned[id(element)] = assigned
            else:
                self.walk(element, me)  # `self.cache[key] = v` reads self.cache

    def _event(self, kind: str, attr: str, node) -> None:
        self.order.append((kind, attr, node))
        if kind == "read" and attr not in self._written:
            self._read_first.add(attr)
        elif kind == "write":
            self._written.add(attr)
            self._pending[attr] = {_key(node)}


def _key(node: object) -> int:
    """The same write whichever walk met it (an augmented assignment's wrapper is made per walk)."""
    return id(node.target) if isinstance(node, _Augmented) else id(node)


def _leaves(block: cst.CSTNode) -> bool:
    """Whether a block ends in `return` or `raise`: nothing after the `if` runs after it."""
    if isinstance(block, cst.If):
        return _leaves(block.body) and block.orelse is not None and _leaves(block.orelse)
    if isinstance(block, cst.Else):
        return _leaves(block.body)
    statements = getattr(block, "body", ())
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, (cst.Return, cst.Raise)):  # `if done: return x`
        return True
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(statement, (cst.Return, cst.Raise)) for statement in last.body)
    return isinstance(last, cst.If) and _leaves(last)


def _fixed_parameters(call: cst.Call, method: cst.FunctionDef) -> Set[str]:
    """The method's parameters that this call passes a constant, or leaves at a constant default."""
    bound = bind_arguments(call, method)
    fixed: Set[str] = set()
    for param in (*method.params.posonly_params, *method.params.params, *method.params.kwonly_params):
        name = param.name.value
        value = bound.get(name, param.default)
        if value is not None and _is_plain_value(value) and not any(arg.star for arg in call.args):
            fixed.add(name)
    return fixed


def _paired_targets(target: cst.BaseExpression, value: Optional[cst.BaseExpression]
                    ) -> Iterator[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """Each target element with the value it gets, where the code shows it (`a, b = 0, None`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        values = None
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) and not any(
                isinstance(element, cst.StarredElement) for element in (*value.elements, *target.elements)):
            values = [element.value for element in value.elements]
        for position, element in enumerate(target.elements):
            yield from _paired_targets(element.value, values[position] if values else None)
    elif isinstance(target, cst.StarredElement):
        yield from _paired_targets(target.value, None)
    else:
        yield target, value


def _reset_by_holders(analysis: FileAnalysis, cls: ModuleClass) -> Set[str]:
    """The attributes that a method of the class sets (itself or through the methods it calls on self)
    when the forward pass of a module holding an instance of the class calls that method (a decoder's
    forward calling `self.attention.init_states(x)` before it steps the attention): every call of the holder
    starts them afresh, so what the class's forward leaves in them is never read by a later call of the
    holder. Holders are looked for in this file and in the files that may build the class."""
    writers: Dict[str, Set[str]] = {}
    for owner in cls.mro():
        for name, method in owner.methods.items():
            if name != "forward" and not name.startswith("__") and name not in writers:
                written = _written_through(cls, method)
                if written:
                    writers[name] = written
    if not writers:
        return set()
    qualname = analysis.model.qualname(cls.node)
    called = analysis.model.called_from_other_forwards(cls, frozenset(writers), analysis.context.files_building(qualname))
    return set().union(*(writers[name] for name in called))


def _written_through(cls: ModuleClass, method: cst.FunctionDef) -> Set[str]:
    """The attributes a method sets on self, directly or in the methods it calls on self."""
    found: Set[str] = set()
    pending, seen = [method], set()
    while pending:
        current = pending.pop()
        me = self_name(current)
        if me is None or id(current) in seen:
            continue
        seen.add(id(current))
        for node in iter_nodes(current.body, (*_ASSIGNMENTS, cst.Call), skip_nested_scopes=True):
            if isinstance(node, cst.Call):
                called = is_self_attribute(node.func, me)
                found_method = cls.find_method(called) if called else None
                if found_method is not None:
                    pending.append(found_method[0])
                elif (set_name := _setattr_on(node, me)) is not None:
                    found.add(set_name)
                continue
            found.update(attr for element, _ in _assigned_elements(node)
                         if (attr := is_self_attribute(element, me)) is not None)
    return found


_ASSIGNMENTS = (cst.Assign, cst.AugAssign, cst.AnnAssign)


def _assigned_elements(node: Union[cst.Assign, cst.AugAssign, cst.AnnAssign]
                       ) -> Iterator[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """Each target element of an assignment with the value it gets where the code shows it (none for
    `+=`, nor for an annotation without a value)."""
    targets = [target.target for target in node.targets] if isinstance(node, cst.Assign) else [node.target]
    value = None if isinstance(node, cst.AugAssign) else node.value
    for target in targets:
        yield from _paired_targets(target, value)


def _setattr_on(call: cst.Call, me: str) -> Optional[str]:
    if not (isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) >= 2):
        return None
    owner, name = call.args[0].value, call.args[1].value
    if isinstance(owner, cst.Name) and owner.value == me and isinstance(name, cst.SimpleString):
        return name.evaluated_value if isinstance(name.evaluated_value, str) else None
    return None


def _is_initial_literal(value: cst.BaseExpression) -> bool:
    """A plain value or an empty container (`[]`, `{}`, `()`): a write of it makes the same value anew."""
    return _is_plain_value(value) or (isinstance(value, (cst.List, cst.Tuple, cst.Dict)) and not value.elements)


def _reset_before_returning(analysis: FileAnalysis, forward: cst.FunctionDef, initial: Dict[str, str]) -> Set[str]:
    """Attributes forward's last statements (before its final `return`) set back to `__init__`'s value:
    whatever the call did with them, the next call starts from that value on one device too."""
    me = self_name(forward)
    statements = list(getattr(forward.body, "body", ()))
    if statements and isinstance(statements[-1], cst.SimpleStatementLine) and any(
            isinstance(small, cst.Return) for small in statements[-1].body):
        statements.pop()
    found: Set[str] = set()
    for statement in reversed(statements):
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1):
            break
        assign = statement.body[0]
        attr = is_self_attribute(assign.targets[0].target, me)
        if attr is None or initial.get(attr) != analysis.module.code_for_node(assign.value):
            break
        found.add(attr)
    return found


def _is_plain_value(value: cst.BaseExpression) -> bool:
    """A number, a string, None or a bool: no tensor, so no buffer."""
    if isinstance(value, cst.UnaryOperation) and not isinstance(value.operator, cst.Not):
        return _is_plain_value(value.expression)  # -1
    return isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)) or (
        isinstance(value, cst.Name) and value.value in ("None", "True", "False"))


def _mentioned_off_the_path(analysis: FileAnalysis, path) -> Set[str]:
    """Attribute names (of any object) that this file reads outside the forward path: another method
    (`print_loss` reading `self.loss`), or code that uses the module (`model.attention`). Being set there
    (`self.proj_query = None` in `__init__`, a `reset()`) reads nothing: an attribute only the forward path
    reads is scratch of the call."""
    on_path: Set[int] = set()
    for function in (path.forward, *path.entries):
        on_path.update(id(node) for node in iter_nodes(function, (cst.Attribute,)))
    for node in iter_nodes(analysis.module, (cst.Assign, cst.AnnAssign)):  # writes, not reads
        on_path.update(id(element) for element, _ in _assigned_elements(node))
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
