"""Run a model under DataParallel and say what goes wrong: the runtime check behind the linter's fixes.

The only part of dp-rnn-lint that imports torch (install `dp-rnn-lint[harness]`).

    report = check_data_parallel(model, padded, lengths)
    assert report.ok, report.problems

With at least `replicas` CUDA devices it runs the real `nn.DataParallel`; otherwise it emulates
DataParallel on the CPU step by step (see `emulation.py`). `device="cuda"` runs DataParallel's steps with
every replica on one GPU instead, built as replicas on a second GPU are (see `one_device.py`), and
`device="cpu"` asks for the emulation. The CPU emulation and the one-device mode share one walk through
DataParallel's forward (`_data_parallel_forward`); the device only changes where tensors live and which
of torch's communication functions need a stand-in. Each way the report lists:
- RNN submodules that ran on a replica before `flatten_parameters()` was called on that replica
  (on GPUs: the "not part of single contiguous chunk of memory" warning; the one-device mode says
  whether cuDNN gave it, or whether torch's forward compacted the replica's weights itself first, as
  torch 2.0 and later do for weights that are not those of the RNN's last call);
- outputs the replicas cannot be gathered into ("Gather got an input of invalid size");
- exceptions raised by a replica, among them pack_padded_sequence refusing lengths that DataParallel
  moved to the replica's GPU ("'lengths' argument should be a 1D CPU int64 tensor"; the emulation
  marks scattered integer and bool tensors as living on their replica's GPU to catch it);
- for a module in eval mode, a gathered output that differs from the single-device output.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn
from torch.nn.parallel import replicate
from torch.nn.parallel.scatter_gather import gather, scatter_kwargs

import traceback

from . import emulation
from .emulation import (
    LENGTHS_NOT_ON_CPU,
    ReplicaError,
    check_gather_sizes,
    cpu_communication,
    cpu_parallel_apply,
    map_tensors,
    mark_replica_devices,
    plain_tensors,
)
from .one_device import device_ids as one_device_ids
from .one_device import one_device_communication, to_device

NON_CONTIGUOUS_WARNING = "RNN module weights are not part of single contiguous chunk of memory"

__all__ = ["HarnessReport", "check_data_parallel", "resolve_device", "DeviceUnavailable", "NON_CONTIGUOUS_WARNING"]


class DeviceUnavailable(RuntimeError):
    """The device asked for is not on this machine (CUDA without a GPU): one line for the user."""


@dataclass
class HarnessReport:
    problems: List[str] = field(default_factory=list)
    output: Any = None  # the gathered output, None when gathering failed
    replicas: int = 0  # how many replicas ran (fewer than asked when the batch is smaller)
    mode: str = "cpu emulation"  # or "cuda" (real DataParallel), or "one device, cuda:0"
    # What the replicas' forward passes (and the gather) warned, each distinct message once, in order.
    warnings: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def non_contiguous_warning(self) -> bool:
        """Whether PyTorch warned that an RNN's weights are not one contiguous chunk (only cuDNN does)."""
        return any(NON_CONTIGUOUS_WARNING in message for message in self.warnings)

    def __str__(self) -> str:
        head = f"DataParallel check ({self.mode}, {self.replicas} replica{'s' if self.replicas != 1 else ''}): "
        if self.ok:
            return head + "ok"
        return head + f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}\n" + "\n".join(
            f"- {problem}" for problem in self.problems
        )


