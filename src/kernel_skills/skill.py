"""SKILL.md: parse the front matter and check a skill folder against the Agent Skills rules.

Pure functions over a folder on disk: nothing here writes, prints or exits.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .errors import KernelsError
from .records import field, record

if TYPE_CHECKING:
    from .sourcetypes import SourceContext

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
LINES_WARN = 500
KNOWN_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
# Regenerable clutter that is never part of a skill (an agent running a skill's scripts
# leaves __pycache__ behind; that is not a user edit).
IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store", ".pytest_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")


def is_ignored(name: str) -> bool:
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid skill name, or None when it is."""
    if not name:
        return "it is empty"
    if len(name) > NAME_MAX:
        return f"it is {len(name)} characters long (at most {NAME_MAX})"
    if not NAME_RE.match(name):
        return "use lowercase letters, digits and single hyphens only (like cuda-kernels)"
    return None


def check_name(name: str) -> str:
    problem = name_problem(name)
    if problem:
        raise KernelsError(f"'{name}' is not a valid skill name: {problem}", "Skill names look like cuda-kernels.", usage=True)
    return name


@record
class Problem:
    path: str  # relative to the skill folder
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}


@record
class Report:
    path: Path
    name: str | None = None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    label: str | None = None  # where the skill came from, when not ``path`` (an hf:// address)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def display(self) -> str:
        return self.label or str(self.path)

    @property
    def summary(self) -> str:
        """The first error, and how many more there are (for one-line messages)."""
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return f"{self.errors[0]}{more}" if self.errors else "valid"

    def error(self, path: str, message: str, line: int | None = None) -> None:
        self.errors.append(Problem(path, message, line))

    def warn(self, path: str, message: str, line: int | None = None) -> None:
        self.warnings.append(Problem(path, message, line))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.display,
            "name": self.name,
            "valid": self.ok,
            "errors": [p.to_json() for p in self.errors],
            "warnings": [p.to_json() for p in self.warnings],
        }


@record(frozen=True)
class SkillInfo:
    """What SKILL.md's front matter says about a skill."""

    name: str
    description: str
    version: str | None
    license: str | None
    front_matter: dict[str, Any]


class FrontMatterError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def split_front_matter(text: str) -> tuple[str, int]:
    """The YAML between the opening and closing ``---`` lines, and the body's first line number."""
    lines = text.splitlines()
    if text.startswith("\ufeff"):
        # Editors on Windows add it invisibly; say so, or "must start with ---" looks wrong.
        raise FrontMatterError("starts with a UTF-8 byte order mark before '---'; save the file as UTF-8 without BOM", 1)
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError("must start with a '---' line opening the YAML front matter", 1)
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            return "\n".join(lines[1:index]), index + 2
    raise FrontMatterError("the front matter has no closing '---' line", 1)


