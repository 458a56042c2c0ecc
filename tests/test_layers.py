"""Layers point down: no import cycle among the package's modules, counting the imports inside functions
(which only postpone a cycle) and the packages an import runs (`from ..analysis.screen import x` runs
`analysis/__init__.py` first); and every module imports on its own in a fresh interpreter, so no module
relies on another having been loaded."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dp_rnn_lint"


def package_modules() -> Dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules `name` imports anywhere in its code, and the packages those imports run."""
    found: Set[str] = set()
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            found.update(".".join(parts[:end]) for end in range(1, len(parts) + 1) if ".".join(parts[:end]) in modules)
    # A module's own packages were imported before it ran: naming them again cannot make a cycle.
    own = {".".join(name.split(".")[:end]) for end in range(1, name.count(".") + 2)}
    return found - own


def import_cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    cycles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_package_has_no_import_cycle():
    modules = package_modules()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    assert import_cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_imports_alone_in_a_fresh_interpreter():
    names = [name for name in package_modules() if name != "dp_rnn_lint.__main__"]  # __main__ runs the command
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401  (the harness imports it)
        except ImportError:
            names = [name for name in names if not name.startswith("dp_rnn_lint.harness")]
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    running = [(name, subprocess.Popen([sys.executable, "-c", f"import {name}"], env=env, stderr=subprocess.PIPE,
                                       text=True)) for name in names]
    failed = {}
    for name, process in running:
        _, error = process.communicate(timeout=120)
        if process.returncode != 0:
            failed[name] = error.strip().splitlines()[-1:]
    assert failed == {}


@pytest.mark.parametrize("module", ["dp_rnn_lint.files", "dp_rnn_lint.notebooks", "dp_rnn_lint.parse"])
def test_the_lowest_layers_import_nothing_above_them(module):
    modules = package_modules()
    above = {"dp_rnn_lint.engine", "dp_rnn_lint.cli", "dp_rnn_lint.cache", "dp_rnn_lint.runner", "dp_rnn_lint.rules",
             "dp_rnn_lint.analysis", "dp_rnn_lint.reporters", "dp_rnn_lint.flake8_plugin"}
    assert not imported_modules(module, modules[module], modules) & above