def check_data_parallel(
    module: nn.Module, *inputs: Any, replicas: int = 2, device: Any = "auto", **kwargs: Any
) -> HarnessReport:
    """Run `module(*inputs, **kwargs)` as DataParallel would over `replicas` devices and report problems.

    Inputs are split along dim 0, as `nn.DataParallel`'s default does: pass batch-first tensors.
    `device`: "auto" (the real nn.DataParallel with at least `replicas` CUDA devices, else the CPU
    emulation), "cpu" (the CPU emulation), or "cuda" / "cuda:N" (every replica on that one GPU; raises
    DeviceUnavailable where there is none). `replicas` and `device` are the harness's own keywords: a
    forward taking arguments of those names cannot get them through here.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"check_data_parallel needs an nn.Module, got {type(module).__name__}")
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    target = resolve_device(device)
    if target is None and torch.cuda.is_available() and torch.cuda.device_count() >= replicas:
        return _run_on_gpus(module, inputs, kwargs, replicas)
    if target is None or target.type == "cpu":
        return _emulate(module, inputs, kwargs, replicas)
    return _run_on_one_device(module, inputs, kwargs, replicas, target)


def resolve_device(device: Any) -> Optional[torch.device]:
    """The device `check_data_parallel(device=...)` names: None for "auto", the CPU, or a CUDA device with
    its index. Raises DeviceUnavailable for a CUDA device this machine lacks, ValueError for other names."""
    if isinstance(device, str) and device == "auto":
        return None
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        target = None
    if target is None or target.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if target.type == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceUnavailable(f"no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)")
    index = torch.cuda.current_device() if target.index is None else target.index
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceUnavailable(f"no device cuda:{index} (torch sees {count} CUDA device{'s' if count != 1 else ''})")
    return torch.device("cuda", index)


# -- DataParallel.forward, step by step: the CPU emulation and the one-device mode -----------------
def _emulate(module: nn.Module, inputs: Tuple[Any, ...], kwargs: Dict[str, Any], replicas: int) -> HarnessReport:
    report = HarnessReport(mode="cpu emulation")
    reference = _single_device_output(module, inputs, kwargs, report)
    with cpu_communication():
        _data_parallel_forward(module, inputs, kwargs, list(range(replicas)), report, device=None)
    _compare(module, reference, report)
    return report


def _run_on_one_device(
    module: nn.Module, inputs: Tuple[Any, ...], kwargs: Dict[str, Any], replicas: int, device: torch.device
) -> HarnessReport:
    report = HarnessReport(mode=f"one device, {device}")
    # The current device is the replicas' (torch's parallel_apply sets it so), for what user code creates.
    with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
        module = copy.deepcopy(module).to(device)  # the caller's model stays where it was
        inputs, kwargs = to_device(inputs, device), to_device(kwargs, device)
        # Lengths moved to a GPU fail pack_padded_sequence on one device too; the replicas meet the same error
        # and report it by replica, as the emulation does, so the single-device run leaves it to them.
        reference = _single_device_output(module, inputs, kwargs, report, lengths_left_to_replicas=True)
        with one_device_communication(device):
            _data_parallel_forward(module, inputs, kwargs, one_device_ids(device, replicas), report, device=device)
        _compare(module, reference, report)
    return report


def _data_parallel_forward(
    module: nn.Module,
    inputs: Tuple[Any, ...],
    kwargs: Dict[str, Any],
    device_ids: List[int],
    report: HarnessReport,
    device: Optional[torch.device],
) -> None:
    """DataParallel.forward on the communication functions the caller installed: scatter the batch along
    dim 0, replicate, run the replicas one after another (their RNNs watched, their warnings caught), gather.

    `device` is the one device of the one-device mode; None for the CPU emulation, which marks the
    scattered integer and bool tensors as living on their replica's GPU.
    """
    if len(device_ids) == 1:
        # DataParallel over one device runs the module itself: no scatter, no replicas.
        report.replicas = 1
        try:
            report.output = module(*inputs, **kwargs)
        except Exception as error:
            report.problems.append(f"the module raised {type(error).__name__}: {_first_line(error)}")
        return
    try:
        scattered, scattered_kwargs = scatter_kwargs(inputs, kwargs, device_ids, dim=0)
    except Exception as error:
        report.problems.append(_scatter_problem(error))
        return
    if not scattered and not scattered_kwargs:
        scattered, scattered_kwargs = ((),), ({},)
    if device is None:
        scattered, scattered_kwargs = mark_replica_devices(scattered, scattered_kwargs)
    copies = replicate(module, device_ids[: len(scattered)], not torch.is_grad_enabled())
    report.replicas = len(copies)
    watch = _FlattenWatch(copies)
    before = _replica_attributes(copies)
    # Replicas run one after another, not in threads as torch's parallel_apply runs them: each warning
    # is then caught inside the call of the RNN that raised it.
    on_cuda = device is not None and device.type == "cuda"
    with watch.catching_warnings():
        try:
            with watch.inherited_forwards():
                outputs = cpu_parallel_apply(copies, scattered, scattered_kwargs)
        except ReplicaError as failure:  # the replica's own error, as DataParallel would re-raise it
            report.problems.extend(watch.problems(on_cuda))
            report.problems.append(_replica_failure(failure))
        else:
            report.problems.extend(watch.problems(on_cuda))
            report.problems.extend(_state_left_on_replicas(before, _replica_attributes(copies)))
            report.output = _gathered(plain_tensors(outputs), report, device_ids[0])
    report.warnings = watch.warning_messages()


def _scatter_problem(error: Exception) -> str:
    hint = "(every tensor input needs a batch dimension first)"
    if "batch_sizes should always be on CPU" in str(error):  # only on GPUs: the emulation leaves tensors on the CPU
        hint = ("(a PackedSequence passed to the wrapped forward is split field by field, and its batch_sizes go "
                "to the replica's GPU, which PackedSequence refuses: pass the padded batch and the lengths, "
                "and pack inside forward)")
    return f"scattering the inputs along dim 0 fails: {type(error).__name__}: {_first_line(error)} {hint}"


def _replica_attributes(copies: List[nn.Module]) -> Dict[Tuple[int, str, str], Any]:
    """Every public attribute of every module in each replica, by (replica, module path, name). An RNN's
    weight slots are left out: a weight-drop wrapper sets them from the raw weights on every call."""
    return {(index, name, key): value for index, replica in enumerate(copies)
            for name, part in replica.named_modules() for key, value in vars(part).items()
            if not key.startswith("_") and key != "training" and key not in getattr(part, "_flat_weights_names", ())}


def _state_left_on_replicas(before: Dict[Tuple[int, str, str], Any], after: Dict[Tuple[int, str, str], Any]) -> List[str]:
    """Attributes a replica's forward set on itself (anywhere in its tree): DataParallel discards replicas
    after the call, so the module never sees them."""
    changed: Dict[str, List[int]] = {}
    for (index, name, key), value in after.items():
        if (index, name, key) not in before or before[index, name, key] is not value:
            changed.setdefault(f"{name}.{key}" if name else key, []).append(index)
    return [f"replica{'s' if len(indexes) > 1 else ''} {', '.join(map(str, indexes))} set `{attribute}` in "
            "forward: DataParallel discards the replicas after the call, so the module never sees "
            "the value (the next call reads the old one)" for attribute, indexes in changed.items()]


class _FlattenWatch:
    """Records, per replica, whether each RNN submodule's flatten_parameters() ran before the RNN did, and
    (while `catching_warnings`) whether cuDNN warned about the RNN's weights during the RNN's own call.

    Replicas share their hook dictionaries with the original module, so the watch sets instance
    attributes on the replicas instead of registering hooks.
    """

    def __init__(self, copies: List[nn.Module]) -> None:
        self._late: Dict[str, List[int]] = {}
        self._caught: List[warnings.WarningMessage] = []
        self._warned: Dict[str, List[int]] = {}  # the replicas on which cuDNN warned during the RNN's call
        # The replicas on which torch's forward called flatten_parameters() itself: since torch 2.0 an RNN whose
        # weights are other tensors than at its last call (a replica's) re-reads them and compacts them.
        self._self_flattened: Dict[str, List[int]] = {}
        self._attributed: set = set()  # ids of the caught warnings raised inside a watched RNN's call
        self._kinds: Dict[str, str] = {}
        # RNN subclasses with a forward of their own (which may flatten, or swap weights, before calling
        # torch's): checked when torch's forward runs, by instance. {id: (replica, name, state)}
        self._subclassed: Dict[int, Tuple[int, str, Dict[str, bool]]] = {}
        self._torch_classes: List[type] = []
        self._own_forward: set = set()  # names of the RNNs whose class has a forward of its own
        for index, replica in enumerate(copies):
            for name, submodule in replica.named_modules():
                if isinstance(submodule, nn.RNNBase):
                    self._watch(index, name or "(the module itself)", submodule)

    def _watch(self, index: int, name: str, rnn: nn.RNNBase) -> None:
        state = {"flattened": False}
        flatten, forward = rnn.flatten_parameters, rnn.forward
        self._kinds[name] = type(rnn).__name__

        def flatten_parameters() -> None:
            state["flattened"] = True
            flatten()

        def watched_forward(*args: Any, **kwargs: Any) -> Any:
            self._check(index, name, state)
            return self._observed(index, name, state, forward, *args, **kwargs)

        rnn.flatten_parameters = flatten_parameters  # type: ignore[method-assign]
        torch_class = next(c for c in type(rnn).__mro__ if c.__module__.startswith("torch.nn"))
        if type(rnn).forward is torch_class.forward:
            rnn.forward = watched_forward  # type: ignore[method-assign]
        else:
            self._subclassed[id(rnn)] = (index, name, state)
            self._own_forward.add(name)
            if torch_class not in self._torch_classes:
                self._torch_classes.append(torch_class)

    def _check(self, index: int, name: str, state: Dict[str, bool]) -> None:
        if not state["flattened"]:
            _add(self._late, name, index)

    def _observed(self, index: int, name: str, state: Dict[str, bool], call: Any, *args: Any, **kwargs: Any) -> Any:
        """One call of torch's RNN forward, noting whether it called flatten_parameters() itself, and whether
        PyTorch warned that the weights are not one chunk."""
        start, flattened = len(self._caught), state["flattened"]
        try:
            return call(*args, **kwargs)
        finally:
            if state["flattened"] and not flattened:
                _add(self._self_flattened, name, index)
            for caught in self._caught[start:]:
                if id(caught) not in self._attributed and NON_CONTIGUOUS_WARNING in str(caught.message):
                    self._attributed.add(id(caught))
                    _add(self._warned, name, index)

    @contextlib.contextmanager
    def catching_warnings(self):
        """Record every warning raised while the block runs, each time it is raised."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self._caught = caught
            yield

    def warning_messages(self) -> List[str]:
        return list(dict.fromkeys(str(caught.message) for caught in self._caught))

    @contextlib.contextmanager
    def inherited_forwards(self):
        """While the replicas run: torch's forward of the watched subclasses checks its instance first."""
        originals = {cls: cls.forward for cls in self._torch_classes}

        def watching(original):
            def forward(rnn, *args: Any, **kwargs: Any) -> Any:
                watched = self._subclassed.get(id(rnn))
                if watched is None:
                    return original(rnn, *args, **kwargs)
                self._check(*watched)
                return self._observed(*watched, original, rnn, *args, **kwargs)
            return forward

        try:
            for cls, original in originals.items():
                cls.forward = watching(original)
            yield
        finally:
            for cls, original in originals.items():
                cls.forward = original

    def problems(self, on_cuda: bool = False) -> List[str]:
        """`on_cuda`: the replicas ran on a GPU, where cuDNN's warning (or its absence) is evidence."""
        found = []
        for name, replicas in self._late.items():
            found.append(
                f"RNN submodule `{name}` ({self._kinds[name]}) ran on {_replicas(replicas)} before "
                f"flatten_parameters() was called on that replica: {self._evidence(name, on_cuda)}; "
                + (f"call self.flatten_parameters() in {self._kinds[name]}.forward just before it runs the inherited forward"
                   if name in self._own_forward else _flatten_advice(name))
            )
        for name, replicas in self._warned.items():
            flattened = [index for index in replicas if index not in self._late.get(name, [])]
            if flattened:
                found.append(
                    f"RNN submodule `{name}` ({self._kinds[name]}) made cuDNN warn '{NON_CONTIGUOUS_WARNING}' on "
                    f"{_replicas(flattened)} although flatten_parameters() was called on that replica before it ran "
                    "(its weights were replaced after the call, or could not be compacted); call "
                    "flatten_parameters() just before the RNN runs, after its weights are set"
                )
        stray = [c for c in self._caught if id(c) not in self._attributed and NON_CONTIGUOUS_WARNING in str(c.message)]
        if stray:
            found.append(f"PyTorch warned '{NON_CONTIGUOUS_WARNING}' {len(stray)} time{'s' if len(stray) > 1 else ''} "
                         "outside the calls of the RNN submodules the harness watches")
        return found

    def _evidence(self, name: str, on_cuda: bool) -> str:
        if not on_cuda:
            return f"on GPUs every forward warns '{NON_CONTIGUOUS_WARNING}' and copies the weights"
        if name in self._warned:
            return f"cuDNN warned '{NON_CONTIGUOUS_WARNING}' on {_replicas(self._warned[name])} and copied the weights"
        if name in self._self_flattened:
            return ("cuDNN did not warn: torch's forward called flatten_parameters() itself on "
                    f"{_replicas(self._self_flattened[name])} (torch 2.0 and later re-read and compact an RNN's "
                    "weights when they are other tensors than at its last call, as a replica's are)")
        return (f"cuDNN did not warn here (it did not run this RNN), but where it does, every forward warns "
                f"'{NON_CONTIGUOUS_WARNING}' and copies the weights")


