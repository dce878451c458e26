"""skills-lock.json, the file itself: format, validation, atomic writes, merging edits.

The commands that keep it current (add, update, remove) and restore from it (sync) are
tested in test_sync.py; this file tests kernel_skills.lockfile on real files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills import lockfile
from kernel_skills.agents import Location, Target
from kernel_skills.errors import KernelsError
from kernel_skills.lockfile import Entry, Lock, Place

DIGEST = "ab" * 32
SHA = "1234567890abcdef1234567890abcdef12345678"


def sample() -> Lock:
    return Lock({
        "zeta": Entry("zeta", "./skills/zeta", {"kind": "local", "path": "skills/zeta"}, DIGEST, ["codex", "claude"], ["vendor/skills"]),
        "alpha": Entry("alpha", "alpha", {"kind": "bundled", "name": "alpha", "version": "1.0.0"}, "cd" * 32, ["claude"]),
        "hub-skill": Entry("hub-skill", "hf://org/repo/hub-skill", {"kind": "hf", "uri": f"hf://org/repo@{SHA}/hub-skill", "revision": None},
                           "ef" * 32, ["agents"]),
    })


def valid_text() -> dict:
    return json.loads(lockfile.render(sample()))


def test_the_file_is_deterministic_json_that_diffs_well():
    data = lockfile.render(sample())
    text = data.decode()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text.startswith('{\n  "skills": {\n    "alpha": {')  # sorted keys, 2-space indent
    parsed = json.loads(text)
    assert parsed["version"] == lockfile.VERSION
    assert list(parsed["skills"]) == ["alpha", "hub-skill", "zeta"]
    assert parsed["skills"]["zeta"]["targets"] == {"agents": ["claude", "codex"], "dests": ["vendor/skills"]}
    assert parsed["skills"]["hub-skill"]["resolved"]["uri"] == f"hf://org/repo@{SHA}/hub-skill"
    # Parsing and rendering again gives the same bytes: the file is its own canonical form.
    assert lockfile.render(lockfile.parse(data)) == data


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: "{not json", "not JSON"),
        (lambda d: [], "top level must be an object"),
        (lambda d: {**d, "version": 0}, "unknown version 0"),
        (lambda d: {**d, "version": "1"}, "unknown version '1'"),
        (lambda d: d.pop("version") and d, "unknown version None"),
        (lambda d: d["skills"]["alpha"].update(digest="XY" * 32) or d, "digest must be 64 lowercase hex"),
        (lambda d: d["skills"]["alpha"].update(digest="ab" * 31) or d, "digest must be 64 lowercase hex"),
        (lambda d: d["skills"]["zeta"]["resolved"].update(path="../outside") or d, "'../outside' leads outside the project"),
        (lambda d: d["skills"]["zeta"]["resolved"].update(path="skills/../../x") or d, "leads outside the project"),
        (lambda d: d["skills"]["zeta"]["targets"].update(dests=["/etc/skills"]) or d, "'/etc/skills' is absolute"),
        (lambda d: d["skills"]["zeta"]["targets"].update(dests=["~/skills"]) or d, "is absolute"),
        (lambda d: d["skills"]["zeta"]["targets"].update(agents=["vim"]) or d, "unknown agent(s) vim"),
        (lambda d: d["skills"]["zeta"].update(targets={"agents": [], "dests": []}) or d, "has no targets"),
        (lambda d: d["skills"]["hub-skill"]["resolved"].update(uri="hf://org/repo@main/hub-skill") or d, "must name a 40-hex commit"),
        (lambda d: d["skills"]["alpha"]["resolved"].update(kind="git") or d, "kind must be one of bundled, local, hf"),
        (lambda d: d["skills"].update({"Bad Name": d["skills"]["alpha"]}) or d, "'Bad Name' is not a valid skill name"),
    ],
)
def test_a_bad_lock_file_is_one_clear_error(damage, message):
    data = damage(valid_text())
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(KernelsError) as info:
        lockfile.parse(text, "skills-lock.json")
    assert message in info.value.what
    assert "\n" not in info.value.message
    assert info.value.exit_code == 1


def test_a_newer_lock_version_says_to_upgrade():
    with pytest.raises(KernelsError) as info:
        lockfile.parse(json.dumps({**valid_text(), "version": 2}))
    assert "version 2" in info.value.what and "Upgrade kernel-skills" in info.value.fix


def test_editing_a_bad_lock_writes_nothing(sandbox):
    path = sandbox.project / lockfile.LOCK_FILE
    path.write_text('{"version": 1, "skills": {"x": {"digest": "nothex"}}}')
    before = path.read_bytes()
    with pytest.raises(KernelsError):
        lockfile.edit(path, lambda lock: lock.entries.clear())
    assert path.read_bytes() == before
    assert sorted(os.listdir(sandbox.project)) == [lockfile.LOCK_FILE]


def test_a_missing_lock_reads_as_empty_and_edit_creates_it(sandbox):
    path = sandbox.project / lockfile.LOCK_FILE
    assert lockfile.read(path).entries == {}
    lockfile.edit(path, lambda lock: lock.entries.update(sample().entries))
    assert lockfile.read(path).entries.keys() == {"alpha", "hub-skill", "zeta"}
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644 & ~_umask())
    assert sorted(os.listdir(sandbox.project)) == [lockfile.LOCK_FILE]  # no temp file left


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def test_edits_merge_with_what_is_on_disk(sandbox):
    path = sandbox.project / lockfile.LOCK_FILE
    entries = sample().entries
    lockfile.edit(path, lambda lock: lock.entries.update(alpha=entries["alpha"]))
    lockfile.edit(path, lambda lock: lock.entries.update(zeta=entries["zeta"]))
    assert set(lockfile.read(path).entries) == {"alpha", "zeta"}


def test_an_unchanged_edit_does_not_rewrite_the_file(sandbox):
    path = sandbox.project / lockfile.LOCK_FILE
    lockfile.edit(path, lambda lock: lock.entries.update(sample().entries))
    os.utime(path, (1, 1))
    lockfile.edit(path, lambda lock: None)
    assert os.stat(path).st_mtime == 1


def test_a_symlinked_lock_file_is_written_through_the_link(sandbox):
    real = sandbox.root / "dotfiles" / lockfile.LOCK_FILE
    real.parent.mkdir()
    real.write_bytes(lockfile.render(Lock()))
    link = sandbox.project / lockfile.LOCK_FILE
    link.symlink_to(real)
    lockfile.edit(link, lambda lock: lock.entries.update(sample().entries))
    assert link.is_symlink()
    assert set(lockfile.read(real).entries) == {"alpha", "hub-skill", "zeta"}


_EDIT_SCRIPT = """
import sys
from pathlib import Path
from kernel_skills import lockfile
from kernel_skills.lockfile import Entry
path = Path(sys.argv[1])
lockfile.edit(path, lambda lock: lock.entries.update(new=Entry("new", "new", {"kind": "bundled", "name": "new", "version": None}, "00" * 32, ["claude"])))
"""


@pytest.mark.parametrize("kill_at", [1, 2])
def test_a_writer_killed_mid_write_leaves_the_old_file_whole(sandbox, kill_at):
    # kill-at=1: SIGKILL before the temp file is written; 2: after it, before the rename.
    path = sandbox.project / lockfile.LOCK_FILE
    lockfile.edit(path, lambda lock: lock.entries.update(sample().entries))
    before = path.read_bytes()
    env = sandbox.env(KERNEL_SKILLS_TEST_HOOKS=f"kill-at={kill_at}", PYTHONPATH=str(Path(lockfile.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-c", _EDIT_SCRIPT, str(path)], env=env, capture_output=True, timeout=60, check=False)
    assert result.returncode == -9
    assert path.read_bytes() == before
    # The next edit (under the lock, so no writer is live) deletes what the killed one left.
    lockfile.edit(path, lambda lock: lock.entries.pop("alpha"))
    assert sorted(os.listdir(sandbox.project)) == [lockfile.LOCK_FILE]
    assert set(lockfile.read(path).entries) == {"hub-skill", "zeta"}


def test_places_and_the_targets_they_record(sandbox):
    loc = Location(sandbox.project, sandbox.home)
    place = Place.project(loc)
    assert place.path == sandbox.project / "skills-lock.json"
    inside = Target(sandbox.project / "vendor" / "skills", "dest")
    outside = Target(sandbox.root / "elsewhere", "dest")
    assert place.claims(inside) == "dest:vendor/skills"
    assert place.claims(outside) is None
    assert place.claims(Target(sandbox.project / ".claude/skills", "project", ["claude"])) == "agent:claude"
    assert place.claims(Target(sandbox.home / ".claude/skills", "global", ["claude"])) is None
    user = Place.user(sandbox.state, loc)
    assert user.claims(Target(sandbox.home / ".claude/skills", "global", ["claude"])) == "agent:claude"
    assert user.claims(inside) is None
    entry = sample().entries["zeta"]
    assert sorted(t.path for t in place.targets(entry, loc)) == sorted([
        sandbox.project / ".claude/skills", sandbox.project / ".agents/skills", sandbox.project / "vendor/skills"])
