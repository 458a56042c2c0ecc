"""Import a user's model file and build its model and inputs: the one place user code runs."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Tuple

import torch

from ..escaping import printable
from ..files import module_name_for


class LoadProblem(Exception):
    """The file cannot be imported, or lacks the functions asked for: one line for the user."""


def load_model_and_inputs(path: str, model_factory: str, inputs_factory: str) -> Tuple[torch.nn.Module, tuple, dict]:
    """Import `path` as a module, then call its factories. Returns (model, positional inputs, keyword inputs).

    `make_inputs()` may return a tuple of positional inputs, a dict of keyword inputs, a
    (tuple, dict) pair, or a single tensor.
    """
    if not os.path.isfile(path):
        raise LoadProblem("no such file")
    saved_argv = sys.argv
    sys.argv = [path]  # the user's code sees itself as the program, not `dp-rnn-lint verify ...`
    try:
        module = _import(path)
        model = _call(module, model_factory)
        if not isinstance(model, torch.nn.Module):
            raise LoadProblem(f"{model_factory}() returned {type(model).__name__}, not an nn.Module")
        inputs = _call(module, inputs_factory)
    finally:
        sys.argv = saved_argv
    if isinstance(inputs, dict):
        return model, (), inputs
    if isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[0], tuple) and isinstance(inputs[1], dict):
        return model, inputs[0], inputs[1]
    if isinstance(inputs, (tuple, list)):
        return model, tuple(inputs), {}
    return model, (inputs,), {}


def _import(path: str) -> Any:
    """Import the file as `python FILE` would see it, or as its package's module when it is in one."""
    dotted, _ = module_name_for(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if dotted and "." in dotted:
            # `from .layers import ...` needs the package: import it from the folder above the package.
            root = os.path.abspath(os.path.join(folder, *[".."] * dotted.count(".")))
            sys.path.insert(0, root)
            return importlib.import_module(dotted)
        # Neighbours stay importable for the whole run: factories may import them lazily.
        sys.path.insert(0, folder)
        name = "_dp_rnn_lint_verify_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path))
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadProblem("cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickle look the module up by name
        spec.loader.exec_module(module)
        return module
    except LoadProblem:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: a model file that exits has not been checked
        raise LoadProblem(f"importing it raised {_describe(error)}") from error


def _call(module: Any, name: str) -> Any:
    factory = getattr(module, name, None)
    if not callable(factory):
        raise LoadProblem(f"defines no function {name}()")
    try:
        return factory()
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise LoadProblem(f"{name}() raised {_describe(error)}") from error


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return printable(f"{type(error).__name__}: {text[0]}" if text else type(error).__name__)
