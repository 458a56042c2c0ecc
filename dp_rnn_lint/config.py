"""Settings: `[tool.dp-rnn-lint]` in pyproject.toml (or a file given with --config), then the command line.

As in ruff: the nearest pyproject.toml with a `[tool.dp-rnn-lint]` table, from the linted path upward,
applies; `--config PATH` names the file instead and `--isolated` ignores every file. Patterns in a file
are relative to the file's folder, those on the command line to the current folder. An option given
on the command line replaces the file's value (`--extend-exclude` adds to it).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from .files import DEFAULT_EXCLUDES, matches_pattern
from .noqa import UNUSED_NOQA
from . import rules as registry
from .rules import Selection


def known_codes() -> Tuple[str, ...]:
    """Every code a selection may name: the registered rules' and DPR100 (a `noqa` comment that silences
    nothing). Read when asked: a rule may be registered after this module is imported."""
    return registry.RULE_CODES + (UNUSED_NOQA,)


TABLE = "dp-rnn-lint"
KNOWN_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "respect-gitignore",
              "force-exclude", "scope", "unsafe-fixes", "preview", "extend-rnn-words")
# "any": every module class is checked; "wrapped": only those the project index finds DataParallel running.
SCOPES = ("any", "wrapped")


class ConfigError(Exception):
    """A configuration file or option that cannot be used: one line naming the file and key."""


def _at(where: str, problem: str) -> str:
    return f"{where}: {problem}" if where else problem


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ("DPR",)
    extend_select: Tuple[str, ...] = ()  # added to select (DPR100 is opt-in)
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: Tuple[str, ...] = ()
    # (pattern, codes) pairs: findings of those codes are dropped in files the pattern matches.
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False  # exclusions apply to files named explicitly too (pre-commit names them all)
    scope: str = "any"
    unsafe_fixes: bool = False  # --fix and --diff apply unsafe fixes too (see each rule's "Fix safety")
    preview: bool = False  # the rules still in preview run too
    # Words that, besides rnn, lstm, gru and cell, mark a class chosen by a run-time name as an RNN's.
    extend_rnn_words: Tuple[str, ...] = ()
    root: Path = field(default_factory=Path.cwd)  # the folder patterns are relative to
    source: Optional[Path] = None  # the configuration file, when there is one

    @property
    def exclusions(self) -> Tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def selection_for(self, path: str) -> Selection:
        ignored = tuple(code for pattern, codes in self.per_file_ignores if matches_pattern(path, pattern, self.root)
                        for code in codes)
        return _selection(self.select + self.extend_select, self.ignore + ignored, self.preview, self.extend_rnn_words)


@functools.lru_cache(maxsize=256)
def _selection(select: Tuple[str, ...], ignore: Tuple[str, ...], preview: bool, rnn_words: Tuple[str, ...]) -> Selection:
    """One Selection per distinct set of choices: a tree's files mostly share theirs, and the run cache's key
    spells each file's out."""
    return Selection(select=select, ignore=ignore, preview=preview, rnn_words=rnn_words)


def code_list(value: Any, where: str) -> Tuple[str, ...]:
    """Rule codes or prefixes, checked against the known rules (`ALL` is every rule)."""
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise ConfigError(_at(where, f"expected a list of rule codes, got {value!r}"))
    codes = tuple(code.strip().upper() for code in value if code.strip())
    for code in codes:
        if code != "ALL" and not any(known.startswith(code) for known in known_codes()):
            raise ConfigError(_at(where, f"unknown rule code or prefix {code!r} (known: {', '.join(known_codes())})"))
    return codes


def selected_codes(value: Any, where: str) -> Tuple[str, ...]:
    """What `select` enables: at least one code, as an empty selection would silently check nothing."""
    codes = code_list(value, where)
    if not codes:
        raise ConfigError(_at(where, "selects no rule (to turn rules off, use ignore)"))
    return codes


def pattern_list(value: Any, where: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(pattern, str) for pattern in value):
        raise ConfigError(_at(where, f"expected a list of file patterns, got {value!r}"))
    return tuple(pattern.strip() for pattern in value if pattern.strip())


