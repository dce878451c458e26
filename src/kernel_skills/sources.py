"""Where skills come from.

A *source kind* turns what the user typed into :class:`SkillSource` objects: a local
folder holding the skill tree, plus the record that goes into the receipt so that
``update`` can ask the same source again later. Three kinds, checked in this order:

- a Hub repo, ``hf://[datasets/|spaces/]ORG/REPO[@REVISION][/PATH]`` (:mod:`.hub`;
  huggingface_hub is imported only when one is used);
- a local folder, any SKILL argument that looks like a path (``./my-skill``, ``~/x``,
  ``/abs``, ``a/b``): a skill folder, or a folder of skill folders;
- a skill bundled with this package, by name (``cuda-kernels``): everything else.

A new kind is a class with ``matches``/``resolve``/``from_origin``/``offers`` (and optionally
``unchanged``) added to :data:`SOURCE_KINDS`. Skills from anywhere but this
package are untrusted: their kinds run :mod:`.safety`'s checks before returning them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .errors import KernelsError
from .safety import check_name as check_untrusted_name
from .safety import check_tree
from .skill import SKILL_FILE, check_name, is_ignored, read_info

# The shared types live in a leaf module so that hub.py can use them without importing
# this one (which dispatches to hub): re-exported here, where callers have always found them.
from .sourcetypes import ALL as ALL
from .sourcetypes import Offer as Offer
from .sourcetypes import Scratch as Scratch
from .sourcetypes import SkillSource as SkillSource
from .sourcetypes import SourceContext as SourceContext
from .sourcetypes import choose as choose

BUNDLED_ROOT_ENV = "KERNEL_SKILLS_BUNDLED_ROOT"


class SourceKind(Protocol):
    kind: str
    remote: bool  # fetching it needs the network: `list` does not ask it whether it changed

    def matches(self, spec: str) -> bool:
        """Whether ``spec`` (a SKILL argument) is this kind's to resolve."""

    def resolve(self, spec: str, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
        """The skills ``spec`` names (narrowed by --skill ``select``); raises KernelsError when there are none."""

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        """The same skill again, from a receipt's "source" record (for update)."""

    def offers(self, spec: str, ctx: SourceContext) -> list[Offer]:
        """The skills ``spec`` offers, read but not installed (for `add --list`)."""


class Bundled:
    """Skills shipped inside this package (kernel_skills/skills, or skills/ in a checkout)."""

    kind = "bundled"
    remote = False

    def matches(self, spec: str) -> bool:
        return True  # the fallback: anything that is no other kind's is a bundled name

    def resolve(self, spec: str, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
        check_name(spec)
        path = ctx.bundled_root / spec
        if not path.is_dir():
            names = bundled_names(ctx.bundled_root)
            import difflib  # deferred: only a mistyped name needs it

            close = difflib.get_close_matches(spec, names, n=1, cutoff=0.5)
            hint = f"Did you mean '{close[0]}'? " if close else ""
            if not close and os.path.isdir(ctx.local_path(spec)):
                hint = f"To install the folder here, write ./{spec}. "
            available = ", ".join(names) or "none"
            raise KernelsError(
                f"no bundled skill named '{spec}'",
                f"{hint}Bundled skills: {available} (`kernels skills list --available`).",
            )
        return [SkillSource(spec, path, {"kind": self.kind, "name": spec}, label=spec)]

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        return self.resolve(str(origin.get("name", "")), ctx)[0]

    def offers(self, spec: str, ctx: SourceContext) -> list[Offer]:
        source = self.resolve(spec, ctx)[0]
        return [_offer(source.name, source.path, spec)]


def looks_like_path(spec: str) -> bool:
    """pip's rule: a SKILL argument with a path separator, or starting with . or ~, is a folder."""
    return spec.startswith((".", "~")) or "/" in spec or os.sep in spec or os.path.isabs(spec)


class LocalFolder:
    """A skill folder on this machine (with SKILL.md), or a folder of skill folders."""

    kind = "local"
    remote = False

    def matches(self, spec: str) -> bool:
        return looks_like_path(spec)

    def _candidates(self, spec: str, ctx: SourceContext) -> tuple[dict[str, Path], bool, str]:
        """(name -> skill folder, single skill?, label) for a folder argument."""
        path = ctx.local_path(spec)
        if not path.is_dir():
            what = "is not a folder" if path.exists() else "does not exist"
            raise KernelsError(f"{spec} {what}", "Give a skill folder (one with SKILL.md) or a folder of skill folders.")
        real = Path(os.path.realpath(path))
        if (real / SKILL_FILE).is_file():
            return {real.name: real}, True, str(real)
        names = bundled_names(real)
        if not names:
            raise KernelsError(f"{spec} has no {SKILL_FILE} and no skill folders in it", "A skill is a folder with a SKILL.md file.")
        return {name: real / name for name in names}, False, str(real)

    def resolve(self, spec: str, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
        folders, single, label = self._candidates(spec, ctx)
        return [self._source(folders[name], ctx) for name in choose(list(folders), select, label=label, single=single)]

    def _source(self, folder: Path, ctx: SourceContext) -> SkillSource:
        label = str(folder)
        check_untrusted_name(folder.name, label)
        check_tree(folder, label, ctx.limits)
        return SkillSource(folder.name, folder, {"kind": self.kind, "path": str(folder)}, label=label)

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        folder = Path(str(origin.get("path", "")))
        if not folder.is_absolute() or not (folder / SKILL_FILE).is_file():
            raise KernelsError(
                f"the source folder {folder} is gone (no {SKILL_FILE} there)", "Reinstall the skill from where it lives now."
            )
        return self._source(folder, ctx)

    def offers(self, spec: str, ctx: SourceContext) -> list[Offer]:
        folders, _, _ = self._candidates(spec, ctx)
        return [_offer(name, folder, str(folder)) for name, folder in folders.items()]


class HubRepo:
    """A skill (or a folder of skills) in a Hugging Face Hub repo: see :mod:`.hub`."""

    kind = "hf"
    remote = True

    def matches(self, spec: str) -> bool:
        return spec.startswith("hf://")

    def resolve(self, spec: str, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
        from . import hub

        return hub.resolve(hub.parse_uri(spec), ctx, select)

    def from_origin(self, origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
        from . import hub

        return hub.from_origin(origin, ctx)

    def unchanged(self, origin: Mapping[str, Any], ctx: SourceContext) -> str | None:
        from . import hub

        return hub.unchanged(origin, ctx)

    def offers(self, spec: str, ctx: SourceContext) -> list[Offer]:
        from . import hub

        return hub.offers(hub.parse_uri(spec), ctx)


def _offer(name: str, folder: Path, address: str) -> Offer:
    try:
        info = read_info(folder)
    except KernelsError as exc:
        return Offer(name, address, problem=exc.what)
    return Offer(name, address, info.description, info.version)


# Checked in order; the first kind whose matches() says yes resolves the spec.
SOURCE_KINDS: list[SourceKind] = [HubRepo(), LocalFolder(), Bundled()]


def kind_of(spec: str) -> SourceKind:
    for kind in SOURCE_KINDS:
        if kind.matches(spec):
            return kind
    raise KernelsError(
        f"cannot tell where skill '{spec}' comes from", "Give a bundled skill name, a folder or an hf:// address.", usage=True
    )


def resolve(spec: str, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
    return kind_of(spec).resolve(spec, ctx, select)


def offers(spec: str, ctx: SourceContext) -> list[Offer]:
    """What ``spec`` offers, without installing (`kernels skills add --list`)."""
    return kind_of(spec).offers(spec, ctx)


def _kind_for(origin: Mapping[str, Any]) -> SourceKind:
    for kind in SOURCE_KINDS:
        if kind.kind == origin.get("kind"):
            return kind
    raise KernelsError(
        f"unknown source kind {origin.get('kind')!r} in a receipt",
        "Upgrade kernel-skills, or reinstall the skill with `kernels skills add --force`.",
    )


def from_origin(origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
    """Re-resolve the source a receipt recorded (raises KernelsError if it is gone)."""
    return _kind_for(origin).from_origin(origin, ctx)


def is_remote(origin: Mapping[str, Any]) -> bool:
    """Whether checking this source for changes needs the network."""
    try:
        return _kind_for(origin).remote
    except KernelsError:
        return False


def unchanged(origin: Mapping[str, Any], ctx: SourceContext) -> str | None:
    """Why the source surely still holds what was installed (e.g. "pinned to 1a2b3c4"), when
    that can be told without fetching it; None when it has to be fetched and compared."""
    check = getattr(_kind_for(origin), "unchanged", None)
    return check(origin, ctx) if check else None


def bundled_names(root: Path) -> list[str]:
    """Names of the skill folders directly under ``root`` (folders that hold a SKILL.md)."""
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
