"""`kernels skills sync`: make every target the lock names hold exactly the locked tree.

For each locked skill and each of its targets, the install there either *matches* (a
clean install whose receipt has the locked digest and source, or a link to one) and is
left untouched, or it is installed / replaced through :mod:`.install`'s plan -> stage ->
atomic swap, with the same rules as ``add``: a clean install is replaced, an edited or
foreign one only with ``force`` (backed up first). Sources are consulted only for the
skills that need them, so a project that already matches costs one read of each
install's receipt and files, and no network.

The locked tree is fetched exactly: a bundled skill or folder whose tree hashes to the
locked digest, a Hub skill at the locked commit. When a source no longer provides it
(bundled version changed, folder edited, Hub commit gone), ``frozen`` refuses with one
line per mismatch; otherwise the entry is re-resolved (the bundled skill as shipped now,
the folder as it is, the branch or tag the source named) and the lock rewritten after
the trees are in place. A Hub commit whose tree does not hash to the locked digest is
always refused: a commit never changes, so the lock or the download was tampered with.
Everything is planned and every error gathered before anything is written.

``prune`` also removes managed installs (ones with a receipt) that the lock does not
list in that folder; folders kernels did not install are never touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import install, lockfile, sources
from .agents import Location, Target, dedupe, known_targets
from .errors import KernelsError
from .lockfile import Entry, Lock, Place
from .records import field, record, replace
from .safety import Refused
from .sources import SkillSource, SourceContext


class LockMismatch(KernelsError):
    """``--frozen`` found sources that no longer provide the locked trees; ``lines`` has one per skill."""

    def __init__(self, place: Place, lines: list[str]) -> None:
        self.lines = lines
        super().__init__(
            f"{len(lines)} skill(s) in {place.path} no longer match their sources and --frozen never re-resolves "
            f"({'; '.join(lines)}); nothing was changed",
            "Run `kernels skills sync` (without --frozen) to re-resolve them and rewrite the lock, then commit it.",
        )


@record
class Relocked:
    """An entry sync re-resolved: what the lock said, and what it says now."""

    name: str
    was: str
    now: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.name, "was": self.was, "now": self.now, "why": self.why}


@record
class SyncPlan:
    place: Place
    lock: Lock
    plan: install.Plan = field(default_factory=install.Plan)
    unchanged: list[tuple[str, Path]] = field(default_factory=list)  # (skill, path) already matching
    relocked: list[Relocked] = field(default_factory=list)
    new_entries: dict[str, Entry] = field(default_factory=dict)  # re-resolved entries to write back

    @property
    def lock_changes(self) -> bool:
        return bool(self.new_entries)


# --------------------------------------------------------------------------- matching


def matches(entry: Entry, dest: Path, origin: dict[str, Any]) -> bool:
    """Does ``dest`` hold exactly the locked tree (a clean install of it, or a link to one)?"""
    existing = install.inspect(dest)
    if existing.kind not in ("dir", "symlink") or existing.receipt is None:
        return False
    receipt = existing.receipt
    if receipt.skill != entry.name or receipt.digest != entry.digest or dict(receipt.source) != origin:
        return False
    if existing.kind == "symlink":
        return not receipt.changes(Path(os.path.realpath(dest)))
    return not existing.changes


# ----------------------------------------------------------------------------- sources


class _Mismatch(Exception):
    """The source no longer provides the locked tree (re-resolvable without --frozen)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def _check_digest(entry: Entry, source: SkillSource, what: str) -> SkillSource:
    if source.name != entry.name:
        raise _Mismatch(f"{entry.name}: {what} now holds the skill '{source.name}'")
    if source.digest != entry.digest:
        raise _Mismatch(f"{entry.name}: {what} no longer holds the locked tree (digest {source.digest[:12]}, locked {entry.digest[:12]})")
    return source


