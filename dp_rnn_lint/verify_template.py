"""The file `dp-rnn-lint verify --template` writes: a model check to fill in (no torch needed to print it)."""

TEMPLATE = '''\
"""Run one model under DataParallel: `dp-rnn-lint verify check_my_model.py` (exit 0: ok, 1: a problem).

Fill in the two functions below. `verify` imports this file, calls make_model() and make_inputs(),
and runs the model split over two replicas: on real GPUs when there are enough, else in a CPU emulation
of what DataParallel does (`--device cuda` puts every replica on one GPU). It reports what goes wrong:
outputs that cannot be gathered, RNN weights not compacted, lengths on the wrong device, a result that
differs from one device's. Model and inputs may be tiny: the check is about shapes, not accuracy.
"""

import torch

# TODO: import your model as your training code does. If importing its package runs heavy code in the
# package's __init__.py (a dataset download, an optional dependency), run verify with
# --skip-package-init: the package's __init__.py files are then not run, only this module's imports.
from my_project.models import MyModel  # TODO


def make_model():
    """The nn.Module that your training script hands to nn.DataParallel, built the same way."""
    torch.manual_seed(0)
    return MyModel()  # TODO: the arguments your training script passes


def make_inputs():
    """One batch of forward's arguments: a tuple (positional), a dict (keyword), or (tuple, dict).

    Give it more rows than replicas, with lengths that differ from row to row, and the longest sequence
    in one replica's rows only (DataParallel splits the batch along dim 0, in order): padding that
    differs from one replica to another is what breaks under DataParallel.
    """
    torch.manual_seed(1)
    lengths = torch.tensor([7, 3, 6, 2, 5, 1])  # TODO: one length per row, the longest first
    padded = torch.randn(len(lengths), int(lengths.max()), 8)  # TODO: (batch, time, features) as your model takes
    return padded, lengths
'''
