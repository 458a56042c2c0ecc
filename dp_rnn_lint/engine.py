"""One file's journey: read and decode, pre-filter, parse, analyse, run the rules, locate, fix.

The CLI and the flake8 plugin both go through `check_source`, so they see the same findings.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple, Union

from .analysis.project import FileContext, build_index, mentions_wrap
from . import rules as registry
from .rules import Selection
from . import stages
from .analysis.screen import (inherits_from_elsewhere, may_have_findings, may_have_findings_text, may_inherit_text,
                              wraps_imported_call)
from .escaping import printable
from .files import FileProblem, module_name_for, read_source, write_atomically
from .findings import FileResult, Finding, Violation
from .noqa import without_suppressed
from .parse import (check_readable, decode, parse_with_libcst, parses, python_verdict, run_with_deep_stack,
                    source_encoding, too_large)

if TYPE_CHECKING:
    import libcst as cst

    from .analysis import FileAnalysis
    from .analysis.evaluator import EvaluatedClasses
    from .rules.base import Rule

# libcst, the analysis and the rules are imported where a file first needs them (see parse_with_libcst):
# importing libcst alone takes longer than screening a few hundred files, and most runs need it for few
# files or none.

# A file none of the rules' words appear in (in any case; rules/__init__.py derives them from what each
# rule's findings start from) cannot hold a finding, so it is never parsed. (An RNN class reached only
# through getattr(nn, name) with no RNN word anywhere in the file is the one thing this skips.)
# Lower-casing once and searching for each word is ten times faster than one case-insensitive
# regular expression.

# Fixing one finding never creates another, but a fixed file is checked again to be sure.
_MAX_FIX_ROUNDS = 3


def may_contain_candidates(source: Union[str, bytes], codes: Sequence[str] = (), rnn_words: Sequence[str] = ()) -> bool:
    return _candidate_words_found(source, codes, rnn_words) != _NO_WORDS


_NO_WORDS, _WEAK_WORDS, _STRONG_WORDS = 0, 1, 2


def _candidate_words_found(source: Union[str, bytes], codes: Sequence[str] = (), rnn_words: Sequence[str] = ()) -> int:
    """_STRONG_WORDS when a one-word group is in the text (an RNN's name, a torch function's), _WEAK_WORDS
    when only a group of several is (`zeros` and `max`: common words, which alone make a file worth its
    text screen but not a parse), else _NO_WORDS."""
    data = (source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source).lower()
    found = _NO_WORDS
    # A word the user says names RNNs (`extend-rnn-words`) may be all a run-time class name has.
    for group in (*registry.candidate_words(tuple(codes)), *((word.encode(),) for word in rnn_words)):
        if all(word in data for word in group):
            if len(group) == 1:
                return _STRONG_WORDS
            found = _WEAK_WORDS
    return found


def worth_a_look(source: bytes, selection: Selection) -> bool:
    """Whether a file needs more than the word pre-filter: a candidate word, or (for the rules that
    start from an RNN) a class with a forward whose base may build an RNN in another file."""
    codes = selection.codes()
    return may_contain_candidates(source, codes, selection.rnn_words) or (
        registry.screen_needs(codes).rnn_class and may_inherit_text(source))


def _violations(module: cst.Module, path: str, rules: Sequence[Rule], context: FileContext,
                tree: Optional[ast.Module] = None, rnn_words: Sequence[str] = (),
                evaluated: Optional["EvaluatedClasses"] = None) -> Tuple[List[Violation], FileAnalysis]:
    from .analysis import FileAnalysis

    module_name, is_package = module_name_for(path) if path else (None, False)
    analysis = FileAnalysis(module, module_name, is_package, context, path=path, tree=tree, rnn_words=rnn_words,
                            evaluated=evaluated)
    found: List[Violation] = []
    for rule in rules:
        found.extend(rule.check(analysis))
    return found, analysis


def _locate(module: cst.Module, path: str, violations: Sequence[Violation], calls: Sequence[cst.Call],
            tree: Optional[ast.Module], text: str) -> List[Finding]:
    if not violations:
        return []
    from .analysis.positions import call_spans

    spans = call_spans(calls, tree, text) if tree is not None else None
    if spans is None or any(violation.node not in spans for violation in violations):
        # libcst's own positions cost a full pass over the tree: only when Python's tree cannot say.
        from libcst.metadata import MetadataWrapper, PositionProvider

        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        spans = {v.node: (positions[v.node].start.line, positions[v.node].start.column + 1,
                          positions[v.node].end.line, positions[v.node].end.column + 1) for v in violations}
    findings = []
    seen = set()
    for violation in violations:
        line, col, end_line, end_col = spans[violation.node]
        key = (line, col, violation.code, violation.subject)
        if key in seen:
            continue  # the same call reported through two classes sharing a method
        seen.add(key)
        message = printable(violation.message)  # messages quote source text, which may hold control characters
        findings.append(Finding(path, line, col, violation.code, message, violation.fix, end_line=end_line, end_col=end_col))
    findings.sort(key=lambda f: (f.line, f.col, f.code))
    return findings


def _analysed(module: cst.Module, path: str, rules: Sequence[Rule], tree: Optional[ast.Module], text: str,
              context: FileContext, rnn_words: Sequence[str] = (),
              evaluated: Optional["EvaluatedClasses"] = None) -> List[Finding]:
    """Located findings; an unexpected failure of the analysis becomes a per-file problem, not a crash.
    `tree` is Python's tree of `text`, the module's code, when there is one (it places the findings);
    `evaluated`, the evaluator's answers already asked about the file (with that tree)."""
    try:
        violations, analysis = _violations(module, path, rules, context, tree, rnn_words, evaluated)
        return _locate(module, path, violations, analysis.resolver.calls, tree, text)
    except RecursionError as error:
        raise FileProblem("cannot analyse: nested too deeply") from error
    except Exception as error:  # a bug of ours must not stop the run over the other files
        raise FileProblem(f"internal error while analysing ({type(error).__name__}: {error}); please report it") from error


