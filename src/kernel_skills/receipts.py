"""Receipts: the ``.kernel-skills.json`` file every install writes into the skill folder.

It records who installed the skill, from where, and the sha256 of every file, so that
list, update and remove know what they manage and whether the user edited it since.

Line endings: a project install committed to git and cloned elsewhere with
``core.autocrlf`` (the Windows default) comes back with CRLF where the skill had LF, or
the reverse, and is not an edit. A text file (no NUL byte) therefore also matches when it
equals the recorded file but for CRLF vs LF: ``files`` holds the sha256 of the bytes
installed, and ``lf_files`` (absent from older receipts, which stay valid)
the sha256 with CRLF read as LF of each file that had CRLF when installed.

Format (schema 2): one line of JSON; ``files`` and ``lf_files`` are trees of folders (each
folder's name once, not once per file under it) whose leaves are the files' sha256 in
base64 without padding (43 characters for 64 hex) or ``symlink:<target>``. That keeps a
receipt of ~200 files near 15 KB (schema 1, indented, with flat maps of hex: 25 KB).
Schema 1 receipts still read: :func:`read` gives either as schema 1's flat maps of hex.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import __version__
from .records import record
from .skill import walk

RECEIPT_FILE = ".kernel-skills.json"
SCHEMA = 2
_LINK_PREFIX = "symlink:"
_B64_SHA256 = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]")  # 256 bits: the last character's 2 low bits are 0


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def lf_sha256(path: str | Path) -> str | None:
    """sha256 of a text file with every CRLF read as LF; None for a binary file (a NUL byte)."""
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\0" in data:
        return None
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()


def lf_digests(skill_dir: Path, files: Mapping[str, str]) -> dict[str, str]:
    """``lf_files`` for a receipt: :func:`lf_sha256` of each installed text file that has CRLF."""
    out: dict[str, str] = {}
    for rel, value in files.items():
        if value.startswith(_LINK_PREFIX):
            continue
        path = skill_dir / rel
        with open(path, "rb") as handle:
            data = handle.read()
        if b"\r\n" in data and b"\0" not in data:
            out[rel] = hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()
    return out


def manifest(skill_dir: Path, *, source: bool = False) -> dict[str, str]:
    """relative path -> sha256 (files) or ``symlink:<target>`` (links), receipt excluded.

    For an install every other file counts, clutter names included: a ``mine.pyc`` the
    user put there is theirs, and a tree that differs from its receipt is backed up. For
    a ``source`` (what an install would copy) clutter is left out, as the copy leaves it.
    """
    entries: dict[str, str] = {}
    for rel, entry in walk(skill_dir, everything=not source):
        if rel == RECEIPT_FILE:
            continue
        if entry.is_symlink():
            entries[rel] = _LINK_PREFIX + os.readlink(entry.path)
        elif entry.is_file(follow_symlinks=False):
            entries[rel] = file_sha256(entry.path)
    return entries


def digest(files: Mapping[str, str]) -> str:
    """One hash for a whole tree: equal digests mean byte-identical trees."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{files[rel]}\n".encode())
    return h.hexdigest()


@record(frozen=True)
class Receipt:
    data: Mapping[str, Any]

    @property
    def skill(self) -> str:
        return str(self.data.get("skill", ""))

    @property
    def version(self) -> str | None:
        value = self.data.get("skill_version")
        return None if value is None else str(value)

    @property
    def source(self) -> Mapping[str, Any]:
        source = self.data.get("source")
        return source if isinstance(source, dict) else {}

    @property
    def files(self) -> dict[str, str]:
        files = self.data.get("files")
        return dict(files) if isinstance(files, dict) else {}

    @property
    def digest(self) -> str:
        return str(self.data.get("digest") or digest(self.files))

    def changes(self, skill_dir: Path) -> list[str]:
        """Paths added, removed or edited since install (sorted); empty when pristine.

        A text file whose only change is CRLF vs LF (git's autocrlf) is not an edit."""
        now = manifest(skill_dir)
        recorded = self.files
        differ = [p for p in set(now) | set(recorded) if now.get(p) != recorded.get(p)]
        return sorted(p for p in differ if not self._same_text(skill_dir, p, now.get(p), recorded.get(p)))

    def _same_text(self, skill_dir: Path, rel: str, now: str | None, recorded: str | None) -> bool:
        if now is None or recorded is None or now.startswith(_LINK_PREFIX) or recorded.startswith(_LINK_PREFIX):
            return False
        lf_files = self.data.get("lf_files")
        lf = lf_files.get(rel) if isinstance(lf_files, dict) else None
        current = lf_sha256(skill_dir / rel)
        return current is not None and current in (recorded, lf)


