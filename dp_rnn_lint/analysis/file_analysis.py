"""The analysis of one file: its names, module classes and forward paths, shared by every rule."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

import libcst as cst

from .forward_path import ForwardPath
from .modules import ModuleClass, ModuleModel
from .names import NameResolver
from .evaluator import EvaluatedClasses
from .project import FileContext


class FileAnalysis:
    """The parsed module with its names, module classes and forward paths, built lazily.

    `context` is what the project index says about the file: which classes DataParallel wraps, and
    whether only those are checked (`--scope wrapped`).
    """

    def __init__(self, module: cst.Module, module_name: Optional[str] = None, is_package: bool = False,
                 context: Optional[FileContext] = None, path: str = "", tree: Optional[ast.Module] = None) -> None:
        self.module = module
        self.context = context or FileContext()
        self.resolver = NameResolver(module, module_name, is_package)
        self.evaluated = EvaluatedClasses(path, tree, lambda: module.code)
        known = frozenset(name for name, _ in self.context.wrapped + self.context.direct) | set(self.context.modules)
        self.model = ModuleModel(module, self.resolver, known_modules=known, plain_classes=frozenset(self.context.plain),
                                 inherited=self._inherited, imported=self._imported, injected=self.context.handed_in,
                                 evaluated=self.evaluated)
        self._paths: Dict[int, ForwardPath] = {}

    def _inherited(self, class_qualname: str) -> List[Tuple[ModuleModel, ModuleClass]]:
        """The classes a class derives from in other files of the project, each with its file's model."""
        found = []
        for path, qualname, size, mtime in self.context.bases_elsewhere(class_qualname):
            model = _base_file_model(path, size, mtime)
            base = model.class_named(qualname) if model is not None else None
            if base is not None:
                found.append((model, base))
        return found

    def _imported(self, local: str) -> Optional[Tuple[ModuleModel, cst.CSTNode]]:
        """A class or function this file imports from another file of the project, with that file's model."""
        found = self.context.imported_name(local)
        if found is None:
            return None
        _, path, qualname, size, mtime = found
        model = _base_file_model(path, size, mtime)
        node = model.definition(qualname) if model is not None else None
        return (model, node) if node is not None else None

    @property
    def checked_classes(self) -> List[ModuleClass]:
        """The module classes the rules look at: all of them, or in wrapped scope the wrapped ones."""
        return [cls for cls in self.model.classes if self.context.in_scope(self.model.qualname(cls.node))]

    def scope_note(self, cls: ModuleClass) -> str:
        """What a finding about `cls` adds to its message: in wrapped scope, where the class is wrapped."""
        return self.context.scope_note(self.model.qualname(cls.node))

    def direct_wrap_site(self, cls: ModuleClass) -> Optional[str]:
        """Where DataParallel wraps `cls` itself (not one of its parents), if it does."""
        return self.context.direct_site(self.model.qualname(cls.node))

    def root_site(self, cls: ModuleClass) -> Optional[str]:
        """Where the project builds `cls` as a root module (one no other module holds), in the default scope."""
        return self.context.root_site(self.model.qualname(cls.node))

    def forward_path(self, cls: ModuleClass) -> ForwardPath:
        key = id(cls)
        if key not in self._paths:
            self._paths[key] = ForwardPath(self.model, cls)
        return self._paths[key]


@lru_cache(maxsize=64)
def _base_file_model(path: str, size: int, mtime_ns: int) -> Optional[ModuleModel]:
    """The classes of a file that holds a base class of a linted one (read once per process and version
    of the file; size and mtime are part of the key for that). None when it cannot be read or parsed:
    the subclass is then analysed with what its own file says."""
    from ..files import FileProblem, module_name_for, read_source

    try:
        source = read_source(path)
        module = cst.parse_module(source)
    except (FileProblem, OSError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    module_name, is_package = module_name_for(path)
    return ModuleModel(module, NameResolver(module, module_name, is_package), every_class=True)