_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Plain scalars that YAML 1.1 (PyYAML's resolver) reads as something other than a string.
_NOT_STRINGS = {"yes", "no", "true", "false", "on", "off", "null"}


def _simple_scalar(value: str) -> str | None:
    """The string a one-line YAML scalar means, or None if it might mean anything else."""
    if not value.isascii() or not value.isprintable():
        return None
    if len(value) >= 2 and value[0] == value[-1] == "'":
        inner = value[1:-1]
        return inner.replace("''", "'") if "'" not in inner.replace("''", "") else None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        return inner if '"' not in inner and "\\" not in inner else None
    if not value[0].isalpha() or value.lower() in _NOT_STRINGS or value.endswith(":") or ": " in value or " #" in value:
        return None
    return value


def _block_scalar(style: str, lines: list[str], *, last: bool) -> str | None:
    """A ``>``/``>-``/``|``/``|-`` scalar from its indented lines (blank lines kept), or None.
    ``last``: the lines end the document, so the final one has no line break to keep."""
    indent = next((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), 0)
    if indent == 0:
        return None
    body: list[str] = []
    for line in lines:
        if not line.strip():
            if line.strip(" "):  # a tab on a blank line
                return None
            body.append("")
        elif len(line) - len(line.lstrip(" ")) != indent or line[-1] in " \t" or not line.isprintable():
            return None  # more-indented lines and trailing spaces have rules of their own
        else:
            body.append(line[indent:])
    while body and not body[-1]:
        body.pop()
    if style[0] == "|":
        text = "\n".join(body)
    else:
        text, blanks = "", 0
        for line in body:
            if not line:
                blanks += 1
                continue
            text += ("\n" * blanks if blanks else " ") + line if text else "\n" * blanks + line
            blanks = 0
    if not body or style.endswith("-") or (last and lines[-1].strip()):
        return text
    return text + "\n"


def _simple_front_matter(raw: str) -> dict[str, Any] | None:
    """Front matter in the plain subset of YAML that nearly every SKILL.md uses (top-level
    ``key: string``, folded or literal block strings, one nested mapping of strings), parsed
    without importing a YAML library; None for anything else, which PyYAML then reads.
    Whatever this returns is what PyYAML's safe loader returns (tests/cli check so)."""
    data: dict[str, Any] = {}
    lines = raw.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        key, sep, rest = line.partition(":")
        if not sep or not _SIMPLE_KEY.fullmatch(key) or key in data or (rest and rest[0] != " "):
            return None
        value = rest.strip(" ")
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            block.append(lines[i])
            i += 1
        if value in (">", ">-", "|", "|-"):
            text = _block_scalar(value, block, last=i == len(lines))
            if text is None:
                return None
            data[key] = text
        elif value:
            scalar = _simple_scalar(value)
            if scalar is None or any(line.strip() for line in block):
                return None
            data[key] = scalar
        else:
            nested: dict[str, Any] = {}
            indent = None
            for inner in filter(str.strip, block):
                width = len(inner) - len(inner.lstrip(" "))
                indent = width if indent is None else indent
                name, sep, rest = inner[width:].partition(":")
                if width != indent or not sep or not _SIMPLE_KEY.fullmatch(name) or name in nested or not rest.startswith(" "):
                    return None
                scalar = _simple_scalar(rest.strip(" "))
                if scalar is None:
                    return None
                nested[name] = scalar
            if not nested:
                return None  # `key:` alone is null
            data[key] = nested
    return data


def parse_front_matter(text: str) -> dict[str, Any]:
    raw, _ = split_front_matter(text)
    if "\t" not in raw and "\r" not in raw:
        simple = _simple_front_matter(raw)
        if simple:
            return simple
    import yaml  # deferred, and only for front matter beyond the plain subset above

    try:
        # libyaml's loader when pyyaml has it: the pure-Python one takes tens of ms on a
        # long description, a visible share of `kernels skills add`.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(raw, Loader=loader) if raw.strip() else {}
    except RecursionError:
        raise FrontMatterError("front matter is nested too deeply", 2) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontMatterError(f"front matter is not valid YAML: {problem}", line) from None
    if not isinstance(data, dict):
        raise FrontMatterError("front matter must be a YAML mapping of keys to values", 2)
    return data


def read_info(skill_dir: Path) -> SkillInfo:
    """Name, description and version of a skill folder (raises KernelsError if unreadable)."""
    path = skill_dir / SKILL_FILE
    try:
        data = parse_front_matter(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KernelsError(f"{skill_dir} has no {SKILL_FILE}", "A skill is a folder with a SKILL.md file.") from None
    except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
        raise KernelsError(f"cannot read {path}: {exc}", f"Run `kernels skills validate {skill_dir}`.") from None
    return info_from(data, fallback_name=skill_dir.name)


def info_from(data: dict[str, Any], *, fallback_name: str) -> SkillInfo:
    metadata = data.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    version = metadata.get("version")
    license_ = data.get("license")
    return SkillInfo(
        name=str(data.get("name") or fallback_name),
        description=str(data.get("description") or "").strip(),
        version=None if version is None else str(version),
        license=None if license_ is None else str(license_),
        front_matter=data,
    )


# ---------------------------------------------------------------------------- validation


def validate(skill_dir: Path) -> Report:
    """Check a skill folder against the Agent Skills format; never raises for bad content."""
    report = Report(Path(skill_dir))
    if not skill_dir.is_dir():
        report.error(".", "not a folder" if skill_dir.exists() else "does not exist")
        return report
    skill_md = skill_dir / SKILL_FILE
    try:
        if not skill_md.is_file():
            report.error(SKILL_FILE, "missing: a skill is a folder with a SKILL.md file")
        else:
            _check_skill_md(skill_dir, skill_md, report)
        entries = _check_tree(skill_dir, report)
        _check_references(skill_dir, report, entries)
    except OSError as exc:
        # An unreadable folder is this skill's problem: `validate` over a folder of skills
        # must still report every other one.
        where = os.path.relpath(exc.filename, skill_dir) if isinstance(exc.filename, str) else "."
        report.error(where if len(where) < 200 else "...", f"cannot be read ({exc.strerror or exc})")
    except RecursionError:
        report.error(".", "is nested too deeply to check")
    return report


def _check_skill_md(skill_dir: Path, skill_md: Path, report: Report) -> None:
    try:
        text = skill_md.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        report.error(SKILL_FILE, "is not UTF-8 text")
        return
    except OSError as exc:
        report.error(SKILL_FILE, f"cannot be read: {exc.strerror or exc}")
        return
    try:
        data = parse_front_matter(text)
    except FrontMatterError as exc:
        report.error(SKILL_FILE, str(exc), exc.line)
        return

    name = data.get("name")
    if not isinstance(name, str) or not name:
        report.error(SKILL_FILE, "front matter needs 'name': the skill's folder name", 2)
    else:
        report.name = name
        problem = name_problem(name)
        if problem:
            report.error(SKILL_FILE, f"name '{name}' is invalid: {problem}", 2)
        elif name != skill_dir.resolve().name:
            report.error(SKILL_FILE, f"name '{name}' must equal the folder name '{skill_dir.resolve().name}'", 2)

    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        report.error(SKILL_FILE, "front matter needs 'description': what the skill does and when to use it", 2)
    elif len(description) > DESCRIPTION_MAX:
        report.error(SKILL_FILE, f"description is {len(description)} characters (at most {DESCRIPTION_MAX})", 2)

    for key in ("license", "allowed-tools"):
        if key in data and not isinstance(data[key], str):
            report.error(SKILL_FILE, f"'{key}' must be a string", 2)
    if "compatibility" in data:
        value = data["compatibility"]
        if not isinstance(value, str):
            report.error(SKILL_FILE, "'compatibility' must be a string", 2)
        elif len(value) > COMPATIBILITY_MAX:
            report.error(SKILL_FILE, f"compatibility is {len(value)} characters (at most {COMPATIBILITY_MAX})", 2)
    if "metadata" in data:
        metadata = data["metadata"]
        if not isinstance(metadata, dict):
            report.error(SKILL_FILE, "'metadata' must be a mapping of strings to strings", 2)
        else:
            for key, value in metadata.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    report.error(SKILL_FILE, f"metadata {key!r}: {value!r} must map a string to a string (quote it)", 2)
    for key in data:
        if key not in KNOWN_KEYS:
            report.warn(SKILL_FILE, f"unknown front matter key '{key}' (agents ignore it; known: {', '.join(KNOWN_KEYS)})", 2)

    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > LINES_WARN:
        report.warn(SKILL_FILE, f"is {lines} lines long; keep it under {LINES_WARN} and move detail into references/")


def _is_junction(entry: os.DirEntry[str]) -> bool:
    # A Windows junction looks like a folder to is_dir(); walking into it would leave the tree.
    if sys.platform != "win32":
        return False
    return bool(os.lstat(entry.path).st_file_attributes & 0x400)  # FILE_ATTRIBUTE_REPARSE_POINT


def walk(skill_dir: Path, *, everything: bool = False) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``skill_dir`` as (relative posix path, entry), depth first in name
    order, a folder before its content; symlinks are not followed.

    Regenerable clutter (``__pycache__``, ``*.pyc``) is skipped in a *source*, so it is never
    copied; an *install* is walked with ``everything=True``, because in an agent's folder
    any file the receipt does not list is the user's and must be counted and backed up.
    """

    def listing(directory: str) -> Iterator[os.DirEntry[str]]:
        with os.scandir(directory) as it:
            return iter(sorted(it, key=lambda e: e.name))

    # An explicit stack, not recursion: a crafted tree 1,500 folders deep must not end in
    # RecursionError (the safety checks then refuse it by its depth).
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", listing(str(skill_dir)))]
    while stack:
        prefix, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        if not everything and is_ignored(entry.name):
            continue
        rel = f"{prefix}{entry.name}"
        yield rel, entry
        if entry.is_dir(follow_symlinks=False) and not _is_junction(entry):
            stack.append((f"{rel}/", listing(entry.path)))


def _check_tree(skill_dir: Path, report: Report) -> list[tuple[str, os.DirEntry[str]]]:
    """Check every entry's kind; the entries, so the other checks need not walk the tree again."""
    root = os.path.realpath(skill_dir)
    entries = []
    for rel, entry in walk(skill_dir):
        entries.append((rel, entry))
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            target = os.path.realpath(entry.path)
            if not _inside(target, root):
                report.error(rel, f"is a symlink to {os.readlink(entry.path)}, outside the skill; copy the file in instead")
            elif not os.path.exists(entry.path):
                report.error(rel, f"is a broken symlink (to {os.readlink(entry.path)})")
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            report.error(rel, "is not a regular file, folder or symlink")
    return entries


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# Markdown links [text](target "title") and reference definitions [id]: target
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)]*)?\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_PLACEHOLDER = set("<>*{}$[]?|")


