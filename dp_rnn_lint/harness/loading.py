"""Import a user's model file and build its model and inputs: the one place user code runs."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from typing import Any, Optional, Sequence, Tuple

import torch

from ..escaping import printable
from ..files import module_name_for


class LoadProblem(Exception):
    """The file cannot be imported, or lacks the functions asked for: one line for the user."""


def load_model_and_inputs(path: str, model_factory: str, inputs_factory: str,
                          skip_package_init: bool = False) -> Tuple[torch.nn.Module, tuple, dict]:
    """Import `path` as a module, then call its factories. Returns (model, positional inputs, keyword inputs).

    `make_inputs()` may return a tuple of positional inputs, a dict of keyword inputs, a
    (tuple, dict) pair, or a single tensor. `skip_package_init`: the packages of the file's own tree (its
    folder, or the folder above its package) are imported without running their `__init__.py`, their
    folders standing in for them: the file's own package and those it imports, relative imports included.
    """
    if not os.path.isfile(path):
        raise LoadProblem("no such file")
    saved_argv = sys.argv
    sys.argv = [path]  # the user's code sees itself as the program, not `dp-rnn-lint verify ...`
    try:
        module = _import(path, skip_package_init)
        # Factories may import lazily: the packages they reach are read the same way.
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


def _import(path: str, skip_package_init: bool = False) -> Any:
    """Import the file as `python FILE` would see it, or as its package's module when it is in one."""
    dotted, _ = module_name_for(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if dotted and "." in dotted:
            # `from .layers import ...` needs the package: import it from the folder above the package.
            root = os.path.abspath(os.path.join(folder, *[".."] * dotted.count(".")))
            sys.path.insert(0, root)
            if skip_package_init:
                sys.meta_path.insert(0, _PackagesWithoutInit([root]))
            return importlib.import_module(dotted)
        # Neighbours stay importable for the whole run: factories may import them lazily.
        sys.path.insert(0, folder)
        if skip_package_init:
            sys.meta_path.insert(0, _PackagesWithoutInit([folder]))
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


class _EmptyPackage(importlib.abc.Loader):
    """Loads a package as its folder alone: its `__init__.py` is not run."""

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        pass


class _PackagesWithoutInit(importlib.abc.MetaPathFinder):
    """Finds the packages under the given folders (the user's tree, never site-packages) as folders
    whose `__init__.py` is not run; modules and everything else are found as usual."""

    def __init__(self, roots: Sequence[str]) -> None:
        self._roots = [os.path.join(os.path.abspath(root), "") for root in roots]

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        if not locations or not spec.origin or not any(spec.origin.startswith(root) for root in self._roots):
            return None
        package = importlib.machinery.ModuleSpec(name, _EmptyPackage(), origin=spec.origin, is_package=True)
        package.submodule_search_locations = locations
        return package


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
