"""Import a user's model file and build its model and inputs: the one place user code runs."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Tuple

import torch


class LoadProblem(Exception):
    """The file cannot be imported, or lacks the functions asked for: one line for the user."""


def load_model_and_inputs(path: str, model_factory: str, inputs_factory: str) -> Tuple[torch.nn.Module, tuple, dict]:
    """Import `path` as a module, then call its factories. Returns (model, positional inputs, keyword inputs).

    `make_inputs()` may return a tuple of positional inputs, a dict of keyword inputs, a
    (tuple, dict) pair, or a single tensor.
    """
    if not os.path.isfile(path):
        raise LoadProblem("no such file")
    name = "_dp_rnn_lint_verify_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadProblem("cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # let the model file import its neighbours, as `python FILE` would
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise LoadProblem(f"importing it raised {type(error).__name__}: {error}") from error
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    model = _call(module, model_factory)
    if not isinstance(model, torch.nn.Module):
        raise LoadProblem(f"{model_factory}() returned {type(model).__name__}, not an nn.Module")
    inputs = _call(module, inputs_factory)
    if isinstance(inputs, dict):
        return model, (), inputs
    if isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[0], tuple) and isinstance(inputs[1], dict):
        return model, inputs[0], inputs[1]
    if isinstance(inputs, (tuple, list)):
        return model, tuple(inputs), {}
    return model, (inputs,), {}


def _call(module: Any, name: str) -> Any:
    factory = getattr(module, name, None)
    if not callable(factory):
        raise LoadProblem(f"defines no function {name}()")
    try:
        return factory()
    except Exception as error:
        raise LoadProblem(f"{name}() raised {type(error).__name__}: {error}") from error
