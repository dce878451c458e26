"""A small Hugging Face Hub on 127.0.0.1, for testing against the real huggingface_hub client.

It answers the endpoints that ``snapshot_download``, ``HfApi.resolve_revision``,
``list_repo_tree``, ``create_repo``, ``create_branch`` and ``upload_folder`` use (checked
against huggingface_hub 1.33.0's source), with the headers the client relies on:

  GET  /api/{models,datasets,spaces}/ORG/REPO[/revision/REV][?blobs=true]   repo info: id, sha, siblings
  GET  /api/{type}s/ORG/REPO/tree/REV[/PATH][?recursive=true]               file listing (one page)
  HEAD /[datasets/|spaces/]ORG/REPO/resolve/REV/PATH                        X-Repo-Commit, ETag, Content-Length;
  GET  (same)                                                               X-Linked-Etag/-Size for LFS files;
                                                                            Range requests answered with 206
  POST /api/repos/create                                                    409 when it exists
  POST /api/{type}s/ORG/REPO/branch/BRANCH                                  409 when it exists
  POST /api/{type}s/ORG/REPO/preupload/REV                                  upload mode per file (always "regular")
  POST /api/{type}s/ORG/REPO/commit/REV[?create_pr=1]                       ndjson: header, file, deletedFile, deletedFolder
  POST /api/{type}s/ORG/REPO/discussions                                    a pull request: refs/pr/N
  GET  /api/{type}s/ORG/REPO/discussions/N                                  its details

Errors come the way the Hub sends them: ``X-Error-Code`` RepoNotFound (401 without a
token, 404 with one), RevisionNotFound, EntryNotFound, GatedRepo (file downloads of a
gated repo without a granted token); an unknown token gets 401 with
``X-Error-Message: Invalid credentials in Authorization header``; a write outside the
token's namespaces gets 403. Failure hooks for tests: :meth:`FakeHub.cut` drops the
connection part-way through a file, :meth:`FakeHub.stall` stops sending part-way,
:meth:`FakeHub.fail` answers a file's GETs with an error status.
Anything else is answered 404 and recorded in :attr:`FakeHub.unexpected`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
LFS_FROM = 1_000_000  # files this big (or binary ones) are stored in LFS, as the Hub does with its rules
INVALID_TOKEN = "Invalid credentials in Authorization header"
NOW = "2026-01-01T00:00:00.000Z"


def blob_oid(data: bytes) -> str:
    """git's blob id: what the Hub reports as a file's oid and its ETag."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(data: bytes) -> bool:
    return len(data) >= LFS_FROM or b"\0" in data[:8000]


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    gated: bool = False  # files need a token granted access; info and listings do not
    refs: dict[str, str] = field(default_factory=dict)  # branch / tag / refs/pr/N -> commit sha
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> the whole tree
    prs: int = 0

    @property
    def namespace(self) -> str:
        return self.repo_id.split("/")[0]

    def at(self, revision: str) -> str | None:
        """The commit a revision names: a ref, a full sha."""
        if revision in self.refs:
            return self.refs[revision]
        return revision if revision in self.commits else None


