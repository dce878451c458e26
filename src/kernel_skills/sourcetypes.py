"""The types every source kind shares: a skill ready to install, what a source offers,
and the context sources resolve in.

A leaf module (it imports no source kind) so that :mod:`.sources`, which dispatches to
:mod:`.hub`, and :mod:`.hub`, which builds these objects, do not import each other.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import KernelsError
from .records import field, record
from .safety import Limits
from .skill import SkillInfo, read_info

ALL = "*"  # --skill '*': every skill a source offers


@record(frozen=True)
class SkillSource:
    """A skill ready to install: its tree on local disk and where it came from."""

    name: str
    path: Path
    origin: Mapping[str, Any]  # JSON-able; stored in the receipt as "source"
    label: str = ""  # how to name it to the user: "cuda-kernels", "/abs/my-skill", "hf://org/repo/x"
    note: str | None = None  # e.g. "commit 1a2b3c4"

    @cached_property
    def info(self) -> SkillInfo:
        return read_info(self.path)

    @cached_property
    def digest(self) -> str:
        """The hash of the whole tree, as a receipt records it (computed once per source)."""
        from . import receipts

        return receipts.digest(receipts.manifest(self.path, source=True))

    def knows_digest(self, files: Mapping[str, str]) -> str:
        """Take the digest from the manifest of a plain copy of this tree (install.copy_tree
        hashes every file as it copies), so the tree is not read and hashed a second time."""
        from . import receipts

        if "digest" not in self.__dict__:
            self.__dict__["digest"] = receipts.digest(files)  # what the cached_property would store
        return self.digest

    @property
    def display(self) -> str:
        return self.label or str(self.path)


@record(frozen=True)
class Offer:
    """A skill a source offers (for `kernels skills add --list`)."""

    name: str
    address: str  # what to pass to `kernels skills add` to install just this one
    description: str = ""
    version: str | None = None
    problem: str | None = None  # why it could not be read, if it could not

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.address,
            "description": self.description,
            "version": self.version,
            "problem": self.problem,
        }


class Scratch:
    """A private temp folder for trees fetched from elsewhere; removed by :meth:`close`."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._count = 0

    def new(self) -> Path:
        """A fresh, empty folder inside the scratch folder."""
        if self._path is None:
            import tempfile  # deferred: only a Hub download needs a scratch folder

            self._path = Path(tempfile.mkdtemp(prefix="kernel-skills-"))
        self._count += 1
        folder = self._path / str(self._count)
        folder.mkdir()
        return folder

    def close(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@record(frozen=True)
class SourceContext:
    """What resolving a source may use: roots are passed in, never guessed."""

    bundled_root: Path
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None  # relative folder paths start here (default: the process's cwd)
    limits: Limits = field(default_factory=Limits)
    scratch: Scratch = field(default_factory=Scratch)
    quiet: bool = False  # no download progress bars

    def local_path(self, spec: str) -> Path:
        path = Path(os.path.expanduser(spec))
        return path if path.is_absolute() else (self.cwd or Path.cwd()) / path


def choose(offered: Sequence[str], select: Sequence[str] | None, *, label: str, single: bool) -> list[str]:
    """The skills of a source that --skill ``select`` picks (all of a single-skill source without it)."""
    if not select:
        if single:
            return list(offered)
        shown = ", ".join(offered[:8]) + (f" and {len(offered) - 8} more" if len(offered) > 8 else "")
        raise KernelsError(
            f"{label} is a folder of {len(offered)} skills ({shown})",
            f"Pick some with --skill NAME (repeatable) or all with --skill '{ALL}'; `kernels skills add --list {label}` describes them.",
            usage=True,
        )
    if ALL in select:
        return list(offered)
    chosen = [name for name in offered if name in select]
    if not chosen:
        holds = f"only the skill '{offered[0]}'" if single else "no skill named " + ", ".join(f"'{s}'" for s in select)
        raise KernelsError(
            f"{label} holds {holds}", f"It offers: {', '.join(offered)}. Fix --skill, or drop it for a single skill.", usage=True
        )
    return chosen
