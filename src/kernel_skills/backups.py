"""Backups of the installs kernels replaced or removed: list, restore, prune.

Before ``add --force``, ``update --force``, ``remove --force`` or ``backups restore``
delete a tree that is not exactly what kernels installed (user edits, a foreign folder,
a damaged receipt), they copy it, receipt included, to ``<state>/backups/ID`` and write
``ID.json`` beside it: the skill, the path it came from, when, its size and why. The ID
is ``<skill>-<YYYYmmdd-HHMMSS>-<token>``.

Retention: after every command that made a backup (and after a restore), only the
``DEFAULT_KEEP`` (5) newest backups of each skill at each path are kept; set
``KERNEL_SKILLS_KEEP_BACKUPS`` to another number, or to 0 to keep every backup.
``prune`` applies other rules on demand.

A restore is atomic like an install: the backup is copied into the skills folder's temp
folder, the current copy (if any) is backed up, and one rename (an exchange on Linux)
puts the backup in place. Pure core: every change goes through :mod:`.fsops`; nothing
here prints or exits.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fsops
from .errors import KernelsError
from .records import record

if TYPE_CHECKING:
    from datetime import datetime

BACKUP_DIR = "backups"
META_SUFFIX = ".json"
DEFAULT_KEEP = 5
KEEP_ENV = "KERNEL_SKILLS_KEEP_BACKUPS"
_ID = re.compile(r"^(?P<skill>.+)-(?P<stamp>\d{8}-\d{6})-(?P<token>[0-9a-f]{8})$")


def root(state_dir: Path) -> Path:
    return state_dir / BACKUP_DIR


def new_id(skill: str) -> str:
    return f"{skill}-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(4).hex()}"


def _now() -> str:
    from datetime import datetime, timezone  # here: an install that makes no backup need not import it

    # Microseconds kept: backups made within one second must still sort newest-last.
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def write_meta(folder: Path, backup_id: str, *, key: str, skill: str, target: Path, why: str, size: int, files: int) -> None:
    """Write ``ID.json`` (before the tree is renamed to ``ID``: a tree never lacks it).

    ``key`` is the skills folder's :func:`install.folder_key`: the partial file carries it
    (recover() of that folder deletes it, as it deletes the partial tree), and so does the
    metadata (recover() deletes an ``ID.json`` of that folder whose tree never arrived)."""
    data = {
        "id": backup_id,
        "skill": skill,
        "target": str(target),
        "created": _now(),
        "size": size,
        "files": files,
        "why": why,
        "folder_key": key,
    }
    path = folder / (backup_id + META_SUFFIX)
    partial = folder / meta_partial_name(key, backup_id)
    if os.path.lexists(partial):
        fsops.remove(str(partial))
    fsops.write_bytes(str(partial), (json.dumps(data, indent=2) + "\n").encode(), 0o600)
    fsops.rename(str(partial), str(path))


def meta_partial_name(key: str, backup_id: str) -> str:
    return f".partial-{key}-meta-{backup_id}"


def orphans(state_dir: Path, key: str) -> list[Path]:
    """``ID.json`` files of folder ``key`` whose tree is missing (a run killed between the
    two renames); call with that folder locked."""
    folder = root(state_dir)
    try:
        names = set(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in sorted(names):
        if name.endswith(META_SUFFIX) and name[: -len(META_SUFFIX)] not in names:
            if _read_meta(folder / name).get("folder_key") == key:
                found.append(folder / name)
    return found


# --------------------------------------------------------------------------------- list


@record
class Backup:
    id: str
    path: Path
    skill: str
    target: Path | None  # where it was installed; None for a backup made before targets were recorded
    created: datetime
    size: int
    files: int
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "skill": self.skill,
            "target": str(self.target) if self.target else None,
            "created": self.created.isoformat().replace("+00:00", "Z"),
            "size": self.size,
            "files": self.files,
            "why": self.why,
            "path": str(self.path),
        }


def tree_stats(folder: Path) -> tuple[int, int]:
    """(bytes, files) of a tree, not following links (without recursion: a tree may be deep)."""
    from .skill import walk

    total = count = 0
    for _, entry in walk(folder, everything=True):
        if entry.is_dir(follow_symlinks=False):
            continue
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        count += 1
    return total, count


def _read_meta(path: Path) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _created(meta: Mapping[str, Any], name: str, folder: Path) -> datetime:
    from datetime import datetime, timezone

    text = meta.get("created")
    if isinstance(text, str):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            pass
    match = _ID.match(name)
    if match:
        try:
            return datetime.strptime(match.group("stamp"), "%Y%m%d-%H%M%S").astimezone(timezone.utc)
        except ValueError:
            pass
    return datetime.fromtimestamp(folder.lstat().st_mtime, timezone.utc)


def find(state_dir: Path) -> list[Backup]:
    """Every backup, oldest first; unreadable metadata is filled in from the tree."""
    folder = root(state_dir)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise KernelsError(f"cannot read the backups folder {folder}: {exc.strerror}", "Check its permissions.") from None
    found: list[Backup] = []
    for name in names:
        path = folder / name
        if name.startswith(".") or name.endswith(META_SUFFIX) or not path.is_dir() or path.is_symlink():
            continue
        meta = _read_meta(folder / (name + META_SUFFIX))
        match = _ID.match(name)
        skill = str(meta.get("skill") or (match.group("skill") if match else name))
        target = meta.get("target")
        size, files = meta.get("size"), meta.get("files")
        if not isinstance(size, int) or not isinstance(files, int):
            size, files = tree_stats(path)
        why = str(meta.get("why") or "made before kernels recorded why")
        found.append(
            Backup(name, path, skill, Path(target) if isinstance(target, str) else None, _created(meta, name, path), size, files, why)
        )
    found.sort(key=lambda b: (b.created, b.id))
    return found


def get(state_dir: Path, backup_id: str) -> Backup:
    """The backup named ``backup_id`` (or a unique prefix of one)."""
    every = find(state_dir)
    exact = [b for b in every if b.id == backup_id]
    matches = exact or [b for b in every if b.id.startswith(backup_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise KernelsError(
            f"no backup with the ID '{backup_id}' in {root(state_dir)}", "Run `kernels skills backups list` to see the IDs.", usage=True
        )
    shown = ", ".join(b.id for b in matches[:3])
    raise KernelsError(f"'{backup_id}' matches {len(matches)} backups ({shown}...)", "Give more of the ID.", usage=True)


# -------------------------------------------------------------------------------- prune


def _delete(backups: Sequence[Backup]) -> list[Backup]:
    for backup in backups:
        meta = backup.path.parent / (backup.id + META_SUFFIX)
        fsops.remove(str(backup.path))  # the tree first: a meta file alone is ignored and swept later
        if os.path.lexists(meta):
            fsops.remove(str(meta))
    return list(backups)


def choose_prune(every: Sequence[Backup], *, keep: int | None, older_than_days: float | None, now: datetime | None = None) -> list[Backup]:
    """The backups a prune deletes: those beyond the ``keep`` newest of their skill and
    path AND older than ``older_than_days``; an option that is None holds nothing back."""
    if keep is None and older_than_days is None:
        raise KernelsError(
            "prune needs --keep N, --older-than DAYS or both", "For example `kernels skills backups prune --keep 3`.", usage=True
        )
    from datetime import datetime, timezone

    now = now or datetime.now(timezone.utc)
    groups: dict[tuple[str, str], list[Backup]] = {}
    for backup in every:
        groups.setdefault((backup.skill, str(backup.target)), []).append(backup)
    doomed: list[Backup] = []
    for group in groups.values():
        newest_first = sorted(group, key=lambda b: (b.created, b.id), reverse=True)
        for index, backup in enumerate(newest_first):
            beyond = keep is None or index >= keep
            old = older_than_days is None or (now - backup.created).total_seconds() > older_than_days * 86400
            if beyond and old:
                doomed.append(backup)
    return sorted(doomed, key=lambda b: (b.created, b.id))


def prune(state_dir: Path, *, keep: int | None = None, older_than_days: float | None = None, dry_run: bool = False) -> list[Backup]:
    """Delete (or with ``dry_run`` only name) the backups :func:`choose_prune` picks."""
    if keep is not None and keep < 0:
        raise KernelsError(f"--keep must be 0 or more, not {keep}", "For example --keep 3.", usage=True)
    if older_than_days is not None and not older_than_days >= 0:
        raise KernelsError(f"--older-than must be 0 or more days, not {older_than_days}", "For example --older-than 30.", usage=True)
    doomed = choose_prune(find(state_dir), keep=keep, older_than_days=older_than_days)
    _sweep_orphans(state_dir)
    return doomed if dry_run else _delete(doomed)


def _sweep_orphans(state_dir: Path) -> None:
    """ID.json files whose tree is gone (a run killed between writing the two)."""
    folder = root(state_dir)
    try:
        names = set(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if name.endswith(META_SUFFIX) and name[: -len(META_SUFFIX)] not in names:
            fsops.remove(str(folder / name))


def default_keep(env: Mapping[str, str] | None = None) -> int:
    """DEFAULT_KEEP, or $KERNEL_SKILLS_KEEP_BACKUPS (0 = keep every backup)."""
    text = (os.environ if env is None else env).get(KEEP_ENV, "").strip()
    if not text:
        return DEFAULT_KEEP
    try:
        value = int(text)
    except ValueError:
        raise KernelsError(
            f"{KEEP_ENV}={text} is not a whole number",
            f"Set it to a number of backups to keep per skill (0 keeps all), or unset it (default {DEFAULT_KEEP}).",
            usage=True,
        ) from None
    if value < 0:
        raise KernelsError(f"{KEEP_ENV}={text} is negative", "Set it to 0 (keep all) or more.", usage=True)
    return value


def retain(state_dir: Path, env: Mapping[str, str] | None = None) -> list[Backup]:
    """The default retention, run after each command that made a backup: keep the newest
    ``default_keep()`` of each skill at each path. Never raises for a folder it cannot
    tidy (the command itself succeeded); returns what it deleted."""
    keep = default_keep(env)
    if keep == 0:
        return []
    try:
        return prune(state_dir, keep=keep)
    except (OSError, KernelsError):
        return []


# ------------------------------------------------------------------------------ restore


@record
class Restored:
    backup: Backup
    dest: Path
    previous_backup: Path | None  # where the copy that was at dest went (None: dest was empty)

    def to_json(self) -> dict[str, Any]:
        return {
            "restored": self.backup.id,
            "path": str(self.dest),
            "backup_of_previous": str(self.previous_backup) if self.previous_backup else None,
        }


def restore(state_dir: Path | Callable[[], Path], backup_id: str, *, dest: Path | None = None) -> Restored:
    """Put backup ``backup_id`` back where it came from (or at ``dest``), atomically; the
    copy there now, if any, is backed up first (whatever it is)."""
    from . import install  # the staging, locking and recovery machinery of installs

    default_keep()  # retention follows the restore: a bad setting stops it before, not after
    state = state_dir() if callable(state_dir) else state_dir
    backup = get(state, backup_id)
    target = dest or backup.target
    if target is None:
        raise KernelsError(
            f"backup {backup.id} does not record where it came from",
            "Name the folder to restore it to with --to PATH (the skill folder itself).",
            usage=True,
        )
    target = Path(os.path.abspath(target))
    folder = target.parent
    created: list[Path] = []
    fsops.make_dirs(folder, created)
    with fsops.locked([folder]):
        install.recover(folder, state)
        tmp = folder / install.TMP_DIR
        if not os.path.isdir(tmp):
            fsops.make_dir(str(tmp), 0o700)
        token = os.urandom(4).hex()
        stage = tmp / f"new-{target.name}-{token}"
        leftover: Path | None = None
        previous: Path | None = None
        try:
            install.copy_tree(backup.path, stage, everything=True)
            if os.path.lexists(target):
                if not os.path.isdir(target) or os.path.islink(target):
                    raise KernelsError(
                        f"{target} is {'a symlink' if os.path.islink(target) else 'a file'}, not a skill folder",
                        "Move it away, then restore again.",
                    )
                previous = backup_tree(state, target, skill=backup.skill, why=f"replaced by restoring backup {backup.id}")
                with install.no_interrupts():
                    if fsops.exchange(str(stage), str(target)):
                        leftover = stage
                    else:
                        old = tmp / f"old-{target.name}-{token}"
                        fsops.rename(str(target), str(old))
                        fsops.rename(str(stage), str(target))  # recover() puts old back if killed in between
                        leftover = old
            else:
                with install.no_interrupts():
                    fsops.rename_noreplace(str(stage), str(target))
        except BaseException:
            if os.path.lexists(stage):
                fsops.remove(str(stage))
            install.rmdir_quiet(tmp)
            raise
        if leftover is not None and os.path.lexists(leftover):
            fsops.remove(str(leftover))
        install.rmdir_quiet(tmp)
    retain(state)
    return Restored(backup, target, previous)


def backup_tree(state_dir: Path, tree: Path, *, skill: str, why: str, target: Path | None = None) -> Path:
    """Copy ``tree`` (everything in it) to a new backup; returns its folder."""
    from . import install

    folder = root(state_dir)
    fsops.make_dirs(folder, [])
    backup_id = new_id(skill)
    partial = folder / f".partial-{install.folder_key(tree.parent)}-{os.urandom(4).hex()}"
    try:
        install.copy_tree(tree, partial, everything=True)
        size, files = tree_stats(partial)
        write_meta(
            folder, backup_id, key=install.folder_key(tree.parent), skill=skill, target=target or tree, why=why, size=size, files=files
        )
        final = folder / backup_id
        with install.no_interrupts():
            fsops.rename(str(partial), str(final))
    except BaseException:
        if os.path.lexists(partial):
            fsops.remove(str(partial))
        raise
    return final
