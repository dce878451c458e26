"""Install, update and remove skills: plan -> preflight -> stage -> atomic swap.

Every change to a skills folder happens like this:

1. *Plan and preflight* (read-only): resolve every destination, refuse anything that
   would fail (a file in the way, an install without ``--force``, an unwritable folder,
   an invalid skill), so that a run either does all of its work or none of it.
2. *Stage*, holding a lock on each skills folder: copy each skill into
   ``<skills>/.kernel-skills-tmp/new-<skill>-<token>`` beside its destination (the same
   filesystem, so the final rename is atomic), write its receipt, and copy user-edited
   trees that are about to be replaced into a backup under the user state dir.
3. *Commit*: rename each staged tree into place. Over an existing install, Linux's
   ``renameat2(RENAME_EXCHANGE)`` or macOS' ``renamex_np(RENAME_SWAP)`` swaps old and new
   in one step, so the path always holds one complete tree; elsewhere (Windows, and
   filesystems without those flags) the old tree is renamed to ``old-<skill>-<token>``
   first and the next run restores it if the process died between the two renames. If
   any commit fails, the earlier ones are swapped back.
4. *Finish*: delete the old trees and the temp folder.

:func:`recover` (run under the lock at the start of every write) cleans up after a run
that was killed: ``old-*`` trees go back where they were if their destination is
missing; everything else in the temp folder is deleted.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from . import backups, fsops, interrupts, portable, receipts, sources
from .agents import Target
from .errors import KernelsError
from .receipts import RECEIPT_FILE, Receipt
from .records import field, record
from .safety import Refused
from .skill import SKILL_FILE, check_name, is_ignored, read_info, validate, walk
from .sources import SkillSource, SourceContext

TMP_DIR = ".kernel-skills-tmp"
BACKUP_DIR = "backups"
LOCK_DIR = "locks"  # lock files, where there is no flock (Windows): see locking.py


def _state(state_dir: Path | Callable[[], Path]) -> Path:
    return state_dir() if callable(state_dir) else state_dir


def _lock_dir(state_dir: Path | Callable[[], Path]) -> Path:
    return _state(state_dir) / LOCK_DIR


# ------------------------------------------------------------------------ what is there


@record
class Existing:
    """What a destination path holds right now."""

    kind: str = "none"  # "none", "dir", "symlink" or "file"
    receipt: Receipt | None = None
    changes: list[str] = field(default_factory=list)  # files that differ from the receipt
    link_target: str | None = None
    damaged_receipt: bool = False  # a .kernel-skills.json that cannot be read

    @property
    def user_owned(self) -> bool:
        """A real folder whose content is not exactly what we installed: never delete it unbacked."""
        return self.kind == "dir" and (self.receipt is None or bool(self.changes))

    def describe(self) -> str:
        if self.kind == "symlink":
            return f"a symlink to {self.link_target}"
        if self.kind == "dir" and self.damaged_receipt:
            return f"a folder whose receipt ({RECEIPT_FILE}) is damaged, so its files cannot be told from your edits"
        if self.kind == "dir" and self.receipt is None:
            return "a folder kernels did not install"
        if self.kind == "dir" and self.changes:
            return f"an install with local edits to {_few(self.changes)}"
        return "an install" if self.kind == "dir" else self.kind


def inspect(dest: Path) -> Existing:
    """Look at ``dest`` without following a symlink there."""
    if not os.path.lexists(dest):
        return Existing()
    if fsops.is_link(dest):  # a symlink, or a junction (Windows), never looked into as a folder
        receipt = receipts.read(dest) if os.path.isdir(dest) else None
        return Existing("symlink", receipt, link_target=os.readlink(dest))
    if os.path.isdir(dest):
        receipt = receipts.read(dest)
        return Existing("dir", receipt, receipt.changes(dest) if receipt else [], damaged_receipt=receipts.damaged(dest, receipt))
    return Existing("file")


def _few(paths: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


# ---------------------------------------------------------------------------- the plan


@record(eq=False)
class Action:
    """One change to one path: install, replace or remove ``dest``."""

    op: str  # "install", "replace" or "remove"
    skill: str
    dest: Path
    target: Target
    source: SkillSource | None = None
    link_to: Path | None = None  # --link: point at this install instead of copying
    existing: Existing = field(default_factory=Existing)
    backup_path: Path | None = None
    linked: bool = False
    note: str | None = None
    # Bookkeeping while applying; see _commit() and _rollback().
    _stage: Path | None = field(default=None, repr=False)
    _leftover: Path | None = field(default=None, repr=False)
    _mode: str | None = field(default=None, repr=False)
    _readonly_mode: int | None = field(default=None, repr=False)  # see _Run.make_movable()

    @property
    def needs_backup(self) -> bool:
        return self.op in ("replace", "remove") and self.existing.user_owned

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "skill": self.skill,
            "path": str(self.dest),
            "scope": self.target.scope,
            "agents": list(self.target.agents),
            "previous": self.existing.kind,
            "edited_files": list(self.existing.changes),
            "backup": str(self.backup_path) if self.backup_path else None,
            "link_to": str(self.link_to) if self.link_to and self.linked else None,
            "note": self.note,
            "source": dict(self.source.origin) if self.source is not None else None,
        }


@record
class Skipped:
    skill: str
    path: Path
    reason: str
    failed: bool = False  # could not be checked (source unreachable or gone), not a choice to leave it

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill, "path": str(self.path), "reason": self.reason, "failed": self.failed}


@record
class Plan:
    actions: list[Action] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _combine(errors: list[KernelsError]) -> KernelsError:
    if len(errors) == 1:
        return errors[0]
    fixes: list[str] = []
    for error in errors:
        if error.fix and error.fix not in fixes:
            fixes.append(error.fix)
    whats = "; ".join(e.what for e in errors)
    return KernelsError(f"nothing was changed: {whats}", " ".join(fixes), usage=all(e.usage for e in errors))


def _check_folder(folder: Path) -> KernelsError | None:
    """Can a skill be written into ``folder`` (creating it if needed)?"""
    probe = folder
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    if os.path.islink(probe) and not os.path.exists(probe):
        return KernelsError(f"{probe} is a broken symlink", "Fix or remove the link, then re-run.")
    if not probe.is_dir():
        return KernelsError(f"{probe} is a file, not a folder", "Choose another target, or move the file away.")
    if not os.access(probe, os.W_OK | os.X_OK):
        return KernelsError(f"cannot write to {probe} (permission denied)", "Choose a folder you can write to, or fix its permissions.")
    tmp = folder / TMP_DIR
    if os.path.lexists(tmp) and not (os.path.isdir(tmp) and not os.path.islink(tmp)):
        return KernelsError(f"{tmp} is in the way: kernels stages its copies in a folder of that name", "Move or delete it, then re-run.")
    return None


def _folder_errors(actions: Sequence[Action]) -> list[KernelsError]:
    """_check_folder for each folder the actions change: replacing or removing a skill
    stages it in a temp folder beside it, so the folder must be writable, said up front."""
    return [e for folder in dict.fromkeys(a.target.path for a in actions) if (e := _check_folder(folder))]


def _check_dest(action: Action, *, force: bool, existing: Existing | None = None) -> KernelsError | None:
    """Inspect ``action.dest`` and decide install vs replace; an error if neither is allowed."""
    existing = action.existing = existing if existing is not None else inspect(action.dest)
    if existing.kind == "file":
        return KernelsError(f"{action.dest} is a file, not a skill folder", "Move or delete it, then re-run.")
    if existing.kind == "none":
        action.op = "install"
        return None
    if not force:
        backed = " (your version is backed up first)" if existing.user_owned else ""
        fix = f"Re-run with --force to replace it{backed}."
        if existing.kind == "dir" and not existing.user_owned and _same_source(existing.receipt, action):
            # A clean install from this very source, now out of date: updating is the usual wish.
            fix = (
                f"Run `kernels skills update {action.skill} {_target_flags(action.target)}` to bring it up to date, "
                "or re-run with --force to replace it."
            )
        return KernelsError(f"{action.dest} already exists ({existing.describe()})", fix)
    action.op = "replace"
    return None


def _target_flags(target: Target) -> str:
    """The command-line flags that name ``target`` again (for a hint the user can paste)."""
    import shlex

    if target.scope == "dest":
        return f"--dest {shlex.quote(str(target.path))}"
    flags = " ".join(f"--{name}" for name in target.agents)
    return f"{flags} -g" if target.scope == "global" else flags


def _identical(action: Action, existing: Existing) -> bool:
    """Does ``action.dest`` already hold exactly what the action would write?

    A clean install of the same skill from the same source with the same bytes, or (with
    --link) a symlink that already resolves to the copy it would point at. Adding it again
    is then a no-op that succeeds, as `pip install` of an installed package does, so a
    provisioning script can run the same `add` every time.
    """
    if existing.kind == "symlink":
        return action.link_to is not None and os.path.realpath(action.dest) == os.path.realpath(action.link_to)
    if existing.kind != "dir" or existing.changes or action.link_to is not None:
        return False  # (a copy where --link asked for a link is not what was asked for)
    receipt, source = existing.receipt, action.source
    return receipt is not None and source is not None and _same_source(receipt, action) and receipt.digest == source.digest


_IDENTICAL = "already installed ({what}); nothing to do, --force reinstalls it"


def _identical_what(action: Action, existing: Existing) -> str:
    return f"a link to {action.link_to}" if existing.kind == "symlink" else "unedited and identical to its source"


def _same_source(receipt: Receipt | None, action: Action) -> bool:
    """Was the install behind ``receipt`` made from the skill and source ``action`` installs?"""
    source = action.source
    return receipt is not None and source is not None and receipt.skill == action.skill and dict(receipt.source) == dict(source.origin)


def _validated(source: SkillSource) -> None:
    report = validate(source.path)
    if not report.ok:
        origin = f" from {source.display}" if source.origin.get("kind") != "bundled" else ""
        raise KernelsError(
            f"skill '{source.name}'{origin} is not valid: {report.summary}",
            f"Run `kernels skills validate {source.display if origin else source.path}` for details; nothing was installed.",
        )


def _inside(path: Path, root: Path) -> bool:
    path_r, root_r = os.path.realpath(path), os.path.realpath(root)
    return path_r == root_r or path_r.startswith(root_r.rstrip(os.sep) + os.sep)


def plan_add(skill_sources: Sequence[SkillSource], targets: Sequence[Target], *, force: bool = False, link: bool = False) -> Plan:
    """Preflight installing every skill into every target; raises before anything is written."""
    if not targets:
        raise KernelsError("no target folder", "Pick one with an agent flag (--claude, ...) or --dest DIR.", usage=True)
    for source in skill_sources:
        _validated(source)
    folder_errors = {t.path: e for t in targets if (e := _check_folder(t.path))}
    errors = list(folder_errors.values())
    plan = Plan()
    for source in skill_sources:
        first: Path | None = None
        for target in targets:
            action = Action("install", source.name, target.path / source.name, target, source)
            if _inside(action.dest, source.path) or _inside(source.path, action.dest):
                errors.append(KernelsError(f"{action.dest} overlaps the skill's own source {source.path}", "Choose another target."))
                continue
            if link and first is not None:
                action.link_to = first
            first = first or action.dest
            if target.path in folder_errors:
                plan.actions.append(action)
                continue
            existing = inspect(action.dest)
            if not force and _identical(action, existing):
                plan.skipped.append(Skipped(source.name, action.dest, _IDENTICAL.format(what=_identical_what(action, existing))))
                continue
            if error := _check_dest(action, force=force, existing=existing):
                errors.append(error)
            plan.actions.append(action)
    if not errors:
        trees = _measure(plan.actions)
        errors += _check_space(plan.actions, trees)
        errors += _check_path_lengths(plan.actions, trees)
    if errors:
        raise _combine(errors)
    return plan


def _measure(actions: Sequence[Action]) -> dict[Path, tuple[int, str]]:
    """Each tree the actions copy: its files' bytes and its longest relative path (one walk)."""
    trees: dict[Path, tuple[int, str]] = {}
    for action in actions:
        if action.source is None or action.link_to is not None or action.source.path in trees:
            continue
        size, longest = 0, ""
        for rel, entry in walk(action.source.path):
            if len(rel) > len(longest):
                longest = rel
            if entry.is_file(follow_symlinks=False):
                size += entry.stat(follow_symlinks=False).st_size
        trees[action.source.path] = (size, longest)
    return trees