def locked_source(entry: Entry, place: Place, ctx: SourceContext) -> SkillSource:
    """The locked tree, verified against the locked digest; _Mismatch when the source no
    longer provides it, KernelsError when it cannot be had at all (or was tampered with)."""
    origin = lockfile.origin_of(entry, place)
    if entry.kind == "bundled":
        try:
            source = sources.Bundled().resolve(entry.name, ctx)[0]
        except KernelsError:
            raise _Mismatch(f"{entry.name}: this kernel-skills no longer bundles it (locked {entry.describe()})") from None
        if source.digest != entry.digest:
            now = source.info.version or "unversioned"
            raise _Mismatch(f"{entry.name}: the bundled skill is now {now}, the lock has {entry.describe()} (its tree differs)")
        return source
    if entry.kind == "local":
        folder = Path(str(origin["path"]))
        try:
            source = sources.LocalFolder().from_origin(origin, ctx)
        except KernelsError as exc:
            if isinstance(exc, Refused) or (folder / "SKILL.md").is_file():
                raise
            raise _Mismatch(f"{entry.name}: the folder {entry.resolved['path']} is gone") from None
        return replace(_check_digest(entry, source, f"the folder {entry.resolved['path']}"), origin=origin)
    from . import hub

    pinned = hub.parse_uri(str(entry.resolved["uri"]))
    try:
        found = hub.resolve(pinned, ctx, select=[sources.ALL])
    except hub.RevisionGone:
        raise _Mismatch(f"{entry.name}: commit {pinned.revision} is gone from {pinned.repo_id}") from None
    if len(found) != 1:
        raise KernelsError(
            f"{pinned.uri()} holds {len(found)} skills at the locked commit, not the one skill '{entry.name}'",
            f"Fix {place.path}, or re-add the skill.",
        )
    source = found[0]
    if source.name != entry.name or source.digest != entry.digest:
        raise KernelsError(
            f"{entry.name}: the tree at the locked commit {pinned.revision[:7] if pinned.revision else ''} does not match "
            f"{place.path} (digest {source.digest[:12]}, locked {entry.digest[:12]}); the lock or the download was tampered "
            "with, and nothing was written",
            "Restore the lock from version control (or re-add the skill to re-lock it); `hf cache delete` clears a damaged cache.",
        )
    return replace(source, origin=origin)


def reresolve(entry: Entry, place: Place, ctx: SourceContext) -> tuple[Entry, SkillSource]:
    """The entry as its source provides it now (the lock's targets and source kept)."""
    if entry.kind == "bundled":
        source = sources.Bundled().resolve(entry.name, ctx)[0]
        origin: dict[str, Any] = dict(source.origin)
    elif entry.kind == "local":
        origin = lockfile.origin_of(entry, place)
        source = sources.LocalFolder().from_origin(origin, ctx)
    else:
        from . import hub

        pinned = hub.parse_uri(str(entry.resolved["uri"]))
        revision = entry.resolved.get("revision")
        tracked = hub.HubRef(pinned.repo_type, pinned.repo_id, None if revision is None else str(revision), pinned.path)
        if tracked.pinned:
            raise KernelsError(
                f"{entry.name}: the lock pins commit {tracked.revision}, and it is gone from {tracked.repo_id}",
                f"Point the skill at a branch or tag that exists (`kernels skills add hf://... --force`), then commit {lockfile.LOCK_FILE}.",
            )
        found = hub.resolve(tracked, ctx, select=[sources.ALL])
        if len(found) != 1 or found[0].name != entry.name:
            raise KernelsError(
                f"{tracked.uri()} no longer holds just the skill '{entry.name}'", "Re-add the skill from where it lives now."
            )
        source = found[0]
        origin = dict(source.origin)
    if source.name != entry.name:
        raise KernelsError(f"{entry.name}: its source now holds the skill '{source.name}'", "Re-add the skill from where it lives now.")
    resolved = lockfile.resolved_of(origin, source.info.version, entry.name, place)
    if isinstance(resolved, str):
        raise KernelsError(f"{entry.name} cannot be re-locked: {resolved}", "Move the skill into the project, or publish it to the Hub.")
    new = Entry(entry.name, entry.source, resolved, source.digest, list(entry.agents), list(entry.dests))
    return new, replace(source, origin=lockfile.origin_of(new, place))


# ------------------------------------------------------------------------------- plan