def _add(table: Dict[str, List[int]], name: str, index: int) -> None:
    replicas = table.setdefault(name, [])
    if index not in replicas:
        replicas.append(index)


def _replicas(indexes: List[int]) -> str:
    return f"replica{'s' if len(indexes) > 1 else ''} {', '.join(str(index) for index in indexes)}"


def _flatten_advice(name: str) -> str:
    if name.startswith("("):
        return "call flatten_parameters() at the start of its forward"
    parts = name.split(".")
    for index, part in enumerate(parts):
        if part.isdigit():  # a member of an nn.ModuleList or nn.Sequential
            container = ".".join(parts[:index])
            return f"call flatten_parameters() on every member of self.{container} at the start of forward"
    return f"call self.{name}.flatten_parameters() at the start of forward"


def _gathered(outputs: List[Any], report: HarnessReport, target_device: int) -> Any:
    try:
        mismatch = _first_gather_mismatch(outputs, "output")
    except Exception:  # outputs of different structure: the gather below says how
        mismatch = None
    try:
        return gather(outputs, target_device, dim=0)
    except Exception as error:
        if "not implemented for CPU tensors" in str(error):  # torch's Gather on a GPU; the emulation's takes any
            where = _first_cpu_tensor(outputs[0], "output")
            report.problems.append(
                f"gathering{f' {where}' if where else ''} from the replicas fails: {type(error).__name__}: "
                f"{_first_line(error)} (a replica returned a tensor on the CPU, such as a PackedSequence's "
                "batch_sizes: DataParallel gathers tensors on GPUs only)")
            return None
        if not isinstance(error, (RuntimeError, ValueError)):
            error = f"{type(error).__name__}: {error} (the replicas returned outputs of different structure)"
        report.problems.append(_gather_problem(mismatch, error))
        return None


