"""Name resolution through imports and scopes: what `nn.LSTM` means depends on where it is written."""

from __future__ import annotations

import libcst as cst
import pytest

from dp_rnn_lint.analysis.names import NameResolver


def resolve(source: str, module_name=None, is_package=False):
    """Qualified names of the expressions in the `return` of the last function in the source."""
    module = cst.parse_module(source)
    resolver = NameResolver(module, module_name, is_package)
    functions = [node for node in resolver.scopes if isinstance(node, cst.FunctionDef)]
    function = functions[-1]
    returned = [n for n in function.body.body if isinstance(n, cst.SimpleStatementLine)][-1].body[0].value
    values = [e.value for e in returned.elements] if isinstance(returned, cst.Tuple) else [returned]
    return [resolver.qualified_name(value, resolver.scopes[function]) for value in values]


def test_import_spellings():
    source = (
        "import torch\nimport torch.nn as nn\nfrom torch import nn as tnn\nfrom torch.nn import LSTM as L\n"
        "import torch.nn.utils.rnn as rnn_utils\n"
        "def f():\n    return torch.nn.GRU, nn.LSTM, tnn.RNN, L, rnn_utils.pad_packed_sequence\n"
    )
    assert resolve(source) == [
        "torch.nn.GRU", "torch.nn.LSTM", "torch.nn.RNN", "torch.nn.LSTM", "torch.nn.utils.rnn.pad_packed_sequence",
    ]


def test_submodule_import_binds_the_top_package():
    assert resolve("import torch.nn\ndef f():\n    return torch.nn.LSTM\n") == ["torch.nn.LSTM"]


@pytest.mark.parametrize(
    "body",
    [
        "def f(nn):\n    return nn.LSTM\n",
        "def f():\n    nn = object()\n    return nn.LSTM\n",
        "def f():\n    for nn in []:\n        pass\n    return nn.LSTM\n",
        "def f():\n    with open('x') as nn:\n        pass\n    return nn.LSTM\n",
    ],
)
def test_local_bindings_shadow_the_import(body):
    assert resolve("import torch.nn as nn\n" + body) == [None]


def test_class_scope_does_not_enclose_methods():
    source = "import torch.nn as nn\nclass C:\n    nn = None\n    def f(self):\n        return nn.LSTM\n"
    assert resolve(source) == ["torch.nn.LSTM"]


def test_import_inside_a_function_and_global_declaration():
    assert resolve("def f():\n    from torch import nn\n    return nn.GRU\n") == ["torch.nn.GRU"]
    source = "import torch.nn as nn\ndef f():\n    global nn\n    return nn.GRU\n"
    assert resolve(source) == ["torch.nn.GRU"]


def test_module_level_alias_assignment_follows_the_import():
    assert resolve("import torch.nn as nn\nRNN = nn.LSTM\ndef f():\n    return RNN\n") == ["torch.nn.LSTM"]


def test_module_level_rebinding_of_the_import_is_not_trusted():
    source = "import torch.nn as nn\nnn = make()\ndef f():\n    return nn.LSTM\n"
    assert resolve(source) == [None]


def test_relative_imports_resolve_against_the_module_name():
    source = "from ..utils import rnn as rnn_utils\nfrom . import LSTM\ndef f():\n    return rnn_utils.pad_packed_sequence, LSTM\n"
    assert resolve(source, module_name="torch.nn.modules.rnn") == [
        "torch.nn.utils.rnn.pad_packed_sequence", "torch.nn.modules.LSTM",
    ]
    assert resolve("from .rnn import LSTM\ndef f():\n    return LSTM\n", "torch.nn.modules", is_package=True) == [
        "torch.nn.modules.rnn.LSTM",
    ]


def test_unknown_names_are_builtins_and_star_imports_are_not_followed():
    assert resolve("from torch.nn import *\ndef f():\n    return LSTM, getattr\n") == ["builtins.LSTM", "builtins.getattr"]
