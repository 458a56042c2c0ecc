"""A small stub of torch for the astroid oracle, written to a temporary folder when first asked for.

It is kept as text, not as a `torch` package in the tree: a package of that name inside the project would
stand in for torch whenever the project itself is linted (the linter resolves imports to project files first).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

FILES = {
    'torch/__init__.py': '''\
"""A test stub of `torch` for the astroid oracle (tests/oracle/astroid_oracle.py): NOT torch.

Only the names the oracle's inference needs exist, with no behaviour; astroid reads this source instead
of the real package, so that what it infers does not depend on which torch is installed (or on none).
"""

from . import jit, nn  # noqa: F401  (torch.nn and torch.jit as attributes of torch)


class Tensor:
    def size(self, dim=None):
        return Tensor()


def zeros(*size, **options):
    return Tensor()


def cat(tensors, dim=0):
    return Tensor()


def load(path, **options):
    return object()
''',
    'torch/jit/__init__.py': '''\
"""A test stub of `torch.jit` for the astroid oracle: ScriptModule is a Module."""

from ..nn import Module


class ScriptModule(Module):
    pass


def script(obj, *args, **kwargs):
    return obj


def script_method(function):
    return function
''',
    'torch/nn/__init__.py': '''\
"""A test stub of `torch.nn` for the astroid oracle: the module classes, no behaviour.

