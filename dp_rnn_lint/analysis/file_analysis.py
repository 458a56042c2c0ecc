"""The analysis of one file: its names, module classes and forward paths, shared by every rule."""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from .. import stages
from .forward_path import ForwardPath
from .modules import ModuleClass, ModuleModel
from .names import NameResolver
from .positions import paired_calls
from .evaluator import EvaluatedClasses
from .project import FileContext
from .torch_names import canonical
from .unpacked import Callee


class FileAnalysis:
    """The parsed module with its names, module classes and forward paths, built lazily.

    `context` is what the project index says about the file: which classes DataParallel wraps, and
    whether only those are checked (`--scope wrapped`).
    """

    def __init__(self, module: cst.Module, module_name: Optional[str] = None, is_package: bool = False,
                 context: Optional[FileContext] = None, path: str = "", tree: Optional[ast.Module] = None,
                 rnn_words: Sequence[str] = (), evaluated: Optional[EvaluatedClasses] = None) -> None:
        self.module = module
        self.context = context or FileContext()
        with stages.stage("file model", path or None):
            self.resolver = NameResolver(module, module_name, is_package)
            # `evaluated`: the evaluator's answers already asked for this file (the engine's model screen).
            self.evaluated = evaluated or EvaluatedClasses(path, tree, lambda: module.code,
                                                           handed_in=self.context.handed_in)
            # `rnn_words`: the user's words that mark a run-time class name as an RNN's (`extend-rnn-words`).
            self.model = ModuleModel(module, self.resolver, evaluated=self.evaluated, rnn_words=rnn_words)
        self._paths: Dict[int, ForwardPath] = {}
        self._ast_calls: Optional[Dict[cst.Call, ast.Call]] = None

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

    def self_callee(self, cls: ModuleClass, call: cst.Call) -> Optional[Tuple["FileAnalysis", ModuleClass, cst.FunctionDef]]:
        """What a `self.<name>(...)` call in a method of `cls` runs, when it is the project's: a method of the
        class, or the forward of the project module class `self.<name>` always holds (in any file), with
        the analysis of the file it is in and its class."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return None
        found = cls.find_method(func.attr.value)
        if found is not None:
            return self, found[1], found[0]
        held = self.evaluated.held_class(self.model.qualname(cls.node), func.attr.value)
        if held is None:
            return None
        analysis = self if held.path == self.evaluated.path else _analysis_of_file(held.path)
        other = next((c for c in analysis.model.classes if analysis.model.qualname(c.node) == held.qualname),
                     None) if analysis is not None else None
        forward = other.find_method("forward") if other is not None else None
        return (analysis, forward[1], forward[0]) if forward is not None else None

    def ast_call(self, call: cst.Call) -> Optional[ast.Call]:
        """The same call in the evaluator's `ast` tree of the file (None when the two trees disagree)."""
        if self._ast_calls is None:
            try:
                self._ast_calls = paired_calls(self.resolver.calls, self.evaluated.tree) or {}
            except (SyntaxError, ValueError, RecursionError):
                self._ast_calls = {}
        return self._ast_calls.get(call)

    def owner_of(self, function: cst.FunctionDef, cls: ModuleClass) -> ModuleClass:
        """The class of this file whose method `function` is (`cls`, or one of its bases, when it is none's)."""
        for candidate in [cls, *self.model.classes]:
            for owner in candidate.mro():
                if function in owner.methods.values():
                    return owner
        return cls

    def walk_context(self, cls: ModuleClass, function: cst.FunctionDef) -> Tuple[
            Callable[[cst.Call], Optional[str]], Callable[[cst.Call], Optional[Callee]]]:
        """For a walk through `function`, a method of `cls`: a call's canonical qualified name there, and
        the project function a `self.<name>(...)` call there runs, with the same two answers for it."""
        scope = self.resolver.scopes.get(function)

        def qualified(call: cst.Call) -> Optional[str]:
            return canonical(self.resolver.qualified_name(call.func, scope))

        def callees(call: cst.Call) -> Optional[Callee]:
            found = self.self_callee(cls, call)
            if found is None:
                return None
            analysis, owner, method = found
            return Callee(method, *analysis.walk_context(owner, method))

        return qualified, callees

    def forward_path(self, cls: ModuleClass) -> ForwardPath:
        key = id(cls)
        if key not in self._paths:
            with stages.stage("file model"):
                # The files that may build the class hold it in a module: their forward may call its methods.
                holder_files = self.context.files_building(self.model.qualname(cls.node))
                self._paths[key] = ForwardPath(self.model, cls, holder_files)
        return self._paths[key]


def _analysis_of_file(path: str) -> Optional[FileAnalysis]:
    """Another file of the project, analysed on its own, for a question about one of its classes (read once
    per process and version of the file); None when it cannot be read or parsed."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _analysis_of_version(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=32)
def _analysis_of_version(path: str, size: int, mtime_ns: int) -> Optional[FileAnalysis]:
    from ..files import FileProblem, module_name_for, read_source

    try:
        module = cst.parse_module(read_source(path))
    except (FileProblem, OSError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    module_name, is_package = module_name_for(path)
    return FileAnalysis(module, module_name, is_package, path=path)
