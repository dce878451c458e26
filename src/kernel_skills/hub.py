"""Skills on the Hugging Face Hub: ``hf://`` addresses, downloads and publishing.

``hf://[datasets/|spaces/]ORG/REPO[@REVISION][/PATH]`` names a skill folder (one with
SKILL.md) or a folder of skill folders in a repo; without PATH, the repo root. A
REVISION is a branch, a tag, ``refs/pr/N`` or a 40-hex commit sha (a pinned install:
``update`` never moves it); a ``/`` inside a branch name is written ``%2F``.

Installing one is: resolve the revision to a commit sha, list that commit's files,
refuse a tree that fails the :mod:`.safety` checks *before downloading anything*,
download only the chosen skill folders with ``snapshot_download`` (its cache, progress
bars, ``HF_TOKEN`` and ``HF_HUB_OFFLINE=1`` apply), then copy them out of the cache
into a private scratch folder, check that copy again and hand it to the installer.
Nothing downloaded is executed or imported.

huggingface_hub is imported inside the functions that need it, so that commands which
never touch the Hub (and `kernels --help`) do not pay for it. Every error it raises is
turned into a one-line :class:`KernelsError` with a fix.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .errors import KernelsError
from .records import field, record
from .safety import Limits, Refused, check_listing, check_tree
from .safety import check_name as check_untrusted_name
from .skill import SKILL_FILE, info_from, is_ignored, parse_front_matter, read_info, validate
from .sourcetypes import ALL, Offer, SkillSource, SourceContext, choose

if TYPE_CHECKING:
    from .publish import Selection

KIND = "hf"
PREFIXES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
DEFAULT_REVISION = "main"
_SPECIAL_REF = re.compile(r"^refs/(?:pr/\d+|convert/[\w.-]+)")
_REPO_PART = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_FORM = "Write hf://ORG/REPO[@REVISION][/PATH] (hf://datasets/... or hf://spaces/... for those repos)"
_OFFLINE_VALUES = {"1", "ON", "YES", "TRUE"}


# ------------------------------------------------------------------------ addresses


@record(frozen=True)
class HubRef:
    """A parsed ``hf://`` address."""

    repo_type: str  # "model", "dataset" or "space"
    repo_id: str  # "ORG/REPO"
    revision: str | None = None  # as written; None = the default branch
    path: str = ""  # folder inside the repo; "" = the root

    @property
    def pinned(self) -> bool:
        """A commit sha: the address names one immutable tree."""
        return self.revision is not None and bool(_SHA.match(self.revision))

    def uri(self, path: str | None = None) -> str:
        text = "hf://" + URL_PREFIX[self.repo_type] + self.repo_id
        if self.revision is not None:
            revision = self.revision if _SPECIAL_REF.fullmatch(self.revision) else self.revision.replace("/", "%2F")
            text += "@" + revision
        path = self.path if path is None else path
        return text + (f"/{path}" if path else "")

    def at(self, path: str) -> HubRef:
        return HubRef(self.repo_type, self.repo_id, self.revision, path)

    def web_url(self, endpoint: str) -> str:
        return f"{endpoint.rstrip('/')}/{URL_PREFIX[self.repo_type]}{self.repo_id}"


def _bad_uri(spec: str, problem: str) -> KernelsError:
    return KernelsError(f"'{spec}' is not a Hub skill address: {problem}", _FORM + ".", usage=True)


