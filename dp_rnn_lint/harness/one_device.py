"""DataParallel's replicas on one device: what `check_data_parallel(..., device="cuda")` and
`dp-rnn-lint verify --device cuda` run.

DataParallel over several GPUs gives the replica on the source device views of the module's own
parameters, and every other replica copies made by `comm.broadcast_coalesced`. On one device every
replica is built the second way, as a fresh copy, so that each shows what a replica on a second GPU
shows. The copies are made tensor by tensor, each in a storage of its own, and that is the point:

- cuDNN runs an RNN on its weights where they lie only when they are views into one buffer, laid out as
  cuDNN lays them out and starting at the buffer's start (`try_get_weight_buf` in torch's
  aten/src/ATen/native/cudnn/RNN.cpp); otherwise it warns "RNN module weights are not part of single
  contiguous chunk of memory" and compacts them into a new buffer on that call. The module's own weights
  are such a buffer once `.cuda()` has run `flatten_parameters()`. A second GPU's replica gets views into
  a broadcast buffer holding the module's parameters in the module's order (in chunks of about 10 MB),
  so its RNN weights pass that check only by accident of layout (an RNN whose weights come first and fit
  in one chunk). Copies in storages of their own never pass it, whatever the module's layout: the
  one-device mode meets cuDNN's check wherever a second GPU's replica can.
- Whether the check is reached is torch's business: since torch 2.0 an RNN's forward first compares its
  weights with those of its last call and, when they are other tensors (a replica's always are), re-reads
  them and calls flatten_parameters() itself. The harness watches for that call and reports it beside
  cuDNN's warning or its absence; benchmarks/gpu.py records both on a real GPU.
- On CUDA, torch's own scatter and gather run (the gather's size check and its message are torch's), and
  the scatter puts every tensor argument, lengths included, on the device, so pack_padded_sequence
  refuses lengths left there as it does under DataParallel.
- When the device is the CPU (the tests' stand-in for a GPU), the CPU stand-ins of `emulation.py` replace
  torch's CUDA-only functions: only where the tensors live differs, and no cuDNN warning can show.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator, List

import torch
from torch import nn
from torch.nn.parallel import comm, replicate

from .emulation import cpu_communication, fresh_copies, map_tensors, patched


@contextlib.contextmanager
def one_device_communication(device: torch.device) -> Iterator[None]:
    """While the block runs, replicate() makes fresh copies; on the CPU the CPU stand-ins run too."""
    if device.type == "cpu":
        with cpu_communication(broadcast=fresh_copies):
            yield
    else:
        # torch's Broadcast calls comm.broadcast_coalesced, and so does replicate(detach=True).
        with patched([(comm, "broadcast_coalesced", fresh_copies)]):
            yield


def device_ids(device: torch.device, count: int) -> List[int]:
    """DataParallel's device_ids with every one of `count` replicas on `device`."""
    return [device.index or 0] * count


def to_device(value: Any, device: torch.device) -> Any:
    """`value` with every tensor in it moved to `device`, a PackedSequence as its own .to() moves it."""
    return map_tensors(value, lambda tensor: tensor.to(device), packed=lambda sequence: sequence.to(device))


def fresh_replicas(module: nn.Module, count: int, device: torch.device) -> List[nn.Module]:
    """`count` replicas of `module` (already on `device`) as replicate() builds them for a device other than
    the source: parameters that are outputs of a broadcast (gradients flow back to `module`), each in a
    storage of its own."""
    with one_device_communication(device):
        return replicate(module, device_ids(device, count), not torch.is_grad_enabled())


def without_self_compaction(rnn: nn.RNNBase) -> None:
    """Make `rnn` take its present weights for those of its last call, so that its next forward runs them as
    they lie instead of calling flatten_parameters() itself: how every replica ran before torch 2.0, and
    the trap DPR001 describes, shown on a later torch (benchmarks/gpu.py measures it so). No-op on a torch
    without that check."""
    if hasattr(rnn, "_flat_weight_refs"):
        rnn._flat_weight_refs = [weakref.ref(weight) if weight is not None else None for weight in rnn._flat_weights]
