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

from kernel_skills import lockfile

from .conftest import cli, make_skill, snapshot

REPO = "my-org/skills"
LOCK = lockfile.LOCK_FILE


def lock_data(project: Path) -> dict:
    return json.loads((project / LOCK).read_text())


def ok(*args: str):
    result = cli(*args)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result


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
    assert lock_data(sandbox.project)["skills"] == {}
    ok("skills", "add", "demo", "--claude", "--no-lock")
    assert lock_data(sandbox.project)["skills"] == {}
    ok("skills", "add", "demo", "--kiro", "--dry-run")
    assert lock_data(sandbox.project)["skills"] == {}


def test_global_installs_go_to_the_user_lock(sandbox):
    ok("skills", "add", "demo", "--claude", "--global")
    assert not (sandbox.project / LOCK).exists()
    user = sandbox.state / "kernel-skills" / LOCK
    assert json.loads(user.read_text())["skills"]["demo"]["targets"] == {"agents": ["claude"], "dests": []}
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


# ---------------------------------------------------------------- concurrency, SIGKILL


def test_eight_concurrent_adds_all_land_in_the_lock(sandbox):
    names = [f"skill-{i}" for i in range(8)]
    for name in names:
        make_skill(sandbox.bundled, name)
    env = sandbox.env(PYTHONPATH=str(Path(lockfile.__file__).parents[1]), KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled),
                      KERNEL_SKILLS_TEST_HOOKS="delay=0.02")  # every file operation slowed: the writes overlap
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
