"""DPR001 on every way of holding and running an RNN, and on the cases it must leave alone."""

from __future__ import annotations

import pytest

from .helpers import findings, fixed, messages

MODULE = """\
import torch
import torch.nn as nn
{imports}

class Encoder(nn.Module):
    def __init__(self, rnn_type=nn.LSTM):
        super().__init__()
        {build}

    def forward(self, x):
        {run}
        return x
"""


def model(build, run="x, _ = self.rnn(x)", imports=""):
    return MODULE.format(build=build, run=run, imports=imports)


@pytest.mark.parametrize(
    "imports, build",
    [
        ("", "self.rnn = nn.LSTM(4, 4)"),
        ("", "self.rnn = torch.nn.GRU(4, 4)"),
        ("", "self.rnn = nn.RNN(4, 4)"),
        ("from torch.nn import LSTM as L", "self.rnn = L(4, 4)"),
        ("import torch.nn.modules.rnn", "self.rnn = torch.nn.modules.rnn.GRU(4, 4)"),
        ("from torch import nn as tnn", "self.rnn = tnn.LSTM(4, 4)"),
        ("", "self.rnn = (nn.LSTM if torch.cuda.is_available() else nn.GRU)(4, 4)"),
        ("", "cell = nn.LSTM if x else nn.GRU\n        self.rnn = cell(4, 4)"),
        ("", "if x:\n            cell = nn.LSTM\n        else:\n            cell = nn.GRU\n        self.rnn = cell(4, 4)"),
        ("", "self.rnn = getattr(nn, cell_type)(4, 4)"),
        ("", "self.rnn = getattr(nn, args.rnn_kind.upper())(4, 4)"),
        ("", "self.rnn = getattr(nn, 'GRU')(4, 4)"),
        ("", "kind = 'GRU'\n        self.rnn = getattr(nn, kind)(4, 4)"),
        ("RNNS = dict(lstm=nn.LSTM, gru=nn.GRU)", "self.rnn = RNNS[name](4, 4)"),
        ("CELLS = {'lstm': nn.LSTM, 'gru': nn.GRU}", "self.rnn = CELLS[name](4, 4)"),
        ("", "self.rnn = rnn_type(4, 4)"),
        ("class OrthoLSTM(nn.LSTM):\n    pass", "self.rnn = OrthoLSTM(4, 4)"),
        ("def LSTM(*args, **kwargs):\n    m = nn.LSTM(*args, **kwargs)\n    return m", "self.rnn = LSTM(4, 4)"),
        ("", "rnn = nn.LSTM(4, 4)\n        self.rnn = rnn"),
        ("", "self.add_module('rnn', nn.GRU(4, 4))"),
        ("", "setattr(self, 'rnn', nn.GRU(4, 4))"),
        ("", "if x:\n            self.rnn = nn.LSTM(4, 4)\n        else:\n            self.rnn = nn.GRU(4, 4)"),
        ("", "self.rnn = nn.LSTM(4, 4).to(dtype=torch.float)"),
        ("", "self.rnn = nn.GRU(4, 4).cuda().double()"),
        ("", "self.rnn, self.head = nn.LSTM(4, 4), nn.Linear(4, 4)"),
        ("", "self.rnn = {'lstm': nn.LSTM, 'gru': nn.GRU}[name](4, 4)"),
    ],
)
def test_rnn_spellings_are_found(imports, build):
    assert [code for _, code in findings(model(build, imports=imports))] == ["DPR001"]


@pytest.mark.parametrize(
    "imports, build",
    [
        ("", "self.rnn = nn.LSTMCell(4, 4)"),
        ("", "self.rnn = nn.GRUCell(4, 4)"),
        ("", "self.rnn = torch.nn.RNNCell(4, 4)"),
        ("", "self.rnn = nn.Linear(4, 4)"),
        ("", "self.rnn = getattr(nn, 'Linear')(4, 4)"),
        ("", "self.rnn = getattr(nn, activation)()"),
        ("", "kind = 'Linear'\n        self.rnn = getattr(nn, kind)(4, 4)"),
        ("class LSTM(nn.Module):\n    pass", "self.rnn = LSTM(4, 4)"),
        ("from mylib.layers import LSTM", "self.rnn = LSTM(4, 4)"),
        ("", "nn = make_namespace()\n        self.rnn = nn.LSTM(4, 4)"),
    ],
)
def test_non_rnns_are_not_flagged(imports, build):
    assert findings(model(build, imports=imports)) == []