# A receipt is a few KB per hundred files; one far larger was not written by us.
MAX_RECEIPT_BYTES = 64 * 1024 * 1024
_SCALAR = (str, int, float, bool, type(None))


def read(skill_dir: Path) -> Receipt | None:
    """The receipt in ``skill_dir``; None when there is none, it is not ours, or it is not
    the shape we write (then :func:`damaged` tells the two apart). Never raises: a receipt
    nested 200,000 levels deep, or holding numbers where hashes belong, is just damaged.
    A schema 2 receipt is given in schema 1's shape (flat maps of hex digests)."""
    try:
        with open(skill_dir / RECEIPT_FILE, "rb") as handle:
            raw = handle.read(MAX_RECEIPT_BYTES + 1)
        if len(raw) > MAX_RECEIPT_BYTES:
            return None
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(data, dict) and data.get("schema") == 2:
        data = _unpacked(data)
    return Receipt(data) if data is not None and _well_formed(data) else None


def _pack(files: Mapping[str, str]) -> dict[str, Any]:
    """A flat map of relative path -> hex sha256 (or ``symlink:<target>``) as schema 2 stores it."""
    tree: dict[str, Any] = {}
    for rel in sorted(files):
        value = files[rel]
        *folders, name = rel.split("/")
        node = tree
        for folder in folders:
            node = node.setdefault(folder, {})
        if value.startswith(_LINK_PREFIX):
            node[name] = value
        else:
            node[name] = binascii.b2a_base64(bytes.fromhex(value), newline=False).decode().rstrip("=")
    return tree


def _unpack(tree: Any) -> dict[str, str] | None:
    """The flat map of a schema 2 tree; None if it is not one :func:`_pack` could have written."""
    if not isinstance(tree, dict):
        return None
    flat: dict[str, str] = {}
    stack: list[tuple[str, dict[str, Any]]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for name, value in node.items():
            if not name or "/" in name or name in (".", ".."):
                return None
            rel = prefix + name
            if isinstance(value, dict):
                stack.append((rel + "/", value))
            elif isinstance(value, str) and value.startswith(_LINK_PREFIX):
                flat[rel] = value
            elif isinstance(value, str) and _B64_SHA256.fullmatch(value):
                flat[rel] = binascii.a2b_base64(value + "=").hex()
            else:
                return None
    return flat


def _unpacked(data: dict[str, Any]) -> dict[str, Any] | None:
    """A schema 2 receipt in schema 1's shape; None if its file trees are damaged."""
    out = dict(data)
    for key in ("files", "lf_files"):
        if key in data:
            flat = _unpack(data[key])
            if flat is None:
                return None
            out[key] = flat
    return out


def _well_formed(data: Any) -> bool:
    """Is ``data`` shaped like the receipts :func:`render` writes (every field list, update
    and remove read has the type they expect)?"""
    if not isinstance(data, dict) or data.get("installer") != "kernel-skills":
        return False
    files, source = data.get("files"), data.get("source", {})
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return False
    if not isinstance(source, dict) or not all(isinstance(k, str) and isinstance(v, _SCALAR) for k, v in source.items()):
        return False
    return (
        isinstance(data.get("skill", ""), str)
        and isinstance(data.get("skill_version"), _SCALAR)
        and isinstance(data.get("digest", ""), (str, type(None)))
    )


def damaged(skill_dir: Path, receipt: Receipt | None) -> bool:
    """``receipt`` (what ``read`` returned) is None although a receipt file is there: edited, truncated."""
    return receipt is None and (skill_dir / RECEIPT_FILE).is_file()


def render(
    *,
    skill: str,
    version: str | None,
    source: Mapping[str, Any],
    files: Mapping[str, str],
    source_digest: str | None = None,
    lf_files: Mapping[str, str] | None = None,
) -> bytes:
    """The receipt's bytes. ``source_digest``: the source tree's digest where the copy
    differs from it on purpose (links copied as their targets), so it still reads as
    installed from that source, unchanged."""
    data = {
        "installer": "kernel-skills",
        "installer_version": __version__,
        "schema": SCHEMA,
        "skill": skill,
        "skill_version": version,
        "source": dict(source),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "digest": source_digest or digest(files),
        "files": _pack(files),
    }
    if lf_files:
        data["lf_files"] = _pack(lf_files)
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()