def _first_cpu_tensor(output: Any, path: str) -> Optional[str]:
    """The path (`output[1]`) of the first tensor on the CPU in one replica's output."""
    if isinstance(output, torch.Tensor):
        return path if output.device.type == "cpu" else None
    items = output.items() if isinstance(output, dict) else enumerate(output) if isinstance(output, (list, tuple)) else ()
    for key, item in items:
        found = _first_cpu_tensor(item, f"{path}[{key!r}]")
        if found:
            return found
    return None


def _gather_problem(mismatch: Optional[str], error: Any) -> str:
    """The same sentence for the emulation and for real GPUs, naming the output when it is known."""
    where = f" {mismatch}" if mismatch else ""
    return (
        f"gathering{where} from the replicas fails: {_first_line(error)} (older PyTorch words it 'gather "
        "got an input of invalid size'); every dimension but the batch dimension must agree across "
        "replicas (for pad_packed_sequence outputs, pass total_length= the padded input's time dimension)"
    )


def _first_gather_mismatch(outputs: List[Any], path: str) -> Optional[str]:
    """The path (`output[0]`, `output['logits']`) of the first output whose replicas disagree in shape."""
    first = outputs[0]
    if isinstance(first, torch.Tensor):
        try:
            check_gather_sizes([t if t.dim() else t.view(1) for t in outputs], 0)
        except RuntimeError:
            return path
        return None
    if isinstance(first, dict):
        for key in first:
            found = _first_gather_mismatch([o[key] for o in outputs], f"{path}[{key!r}]")
            if found:
                return found
    elif isinstance(first, (list, tuple)):
        for index, items in enumerate(zip(*outputs)):
            found = _first_gather_mismatch(list(items), f"{path}[{index}]")
            if found:
                return found
    return None


