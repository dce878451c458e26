"""Issue 29: the breaks a hostile review found, each pinned by a test that failed before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import cli, make_skill, snapshot


def _files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# ------------------------------------------------------------- 1. every extra file is the user's

CLUTTER = {
    "scripts/mine.pyc": b"data",
    "scripts/old.pyo": b"data",
    "scripts/__pycache__/tool.cpython-311.pyc": b"\0compiled",
    ".pytest_cache/v/cache/lastfailed": b"{}",
    ".DS_Store": b"finder",
}


@pytest.mark.parametrize("rel", sorted(CLUTTER))
def test_a_file_named_like_clutter_in_an_install_is_an_edit(sandbox, rel):
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    (dest / rel).write_bytes(CLUTTER[rel])

    item = json.loads(cli("skills", "list", "--json").stdout)["installed"][0]
    assert item["modified"] is True and rel in item["edited_files"]

    refused = cli("skills", "remove", "demo")
    assert refused.exit_code == 1 and (dest / rel).read_bytes() == CLUTTER[rel]

    removed = cli("skills", "remove", "demo", "--force", "--json")
    assert removed.exit_code == 0, removed.output
    backup = Path(json.loads(removed.stdout)["actions"][0]["backup"])
    assert (backup / rel).read_bytes() == CLUTTER[rel]


def test_add_force_over_a_foreign_folder_backs_up_its_clutter_too(sandbox):
    dest = sandbox.project / ".claude/skills/demo"
    make_skill(dest.parent, "demo", extra=CLUTTER)
    before = _files_under(dest)
    result = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert result.exit_code == 0, result.output
    backup = Path(json.loads(result.stdout)["actions"][0]["backup"])
    assert _files_under(backup) == before


def test_update_force_backs_up_a_pycache_an_agent_left(sandbox):
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / "scripts/__pycache__").mkdir()
    (dest / "scripts/__pycache__/tool.cpython-311.pyc").write_bytes(b"\0")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    held = cli("skills", "update", "--claude", "--json")
    assert "local edits" in held.stdout and snapshot(dest / "scripts/__pycache__")
    done = cli("skills", "update", "--claude", "--force", "--json")
    assert done.exit_code == 0, done.output
    backup = Path(json.loads(done.stdout)["actions"][0]["backup"])
    assert (backup / "scripts/__pycache__/tool.cpython-311.pyc").read_bytes() == b"\0"