class FakeHub:
    """The server and the repos it serves. Use as a context manager or start()/stop()."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.tokens: dict[str, set[str]] = {}  # token -> namespaces it may write to (and read, if private)
        self.granted: set[str] = set()  # tokens granted access to gated repos
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request
        self.unexpected: list[tuple[str, str]] = []
        self.lock = threading.RLock()
        self._cuts: dict[str, list[int]] = {}  # file path -> byte counts to stop at, one per GET
        self._stalls: dict[str, int] = {}
        self._fails: dict[str, int] = {}
        self._stop = threading.Event()
        self._count = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.hub = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent): from now on connections are refused, as by a Hub that is down."""
        if self._stop.is_set():
            return
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ repo content

    def repo(self, repo_id: str, repo_type: str = "model") -> Repo:
        return self.repos[(repo_type, repo_id)]

    def create(self, repo_id: str, *, repo_type: str = "model", private: bool = False) -> Repo:
        with self.lock:
            repo = Repo(repo_type, repo_id, private)
            self.repos[(repo_type, repo_id)] = repo
            # A new Hub repo starts with one commit holding .gitattributes.
            self._new_commit(repo, "main", {".gitattributes": b"*.bin filter=lfs diff=lfs merge=lfs -text\n"}, base=None)
            return repo

    def commit(
        self,
        repo_id: str,
        files: dict[str, bytes | str | None],
        *,
        repo_type: str = "model",
        branch: str = "main",
        private: bool = False,
    ) -> str:
        """Add, change (or with None, delete) files on a branch, creating repo and branch as needed; the new sha."""
        with self.lock:
            if (repo_type, repo_id) not in self.repos:
                self.create(repo_id, repo_type=repo_type, private=private)
            repo = self.repo(repo_id, repo_type)
            base = repo.refs.get(branch, repo.refs["main"])
            tree = dict(repo.commits[base])
            for path, content in files.items():
                if content is None:
                    tree.pop(path, None)
                else:
                    tree[path] = content.encode() if isinstance(content, str) else content
            return self._new_commit(repo, branch, tree, base=base)

    def tag(self, repo_id: str, tag: str, sha: str, *, repo_type: str = "model") -> None:
        self.repo(repo_id, repo_type).refs[tag] = sha

    def files(self, repo_id: str, revision: str = "main", *, repo_type: str = "model") -> dict[str, bytes]:
        repo = self.repo(repo_id, repo_type)
        return dict(repo.commits[repo.at(revision) or ""])

    def _new_commit(self, repo: Repo, ref: str, tree: dict[str, bytes], *, base: str | None) -> str:
        self._count += 1
        digest = hashlib.sha1(f"{base}:{self._count}:{repo.repo_id}".encode())
        for path in sorted(tree):
            digest.update(f"{path}:{blob_oid(tree[path])}\n".encode())
        sha = digest.hexdigest()
        repo.commits[sha] = tree
        repo.refs[ref] = sha
        return sha

    # ------------------------------------------------------------------ failure hooks

    def cut(self, path: str, after: int, times: int = 1) -> None:
        """The next ``times`` GETs of file ``path`` drop the connection after ``after`` bytes."""
        self._cuts[path] = [after] * times

    def stall(self, path: str, after: int) -> None:
        """Every GET of ``path`` sends ``after`` bytes, then nothing until the server stops."""
        self._stalls[path] = after

    def fail(self, path: str, status: int | None = 500) -> None:
        """Every GET of file ``path`` answers ``status`` (None: serve it again)."""
        if status is None:
            self._fails.pop(path, None)
        else:
            self._fails[path] = status

    def hits(self, fragment: str, method: str | None = None) -> int:
        return sum(1 for m, p in self.requests if fragment in p and (method is None or m == method))