# -- real GPUs -------------------------------------------------------------------------------------
def _run_on_gpus(module: nn.Module, inputs: Tuple[Any, ...], kwargs: Dict[str, Any], replicas: int) -> HarnessReport:
    report = HarnessReport(mode="cuda")
    module = copy.deepcopy(module).cuda()  # the caller's model stays where it was
    inputs, kwargs = _to_cuda(inputs), _to_cuda(kwargs)
    reference = _single_device_output(module, inputs, kwargs, report)
    parallel = nn.DataParallel(module, device_ids=list(range(replicas)))
    report.replicas = _replicas_used(inputs, kwargs, replicas)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report.output = parallel(*inputs, **kwargs)
        except Exception as error:
            report.problems.append(_gpu_failure(parallel, inputs, kwargs, error))
    report.warnings = list(dict.fromkeys(str(warning.message) for warning in caught))
    if any(NON_CONTIGUOUS_WARNING in str(warning.message) for warning in caught):
        names = [name or "(the module itself)" for name, sub in module.named_modules() if isinstance(sub, nn.RNNBase)]
        report.problems.append(
            f"PyTorch warned '{NON_CONTIGUOUS_WARNING}' during the forward pass; RNN submodules: "
            f"{', '.join(f'`{n}`' for n in names)}: call flatten_parameters() on each at the start of forward"
        )
    _compare(module, reference, report)
    return report


