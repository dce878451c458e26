"""Which files of a skill folder `kernels skills publish` sends, and which it must not.

A skill folder on a developer's disk often holds more than the skill: a ``.git/`` folder,
an ``.env`` with tokens, an SSH key copied in for a test. Publishing uploads to a public
place by default, so the choice is made here, before anything touches the network, and
the same :class:`Selection` drives ``--dry-run`` (what would be sent, with bytes) and the
upload itself (exactly those files, staged into a private folder first):

1. Never sent: ``.git/`` (anywhere), the install receipt, regenerable clutter
   (``__pycache__``, ``*.pyc``...) and the ``.skillignore`` file itself.
2. Excluded by ``.skillignore`` (at the skill's root) and then by each ``--exclude GLOB``,
   both in gitignore syntax (the common subset below).
3. Likely secrets are refused, naming every path, unless each is named with
   ``--allow-secret PATH``: names such as ``.env*``, ``*.pem``, ``*.key``, ``id_rsa*``,
   ``id_ed25519*``, ``.netrc``, ``credentials.json``, and any file whose bytes hold a
   token pattern (``hf_…``, ``ghp_…``, ``sk-…``, ``AKIA…``, a PEM private key). The
   secret itself is never printed, only where it is and what it looks like.

gitignore subset: blank lines and ``#`` comments are skipped; ``!PATTERN`` re-includes;
``PATTERN/`` matches folders only; a pattern with a ``/`` at its start or middle is
anchored at the skill's root, one without matches at any depth; ``*`` and ``?`` stay
inside one path component, ``[abc]`` is a class, ``**`` spans folders (``**/x``, ``x/**``,
``a/**/b``). As in git, a file inside an excluded folder cannot be re-included.

Pure: reads the folder, writes nothing, never exits.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import KernelsError
from .receipts import RECEIPT_FILE
from .records import field, record
from .skill import is_ignored

IGNORE_FILE = ".skillignore"
NEVER_SENT_DIRS = frozenset({".git", ".hg", ".svn"})

# File names that hold credentials far more often than skill content.
_SECRET_NAMES: tuple[tuple[str, str], ...] = (
    (r"\.env(\..*)?", "an environment file (.env*)"),
    (r".*\.pem", "a PEM key or certificate (*.pem)"),
    (r".*\.key", "a private key (*.key)"),
    (r".*\.(p12|pfx)", "a PKCS#12 key store"),
    (r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\..*)?", "an SSH private key"),
    (r"[._]netrc", "a .netrc credential file"),
    (r"\.git-credentials", "a git credential file"),
    (r"\.pypirc", "a PyPI credential file"),
    (r"\.npmrc", "an npm credential file"),
    (r"credentials(\.json)?", "a credential file"),
    (r".*service[-_]?account.*\.json", "a cloud service-account key"),
)
_SECRET_NAME_RE = [(re.compile(pattern, re.IGNORECASE), why) for pattern, why in _SECRET_NAMES]

# Token shapes in file content. Bounded on both sides so that words such as
# "disk-cache-directory" (which contains "sk-") do not match.
_TOKENS: tuple[tuple[bytes, str], ...] = (
    (rb"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}", "a Hugging Face token (hf_...)"),
    (rb"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,}", "a GitHub token (ghp_...)"),
    (rb"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}", "a GitHub token (github_pat_...)"),
    (rb"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-|live_)?(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}", "an API secret key (sk-...)"),
    (rb"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])", "an AWS access key id (AKIA...)"),
    (rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----", "a PEM private key"),
    (rb"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}", "a Slack token (xox...)"),
)
_TOKEN_RE = [(re.compile(pattern), why) for pattern, why in _TOKENS]


# ---------------------------------------------------------------------- gitignore subset


@record(frozen=True)
class Rule:
    pattern: str  # as written, for messages
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        return (is_dir or not self.dir_only) and self.regex.match(rel) is not None


def _translate(glob: str) -> str:
    """A gitignore glob (no leading '!' or trailing '/') -> regex body over a relative path."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")  # zero or more folders
            i += 3
        elif glob.startswith("**", i) and i + 2 == n:
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def parse_rules(lines: Iterable[str], origin: str) -> list[Rule]:
    """gitignore lines -> rules (in order: the last rule that matches a path decides)."""
    rules: list[Rule] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        line = line.rstrip(" ") if not line.endswith("\\ ") else line
        negated = line.startswith("!")
        body = line[1:] if negated else line
        if body.startswith("\\") and body[1:2] in ("!", "#"):
            body = body[1:]
        dir_only = body.endswith("/")
        body = body.rstrip("/")
        if not body:
            continue
        anchored = "/" in body
        body = body.lstrip("/")
        try:
            regex = re.compile(("^" if anchored else "^(?:[^/]*/)*") + _translate(body) + "$")
        except re.error as exc:
            raise KernelsError(
                f"{origin}:{number}: '{raw.strip()}' is not a pattern this tool understands ({exc})", "Fix or remove the line.", usage=True
            ) from None
        rules.append(Rule(raw.strip(), regex, negated, dir_only))
    return rules


def _excluded(rules: Sequence[Rule], rel: str, is_dir: bool) -> bool:
    verdict = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            verdict = not rule.negated
    return verdict


# ---------------------------------------------------------------------------- selection