_API = re.compile(r"^/api/(models|datasets|spaces)/([^/]+)/([^/]+)(?:/(.*))?$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    @property
    def hub(self) -> FakeHub:
        return self.server.hub  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ plumbing

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, *, head: bool = False) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _json(self, status: int, data: object, headers: dict[str, str] | None = None, *, head: bool = False) -> None:
        self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})}, head=head)

    def _error(self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None, *, head: bool = False) -> None:
        extra = {"X-Error-Message": message, **(headers or {})}
        if code:
            extra["X-Error-Code"] = code
        self._json(status, {"error": message}, extra, head=head)

    def _token(self) -> tuple[bool, str | None]:
        """(acceptable?, token): no token is acceptable (anonymous); an unknown one is not."""
        auth = self.headers.get("Authorization") or ""
        if not auth:
            return True, None
        token = auth.removeprefix("Bearer ").strip()
        return token in self.hub.tokens, token

    def _repo_for_read(self, repo_type: str, repo_id: str, *, head: bool = False) -> Repo | None:
        ok, token = self._token()
        if not ok:
            self._error(401, None, INVALID_TOKEN, head=head)
            return None
        repo = self.hub.repos.get((repo_type, repo_id))
        visible = repo is not None and (not repo.private or (token is not None and repo.namespace in self.hub.tokens[token]))
        if not visible:
            status = 404 if token else 401
            self._error(status, "RepoNotFound", "Repository not found", head=head)
            return None
        return repo

    def _commit_for_read(self, repo_type: str, repo_id: str, revision: str, *, head: bool = False) -> tuple[Repo, str] | None:
        """The repo and the commit a revision names; None after answering the error."""
        repo = self._repo_for_read(repo_type, repo_id, head=head)
        if repo is None:
            return None
        sha = repo.at(revision)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head=head)
            return None
        return repo, sha

    def _may_write(self, namespace: str) -> bool:
        ok, token = self._token()
        if not ok:
            self._error(401, None, INVALID_TOKEN)
            return False
        if token is None:
            self._error(401, None, "You must be authenticated to do this")
            return False
        if namespace not in self.hub.tokens[token]:
            self._error(403, None, f"You don't have the rights to write to {namespace}")
            return False
        return True

    # ------------------------------------------------------------------ dispatch

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        if self.hub._stop.is_set():  # a kept-alive connection to a stopped Hub: hang up
            self.close_connection = True
            return
        split = urlsplit(self.path)
        path, query = split.path, parse_qs(split.query)
        with self.hub.lock:
            self.hub.requests.append((method, path))
        body = self._body() if method == "POST" else b""
        api = _API.match(path)
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body or b"{}"))
        if api:
            repo_type, repo_id, rest = TYPES[api.group(1)], f"{api.group(2)}/{api.group(3)}", api.group(4) or ""
            action, _, arg = rest.partition("/")
            if method == "GET" and action in ("", "revision"):
                return self._info(repo_type, repo_id, unquote(arg) if action else "main", query)
            if method == "GET" and action == "tree":
                revision, _, folder = arg.partition("/")
                return self._tree(repo_type, repo_id, unquote(revision), unquote(folder), query)
            if method == "POST" and action == "branch":
                return self._branch(repo_type, repo_id, unquote(arg), json.loads(body or b"{}"))
            if method == "POST" and action == "preupload":
                return self._preupload(repo_type, repo_id, unquote(arg), json.loads(body or b"{}"))
            if method == "POST" and action == "commit":
                return self._commit(repo_type, repo_id, unquote(arg), body, query)
            if method == "POST" and action == "discussions" and not arg:
                return self._open_pr(repo_type, repo_id, json.loads(body or b"{}"))
            if method == "GET" and action == "discussions" and arg.isdigit():
                return self._pr_details(repo_type, repo_id, int(arg))
        resolved = self._parse_resolve(path)
        if resolved and method in ("GET", "HEAD"):
            return self._resolve(*resolved, head=method == "HEAD")
        with self.hub.lock:
            self.hub.unexpected.append((method, self.path))
        self._error(404, None, f"FakeHub does not serve {method} {path}", head=method == "HEAD")

    @staticmethod
    def _parse_resolve(path: str) -> tuple[str, str, str, str] | None:
        parts = path.lstrip("/").split("/")
        repo_type = "model"
        if parts and parts[0] in ("datasets", "spaces"):
            repo_type = TYPES[parts[0]]
            parts = parts[1:]
        if len(parts) < 5 or parts[2] != "resolve":
            return None
        return repo_type, f"{parts[0]}/{parts[1]}", unquote(parts[3]), unquote("/".join(parts[4:]))

    # ------------------------------------------------------------------ reads

    def _info(self, repo_type: str, repo_id: str, revision: str, query: dict[str, list[str]]) -> None:
        found = self._commit_for_read(repo_type, repo_id, revision)
        if found is None:
            return
        repo, sha = found
        blobs = (query.get("blobs") or ["false"])[0].lower() == "true"
        siblings = []
        for path, data in sorted(repo.commits[sha].items()):
            entry: dict[str, object] = {"rfilename": path}
            if blobs:
                entry.update(size=len(data), blobId=blob_oid(data))
                if is_lfs(data):
                    entry["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(entry)
        self._json(
            200,
            {
                "_id": hashlib.md5(repo_id.encode()).hexdigest()[:24],
                "id": repo_id,
                "author": repo.namespace,
                "sha": sha,
                "private": repo.private,
                "gated": "manual" if repo.gated else False,
                "disabled": False,
                "lastModified": NOW,
                "createdAt": NOW,
                "tags": [],
                "siblings": siblings,
            },
        )

    def _tree(self, repo_type: str, repo_id: str, revision: str, folder: str, query: dict[str, list[str]]) -> None:
        found = self._commit_for_read(repo_type, repo_id, revision)
        if found is None:
            return
        repo, sha = found
        recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
        tree = repo.commits[sha]
        start = f"{folder}/" if folder else ""
        if folder and not any(p.startswith(start) for p in tree):
            return self._error(404, "EntryNotFound", f"{folder} does not exist on {revision}", {"X-Repo-Commit": sha})
        entries: list[dict[str, object]] = []
        folders: set[str] = set()
        for path, data in sorted(tree.items()):
            if not path.startswith(start):
                continue
            rel = path[len(start) :]
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                if depth == 1 or recursive:
                    folders.add(start + "/".join(parts[:depth]))
            if len(parts) > 1 and not recursive:
                continue
            entry: dict[str, object] = {"type": "file", "oid": blob_oid(data), "size": len(data), "path": path}
            if is_lfs(data):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(entry)
        for name in sorted(folders):
            entries.append({"type": "directory", "oid": hashlib.sha1(name.encode()).hexdigest(), "path": name})
        self._json(200, entries)

    def _resolve(self, repo_type: str, repo_id: str, revision: str, path: str, *, head: bool) -> None:
        found = self._commit_for_read(repo_type, repo_id, revision, head=head)
        if found is None:
            return
        repo, sha = found
        if repo.gated and self._token()[1] not in self.hub.granted:
            return self._error(401, "GatedRepo", "Access to this model is restricted", head=head)
        data = repo.commits[sha].get(path)
        if data is None:
            return self._error(404, "EntryNotFound", f"{path} does not exist on {revision}", {"X-Repo-Commit": sha}, head=head)
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{blob_oid(data)}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if is_lfs(data):
            headers["X-Linked-Etag"] = f'"{hashlib.sha256(data).hexdigest()}"'
            headers["X-Linked-Size"] = str(len(data))
        start = 0
        status = 200
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match and not head:
            start = int(match.group(1))
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        payload = data[start:]
        headers["Content-Length"] = str(len(payload))
        if head:
            return self._send(200, b"", headers, head=True)
        if path in self.hub._fails:
            return self._error(self.hub._fails[path], None, "Internal Error")
        with self.hub.lock:
            cuts = self.hub._cuts.get(path)
            cut = cuts.pop(0) if cuts else None
            stall = self.hub._stalls.get(path)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if cut is not None or stall is not None:
            self.wfile.write(payload[: cut if cut is not None else stall])
            self.wfile.flush()
            if stall is not None and cut is None:
                self.hub._stop.wait()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(payload)

    # ------------------------------------------------------------------ writes

    def _create_repo(self, payload: dict[str, object]) -> None:
        name, org = str(payload.get("name") or ""), payload.get("organization")
        repo_type = str(payload.get("type") or "model")
        namespace = str(org) if org else "anonymous"
        if not self._may_write(namespace):
            return
        repo_id = f"{namespace}/{name}"
        url = f"{self.hub.url}/{PREFIX[repo_type]}{repo_id}"
        if (repo_type, repo_id) in self.hub.repos:
            return self._json(409, {"error": "You already created this model repo", "url": url})
        self.hub.create(repo_id, repo_type=repo_type, private=payload.get("visibility") == "private" or payload.get("private") is True)
        self._json(200, {"url": url, "name": repo_id, "id": repo_id})

    def _writable(self, repo_type: str, repo_id: str) -> Repo | None:
        repo = self._repo_for_read(repo_type, repo_id)
        if repo is None or not self._may_write(repo.namespace):
            return None
        return repo

    def _branch(self, repo_type: str, repo_id: str, branch: str, payload: dict[str, object]) -> None:
        repo = self._writable(repo_type, repo_id)
        if repo is None:
            return
        if branch in repo.refs:
            return self._error(409, None, f"Reference refs/heads/{branch} already exists")
        start = repo.at(str(payload.get("startingPoint") or "main"))
        if start is None:
            return self._error(404, "RevisionNotFound", "Invalid starting point")
        repo.refs[branch] = start
        self._json(200, {})

    def _preupload(self, repo_type: str, repo_id: str, revision: str, payload: dict[str, list[dict[str, object]]]) -> None:
        repo = self._writable(repo_type, repo_id)
        if repo is None:
            return
        tree = repo.commits.get(repo.at(revision) or repo.refs["main"], {})
        files = []
        for item in payload.get("files", []):
            # Every upload is taken as a regular (inline, base64) file: LFS and Xet uploads
            # go to storage servers this fake does not emulate. Downloads still serve big
            # and binary files the LFS way (X-Linked-* headers).
            path = str(item["path"])
            existing = tree.get(path)
            files.append({"path": path, "uploadMode": "regular", "shouldIgnore": False, "oid": blob_oid(existing) if existing is not None else None})
        self._json(200, {"files": files, "commitOid": repo.at(revision)})

    def _commit(self, repo_type: str, repo_id: str, revision: str, body: bytes, query: dict[str, list[str]]) -> None:
        repo = self._writable(repo_type, repo_id)
        if repo is None:
            return
        create_pr = (query.get("create_pr") or ["0"])[0] == "1"
        base = repo.at(revision)
        if base is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        tree = dict(repo.commits[base])
        for line in body.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                parent = value.get("parentCommit")
                if parent and parent != base:
                    return self._error(412, None, "A commit has happened since. Please refresh and try again.")
            elif key == "file":
                tree[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                tree.pop(value["path"], None)
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                tree = {p: d for p, d in tree.items() if not p.startswith(prefix)}
            else:
                return self._error(400, None, f"FakeHub does not take '{key}' operations (LFS uploads)")
        ref = revision if revision in repo.refs else "main"
        pr_url = None
        if create_pr:
            num = self._new_pr(repo)
            ref = f"refs/pr/{num}"
            pr_url = f"{self.hub.url}/{PREFIX[repo_type]}{repo_id}/discussions/{num}"
        with self.hub.lock:
            sha = self.hub._new_commit(repo, ref, tree, base=base)
        self._json(200, {"commitUrl": f"{self.hub.url}/{PREFIX[repo_type]}{repo_id}/commit/{sha}", "commitOid": sha, "pullRequestUrl": pr_url})

    def _new_pr(self, repo: Repo) -> int:
        with self.hub.lock:
            repo.prs += 1
            repo.refs[f"refs/pr/{repo.prs}"] = repo.refs["main"]
            return repo.prs

    def _open_pr(self, repo_type: str, repo_id: str, payload: dict[str, object]) -> None:
        repo = self._writable(repo_type, repo_id)
        if repo is None:
            return
        if not payload.get("pullRequest"):
            return self._error(400, None, "FakeHub only opens pull requests")
        num = self._new_pr(repo)
        self._json(200, {"num": num, "url": f"{self.hub.url}/{PREFIX[repo_type]}{repo_id}/discussions/{num}"})

    def _pr_details(self, repo_type: str, repo_id: str, num: int) -> None:
        repo = self._repo_for_read(repo_type, repo_id)
        if repo is None:
            return
        if f"refs/pr/{num}" not in repo.refs:
            return self._error(404, None, "Discussion not found")
        self._json(
            200,
            {
                "num": num,
                "title": f"PR {num}",
                "status": "draft",
                "author": {"name": "tester"},
                "createdAt": NOW,
                "repo": {"name": repo_id, "type": repo_type},
                "isPullRequest": True,
                "events": [],
                "changes": {"base": "refs/heads/main"},
                "filesWithConflicts": [],
                "diff": "",
            },
        )


# ---------------------------------------------------------------------- pytest glue


def point_client_at(hub: FakeHub, home: Path, monkeypatch: object) -> None:
    """Point huggingface_hub (env for new processes, constants for this one) at ``hub``
    and a cache under ``home``. huggingface_hub reads its settings once, at import."""
    import huggingface_hub.constants as constants

    cache = home / "hub"
    env = {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(cache),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_ETAG_TIMEOUT": "5",
        "HF_HUB_DOWNLOAD_TIMEOUT": "5",
    }
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_OIDC_RESOURCE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)  # type: ignore[attr-defined]
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # type: ignore[attr-defined]
    patches = {
        "ENDPOINT": hub.url,
        "HUGGINGFACE_CO_URL_TEMPLATE": hub.url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_URL_HOSTS": frozenset({"127.0.0.1"}),
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(cache),
        "HUGGINGFACE_HUB_CACHE": str(cache),
        "HF_ASSETS_CACHE": str(home / "assets"),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_ETAG_TIMEOUT": 5,
        "HF_HUB_DOWNLOAD_TIMEOUT": 5,
    }
    for name, value in patches.items():
        monkeypatch.setattr(constants, name, value)  # type: ignore[attr-defined]


def set_offline(monkeypatch: object, offline: bool = True) -> None:
    """HF_HUB_OFFLINE=1, as a new process would see it and as this one's huggingface_hub does."""
    import huggingface_hub.constants as constants

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # type: ignore[attr-defined]
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # type: ignore[attr-defined]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)  # type: ignore[attr-defined]


def wait_for(predicate, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def skill_md(name: str, description: str = "A skill from the Hub. Use it in tests.", version: str = "1.0.0", body: str = "") -> str:
    return (
        f"---\nname: {name}\ndescription: {description}\nlicense: Apache-2.0\nmetadata:\n  version: \"{version}\"\n---\n# {name}\n\n"
        f"Run `scripts/tool.py`.\n{body}"
    )


def skill_files(name: str, *, version: str = "1.0.0", prefix: str | None = None, extra: dict[str, bytes | str] | None = None) -> dict[str, bytes | str]:
    """A complete small skill as repo files under ``prefix`` (default: a folder named after it)."""
    base = name if prefix is None else prefix
    join = (lambda rel: f"{base}/{rel}") if base else (lambda rel: rel)
    files: dict[str, bytes | str] = {
        join("SKILL.md"): skill_md(name, version=version),
        join("scripts/tool.py"): f"#!/usr/bin/env python3\nprint('{name} {version}')\n",
        join("references/notes.md"): f"# Notes for {name} {version}\n",
        join("assets/blob.bin"): bytes(range(256)) * 4 + version.encode(),
    }
    for rel, content in (extra or {}).items():
        files[join(rel)] = content
    return files
