"""DataParallel on the CPU: torch's own scatter, replicate, gather, with CPU stand-ins for CUDA's comm.

What runs is torch's code wherever it can: `scatter_kwargs` (and torch's `Scatter` function),
`replicate` (and every module's `_replicate_for_data_parallel`, so replica parameters are non-leaf
outputs of a broadcast, as on GPUs) and `gather`'s recursion. Replaced, because they only exist for
CUDA tensors:

- `comm.scatter` and `comm.broadcast_coalesced`: copies on the CPU, chunked as the C++ code chunks
  (`tensor.chunk(len(devices), dim)`), with device 0 keeping the source tensors as CUDA's does;
- the autograd functions `Broadcast` and `Gather`, whose forward refuses CPU tensors: the same
  bookkeeping, the same size check and error message as `torch/csrc/cuda/comm.cpp`;
- the autograd function `Scatter`, which on a machine with an accelerator sets up copy streams for
  each target device (and would fail for replicas beyond the devices present);
- `parallel_apply`, which needs accelerator streams: re-implemented to run the replicas one after
  another with the same argument handling and the same "in replica i" error wrapping.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence

import torch
from torch.autograd import Function
from torch.nn.parallel import _functions, comm, scatter_gather

# Patching torch's module globals is process-wide; one emulated forward at a time.
_PATCH_LOCK = threading.RLock()


def _gather_size_error(got: Sequence[int], expected: Sequence[int]) -> RuntimeError:
    # The wording of torch/csrc/cuda/comm.cpp (older releases said "gather got an input of invalid
    # size: got 2x7x64, but expected 2x9x64").
    return RuntimeError(f"Gather got an input of invalid size: got {list(got)}, but expected {list(expected)}")


def check_gather_sizes(tensors: Sequence[torch.Tensor], dim: int) -> None:
    expected = list(tensors[0].size())
    for tensor in tensors:
        if tensor.dim() != len(expected):
            raise _gather_size_error(tensor.size(), expected)
        expected[dim] = tensor.size(dim)
        if list(tensor.size()) != expected:
            raise _gather_size_error(tensor.size(), expected)


class CpuBroadcast(Function):
    """torch's Broadcast: one copy of every input per device, gradients summed back."""

    @staticmethod
    def forward(ctx, target_gpus, *inputs):
        ctx.num_inputs = len(inputs)
        ctx.num_devices = len(target_gpus)
        if not inputs:
            return ()
        outputs = cpu_broadcast_coalesced(inputs, target_gpus)
        non_differentiable = []
        for index, requires_grad in enumerate(ctx.needs_input_grad[1:]):
            if not requires_grad:
                non_differentiable.extend(output[index] for output in outputs)
        ctx.mark_non_differentiable(*non_differentiable)
        return tuple(tensor for device_outputs in outputs for tensor in device_outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = []
        for index in range(ctx.num_inputs):
            parts = [grad_outputs[device * ctx.num_inputs + index] for device in range(ctx.num_devices)]
            parts = [part for part in parts if part is not None]
            grads.append(torch.stack(parts).sum(0) if parts else None)
        return (None, *grads)


class CpuGather(Function):
    """torch's Gather: concatenate along `dim` after checking every other dimension matches."""

    @staticmethod
    def forward(ctx, target_device, dim, *inputs):
        ctx.dim = dim
        if all(t.dim() == 0 for t in inputs) and dim == 0:
            inputs = tuple(t.view(1) for t in inputs)
            ctx.unsqueezed_scalar = True
        else:
            ctx.unsqueezed_scalar = False
        ctx.input_sizes = tuple(t.size(dim) for t in inputs)
        check_gather_sizes(inputs, dim)
        return torch.cat(inputs, dim)

    @staticmethod
    def backward(ctx, grad_output):
        grads = grad_output.split(ctx.input_sizes, ctx.dim)
        if ctx.unsqueezed_scalar:
            grads = tuple(g[0] for g in grads)
        return (None, None, *grads)


class CpuScatter(Function):
    """torch's Scatter without copy streams: chunks along `dim`, gradients gathered back."""

    @staticmethod
    def forward(ctx, target_gpus, chunk_sizes, dim, input):
        ctx.dim = dim
        return cpu_scatter(input, target_gpus, chunk_sizes, dim)

    @staticmethod
    def backward(ctx, *grad_output):
        # Called directly, not through the patched module attribute: backward may run after the
        # emulation has put torch's own functions back.
        return None, None, None, CpuGather.apply(-1, ctx.dim, *grad_output)


def cpu_scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """comm.scatter on the CPU: the chunks the C++ implementation would send to each device."""
    if chunk_sizes is None:
        chunks = tensor.chunk(len(devices), dim)
    else:
        chunks = tensor.split(list(chunk_sizes), dim)
    return tuple(chunk.clone(memory_format=torch.contiguous_format) for chunk in chunks)


def cpu_broadcast_coalesced(tensors, devices, buffer_size=None):
    """comm.broadcast_coalesced on the CPU: the source device keeps its tensors, others get copies."""
    copies: List[List[torch.Tensor]] = []
    for position, _ in enumerate(devices):
        if position == 0:
            copies.append([tensor.view_as(tensor) for tensor in tensors])
        else:
            copies.append([tensor.detach().clone() for tensor in tensors])
    return copies


@contextlib.contextmanager
def cpu_communication() -> Iterator[None]:
    """Swap torch's CUDA-only communication for the CPU stand-ins, and put them back afterwards."""
    patches = [
        (comm, "scatter", cpu_scatter),
        (comm, "broadcast_coalesced", cpu_broadcast_coalesced),
        (_functions, "Broadcast", CpuBroadcast),
        (_functions, "Gather", CpuGather),
        (_functions, "Scatter", CpuScatter),
        (scatter_gather, "Gather", CpuGather),
        (scatter_gather, "Scatter", CpuScatter),
    ]
    with _PATCH_LOCK:
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        try:
            for owner, name, replacement in patches:
                setattr(owner, name, replacement)
            yield
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)


class ReplicaError(Exception):
    """A replica's forward raised; carries which replica and the original exception."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(f"in replica {index}: {type(error).__name__}: {error}")
        self.index = index
        self.error = error


def cpu_parallel_apply(
    replicas: Sequence[torch.nn.Module], inputs: Sequence[Any], kwargs_tup: Optional[Sequence[Dict[str, Any]]] = None
) -> List[Any]:
    """parallel_apply without streams or threads: each replica runs on its inputs, in order.

    torch wraps a replica's exception as "Caught X in replica i on device i"; here the original
    exception is kept (in ReplicaError) so the report can show what the user's code raised.
    """
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(replicas)
    results: List[Any] = []
    for index, (replica, replica_inputs, kwargs) in enumerate(zip(replicas, inputs, kwargs_tup)):
        if not isinstance(replica_inputs, (list, tuple)):
            replica_inputs = (replica_inputs,)
        try:
            results.append(replica(*replica_inputs, **kwargs))
        except Exception as error:
            raise ReplicaError(index, error) from error
    return results