_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_LINE_SUFFIX = re.compile(r"(?::\d+)+$")  # scripts/run.sh:12 or :12:3 names a line, not a file


def _references(text: str, *, spans: bool = True) -> Iterator[tuple[int, str, bool]]:
    """(line, target, is_link) for every path a markdown text names outside code blocks
    (fenced or indented) and HTML comments: what a reader sees as a link or a path.
    ``spans=False``: links only, not the tokens of code spans (only SKILL.md's are checked)."""
    fence: str | None = None
    comment = False
    in_list = False
    indented_code = False
    previous_blank = True
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        blank = not stripped
        if fence is None and not comment and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if comment:
            # Inside an HTML comment nothing is code or a list: only its end matters.
            line, comment = _outside_comments(line, True)
            previous_blank = blank
            stripped = line.lstrip()
            if comment or not stripped:
                continue
        else:
            indented = not blank and (line.startswith("    ") or line.startswith("\t"))
            # An indented block after a blank line is code, unless it continues a list item.
            indented_code = indented and not in_list and (previous_blank or indented_code)
            if not blank and not indented:
                if (stripped[0] in "-*+" or stripped[0].isdecimal()) and _LIST_ITEM.match(line):
                    in_list = True
                elif previous_blank and not line.startswith(" "):
                    in_list = False  # a paragraph at the margin ends the list; 1-3 spaces continue the item
            previous_blank = blank
            if indented_code:
                continue
            if "<!--" in line:
                line, comment = _outside_comments(line, False)
        if "](" in line:
            for match in _LINK.finditer(line):
                yield number, match.group(1), True
        if "]:" in line:
            definition = _REF_DEF.match(line)
            if definition:
                yield number, definition.group(1), True
        if not spans or "`" not in line:
            continue
        for match in _CODE_SPAN.finditer(line):
            for token in match.group(1).split():
                yield number, _LINE_SUFFIX.sub("", token.strip(".,;:'\"")), False