def _check_path_lengths(actions: Sequence[Action], trees: dict[Path, tuple[int, str]] | None = None) -> list[KernelsError]:
    """Refuse up front a file whose path (while staged, the longest it gets) is longer than
    this OS takes: 259 characters on Windows without long paths, where the copy would
    otherwise fail half-way."""
    limit = portable.path_limit()
    trees = _measure(actions) if trees is None else trees
    errors = []
    for action in actions:
        if action.source is None or action.link_to is not None:
            continue
        longest = trees[action.source.path][1]
        staged = os.path.join(os.path.abspath(action.target.path), TMP_DIR, f"new-{action.skill}-{'0' * 8}", *longest.split("/"))
        if len(staged) > limit:
            errors.append(
                KernelsError(
                    f"{action.dest / longest} is too long a path here: {len(staged)} characters while it is staged, over the {limit} this system takes",
                    "Install into a folder with a shorter path (--dest), or turn on long paths (Windows: LongPathsEnabled).",
                )
            )
    return errors


def _check_space(actions: Sequence[Action], trees: dict[Path, tuple[int, str]]) -> list[KernelsError]:
    """Refuse up front when a copy cannot fit, rather than failing halfway (and rolling back)."""
    need: dict[Path, int] = {}
    for action in actions:
        if action.source is None or action.link_to is not None:
            continue
        probe = action.target.path
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        need[probe] = need.get(probe, 0) + trees[action.source.path][0] + (1 << 16)
    errors = []
    for probe, size in need.items():
        try:
            usage = shutil.disk_usage(probe)
        except OSError:
            continue
        if usage.total == 0:
            continue  # a filesystem that reports no size at all (some FUSE drivers): unknown, not full
        free = usage.free
        if free < size:
            errors.append(
                KernelsError(f"not enough free space in {probe} ({free:,} bytes free, {size:,} needed)", "Free some space and re-run.")
            )
    return errors