def plan_sync(
    place: Place, loc: Location, ctx: SourceContext, *, frozen: bool = False, prune: bool = False, force: bool = False
) -> SyncPlan:
    """Everything sync would do; raises (having written nothing) on any error."""
    if not os.path.lexists(place.path):
        where = "the current folder" if place.scope == "project" else "the user state folder"
        raise KernelsError(
            f"no {lockfile.LOCK_FILE} in {where} ({place.path})",
            "Run sync in the project's root folder; `kernels skills add` creates the lock.",
        )
    lock = lockfile.read(place.path)
    result = SyncPlan(place, lock)
    errors: list[KernelsError] = []
    mismatches: list[str] = []
    for name in sorted(lock.entries):
        entry = lock.entries[name]
        targets = place.targets(entry, loc)
        origin = lockfile.origin_of(entry, place)
        todo = [t for t in targets if not matches(entry, t.path / name, origin)]
        if not todo:
            result.unchanged += [(name, t.path / name) for t in targets]
            continue
        try:
            source = locked_source(entry, place, ctx)
        except _Mismatch as mismatch:
            if frozen:
                mismatches.append(mismatch.line)
                continue
            try:
                entry, source = reresolve(entry, place, ctx)
            except KernelsError as exc:
                errors.append(exc)
                continue
            result.new_entries[name] = entry
            result.relocked.append(Relocked(name, lock.entries[name].describe(), entry.describe(), mismatch.line.split(": ", 1)[1]))
            origin = lockfile.origin_of(entry, place)
            todo = [t for t in targets if not matches(entry, t.path / name, origin)]
        except KernelsError as exc:
            errors.append(exc)
            continue
        copies = {os.path.realpath(t.path / name) for t in targets if not os.path.islink(t.path / name)}
        for target in todo:
            dest = target.path / name
            if os.path.islink(dest) and os.path.realpath(dest) in copies:
                todo.remove(target)  # a --link install: it follows the copy it points to, which sync fixes
        result.unchanged += [(name, t.path / name) for t in targets if t not in todo]
        for target in todo:
            existing = install.inspect(target.path / name)
            # A clean install of ours is replaced as `update` would; anything else as `add --force` would.
            clean = existing.kind == "dir" and existing.receipt is not None and not existing.changes
            try:
                sub = install.plan_add([source], [target], force=force or clean)
            except KernelsError as exc:
                errors.append(exc)
                continue
            result.plan.actions += sub.actions
    if mismatches:
        raise LockMismatch(place, mismatches)
    if prune:
        try:
            result.plan.actions += _prune(lock, place, loc, force=force)
        except KernelsError as exc:
            errors.append(exc)
    if errors:
        raise _combine(errors)
    return result


def _combine(errors: list[KernelsError]) -> KernelsError:
    if len(errors) == 1:
        return errors[0]
    fixes = list(dict.fromkeys(e.fix for e in errors if e.fix))
    return KernelsError(f"nothing was changed: {'; '.join(e.what for e in errors)}", " ".join(fixes))


def _prune(lock: Lock, place: Place, loc: Location, *, force: bool) -> list[install.Action]:
    """Remove actions for managed installs in the scanned folders that the lock does not list there."""
    scope = "global" if place.scope == "global" else "project"
    listed: set[tuple[str, str]] = set()
    lock_targets: list[Target] = []
    for entry in lock.entries.values():
        for target in place.targets(entry, loc):
            listed.add((entry.name, os.path.realpath(target.path)))
            lock_targets.append(target)
    folders = dedupe([*known_targets(loc, scopes=(scope,)), *(t for t in lock_targets if t.scope == "dest")])
    actions: list[install.Action] = []
    errors: list[KernelsError] = []
    for item in install.find_installs(folders):
        if item.receipt is None or item.receipt.skill != item.name:
            continue  # not ours: never pruned
        if (item.name, os.path.realpath(item.target.path)) in listed:
            continue
        action = install.Action("remove", item.name, item.path, item.target)
        action.existing = install.inspect(item.path)
        if action.existing.user_owned and not force:
            errors.append(
                KernelsError(
                    f"{item.path} is not in {lockfile.LOCK_FILE} and is {action.existing.describe()}",
                    "Re-run with --force to prune it too (it is backed up first).",
                )
            )
            continue
        actions.append(action)
    if errors:
        raise _combine(errors)
    return actions


# ------------------------------------------------------------------------------ apply


def apply_sync(result: SyncPlan, *, state_dir: Path | Callable[[], Path], force: bool = False) -> None:
    """Write the trees (all or none), then the re-resolved entries into the lock."""
    install.apply(result.plan, state_dir=state_dir, force=force)
    if not result.new_entries:
        return

    def merge(lock: Lock) -> None:
        # Another command may have changed the lock meanwhile: keep its targets, take our trees.
        for name, entry in result.new_entries.items():
            current = lock.entries.get(name)
            if current is None:
                continue  # removed meanwhile: leave it removed
            current.resolved, current.digest = entry.resolved, entry.digest

    lockfile.edit(result.place.path, merge)
