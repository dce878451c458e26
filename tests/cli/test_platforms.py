"""macOS and Windows behaviour, simulated on Linux.

What differs on those systems is reproduced here with the fsops test hooks (no flock, no
atomic exchange, no symlinks, files held open by another program, no pthread_sigmask)
and, where the container allows mounts, with a bind mount (one folder, two spellings,
as ``~/.Claude`` and ``~/.claude`` are on case-insensitive APFS or NTFS).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_skills import fsops, locking
from kernel_skills.errors import KernelsError

from .conftest import cli, leftovers, make_skill, skill_files


def _mount(*args: str) -> str | None:
    """Run mount(8); the reason it failed, or None."""
    try:
        done = subprocess.run(["mount", *args], check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mount cannot run here: {exc}"
    return None if done.returncode == 0 else f"mount {' '.join(args)} refused: {done.stderr.strip() or done.returncode}"


@pytest.fixture
def alias(sandbox) -> Iterator[tuple[Path, Path]]:
    """(folder, another spelling of it) that realpath cannot unify: a bind mount."""
    real = sandbox.root / "skills"
    other = sandbox.root / "Skills-alias"
    real.mkdir()
    other.mkdir()
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        pytest.skip("bind mounts need root")
    reason = _mount("--bind", str(real), str(other))
    if reason:
        pytest.skip(reason)
    try:
        yield real, other
    finally:
        subprocess.run(["umount", str(other)], check=False, capture_output=True, timeout=30)


def test_one_folder_spelled_two_ways_is_one_folder(alias):
    real, other = alias
    assert os.path.realpath(real) != os.path.realpath(other)
    assert locking.folder_key(real) == locking.folder_key(other)
    assert [k for k, _ in locking.unique_folders([other, real, real])] == [locking.folder_key(real)]


def test_add_to_one_folder_under_two_spellings_does_not_deadlock(sandbox, alias):
    """Before folders were known by (st_dev, st_ino), the second flock on the same folder
    waited for the first, held by the same process: the run hung for ever."""
    real, other = alias
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--dest", str(real), "--dest", str(other), "--json"],
            env=sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled)),
            cwd=sandbox.project,
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("add deadlocked on a folder named twice")
    assert done.returncode == 0, done.stderr
    actions = json.loads(done.stdout)["actions"]
    assert len(actions) == 1, "one folder, one install"
    assert os.listdir(real) == ["demo"]
    assert skill_files(other / "demo") == skill_files(sandbox.bundled / "demo")


@pytest.mark.parametrize("hooks", [{}, {"no-flock": ""}], ids=["flock", "lock-file"])
def test_the_lock_is_taken_once_per_folder_in_process(sandbox, alias, monkeypatch, hooks):
    monkeypatch.setattr(fsops, "HOOKS", hooks)
    real, other = alias
    lock_dir = sandbox.root / "locks"
    with fsops.locked([other, real], lock_dir) as held:
        assert held == [other]
    if hooks:
        assert os.listdir(lock_dir) == [locking.folder_key(real) + ".lock"]
    assert leftovers(real) == []


def test_lock_files_stay_out_of_the_agent_folder(sandbox, monkeypatch):
    monkeypatch.setattr(fsops, "HOOKS", {"no-flock": ""})
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert os.listdir(sandbox.project / ".claude/skills") == ["demo"]
    skills = sandbox.project / ".claude/skills"
    assert os.listdir(sandbox.state / "kernel-skills" / "locks") == [locking.folder_key(skills) + ".lock"]


# ------------------------------------------------- files held open (Windows WinError 32)


def _add_force(sandbox):
    from kernel_skills import install
    from kernel_skills.agents import select_targets

    roots = sandbox.roots
    sources = install.skill_sources(["demo"], roots.sources)
    targets = select_targets(["claude"], roots.location, global_=False)
    return install.apply(install.plan_add(sources, targets, force=True), state_dir=roots.state_dir, force=True)


def _edited_install(sandbox) -> dict[str, bytes]:
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    edited = skill_files(sandbox.project / ".claude/skills/demo")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    return edited


def test_renames_and_deletes_wait_for_a_file_held_open_for_a_moment(sandbox, monkeypatch):
    edited = _edited_install(sandbox)
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "3", "no-exchange": ""})
    plan = _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    (action,) = plan.actions
    assert skill_files(action.backup_path) == edited
    assert leftovers(sandbox.root) == []


def test_a_file_held_open_for_good_fails_with_one_line_and_loses_nothing(sandbox, monkeypatch):
    edited = _edited_install(sandbox)
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "1000", "no-exchange": ""})
    with pytest.raises(KernelsError, match="in use by another program"):
        _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == edited
    monkeypatch.setattr(fsops, "HOOKS", {})  # the other program let go: the next run finishes
    _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    assert leftovers(sandbox.root) == []


def test_recovery_skips_what_is_held_open_with_a_note_instead_of_failing(sandbox, monkeypatch):
    from kernel_skills import install

    one = sandbox.root / "one"
    two = sandbox.root / "two"
    assert cli("skills", "add", "demo", "--dest", str(one), "--dest", str(two)).exit_code == 0
    for skills in (one, two):
        (skills / ".kernel-skills-tmp").mkdir()
    shutil.copytree(sandbox.bundled / "demo", one / ".kernel-skills-tmp/new-demo-12345678")
    os.rename(two / "demo", two / ".kernel-skills-tmp/old-demo-0badc0de")  # died between two renames
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "1000"})
    notes = install.recover_all([one, two], sandbox.roots.state_dir)
    assert any("left " in n and "new-demo-12345678" in n for n in notes), notes
    assert any(f"could not restore {two / 'demo'}" in n for n in notes), notes
    assert (one / ".kernel-skills-tmp/new-demo-12345678").is_dir()
    monkeypatch.setattr(fsops, "HOOKS", {})
    notes = install.recover_all([one, two], sandbox.roots.state_dir)
    assert any("restored" in n for n in notes)
    assert leftovers(sandbox.root) == []
    assert skill_files(two / "demo") == skill_files(sandbox.bundled / "demo")


def test_busy_is_only_windows_sharing_violations():
    assert fsops.is_busy(fsops._busy_error("x"))
    assert not fsops.is_busy(PermissionError(13, "Permission denied"))  # a real EACCES is not retried
    assert not fsops.is_busy(KeyboardInterrupt())