def test_parameter_named_like_the_import_shadows_it():
    source = """\
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self, nn):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)
    """
    assert findings(source) == []


def test_non_module_class_is_not_flagged():
    source = """\
    import torch.nn as nn

    class Featurizer:
        def __init__(self):
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)
    """
    assert findings(source) == []


def test_module_through_same_file_base_is_checked():
    source = """\
    import torch.nn as nn

    class Base(nn.Module):
        pass

    class Encoder(Base):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)
    """
    assert findings(source) == [(12, "DPR001")]


def test_rnn_used_only_outside_forward_is_not_flagged():
    source = """\
    import torch.nn as nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return x

        def generate(self, x):
            return self._step(x)

        def _step(self, x):
            return self.rnn(x)
    """
    assert findings(source) == []


def test_helper_reached_from_forward_is_flagged_and_fixed_there():
    source = """\
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 4)

        def forward(self, x):
            return self._encode(x)

        def _encode(self, x):
            out = self.rnn(x)
            return out
    """
    assert findings(source) == [(12, "DPR001")]
    assert "    def _encode(self, x):\n        self.rnn.flatten_parameters()\n        out = self.rnn(x)" in fixed(source)


@pytest.mark.parametrize(
    "forward",
    [
        "def forward(self, x):\n        self.rnn.flatten_parameters()\n        return self.rnn(x)",
        "def forward(self, x):\n        self.flatten_parameters()\n        return self.rnn(x)",
        "def forward(self, x):\n        self._prepare()\n        return self.rnn(x)",
        "def forward(self, x):\n        return self.rnn(self._prepare_and_return(x))",
    ],
)
def test_flatten_earlier_on_the_path_counts(forward):
    source = f"""\
import torch.nn as nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)

    def flatten_parameters(self):
        self.rnn.flatten_parameters()

    def _prepare(self):
        self.rnn.flatten_parameters()

    def _prepare_and_return(self, x):
        self.rnn.flatten_parameters()
        return x

    {forward}
"""
    assert findings(source) == []


def test_flatten_only_in_init_is_flagged_and_says_so():
    source = model("self.rnn = nn.LSTM(4, 4)\n        self.rnn.flatten_parameters()")
    [message] = messages(source)
    assert "the call in __init__ runs only once" in message


def test_flatten_after_the_rnn_runs_is_flagged_and_says_so():
    source = model("self.rnn = nn.LSTM(4, 4)", run="x, _ = self.rnn(x)\n        self.rnn.flatten_parameters()")
    [message] = messages(source)
    assert "comes after the RNN has run" in message


def test_one_finding_per_rnn_at_its_first_call():
    source = model("self.rnn = nn.LSTM(4, 4)", run="x, _ = self.rnn(x)\n        x, _ = self.rnn(x)")
    assert findings(source) == [(11, "DPR001")]


@pytest.mark.parametrize("decorator", ["@torch.no_grad()", "@torch.jit.ignore", "@some_decorator"])
def test_decorated_forward_is_checked(decorator):
    source = model("self.rnn = nn.LSTM(4, 4)").replace("    def forward", f"    {decorator}\n    def forward")
    assert [code for _, code in findings(source)] == ["DPR001"]


def test_async_forward_is_checked():
    source = model("self.rnn = nn.LSTM(4, 4)").replace("def forward", "async def forward")
    assert [code for _, code in findings(source)] == ["DPR001"]


def test_forward_inherited_from_a_same_file_base_is_checked():
    source = """\
    import torch.nn as nn

    class Runner(nn.Module):
        def forward(self, x):
            return self.rnn(x)

    class LSTMRunner(Runner):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

    class GRURunner(Runner):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 4)
    """
    assert findings(source) == [(5, "DPR001")]
    assert fixed(source).count("self.rnn.flatten_parameters()") == 1


def test_super_forward_is_followed():
    source = """\
    import torch.nn as nn

    class Runner(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)

    class Tagger(Runner):
        def forward(self, x):
            self.rnn.flatten_parameters()
            return super().forward(x)
    """
    # Runner itself is flagged; Tagger flattens before delegating.
    assert findings(source) == [(9, "DPR001")]


