"""The torch names the rules care about, under every public spelling torch itself exports them."""

from __future__ import annotations

import ast
from typing import Optional

# Module paths that re-export torch.nn's classes under another dotted name.
_NN_ALIASES = ("torch.nn.modules.rnn.", "torch.nn.modules.module.", "torch.nn.modules.container.", "torch.nn.modules.")

RNN_CLASSES = frozenset({"torch.nn.RNN", "torch.nn.LSTM", "torch.nn.GRU"})
# RNNCell, LSTMCell and GRUCell are deliberately absent: they have no flatten_parameters().

MODULE_BASE = "torch.nn.Module"
MODULE_LIST = "torch.nn.ModuleList"
# nn.Module methods that return the module itself: `nn.LSTM(...).to(device)` is still the LSTM.
MODULE_METHODS_RETURNING_SELF = frozenset({
    "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "train", "eval",
    "requires_grad_", "share_memory", "to_empty", "xpu", "mps", "ipu",
})
TORCH_NN = "torch.nn"

# Classes that are nn.Module subclasses outside torch.nn, common as model bases.
THIRD_PARTY_MODULE_BASES = frozenset({
    "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule",
    "lightning.LightningModule",
    "lightning.pytorch.LightningModule",
    "torch.jit.ScriptModule",
})

# Bases that never make a class an nn.Module, as a file's names qualify them (builtins are unqualified).
PLAIN_BASES = frozenset({
    "object", "Exception", "BaseException", "ValueError", "RuntimeError", "dict", "list", "tuple", "set", "str",
    "int", "float", "type", "abc.ABC", "abc.ABCMeta", "typing.Generic", "typing.Protocol", "typing.NamedTuple",
    "typing.TypedDict", "typing_extensions.Protocol", "typing_extensions.TypedDict", "enum.Enum", "enum.IntEnum",
    "collections.OrderedDict", "collections.namedtuple", "argparse.Namespace", "argparse.ArgumentParser",
    "threading.Thread", "json.JSONEncoder", "unittest.TestCase",
})

PAD_PACKED_SEQUENCE = "torch.nn.utils.rnn.pad_packed_sequence"
PACK_PADDED_SEQUENCE = "torch.nn.utils.rnn.pack_padded_sequence"
PACK_SEQUENCE = "torch.nn.utils.rnn.pack_sequence"
PAD_SEQUENCE = "torch.nn.utils.rnn.pad_sequence"
PACKED_SEQUENCE = "torch.nn.utils.rnn.PackedSequence"

# torch.nn names that are not nn.Module subclasses, although they are capitalised.
_NN_NON_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})


def canonical(qualified_name: Optional[str]) -> Optional[str]:
    """torch.nn.modules.rnn.LSTM -> torch.nn.LSTM; other names unchanged."""
    if qualified_name is None:
        return None
    for alias in _NN_ALIASES:
        if qualified_name.startswith(alias):
            rest = qualified_name[len(alias):]
            if "." not in rest:
                return f"torch.nn.{rest}"
    return qualified_name


def rnn_kind(qualified_name: Optional[str]) -> Optional[str]:
    """"LSTM" for any spelling of torch.nn.LSTM, None for anything else."""
    name = canonical(qualified_name)
    if name in RNN_CLASSES:
        return name.rsplit(".", 1)[1]
    return None


def is_module_base(qualified_name: Optional[str]) -> bool:
    """Whether a base class named so makes a class an nn.Module (torch.nn.Module, nn.Sequential...)."""
    name = canonical(qualified_name)
    if name is None:
        return False
    if name in THIRD_PARTY_MODULE_BASES:
        return True
    if name.startswith("torch.nn."):
        last = name[len("torch.nn."):]
        return "." not in last and last[:1].isupper() and last not in _NN_NON_MODULES
    return False


def wrapped_module(call: ast.Call) -> Optional[ast.AST]:
    """The module a DataParallel call (`nn.DataParallel`, `data_parallel`) wraps: its first argument, or
    `module=`."""
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((keyword.value for keyword in call.keywords if keyword.arg == "module"), None)
