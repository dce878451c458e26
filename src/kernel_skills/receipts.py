"""Receipts: the ``.kernel-skills.json`` file every install writes into the skill folder.

It records who installed the skill, from where, and the sha256 of every file, so that
list, update and remove know what they manage and whether the user edited it since.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .skill import walk

RECEIPT_FILE = ".kernel-skills.json"
SCHEMA = 1
_LINK_PREFIX = "symlink:"


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def manifest(skill_dir: Path) -> dict[str, str]:
    """relative path -> sha256 (files) or ``symlink:<target>`` (links), receipt excluded."""
    entries: dict[str, str] = {}
    for rel, entry in walk(skill_dir):
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


@dataclass(frozen=True)
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
        """Paths added, removed or edited since install (sorted); empty when pristine."""
        now = manifest(skill_dir)
        recorded = self.files
        return sorted(p for p in set(now) | set(recorded) if now.get(p) != recorded.get(p))


def read(skill_dir: Path) -> Receipt | None:
    """The receipt in ``skill_dir``; None when there is none or it is not ours."""
    try:
        data = json.loads((skill_dir / RECEIPT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("installer") != "kernel-skills" or not isinstance(data.get("files"), dict):
        return None
    return Receipt(data)


def damaged(skill_dir: Path, receipt: Receipt | None) -> bool:
    """``receipt`` (what ``read`` returned) is None although a receipt file is there: edited, truncated."""
    return receipt is None and (skill_dir / RECEIPT_FILE).is_file()


def render(
    *, skill: str, version: str | None, source: Mapping[str, Any], files: Mapping[str, str], source_digest: str | None = None
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
        "installed_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "digest": source_digest or digest(files),
        "files": dict(sorted(files.items())),
    }
    return (json.dumps(data, indent=2) + "\n").encode()