def parse_uri(spec: str) -> HubRef:
    """``hf://[TYPE/]ORG/REPO[@REVISION][/PATH]`` -> :class:`HubRef` (a usage error if malformed)."""
    if not spec.startswith("hf://"):
        raise _bad_uri(spec, "it does not start with hf://")
    rest = spec[len("hf://") :]
    repo_type = "model"
    first, _, after = rest.partition("/")
    if first in PREFIXES and after:
        repo_type, rest = PREFIXES[first], after
    if repo_type == "model" and first == "buckets":
        raise _bad_uri(spec, "buckets hold no versioned skills; use a model, dataset or Space repo")
    org, _, rest = rest.partition("/")
    if "@" in rest.split("/", 1)[0]:
        name, _, tail = rest.partition("@")
        match = _SPECIAL_REF.match(tail)
        if match:  # refs/pr/N and refs/convert/NAME contain '/' of their own
            revision, remainder = match.group(0), tail[match.end() :]
            if remainder and not remainder.startswith("/"):
                raise _bad_uri(spec, f"cannot tell where the revision '{tail}' ends")
            path = remainder[1:]
        else:
            revision, _, path = tail.partition("/")
            revision = unquote(revision)
        if not revision:
            raise _bad_uri(spec, "the revision after '@' is empty")
    else:
        name, _, path = rest.partition("/")
        revision = None
    for part, what in ((org, "organization or user"), (name, "repo name")):
        if not part:
            raise _bad_uri(spec, f"the {what} is missing")
        if not _REPO_PART.match(part) or "--" in part or ".." in part:
            raise _bad_uri(spec, f"'{part}' is not a valid {what}")
    path = path.strip("/")
    if path and any(p in ("", ".", "..") for p in path.split("/")):
        raise _bad_uri(spec, f"the path '{path}' has an empty, '.' or '..' part")
    return HubRef(repo_type, f"{org}/{name}", revision, path)


def parse_repo(text: str, repo_type: str) -> HubRef:
    """``--repo ORG/REPO`` of `publish` (an hf:// address is accepted too)."""
    if text.startswith("hf://"):
        ref = parse_uri(text)
        if ref.revision or ref.path:
            raise KernelsError(
                f"--repo {text} names a revision or a folder", "Give just the repo; use --revision for a branch.", usage=True
            )
        return ref
    if repo_type not in URL_PREFIX:
        raise KernelsError(f"unknown --repo-type '{repo_type}'", "Use model or dataset.", usage=True)
    ref = parse_uri(f"hf://{URL_PREFIX[repo_type]}{text}")
    if ref.revision or ref.path:
        raise KernelsError(f"--repo {text} is not ORG/REPO", "Give the repo as ORG/REPO; use --revision for a branch.", usage=True)
    return ref


# --------------------------------------------------------------------------- errors


def is_offline(ctx: SourceContext) -> bool:
    return _offline(ctx.env)


def _offline(env: Mapping[str, str]) -> bool:
    """HF_HUB_OFFLINE=1, as huggingface_hub read it at import or as the environment says now."""
    from huggingface_hub import constants

    return constants.is_offline_mode() or (env.get("HF_HUB_OFFLINE") or "").upper() in _OFFLINE_VALUES


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _has_token() -> bool:
    from huggingface_hub import get_token

    return get_token() is not None


_LOGIN = "set HF_TOKEN to a token from https://huggingface.co/settings/tokens or run `hf auth login`"


def _transport_error() -> type[Exception]:
    """The HTTP library's base error (connection refused, timeouts, bad status).

    huggingface_hub 1.x talks through httpx and 2.x through httpx2, and only the one it
    uses is installed, so the class is taken from huggingface_hub's own error hierarchy
    instead of importing either library by name.
    """
    from huggingface_hub import errors

    for cls in errors.HfHubHTTPError.__mro__[1:]:
        if cls.__name__ == "HTTPError" and cls.__module__.split(".")[0].startswith("httpx"):
            return cls
    return OSError  # neither: HfHubHTTPError is an OSError and the handler below still gives one line


class RevisionGone(KernelsError):
    """The Hub answered that the revision (branch, tag or commit) does not exist (any more)."""