def test_nested_function_and_lambda_calls_count():
    source = model(
        "self.rnn = nn.LSTM(4, 4)",
        run="def step(inputs):\n            return self.rnn(inputs)\n        x = step(x)",
    )
    assert findings(source) == [(12, "DPR001")]
    source = model("self.rnn = nn.LSTM(4, 4)", run="x = checkpoint(lambda inputs: self.rnn(inputs)[0], x)")
    assert findings(source) == [(11, "DPR001")]


@pytest.mark.parametrize(
    "build, run",
    [
        ("self.rnn = nn.ModuleList([nn.LSTM(4, 4) for _ in range(2)])", "for layer in self.rnn:\n            x, _ = layer(x)"),
        ("self.rnn = nn.ModuleList([nn.LSTM(4, 4), nn.GRU(4, 4)])", "for i, layer in enumerate(self.rnn):\n            x, _ = layer(x)"),
        ("self.rnn = nn.ModuleList()\n        for _ in range(2):\n            self.rnn.append(nn.GRU(4, 4))", "x, _ = self.rnn[0](x)"),
        ("layers = []\n        layers.append(nn.GRU(4, 4))\n        self.rnn = nn.ModuleList(layers)", "x, _ = self.rnn[-1](x)"),
        ("self.rnn = nn.ModuleList([nn.LSTM(4, 4)])", "x = [layer(x)[0] for layer in self.rnn][-1]"),
        ("self.rnn = nn.ModuleList()\n        self.rnn += [nn.LSTM(4, 4)]", "x, _ = self.rnn[0](x)"),
    ],
)
def test_module_lists_of_rnns_are_found(build, run):
    source = model(build, run=run)
    assert [code for _, code in findings(source)] == ["DPR001"]
    result = fixed(source)
    assert "        for rnn in self.rnn:\n            rnn.flatten_parameters()\n" in result
    assert findings(result) == []


@pytest.mark.parametrize("build", [
    "self.rnn = nn.ModuleList([nn.LSTM(4, 4), nn.Linear(4, 4)])",
    # A type switch: a torch RNN per layer in one configuration, a layer of the model's own in the other.
    "if rnn_type is nn.LSTM:\n            self.rnn = [nn.LSTM(4, 4) for _ in range(2)]\n        else:\n"
    "            self.rnn = [Highway(4) for _ in range(2)]\n        self.rnn = nn.ModuleList(self.rnn)",
    "self.rnn = nn.ModuleList()\n        self.rnn.append(nn.GRU(4, 4))\n        self.rnn.append(make_layer(4))",
])
def test_a_module_list_with_members_of_another_module_is_flagged_with_a_guarded_fix(build):
    # Only the torch RNN members have flatten_parameters(): the loop calls it on those.
    source = model(build, run="for layer in self.rnn:\n            x = layer(x)")
    [message] = messages(source)
    assert "members among other modules, a ModuleList" in message
    result = fixed(source)
    assert ("        for rnn in self.rnn:\n            if isinstance(rnn, nn.RNNBase):\n"
            "                rnn.flatten_parameters()\n") in result
    assert findings(result) == []


def test_a_module_list_of_no_torch_rnn_is_not_flagged():
    source = model("if rnn_type is nn.LSTM:\n            self.rnn = [Highway(8) for _ in range(2)]\n        else:\n"
                   "            self.rnn = [Highway(4) for _ in range(2)]\n        self.rnn = nn.ModuleList(self.rnn)",
                   run="for layer in self.rnn:\n            x = layer(x)")
    assert findings(source) == []


def test_per_member_flatten_inside_the_loop_counts():
    source = model(
        "self.rnn = nn.ModuleList([nn.LSTM(4, 4) for _ in range(2)])",
        run="for layer in self.rnn:\n            layer.flatten_parameters()\n            x, _ = layer(x)",
    )
    assert findings(source) == []


def test_weight_drop_gets_the_flatten_after_the_replacement():
    source = """\
    import torch.nn as nn
    import torch.nn.functional as F

    class WeightDropLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            self.rnn.flatten_parameters()
            raw = self.rnn.weight_hh_l0_raw
            setattr(self.rnn, "weight_hh_l0", F.dropout(raw, 0.5, self.training))
            # run the recurrent layer
            out, _ = self.rnn(x)
            return out
    """
    assert findings(source) == [(14, "DPR001")]
    assert (
        "        # run the recurrent layer\n        self.rnn.flatten_parameters()\n        out, _ = self.rnn(x)\n"
        in fixed(source)
    )


