"""Reproducible provisioning: add/update/remove keep skills-lock.json current, `sync`
restores exactly what it records, `outdated` tells CI whether anything moved.

Real files in the sandbox, the real huggingface_hub client against tests/cli/hubfake.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills import lockfile

from .conftest import cli, leftovers, make_skill, run_module, skill_files, snapshot
from .hubfake import set_offline
from .hubfake import skill_files as hub_files

REPO = "my-org/skills"
LOCK = lockfile.LOCK_FILE


def lock_data(project: Path) -> dict:
    return json.loads((project / LOCK).read_text())


def ok(*args: str):
    result = cli(*args)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result


def tree(folder: Path) -> dict:
    """snapshot() without the receipt (its install time and source path differ per checkout)."""
    return {rel: entry for rel, entry in snapshot(folder).items() if rel != ".kernel-skills.json"}


def fresh_clone(sandbox, monkeypatch, *keep: str) -> Path:
    """A new checkout of the project: the lock and the listed paths, no agent folders."""
    clone = sandbox.root / "clone"
    clone.mkdir()
    for rel in (LOCK, *keep):
        src, dst = sandbox.project / rel, clone / rel
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    monkeypatch.chdir(clone)
    return clone


# ---------------------------------------------------------------- add, update, remove


def test_add_writes_the_lock(sandbox):
    ok("skills", "add", "demo", "--claude", "--codex")
    data = lock_data(sandbox.project)
    digest = json.loads((sandbox.project / ".claude/skills/demo/.kernel-skills.json").read_text())["digest"]
    assert data == {
        "version": 1,
        "skills": {
            "demo": {
                "source": "demo",
                "resolved": {"kind": "bundled", "name": "demo", "version": "1.0.0"},
                "digest": digest,
                "targets": {"agents": ["claude", "codex"], "dests": []},
            }
        },
    }
    text = (sandbox.project / LOCK).read_text()
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    # Adding more merges; adding the same again changes nothing.
    make_skill(sandbox.project / "skills", "mine")
    ok("skills", "add", "./skills/mine", "--dest", "vendor/skills")
    before = (sandbox.project / LOCK).read_bytes()
    ok("skills", "add", "demo", "--claude")
    assert (sandbox.project / LOCK).read_bytes() == before
    mine = lock_data(sandbox.project)["skills"]["mine"]
    assert mine["source"] == "./skills/mine"
    assert mine["resolved"] == {"kind": "local", "path": "skills/mine"}
    assert mine["targets"] == {"agents": [], "dests": ["vendor/skills"]}


def test_what_the_lock_cannot_hold_is_said_and_left_out(sandbox):
    outside = make_skill(sandbox.root / "elsewhere", "far")
    result = ok("skills", "add", str(outside), "--claude")
    assert "far was not recorded in" in result.stderr and "outside the project" in result.stderr
    result = ok("skills", "add", "demo", "--dest", str(sandbox.root / "shared-skills"))
    assert "shared-skills is outside the project, so skills-lock.json does not record" in result.stderr
    ok("skills", "add", "demo", "--claude", "--no-lock")
    ok("skills", "add", "demo", "--kiro", "--dry-run")
    ok("skills", "remove", "demo", "--claude")
    assert not (sandbox.project / LOCK).exists()  # nothing was recorded, so no lock was created


def test_global_installs_go_to_the_user_lock(sandbox):
    ok("skills", "add", "demo", "--claude", "--global")
    assert not (sandbox.project / LOCK).exists()
    user = sandbox.roots.state_dir / LOCK
    assert json.loads(user.read_text())["skills"]["demo"]["targets"] == {"agents": ["claude"], "dests": []}
    installed = sandbox.home / ".claude/skills/demo"
    shutil.rmtree(installed)
    assert cli("skills", "sync").exit_code == 1  # no project lock here
    ok("skills", "sync", "--global", "--frozen")
    assert skill_files(installed) == skill_files(sandbox.bundled / "demo")
    ok("skills", "remove", "demo", "--global", "--claude")
    assert json.loads(user.read_text())["skills"] == {}


def test_update_and_remove_keep_the_lock_current(sandbox):
    ok("skills", "add", "demo", "--claude", "--cursor")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    ok("skills", "update", "demo", "--claude", "--cursor")
    entry = lock_data(sandbox.project)["skills"]["demo"]
    assert entry["resolved"]["version"] == "2.0.0"
    assert entry["source"] == "demo"
    ok("skills", "remove", "demo", "--cursor")
    assert lock_data(sandbox.project)["skills"]["demo"]["targets"]["agents"] == ["claude"]
    ok("skills", "remove", "demo", "--no-lock")
    assert lock_data(sandbox.project)["skills"]["demo"]["targets"]["agents"] == ["claude"]
    ok("skills", "add", "demo", "--claude")
    ok("skills", "remove", "demo")
    assert lock_data(sandbox.project)["skills"] == {}


def test_a_bad_lock_fails_add_before_anything_is_installed(sandbox):
    (sandbox.project / LOCK).write_text('{"version": 1, "skills": {"demo": {"digest": "zz"}}}')
    before = snapshot(sandbox.project)
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "is not a valid lock file" in result.stderr
    assert snapshot(sandbox.project) == before


# ------------------------------------------------------------------------------- sync


def test_a_fresh_clone_is_restored_byte_for_byte_offline(sandbox, hub, monkeypatch):
    hub.commit(REPO, hub_files("house-style"))
    make_skill(sandbox.project / "skills", "mine")
    ok("skills", "add", "demo", "--claude")
    ok("skills", "add", "./skills/mine", "--claude", "--dest", "vendor")
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude", "--codex")
    original = sandbox.project
    clone = fresh_clone(sandbox, monkeypatch, "skills")
    hub.stop()
    set_offline(monkeypatch)
    result = ok("skills", "sync", "--frozen", "--json")
    doc = json.loads(result.stdout)
    assert doc["ok"] and not doc["lock_updated"]
    assert sorted((a["skill"], a["op"]) for a in doc["actions"]) == sorted(
        [("demo", "install"), ("mine", "install"), ("mine", "install"), ("house-style", "install"), ("house-style", "install")])
    for rel in (".claude/skills/demo", ".claude/skills/mine", "vendor/mine", ".claude/skills/house-style", ".agents/skills/house-style"):
        assert skill_files(clone / rel) == skill_files(original / rel), rel
        assert tree(clone / rel) == tree(original / rel), rel  # bytes, modes, folders
    assert (clone / LOCK).read_bytes() == (original / LOCK).read_bytes()
    # Everything matches now: exit 0 and not a byte written.
    before = snapshot(clone)
    again = ok("skills", "sync", "--frozen")
    assert "Everything matches" in again.stdout
    assert snapshot(clone) == before
    assert leftovers(clone) == []


def test_a_tampered_digest_is_refused_and_nothing_is_written(sandbox, hub, monkeypatch):
    hub.commit(REPO, hub_files("house-style"))
    ok("skills", "add", "demo", "--claude")
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude")
    data = lock_data(sandbox.project)
    for name in ("demo", "house-style"):
        data["skills"][name]["digest"] = "0" * 64
    clone = fresh_clone(sandbox, monkeypatch)
    (clone / LOCK).write_text(json.dumps(data))
    before = snapshot(clone)
    for args in (("--frozen",), ()):
        result = cli("skills", "sync", *args)
        assert result.exit_code == 1, result.stdout
        assert snapshot(clone) == before
    # A Hub commit never changes, so even a plain sync cannot "re-resolve" it away.
    assert "does not match" in result.stderr and "tampered" in result.stderr


def test_a_moved_branch_keeps_the_locked_commit(sandbox, hub, monkeypatch):
    first = hub.commit(REPO, hub_files("house-style", version="1.0.0"))
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude")
    installed = skill_files(sandbox.project / ".claude/skills/house-style")
    hub.commit(REPO, hub_files("house-style", version="2.0.0"))
    clone = fresh_clone(sandbox, monkeypatch)
    shutil.rmtree(sandbox.root / "hf" / "hub")  # a fresh CI machine: nothing cached
    for args in (("--frozen",), ()):
        shutil.rmtree(clone / ".claude", ignore_errors=True)
        ok("skills", "sync", *args)
        assert skill_files(clone / ".claude/skills/house-style") == installed
        assert first in (clone / LOCK).read_text()


def test_a_rewritten_branch_fails_frozen_and_plain_sync_relocks(sandbox, hub, monkeypatch):
    first = hub.commit(REPO, hub_files("house-style", version="1.0.0"))
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude")
    # The branch is force-pushed (history squashed): the locked commit is gone from the Hub.
    second = hub.commit(REPO, hub_files("house-style", version="2.0.0"))
    del hub.repo(REPO).commits[first]
    clone = fresh_clone(sandbox, monkeypatch)
    shutil.rmtree(sandbox.root / "hf" / "hub")
    before = snapshot(clone)
    frozen = cli("skills", "sync", "--frozen")
    assert frozen.exit_code == 1
    lines = frozen.stderr.splitlines()
    assert lines[0] == f"mismatch: house-style: commit {first} is gone from {REPO}"
    assert lines[1].startswith("Error: 1 skill(s) in") and "--frozen never re-resolves" in lines[1]
    assert snapshot(clone) == before
    plain = ok("skills", "sync")
    assert "Re-locked house-style: commit " + first[:7] + " → commit " + second[:7] in plain.stdout
    assert b"2.0.0" in (clone / ".claude/skills/house-style/SKILL.md").read_bytes()
    entry = lock_data(clone)["skills"]["house-style"]
    assert entry["resolved"] == {"kind": "hf", "uri": f"hf://{REPO}@{second}/house-style", "revision": None}
    receipt = json.loads((clone / ".claude/skills/house-style/.kernel-skills.json").read_text())
    assert receipt["digest"] == entry["digest"] and receipt["source"]["sha"] == second
    assert ok("skills", "sync", "--frozen").stdout.startswith("Everything matches")


def test_frozen_lists_every_mismatch_plain_sync_relocks_them(sandbox, monkeypatch):
    make_skill(sandbox.project / "skills", "mine")
    ok("skills", "add", "demo", "cuda-kernels", "--claude")
    ok("skills", "add", "./skills/mine", "--claude")
    clone = fresh_clone(sandbox, monkeypatch, "skills")
    make_skill(sandbox.bundled, "demo", version="1.1.0")
    (clone / "skills/mine/references/guide.md").write_text("edited\n")
    before = snapshot(clone)
    frozen = cli("skills", "sync", "--frozen")
    assert frozen.exit_code == 1
    mismatches = [line for line in frozen.stderr.splitlines() if line.startswith("mismatch: ")]
    assert mismatches == [
        "mismatch: demo: the bundled skill is now 1.1.0, the lock has 1.0.0 (its tree differs)",
        mismatches[1],
    ] and mismatches[1].startswith("mismatch: mine: the folder skills/mine no longer holds the locked tree")
    assert snapshot(clone) == before
    ok("skills", "sync")
    skills = lock_data(clone)["skills"]
    assert skills["demo"]["resolved"]["version"] == "1.1.0"
    assert (clone / ".claude/skills/mine/references/guide.md").read_text() == "edited\n"
    assert ok("skills", "sync", "--frozen").stdout.startswith("Everything matches")


def test_an_edited_install_is_refused_without_force_and_backed_up_with_it(sandbox):
    ok("skills", "add", "demo", "--claude")
    skill_md = sandbox.project / ".claude/skills/demo/SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\nmy notes\n")
    before = snapshot(sandbox.project)
    refused = cli("skills", "sync")
    assert refused.exit_code == 1
    assert "an install with local edits to SKILL.md" in refused.stderr and "--force" in refused.stderr
    assert snapshot(sandbox.project) == before
    forced = ok("skills", "sync", "--force", "--json")
    backup = json.loads(forced.stdout)["actions"][0]["backup"]
    assert "my notes" in (Path(backup) / "SKILL.md").read_text()
    assert "my notes" not in skill_md.read_text()


def test_a_clean_install_that_differs_is_replaced_and_others_left_alone(sandbox):
    ok("skills", "add", "demo", "cuda-kernels", "--claude")
    lock = (sandbox.project / LOCK).read_bytes()
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    ok("skills", "update", "demo", "--no-lock")  # the install moves on; the lock does not
    make_skill(sandbox.bundled, "demo", version="1.0.0")  # and the locked 1.0.0 is what is bundled
    untouched = snapshot(sandbox.project / ".claude/skills/cuda-kernels")
    doc = json.loads(ok("skills", "sync", "--json").stdout)
    assert [(a["skill"], a["op"], a["backup"]) for a in doc["actions"]] == [("demo", "replace", None)]
    assert [u["skill"] for u in doc["unchanged"]] == ["cuda-kernels"]
    assert '"1.0.0"' in (sandbox.project / ".claude/skills/demo/SKILL.md").read_text()
    assert snapshot(sandbox.project / ".claude/skills/cuda-kernels") == untouched
    assert (sandbox.project / LOCK).read_bytes() == lock


def test_a_linked_install_follows_the_copy_it_points_to(sandbox):
    ok("skills", "add", "demo", "--claude", "--cursor", "--link")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    ok("skills", "update", "demo", "--claude", "--no-lock")
    make_skill(sandbox.bundled, "demo", version="1.0.0")
    doc = json.loads(ok("skills", "sync", "--json").stdout)
    assert [(a["skill"], a["op"], a["path"]) for a in doc["actions"]] == [("demo", "replace", str(sandbox.project / ".claude/skills/demo"))]
    link = sandbox.project / ".cursor/skills/demo"
    assert link.is_symlink() and '"1.0.0"' in (link / "SKILL.md").read_text()
    assert ok("skills", "sync").stdout.startswith("Everything matches")


def test_a_matching_install_is_not_re_resolved(sandbox):
    # The lock is satisfied: a newer bundled version is outdated's business, not sync's.
    ok("skills", "add", "demo", "--claude")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    before = snapshot(sandbox.project)
    assert ok("skills", "sync").stdout.startswith("Everything matches")
    assert snapshot(sandbox.project) == before
    # An install that moved away from the lock while the locked tree is no longer bundled: re-locked, not replaced.
    ok("skills", "update", "demo", "--no-lock")
    doc = json.loads(ok("skills", "sync", "--json").stdout)
    assert doc["actions"] == [] and [r["skill"] for r in doc["relocked"]] == ["demo"] and doc["lock_updated"]
    assert lock_data(sandbox.project)["skills"]["demo"]["resolved"]["version"] == "2.0.0"


def test_prune_removes_managed_installs_the_lock_does_not_list(sandbox):
    ok("skills", "add", "demo", "--claude")
    ok("skills", "add", "cuda-kernels", "--claude", "--cursor", "--no-lock")
    own = sandbox.project / ".claude/skills/handmade"
    make_skill(own.parent, "handmade")
    dry = ok("skills", "sync", "--prune", "--dry-run")
    assert "Would remove cuda-kernels" in dry.stdout
    assert (sandbox.project / ".cursor/skills/cuda-kernels").is_dir()
    (sandbox.project / ".cursor/skills/cuda-kernels/notes.md").write_text("mine\n")
    refused = cli("skills", "sync", "--prune")
    assert refused.exit_code == 1 and "is not in skills-lock.json" in refused.stderr and "--force" in refused.stderr
    assert (sandbox.project / ".claude/skills/cuda-kernels").is_dir()  # nothing was removed
    pruned = json.loads(ok("skills", "sync", "--prune", "--force", "--json").stdout)
    backups = [a["backup"] for a in pruned["actions"] if a["backup"]]
    assert len(backups) == 1 and (Path(backups[0]) / "notes.md").read_text() == "mine\n"
    assert not (sandbox.project / ".claude/skills/cuda-kernels").exists()
    assert not (sandbox.project / ".cursor/skills/cuda-kernels").exists()
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()
    assert (own / "SKILL.md").is_file()  # not ours: never pruned, even with --force
    ok("skills", "sync", "--prune", "--force")
    assert (own / "SKILL.md").is_file()


def test_sync_without_a_lock_and_with_a_bad_one(sandbox):
    missing = cli("skills", "sync")
    assert missing.exit_code == 1 and "no skills-lock.json in the current folder" in missing.stderr
    (sandbox.project / LOCK).write_text(json.dumps({"version": 1, "skills": {"demo": {
        "source": "demo", "resolved": {"kind": "bundled", "name": "demo", "version": None}, "digest": "0" * 64,
        "targets": {"agents": [], "dests": ["/abs/skills"]}}}}))
    before = snapshot(sandbox.project)
    bad = cli("skills", "sync", "--json")
    assert bad.exit_code == 1
    assert bad.stderr.count("\n") == 1 and "'/abs/skills' is absolute" in bad.stderr
    assert json.loads(bad.stdout)["ok"] is False
    assert snapshot(sandbox.project) == before


# --------------------------------------------------------------------------- outdated


def test_outdated_exit_codes_with_the_hub_up_moved_and_unreachable(sandbox, hub):
    hub.commit(REPO, hub_files("house-style"))
    ok("skills", "add", "demo", "--claude")
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude")
    current = ok("skills", "outdated", "--json")
    doc = json.loads(current.stdout)
    assert doc["exit_code"] == 0 and not doc["updates_available"]
    assert {r["skill"]: (r["state"], r["in_sync"]) for r in doc["skills"]} == {"demo": ("current", True), "house-style": ("current", True)}
    moved = hub.commit(REPO, hub_files("house-style", version="2.0.0"))
    result = cli("skills", "outdated")
    assert result.exit_code == 10, result.stderr
    assert "moved from" in result.stdout and moved[:7] in result.stdout
    make_skill(sandbox.bundled, "demo", version="1.5.0")
    doc = json.loads(cli("skills", "outdated", "--json").stdout)
    assert {r["skill"]: (r["state"], r["latest"]) for r in doc["skills"]} == {
        "demo": ("outdated", "1.5.0"), "house-style": ("outdated", moved[:7])}
    # Taking the updates and committing the lock brings it back to 0.
    ok("skills", "update")
    assert cli("skills", "outdated").exit_code == 0
    shutil.rmtree(sandbox.project / ".claude/skills/demo")
    doc = json.loads(cli("skills", "outdated", "--json").stdout)
    assert doc["exit_code"] == 0 and [r["in_sync"] for r in doc["skills"]] == [False, True]
    assert "run `kernels skills sync`" in doc["skills"][0]["detail"]
    hub.stop()
    down = cli("skills", "outdated", "--json")
    assert down.exit_code == 1
    doc = json.loads(down.stdout)
    assert doc["ok"] is False
    assert {r["skill"]: r["state"] for r in doc["skills"]} == {"demo": "current", "house-style": "error"}
    assert "Error: could not check house-style" in down.stderr


def test_outdated_offline_is_never_current(sandbox, hub, monkeypatch):
    hub.commit(REPO, hub_files("house-style"))
    ok("skills", "add", f"hf://{REPO}/house-style", "--claude")
    set_offline(monkeypatch)
    result = cli("skills", "outdated")
    assert result.exit_code == 1
    assert "HF_HUB_OFFLINE=1" in result.stdout


# ---------------------------------------------------------------- concurrency, SIGKILL


@pytest.mark.parametrize("lock_hook", ["", ",no-flock"], ids=["flock", "lock-file"])
def test_eight_concurrent_adds_all_land_in_the_lock(sandbox, lock_hook):
    # lock-file: the lock Windows takes (a byte-range lock on a file), simulated here.
    names = [f"skill-{i}" for i in range(8)]
    for name in names:
        make_skill(sandbox.bundled, name)
    env = sandbox.env(PYTHONPATH=str(Path(lockfile.__file__).parents[1]), KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled),
                      KERNEL_SKILLS_TEST_HOOKS="delay=0.02" + lock_hook)  # every file operation slowed: the writes overlap
    procs = [
        subprocess.Popen([sys.executable, "-m", "kernel_skills", "skills", "add", name, "--dest", f"vendor-{i}", "-q"],
                         cwd=sandbox.project, env=env, stderr=subprocess.PIPE, text=True)
        for i, name in enumerate(names)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    skills = lock_data(sandbox.project)["skills"]
    assert sorted(skills) == names
    assert [skills[name]["targets"]["dests"] for name in names] == [[f"vendor-{i}"] for i in range(8)]
    assert sorted(os.listdir(sandbox.project)) == sorted([LOCK, *(f"vendor-{i}" for i in range(8))])


def _consistent(project: Path) -> None:
    """Every locked target is absent or one whole install (receipt present, files clean)."""
    from kernel_skills import install

    for name, entry in lock_data(project)["skills"].items():
        for agent in entry["targets"]["agents"]:
            dest = project / f".{agent}/skills" / name
            if os.path.lexists(dest):
                found = install.inspect(dest)
                assert found.receipt is not None and not found.changes, dest


def _killable_project(sandbox) -> Path:
    """A project whose sync replaces alpha, installs gamma, and re-locks and installs beta."""
    for name in ("alpha", "beta", "gamma"):
        make_skill(sandbox.bundled, name)
    ok("skills", "add", "alpha", "beta", "gamma", "--claude")
    make_skill(sandbox.bundled, "alpha", version="2.0.0")
    ok("skills", "update", "alpha", "--no-lock")  # alpha's install moves on, the lock stays at 1.0.0
    make_skill(sandbox.bundled, "alpha", version="1.0.0")
    make_skill(sandbox.bundled, "beta", version="2.0.0")  # the locked beta is no longer bundled
    for name in ("beta", "gamma"):
        shutil.rmtree(sandbox.project / ".claude/skills" / name)
    return sandbox.project


def _run_sync(project: Path, env: dict, *args: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    hooks = {"KERNEL_SKILLS_TEST_HOOKS": f"kill-at={kill_at}"} if kill_at else {}
    return run_module("skills", "sync", *args, env={**env, **hooks}, cwd=project)


def test_sigkill_during_sync_leaves_each_target_old_or_new(sandbox, monkeypatch):
    template = _killable_project(sandbox)
    lock_before = (template / LOCK).read_bytes()
    env = sandbox.env(PYTHONPATH=str(Path(lockfile.__file__).parents[1]), KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled))
    # This sync makes 34 filesystem operations, the last two the lock's temp file and its
    # rename. Kill it before a spread of them, each time on a fresh copy of the project.
    for kill_at in (2, 10, 20, 30, 33, 34):
        project = sandbox.root / f"kill-{kill_at}"
        shutil.copytree(template, project, symlinks=True)
        killed = _run_sync(project, env, kill_at=kill_at)
        assert killed.returncode == -9, (kill_at, killed.stderr)
        lockfile.read(project / LOCK)  # always a whole, valid lock: the old one
        assert (project / LOCK).read_bytes() == lock_before
        _consistent(project)
        alpha = (project / ".claude/skills/alpha/SKILL.md").read_text()
        assert '"1.0.0"' in alpha or '"2.0.0"' in alpha
        if kill_at >= 33:  # killed while writing the lock: every tree is new, the lock still old
            assert '"1.0.0"' in alpha and '"2.0.0"' in (project / ".claude/skills/beta/SKILL.md").read_text()
        monkeypatch.chdir(project)
        finished = ok("skills", "sync", "--json")
        data = lock_data(project)
        assert data["skills"]["beta"]["resolved"]["version"] == "2.0.0", (kill_at, finished.stdout)
        for name in ("alpha", "beta", "gamma"):
            receipt = json.loads((project / ".claude/skills" / name / ".kernel-skills.json").read_text())
            assert receipt["digest"] == data["skills"][name]["digest"], (kill_at, name)
        assert leftovers(project) == []
        assert sorted(os.listdir(project)) == [".claude", LOCK]
        assert json.loads(ok("skills", "sync", "--frozen", "--json").stdout)["actions"] == []
