"""``skills-lock.json``: what a project expects its agents' skills folders to hold.

The lock lives at the *project root*, which is the current folder: the same folder the
project targets (``.claude/skills``, ``.agents/skills``, ...) are resolved from, so the
lock and the folders it describes can never disagree. User-wide (``--global``) installs
are recorded in a second lock, ``skills-lock.json`` in the user state folder, whose
relative paths start at the home folder.

One entry per skill::

    {
      "skills": {
        "house-style": {
          "digest": "<sha256 of the tree, as receipts compute it>",
          "resolved": {"kind": "hf", "revision": "main",
                       "uri": "hf://my-org/skills@<40-hex commit>/house-style"},
          "source": "hf://my-org/skills/house-style",
          "targets": {"agents": ["claude"], "dests": ["vendor/skills"]}
        }
      },
      "version": 1
    }

``source`` is the source as the user wrote it; ``resolved`` is exactly what was
installed: a bundled skill and its version (``{"kind": "bundled", "name", "version"}``),
a folder relative to the project (``{"kind": "local", "path"}``), or a Hub commit
(``{"kind": "hf", "uri": "hf://...@<sha>/...", "revision"}``, ``revision`` being the
branch or tag the source named, null for the default branch). ``targets`` are agent
names and ``--dest`` folders relative to the project.

The file is deterministic JSON (sorted keys, 2-space indent, trailing newline) so a
review diff shows what changed. It is written to a temp file and renamed over the old
one (through :mod:`.fsops`), so it is never half-written, and every read-modify-write
holds an exclusive lock on the folder that holds it (:func:`edit`), so two commands
running at once in one project both end up in it.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from . import fsops, records
from .agents import Location, Target, agent_names, dedupe, get_agent, skills_dir
from .errors import KernelsError
from .records import field
from .skill import name_problem

LOCK_FILE = "skills-lock.json"
VERSION = 1
KINDS = ("bundled", "local", "hf")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_TMP_PREFIX = f".{LOCK_FILE}."
_TMP_SUFFIX = ".tmp"


# ---------------------------------------------------------------------------- the data


@records.record
class Entry:
    """One locked skill."""

    name: str
    source: str  # as the user wrote it
    resolved: dict[str, Any]  # exactly what was installed (see the module docstring)
    digest: str
    agents: list[str] = field(default_factory=list)
    dests: list[str] = field(default_factory=list)  # POSIX paths relative to the lock's root

    @property
    def kind(self) -> str:
        return str(self.resolved["kind"])

    @property
    def version(self) -> str | None:
        value = self.resolved.get("version")
        return None if value is None else str(value)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "resolved": dict(self.resolved),
            "digest": self.digest,
            "targets": {"agents": sorted(set(self.agents)), "dests": sorted(set(self.dests))},
        }

    def describe(self) -> str:
        """What was locked, in a few words: "1.0.0", "commit 1a2b3c4", "skills/mine"."""
        if self.kind == "hf":
            return f"commit {hub_sha(self)[:7]}"
        if self.kind == "local":
            return str(self.resolved["path"])
        return self.version or "unversioned"


@records.record
class Lock:
    entries: dict[str, Entry] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "skills": {name: self.entries[name].to_json() for name in sorted(self.entries)}}


def render(lock: Lock) -> bytes:
    """The file's bytes: sorted keys, 2-space indent, a trailing newline."""
    return (json.dumps(lock.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


# ----------------------------------------------------------------------------- parsing


def _bad(label: str, problem: str) -> KernelsError:
    return KernelsError(
        f"{label} is not a valid lock file: {problem}; nothing was changed",
        f"Fix or restore it (`git checkout {LOCK_FILE}`), or delete it and re-add the skills.",
    )


def _relative(value: object, label: str, what: str) -> str:
    """A POSIX path relative to the lock's root that stays inside it."""
    if not isinstance(value, str) or not value:
        raise _bad(label, f"{what} must be a non-empty relative path")
    if value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value) or "\\" in value:
        raise _bad(label, f"{what} '{value}' is absolute; paths in the lock are relative to the project")
    norm = posixpath.normpath(value)
    if norm == ".." or norm.startswith("../") or "\0" in value:
        raise _bad(label, f"{what} '{value}' leads outside the project")
    return norm


def _parse_resolved(name: str, data: object, label: str) -> dict[str, Any]:
    where = f"skills.{name}.resolved"
    if not isinstance(data, dict):
        raise _bad(label, f"{where} must be an object")
    kind = data.get("kind")
    if kind == "bundled":
        version = data.get("version")
        if data.get("name") != name:
            raise _bad(label, f"{where}.name must be '{name}'")
        if version is not None and not isinstance(version, str):
            raise _bad(label, f"{where}.version must be a string or null")
        return {"kind": kind, "name": name, "version": version}
    if kind == "local":
        return {"kind": kind, "path": _relative(data.get("path"), label, f"{where}.path")}
    if kind == "hf":
        from . import hub

        uri, revision = data.get("uri"), data.get("revision")
        if not isinstance(uri, str):
            raise _bad(label, f"{where}.uri must be an hf:// address")
        try:
            ref = hub.parse_uri(uri)
        except KernelsError as exc:
            raise _bad(label, f"{where}.uri: {exc.what}") from None
        if not ref.pinned:
            raise _bad(label, f"{where}.uri '{uri}' must name a 40-hex commit after '@'")
        if revision is not None and (not isinstance(revision, str) or not revision):
            raise _bad(label, f"{where}.revision must be a branch, a tag or null")
        return {"kind": kind, "uri": ref.uri(), "revision": revision}
    raise _bad(label, f"{where}.kind must be one of {', '.join(KINDS)} (got {kind!r})")


def _parse_entry(name: object, data: object, label: str) -> Entry:
    if not isinstance(name, str) or name_problem(name):
        raise _bad(label, f"{name!r} is not a valid skill name")
    if not isinstance(data, dict):
        raise _bad(label, f"skills.{name} must be an object")
    source, digest, targets = data.get("source"), data.get("digest"), data.get("targets")
    if not isinstance(source, str) or not source:
        raise _bad(label, f"skills.{name}.source must be a non-empty string")
    if not isinstance(digest, str) or not _HEX64.match(digest):
        raise _bad(label, f"skills.{name}.digest must be 64 lowercase hex digits (a sha256)")
    if not isinstance(targets, dict):
        raise _bad(label, f"skills.{name}.targets must be an object with 'agents' and 'dests'")
    agents, dests = targets.get("agents", []), targets.get("dests", [])
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise _bad(label, f"skills.{name}.targets.agents must be a list of agent names")
    unknown = [a for a in agents if a not in agent_names()]
    if unknown:
        raise _bad(label, f"skills.{name}.targets.agents names unknown agent(s) {', '.join(unknown)} (known: {', '.join(agent_names())})")
    if not isinstance(dests, list):
        raise _bad(label, f"skills.{name}.targets.dests must be a list of folders")
    dest_paths = [_relative(d, label, f"skills.{name}.targets.dests entry") for d in dests]
    if not agents and not dest_paths:
        raise _bad(label, f"skills.{name} has no targets")
    resolved = _parse_resolved(name, data.get("resolved"), label)
    return Entry(name, source, resolved, digest, sorted(set(agents)), sorted(set(dest_paths)))


def parse(text: str | bytes, label: str = LOCK_FILE) -> Lock:
    """A lock from the file's text; one clear KernelsError for anything malformed."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _bad(label, f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _bad(label, "the top level must be an object")
    version = data.get("version")
    if version != VERSION:
        fix_newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        if fix_newer:
            raise KernelsError(
                f"{label} has version {version}, and this kernel-skills reads version {VERSION}; nothing was changed",
                "Upgrade kernel-skills (pip install -U kernel-skills) to the version the project pins.",
            )
        raise _bad(label, f"unknown version {version!r} (expected {VERSION})")
    skills = data.get("skills")
    if not isinstance(skills, dict):
        raise _bad(label, "'skills' must be an object")
    return Lock({str(name): _parse_entry(name, entry, label) for name, entry in skills.items()})


def read(path: Path) -> Lock:
    """The lock at ``path``; an empty one when there is no file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Lock()
    except IsADirectoryError:
        raise _bad(str(path), "it is a folder") from None
    except OSError as exc:
        raise KernelsError(f"cannot read {path}: {exc.strerror}", "Check its permissions.") from None
    return parse(data, str(path))


# ----------------------------------------------------------------------------- writing


def write(path: Path, lock: Lock) -> None:
    """Replace ``path`` with ``lock`` atomically: a temp file beside it, then one rename.

    Call it through :func:`edit`, which holds the lock. A symlinked lock file is written
    through the link.
    """
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode & 0o777
    except FileNotFoundError:
        current = os.umask(0o022)
        os.umask(current)
        mode = 0o666 & ~current
    tmp = real.with_name(f"{_TMP_PREFIX}{os.urandom(4).hex()}{_TMP_SUFFIX}")
    fsops.write_bytes(str(tmp), render(lock), mode)
    try:
        fsops.rename(str(tmp), str(real))
    except BaseException:
        try:
            fsops.remove(str(tmp))
        except OSError:
            pass  # the next edit deletes it (_clean_temps)
        raise


def _clean_temps(folder: Path) -> None:
    """Temp files of a writer that was killed (only called under the lock: no writer is live)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(_TMP_PREFIX) and name.endswith(_TMP_SUFFIX):
            try:
                fsops.remove(str(folder / name))
            except OSError:
                pass


def edit(path: Path, change: Callable[[Lock], None]) -> Lock:
    """Read the lock, apply ``change``, write it back if it changed; all under an exclusive
    lock on its folder, so concurrent commands merge instead of overwriting each other.

    A lock whose last skill goes is still written (an empty lock says "nothing expected");
    a missing one is created only when something is recorded in it.
    """
    folder = Path(os.path.realpath(path)).parent
    fsops.make_dirs(folder, [])
    with fsops.locked([folder]):
        _clean_temps(folder)
        lock = read(path)
        before = render(lock)
        change(lock)
        if render(lock) != before:
            write(path, lock)
    return lock


# ------------------------------------------------------------------- where, and targets


@records.record(frozen=True)
class Place:
    """One lock file, the folder its relative paths start at, and the scope it records."""

    path: Path
    root: Path
    scope: str  # "project" (agents' project folders and --dest folders) or "global"

    @classmethod
    def project(cls, loc: Location) -> Place:
        return cls(loc.cwd / LOCK_FILE, loc.cwd, "project")

    @classmethod
    def user(cls, state_dir: Path, loc: Location) -> Place:
        return cls(state_dir / LOCK_FILE, loc.home, "global")

    def relative(self, folder: Path) -> str | None:
        """``folder`` relative to the root (POSIX), or None when it lies outside."""
        try:
            rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(self.root))
        except ValueError:  # another drive (Windows)
            return None
        if rel == os.curdir:
            return "."
        if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            return None
        return Path(rel).as_posix()

    def targets(self, entry: Entry, loc: Location) -> list[Target]:
        """The skills folders an entry names, as targets."""
        out = [Target(skills_dir(get_agent(a), loc, global_=self.scope == "global"), self.scope, [a]) for a in entry.agents]
        out += [Target(self.root / d, "dest") for d in entry.dests]
        return dedupe(out)

    def claims(self, target: Target) -> str | None:
        """How this lock records ``target`` ("agent:NAME" / "dest:PATH"), or None if it does not."""
        if target.scope == "dest":
            if self.scope != "project":
                return None
            rel = self.relative(target.path)
            return None if rel is None else f"dest:{rel}"
        if target.scope == self.scope and target.agents:
            return f"agent:{target.agents[0]}"
        return None


def add_target(entry: Entry, key: str, target: Target) -> None:
    """Record ``target`` (as :meth:`Place.claims` named it) in ``entry``."""
    kind, _, value = key.partition(":")
    if kind == "agent":
        entry.agents = sorted(set(entry.agents) | set(target.agents))
    else:
        entry.dests = sorted(set(entry.dests) | {value})


def keys(entry: Entry) -> list[str]:
    """The entry's targets as :meth:`Place.claims` names them."""
    return [f"agent:{a}" for a in entry.agents] + [f"dest:{d}" for d in entry.dests]


def drop_target(entry: Entry, key: str, target: Target) -> None:
    kind, _, value = key.partition(":")
    if kind == "agent":
        entry.agents = [a for a in entry.agents if a not in target.agents]
    else:
        entry.dests = [d for d in entry.dests if d != value]


# ------------------------------------------------------------------- entries and origins


def hub_sha(entry: Entry) -> str:
    uri = str(entry.resolved["uri"])
    return uri.split("@", 1)[1].split("/", 1)[0]


def resolved_of(source_origin: Mapping[str, Any], version: str | None, name: str, place: Place) -> dict[str, Any] | str:
    """The ``resolved`` record for a skill installed from ``source_origin`` (a receipt's
    "source"); a string saying why it cannot be locked when it cannot."""
    kind = source_origin.get("kind")
    if kind == "bundled":
        return {"kind": "bundled", "name": name, "version": version}
    if kind == "local":
        folder = Path(str(source_origin.get("path", "")))
        rel = place.relative(folder)
        if rel is None:
            where = "project" if place.scope == "project" else "home folder"
            return f"its source folder {folder} is outside the {where}, so a fresh checkout could not restore it"
        return {"kind": "local", "path": rel}
    if kind == "hf":
        from .hub import HubRef

        ref = HubRef(
            str(source_origin["repo_type"]), str(source_origin["repo_id"]), str(source_origin["sha"]), str(source_origin.get("path") or "")
        )
        revision = source_origin.get("revision")
        return {"kind": "hf", "uri": ref.uri(), "revision": None if revision is None else str(revision)}
    return f"its source kind {kind!r} cannot be locked"


def origin_of(entry: Entry, place: Place) -> dict[str, Any]:
    """The receipt "source" an install of ``entry`` carries (what `add` would have written)."""
    if entry.kind == "bundled":
        return {"kind": "bundled", "name": entry.name}
    if entry.kind == "local":
        return {"kind": "local", "path": os.path.realpath(place.root / str(entry.resolved["path"]))}
    from .hub import HubRef, parse_uri

    pinned = parse_uri(str(entry.resolved["uri"]))
    revision = entry.resolved.get("revision")
    tracked = HubRef(pinned.repo_type, pinned.repo_id, revision, pinned.path)
    return {
        "kind": "hf",
        "uri": tracked.uri(),
        "repo_type": pinned.repo_type,
        "repo_id": pinned.repo_id,
        "revision": revision,
        "path": pinned.path,
        "sha": pinned.revision,
    }


def written_source(origin: Mapping[str, Any], name: str, specs: Iterable[str], cwd: Path, place: Place) -> str:
    """The SKILL argument (as typed) that gave this skill; a spelling that names just it
    when no argument matches (several specs, or a folder of skills picked with --skill)."""
    kind = origin.get("kind")
    for spec in specs:
        if kind == "bundled" and spec == name:
            return spec
        if kind == "hf" and spec.startswith("hf://"):
            from .hub import parse_uri

            try:
                ref = parse_uri(spec)
            except KernelsError:
                continue
            path = str(origin.get("path") or "")
            inside = not ref.path or path == ref.path or path.startswith(ref.path + "/")
            if inside and (ref.repo_id, ref.repo_type, ref.revision) == (
                origin.get("repo_id"),
                origin.get("repo_type"),
                origin.get("revision"),
            ):
                return spec
        if kind == "local" and spec:
            typed = Path(os.path.expanduser(spec))
            real = os.path.realpath(typed if typed.is_absolute() else cwd / typed)
            if real in (origin.get("path"), os.path.dirname(str(origin.get("path")))):
                return spec
    if kind == "local":
        rel = place.relative(Path(str(origin.get("path", ""))))
        return f"./{rel}" if rel else str(origin.get("path"))
    if kind == "hf":
        return str(origin.get("uri"))
    return name


# ------------------------------------------------------- recording what commands changed


@records.record
class Change:
    """One skill that a command put into (or took out of) one target."""

    name: str
    target: Target
    origin: Mapping[str, Any] | None = None  # None: removed
    version: str | None = None
    digest: str = ""
    spec: str | None = None  # the SKILL argument as typed, when the command had one


def places_for(targets: Iterable[Target], loc: Location, state_dir: Callable[[], Path]) -> list[Place]:
    """The lock files that record changes to ``targets`` (the user lock only when a
    --global target is among them, so a project command never asks for the state folder)."""
    targets = list(targets)
    places = []
    if any(t.scope in ("project", "dest") for t in targets):
        places.append(Place.project(loc))
    if any(t.scope == "global" for t in targets):
        places.append(Place.user(state_dir(), loc))
    return places


def check(places: Iterable[Place]) -> None:
    """Refuse before anything is installed when a lock that would be updated is malformed."""
    for place in places:
        read(place.path)


def record(changes: Iterable[Change], places: Iterable[Place], *, cwd: Path, specs: Iterable[str] = ()) -> list[str]:
    """Apply ``changes`` to each lock (read, merge, atomic write under its lock); notes for the user."""
    changes, specs, places = list(changes), list(specs), list(places)
    notes: list[str] = []
    for folder in dict.fromkeys(c.target.path for c in changes if c.origin is not None and c.target.scope == "dest"):
        if places and not any(p.claims(Target(folder, "dest")) for p in places):
            notes.append(f"{folder} is outside the project, so {LOCK_FILE} does not record what went there")
    for place in places:
        mine = [(change, key) for change in changes if (key := place.claims(change.target)) is not None]
        if not mine:
            continue

        def apply(lock: Lock, mine: list[tuple[Change, str]] = mine, place: Place = place) -> None:
            for change, key in mine:
                if change.origin is None:
                    entry = lock.entries.get(change.name)
                    if entry is not None:
                        drop_target(entry, key, change.target)
                        if not entry.agents and not entry.dests:
                            del lock.entries[change.name]
                    continue
                resolved = resolved_of(change.origin, change.version, change.name, place)
                if isinstance(resolved, str):
                    note = f"{change.name} was not recorded in {place.path}: {resolved}"
                    if note not in notes:
                        notes.append(note)
                    continue
                entry = lock.entries.get(change.name)
                if change.spec:
                    spec = change.spec
                elif entry is not None and not specs:  # update: the source as first written still names it
                    spec = entry.source
                else:
                    spec = written_source(change.origin, change.name, specs, cwd, place)
                if entry is None:
                    entry = lock.entries[change.name] = Entry(change.name, spec, resolved, change.digest)
                elif entry.resolved != resolved or entry.digest != change.digest:
                    others = [k for k in keys(entry) if k != key]
                    if others and entry.source != spec:
                        notes.append(
                            f"{place.path} now records {change.name} from {spec} (was {entry.source}); "
                            f"`kernels skills sync` brings its other targets to it"
                        )
                    entry.source, entry.resolved, entry.digest = spec, resolved, change.digest
                add_target(entry, key, change.target)

        edit(place.path, apply)
    return notes