def _module_text(module: cst.Module, source: Union[str, bytes]) -> str:
    """The module's code as positions count it: the source itself, except in the rare layouts libcst
    does not reproduce (form feeds, CR-only line endings), where its own regenerated code is used."""
    text = source if isinstance(source, str) else decode(source)
    if "\x0c" in text or re.search(r"\r(?!\n)", text):
        return module.code
    return text


@dataclass(frozen=True)
class _FirstLook:
    needs_analysis: bool  # whether libcst must see the file
    python_error: Optional[str] = None  # Python's parse error, for libcst to confirm or overrule
    note: Optional[str] = None  # why the file was skipped
    tree: Optional[ast.Module] = None  # Python's tree, which places the findings
    # Ruled out only if no class of the file inherits an RNN from a base in another file (the project says).
    may_inherit: bool = False
    # Analysed only because a class of it may run an RNN another file builds (its own text rules it out).
    inherited_only: bool = False


def own_context(source: Union[str, bytes], path: str) -> FileContext:
    """What the project index says of a file that is linted alone: its own wraps only."""
    data = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
    if not mentions_wrap(data):
        return FileContext()
    name = path or "<source>"
    return build_index([name], sources={name: data}).context_for(name, "any")


def screened_codes(codes: Sequence[str], context: FileContext) -> List[str]:
    """The codes that can find anything in a file the project index says this of: none in wrapped scope
    when no class of the file is wrapped (and every wrap was resolved); a rule that needs the classes
    DataParallel wraps directly only where a class is such a wrap target (or, if it checks root modules
    too, where one is defined)."""
    if context.scope == "wrapped" and not context.wrapped and not context.unresolved:
        return []
    if context.direct:
        return list(codes)
    needing_targets = registry.needing_index_part(codes, registry.WRAP_TARGETS)
    if context.roots and (context.scope != "wrapped" or context.unresolved):
        # A rule that also checks root modules keeps the file that defines one.
        needing_targets = tuple(set(needing_targets) - set(registry.needing_index_part(codes, registry.ROOT_MODULES)))
    return [code for code in codes if code not in needing_targets]