@record
class Selection:
    """What publishing ``folder`` sends, what it leaves out, and the secrets it refuses."""

    folder: Path
    files: list[tuple[str, int]] = field(default_factory=list)  # (relative path, bytes) to send
    links: list[tuple[str, str]] = field(default_factory=list)  # (relative path, target) to send
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (relative path, what it looks like)
    allowed: list[str] = field(default_factory=list)  # secrets sent anyway (--allow-secret)

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [{"path": rel, "size": size} for rel, size in self.files],
            "file_count": len(self.files),
            "bytes": self.bytes,
            "excluded": [{"path": rel, "why": why} for rel, why in self.excluded],
            "allowed_secrets": list(self.allowed),
        }

    def refuse_secrets(self) -> None:
        if not self.secrets:
            return
        shown = "; ".join(f"{rel} ({why})" for rel, why in self.secrets[:10])
        more = f" and {len(self.secrets) - 10} more" if len(self.secrets) > 10 else ""
        first = self.secrets[0][0]
        raise KernelsError(
            f"refused to publish {self.folder}: it holds what looks like secrets: {shown}{more}",
            f"Remove them, exclude them (--exclude or {IGNORE_FILE}), or send one you are sure of with --allow-secret {first}. Nothing was uploaded.",
        )


def secret_in_name(name: str) -> str | None:
    for regex, why in _SECRET_NAME_RE:
        if regex.fullmatch(name):
            return why
    return None


def secret_in_file(path: str, limit: int) -> str | None:
    """What kind of token ``path``'s first ``limit`` bytes hold, if any (never the token)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
    except OSError:
        return None
    for regex, why in _TOKEN_RE:
        match = regex.search(data)
        if match:
            line = data.count(b"\n", 0, match.start()) + 1
            return f"contains {why} on line {line}"
    return None


def select(
    folder: Path,
    *,
    excludes: Sequence[str] = (),
    allow_secrets: Sequence[str] = (),
    scan_limit: int = 10_000_000,
) -> Selection:
    """Walk ``folder`` and decide for every entry: sent, excluded (and why) or a secret."""
    root = Path(os.path.realpath(folder))
    rules: list[Rule] = []
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        try:
            text = ignore_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelsError(f"cannot read {ignore_file}: {exc}", "Save it as UTF-8 text.") from None
        rules += parse_rules(text.splitlines(), str(ignore_file))
    cli_rules = parse_rules(excludes, "--exclude")
    allowed = {_relative(root, folder, p) for p in allow_secrets}
    selection = Selection(folder)
    stack: list[tuple[str, str]] = [("", str(root))]
    found: set[str] = set()
    while stack:
        prefix, directory = stack.pop()
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name, reverse=True)
        for entry in entries:
            rel = prefix + entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            found.add(rel)
            why = _never_sent(rel, entry.name, is_dir)
            if why is None and _excluded(rules, rel, is_dir):
                why = f"excluded by {IGNORE_FILE}"
            if why is None and _excluded(cli_rules, rel, is_dir):
                why = "excluded by --exclude"
            if why is not None:
                selection.excluded.append((rel + ("/" if is_dir else ""), why))
                continue
            if is_dir:
                stack.append((rel + "/", entry.path))
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            secret = secret_in_name(entry.name)
            if secret is None and stat.S_ISREG(mode):
                secret = secret_in_file(entry.path, scan_limit)
            if secret is not None:
                if rel in allowed:
                    selection.allowed.append(rel)
                else:
                    selection.secrets.append((rel, secret))
                    continue
            if stat.S_ISLNK(mode):
                selection.links.append((rel, os.readlink(entry.path)))
            else:
                selection.files.append((rel, entry.stat(follow_symlinks=False).st_size))
    unknown = sorted(allowed - found)
    if unknown:
        raise KernelsError(
            f"--allow-secret {unknown[0]} names no file in {folder}",
            "Give the path of the file inside the skill folder, as the refusal printed it.",
            usage=True,
        )
    selection.files.sort()
    selection.links.sort()
    selection.excluded.sort()
    selection.secrets.sort()
    selection.allowed.sort()
    return selection


def _never_sent(rel: str, name: str, is_dir: bool) -> str | None:
    if name in NEVER_SENT_DIRS:
        return "version-control data is never sent"
    if rel == RECEIPT_FILE:
        return "an install receipt is never sent"
    if rel == IGNORE_FILE:
        return "the publish rules themselves are not sent"
    if is_ignored(name):
        return "regenerable clutter is never sent"
    return None


def _relative(root: Path, folder: Path, given: str) -> str:
    """--allow-secret PATH: relative to the skill folder, or a path (from the cwd) into it."""
    candidate = Path(os.path.realpath(os.path.expanduser(given)))
    if os.path.lexists(given):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            pass
    return given.replace(os.sep, "/").strip("/")


def stage(selection: Selection, into: Path) -> Path:
    """Copy exactly the selected files (and in-skill links) into the new folder ``into``,
    so that what is checked and uploaded is what the selection says, nothing more."""
    from . import fsops

    fsops.make_dir(str(into), 0o755)
    root = os.path.realpath(selection.folder)
    made: set[str] = {""}

    def parent(rel: str) -> None:
        head = rel.rpartition("/")[0]
        if head in made:
            return
        parent(head)
        fsops.make_dir(os.path.join(into, head), 0o755)
        made.add(head)

    for rel, _ in selection.files:
        parent(rel)
        src = os.path.join(root, rel)
        fsops.write_file(src, os.path.join(into, rel), stat.S_IMODE(os.stat(src).st_mode) | 0o600)
    for rel, target in selection.links:
        parent(rel)
        fsops.symlink(target, os.path.join(into, rel), is_dir=os.path.isdir(os.path.join(root, rel)))
    return into