def _gpu_failure(parallel: nn.DataParallel, inputs, kwargs, error: Exception) -> str:
    """Say which output could not be gathered, by running DataParallel's steps again up to the gather."""
    if "Gather got an input of invalid size" in str(error):
        try:
            scattered, scattered_kwargs = parallel.scatter(inputs, kwargs, parallel.device_ids)
            copies = parallel.replicate(parallel.module, parallel.device_ids[: len(scattered)])
            outputs = parallel.parallel_apply(copies, scattered, scattered_kwargs)
            mismatch = _first_gather_mismatch(outputs, "output")
        except Exception:
            mismatch = None
        return _gather_problem(mismatch, error)
    return f"DataParallel raised {type(error).__name__}: {_first_line(error)}{_lengths_hint(error)}"


def _replicas_used(inputs, kwargs, replicas: int) -> int:
    for value in list(inputs) + list(kwargs.values()):
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return len(value.chunk(replicas))
    return replicas


def _to_cuda(value: Any) -> Any:
    return map_tensors(value, lambda tensor: tensor.cuda())


# -- comparing with one device ---------------------------------------------------------------------
def _single_device_output(module: nn.Module, inputs, kwargs, report: HarnessReport,
                          lengths_left_to_replicas: bool = False) -> Any:
    if module.training:
        return None  # dropout and batch statistics make outputs differ legitimately
    try:
        # On a copy: a forward that keeps state on the module (a last hidden state) must find the module as
        # the caller left it when DataParallel's turn comes.
        reference = copy.deepcopy(module)
    except Exception:
        reference = module
    try:
        with torch.no_grad():
            return reference(*inputs, **kwargs)
    except Exception as error:
        if lengths_left_to_replicas and _lengths_hint(error):
            return None
        report.problems.append(f"the module fails even on one device: {type(error).__name__}: {_first_line(error)}")
        return None


