"""`kernels skills backups`: list, restore, prune, and the default retention (issue 29, break 7)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from kernel_skills import backups

from .conftest import cli, leftovers, skill_files

DEST = ".claude/skills/demo"


def _edit_and_replace(sandbox, text: str) -> str:
    """Edit the claude install of demo, then add --force over it: one new backup; its ID."""
    dest = sandbox.project / DEST
    (dest / "mine.txt").write_text(text)
    result = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["actions"][0]["backup"]).name


@pytest.fixture
def installed(sandbox):
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    return sandbox.project / DEST


def test_list_shows_skill_target_when_size_and_why(sandbox, installed):
    assert "No backups" in cli("skills", "backups", "list").stdout
    backup_id = _edit_and_replace(sandbox, "mine\n")
    data = json.loads(cli("skills", "backups", "list", "--json").stdout)
    [entry] = data["backups"]
    assert entry["id"] == backup_id and entry["skill"] == "demo" and entry["target"] == str(installed)
    assert entry["why"] == "replaced; it was an install with local edits to mine.txt"
    assert entry["size"] == sum(p.stat().st_size for p in Path(entry["path"]).rglob("*") if p.is_file())
    assert abs(datetime.fromisoformat(entry["created"].replace("Z", "+00:00")) - datetime.now(timezone.utc)) < timedelta(minutes=5)
    table = cli("skills", "backups", "list")
    for text in (backup_id, "demo", DEST, "local edits to mine.txt"):
        assert text in table.stdout


def test_restore_puts_the_backup_back_and_backs_up_the_current_copy(sandbox, installed):
    backup_id = _edit_and_replace(sandbox, "mine\n")
    assert not (installed / "mine.txt").exists()
    (installed / "later.txt").write_text("also mine\n")
    before = skill_files(installed)

    result = cli("skills", "backups", "restore", backup_id[:-3], "--json")  # a unique prefix is enough
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (installed / "mine.txt").read_text() == "mine\n" and not (installed / "later.txt").exists()
    assert skill_files(Path(data["backup_of_previous"])) == before
    # The receipt came back with it: a managed install with one edit again.
    [item] = json.loads(cli("skills", "list", "--json").stdout)["installed"]
    assert item["managed"] and item["edited_files"] == ["mine.txt"]
    assert leftovers(sandbox.project, sandbox.backups) == []


def test_restore_into_an_empty_place_and_to_another_folder(sandbox, installed):
    backup_id = _edit_and_replace(sandbox, "mine\n")
    assert cli("skills", "remove", "demo", "--force", "-q").exit_code == 0
    back = cli("skills", "backups", "restore", backup_id)
    assert back.exit_code == 0, back.output
    assert (installed / "mine.txt").is_file()
    elsewhere = cli("skills", "backups", "restore", backup_id, "--to", "copy/demo")
    assert elsewhere.exit_code == 0 and (sandbox.project / "copy/demo/mine.txt").is_file()


def test_restore_is_atomic_when_it_fails_midway(sandbox, installed, monkeypatch):
    from kernel_skills import fsops

    backup_id = _edit_and_replace(sandbox, "mine\n")
    now = skill_files(installed)
    calls = {"n": 0}
    real = fsops.write_file

    def failing(src: str, dst: str, mode: int) -> str:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device", dst)
        return real(src, dst, mode)

    monkeypatch.setattr(fsops, "write_file", failing)
    result = cli("skills", "backups", "restore", backup_id)
    assert result.exit_code == 1
    assert skill_files(installed) == now and leftovers(sandbox.project) == []


def test_unknown_and_ambiguous_ids_are_usage_errors(sandbox, installed):
    assert cli("skills", "backups", "restore", "nope").exit_code == 2
    _edit_and_replace(sandbox, "a\n")
    _edit_and_replace(sandbox, "b\n")
    ambiguous = cli("skills", "backups", "restore", "demo-")
    assert ambiguous.exit_code == 2 and "matches 2 backups" in ambiguous.stderr


def _aged(sandbox, days: float) -> None:
    """Pretend every backup's metadata says it was made ``days`` ago."""
    for meta in sandbox.backups.glob("*.json"):
        data = json.loads(meta.read_text())
        created = datetime.fromisoformat(data["created"].replace("Z", "+00:00"))
        data["created"] = (created - timedelta(days=days)).isoformat()
        meta.write_text(json.dumps(data))


