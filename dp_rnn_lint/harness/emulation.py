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

Emulated, because on GPUs the scatter puts every tensor argument on the replica's device:

- scattered tensors that are not floating point or complex (lengths, masks, token ids) become
  `ReplicaDeviceTensor`s that remember their replica's device, `cuda:<replica index>`. The mark
  follows them through torch operations and is dropped by `.cpu()` or `.to(...)` to the CPU; torch's
  packing kernel refuses marked lengths as it refuses CUDA lengths ("'lengths' argument should be a
  1D CPU int64 tensor"). Float tensors stay plain, and no tensor's `.device` is changed, so tensors
  user code creates on `x.device` still live on the CPU. The replicas' outputs are unwrapped again
  (`plain_tensors`) before they are gathered.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch import _VF
from torch.autograd import Function
from torch.nn.parallel import _functions, comm, scatter_gather
from torch.nn.utils.rnn import PackedSequence

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
        # Whichever broadcast the communication context installed, looked up as torch's Broadcast looks it up.
        outputs = comm.broadcast_coalesced(inputs, target_gpus)
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


def fresh_copies(tensors, devices, buffer_size=None):
    """comm.broadcast_coalesced for replicas on one device: every replica, the first one too, gets its own
    copy of every tensor, each in a storage of its own (see `one_device.py` for why)."""
    return [[tensor.detach().clone() for tensor in tensors] for _ in devices]


@contextlib.contextmanager
def cpu_communication(broadcast: Callable = cpu_broadcast_coalesced) -> Iterator[None]:
    """Swap torch's CUDA-only communication for the CPU stand-ins, and put them back afterwards.

    `broadcast` is what replicate's copies come from: the source keeps its tensors (DataParallel over
    several devices), or `fresh_copies` (the one-device mode run on the CPU).
    """
    with patched([
        (comm, "scatter", cpu_scatter),
        (comm, "broadcast_coalesced", broadcast),
        (_functions, "Broadcast", CpuBroadcast),
        (_functions, "Gather", CpuGather),
        (_functions, "Scatter", CpuScatter),
        (scatter_gather, "Gather", CpuGather),
        (scatter_gather, "Scatter", CpuScatter),
    ]):
        yield


@contextlib.contextmanager
def patched(patches: Sequence[Tuple[Any, str, Any]]) -> Iterator[None]:
    """Set each (owner, name) to its replacement while the block runs (one such block at a time)."""
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


# torch's wording in aten/src/ATen/native/PackedSequence.cpp, which pack_padded_sequence reaches.
LENGTHS_NOT_ON_CPU = "'lengths' argument should be a 1D CPU int64 tensor"


class ReplicaDeviceTensor(torch.Tensor):
    """An integer or bool tensor that DataParallel's scatter would have put on a replica's GPU.

    Results of torch operations on it stay marked (torch's default `__torch_function__` keeps the
    subclass), except conversions to the CPU, which return a plain tensor.
    """

    replica_device = "cuda"  # set on every instance to cuda:<replica index>

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _VF._pack_padded_sequence:
            lengths = args[1] if len(args) > 1 else kwargs.get("lengths")
            if isinstance(lengths, ReplicaDeviceTensor):
                raise _lengths_on_gpu_error(lengths)
        result = super().__torch_function__(func, types, args, kwargs)
        if _lands_on_cpu(func, args, kwargs):
            return plain_tensors(result)
        _set_replica_device(result, _first_replica_device((args, kwargs)))
        return result


def _lengths_on_gpu_error(lengths: ReplicaDeviceTensor) -> RuntimeError:
    # What the kernel says on a GPU, e.g. "... but got 1D cuda:0 Long tensor".
    return RuntimeError(
        f"{LENGTHS_NOT_ON_CPU}, but got {lengths.dim()}D {lengths.replica_device} "
        f"{_scalar_type_name(lengths.dtype)} tensor"
    )


def _scalar_type_name(dtype: torch.dtype) -> str:
    """c10's name for a dtype ("Long" for torch.int64), as torch's error messages print it."""
    try:
        legacy_name = torch.empty(0, dtype=dtype).type()  # "torch.LongTensor"
    except Exception:  # dtypes without a legacy tensor type
        return str(dtype)
    return legacy_name.rsplit(".", 1)[-1].removesuffix("Tensor")


def _lands_on_cpu(func: Callable, args: Sequence[Any], kwargs: Dict[str, Any]) -> bool:
    """Whether a call puts its result on the CPU: `.cpu()`, `.to(...)` or a `device=` naming the CPU."""
    if func is torch.Tensor.cpu:
        return True
    target = kwargs.get("device")
    if func is torch.Tensor.to and target is None and len(args) > 1:
        first = args[1]
        if isinstance(first, torch.Tensor):
            # `.to(other)` follows other's device; a plain tensor is on the CPU as far as the emulation knows.
            return not isinstance(first, ReplicaDeviceTensor)
        if isinstance(first, (str, torch.device)):
            target = first
    if target is None or isinstance(target, int):  # an int names a CUDA device
        return False
    try:
        return torch.device(target).type == "cpu"
    except (RuntimeError, TypeError):
        return False


def _first_replica_device(value: Any) -> Optional[str]:
    if isinstance(value, ReplicaDeviceTensor):
        return value.replica_device
    if isinstance(value, (tuple, list)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    else:
        return None
    for item in items:
        found = _first_replica_device(item)
        if found:
            return found
    return None


def _set_replica_device(result: Any, device: Optional[str]) -> None:
    if device is None:
        return
    if isinstance(result, ReplicaDeviceTensor):
        result.replica_device = device
    elif isinstance(result, (tuple, list)):  # sort() and friends return several tensors
        for item in result:
            _set_replica_device(item, device)


def map_tensors(
    value: Any, convert: Callable[[torch.Tensor], torch.Tensor], packed: Optional[Callable[[PackedSequence], Any]] = None
) -> Any:
    """`value` with every tensor nested in tuples, lists and dicts converted; the same object when none changed.

    A PackedSequence is converted field by field, or by `packed` when given (moving one to a GPU field by
    field would put its batch_sizes there, which PackedSequence refuses).
    """
    if isinstance(value, torch.Tensor):
        return convert(value)
    if packed is not None and isinstance(value, PackedSequence):
        return packed(value)
    if isinstance(value, (tuple, list)):
        items = [map_tensors(item, convert, packed) for item in value]
        if all(new is old for new, old in zip(items, value)):
            return value
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuples, PackedSequence included
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        mapped = {key: map_tensors(item, convert, packed) for key, item in value.items()}
        if all(mapped[key] is value[key] for key in value):
            return value
        return type(value)(mapped)
    return value


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    if not isinstance(tensor, ReplicaDeviceTensor):
        return tensor
    # Without this, torch's __torch_function__ would turn the result of as_subclass back into the subclass.
    with torch._C.DisableTorchFunctionSubclass():
        return tensor.as_subclass(torch.Tensor)


def plain_tensors(value: Any) -> Any:
    """`value` with every ReplicaDeviceTensor inside it back to a plain torch.Tensor (same storage and graph)."""
    return map_tensors(value, _plain)


def _marked_for(replica_index: int) -> Callable[[torch.Tensor], torch.Tensor]:
    device = f"cuda:{replica_index}"

    def mark(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.is_floating_point() or tensor.is_complex():
            return tensor  # the RNN path stays plain and fast
        marked = tensor.as_subclass(ReplicaDeviceTensor)
        marked.replica_device = device
        return marked

    return mark


def mark_replica_devices(
    scattered: Sequence[Any], scattered_kwargs: Sequence[Dict[str, Any]]
) -> Tuple[Tuple[Any, ...], Tuple[Dict[str, Any], ...]]:
    """scatter_kwargs' result with each replica's integer and bool tensors marked as living on its GPU."""
    return (
        tuple(map_tensors(inputs, _marked_for(index)) for index, inputs in enumerate(scattered)),
        tuple(map_tensors(kwargs, _marked_for(index)) for index, kwargs in enumerate(scattered_kwargs)),
    )
