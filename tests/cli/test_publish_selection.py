"""`kernels skills publish` sends exactly what it says: --dry-run, .skillignore, --exclude,
and likely secrets refused by path unless --allow-secret names them (issue 29, break 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_skills.publish import parse_rules, select

from .conftest import cli, make_skill

WRITER = "hf_writer"
HF_TOKEN_TEXT = "token = hf_" + "a1B2c3D4e5" * 4 + "\n"


@pytest.fixture
def writer(hub, monkeypatch):
    hub.tokens[WRITER] = {"my-org"}
    monkeypatch.setenv("HF_TOKEN", WRITER)
    return hub


def leaky_skill(sandbox) -> Path:
    folder = make_skill(sandbox.project / "work", "house-style", extra={
        ".env": "HF_TOKEN=x\n",
        "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        ".git/config": "[core]\n",
        ".git/objects/ab/cdef": b"\0",
        "references/notes.md": "# notes\n\n" + HF_TOKEN_TEXT,
        "references/words.md": "a disk-cache-directory-for-everything and task-list-of-the-day-2024 (not secrets)\n",
    })
    return folder


def on_hub(hub) -> list[str]:
    return sorted(p for p in hub.files("my-org/skills") if p.startswith("house-style/"))


def test_likely_secrets_are_refused_by_path_and_nothing_is_sent(sandbox, writer):
    folder = leaky_skill(sandbox)
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills")
    assert result.exit_code == 1, result.output
    for rel in (".env", "id_rsa", "references/notes.md"):
        assert rel in result.stderr
    assert "Hugging Face token" in result.stderr and "line 3" in result.stderr
    assert "a1B2c3D4e5" not in result.stderr  # the secret itself is never printed
    assert "words.md" not in result.stderr and ".git" not in result.stderr
    assert "--allow-secret" in result.stderr
    assert ("model", "my-org/skills") not in writer.repos


def test_allow_secret_sends_only_the_named_files_and_never_git(sandbox, writer):
    folder = leaky_skill(sandbox)
    partly = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--allow-secret", ".env")
    assert partly.exit_code == 1 and "id_rsa" in partly.stderr and ".env (" not in partly.stderr
    typo = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--allow-secret", "nope.txt")
    assert typo.exit_code == 2 and "nope.txt" in typo.stderr
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--json",
                 "--allow-secret", ".env", "--allow-secret", str(folder / "id_rsa"), "--allow-secret", "references/notes.md")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    sent = ["house-style/" + f["path"] for f in data["sent"]]
    assert on_hub(writer) == sorted(sent) and data["files"] == len(sent) == 8
    assert not any("/.git/" in p for p in on_hub(writer))


def test_dry_run_lists_exactly_what_is_then_sent(sandbox, writer):
    folder = make_skill(sandbox.project / "work", "house-style", extra={".git/HEAD": "ref: main\n", "__pycache__/x.pyc": b"\0"})
    dry = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert ("model", "my-org/skills") not in writer.repos  # nothing was sent, no repo created
    paths = [f["path"] for f in plan["files"]]
    assert paths == ["SKILL.md", "assets/blob.bin", "references/guide.md", "scripts/tool.py"]
    assert plan["bytes"] == sum((folder / p).stat().st_size for p in paths) == sum(f["size"] for f in plan["files"])
    assert {e["path"] for e in plan["excluded"]} == {".git/", "__pycache__/"}

    human = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--dry-run")
    assert f"Would send 4 files, {plan['bytes']:,} bytes" in human.stdout and "nothing was uploaded" in human.stdout

    real = cli("skills", "publish", str(folder), "--repo", "my-org/skills")
    assert real.exit_code == 0, real.output
    assert on_hub(writer) == ["house-style/" + p for p in paths]
    assert "4 files" in real.stdout


def test_skillignore_and_exclude_leave_files_out(sandbox, writer):
    folder = make_skill(sandbox.project / "work", "house-style", extra={
        ".skillignore": "# drafts and build output\ndrafts/\n*.log\n!keep.log\n/top.txt\nassets/**/big-*\n",
        "drafts/a.md": "x", "references/drafts/b.md": "x", "debug.log": "x", "references/keep.log": "x",
        "top.txt": "x", "references/top.txt": "x", "assets/v1/big-1.bin": "x", "assets/v1/small.bin": "x",
        "references/tmp.bak": "x", "scripts/tmp.bak": "x",
    })
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--exclude", "*.bak", "--exclude", "references/guide*", "--json")
    assert result.exit_code == 1 and "guide.md" in result.stderr  # SKILL.md links to it: the sent tree must stay valid
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--exclude", "*.bak", "--json")
    assert result.exit_code == 0, result.output
    assert on_hub(writer) == [f"house-style/{p}" for p in (
        "SKILL.md", "assets/blob.bin", "assets/v1/small.bin", "references/guide.md", "references/keep.log", "references/top.txt", "scripts/tool.py")]
    excluded = {e["path"]: e["why"] for e in json.loads(result.stdout)["excluded"]}
    assert excluded["scripts/tmp.bak"] == "excluded by --exclude" and excluded["drafts/"] == "excluded by .skillignore"


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "excluded"),
    [
        ("*.md", "a/b/c.md", False, True),
        ("/c.md", "a/c.md", False, False),
        ("/c.md", "c.md", False, True),
        ("a/*.md", "a/b/c.md", False, False),
        ("a/**/c.md", "a/b/x/c.md", False, True),
        ("a/**/c.md", "a/c.md", False, True),
        ("**/build", "x/y/build", True, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("build/", "build", False, False),
        ("build/", "src/build", True, True),
        ("ca?.md", "cat.md", False, True),
        ("ca?.md", "ca/.md", False, False),
        ("[ab].md", "b.md", False, True),
        ("[!ab].md", "b.md", False, False),
        ("\\#hash.md", "#hash.md", False, True),
    ],
)
def test_gitignore_subset(pattern, path, is_dir, excluded):
    [rule] = parse_rules([pattern], "test")
    assert rule.matches(path, is_dir) is excluded


def test_a_file_inside_an_excluded_folder_cannot_be_reincluded(tmp_path):
    folder = make_skill(tmp_path, "s", extra={"drafts/keep.md": "x", ".skillignore": "drafts/\n!drafts/keep.md\n"})
    picked = select(folder)
    assert "drafts/keep.md" not in [rel for rel, _ in picked.files] and ("drafts/", "excluded by .skillignore") in picked.excluded


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (".env.local", "x"), ("server.pem", "x"), ("tls.key", "x"), ("id_ed25519.pub", "x"), (".netrc", "x"),
        ("credentials.json", "{}"), ("notes.md", "ghp_" + "A1b2C3d4E5f6" * 3), ("notes.md", "key: sk-proj-" + "Ab1" * 10),
        ("notes.md", "AKIAIOSFODNN7EXAMPLE"), ("notes.md", "-----BEGIN RSA PRIVATE KEY-----"),
    ],
)
def test_what_counts_as_a_likely_secret(tmp_path, name, content):
    folder = make_skill(tmp_path, "s", extra={f"references/{name}": content})
    assert [rel for rel, _ in select(folder).secrets] == [f"references/{name}"]


def test_ordinary_text_is_not_a_secret(tmp_path):
    text = "disk-cache-directory-for-everything, task-queue-2024-worker-01, hf_hub_download, AKIA in prose, sk-learn\n"
    folder = make_skill(tmp_path, "s", extra={"references/words.md": text, "keys.md": "about keys", "scripts/env.py": "import os\n"})
    assert select(folder).secrets == []