def _compare(module: nn.Module, reference: Any, report: HarnessReport) -> None:
    if reference is None or report.output is None:
        return
    difference = _first_difference(reference, report.output, "output")
    if difference:
        expected = _at(reference, difference)
        got = _at(report.output, difference)
        if _inside_packed_sequence(reference, difference):
            why = ("a PackedSequence is gathered field by field: the replicas' data and batch_sizes are concatenated "
                   "along dim 0, which describes no batch")
        elif isinstance(expected, torch.Tensor) and expected.dim() == 0:
            why = "a scalar output is gathered into a vector with one value per replica"
        elif isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor) and got.shape == expected.shape:
            why = ("same shape, other values: something computed on each replica depends on how the batch was "
                   "split, such as a mean or maximum over time that counts padding to the replica's longest sequence")
        else:
            why = ("an output whose batch dimension is not dim 0, such as an RNN's hidden state, is gathered "
                   "along the wrong dimension")
        report.problems.append(f"{difference} under DataParallel differs from the single-device output ({why})")


def _inside_packed_sequence(value: Any, path: str) -> bool:
    """Whether the part of an output that `path` names is, or lies in, a PackedSequence."""
    from torch.nn.utils.rnn import PackedSequence

    keys = re.findall(r"\[[^\]]+\]", path)
    return any(isinstance(_at(value, "output" + "".join(keys[:length])), PackedSequence) for length in range(len(keys) + 1))


def _at(value: Any, path: str) -> Any:
    """The part of an output that a path like output[1]['logits'] names (None when it cannot be found)."""
    for key in re.findall(r"\[([^\]]+)\]", path):
        try:
            value = value[ast.literal_eval(key)]
        except Exception:
            return None
    return value


def _first_difference(expected: Any, actual: Any, path: str) -> Optional[str]:
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or expected.shape != actual.shape:
            return path
        return None if torch.allclose(expected, actual.to(expected.device), rtol=1e-4, atol=1e-5) else path
    if isinstance(expected, dict):
        for key in expected:
            found = _first_difference(expected[key], actual.get(key) if isinstance(actual, dict) else None, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return path
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = _first_difference(e, a, f"{path}[{index}]")
            if found:
                return found
    return None


def _replica_failure(failure: ReplicaError) -> str:
    error = failure.error
    frames = traceback.extract_tb(error.__traceback__)
    for position, frame in enumerate(frames):
        if frame.filename == emulation.__file__ and frame.name == "__torch_function__":
            del frames[position:]  # a marked tensor's dispatch: point where torch itself would have raised
            break
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    hint = _lengths_hint(error)
    if isinstance(error, StopIteration):
        hint = " (replicas have no registered parameters: next(self.parameters()) fails on them)"
    return (
        f"replica {failure.index} raised {type(error).__name__}{where}: {_first_line(error) if str(error) else '(no message)'}"
        f"{hint}"
    )


def _lengths_hint(error: BaseException) -> str:
    if not re.search(re.escape(LENGTHS_NOT_ON_CPU) + r", but got \d+D cuda", str(error)):
        return ""
    return " (DataParallel moved the lengths to the replica's GPU; pass lengths.cpu() to pack_padded_sequence)"


def _first_line(value: Any) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else type(value).__name__
