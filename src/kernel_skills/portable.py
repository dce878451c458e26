"""Names and trees that install the same on Linux, macOS and Windows.

A skill from a folder or the Hub is checked against the strictest of the three on every
OS, so that a tree installed (and maybe committed to git) on Linux also installs on a
colleague's Mac or Windows machine, and so that what one OS would silently turn into
something else is refused instead:

- a name Windows reserves for a device (``con``, ``nul``, ``com1``, ``lpt1`` ..., with or
  without an extension), which would open the device instead of a file;
- ``< > : " | ? *`` (``:`` also names an NTFS alternate data stream), a backslash, or a
  control character;
- a trailing dot or space, which Windows strips (``a.`` becomes ``a``);
- two paths that differ only in case or Unicode normalisation, which are one path on
  case-insensitive APFS and NTFS (the second would overwrite the first);
- a name over 255 bytes, and, at plan time, a destination path longer than the target
  OS takes (259 characters on Windows without long-path support).

Pure functions; nothing here touches the disk except :func:`is_reparse_point` (reads a
stat result) and :func:`path_limit` (asks the Windows registry).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Iterable

PLATFORM = sys.platform  # tests set "win32" to check Windows' limits on Linux

_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"{stem}{n}" for stem in ("com", "lpt") for n in [*"123456789", "\u00b9", "\u00b2", "\u00b3"]]
)
_FORBIDDEN = re.compile(r'[<>:"|?*\\\x00-\x1f\x7f]')
NAME_MAX_BYTES = 255  # ext4, APFS and NTFS (NTFS counts 255 UTF-16 units; bytes are stricter)
WINDOWS_MAX_PATH = 259  # MAX_PATH (260) less the terminating NUL
FILE_ATTRIBUTE_REPARSE_POINT = 0x400


def name_problem(name: str) -> str | None:
    """Why one path component cannot be a file name on every OS; None when it can."""
    bad = _FORBIDDEN.search(name)
    if bad:
        char = bad.group()
        shown = f"the control character U+{ord(char):04X}" if ord(char) < 32 or ord(char) == 127 else f"'{char}'"
        return f"has {shown} in its name, which Windows does not allow"
    if name.endswith((".", " ")) and name not in (".", ".."):
        return "ends with a dot or a space, which Windows drops from names"
    stem = name.split(".", 1)[0].rstrip(" ").lower()
    if stem in _DEVICE_NAMES:
        return f"is named after the Windows device '{stem.upper()}', which cannot be a file there"
    if len(name.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES:
        return f"has a name longer than {NAME_MAX_BYTES} bytes"
    return None


def path_problem(rel: str) -> str | None:
    """:func:`name_problem` for the first component of the '/'-separated ``rel`` that fails."""
    for part in rel.split("/"):
        problem = name_problem(part)
        if problem:
            return problem
    return None


def fold(rel: str) -> str:
    """The one spelling a case- and normalisation-insensitive filesystem sees."""
    return unicodedata.normalize("NFC", rel).casefold()


def collisions(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs (first, second) of paths that would be one path on APFS or NTFS, in order."""
    seen: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    for rel in paths:
        key = fold(rel)
        if key in seen and seen[key] != rel:
            found.append((seen[key], rel))
        else:
            seen.setdefault(key, rel)
    return found


def is_reparse_point(st: os.stat_result) -> bool:
    """A Windows junction, mount point or other reparse point (os.lstat's view of it).

    ``os.path.islink`` is False for a junction, and a junction is followed like a
    folder, so an untrusted tree must not have one: it could lead anywhere on the disk.
    """
    return bool(getattr(st, "st_file_attributes", 0) & FILE_ATTRIBUTE_REPARSE_POINT)


def path_limit(platform: str | None = None) -> int:
    """The longest path (in characters) a file may have on ``platform`` (default: this one)."""
    platform = platform or PLATFORM
    if platform == "win32":
        return 32_766 if _long_paths_enabled() else WINDOWS_MAX_PATH
    if platform == "darwin":
        return 1023  # PATH_MAX 1024 with the NUL
    return 4095  # Linux PATH_MAX 4096 with the NUL


def _long_paths_enabled() -> bool:
    """Windows 10+ with LongPathsEnabled (Python itself is long-path aware since 3.6)."""
    if sys.platform != "win32":
        return False
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem") as key:
            value, _kind = winreg.QueryValueEx(key, "LongPathsEnabled")
    except OSError:
        return False
    return bool(value)