@contextmanager
def _hub_errors(ref: HubRef, label: str, *, offline: bool = False, writing: bool = False) -> Iterator[None]:
    """Turn whatever huggingface_hub raises into one line saying what happened and what to do."""
    from huggingface_hub import errors

    transport_error = _transport_error()

    try:
        yield
    except KernelsError:
        raise
    except errors.GatedRepoError:
        raise KernelsError(
            f"{label}: {ref.repo_id} is a gated repo and your token has not been granted access",
            f"Request access at {ref.web_url(_endpoint())}, then {_LOGIN}.",
        ) from None
    except errors.RepositoryNotFoundError as exc:
        status = exc.response.status_code if exc.response is not None else 404
        kind = "" if ref.repo_type == "model" else f"{ref.repo_type} "
        why = " (it may be private: no token was sent)" if status == 401 and not _has_token() else ""
        raise KernelsError(
            f"{label}: {kind}repo {ref.repo_id} not found on the Hub ({status}){why}",
            f"Check the name (datasets are hf://datasets/ORG/REPO, Spaces hf://spaces/ORG/REPO); for a private repo, {_LOGIN}.",
        ) from None
    except errors.RevisionNotFoundError:
        raise RevisionGone(
            f"{label}: revision '{ref.revision or DEFAULT_REVISION}' not found in {ref.repo_id}",
            "Check the branch, tag or commit sha after '@'.",
        ) from None
    except errors.RemoteEntryNotFoundError as exc:
        raise KernelsError(
            f"{label}: a file listed in {ref.repo_id} could not be downloaded ({exc.response.url})",
            "Re-run; if it persists, the repo is being changed right now.",
        ) from None
    except errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else 0
        if status == 401:
            raise KernelsError(
                f"{label}: the Hub rejected your token (401 Unauthorized)"
                if _has_token()
                else f"{label}: the Hub requires a token for this (401 Unauthorized)",
                f"{_LOGIN[0].upper()}{_LOGIN[1:]}" + ("; a token needs write access to publish" if writing else "") + ".",
            ) from None
        if status == 403:
            raise KernelsError(
                f"{label}: your token may not {'write to' if writing else 'read'} {ref.repo_id} (403 Forbidden)",
                "Use a token with write access to that organization, or a repo of your own."
                if writing
                else "Use a token with access to it.",
            ) from None
        raise KernelsError(
            f"{label}: the Hub answered {status or 'an error'} ({str(exc).splitlines()[0]})",
            "Try again later" + ("." if writing else "; nothing was installed."),
        ) from None
    except (
        errors.LocalEntryNotFoundError,
        errors.RevisionResolutionError,
        errors.CachedRepoTreeNotFoundError,
        errors.OfflineModeIsEnabled,
    ):
        if offline:
            raise KernelsError(
                f"{label} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids downloading it",
                "Unset HF_HUB_OFFLINE and run the command once online.",
            ) from None
        raise KernelsError(
            f"{label}: cannot reach the Hub at {_endpoint()} and the skill is not in the local cache",
            "Check your connection (and HF_ENDPOINT, if set) and re-run.",
        ) from None
    except (transport_error, errors.FileMetadataError) as exc:
        raise KernelsError(
            f"{label}: talking to the Hub failed ({type(exc).__name__}: {exc})",
            "Check your connection and re-run" + ("." if writing else "; nothing was installed."),
        ) from None
    except OSError as exc:
        # huggingface_hub reports a download cut short as an OSError ("Consistency check failed").
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        what = "the upload failed" if writing else "the download failed"
        raise KernelsError(
            f"{label}: {what} ({message})", "Re-run the command" + ("." if writing else "; nothing was installed.")
        ) from None


@contextmanager
def _progress(quiet: bool) -> Iterator[None]:
    """huggingface_hub's own progress bars (stderr, terminals only); none with -q/--json."""
    if not quiet:
        yield
        return
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()


# --------------------------------------------------------------------------- lookup


@record
class Commit:
    """One commit of a repo: its sha and the files in it (path -> size)."""

    ref: HubRef
    revision: Any  # huggingface_hub's ResolvedRevision (a str whose .resolved is the sha)
    files: dict[str, int | None] = field(default_factory=dict)
    offline: bool = False
    unreachable: bool = False  # the Hub did not answer: the revision came from the cache, so must the files

    @property
    def cache_only(self) -> bool:
        return self.offline or self.unreachable

    @property
    def sha(self) -> str:
        return str(self.revision.resolved)

    def under(self, prefix: str) -> dict[str, int | None]:
        """The files inside folder ``prefix`` (relative to it), regenerable clutter left out."""
        start = f"{prefix}/" if prefix else ""
        out = {}
        for path, size in self.files.items():
            if not path.startswith(start):
                continue
            rel = path[len(start) :]
            if not prefix and rel == ".gitattributes":
                continue  # the repo's git plumbing, not part of a skill at its root
            if any(is_ignored(part) for part in rel.split("/")):
                continue
            out[rel] = size
        return out


