"""A skill from a local folder or the Hub is untrusted input: check the whole tree first.

Every check here runs before anything is written to an agent's folder, and nothing in
the tree is ever executed or imported. Refused, each with a one-line error naming the
offending path:

- a path that is absolute or has an empty, ``.`` or ``..`` component (a Hub listing);
- a symlink that is absolute or points outside the skill, a hard link whose other
  names live outside the skill, and anything that is not a file, folder or symlink
  (device, fifo, socket);
- a file over ``max_file`` bytes or a tree over ``max_total`` bytes (``--max-file-mb`` and
  ``--max-total-mb`` raise the limits);
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
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import portable
from .errors import KernelsError
from .skill import name_problem, walk

MB = 1_000_000
DEFAULT_MAX_FILE_MB = 10
DEFAULT_MAX_TOTAL_MB = 50


@dataclass(frozen=True)
class Limits:
    """Size limits for an untrusted skill tree, in bytes."""

    max_file: int = DEFAULT_MAX_FILE_MB * MB
    max_total: int = DEFAULT_MAX_TOTAL_MB * MB

    @classmethod
    def unlimited(cls) -> Limits:
        """No size limits (for comparing a source with an install, not for installing it)."""
        return cls(max_file=1 << 62, max_total=1 << 62)

    @classmethod
    def from_options(cls, max_file_mb: str | None, max_total_mb: str | None) -> Limits:
        """Limits from the --max-file-mb / --max-total-mb strings (None = the default)."""
        file_ = _megabytes("--max-file-mb", max_file_mb, DEFAULT_MAX_FILE_MB)
        total = _megabytes("--max-total-mb", max_total_mb, DEFAULT_MAX_TOTAL_MB)
        return cls(max_file=file_, max_total=total)


NO_LIMIT = 1 << 62  # bytes


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


def check_relative(path: str, label: str) -> None:
    """A path from a listing: relative, '/'-separated, with no empty, '.' or '..' parts."""
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise Refused(label, path, "is an absolute path", "A skill may only contain paths inside its own folder.")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\\" in path:
        raise Refused(label, path, "has an empty, '.' or '..' path component", "A skill may only contain paths inside its own folder.")


def check_listing(files: Mapping[str, int | None], label: str, limits: Limits) -> None:
    """Check a listing of ``relative path -> size`` (a Hub repo's, before downloading)."""
    total = 0
    for path, size in sorted(files.items()):
        check_relative(path, label)
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
    for rel, entry in walk(root):
        st = os.lstat(entry.path)  # not entry.stat(): its st_nlink is 0 on Windows
        mode = st.st_mode
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
