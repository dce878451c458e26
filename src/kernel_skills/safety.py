"""A skill from a local folder or the Hub is untrusted input: check the whole tree first.

Every check here runs before anything is written to an agent's folder, and nothing in
the tree is ever executed or imported. Refused, each with a one-line error naming the
offending path:

- a path that is absolute or has an empty, ``.`` or ``..`` component (a Hub listing);
- a symlink that is absolute or points outside the skill, a hard link whose other
  names live outside the skill, and anything that is not a file, folder or symlink
  (device, fifo, socket);
- a file over ``max_file`` bytes or a tree over ``max_total`` bytes (``--max-file-mb`` and
  ``--max-total-mb`` raise the limits; defaults 10 MB and 50 MB);
- a tree of more than ``max_files`` files (default 5,000; ``--max-files``) or with a path
  more than ``max_depth`` levels deep (default 32; ``--max-depth``): the bundled
  cuda-kernels skill holds about 600 files at most 7 levels deep, while a crafted tree of
  1,500 levels or 20,000 files only costs the user time and disk;
- a skill name that fails the Agent Skills rules;
- a name or a tree that some OS cannot hold (reserved device names, ``<>:"|?*``, control
  characters, a trailing dot or space, paths equal but for case, junctions): see
  :mod:`kernel_skills.portable`. Hard links are found with ``os.lstat``, whose link count
  is real on every OS.

SKILL.md itself is checked by :func:`kernel_skills.skill.validate`, which every install
runs too. Pure functions over a folder or a file listing: nothing here writes or exits.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from . import portable
from .errors import KernelsError
from .records import record
from .skill import name_problem, walk

MB = 1_000_000
DEFAULT_MAX_FILE_MB = 10
DEFAULT_MAX_TOTAL_MB = 50
DEFAULT_MAX_FILES = 5000
DEFAULT_MAX_DEPTH = 32


@record(frozen=True)
class Limits:
    """Size limits for an untrusted skill tree: bytes, files, and path depth."""

    max_file: int = DEFAULT_MAX_FILE_MB * MB
    max_total: int = DEFAULT_MAX_TOTAL_MB * MB
    max_files: int = DEFAULT_MAX_FILES
    max_depth: int = DEFAULT_MAX_DEPTH

    @classmethod
    def unlimited(cls) -> Limits:
        """No size limits (for comparing a source with an install, not for installing it)."""
        return cls(max_file=1 << 62, max_total=1 << 62, max_files=1 << 62, max_depth=1 << 62)

    @classmethod
    def from_options(
        cls, max_file_mb: str | None, max_total_mb: str | None, max_files: str | None = None, max_depth: str | None = None
    ) -> Limits:
        """Limits from the --max-file-mb / --max-total-mb / --max-files / --max-depth strings
        (None = the default)."""
        file_ = _megabytes("--max-file-mb", max_file_mb, DEFAULT_MAX_FILE_MB)
        total = _megabytes("--max-total-mb", max_total_mb, DEFAULT_MAX_TOTAL_MB)
        count = _count("--max-files", max_files, DEFAULT_MAX_FILES)
        depth = _count("--max-depth", max_depth, DEFAULT_MAX_DEPTH)
        return cls(max_file=file_, max_total=total, max_files=count, max_depth=depth)


NO_LIMIT = 1 << 62  # bytes


def _count(flag: str, value: str | None, default: int) -> int:
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        raise KernelsError(f"{flag} must be a positive whole number, not '{value}'", f"For example {flag} {default * 2}.", usage=True)
    return min(number, NO_LIMIT)


def _megabytes(flag: str, value: str | None, default: int) -> int:
    if value is None:
        return default * MB
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0 or number != number or number == float("inf"):
        raise KernelsError(
            f"{flag} must be a positive number of megabytes, not '{value}'", f"For example {flag} {default * 2}.", usage=True
        )
    if number * MB < 1:
        raise KernelsError(f"{flag} {value} is less than one byte", f"For example {flag} {default * 2}.", usage=True)
    # Any size beyond what a disk holds means "no practical limit"; int() of a huge float would overflow.
    return int(min(number * MB, float(NO_LIMIT)))


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"


class Refused(KernelsError):
    """An untrusted tree failed a safety check; ``path`` names the offending entry."""

    def __init__(self, label: str, path: str, problem: str, fix: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"refused {label}: {path} {problem}", fix)


_SIZE_FIX = "Raise the limit with {flag} if you trust this skill, or remove the file from it."


def check_name(name: str, label: str) -> None:
    """The skill's folder name must pass the spec (it becomes a folder in every agent's dir)."""
    problem = name_problem(name)
    if problem:
        raise Refused(
            label, name, f"is not a valid skill name: {problem}", "Rename the skill folder (and SKILL.md's name) like cuda-kernels."
        )


# Control characters (C0, DEL, C1) in a file name: a newline or ESC in a name that is
# later printed, logged or pasted into a shell is an attack, never a need.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_FIX = "Rename the file: skill file names may not hold control characters (newline, tab, ESC...)."


def control_problem(path: str, label: str) -> Refused | None:
    if _CONTROL.search(path):
        return Refused(label, path, "has a control character in its name", _CONTROL_FIX)
    return None


def check_relative(path: str, label: str) -> None:
    """A path from a listing: relative, '/'-separated, with no empty, '.' or '..' parts."""
    if problem := control_problem(path, label):
        raise problem
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise Refused(label, path, "is an absolute path", "A skill may only contain paths inside its own folder.")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\\" in path:
        raise Refused(label, path, "has an empty, '.' or '..' path component", "A skill may only contain paths inside its own folder.")


_COUNT_FIX = "Raise the limit with --max-files if you trust this skill."
_DEPTH_FIX = "Raise the limit with --max-depth if you trust this skill."


def _too_many(label: str, path: str, limits: Limits) -> Refused:
    return Refused(label, path, f"takes the skill to more than {limits.max_files} files", _COUNT_FIX)


def _too_deep(label: str, path: str, limits: Limits) -> Refused:
    return Refused(label, _shorten(path), f"is deeper than {limits.max_depth} levels", _DEPTH_FIX)


def _shorten(path: str, keep: int = 120) -> str:
    # A 1,500-level path would fill the screen; its start and end say where it is.
    return path if len(path) <= keep else f"{path[: keep // 2]}...{path[-keep // 2 :]}"


def check_listing(files: Mapping[str, int | None], label: str, limits: Limits) -> None:
    """Check a listing of ``relative path -> size`` (a Hub repo's, before downloading)."""
    total = 0
    for count, (path, size) in enumerate(sorted(files.items()), start=1):
        check_relative(path, label)
        if count > limits.max_files:
            raise _too_many(label, path, limits)
        if path.count("/") + 1 > limits.max_depth:
            raise _too_deep(label, path, limits)
        size = size or 0
        if size > limits.max_file:
            raise Refused(
                label, path, f"is {_mb(size)}, over the {_mb(limits.max_file)} limit for one file", _SIZE_FIX.format(flag="--max-file-mb")
            )
        total += size
        if total > limits.max_total:
            raise Refused(
                label,
                path,
                f"takes the skill past the {_mb(limits.max_total)} limit for a whole skill",
                _SIZE_FIX.format(flag="--max-total-mb"),
            )
    for problem in _portable_path_problems(sorted(files), label):
        raise problem


_PORTABLE_FIX = "Rename it in the skill: every OS an agent runs on must be able to hold it."


def _portable_path_problems(paths: list[str], label: str) -> Iterator[Refused]:
    """portable.py's rules for relative '/'-separated paths: names, then case collisions."""
    for rel in paths:
        problem = portable.path_problem(rel)
        if problem:
            yield Refused(label, rel, problem, _PORTABLE_FIX)
    for first, second in portable.collisions(paths):
        yield Refused(label, second, f"differs from {first} only in case or accents: one path on macOS and Windows", _PORTABLE_FIX)


def portable_problems(root: Path, label: str) -> Iterator[Refused]:
    """The rules of portable.py for a tree on disk, and no junctions or reparse points."""
    paths: list[str] = []
    for rel, entry in walk(root):
        paths.append(rel)
        if portable.is_reparse_point(os.lstat(entry.path)) and not entry.is_symlink():
            yield Refused(label, rel, "is a junction or another reparse point", "Replace it with the folder or file it stands for.")
    yield from _portable_path_problems(paths, label)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_tree(root: Path, label: str, limits: Limits) -> None:
    """Check a skill folder on disk; raises :class:`Refused` on the first problem."""
    for problem in problems(root, label, limits):
        raise problem


def problems(root: Path, label: str, limits: Limits) -> Iterator[Refused]:
    """Every safety problem of a skill folder on disk, in tree order (hard links last)."""
    real_root = os.path.realpath(root)
    total = 0
    over_total = False
    links: dict[tuple[int, int], list[str]] = {}
    nlinks: dict[tuple[int, int], int] = {}
    files = folders = 0
    too_deep = cut_short = False
    entries = walk(root)
    while True:
        try:
            rel, entry = next(entries)
        except StopIteration:
            break
        except OSError as exc:
            where = os.path.relpath(exc.filename, root) if isinstance(exc.filename, str) else "."
            yield Refused(label, _shorten(where), f"cannot be read ({exc.strerror})", "Check its permissions.")
            cut_short = True
            break
        if rel.count("/") + 1 > limits.max_depth:
            if not too_deep:
                too_deep = True
                yield _too_deep(label, rel, limits)
            continue
        if problem := control_problem(rel, label):
            yield problem
        st = os.lstat(entry.path)  # not entry.stat(): its st_nlink is 0 on Windows
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            folders += 1
        else:
            files += 1
        if files > limits.max_files or folders > limits.max_files:
            # A tree of a million entries is refused without looking at each one.
            yield _too_many(label, rel, limits)
            cut_short = True
            break
        if stat.S_ISLNK(mode):
            problem = _symlink_problem(real_root, rel, entry.path, label)
            if problem:
                yield problem
        elif stat.S_ISREG(mode):
            if st.st_size > limits.max_file:
                yield Refused(
                    label,
                    rel,
                    f"is {_mb(st.st_size)}, over the {_mb(limits.max_file)} limit for one file",
                    _SIZE_FIX.format(flag="--max-file-mb"),
                )
            total += st.st_size
            if total > limits.max_total and not over_total:
                over_total = True
                yield Refused(
                    label,
                    rel,
                    f"takes the skill past the {_mb(limits.max_total)} limit for a whole skill",
                    _SIZE_FIX.format(flag="--max-total-mb"),
                )
            if st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                links.setdefault(key, []).append(rel)
                nlinks[key] = st.st_nlink
        elif not stat.S_ISDIR(mode):
            kind = (
                "a fifo"
                if stat.S_ISFIFO(mode)
                else "a socket"
                if stat.S_ISSOCK(mode)
                else "a device file"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file"
            )
            yield Refused(label, rel, f"is {kind}", "A skill holds only regular files, folders and symlinks inside it; remove it.")
    if not (too_deep or cut_short):  # (a tree refused for its size is not walked again)
        yield from portable_problems(root, label)
    for key, names in sorted(links.items(), key=lambda item: item[1][0]):
        # Every name of a hard-linked file must be inside the skill: otherwise the copy
        # would carry the content of a file that lives somewhere else.
        if nlinks[key] > len(names):
            yield Refused(
                label,
                names[0],
                f"is a hard link to a file outside the skill ({nlinks[key]} names, {len(names)} inside)",
                "Replace it with a regular copy of the file.",
            )


def _symlink_problem(real_root: str, rel: str, full: str, label: str) -> Refused | None:
    target = os.readlink(full)
    if os.path.isabs(target) or target.startswith("\\"):
        return Refused(
            label, rel, f"is a symlink to the absolute path {target}", "Use a relative link inside the skill, or copy the file in."
        )
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target.replace(os.sep, "/")))
    if lexical == ".." or lexical.startswith("../"):
        return Refused(label, rel, f"is a symlink to {target}, outside the skill", "Copy the file into the skill instead of linking to it.")
    resolved = os.path.realpath(full)
    if not _inside(resolved, real_root):
        return Refused(
            label, rel, f"is a symlink to {target}, which leads outside the skill", "Copy the file into the skill instead of linking to it."
        )
    if not os.path.exists(resolved):
        return Refused(label, rel, f"is a broken symlink (to {target})", "Fix or remove the link.")
    return None