def lookup(ref: HubRef, ctx: SourceContext) -> Commit:
    """Resolve the revision to a commit and list that commit's files (from the cache when it
    has them; offline, only from the cache)."""
    from huggingface_hub import HfApi, get_cached_repo_tree
    from huggingface_hub.errors import CachedRepoTreeNotFoundError
    from huggingface_hub.hf_api import RepoFile

    offline = is_offline(ctx)
    api = HfApi()
    label = ref.uri()
    with _hub_errors(ref, label, offline=offline):
        with _cache_fallback() as fell_back:
            revision = api.resolve_revision(ref.repo_id, repo_type=ref.repo_type, revision=ref.revision, local_files_only=offline)
        unreachable = bool(fell_back)
        try:
            entries = get_cached_repo_tree(ref.repo_id, repo_type=ref.repo_type, revision=revision)
        except CachedRepoTreeNotFoundError:
            if offline or unreachable:
                raise
            entries = [
                f
                for f in api.list_repo_tree(ref.repo_id, repo_type=ref.repo_type, revision=revision.resolved, recursive=True)
                if isinstance(f, RepoFile)
            ]
    return Commit(ref, revision, {f.path: f.size for f in entries}, offline, unreachable)


@contextmanager
def _cache_fallback() -> Iterator[list[str]]:
    """Notice resolve_revision answering from the cache because the Hub did not answer.

    It says so only in a warning of its logger. Knowing it matters: the files must then
    come from the cache too (downloading them would retry for ~24 s before failing), and
    the warning itself, which names no skill, is not printed. The list it yields gets one
    entry when that happened."""
    import logging

    seen: list[str] = []

    def note(record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Could not reach the Hub"):
            seen.append(record.getMessage())
            return False
        return True

    logger = logging.getLogger("huggingface_hub.hf_api")
    logger.addFilter(note)
    try:
        yield seen
    finally:
        logger.removeFilter(note)


ROOT = ""


def skills_in(commit: Commit) -> tuple[dict[str, str], bool]:
    """(folder name -> folder path in the repo, single skill?) for the address's folder.
    A skill at the repo root is keyed ROOT: its name comes from its SKILL.md."""
    ref, prefix = commit.ref, commit.ref.path
    under = commit.under(prefix)
    if not under:
        where = f"no folder '{prefix}'" if prefix else "no files"
        raise KernelsError(
            f"{ref.uri()} has {where} at commit {commit.sha[:7]}",
            f"Check the path; `kernels skills add --list {ref.at('').uri()}` lists the skills the repo holds.",
        )
    if SKILL_FILE in under:
        return {prefix.rsplit("/", 1)[-1] if prefix else ROOT: prefix}, True
    names = sorted(
        {rel.split("/")[0] for rel in under if rel.count("/") == 1 and rel.endswith("/" + SKILL_FILE) and not rel.startswith(".")}
    )
    if not names:
        deeper = sorted({rel.rsplit("/", 1)[0] for rel in under if rel.endswith("/" + SKILL_FILE)})
        hint = f"Skills are deeper, e.g. {ref.at(_join(prefix, deeper[0].rsplit('/', 1)[0])).uri()}. " if deeper else ""
        raise KernelsError(f"{ref.uri()} holds no {SKILL_FILE} and no skill folders", f"{hint}A skill is a folder with a SKILL.md file.")
    return {name: _join(prefix, name) for name in names}, False


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _pattern(path: str) -> str:
    """fnmatch pattern matching exactly ``path`` (the Hub's allow_patterns are fnmatch)."""
    return re.sub(r"([*?\[])", r"[\1]", path)


def download(commit: Commit, paths: Sequence[str], ctx: SourceContext) -> Path:
    """snapshot_download of exactly ``paths`` (files of the commit) into the cache; the
    snapshot folder. allow_patterns name each file, so nothing that was not checked
    (say a huge ``__pycache__`` file next to the skill) is ever fetched."""
    from huggingface_hub import snapshot_download

    ref = commit.ref
    with _hub_errors(ref, ref.uri(), offline=commit.offline), _progress(ctx.quiet):
        folder = snapshot_download(
            ref.repo_id,
            repo_type=ref.repo_type,
            revision=commit.revision,
            allow_patterns=[_pattern(path) for path in paths],
            local_files_only=commit.cache_only,
        )
    return Path(folder)


def _root_name(commit: Commit, ctx: SourceContext) -> str:
    """The name a skill at the repo root gives itself in SKILL.md (the repo has no folder name for it)."""
    label = commit.ref.uri()
    check_listing(commit.under(ROOT), label, ctx.limits)  # the whole skill, before even its SKILL.md
    snapshot = download(commit, [SKILL_FILE], ctx)
    try:
        data = parse_front_matter((snapshot / SKILL_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise KernelsError(f"{label}: cannot read its {SKILL_FILE} ({exc})", "Fix the skill's SKILL.md front matter.") from None
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise KernelsError(f"{label}: {SKILL_FILE} has no 'name'", "A skill at the root of a repo must name itself in SKILL.md.")
    check_untrusted_name(name, label)
    return name


def _named(commit: Commit, ctx: SourceContext) -> tuple[dict[str, str], bool]:
    folders, single = skills_in(commit)
    if ROOT in folders:
        folders = {_root_name(commit, ctx): ROOT}
    return folders, single


# -------------------------------------------------------------------------- install


def resolve(ref: HubRef, ctx: SourceContext, select: Sequence[str] | None = None) -> list[SkillSource]:
    """The skills an address names, downloaded, checked and copied into ``ctx.scratch``."""
    commit = lookup(ref, ctx)
    folders, single = _named(commit, ctx)
    chosen = {name: folders[name] for name in choose(list(folders), select, label=ref.uri(), single=single)}
    listings: dict[str, dict[str, int | None]] = {}
    for name, prefix in chosen.items():
        label = ref.uri(prefix)
        check_untrusted_name(name, label)
        listings[name] = commit.under(prefix)
        check_listing(listings[name], label, ctx.limits)  # before a single byte is downloaded
    snapshot = download(commit, [_join(chosen[name], rel) for name in chosen for rel in listings[name]], ctx)
    out = []
    for name, prefix in chosen.items():
        label = ref.uri(prefix)
        dest = ctx.scratch.new() / name
        _copy_out(snapshot, prefix, listings[name], dest, label)
        check_tree(dest, label, ctx.limits)
        origin = {
            "kind": KIND,
            "uri": label,
            "repo_type": ref.repo_type,
            "repo_id": ref.repo_id,
            "revision": ref.revision,
            "path": prefix,
            "sha": commit.sha,
        }
        out.append(SkillSource(name, dest, origin, label=label, note=f"commit {commit.sha[:7]}"))
    return out


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _copy_out(snapshot: Path, prefix: str, files: Mapping[str, int | None], dest: Path, label: str) -> None:
    """Copy exactly the listed files out of the snapshot into ``dest`` as plain files.

    The cache's snapshot folder holds symlinks into its blob store; the copy must hold
    real files, and only blobs inside the cache are followed. The Hub keeps no file
    modes, so a file starting with ``#!`` becomes executable (scripts run as they did).
    """
    cache_root = os.path.realpath(snapshot.parents[2])  # <cache>/<repo folder>/snapshots/<sha>
    base = snapshot / prefix if prefix else snapshot
    os.makedirs(dest)
    for rel in sorted(files):
        src = base.joinpath(*rel.split("/"))
        real = os.path.realpath(src)
        if not _inside(real, cache_root):
            raise Refused(
                label, rel, "resolves outside the Hugging Face cache", "Clear that repo from the cache (`hf cache delete`) and re-run."
            )
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise KernelsError(
                f"{label}: {rel} is missing from the downloaded snapshot", "Re-run the command online to complete the download."
            ) from None
        if not stat.S_ISREG(st.st_mode):
            raise Refused(
                label, rel, "is not a regular file in the cache", "Clear that repo from the cache (`hf cache delete`) and re-run."
            )
        out = dest.joinpath(*rel.split("/"))
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(real, "rb") as fin, open(out, "xb") as fout:
            head = fin.read(2)
            fout.write(head)
            while chunk := fin.read(1 << 20):
                fout.write(chunk)
        os.chmod(out, 0o755 if head == b"#!" else 0o644)


def from_origin(origin: Mapping[str, Any], ctx: SourceContext) -> SkillSource:
    """The skill a receipt recorded, at the commit its revision points to now."""
    ref = _ref_of(origin)
    found = resolve(ref, ctx, select=[ALL])
    if len(found) != 1:
        raise KernelsError(
            f"{ref.uri()} is no longer a single skill but a folder of {len(found)}",
            "Install the ones you want with `kernels skills add --skill NAME`.",
        )
    return found[0]


def _ref_of(origin: Mapping[str, Any]) -> HubRef:
    try:
        revision = origin.get("revision")
        return HubRef(
            str(origin["repo_type"]), str(origin["repo_id"]), None if revision is None else str(revision), str(origin.get("path") or "")
        )
    except KeyError as exc:
        raise KernelsError(f"a receipt's Hub source lacks {exc}", "Reinstall the skill with `kernels skills add --force`.") from None


def unchanged(origin: Mapping[str, Any], ctx: SourceContext) -> str | None:
    """Why the install is surely current, or None: pinned shas never move; a branch or tag
    is re-resolved (one request) and compared with the recorded sha."""
    ref = _ref_of(origin)
    sha = str(origin.get("sha") or "")
    if ref.pinned:
        return f"pinned to {ref.revision[:7]}"  # type: ignore[index]
    from huggingface_hub import HfApi

    offline = is_offline(ctx)
    with _hub_errors(ref, ref.uri(), offline=offline):
        if offline:
            now = str(HfApi().resolve_revision(ref.repo_id, repo_type=ref.repo_type, revision=ref.revision, local_files_only=True).resolved)
        else:
            # Ask the Hub itself: resolve_revision falls back to the cached sha when the Hub
            # cannot be reached, and "still at <sha>" would then report a check that never
            # happened (a CI update step would silently stay old). Unreachable = failed.
            now = str(HfApi().repo_info(ref.repo_id, repo_type=ref.repo_type, revision=ref.revision).sha)
    if now == sha:
        where = " in the local cache" if offline else ""
        return f"{ref.revision or DEFAULT_REVISION} is still at {sha[:7]}{where}"
    return None


def latest_sha(ref: HubRef, ctx: SourceContext) -> str:
    """The commit ``ref``'s revision points to on the Hub now, asked of the Hub itself:
    never the cached answer (resolve_revision falls back to the cache when the Hub is
    unreachable, and "up to date" must not be said without looking)."""
    if is_offline(ctx):
        raise KernelsError(
            f"{ref.uri()}: HF_HUB_OFFLINE=1 is set, so whether it moved cannot be checked", "Unset HF_HUB_OFFLINE and re-run."
        )
    from huggingface_hub import HfApi

    with _hub_errors(ref, ref.uri()):
        info = HfApi().repo_info(ref.repo_id, repo_type=ref.repo_type, revision=ref.revision)
    return str(info.sha)


def offers(ref: HubRef, ctx: SourceContext) -> list[Offer]:
    """The skills at an address, described from their SKILL.md (only those are downloaded)."""
    commit = lookup(ref, ctx)
    folders, _ = _named(commit, ctx)
    paths = {name: _join(prefix, SKILL_FILE) for name, prefix in folders.items()}
    check_listing({p: commit.files.get(p) for p in paths.values()}, ref.uri(), ctx.limits)
    snapshot = download(commit, list(paths.values()), ctx)
    out = []
    for name, prefix in folders.items():
        address = ref.uri(prefix)
        try:
            data = parse_front_matter((snapshot / paths[name]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            out.append(Offer(name, address, problem=f"unreadable {SKILL_FILE}: {exc}"))
            continue
        info = info_from(data, fallback_name=name)
        out.append(Offer(name, address, info.description, info.version))
    return out


# -------------------------------------------------------------------------- publish


@record
class Published:
    name: str
    version: str | None
    ref: HubRef  # the repo, at the revision to install from, at the skill's folder
    commit: str
    commit_url: str
    pr_url: str | None = None
    files: int = 0

    @property
    def address(self) -> str:
        return self.ref.uri()

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.name,
            "version": self.version,
            "repo_id": self.ref.repo_id,
            "repo_type": self.ref.repo_type,
            "revision": self.ref.revision,
            "path": self.ref.path,
            "commit": self.commit,
            "commit_url": self.commit_url,
            "pull_request": self.pr_url,
            "files": self.files,
            "install": f"kernels skills add {self.address}",
        }


def publish(
    folder: Path,
    repo: HubRef,
    *,
    limits: Limits,
    private: bool = False,
    revision: str | None = None,
    create_pr: bool = False,
    quiet: bool = False,
    env: Mapping[str, str] | None = None,
    excludes: Sequence[str] = (),
    allow_secrets: Sequence[str] = (),
    dry_run: bool = False,
) -> tuple[Published | None, Selection]:
    """Check ``folder`` like an install would, then upload it to ``repo`` as ``<name>/``.

    Only the files :func:`kernel_skills.publish.select` picks are sent (likely secrets are
    refused unless allowed); they are staged into a private folder, checked there like an
    untrusted tree, and that folder is uploaded. The folder on the Hub is replaced as a
    whole (files removed locally are removed there too). With ``create_pr`` the change is
    opened as a pull request against the default branch instead. ``dry_run`` stops after
    the checks and returns no :class:`Published`.
    """
    import tempfile

    from . import fsops
    from .publish import select, stage

    if create_pr and revision:
        raise KernelsError(
            "--create-pr opens a pull request against the default branch",
            "Drop --revision, or drop --create-pr to push to that branch.",
            usage=True,
        )
    report = validate(folder)
    if not report.ok:
        raise KernelsError(
            f"{folder} is not a valid skill: {report.summary}", f"Run `kernels skills validate {folder}`; nothing was uploaded."
        )
    real = Path(os.path.realpath(folder))
    name = real.name
    check_untrusted_name(name, str(folder))
    selection = select(real, excludes=excludes, allow_secrets=allow_secrets, scan_limit=limits.max_file)
    selection.folder = folder
    selection.refuse_secrets()
    version = read_info(real).version
    target = HubRef(repo.repo_type, repo.repo_id, revision, name)
    label = repo.uri()
    scratch = Path(tempfile.mkdtemp(prefix="kernel-skills-publish-"))
    try:
        staged = stage(selection, scratch / name)
        check_tree(staged, str(folder), limits)
        sent = validate(staged)
        if not sent.ok:
            raise KernelsError(
                f"{folder} without its excluded files is not a valid skill: {sent.summary}",
                "Keep the files SKILL.md needs (check .skillignore and --exclude); nothing was uploaded.",
            )
        if dry_run:
            return None, selection
        if _offline(env or {}):
            raise KernelsError("HF_HUB_OFFLINE=1 is set, and publishing needs the Hub", "Unset HF_HUB_OFFLINE and re-run.")
        from huggingface_hub import HfApi

        if not _has_token():
            raise KernelsError(
                f"publishing to {repo.repo_id} needs a Hugging Face token with write access, and none is set",
                f"{_LOGIN[0].upper()}{_LOGIN[1:]}.",
            )
        api = HfApi()
        with _hub_errors(repo, label, writing=True), _progress(quiet):
            api.create_repo(repo.repo_id, repo_type=repo.repo_type, private=private, exist_ok=True)
            if revision:
                api.create_branch(repo.repo_id, repo_type=repo.repo_type, branch=revision, exist_ok=True)
            info = api.upload_folder(
                repo_id=repo.repo_id,
                repo_type=repo.repo_type,
                folder_path=str(staged),
                path_in_repo=name,
                revision=revision,
                create_pr=create_pr,
                commit_message=f"Publish skill {name}" + (f" {version}" if version else ""),
                commit_description=f"Uploaded with `kernels skills publish`. Install it with `kernels skills add {target.uri()}`.",
                delete_patterns=["*"],
            )
    finally:
        fsops.remove(str(scratch))
    pr_revision = getattr(info, "pr_revision", None)
    if create_pr and pr_revision:
        target = HubRef(repo.repo_type, repo.repo_id, pr_revision, name)
    published = Published(
        name,
        version,
        target,
        str(info.oid),
        str(info.commit_url),
        getattr(info, "pr_url", None),
        len(selection.files) + len(selection.links),
    )
    return published, selection


__all__ = ["HubRef", "parse_uri", "parse_repo", "resolve", "from_origin", "unchanged", "offers", "publish", "Published"]