RNNBase has flatten_parameters() and Module has not, as in torch; the cells derive from RNNCellBase,
not RNNBase, so they are not RNNs. Every other layer of torch.nn is an empty Module subclass (listed at the
end, one a line), so that a project's class deriving from one of them is a module.
"""
# flake8: noqa  (a stub: the layer classes are written one a line)

from . import functional, parallel, utils


class Module:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        pass

    def add_module(self, name, module):
        pass

    def cuda(self, device=None):
        return self

    def to(self, *args, **kwargs):
        return self

    def eval(self):
        return self

    def train(self, mode=True):
        return self


class RNNBase(Module):
    def flatten_parameters(self):
        pass


class RNN(RNNBase):
    pass


class LSTM(RNNBase):
    pass


class GRU(RNNBase):
    pass


class RNNCellBase(Module):
    pass


class RNNCell(RNNCellBase):
    pass


class LSTMCell(RNNCellBase):
    pass


class GRUCell(RNNCellBase):
    pass


class Sequential(Module):
    def __init__(self, *modules):
        pass


class ModuleList(Module):
    def __init__(self, modules=None):
        pass

    def append(self, module):
        return self

    def extend(self, modules):
        return self

    def insert(self, index, module):
        pass


class ModuleDict(Module):
    def __init__(self, modules=None):
        pass


DataParallel = parallel.DataParallel
Container = Module


class AdaptiveAvgPool1d(Module): pass
class AdaptiveAvgPool2d(Module): pass
class AdaptiveAvgPool3d(Module): pass
class AdaptiveLogSoftmaxWithLoss(Module): pass
class AdaptiveMaxPool1d(Module): pass
class AdaptiveMaxPool2d(Module): pass
class AdaptiveMaxPool3d(Module): pass
class AlphaDropout(Module): pass
class AvgPool1d(Module): pass
class AvgPool2d(Module): pass
class AvgPool3d(Module): pass
class BCELoss(Module): pass
class BCEWithLogitsLoss(Module): pass
class BatchNorm1d(Module): pass
class BatchNorm2d(Module): pass
class BatchNorm3d(Module): pass
class Bilinear(Module): pass
class CELU(Module): pass
class CTCLoss(Module): pass
class ChannelShuffle(Module): pass
class CircularPad1d(Module): pass
class CircularPad2d(Module): pass
class CircularPad3d(Module): pass
class ConstantPad1d(Module): pass
class ConstantPad2d(Module): pass
class ConstantPad3d(Module): pass
class Conv1d(Module): pass
class Conv2d(Module): pass
class Conv3d(Module): pass
class ConvTranspose1d(Module): pass
class ConvTranspose2d(Module): pass
class ConvTranspose3d(Module): pass
class CosineEmbeddingLoss(Module): pass
class CosineSimilarity(Module): pass
class CrossEntropyLoss(Module): pass
class CrossMapLRN2d(Module): pass
class Dropout(Module): pass
class Dropout1d(Module): pass
class Dropout2d(Module): pass
class Dropout3d(Module): pass
class ELU(Module): pass
class Embedding(Module): pass
class EmbeddingBag(Module): pass
class FeatureAlphaDropout(Module): pass
class Flatten(Module): pass
class Fold(Module): pass
class FractionalMaxPool2d(Module): pass
class FractionalMaxPool3d(Module): pass
class GELU(Module): pass
class GLU(Module): pass
class GaussianNLLLoss(Module): pass
class GroupNorm(Module): pass
class Hardshrink(Module): pass
class Hardsigmoid(Module): pass
class Hardswish(Module): pass
class Hardtanh(Module): pass
class HingeEmbeddingLoss(Module): pass
class HuberLoss(Module): pass
class Identity(Module): pass
class InstanceNorm1d(Module): pass
class InstanceNorm2d(Module): pass
class InstanceNorm3d(Module): pass
class KLDivLoss(Module): pass
class L1Loss(Module): pass
class LPPool1d(Module): pass
class LPPool2d(Module): pass
class LPPool3d(Module): pass
class LayerNorm(Module): pass
class LazyBatchNorm1d(Module): pass
class LazyBatchNorm2d(Module): pass
class LazyBatchNorm3d(Module): pass
class LazyConv1d(Module): pass
class LazyConv2d(Module): pass
class LazyConv3d(Module): pass
class LazyConvTranspose1d(Module): pass
class LazyConvTranspose2d(Module): pass
class LazyConvTranspose3d(Module): pass
class LazyInstanceNorm1d(Module): pass
class LazyInstanceNorm2d(Module): pass
class LazyInstanceNorm3d(Module): pass
class LazyLinear(Module): pass
class LeakyReLU(Module): pass
class Linear(Module): pass
class LocalResponseNorm(Module): pass
class LogSigmoid(Module): pass
class LogSoftmax(Module): pass
class MSELoss(Module): pass
class MarginRankingLoss(Module): pass
class MaxPool1d(Module): pass
class MaxPool2d(Module): pass
class MaxPool3d(Module): pass
class MaxUnpool1d(Module): pass
class MaxUnpool2d(Module): pass
class MaxUnpool3d(Module): pass
class Mish(Module): pass
class MultiLabelMarginLoss(Module): pass
class MultiLabelSoftMarginLoss(Module): pass
class MultiMarginLoss(Module): pass
class MultiheadAttention(Module): pass
class NLLLoss(Module): pass
class PReLU(Module): pass
class PairwiseDistance(Module): pass
class ParameterDict(Module): pass
class ParameterList(Module): pass
class PixelShuffle(Module): pass
class PixelUnshuffle(Module): pass
class PoissonNLLLoss(Module): pass
class RMSNorm(Module): pass
class RReLU(Module): pass
class ReLU(Module): pass
class ReLU6(Module): pass
class ReflectionPad1d(Module): pass
class ReflectionPad2d(Module): pass
class ReflectionPad3d(Module): pass
class ReplicationPad1d(Module): pass
class ReplicationPad2d(Module): pass
class ReplicationPad3d(Module): pass
class SELU(Module): pass
class SiLU(Module): pass
class Sigmoid(Module): pass
class SmoothL1Loss(Module): pass
class SoftMarginLoss(Module): pass
class Softmax(Module): pass
class Softmax2d(Module): pass
class Softmin(Module): pass
class Softplus(Module): pass
class Softshrink(Module): pass
class Softsign(Module): pass
class SyncBatchNorm(Module): pass
class Tanh(Module): pass
class Tanhshrink(Module): pass
class Threshold(Module): pass
class Transformer(Module): pass
class TransformerDecoder(Module): pass
class TransformerDecoderLayer(Module): pass
class TransformerEncoder(Module): pass
class TransformerEncoderLayer(Module): pass
class TripletMarginLoss(Module): pass
class TripletMarginWithDistanceLoss(Module): pass
class Unflatten(Module): pass
class Unfold(Module): pass
class Upsample(Module): pass
class UpsamplingBilinear2d(Module): pass
class UpsamplingNearest2d(Module): pass
class ZeroPad1d(Module): pass
class ZeroPad2d(Module): pass
class ZeroPad3d(Module): pass
''',
    'torch/nn/functional.py': '''\
"""A test stub of `torch.nn.functional` for the astroid oracle: names only."""


def relu(input, inplace=False):
    return input


def cross_entropy(input, target, **options):
    return input


def dropout(input, p=0.5, training=True, inplace=False):
    return input
''',
    'torch/nn/modules/__init__.py': '''\
"""A test stub of `torch.nn.modules` for the astroid oracle: re-exports torch.nn's classes."""

from .. import *  # noqa: F401,F403
from .. import Module, RNNBase  # noqa: F401
from . import rnn  # noqa: F401
''',
    'torch/nn/modules/rnn.py': '''\
"""A test stub of `torch.nn.modules.rnn` for the astroid oracle: re-exports torch.nn's recurrent classes."""

from .. import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
''',
    'torch/nn/parallel/__init__.py': '''\
"""A test stub of `torch.nn.parallel` for the astroid oracle."""

from .. import Module


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        self.module = module


DistributedDataParallel = DataParallel
''',
    'torch/nn/utils/__init__.py': '''\
"""A test stub of `torch.nn.utils` for the astroid oracle."""

from . import rnn  # noqa: F401
''',
    'torch/nn/utils/rnn.py': '''\
"""A test stub of `torch.nn.utils.rnn` for the astroid oracle: names only."""


class PackedSequence(tuple):
    pass


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    return PackedSequence()


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    return sequence, None
''',
}

_root: Optional[Path] = None


def stub_root() -> Path:
    """The folder holding the stub (`torch/...`), written once per process."""
    global _root
    if _root is None:
        folder = Path(tempfile.mkdtemp(prefix="torch-stub-"))
        for name, text in FILES.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        _root = folder
    return _root
