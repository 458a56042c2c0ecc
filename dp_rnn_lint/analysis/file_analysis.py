"""The analysis of one file: its names, module classes and forward paths, shared by every rule."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

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
        self.evaluated = EvaluatedClasses(path, tree, lambda: module.code, handed_in=self.context.handed_in)
        known = frozenset(name for name, _ in self.context.wrapped + self.context.direct) | set(self.context.modules)
        self.model = ModuleModel(module, self.resolver, known_modules=known, plain_classes=frozenset(self.context.plain),
                                 evaluated=self.evaluated)
        self._paths: Dict[int, ForwardPath] = {}

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