def _first_look(source: Union[str, bytes], codes: Sequence[str], tree: Optional[ast.Module] = None,
                force: bool = False, check_syntax: bool = False, rnn_words: Sequence[str] = ()) -> _FirstLook:
    """The cheap stages before libcst: the word pre-filter, the size limit, readability, Python's parser
    (or the tree flake8 already has) and the ast screen. FileProblem for a file that is not text or
    nests too deeply. `force`: the project says the file's classes inherit RNNs, so only the checks of
    readability, size and syntax apply. `check_syntax`: a file ruled out unparsed is still parsed, and its
    syntax error is the verdict's python_error (a file named on the command line)."""
    # flake8 hands over text: encoded once here for the word and size checks.
    data = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
    # A class whose base lives in another file may run an RNN that base builds: only the project can
    # tell, so such a file is kept for the project's verdict (`inherited`) when the screens rule it out.
    needs = registry.screen_needs(codes)
    inherited = not force and needs.rnn_class and may_inherit_text(data)
    # A wrap of what a function of another file returns may wrap an RNN: only the project can tell.
    wraps = not force and bool(needs.wrappers) and mentions_wrap(data)
    words = _STRONG_WORDS if force else _candidate_words_found(data, codes, rnn_words)
    # Only common words, and the text rules the file out: as if it held none (no parse for its syntax).
    candidates = words == _STRONG_WORDS or (words == _WEAK_WORDS and may_have_findings_text(data, needs))
    # The words rule out the file's own content; only what it inherits is in question. Where the caller
    # hands over Python's tree (flake8), that tree says so more precisely than the text, and the verdict
    # must still be the one a run without the tree reaches: not to be analysed for its own content.
    words_rule_out = False
    if not candidates:
        check_readable(source)  # not worth parsing, but a binary or undecodable `.py` file gets an error line
        if check_syntax and tree is None and not parses(source):
            return _FirstLook(False, python_verdict(source)[1])
        if not (inherited or wraps):
            return _FirstLook(False)
        if tree is None and not wraps:  # a wrap's argument is read off Python's tree, below
            # Only what its classes may inherit is in question: the project's imports tell that without a
            # tree (ProjectIndex.may_run_rnn_elsewhere), and the forced look parses if it comes to that.
            note = too_large(data)
            return _FirstLook(False, note=note, may_inherit=not note)
        words_rule_out = not wraps
    note = too_large(data)
    if note:
        return _FirstLook(False, note=note)
    check_readable(source)
    python_error = None
    if tree is None:
        # Parsed even when the screen below needs no tree: a file that mentions an RNN and does not
        # parse deserves its error line. Where the text already rules the file out, only that verdict
        # is wanted, and Python's tree is built only when the cheaper parse objects.
        if not force and not wraps and not may_have_findings_text(data, needs) and parses(source):
            return _FirstLook(False, may_inherit=inherited)
        tree, python_error, too_deep = python_verdict(source)
        if too_deep:
            raise FileProblem(python_error)
    if not force and tree is not None:
        with stages.stage("ast screen"):
            ruled_out = words_rule_out or not (may_have_findings_text(data, needs) and may_have_findings(tree, needs))
            may_inherit = ruled_out and ((inherited and inherits_from_elsewhere(tree))
                                         or (wraps and wraps_imported_call(tree, needs.wrappers)))
        if ruled_out:
            return _FirstLook(False, may_inherit=may_inherit, tree=tree)
    return _FirstLook(True, python_error, tree=tree)


def _inherited_look(source: Union[str, bytes], codes: Sequence[str], look: _FirstLook,
                    context: FileContext) -> _FirstLook:
    """The first look again, forced, for a file the cheap stages rule out whose classes the project says
    may run an RNN built in another file (a base, an imported factory, an RNN handed in)."""
    if look.needs_analysis or not look.may_inherit or not _inherits_rnn(context, codes):
        return look
    # A wrap of what an imported factory returns is the other reason (the rule on wraps of RNNs): that one
    # the model screen (_model_rules_out) does not judge.
    wraps_a_factory = bool(context.rnn_wraps) and bool(registry.screen_needs(codes).wrappers)
    return replace(_first_look(source, codes, look.tree, force=True), inherited_only=not wraps_a_factory)