@pytest.mark.parametrize("build", ["self.rnn = nn.LSTM(4, 4) if x else None", "self.rnn = None\n        if x:\n            self.rnn = nn.LSTM(4, 4)"])
def test_optional_rnn_gets_a_guarded_fix(build):
    source = model(build, run="if self.rnn is not None:\n            x, _ = self.rnn(x)")
    assert [code for _, code in findings(source)] == ["DPR001"]
    result = fixed(source)
    assert "        if self.rnn is not None:\n            self.rnn.flatten_parameters()\n        if self.rnn" in result
    assert findings(result) == []


def test_flattening_one_member_does_not_cover_the_list():
    source = model(
        "self.rnn = nn.ModuleList([nn.LSTM(4, 4), nn.LSTM(4, 4)])",
        run="self.rnn[0].flatten_parameters()\n        x, _ = self.rnn[1](x)",
    )
    assert [code for _, code in findings(source)] == ["DPR001"]
    indexed_loop = model(
        "self.rnn = nn.ModuleList([nn.LSTM(4, 4), nn.LSTM(4, 4)])",
        run="for i in range(2):\n            self.rnn[i].flatten_parameters()\n        x, _ = self.rnn[1](x)",
    )
    assert findings(indexed_loop) == []


def test_generic_flatten_over_modules_counts():
    source = model(
        "self.rnn = nn.LSTM(4, 4)",
        run="for module in self.modules():\n            if isinstance(module, nn.RNNBase):\n"
        "                module.flatten_parameters()\n        x, _ = self.rnn(x)",
    )
    assert findings(source) == []


def test_explicit_dunder_call_and_forward_count_as_running():
    assert [c for _, c in findings(model("self.rnn = nn.LSTM(4, 4)", run="x, _ = self.rnn.__call__(x)"))] == ["DPR001"]
    assert [c for _, c in findings(model("self.rnn = nn.LSTM(4, 4)", run="x, _ = self.rnn.forward(x)"))] == ["DPR001"]


def test_script_module_subclass_is_a_module():
    source = """\
    import torch
    import torch.nn as nn

    class Encoder(torch.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 4)

        def forward(self, x):
            return self.rnn(x)
    """
    assert findings(source) == [(10, "DPR001")]


TABLE_AND_STEPS = """\
from torch import nn


class Encoder(nn.Module):
    TYPES = {{"lstm": nn.LSTM, "gru": nn.GRU}}

    def __init__(self, kind):
        super().__init__()
        self.rnn = {build}
        self.layers = []
        for _ in range(2):
            self.layers += [{layer}]
        self.layers = nn.ModuleList(self.layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)[0]
        return self.rnn(x)[0]
"""


def test_a_class_table_read_with_get_and_a_list_grown_with_plus_equals_hold_rnns():
    source = TABLE_AND_STEPS.format(build="self.TYPES.get(kind, nn.LSTM)(4, 4)", layer="nn.GRU(4, 4)")
    assert findings(source) == [(17, "DPR001"), (18, "DPR001")]
    assert "nn.LSTM or nn.GRU" in messages(source)[1]


def test_a_table_of_other_modules_read_with_get_and_a_list_of_linear_layers_are_clean():
    source = TABLE_AND_STEPS.format(build="{'relu': nn.ReLU}.get(kind, nn.Tanh)()", layer="nn.Linear(4, 4)")
    assert findings(source) == []
    with_cell = TABLE_AND_STEPS.format(build="self.TYPES.get(kind)(4, 4)", layer="nn.Linear(4, 4)")
    assert findings(with_cell) == [(18, "DPR001")]


