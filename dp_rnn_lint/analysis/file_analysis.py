"""The analysis of one file: its names, module classes and forward paths, shared by every rule."""

from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from .forward_path import ForwardPath
from .modules import ModuleClass, ModuleModel
from .names import NameResolver


class FileAnalysis:
    """The parsed module with its names, module classes and forward paths, built lazily."""

    def __init__(self, module: cst.Module, module_name: Optional[str] = None, is_package: bool = False) -> None:
        self.module = module
        self.resolver = NameResolver(module, module_name, is_package)
        self.model = ModuleModel(module, self.resolver)
        self._paths: Dict[int, ForwardPath] = {}

    def forward_path(self, cls: ModuleClass) -> ForwardPath:
        key = id(cls)
        if key not in self._paths:
            self._paths[key] = ForwardPath(self.model, cls)
        return self._paths[key]