def _inherits_rnn(context: FileContext, codes: Sequence[str]) -> bool:
    """Whether, for these codes, a class of the file may run an RNN that another file builds."""
    needs = registry.screen_needs(codes)
    return (context.rnn_elsewhere and needs.rnn_class) or (bool(context.rnn_wraps) and bool(needs.wrappers))


def check_source(source: Union[str, bytes], path: str = "", selection: Selection = Selection(),
                 tree: Optional[ast.Module] = None,
                 context: Union[FileContext, Callable[[], FileContext], None] = None) -> List[Finding]:
    """Every finding in one file's source, noqa comments not applied. Raises FileProblem.
    `tree` is Python's syntax tree of the source when the caller has it (flake8 does); `context` is
    what the project index says about the file, or a function that says it, called only for a file
    the cheap stages cannot rule out (default: the file is its own project)."""
    all_codes = selection.codes()
    if not all_codes:
        return []
    if isinstance(context, FileContext):
        codes = screened_codes(all_codes, context)
        look = _inherited_look(source, codes, _first_look(source, codes, tree, rnn_words=selection.rnn_words),
                               context) if codes else None
    else:
        # The cheap stages first, with every code: most files end there, and then no index is needed.
        look = _first_look(source, all_codes, tree, rnn_words=selection.rnn_words)
        if not look.needs_analysis and not (look.may_inherit and context is not None):
            return []
        context = own_context(source, path) if context is None else context()
        codes = screened_codes(all_codes, context)
        if look.needs_analysis and codes and list(codes) != list(all_codes):
            # The context took codes away (a rule for DataParallel's targets, in a file with none): what
            # kept the file may have been one of them, so the screens look again with the codes left.
            look = _first_look(source, codes, look.tree, rnn_words=selection.rnn_words)
        look = _inherited_look(source, codes, look, context)
    if not codes or look is None or not look.needs_analysis:
        return []
    return run_with_deep_stack(_check_parsed, source, path, _rules_loader(selection, codes), look, context,
                               selection.rnn_words)


def _rules_loader(selection: Selection, codes: Sequence[str]) -> Callable[[], List[Rule]]:
    """The selected rules among `codes`, loaded when first asked for: loading them imports libcst, which
    a process whose files the model screen settles never needs (a flake8 worker, most runs)."""
    return lambda: [rule for rule in selection.rules() if rule.code in codes]


def _check_parsed(source: Union[str, bytes], path: str, rules: Callable[[], List[Rule]], look: _FirstLook,
                  context: FileContext, rnn_words: Sequence[str] = ()) -> List[Finding]:
    ruled_out, evaluated = _model_rules_out(source, path, look, context)
    if ruled_out:
        return []
    module = parse_with_libcst(source, look.python_error)
    return _analysed(module, path, rules(), look.tree, _module_text(module, source), context, rnn_words, evaluated)


def _model_rules_out(source: Union[str, bytes], path: str, look: _FirstLook,
                     context: FileContext) -> Tuple[bool, Optional["EvaluatedClasses"]]:
    """The model's screen, before libcst: a file analysed only because its classes may run an RNN that
    another file builds (the project index's cheap test of bases and imports) holds nothing for the rules
    when the evaluator finds no class of it that subclasses a torch RNN or has an attribute that can hold
    one; DataParallel's own targets and root modules are always analysed. (True, None) when it holds
    nothing; else (False, the evaluator's answers so far, for the analysis to go on from)."""
    if not look.inherited_only or look.tree is None or context.direct or context.roots:
        return False, None
    from .analysis.evaluator import EvaluatedClasses

    # With Python's tree given, the evaluator never asks for the text.
    evaluated = EvaluatedClasses(path, look.tree, lambda: source if isinstance(source, str) else decode(source),
                                 handed_in=context.handed_in)
    try:
        return (False, evaluated) if evaluated.may_run_rnn() else (True, None)
    except Exception:  # a bug of ours: the analysis runs, and reports it as the file's problem if it recurs
        return False, None


def result_without_candidates(source: bytes, path: str, selection: Selection = Selection(),
                              check_syntax: bool = False) -> FileResult:
    """The result of a file in which may_contain_candidates() found no candidate word: it is only checked to
    be text at all, and parsed only with `check_syntax` (a file named on the command line)."""
    result = FileResult(path, original=source)
    if selection.codes():
        try:
            check_readable(source)
        except FileProblem as problem:
            result.problem = str(problem)
        else:
            if check_syntax and not parses(source):
                result.problem = python_verdict(source)[1]
    return result