@pytest.mark.parametrize("build", [
    "self.rnn = nn.LSTM(4, 4) if x else nn.Linear(4, 4)",
    "self.rnn = {'lstm': nn.LSTM, 'gru': nn.GRU, 'cell': nn.GRUCell}.get(kind)(4, 4)",
    "if x:\n            self.rnn = nn.GRU(4, 4)\n        else:\n            self.rnn = nn.Identity()",
])
def test_a_torch_rnn_in_some_configurations_only_gets_a_guarded_fix(build):
    # When the configuration picks the LSTM (or GRU), it runs uncompacted on every replica; the other
    # choices have no flatten_parameters(), so the fix checks first.
    source = model(build)
    assert findings(source) == [(len(source.split("self.rnn(x)")[0].splitlines()), "DPR001")]
    assert "        if isinstance(self.rnn, nn.RNNBase):\n            self.rnn.flatten_parameters()\n" in fixed(source)


@pytest.mark.parametrize("imports, build", [
    # A factory of the file whose returns are a torch RNN on some paths and a module of the project's own on others.
    ("def make_layer(rnn_type):\n    if rnn_type == 'SRU':\n        return Highway(4)\n    return getattr(nn, rnn_type)(4, 4)",
     "self.rnn = make_layer(rnn_type)"),
    ("def make_layer(kind):\n    if kind == 'sru':\n        layer = Highway(4)\n    else:\n        layer = nn.GRU(4, 4)\n"
     "    return layer, kind != 'sru'",
     "self.rnn, self.packs = make_layer(rnn_type)"),
    # A local name set in a type switch.
    ("", "if rnn_type is nn.LSTM:\n            rnn = nn.LSTM(4, 4)\n        else:\n            rnn = Highway(4)\n"
     "        self.rnn = rnn"),
])
def test_an_rnn_from_a_type_switch_through_a_factory_or_a_name_gets_a_guarded_fix(imports, build):
    source = model(build, imports=imports)
    [message] = messages(source)
    assert "in some configurations, another module in others" in message
    result = fixed(source)
    assert "        if isinstance(self.rnn, nn.RNNBase):\n            self.rnn.flatten_parameters()\n" in result
    assert findings(result) == []


def test_a_module_rebuilt_in_steps_is_what_its_last_step_makes():
    # `rnn = WeightDrop(rnn)` wraps the LSTM: self.rnn is always the wrapper, not a type switch.
    build = "rnn = nn.LSTM(4, 4)\n        rnn = WeightDrop(rnn, 0.5)\n        self.rnn = rnn"
    assert findings(model(build)) == []


def test_a_factory_that_never_returns_a_torch_rnn_is_not_flagged():
    imports = "def make_layer(kind):\n    if kind == 'wide':\n        return Highway(8)\n    return Highway(4)"
    assert findings(model("self.rnn = make_layer(rnn_type)", imports=imports)) == []


def test_none_appended_to_a_module_list_is_not_a_member_kind():
    # `append(None)` for a skipped layer (fairseq's wav2vec residual projections): convolutions and Nones
    # hold no torch RNN, so the list is no RNN submodule at all (it once came out as one of kind "").
    import libcst as cst

    from dp_rnn_lint.analysis.modules import ModuleModel
    from dp_rnn_lint.analysis.names import NameResolver

    source = model("self.proj = nn.ModuleList()\n        for i in range(3):\n            if i:\n"
                   "                self.proj.append(nn.Conv1d(4, 4, 1))\n            else:\n"
                   "                self.proj.append(None)\n        self.rnn = nn.ModuleList([nn.GRU(4, 4)])",
                   run="for layer in self.proj:\n            if layer is not None:\n                x = layer(x)")
    module = cst.parse_module(source)
    analysis = ModuleModel(module, NameResolver(module, "model", False), every_class=True)
    [encoder] = analysis.classes
    assert sorted(analysis.rnn_submodules(encoder)) == ["rnn"]


OVERRIDDEN_FACTORY = '''\
import torch.nn as nn


def make_rnn(rnn_type, size):
    if rnn_type == "SRU":
        return Highway(size), False
    return getattr(nn, rnn_type)(size, size), True


class DecoderBase(nn.Module):
    def __init__(self, rnn_type):
        super().__init__()
        self.rnn = self._build_rnn(rnn_type, 4)

    def forward(self, x):
        return self._run(x)


class StdDecoder(DecoderBase):
    def _build_rnn(self, rnn_type, size):
        rnn, _ = make_rnn(rnn_type, size)
        return rnn

    def _run(self, x):
        out, _ = self.rnn(x)
        return out


class CellDecoder(DecoderBase):
    def _build_rnn(self, rnn_type, size):
        return StackedCells(size)

    def _run(self, x):
        return self.rnn(x)
'''