def per_file_ignores(value: Any, where: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """A table `{"tests/*" = ["DPR001"]}`, or flake8's text form `tests/*:DPR001,DPR002 other.py:DPR002`."""
    if isinstance(value, str):
        table: Dict[str, Any] = {}
        for entry in value.split():
            pattern, colon, codes = entry.rpartition(":")
            if not colon or not pattern:
                raise ConfigError(_at(where, f"expected PATTERN:CODES entries, got {entry!r}"))
            table.setdefault(pattern, []).extend(codes.split(","))
        value = table
    if not isinstance(value, dict):
        raise ConfigError(_at(where, f"expected a table of file patterns to lists of rule codes, got {value!r}"))
    return tuple((str(pattern), code_list(codes, _at(where, str(pattern)))) for pattern, codes in value.items())


def word_list(value: Any, where: str) -> Tuple[str, ...]:
    """Words of identifiers (`recurrent`): letters, digits and underscores, compared without case."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise ConfigError(_at(where, f"expected a list of words, got {value!r}"))
    words = tuple(word.strip().lower() for word in value if word.strip())
    for word in words:
        if not word.replace("_", "").isalnum() or not word.isascii():
            raise ConfigError(_at(where, f"expected words of identifiers (letters, digits, _), got {word!r}"))
    return words


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(_at(where, f"expected true or false, got {value!r}"))
    return value


def scope_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in SCOPES:
        raise ConfigError(_at(where, f"expected one of {', '.join(repr(s) for s in SCOPES)}, got {value!r}"))
    return value.strip().lower()


_READERS = {
    "select": ("select", selected_codes),
    "extend-select": ("extend_select", code_list),
    "ignore": ("ignore", code_list),
    "exclude": ("exclude", pattern_list),
    "extend-exclude": ("extend_exclude", pattern_list),
    "per-file-ignores": ("per_file_ignores", per_file_ignores),
    "respect-gitignore": ("respect_gitignore", boolean),
    "force-exclude": ("force_exclude", boolean),
    "scope": ("scope", scope_name),
    "unsafe-fixes": ("unsafe_fixes", boolean),
    "preview": ("preview", boolean),
    "extend-rnn-words": ("extend_rnn_words", word_list),
}


def settings_from_table(table: Mapping[str, Any], source: Path, label: str) -> Settings:
    unknown = [key for key in table if key not in _READERS]
    if unknown:
        raise ConfigError(f"{label} unknown key {unknown[0]!r} (known: {', '.join(KNOWN_KEYS)})")
    values = {}
    for key, raw in table.items():
        attribute, reader = _READERS[key]
        values[attribute] = reader(raw, f"{label} {key}")
    return Settings(root=source.parent, source=source, **values)


def read_config_file(path: Path, required: bool) -> Optional[Settings]:
    """The settings in a pyproject.toml's `[tool.dp-rnn-lint]` table, or at the top of any other TOML file.
    None for a pyproject.toml without the table, unless `required` (--config), which makes that an error."""
    shown = _shown(path)
    # Imported here: runs that read no configuration (--isolated, no pyproject.toml) never load it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on older Pythons only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{shown}: cannot read: {error.strerror or error}") from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{shown}: cannot parse TOML: {error}") from error
    if path.name != "pyproject.toml":
        return settings_from_table(document, path, f"{shown}:")
    tools = document.get("tool") if isinstance(document.get("tool"), dict) else {}
    table = tools.get(TABLE)
    misspelt = [name for name in tools if name != TABLE and _spelling(name) == _spelling(TABLE)]
    if misspelt:
        # `[tool.dp_rnn_lint]` would otherwise be read as no configuration at all.
        raise ConfigError(f"{shown}: [tool.{misspelt[0]}] is not read; the table is [tool.{TABLE}]")
    if table is None:
        if required:
            raise ConfigError(f"{shown}: has no [tool.{TABLE}] table")
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{shown}: [tool.{TABLE}] must be a table")
    return settings_from_table(table, path, f"{shown}: [tool.{TABLE}]")


def _spelling(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def find_config(folder: Path) -> Optional[Settings]:
    """The nearest pyproject.toml with a `[tool.dp-rnn-lint]` table, from `folder` upward."""
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            settings = read_config_file(pyproject, required=False)
            if settings is not None:
                return settings
    return None


@dataclass
class SettingsResolver:
    """Settings for each linted path: its configuration file (found once per file) with the
    command line's options on top."""

    overrides: Mapping[str, Any]
    config: Optional[Path] = None
    isolated: bool = False
    _explicit: Optional[Settings] = None
    _found: Dict[Path, Optional[Settings]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.config is not None:
            self._explicit = read_config_file(self.config, required=True)

    def for_path(self, path: str) -> Settings:
        base = self._explicit
        if base is None and not self.isolated:
            # os.path, not Path: a name too long for the system is an error line later, not a crash here.
            folder = Path(os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path) or "."))
            if folder not in self._found:
                self._found[folder] = find_config(folder)
            base = self._found[folder]
        return self._with_overrides(base or Settings())

    def _with_overrides(self, settings: Settings) -> Settings:
        changes = {key: value for key, value in self.overrides.items() if value is not None}
        for added in ("extend_exclude", "extend_select", "extend_rnn_words"):
            if added in changes:
                changes[added] = getattr(settings, added) + tuple(changes[added])
        changes = {key: tuple(value) if isinstance(value, list) else value for key, value in changes.items()}
        return replace(settings, **changes)


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
