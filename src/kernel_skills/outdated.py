"""`kernels skills outdated`: is anything locked or installed behind its source?

For every skill in the lock, and every managed install the lock does not list, this
compares what was installed with what its source offers now: the bundled skill this
package ships, the folder as it is, the commit the Hub branch or tag points to (asked
of the Hub itself, never answered from the cache). Each row ends in one state:

- ``current``: the source still provides exactly that tree or commit;
- ``outdated``: the source has something newer (``kernels skills update`` takes it);
- ``error``: it could not be checked (source gone, Hub unreachable, HF_HUB_OFFLINE):
  never reported as current.

The command's exit code says which (see :data:`EXIT_OUTDATED`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import install, lockfile, sources, sync
from .agents import Location, Target, dedupe, known_targets
from .errors import EXIT_FAILURE, EXIT_OK, KernelsError
from .lockfile import Entry, Lock, Place
from .records import field, record
from .sources import SourceContext

# "Updates are available": distinct from 1 (failure) and 2 (usage), outside the BSD
# sysexits range (64-78) and the shell's 126+ (not runnable, signals). npm outdated
# uses 1, which a CI step cannot tell apart from a crash.
EXIT_OUTDATED = 10

CURRENT, OUTDATED, ERROR = "current", "outdated", "error"


@record
class Row:
    skill: str
    kind: str  # bundled, local, hf
    installed: str | None  # what is installed (or locked): version, commit, folder
    latest: str | None  # what the source offers now; None when it could not be told
    state: str
    locked: bool  # from the lock (else a managed install the lock does not list)
    detail: str = ""
    paths: list[str] = field(default_factory=list)
    in_sync: bool | None = None  # locked rows: every target holds the locked tree (else `sync` is due)

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "kind": self.kind,
            "installed": self.installed,
            "latest": self.latest,
            "state": self.state,
            "locked": self.locked,
            "detail": self.detail,
            "paths": list(self.paths),
            "in_sync": self.in_sync,
        }


def exit_code(rows: Sequence[Row]) -> int:
    """1 if anything could not be checked, else 10 if anything is outdated, else 0."""
    if any(r.state == ERROR for r in rows):
        return EXIT_FAILURE
    return EXIT_OUTDATED if any(r.state == OUTDATED for r in rows) else EXIT_OK


def _check_local_kind(kind: str, name: str, origin: Mapping[str, Any], digest: str, ctx: SourceContext) -> tuple[str | None, str, str]:
    """(latest, state, detail) for a bundled or folder source, by the tree's digest."""
    try:
        source = sources.from_origin(origin, ctx)
    except KernelsError as exc:
        return None, ERROR, exc.what
    latest = (source.info.version or "unversioned") if kind == "bundled" else "changed" if source.digest != digest else "unchanged"
    if source.digest == digest:
        return latest, CURRENT, ""
    why = "this kernel-skills bundles another version" if kind == "bundled" else "the folder's files changed"
    return latest, OUTDATED, why


def _check_hub(origin: Mapping[str, Any], sha: str, ctx: SourceContext) -> tuple[str | None, str, str]:
    from . import hub

    ref = hub.HubRef(
        str(origin["repo_type"]),
        str(origin["repo_id"]),
        None if origin.get("revision") is None else str(origin["revision"]),
        str(origin.get("path") or ""),
    )
    try:
        latest = hub.latest_sha(ref, ctx)
    except KernelsError as exc:
        return None, ERROR, exc.what
    where = ref.revision or hub.DEFAULT_REVISION
    if latest == sha:
        return latest[:7], CURRENT, f"{where} is at {sha[:7]}"
    return latest[:7], OUTDATED, f"{where} moved from {sha[:7]} to {latest[:7]}"


def check_entry(entry: Entry, place: Place, ctx: SourceContext) -> Row:
    origin = lockfile.origin_of(entry, place)
    if entry.kind == "hf":
        sha = lockfile.hub_sha(entry)
        latest, state, detail = _check_hub(origin, sha, ctx)
        return Row(entry.name, entry.kind, sha[:7], latest, state, True, detail)
    installed = entry.version or "unversioned" if entry.kind == "bundled" else str(entry.resolved["path"])
    latest, state, detail = _check_local_kind(entry.kind, entry.name, origin, entry.digest, ctx)
    return Row(entry.name, entry.kind, installed, latest, state, True, detail)


def check_install(item: install.Installed, ctx: SourceContext) -> Row:
    assert item.receipt is not None
    origin = item.receipt.source
    kind = str(origin.get("kind"))
    if kind == "hf":
        sha = str(origin.get("sha") or "")
        latest, state, detail = _check_hub(origin, sha, ctx)
        return Row(item.name, kind, sha[:7], latest, state, False, detail, [str(item.path)])
    installed = item.version or "unversioned" if kind == "bundled" else str(origin.get("path"))
    latest, state, detail = _check_local_kind(kind, item.name, origin, item.receipt.digest, ctx)
    return Row(item.name, kind, installed, latest, state, False, detail, [str(item.path)])


def check(place: Place, loc: Location, ctx: SourceContext) -> list[Row]:
    """A row per locked skill, then one per managed install the lock does not list."""
    lock = lockfile.read(place.path) if place.path.exists() else Lock()
    rows: list[Row] = []
    listed: set[tuple[str, Path]] = set()
    lock_targets: list[Target] = []
    for name in sorted(lock.entries):
        entry = lock.entries[name]
        row = check_entry(entry, place, ctx)
        targets = place.targets(entry, loc)
        row.paths = [str(t.path / name) for t in targets]
        origin = lockfile.origin_of(entry, place)
        row.in_sync = all(sync.matches(entry, t.path / name, origin) for t in targets)
        if not row.in_sync:
            row.detail = "; ".join(filter(None, [row.detail, "some targets do not hold the locked tree: run `kernels skills sync`"]))
        listed |= {(name, t.path) for t in targets}
        lock_targets += targets
        rows.append(row)
    scope = "global" if place.scope == "global" else "project"
    folders = dedupe([*known_targets(loc, scopes=(scope,)), *(t for t in lock_targets if t.scope == "dest")])
    seen: dict[tuple[str, str], Row] = {}
    for item in install.find_installs(folders):
        if item.receipt is None or item.kind != "dir" or (item.name, item.target.path) in listed:
            continue
        key = (item.name, repr(sorted(item.receipt.source.items())) + item.receipt.digest)
        if key in seen:
            seen[key].paths.append(str(item.path))
            continue
        seen[key] = check_install(item, ctx)
        rows.append(seen[key])
    return rows