@dataclass(frozen=True)
class Unsettled:
    """A file the cheap stages cannot settle alone: it needs the analysis, or (`needs_analysis` False) it
    does only if the project says a class of it may run an RNN built in another file."""

    needs_analysis: bool
    tree: Optional[ast.Module] = None  # Python's tree, when the cheap stages parsed the file


def first_look_verdict(source: bytes, path: str, selection: Selection = Selection(),
                       check_syntax: bool = False) -> Union[FileResult, Unsettled]:
    """The result of a file the cheap stages settle with every selected code, which is then its result
    whatever the project index says of it (the index only ever takes codes away, and the screen with
    fewer codes says no where it says no with all of them); Unsettled when they cannot settle it."""
    result = FileResult(path, original=source)
    codes = selection.codes()
    if not codes:
        return result
    try:
        with stages.stage("text screen", path):
            look = _first_look(source, codes, check_syntax=check_syntax, rnn_words=selection.rnn_words)
    except FileProblem as problem:
        result.problem = str(problem)
        return result
    if look.needs_analysis or look.may_inherit:
        return Unsettled(look.needs_analysis, look.tree)
    result.note, result.problem = look.note, look.python_error
    return result


def settled_by_context(context: FileContext, selection: Selection) -> bool:
    """Whether a file whose first look left only what it may inherit in question is clean in this context:
    nothing its classes may run from another file can build an RNN (what _inherited_look would find)."""
    return not _inherits_rnn(context, screened_codes(selection.codes(), context))


def lint_source(source: bytes, path: str, selection: Selection = Selection(), fix: bool = False,
                describe_fixes: bool = False, context: Optional[FileContext] = None,
                check_syntax: bool = False, screened: bool = False, unsafe_fixes: bool = False) -> FileResult:
    """Findings left after noqa (and after fixing, when asked); the fixed bytes are not written.
    With describe_fixes, each fixable finding carries its fix as text edits. `context` is what the
    project index says about the file (default: the file is its own project). `check_syntax`: a syntax
    error is reported even where the words of the file rule it out (a file named on the command line).
    `screened`: a first look with every selected code already found that the file needs the analysis,
    so with those codes the screens are not run again. `unsafe_fixes`: fixing applies unsafe fixes too
    (else only the safe ones; the others stay findings with a fix)."""
    result = FileResult(path, original=source)
    context = context if context is not None else own_context(source, path)
    all_codes = selection.codes()
    codes = screened_codes(all_codes, context)
    if not all_codes:
        return result
    try:
        # With no code left for this file, still the cheap stages: a file that cannot be read or parsed
        # gets its error line whatever the scope.
        with stages.stage("text screen", path):
            if screened and list(codes) == list(all_codes):
                look = _first_look(source, codes, force=True)
            else:
                look = _inherited_look(source, codes, _first_look(source, codes or all_codes, check_syntax=check_syntax,
                                                                  rnn_words=selection.rnn_words), context)
    except FileProblem as problem:
        result.problem = str(problem)
        return result
    result.note = look.note
    if not codes or not look.needs_analysis:
        result.problem = look.python_error  # Python's word on syntax, as libcst is not asked
        return result
    # Only files that reach libcst need the deep stack (see run_with_deep_stack).
    return run_with_deep_stack(_lint_parsed, result, source, path, _rules_loader(selection, codes), fix,
                               describe_fixes, look, context, unsafe_fixes, selection.rnn_words)