# ----------------------------------------------------------------------------- update


@record
class Installed:
    """A skill found in a skills folder."""

    name: str
    path: Path
    target: Target
    kind: str  # "dir", "link" or "broken-link"
    receipt: Receipt | None = None
    changes: list[str] = field(default_factory=list)
    version: str | None = None
    link_target: str | None = None
    status: str | None = None  # "current", "outdated", "source missing" (managed installs only)
    damaged_receipt: bool = False  # unmanaged because its .kernel-skills.json cannot be read
    problem: str | None = None  # it (or its skills folder) could not be read: shown, never skipped silently

    @property
    def managed(self) -> bool:
        return self.receipt is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.name,
            "path": str(self.path),
            "scope": self.target.scope,
            "agents": list(self.target.agents),
            "kind": self.kind,
            "managed": self.managed,
            "receipt_damaged": self.damaged_receipt,
            "modified": bool(self.changes) if self.kind == "dir" and self.managed else None,
            "edited_files": list(self.changes),
            "version": self.version,
            "status": self.status,
            "link_target": self.link_target,
            "source": dict(self.receipt.source) if self.receipt else None,
            "problem": self.problem,
        }


def find_installs(targets: Sequence[Target], names: Sequence[str] | None = None) -> list[Installed]:
    """Every skill folder (or link to one) in ``targets``, optionally only ``names``.

    A skills folder or an install that cannot be read is listed with its ``problem``
    (kind "unreadable" for a whole folder) instead of ending the search: one bad folder
    must not hide every other install."""
    found: list[Installed] = []
    for target in targets:
        try:
            entries = sorted(os.scandir(target.path), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            if not names:
                found.append(Installed("?", target.path, target, "unreadable", problem=f"cannot read {target.path}: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith(".") or is_ignored(entry.name) or (names and entry.name not in names):
                continue
            try:
                item = _installed(entry, target)
            except OSError as exc:
                where = exc.filename if isinstance(exc.filename, str) else entry.path
                item = Installed(entry.name, Path(entry.path), target, "dir", problem=f"cannot read {where}: {exc.strerror}")
            if item is not None:
                found.append(item)
    return found


def _installed(entry: os.DirEntry[str], target: Target) -> Installed | None:
    path = Path(entry.path)
    if entry.is_symlink() or fsops.is_link(path):
        kind = "link" if path.exists() else "broken-link"
    elif entry.is_dir():
        kind = "dir"
    else:
        return None
    if kind != "broken-link" and not ((path / SKILL_FILE).is_file() or (path / RECEIPT_FILE).is_file()):
        return None
    item = Installed(entry.name, path, target, kind)
    if kind != "broken-link":
        item.receipt = receipts.read(path)
    if kind != "dir":
        item.link_target = os.readlink(path)
    if item.receipt is not None:
        item.version = item.receipt.version
        if kind == "dir":
            item.changes = item.receipt.changes(path)
    elif kind != "broken-link":
        item.damaged_receipt = receipts.damaged(path, None)
        try:
            item.version = read_info(path).version
        except KernelsError:
            item.version = None
    return item


def source_digests(installs: Sequence[Installed], ctx: SourceContext) -> None:
    """Mark each managed install current or outdated against its source."""
    cache: dict[str, str] = {}
    for item in installs:
        if item.receipt is None or item.problem:
            continue
        if sources.is_remote(item.receipt.source):
            item.status = "unchecked"  # asking the Hub is `update`'s job, not `list`'s
            continue
        try:
            source = sources.from_origin(item.receipt.source, ctx)
        except Refused:
            item.status = "source refused"  # it now fails the untrusted-tree checks
            continue
        except KernelsError:
            item.status = "source missing"
            continue
        key = str(source.path)
        if key not in cache:
            cache[key] = source.digest
        item.status = "current" if cache[key] == item.receipt.digest else "outdated"


def plan_update(targets: Sequence[Target], ctx: SourceContext, *, names: Sequence[str] | None = None, force: bool = False) -> Plan:
    """Re-install managed skills whose source changed; skip (and say why) everything else."""
    for name in names or ():
        check_name(name)
    installs = find_installs(targets, names)
    if names:
        missing = [n for n in names if not any(i.name == n for i in installs)]
        if missing:
            raise KernelsError(
                f"{', '.join(missing)} is not installed in {_where(targets)}",
                f"Install it with `kernels skills add {missing[0]}`, or pick the right folder (--global, an agent flag, --dest).",
            )
    plan = Plan()
    for item in installs:
        if item.problem:
            plan.skipped.append(Skipped(item.name, item.path, item.problem, failed=True))
            continue
        if item.kind != "dir":
            plan.skipped.append(Skipped(item.name, item.path, f"a link to {item.link_target}; update its target instead"))
            continue
        if item.receipt is None:
            why = (
                f"its receipt ({RECEIPT_FILE}) is damaged; re-install it with `kernels skills add {item.name} {_target_flags(item.target)} --force` "
                "(or its folder or Hub source instead of the name; the folder is backed up first)"
                if item.damaged_receipt
                else "not installed by kernels; left alone"
            )
            # Damaged: most likely ours, and now stuck at its old version; a CI step must notice (exit 1).
            plan.skipped.append(Skipped(item.name, item.path, why, failed=item.damaged_receipt))
            continue
        origin = item.receipt.source
        try:
            current = sources.unchanged(origin, ctx)
            if current is not None and not item.changes:
                plan.skipped.append(Skipped(item.name, item.path, f"up to date ({item.version or 'unversioned'}; {current})"))
                continue
            source = sources.from_origin(origin, ctx)
        except KernelsError as exc:
            plan.skipped.append(Skipped(item.name, item.path, exc.what, failed=True))
            continue
        if source.name != item.name:
            plan.skipped.append(
                Skipped(
                    item.name,
                    item.path,
                    f"its source {source.display} now holds the skill '{source.name}'; install that with `kernels skills add`",
                )
            )
            continue
        # A new commit that left this skill's files alone still updates the receipt.
        same = source.digest == item.receipt.digest and dict(source.origin) == dict(origin)
        if same and not item.changes:
            plan.skipped.append(Skipped(item.name, item.path, f"up to date ({item.version or 'unversioned'})"))
            continue
        if item.changes and not force:
            plan.skipped.append(
                Skipped(item.name, item.path, f"has local edits to {_few(item.changes)}; re-run with --force to back them up and update")
            )
            continue
        try:
            _validated(source)
        except KernelsError as exc:
            # One broken source must not hold back the others: listed as failed, exit 1.
            plan.skipped.append(Skipped(item.name, item.path, exc.what, failed=True))
            continue
        action = Action("replace", item.name, item.path, item.target, source)
        action.existing = Existing("dir", item.receipt, item.changes)
        plan.actions.append(action)
    errors = _folder_errors(plan.actions) + _check_path_lengths(plan.actions)
    if errors:
        raise _combine(errors)
    return plan


def _dangling_link_of(link: Path, name: str) -> bool:
    """Is ``link`` a broken symlink to a folder named ``name`` (what `add --link` makes:
    ``../../.claude/skills/NAME``) whose copy is gone?"""
    if os.path.exists(link):
        return False
    target = os.readlink(link)
    return os.path.basename(target.rstrip("/\\")) == name and not os.path.isabs(target)


def _not_installed(name: str, targets: Sequence[Target], elsewhere: Sequence[Target]) -> KernelsError:
    """The error for a skill that is not in ``targets``, with where it is, or the closest name."""
    what = f"'{name}' is not installed in {_where(targets)}"
    there = [item.path for item in find_installs(elsewhere, [name])]
    if there:
        scope = "user" if any(t.scope == "global" for t in elsewhere) else "project"
        flag = "add -g / --global" if scope == "user" else "drop -g / --global"
        return KernelsError(f"{what}; it is installed in {', '.join(str(p) for p in there[:3])}", f"To remove it there, {flag}.")
    installed = sorted({item.name for item in find_installs(targets)})
    import difflib  # deferred: only a mistyped name needs it

    close = difflib.get_close_matches(name, installed, n=1, cutoff=0.6)
    if close:
        return KernelsError(what, f"Did you mean '{close[0]}'? Run `kernels skills list` to see what is installed.")
    return KernelsError(what, "Run `kernels skills list` to see where it is.")


def links_into(removed: Sequence[Path], targets: Sequence[Target]) -> list[Path]:
    """Symlinked installs in ``targets`` that point at one of the ``removed`` folders."""
    real = {os.path.realpath(p) for p in removed}
    return [
        item.path
        for item in find_installs(targets)
        if item.link_target is not None and os.path.realpath(item.path.parent / item.link_target) in real
    ]


def _where(targets: Sequence[Target]) -> str:
    paths = [str(t.path) for t in targets]
    return ", ".join(paths[:4]) + (f" or {len(paths) - 4} other folders" if len(paths) > 4 else "")


# ----------------------------------------------------------------------------- remove


def plan_remove(names: Sequence[str], targets: Sequence[Target], *, force: bool = False, elsewhere: Sequence[Target] = ()) -> Plan:
    """Preflight removing ``names`` from ``targets``: only what kernels installed, unless --force.

    ``elsewhere``: the folders of the other scope (user folders for a project-scope remove,
    and the reverse), searched only to say where a skill that is not in ``targets`` is.
    """
    plan = Plan()
    errors: list[KernelsError] = []
    for name in names:
        check_name(name)
        found = False
        for target in targets:
            action = Action("remove", name, target.path / name, target)
            existing = action.existing = inspect(action.dest)
            if existing.kind == "none":
                continue
            found = True
            ours = existing.receipt is not None and existing.receipt.skill == name
            if existing.kind == "file":
                errors.append(KernelsError(f"{action.dest} is a file, not a skill", "Delete it yourself if you mean to."))
                continue
            if existing.kind == "symlink" and not ours and _dangling_link_of(action.dest, name):
                # What `add --link` made, pointing at a copy that has since been removed: the
                # link holds nothing of the user's, and removing it is what was asked.
                action.note = f"it linked to {existing.link_target}, which was already gone"
            elif not force and existing.kind == "symlink" and not ours:
                broken = not os.path.exists(action.dest)
                errors.append(
                    KernelsError(
                        f"{action.dest} is a {'broken ' if broken else ''}symlink to {existing.link_target}"
                        + (", which does not exist" if broken else ", a folder kernels did not install"),
                        "Re-run with --force to remove the link (the folder it points to is left alone).",
                    )
                )
                continue
            if not force and existing.user_owned:
                errors.append(
                    KernelsError(f"{action.dest} is {existing.describe()}", "Re-run with --force to remove it (it is backed up first).")
                )
                continue
            plan.actions.append(action)
        if not found:
            errors.append(_not_installed(name, targets, elsewhere))
    errors += _folder_errors(plan.actions)
    if errors:
        raise _combine(errors)
    return plan


# ------------------------------------------------------------------------------- apply


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """Hold SIGINT/SIGTERM (and SIGBREAK) until a commit step and its bookkeeping are both done.

    The signal is delivered right after, so Ctrl-C still works; it just cannot land
    between a rename and the record that it happened. See interrupts.py for how, per OS.
    """
    with interrupts.deferred(tuple(fsops.HOOKS)):
        yield


_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


@contextmanager
def _out_of_space(where: str, *, backup: bool = False) -> Iterator[None]:
    """Say which disk filled up: the skills folder's, or the backup folder's (often another)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        fix = "Free some space there and re-run; nothing was changed."
        if backup:
            fix = (
                "Free some space there (`kernels skills backups prune --keep 1` deletes old backups) or point "
                "XDG_STATE_HOME at a disk with room, then re-run; nothing was changed."
            )
        writing = f" writing {exc.filename}" if exc.filename else ""
        raise KernelsError(f"{where} is out of space ({exc.strerror}{writing})", fix) from exc


def _token() -> str:
    return os.urandom(4).hex()


def _umask() -> int:
    # Python has no getter: set and restore (the CLI is single-threaded here).
    current = os.umask(0o022)
    os.umask(current)
    return current


def _file_mode(mode: int, umask: int) -> int:
    # Keep the permission bits (scripts stay executable), let the owner edit the copy, and
    # apply the user's umask as cp and pip do: a world-writable file in a downloaded skill
    # must not stay world-writable in the agent's folder.
    return ((stat.S_IMODE(mode) & 0o777) & ~umask) | 0o600


def _dir_mode(mode: int, umask: int) -> int:
    return ((stat.S_IMODE(mode) & 0o777) & ~umask) | 0o700


def copy_tree(
    src: Path,
    dst: Path,
    materialized: list[str] | None = None,
    *,
    everything: bool = False,
    lf_files: dict[str, str] | None = None,
) -> dict[str, str]:
    """Copy ``src`` into the new folder ``dst``: bytes, modes and in-tree symlinks.

    Returns the manifest (relative path -> sha256 or symlink target) of what was written;
    ``lf_files`` gets, for each copied text file with CRLF, its sha256 with LF (a receipt's).
    Receipts are not copied, and neither is regenerable clutter (``__pycache__``), unless
    ``everything`` (a backup of an install: every file in it may be the user's, and its
    receipt makes a restored copy a managed install again). Where symlinks cannot be made
    (Windows without Developer Mode, FAT), a link is copied as what it points to (it stays
    inside the tree: safety.py checked) and its path is appended to ``materialized``.
    """
    fsops.make_dir(str(dst), 0o700)
    umask = _umask()
    files: dict[str, str] = {}
    dir_modes: list[tuple[str, int]] = []
    for rel, entry in walk(src, everything=everything):
        if rel == RECEIPT_FILE and not everything:
            continue
        out = os.path.join(dst, rel)
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            link = os.readlink(entry.path)
            try:
                fsops.symlink(link, out, is_dir=os.path.isdir(entry.path))
                files[rel] = "symlink:" + link
            except (OSError, NotImplementedError) as exc:
                if not fsops.symlinks_refused(exc):
                    raise
                files.update(_copy_link_target(entry.path, out, rel, umask, materialized))
        elif stat.S_ISDIR(st.st_mode):
            fsops.make_dir(out, 0o700)
            dir_modes.append((out, _dir_mode(st.st_mode, umask)))
        elif stat.S_ISREG(st.st_mode):
            if lf_files is None:
                files[rel] = fsops.write_file(entry.path, out, _file_mode(st.st_mode, umask))
            else:
                files[rel], lf = fsops.copy_file(entry.path, out, _file_mode(st.st_mode, umask))
                if lf is not None:
                    lf_files[rel] = lf
    for folder, mode in reversed(dir_modes):
        fsops.chmod(folder, mode)
    fsops.chmod(str(dst), _dir_mode(os.stat(src).st_mode, umask))
    return files


def _copy_link_target(link: str, out: str, rel: str, umask: int, materialized: list[str] | None) -> dict[str, str]:
    """Copy what the in-tree symlink ``link`` points to into ``out``; its manifest entries."""
    target = os.path.realpath(link)
    if os.path.isdir(target):
        if _inside(Path(os.path.dirname(link)), Path(target)):
            raise KernelsError(
                f"{rel} links to a folder that holds it, so it cannot be copied as a folder here",
                "Symlinks are not allowed on this system; replace the link with a copy in the skill.",
            )
        inner = copy_tree(Path(target), Path(out), materialized)
        if materialized is not None:
            materialized.append(rel)
        return {f"{rel}/{path}": value for path, value in inner.items()}
    if materialized is not None:
        materialized.append(rel)
    return {rel: fsops.write_file(target, out, _file_mode(os.stat(target).st_mode, umask))}


def _folder_key(folder: Path) -> str:
    import hashlib

    return hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:12]


class _Run:
    """One apply(): what it made, so a failure can undo exactly that."""

    def __init__(self, plan: Plan, state_dir: Path | Callable[[], Path], *, force: bool) -> None:
        self.plan = plan
        self._state_dir = state_dir
        self.force = force
        self.created: list[Path] = []
        self.backups: list[Path] = []
        self.committed: list[Action] = []

    @property
    def state_dir(self) -> Path:
        return _state(self._state_dir)

    def tmp(self, action: Action) -> Path:
        return action.target.path / TMP_DIR

    # -- staging

    def stage(self, action: Action) -> None:
        tmp = self.tmp(action)
        if not os.path.isdir(tmp):
            fsops.make_dir(str(tmp), 0o700)
        if action.needs_backup:
            self.backup(action)
        if action.op in ("replace", "remove"):
            self.make_movable(action)
        if action.op == "remove":
            return
        assert action.source is not None
        if action.link_to is not None and self.stage_link(action, tmp):
            return
        path = tmp / f"new-{action.skill}-{_token()}"
        action._stage = path
        materialized: list[str] = []
        lf_files: dict[str, str] = {}
        with _out_of_space(f"the skills folder {action.target.path}"):
            files = copy_tree(action.source.path, path, materialized, lf_files=lf_files)
        if materialized:  # a link copied as its target: its files were not seen one by one
            lf_files = receipts.lf_digests(path, files)
        info = action.source.info
        # A link copied as its target is still the source's tree: the receipt says which
        # source it came from by the source's digest, and records the files as they are.
        # A plain copy's manifest is the source's (same walk, same hashes): its digest is
        # the source's, which the lock file records too.
        digest = action.source.digest if materialized else action.source.knows_digest(files)
        data = receipts.render(
            skill=action.skill,
            version=info.version,
            source=action.source.origin,
            files=files,
            source_digest=digest,
            lf_files=lf_files,
        )
        fsops.write_bytes(str(path / RECEIPT_FILE), data)
        if materialized:
            action.note = (
                f"symlinks are not allowed here, so {_few(materialized)} "
                f"{'is a copy' if len(materialized) == 1 else 'are copies'} of what the link points to"
            )

    def stage_link(self, action: Action, tmp: Path) -> bool:
        """--link: a relative symlink, else (Windows without the privilege) a junction;
        False when neither can be made, and the caller copies."""
        assert action.link_to is not None
        target = os.path.join(os.path.realpath(action.link_to.parent), action.skill)
        try:
            relative = os.path.relpath(target, os.path.realpath(action.target.path))
        except ValueError:  # Windows: another drive, which no relative link can reach
            action.note = f"{action.link_to} is on another drive, so this is a copy"
            return False
        path = tmp / f"link-{action.skill}-{_token()}"
        action._stage = path
        try:
            fsops.symlink(relative, str(path))
            action.linked = True
            return True
        except (OSError, NotImplementedError) as exc:
            if not fsops.symlinks_refused(exc):
                action._stage = None
                action.note = f"could not make a symlink ({exc}), so this is a copy"
                return False
        try:
            fsops.junction(target, str(path))
            action.linked = True
            action.note = "symlinks are not allowed here (Windows without Developer Mode), so this is a junction"
            return True
        except (OSError, NotImplementedError):
            action._stage = None
            action.note = "symlinks are not available here, so this is a copy"
            return False

    def backup(self, action: Action) -> None:
        root = self.state_dir / BACKUP_DIR
        fsops.make_dirs(root, self.created)
        key = _folder_key(action.target.path)
        partial = root / f".partial-{key}-{_token()}"
        backup_id = backups.new_id(action.skill)
        final = root / backup_id
        # Everything this backup may leave, so that abort() can remove exactly that.
        self.backups += [partial, root / backups.meta_partial_name(key, backup_id), root / f"{backup_id}{backups.META_SUFFIX}"]
        with _out_of_space(f"the backup folder {root} (backing up {action.dest})", backup=True):
            copy_tree(action.dest, partial, everything=True)
        size, count = backups.tree_stats(partial)
        verb = "replaced" if action.op == "replace" else "removed"
        backups.write_meta(
            root,
            backup_id,
            key=key,
            skill=action.skill,
            target=action.dest,
            why=f"{verb}; it was {action.existing.describe()}",
            size=size,
            files=count,
        )
        with _no_interrupts():
            fsops.rename(str(partial), str(final))
            self.backups.append(final)
            action.backup_path = final

    def make_movable(self, action: Action) -> None:
        """A read-only folder (chmod -R a-w) cannot be renamed into the temp folder: Linux
        needs write permission on a folder to move it (its '..' changes). Once it is backed
        up, give its owner write permission; abort() takes it back if the run is undone.
        (Deleting its read-only content afterwards is fsops.remove's job.)"""
        dest = action.dest
        if os.path.islink(dest) or not os.path.isdir(dest):
            return
        mode = stat.S_IMODE(os.lstat(dest).st_mode)
        if not mode & stat.S_IWUSR:
            fsops.chmod(str(dest), mode | stat.S_IWUSR)
            action._readonly_mode = mode

    # -- commit and rollback

    def commit(self, action: Action) -> None:
        dest, tmp = str(action.dest), self.tmp(action)
        with _no_interrupts():
            if action.op == "remove":
                gone = tmp / f"del-{action.skill}-{_token()}"
                fsops.rename(dest, str(gone))
                action._leftover, action._mode = gone, "removed"
            elif action.op == "install":
                try:
                    fsops.rename_noreplace(str(action._stage), dest)
                except FileExistsError:
                    raise KernelsError(f"{dest} appeared while installing", "Re-run with --force to replace it.") from None
                action._stage, action._mode = None, "installed"
            elif fsops.exchange(str(action._stage), dest):
                action._leftover, action._stage, action._mode = action._stage, None, "exchanged"
            else:
                old = tmp / f"old-{action.skill}-{_token()}"
                fsops.rename(dest, str(old))
                try:
                    fsops.rename(str(action._stage), dest)
                except BaseException:
                    fsops.rename(str(old), dest)
                    raise
                action._leftover, action._stage, action._mode = old, None, "renamed"
            self.committed.append(action)

    def rollback(self, action: Action) -> None:
        dest, tmp = str(action.dest), self.tmp(action)
        with _no_interrupts():
            if action._mode == "removed":
                fsops.rename(str(action._leftover), dest)
                action._leftover = None
            elif action._mode == "installed":
                out = tmp / f"new-{action.skill}-{_token()}"
                fsops.rename(dest, str(out))
                action._leftover = out
            elif action._mode == "exchanged":
                if not fsops.exchange(str(action._leftover), dest):
                    raise OSError("cannot swap back")
            elif action._mode == "renamed":
                out = tmp / f"new-{action.skill}-{_token()}"
                fsops.rename(dest, str(out))
                fsops.rename(str(action._leftover), dest)
                action._leftover = out
            action._mode = None

    # -- the whole thing

    def run(self) -> None:
        actions = self.plan.actions
        folders = list(dict.fromkeys(a.target.path for a in actions))
        committed = False
        with ExitStack() as stack:
            try:
                for folder in folders:
                    fsops.make_dirs(folder, self.created)
                stack.enter_context(fsops.locked(folders, lambda: _lock_dir(self._state_dir)))
                for folder in folders:
                    self.plan.notes += recover(folder, self._state_dir)
                errors = [e for e in (self.recheck(a) for a in list(actions)) if e]
                if errors:
                    raise _combine(errors)
                actions = self.plan.actions  # recheck() may have found some already done
                for action in actions:
                    self.stage(action)
                for action in actions:
                    self.commit(action)
                # Every path now holds its new tree: from here on nothing is rolled back,
                # and whatever an interrupt leaves behind is garbage that recover() deletes.
                # (A signal held during the last commit arrives before this line: rollback.)
                committed = True
                self.finish(actions)
            except BaseException as exc:
                if not committed:
                    self.abort(actions)
                    raise
                if not isinstance(exc, KeyboardInterrupt):
                    raise
                # The change is complete, so an interrupt here ends the cleanup, not the
                # command: reporting it as a rollback would hide the backup of what was replaced.
                self.plan.notes.append(
                    "interrupted while removing the replaced copies; the change is complete and the next run deletes what was left"
                )

    def recheck(self, action: Action) -> KernelsError | None:
        # The preflight ran without the lock; another run may have changed the path since.
        if action.op == "remove":
            action.existing = inspect(action.dest)
            if action.existing.kind == "none":
                return KernelsError(f"{action.dest} disappeared while removing it", "Run `kernels skills list` to check.")
            return None
        existing = inspect(action.dest)
        if action.op == "install" and not self.force and _identical(action, existing):
            # A concurrent run wrote exactly what this one would: the same no-op success a
            # single run reports for an identical install (16 parallel `add`s all exit 0).
            self.plan.actions.remove(action)
            self.plan.skipped.append(Skipped(action.skill, action.dest, _IDENTICAL.format(what=_identical_what(action, existing))))
            return None
        return _check_dest(action, force=self.force or action.op == "replace", existing=existing)

    def finish(self, actions: Sequence[Action]) -> None:
        for action in actions:
            for path in (action._leftover, action._stage):
                if path is not None and os.path.lexists(path):
                    try:
                        fsops.remove(str(path))
                    except OSError as exc:
                        self.plan.notes.append(f"could not remove {path} ({exc.strerror}); the next run cleans it up")
            action._leftover = action._stage = None
        for tmp in dict.fromkeys(self.tmp(a) for a in actions):
            _rmdir_quiet(tmp)

    def abort(self, actions: Sequence[Action]) -> None:
        """Undo this run after a failure or interrupt; whatever cannot be undone, recover() can."""
        clean = True
        for action in reversed(self.committed):
            try:
                self.rollback(action)
            except BaseException:
                clean = False
        for action in actions:
            for path in (action._stage, action._leftover if clean else None):
                if path is not None and os.path.lexists(path):
                    try:
                        fsops.remove(str(path))
                    except BaseException:
                        pass
        if clean:
            for action in actions:
                if action._readonly_mode is not None and os.path.isdir(action.dest) and not os.path.islink(action.dest):
                    try:
                        fsops.chmod(str(action.dest), action._readonly_mode)
                    except OSError:
                        pass
            for backup in self.backups:
                if os.path.lexists(backup):
                    try:
                        fsops.remove(str(backup))
                    except BaseException:
                        pass
        for tmp in dict.fromkeys(self.tmp(a) for a in actions):
            _rmdir_quiet(tmp)
        for folder in reversed(self.created):
            _rmdir_quiet(folder)


def _rmdir_quiet(folder: Path) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass


def apply(plan: Plan, *, state_dir: Path | Callable[[], Path], force: bool = False) -> Plan:
    """Carry out a plan from plan_add/plan_update/plan_remove: all of it, or none of it."""
    if plan.actions:
        # Retention runs once the change is made: a setting it cannot read must stop the
        # command now, before anything changes, not fail it after the change.
        backups.default_keep()
        try:
            _Run(plan, state_dir, force=force).run()
        except OSError as exc:
            if not fsops.is_busy(exc):
                raise
            raise KernelsError(
                f"{exc.filename} is in use by another program (Windows would not rename or delete it)",
                "Close what has the skill's files open (an editor, the agent, a virus scan), then re-run; "
                "what was done so far was rolled back or is cleaned up by the next run.",
            ) from exc
        if any(a.backup_path for a in plan.actions):
            pruned = backups.retain(_state(state_dir))
            if pruned:
                plan.notes.append(
                    f"deleted {len(pruned)} older backup(s): kernels keeps the {backups.default_keep()} newest of each skill "
                    f"at each path ({backups.KEEP_ENV}=0 keeps all; see `kernels skills backups`)"
                )
    return plan


# Public names for backups.restore, which stages and swaps like an install does.
no_interrupts = _no_interrupts
rmdir_quiet = _rmdir_quiet
folder_key = _folder_key


# ---------------------------------------------------------------------------- recovery


def recover(folder: Path, state_dir: Path | Callable[[], Path]) -> list[str]:
    """Finish or undo what a killed run left in ``folder`` (call with the folder locked)."""
    notes: list[str] = []
    tmp = folder / TMP_DIR
    try:
        names = sorted(os.listdir(tmp))
    except OSError:
        # No temp folder: no run was interrupted here mid-swap. A partial backup may still
        # be left (a run whose cleanup could not delete it: a file held open on Windows).
        names = []
    busy: list[str] = []
    for name in names:
        path = tmp / name
        kind, _, rest = name.partition("-")
        skill = rest.rpartition("-")[0]
        dest = folder / skill
        try:
            if kind == "old" and skill and not os.path.lexists(dest):
                fsops.rename(str(path), str(dest))
                notes.append(f"restored {dest} (a previous run was interrupted while replacing it)")
            else:
                fsops.remove(str(path))
        except OSError as exc:
            if not fsops.is_busy(exc):
                raise
            busy.append(_busy_note(path, dest if kind == "old" and not os.path.lexists(dest) else None))
    if names and not notes and len(busy) < len(names):
        notes.append(f"cleaned up after an interrupted run in {folder}")
    notes += busy
    backup_root = _state(state_dir) / BACKUP_DIR
    prefix = f".partial-{_folder_key(folder)}-"
    try:
        partials = [n for n in os.listdir(backup_root) if n.startswith(prefix)]
    except OSError:
        partials = []
    for name in partials:
        try:
            fsops.remove(str(backup_root / name))
        except OSError as exc:
            if not fsops.is_busy(exc):
                raise
            notes.append(_busy_note(backup_root / name, None))
    for orphan in backups.orphans(_state(state_dir), _folder_key(folder)):
        fsops.remove(str(orphan))
    _rmdir_quiet(tmp)
    return notes


def _busy_note(path: Path, missing: Path | None) -> str:
    """recover() leaves an entry another program holds open (Windows) for the next run."""
    if missing is not None:
        return (
            f"could not restore {missing} from {path}: another program has a file in it open; "
            "close it (an editor, the agent) and re-run to put it back"
        )
    return f"left {path} for the next run to delete: another program has a file in it open"


def recover_all(folders: Sequence[Path], state_dir: Path | Callable[[], Path]) -> list[str]:
    existing = [f for f in dict.fromkeys(folders) if os.path.isdir(f)]
    notes: list[str] = []
    with fsops.locked(existing, lambda: _lock_dir(state_dir)):
        for folder in existing:
            notes += recover(folder, state_dir)
    return notes


def skill_sources(specs: Sequence[str], ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
    """Resolve SKILL arguments, each skill once, in order.

    ``select`` (--skill NAME or '*') picks skills out of the folders and repos among
    ``specs``; every name must be found in one of them.
    """
    for name in select or ():
        if name != sources.ALL:
            check_name(name)
    out: dict[str, SkillSource] = {}
    for spec in specs:
        for source in sources.resolve(spec, ctx, select):
            seen = out.get(source.name)
            if seen is not None and dict(seen.origin) != dict(source.origin):
                raise KernelsError(
                    f"two sources provide a skill named '{source.name}': {seen.display} and {source.display}",
                    "Install them one at a time, into different targets.",
                    usage=True,
                )
            out.setdefault(source.name, source)
    missing = [name for name in select or () if name != sources.ALL and name not in out]
    if missing:
        raise KernelsError(
            f"no source given holds a skill named {', '.join(repr(m) for m in missing)}",
            "`kernels skills add --list SOURCE` shows what a source offers.",
            usage=True,
        )
    return list(out.values())


def describe_tree(folder: Path) -> list[dict[str, Any]]:
    """Every file and folder of a skill with its size (for `show`); an install's receipt is
    the installer's record, not part of the skill, and is left out as copy_tree leaves it."""
    rows = []
    for rel, entry in walk(folder, everything=(folder / RECEIPT_FILE).is_file()):
        if rel == RECEIPT_FILE:
            continue
        st = entry.stat(follow_symlinks=False)
        kind = "link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "file"
        rows.append({"path": rel, "kind": kind, "size": st.st_size if kind == "file" else None})
    return rows
