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


# ------------------------------------------- 2. a concurrent run that finds its own result succeeds


def test_sixteen_concurrent_identical_adds_all_succeed(sandbox):
    import subprocess
    import sys

    dest = sandbox.root / "r"
    env = sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled))
    procs = [
        subprocess.Popen([sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--dest", str(dest), "-q"],
                         env=env, cwd=sandbox.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(16)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 16, [err for _, err in results if err]
    assert os.listdir(dest) == ["demo"]


def test_an_identical_install_made_after_the_preflight_is_skipped_under_the_lock(sandbox):
    from kernel_skills import install
    from kernel_skills.agents import Target

    from kernel_skills.sources import SourceContext

    target = Target(sandbox.root / "r", "dest", [])
    ctx = SourceContext(sandbox.bundled)
    first = install.plan_add(install.skill_sources(["demo"], ctx), [target])
    second = install.plan_add(install.skill_sources(["demo"], ctx), [target])  # both saw an empty folder
    install.apply(first, state_dir=sandbox.roots.state_dir)
    install.apply(second, state_dir=sandbox.roots.state_dir)  # used to raise "appeared while installing"
    assert [s.path for s in second.skipped] == [target.path / "demo"] and not second.actions


# ------------------------------------------------ 3. a source that could not be checked has failed


def test_update_with_the_hub_unreachable_fails_instead_of_saying_up_to_date(sandbox, hub):
    from .hubfake import skill_files as hub_skill

    hub.commit("my-org/skills", hub_skill("house-style"))
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "d", "-q").exit_code == 0
    hub.stop()
    result = cli("skills", "update", "--dest", "d", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    [skipped] = report["skipped"]
    assert skipped["failed"] is True and "up to date" not in skipped["reason"]
    assert "Hub" in skipped["reason"]