def _lint_parsed(result: FileResult, source: bytes, path: str, load_rules: Callable[[], List[Rule]], fix: bool,
                 describe_fixes: bool, look: _FirstLook, context: FileContext, unsafe_fixes: bool,
                 rnn_words: Sequence[str] = ()) -> FileResult:
    ruled_out, evaluated = _model_rules_out(source, path, look, context)
    if ruled_out:
        return result
    from .fixes import FixError, check_compiles, text_edits

    # The file's stage: libcst's parse and the fixes inside it count apart, for this file.
    with stages.stage("rules", path):
        try:
            rules = load_rules()
            module = parse_with_libcst(source, look.python_error)
            text = _module_text(module, source)
            findings = without_suppressed(
                _analysed(module, path, rules, look.tree, text, context, rnn_words, evaluated), text)
            # Regenerating the code costs a pass over the tree, so it is checked only where edits are shown.
            exact_layout = not describe_fixes or not any(f.fixable for f in findings) or module.bytes == source
            if fix:
                current = source  # the module's bytes: known, so never regenerated just to compare
                rounds = 0
                while rounds < _MAX_FIX_ROUNDS and any(f.applicable(unsafe_fixes) for f in findings):
                    rounds += 1
                    fixable_before = Counter(f.code for f in findings if f.applicable(unsafe_fixes))
                    edits = [edit for f in findings if f.applicable(unsafe_fixes) for edit in f.fix.edits]
                    with stages.stage("fixes"):
                        new_bytes, new_module = _fixed_bytes(module, edits, current)
                        check_compiles(new_bytes, path or "<source>")
                    if new_bytes == current:
                        break
                    # The edited tree is the new text's (its code is that text), so the check of the fixed file
                    # analyses it without parsing again; Python parses the text only to place the findings.
                    module, current = new_module, new_bytes
                    text = _module_text(module, new_bytes)
                    findings = without_suppressed(
                        _analysed(module, path, rules, python_verdict(new_bytes)[0], text, context, rnn_words), text)
                    fixable_after = Counter(f.code for f in findings if f.applicable(unsafe_fixes))
                    result.fixed_codes += fixable_before - fixable_after
                    if sum(fixable_after.values()) >= sum(fixable_before.values()):
                        break  # a fix that does not remove its finding must not be applied again and again
                if current != source:
                    result.fixed = current
            if describe_fixes and exact_layout:
                findings = [replace(f, edits=text_edits(module, f.fix)) if f.fix else f for f in findings]
            result.findings = findings
        except (FileProblem, FixError) as problem:
            result.problem = str(problem)
    return result


def _fixed_bytes(module: cst.Module, edits: Sequence, source: bytes) -> Tuple[bytes, cst.Module]:
    """`source` with the edits applied, and the edited module: spliced into the text where only the touched
    statements need regenerating, else the whole module regenerated, which only a module libcst
    reproduces exactly may be."""
    from .fixes import apply_edits, spliced_text

    encoding = source_encoding(source)
    spliced = spliced_text(module, edits, source.decode(encoding))
    if spliced is not None:
        text, edited = spliced
        return text.encode(encoding), edited
    if module.bytes != source:
        # libcst does not reproduce a few rare layouts exactly (form feeds, CR-only line endings);
        # rewriting such a file would change bytes beyond the fix.
        raise FileProblem("cannot be fixed safely: its layout (form feed or CR-only line endings) "
                          "would not be kept byte for byte")
    edited = apply_edits(module, edits)
    return edited.bytes, edited


def lint_path(path: str, selection: Selection = Selection(), fix: bool = False, write: bool = False,
              describe_fixes: bool = False, source: Optional[bytes] = None,
              context: Optional[FileContext] = None, check_syntax: bool = False, screened: bool = False,
              unsafe_fixes: bool = False) -> FileResult:
    """Lint (and fix) one file; `source` is its content when the caller has already read it."""
    if source is None:
        try:
            source = read_source(path)
        except FileProblem as problem:
            return FileResult(path, problem=str(problem))
    result = lint_source(source, path, selection, fix=fix, describe_fixes=describe_fixes, context=context,
                         check_syntax=check_syntax, screened=screened, unsafe_fixes=unsafe_fixes)
    if write and result.fixed is not None and result.problem is None:
        try:
            write_atomically(path, result.fixed, source)
        except FileProblem as problem:
            # Nothing was fixed: the file's findings are those of its unchanged content, and the result
            # says why, once (it is never cached: the next run must look again).
            unfixed = lint_source(source, path, selection, describe_fixes=describe_fixes, context=context)
            unfixed.problem = str(problem)
            unfixed.write_failed = True
            return unfixed
    return result