def test_prune_keep_and_older_than(sandbox, installed):
    ids = [_edit_and_replace(sandbox, f"{i}\n") for i in range(3)]
    assert cli("skills", "backups", "prune").exit_code == 2  # needs a rule
    assert cli("skills", "backups", "prune", "--keep", "-1").exit_code == 2
    dry = json.loads(cli("skills", "backups", "prune", "--keep", "1", "--dry-run", "--json").stdout)
    assert [b["id"] for b in dry["deleted"]] == ids[:2] and len(backups.find(sandbox.state / "kernel-skills")) == 3
    assert cli("skills", "backups", "prune", "--keep", "2", "--older-than", "1").stdout.startswith("Deleted 0 backup(s)")
    _aged(sandbox, 2)
    gone = json.loads(cli("skills", "backups", "prune", "--keep", "2", "--older-than", "1", "--json").stdout)["deleted"]
    assert [b["id"] for b in gone] == ids[:1]
    assert [b.id for b in backups.find(sandbox.state / "kernel-skills")] == ids[1:]
    assert cli("skills", "backups", "prune", "--older-than", "0", "-q").exit_code == 0
    assert backups.find(sandbox.state / "kernel-skills") == [] and os.listdir(sandbox.backups) == []


def test_default_retention_keeps_the_five_newest_per_skill_and_path(sandbox, installed, monkeypatch):
    ids = [_edit_and_replace(sandbox, f"{i}\n") for i in range(7)]
    assert [b.id for b in backups.find(sandbox.state / "kernel-skills")] == ids[2:]
    monkeypatch.setenv("KERNEL_SKILLS_KEEP_BACKUPS", "0")
    more = [_edit_and_replace(sandbox, f"x{i}\n") for i in range(2)]
    assert [b.id for b in backups.find(sandbox.state / "kernel-skills")] == ids[2:] + more


@pytest.mark.parametrize("value", ["x", "-1"])
def test_a_bad_keep_setting_is_refused_before_anything_changes(sandbox, installed, monkeypatch, value):
    """Retention runs after the change: a KERNEL_SKILLS_KEEP_BACKUPS it cannot read must stop
    the command before it replaces, removes or restores anything, not report a usage error
    (exit 2) for a change it has made."""
    dest = sandbox.project / ".claude/skills/demo"
    backup_id = _edit_and_replace(sandbox, "first\n")
    (dest / "SKILL.md").write_text((dest / "SKILL.md").read_text() + "mine\n")
    before = skill_files(dest)
    monkeypatch.setenv("KERNEL_SKILLS_KEEP_BACKUPS", value)
    for args in (("skills", "add", "demo", "--claude", "--force"), ("skills", "remove", "demo", "--force"),
                 ("skills", "update", "--claude", "--force"), ("skills", "backups", "restore", backup_id)):
        result = cli(*args)
        assert result.exit_code == 2 and "KERNEL_SKILLS_KEEP_BACKUPS" in result.stderr, (args, result.output)
        assert skill_files(dest) == before, args
    assert [b.id for b in backups.find(sandbox.state / "kernel-skills")] == [backup_id]


def test_a_backup_without_metadata_is_still_listed(sandbox, installed):
    backup_id = _edit_and_replace(sandbox, "mine\n")
    (sandbox.backups / f"{backup_id}.json").unlink()
    [entry] = json.loads(cli("skills", "backups", "list", "--json").stdout)["backups"]
    assert entry["skill"] == "demo" and entry["target"] is None and entry["size"] > 0
    refused = cli("skills", "backups", "restore", backup_id)
    assert refused.exit_code == 2 and "--to" in refused.stderr