def _outside_comments(line: str, inside: bool) -> tuple[str, bool]:
    """The parts of ``line`` outside ``<!-- ... -->``, and whether a comment is still open.
    A ``<!--`` inside a code span is text, as CommonMark reads it."""
    if not inside and "<!--" not in line:
        return line, False
    spans = [m.span() for m in _CODE_SPAN.finditer(line)] if not inside else []
    kept: list[str] = []
    pos = 0
    while pos < len(line):
        if inside:
            end = line.find("-->", pos)
            if end < 0:
                return "".join(kept), True
            pos, inside = end + 3, False
            spans = [m.span() for m in _CODE_SPAN.finditer(line, pos)]
        else:
            start = line.find("<!--", pos)
            while start >= 0 and any(a <= start < b for a, b in spans):
                start = line.find("<!--", start + 4)
            if start < 0:
                kept.append(line[pos:])
                break
            kept.append(line[pos:start])
            pos, inside = start + 4, True
    return "".join(kept), inside


def _check_references(skill_dir: Path, report: Report, entries: list[tuple[str, os.DirEntry[str]]]) -> None:
    """Every relative path the skill's markdown names must exist, with exact case.

    Links are resolved from the markdown file's folder. In SKILL.md, code spans that
    start with one of the skill's top-level entries (``scripts/build.py``) are checked
    too, from the skill folder: that is how SKILL.md tells agents what to run.
    """
    try:
        top_level = {name for name in os.listdir(skill_dir) if not is_ignored(name)}
    except OSError:
        return
    listings: dict[str, list[str] | None] = {}
    for rel, entry in entries:
        if not rel.endswith(".md") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            with open(entry.path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            if rel != SKILL_FILE:
                report.error(rel, "is not readable UTF-8 text")
            continue
        base = posixpath.dirname(rel)
        for line, target, is_link in _references(text, spans=rel == SKILL_FILE):
            if is_link:
                if _SCHEME.match(target) or target.startswith(("#", "/", "\\")):
                    continue
                target = unquote(target.split("#", 1)[0].split("?", 1)[0])
                if not target:
                    continue
                joined = posixpath.join(base, target)
            else:
                first = target.split("/", 1)[0]
                if rel != SKILL_FILE or "/" not in target or first not in top_level or _PLACEHOLDER & set(target):
                    continue
                joined = target
            problem = _resolve_exact(skill_dir, joined, listings)
            if problem:
                report.error(rel, f"names '{target}', which {problem}", line)


def _listdir(folder: str, cache: dict[str, list[str] | None]) -> list[str] | None:
    if folder not in cache:
        try:
            cache[folder] = os.listdir(folder)
        except NotADirectoryError:
            cache[folder] = None
        except OSError:
            cache[folder] = []
    return cache[folder]


def _resolve_exact(skill_dir: Path, rel: str, listings: dict[str, list[str] | None]) -> str | None:
    """None if ``rel`` (posix, relative to the skill) exists with exactly this case."""
    normal = posixpath.normpath(rel)
    if normal == ".":
        return None
    if normal == ".." or normal.startswith("../"):
        return "is outside the skill (it will not be installed with it)"
    current = str(skill_dir)
    parts = normal.split("/")
    for index, part in enumerate(parts):
        names = _listdir(current, listings)
        if names is None:
            return f"does not exist ({'/'.join(parts[:index])} is a file)"
        if part not in names:
            matches = [n for n in names if n.lower() == part.lower()]
            if matches:
                return f"does not exist with that case (found '{'/'.join(parts[:index] + matches[:1])}')"
            return "does not exist"
        current = os.path.join(current, part)
    return None


def validate_spec(spec: str, ctx: SourceContext, select: list[str]) -> list[Report]:
    """Reports for one `validate` PATH argument: a skill folder, each skill of a folder of
    skills (narrowed by --skill ``select``), or an hf:// address.

    A folder also gets :mod:`.safety`'s checks (links out of the skill, special files,
    the size limits of ``ctx``), as `add` would apply them to a skill from a folder.
    """
    # Imported here: sources and safety build on this module (skill is their leaf).
    from . import sources
    from .safety import Refused, problems

    if sources.HubRepo().matches(spec):
        try:
            found = sources.resolve(spec, ctx, select or [sources.ALL])
        except Refused as exc:
            report = Report(Path(spec), label=spec)
            report.error(exc.path, exc.problem)
            return [report]
        reports = []
        for source in found:
            report = validate(source.path)
            report.label = source.display
            reports.append(report)
        return reports
    path = ctx.local_path(spec)
    names = sources.bundled_names(path) if path.is_dir() and not (path / SKILL_FILE).exists() else []
    if names:
        picked = sources.choose(names, select or [sources.ALL], label=spec, single=False)
        folders = [(path / name, os.path.join(spec, name)) for name in picked]
    else:
        folders = [(path, spec)]
    reports = []
    for folder, label in folders:
        report = validate(folder)
        report.label = label
        if folder.is_dir():
            seen = {p.path for p in report.errors}
            for problem in problems(folder, label, ctx.limits):
                if problem.path not in seen:
                    report.error(problem.path, problem.problem)
        reports.append(report)
    return reports