def test_a_method_factory_is_the_override_of_each_class_and_a_tuple_member_is_followed():
    # OpenNMT-py's decoders: the base builds self.rnn with self._build_rnn(), which each subclass overrides;
    # one returns the first member of a factory's (rnn, packs) pair, the other a stack of cells.
    line = OVERRIDDEN_FACTORY.splitlines().index("        out, _ = self.rnn(x)") + 1
    assert findings(OVERRIDDEN_FACTORY) == [(line, "DPR001")]
    result = fixed(OVERRIDDEN_FACTORY)
    assert ("    def _run(self, x):\n        if isinstance(self.rnn, nn.RNNBase):\n            self.rnn.flatten_parameters()\n"
            "        out, _ = self.rnn(x)") in result
    assert findings(result) == []


HANDED_BY_NAME = '''\
import torch.nn as nn


class SequenceWrapper(nn.Module):
    def __init__(self, module):
        super().__init__()
        self._module = module

    def forward(self, inputs):
        outputs, _ = self._module(inputs)
        return outputs


class LstmSequence(SequenceWrapper):
    def __init__(self, size):
        {build}
        super().__init__(module=module)
'''


@pytest.mark.parametrize("build, flagged", [
    # AllenNLP's LstmSeq2SeqEncoder: the RNN is built into a local name, then handed to the base.
    ("module = nn.LSTM(size, size, batch_first=True)", True),
    ("module = Highway(size)", False),
    ("module = nn.LSTM(size, size) if size else Highway(size)\n        module = Highway(size)", False),
])
def test_an_rnn_handed_to_the_base_through_a_local_name(build, flagged):
    # What is handed to a constructor is the project index's to say, as the CLI and the plugin build it.
    from dp_rnn_lint.analysis.project import build_index
    from dp_rnn_lint.engine import Selection, lint_source

    data = HANDED_BY_NAME.replace("{build}", build).encode()
    context = build_index(["model.py"], sources={"model.py": data}).context_for("model.py", "any")
    found = lint_source(data, "model.py", Selection(), context=context).findings
    assert [(f.line, f.code) for f in found] == ([(10, "DPR001")] if flagged else [])
    if flagged:
        result = lint_source(data, "model.py", Selection(), fix=True, context=context)
        assert ("        if isinstance(self._module, nn.RNNBase):\n            self._module.flatten_parameters()\n"
                in result.fixed.decode()) and result.findings == []


def test_a_module_moved_in_place_of_its_name_is_still_the_rnn():
    # `rnn = rnn.to(device)` moves the same LSTM: flagged, and without a guard (it is always a torch RNN).
    build = "rnn = nn.LSTM(4, 4)\n        rnn = rnn.to(torch.device('cpu')).float()\n        self.rnn = rnn"
    [message] = messages(model(build))
    assert "self.rnn (nn.LSTM) runs" in message
    assert "        self.rnn.flatten_parameters()\n        x, _ = self.rnn(x)" in fixed(model(build))


@pytest.mark.parametrize("wrapper_runs", [
    "self.inner.flatten_parameters()\n        return self.inner(x)",
    "return self.inner(x)",
])
def test_an_attribute_rebuilt_from_itself_is_the_wrapper_not_a_type_switch(wrapper_runs):
    # `self.rnn = Dynamic(self.rnn)` replaces the LSTM with the wrapper: no configuration runs the bare LSTM
    # in Encoder.forward; whether it is compacted is the wrapper's forward's business.
    source = f"""\
import torch.nn as nn


class Dynamic(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        {wrapper_runs}


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)
        self.rnn = Dynamic(self.rnn)

    def forward(self, x):
        return self.rnn(x)
"""
    assert [line for line, _ in findings(source) if line > 12] == []


def test_a_rebuild_that_may_not_run_leaves_the_rnn_in_some_configurations():
    # `if wdrop: self.rnn = WeightDrop(self.rnn)`: without weight drop the bare LSTM runs.
    build = ("self.rnn = nn.LSTM(4, 4)\n        if rnn_type:\n"
             "            self.rnn = nn.Sequential(self.rnn)")
    assert findings(model(build)) == [(13, "DPR001")]
    assert "if isinstance(self.rnn, nn.RNNBase):" in fixed(model(build))


