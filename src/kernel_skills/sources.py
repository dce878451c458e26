"""Where skills come from.

A *source kind* turns what the user typed (``cuda-kernels``) into :class:`SkillSource`
objects: a local folder holding the skill tree, plus the record that goes into the
receipt so that ``update`` can ask the same source again later. Today there is one kind,
the skills bundled with this package; other kinds (a local folder, a Hugging Face Hub
repo) plug in by adding a class with the same three methods to :data:`SOURCE_KINDS`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from .errors import KernelsError
from .skill import SKILL_FILE, SkillInfo, check_name, is_ignored, read_info

BUNDLED_ROOT_ENV = "KERNEL_SKILLS_BUNDLED_ROOT"


@dataclass(frozen=True)
class SkillSource:
    """A skill ready to install: its tree on local disk and where it came from."""

    name: str
    path: Path
    origin: Mapping[str, Any]  # JSON-able; stored in the receipt as "source"

    @cached_property
    def info(self) -> SkillInfo:
        return read_info(self.path)


@dataclass(frozen=True)
class SourceContext:
    """What resolving a source may use: roots are passed in, never guessed."""

    bundled_root: Path
    env: Mapping[str, str] = field(default_factory=dict)


class SourceKind(Protocol):
    kind: str

    def matches(self, spec: str) -> bool:
        """Whether ``spec`` (a SKILL argument) is this kind's to resolve."""

    def resolve(self, spec: str, ctx: SourceContext) -> list[SkillSource]:
        """The skills ``spec`` names; raises KernelsError when there are none."""

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        """The same skill again, from a receipt's "source" record (for update)."""


class Bundled:
    """Skills shipped inside this package (kernel_skills/skills, or skills/ in a checkout)."""

    kind = "bundled"

    def matches(self, spec: str) -> bool:
        return True  # the fallback: anything that is no other kind's is a bundled name

    def resolve(self, spec: str, ctx: SourceContext) -> list[SkillSource]:
        check_name(spec)
        path = ctx.bundled_root / spec
        if not path.is_dir():
            names = bundled_names(ctx.bundled_root)
            close = difflib.get_close_matches(spec, names, n=1, cutoff=0.5)
            hint = f"Did you mean '{close[0]}'? " if close else ""
            available = ", ".join(names) or "none"
            raise KernelsError(
                f"no bundled skill named '{spec}'",
                f"{hint}Bundled skills: {available} (`kernels skills list --available`).",
            )
        return [SkillSource(spec, path, {"kind": self.kind, "name": spec})]

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        return self.resolve(str(origin.get("name", "")), ctx)[0]


# Checked in order; the first kind whose matches() says yes resolves the spec.
SOURCE_KINDS: list[SourceKind] = [Bundled()]


def resolve(spec: str, ctx: SourceContext) -> list[SkillSource]:
    for kind in SOURCE_KINDS:
        if kind.matches(spec):
            return kind.resolve(spec, ctx)
    raise KernelsError(f"cannot tell where skill '{spec}' comes from", "Give a bundled skill name.", usage=True)


def from_origin(origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
    """Re-resolve the source a receipt recorded (raises KernelsError if it is gone)."""
    for kind in SOURCE_KINDS:
        if kind.kind == origin.get("kind"):
            return kind.from_origin(origin, ctx)
    raise KernelsError(
        f"unknown source kind {origin.get('kind')!r} in a receipt",
        "Upgrade kernel-skills, or reinstall the skill with `kernels skills add --force`.",
    )


def bundled_names(root: Path) -> list[str]:
    """Names of the bundled skills (folders under ``root`` that hold a SKILL.md)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [
        e.name
        for e in entries
        if e.is_dir() and not e.name.startswith(".") and not is_ignored(e.name) and os.path.isfile(os.path.join(e.path, SKILL_FILE))
    ]


def default_bundled_root(env: Mapping[str, str] | None = None) -> Path:
    """kernel_skills/skills in an installed wheel; the repository's skills/ in a checkout.

    ``$KERNEL_SKILLS_BUNDLED_ROOT`` overrides both (for developing a skill in place).
    """
    env = os.environ if env is None else env
    if env.get(BUNDLED_ROOT_ENV):
        return Path(env[BUNDLED_ROOT_ENV])
    package = Path(__file__).resolve().parent
    inside = package / "skills"
    if inside.is_dir():
        return inside
    checkout = package.parent.parent  # src/kernel_skills -> repository root
    if (checkout / "pyproject.toml").is_file() and (checkout / "skills").is_dir():
        return checkout / "skills"
    return inside