# A question encoder whose forward compacts its GRU and whose encode_all() does not (line 14 runs it).
QUESTION = """\
import torch.nn as nn


class Question(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4, batch_first=True)

    def forward(self, x):
        self.rnn.flatten_parameters()
        return self.rnn(x)[0][:, -1]

    def encode_all(self, x):
        return self.rnn(x)[0]


"""


@pytest.mark.parametrize("holder_calls, flagged", [
    ("self.out(self.question.encode_all(q))", True),  # the replica's VQA runs encode_all on its copy
    ("self.out(self.question(q))", False),  # only forward, which compacts first
    ("self.out(q)", False),  # encode_all never runs on a replica
])
def test_a_method_another_module_s_forward_calls_on_its_submodule_is_on_the_forward_path(holder_calls, flagged):
    source = QUESTION + f"""\
class VQA(nn.Module):
    def __init__(self):
        super().__init__()
        self.question = Question()
        self.out = nn.Linear(4, 2)

    def forward(self, q):
        return {holder_calls}
"""
    assert findings(source) == ([(14, "DPR001")] if flagged else [])
    if flagged:
        assert "    def encode_all(self, x):\n        self.rnn.flatten_parameters()\n" in fixed(source)


EARLY_EXIT = '''\
import torch.nn as nn


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)

    def _sample(self, x):
        self.rnn.flatten_parameters()
        return self.rnn(x)[0]

    def forward(self, x, sample=False):
        {before}if {test}:
            {exit}
        out, _ = self.rnn(x)
        return out
'''


@pytest.mark.parametrize("test, exit", [
    ("sample", "return self._sample(x)"),
    ("sample", "self.rnn.flatten_parameters()\n            return self.rnn(x)[0]"),
    ("not self.training", "self.rnn.flatten_parameters()\n            out = self.rnn(x)[0]\n            return out"),
])
def test_code_after_an_if_that_returns_runs_only_when_the_if_does_not(test, exit):
    # The compaction in the arm that returns never runs before the RNN after the `if`: it is the other arm.
    source = EARLY_EXIT.format(before="", test=test, exit=exit)
    line = source.splitlines().index("        out, _ = self.rnn(x)") + 1
    assert findings(source) == [(line, "DPR001")]
    assert findings(fixed(source)) == []


@pytest.mark.parametrize("before, exit", [
    ("self.rnn.flatten_parameters()\n        ", "return self._sample(x)"),  # before the `if`: on every path
    ("self.rnn.flatten_parameters()\n        ", "raise ValueError(x)"),
])
def test_a_compaction_before_an_early_exit_covers_the_rest(before, exit):
    assert findings(EARLY_EXIT.format(before=before, test="sample", exit=exit)) == []


HANDED_HOLDER = QUESTION + """\
class VQA(nn.Module):
    def __init__(self, question, size):
        super().__init__()
        self.question = question
        self.out = nn.Linear(size, 2)

    def forward(self, q):
        return {forward}

    def generate(self, q):
        return self.question.encode_all(q)


def build(size=4):
    {build}
"""


@pytest.mark.parametrize("forward, build, flagged", [
    # Handed in by the builder, positionally or by keyword, directly or through a name.
    ("self.out(self.question.encode_all(q))", "return VQA(Question(), size)", True),
    ("self.out(self.question.encode_all(q))", "question = Question()\n    return VQA(size=size, question=question)", True),
    ("self.out(self._encode(q))\n\n    def _encode(self, q):\n        return self.question.encode_all(q)",
     "return VQA(Question(), size)", True),  # through a method forward runs on self
    ("self.out(self.question(q))", "return VQA(Question(), size)", False),  # only generate() calls it
    ("self.out(self.question.encode_all(q))", "return VQA(nn.Identity(), size)", False),  # never a Question
])
def test_a_method_a_holder_runs_on_a_module_handed_to_its_constructor_is_on_the_forward_path(forward, build, flagged):
    source = HANDED_HOLDER.format(forward=forward, build=build)
    line = source.splitlines().index("        return self.rnn(x)[0]") + 1
    assert findings(source) == ([(line, "DPR001")] if flagged else [])
    if flagged:
        assert findings(fixed(source)) == []
