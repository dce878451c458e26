"""Skills from local folders: a skill folder, or a folder of skills with --skill; and the
checks every untrusted tree must pass before anything reaches an agent's folder."""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest

from .conftest import cli, leftovers, make_skill, skill_files, snapshot


def receipt(folder):
    return json.loads((folder / ".kernel-skills.json").read_text())


@pytest.fixture
def team(sandbox):
    """./team: a folder of three skills, plus a folder that is not a skill."""
    root = sandbox.project / "team"
    for name in ("alpha", "beta", "gamma"):
        make_skill(root, name, description=f"The {name} skill. Use it for {name} work.")
    (root / "notes").mkdir()
    (root / "notes/readme.txt").write_text("not a skill\n")
    return root


def test_add_a_skill_folder(sandbox):
    folder = make_skill(sandbox.project / "work", "house-style")
    result = cli("skills", "add", "./work/house-style", "--claude")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert skill_files(dest) == skill_files(folder)
    assert os.stat(dest / "scripts/tool.py").st_mode & stat.S_IXUSR
    assert receipt(dest)["source"] == {"kind": "local", "path": str(folder)}
    assert f"house-style: from {folder}" in result.stderr


def test_add_the_current_folder_and_absolute_and_home_paths(sandbox, monkeypatch):
    folder = make_skill(sandbox.home / "skills", "mine")
    assert cli("skills", "add", "~/skills/mine", "--claude").exit_code == 0
    assert cli("skills", "add", str(folder), "--kiro").exit_code == 0
    monkeypatch.chdir(folder)
    assert cli("skills", "add", ".", "--dest", str(sandbox.root / "d")).exit_code == 0
    for dest in (sandbox.project / ".claude/skills/mine", sandbox.project / ".kiro/skills/mine", sandbox.root / "d/mine"):
        assert skill_files(dest) == skill_files(folder)


def test_a_folder_of_skills_needs_skill_to_pick(sandbox, team):
    bare = cli("skills", "add", "./team", "--claude")
    assert bare.exit_code == 2
    assert "is a folder of 3 skills (alpha, beta, gamma)" in bare.stderr and "--skill '*'" in bare.stderr
    assert cli("skills", "add", "./team", "--skill", "beta", "--skill", "gamma", "--claude").exit_code == 0
    assert sorted(os.listdir(sandbox.project / ".claude/skills")) == ["beta", "gamma"]
    assert cli("skills", "add", "./team", "--skill", "*", "--kiro").exit_code == 0
    assert sorted(os.listdir(sandbox.project / ".kiro/skills")) == ["alpha", "beta", "gamma"]
    missing = cli("skills", "add", "./team", "--skill", "delta", "--cursor")
    assert missing.exit_code == 2 and "holds no skill named 'delta'" in missing.stderr
    single = cli("skills", "add", "./team/alpha", "--skill", "beta", "--cursor")
    assert single.exit_code == 2 and "holds only the skill 'alpha'" in single.stderr


def test_skill_names_a_bundled_skill_when_no_folder_is_given(sandbox):
    # The `kernel-builder skills add --skill NAME` form keeps working; '*' is every bundled skill.
    assert cli("skills", "add", "--skill", "demo", "--claude").exit_code == 0
    assert sorted(os.listdir(sandbox.project / ".claude/skills")) == ["demo"]
    assert cli("skills", "add", "--skill", "*", "--kiro").exit_code == 0
    assert sorted(os.listdir(sandbox.project / ".kiro/skills")) == ["cuda-kernels", "demo"]


def test_bundled_names_folders_and_hub_addresses_mix(sandbox, team):
    result = cli("skills", "add", "demo", "./team", "--skill", "alpha", "--claude", "--json")
    assert result.exit_code == 0, result.output
    kinds = {a["skill"]: a["source"]["kind"] for a in json.loads(result.stdout)["actions"]}
    assert kinds == {"demo": "bundled", "alpha": "local"}


def test_two_sources_with_the_same_skill_name_are_refused(sandbox, team):
    make_skill(sandbox.project / "other", "alpha")
    result = cli("skills", "add", "./team", "./other/alpha", "--skill", "alpha", "--claude")
    assert result.exit_code == 2 and "two sources provide a skill named 'alpha'" in result.stderr
    assert not (sandbox.project / ".claude").exists()


def test_list_shows_what_a_folder_offers(sandbox, team):
    result = cli("skills", "add", "--list", "./team")
    assert result.exit_code == 0, result.output
    for name in ("alpha", "beta", "gamma"):
        assert f"The {name} skill" in result.stdout
        assert f"kernels skills add {team / name}" in result.stdout
    assert "notes" not in result.stdout
    assert not (sandbox.project / ".agents").exists()
    bundled = json.loads(cli("skills", "add", "--list", "--json").stdout)["offers"]
    assert [o["name"] for o in bundled] == ["cuda-kernels", "demo"]


def test_update_follows_the_source_folder(sandbox):
    folder = make_skill(sandbox.project / "work", "house-style")
    assert cli("skills", "add", "./work/house-style", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/house-style"
    unchanged = cli("skills", "update", "--json")
    assert "up to date" in json.loads(unchanged.stdout)["skipped"][0]["reason"]
    (folder / "references/new.md").write_text("# new\n")
    assert cli("skills", "list", "--json").stdout.count('"outdated"') == 1
    updated = cli("skills", "update")
    assert updated.exit_code == 0 and "Replaced house-style" in updated.stdout
    assert skill_files(dest) == skill_files(folder)
    os.symlink("/etc/passwd", folder / "references/passwd")
    assert '"source refused"' in cli("skills", "list", "--json").stdout
    refused_update = cli("skills", "update")
    # Not updated, and CI must notice: exit 1, the install left as it was.
    assert refused_update.exit_code == 1 and "references/passwd is a symlink to the absolute path" in refused_update.stdout
    for path in sorted(folder.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    folder.rmdir()
    gone = cli("skills", "update")
    assert gone.exit_code == 1 and "is gone" in gone.stdout
    assert dest.is_dir()


def test_show_and_validate_folders(sandbox, team):
    shown = cli("skills", "show", "./team", "--skill", "beta")
    assert shown.exit_code == 0 and "The beta skill" in shown.stdout and "tool.py" in shown.stdout
    several = cli("skills", "show", "./team", "--skill", "*")
    assert several.exit_code == 2 and "show describes one skill" in several.stderr
    checked = cli("skills", "validate", "./team", "--json")
    assert checked.exit_code == 0, checked.output
    assert [r["path"] for r in json.loads(checked.stdout)["results"]] == ["./team/alpha", "./team/beta", "./team/gamma"]


def test_missing_folder_and_a_name_that_is_a_local_folder(sandbox):
    missing = cli("skills", "add", "./nowhere", "--claude")
    assert missing.exit_code == 1 and "./nowhere does not exist" in missing.stderr
    make_skill(sandbox.project, "my-own")
    hint = cli("skills", "add", "my-own", "--claude")
    assert hint.exit_code == 1 and "To install the folder here, write ./my-own" in hint.stderr
    empty = sandbox.project / "empty"
    empty.mkdir()
    none = cli("skills", "add", "./empty", "--claude")
    assert none.exit_code == 1 and "has no SKILL.md and no skill folders" in none.stderr


# ---------------------------------------------------------------------- refused trees


def refused(sandbox, source: str, *args: str):
    """Run `add SOURCE --claude`: it must fail with one error line and change nothing."""
    target = sandbox.project / ".claude/skills"
    target.mkdir(parents=True, exist_ok=True)
    before = snapshot(target)
    result = cli("skills", "add", source, "--claude", *args)
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: refused ")
    assert snapshot(target) == before
    assert leftovers(sandbox.project) == []
    return result.stderr


def test_an_absolute_symlink_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    os.symlink("/etc/passwd", folder / "references/passwd")
    error = refused(sandbox, "./work/x")
    assert "references/passwd is a symlink to the absolute path /etc/passwd" in error


def test_a_symlink_out_of_the_skill_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    (sandbox.project / "work/secret.txt").write_text("secret\n")
    os.symlink("../../secret.txt", folder / "references/leak.txt")
    error = refused(sandbox, "./work/x")
    assert "references/leak.txt is a symlink to ../../secret.txt, outside the skill" in error


def test_a_symlink_that_leaves_through_another_link_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    (sandbox.project / "work/secret.txt").write_text("secret\n")
    os.symlink("..", folder / "assets/parent")  # the skill folder itself: inside
    # Read as text, this stays inside (assets/secret.txt); followed, it leaves.
    os.symlink("parent/../secret.txt", folder / "assets/escape")
    error = refused(sandbox, "./work/x")
    assert "assets/escape is a symlink to parent/../secret.txt, which leads outside the skill" in error


def test_symlinks_inside_the_skill_are_kept(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    os.symlink("guide.md", folder / "references/alias.md")
    assert cli("skills", "add", "./work/x", "--claude").exit_code == 0
    assert os.readlink(sandbox.project / ".claude/skills/x/references/alias.md") == "guide.md"


def test_a_hard_link_to_a_file_outside_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    outside = sandbox.project / "work/secret.txt"
    outside.write_text("secret\n")
    os.link(outside, folder / "references/secret.txt")
    error = refused(sandbox, "./work/x")
    assert "references/secret.txt is a hard link to a file outside the skill (2 names, 1 inside)" in error


def test_hard_links_within_the_skill_are_fine(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    os.link(folder / "references/guide.md", folder / "references/same.md")
    assert cli("skills", "add", "./work/x", "--claude").exit_code == 0


def test_a_fifo_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    os.mkfifo(folder / "assets/pipe")
    assert "assets/pipe is a fifo" in refused(sandbox, "./work/x")


def test_a_socket_is_refused(sandbox, tmp_path):
    folder = make_skill(sandbox.project / "work", "x")
    sock = socket.socket(socket.AF_UNIX)
    path = folder / "assets/s"
    if len(str(path)) > 100:
        pytest.skip("path too long for a unix socket here")
    try:
        sock.bind(str(path))
        assert "assets/s is a socket" in refused(sandbox, "./work/x")
    finally:
        sock.close()


def test_a_device_file_is_refused(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    try:
        os.mknod(folder / "assets/null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create device files here (needs root)")
    assert "assets/null is a device file" in refused(sandbox, "./work/x")


def test_a_file_over_10_mb_is_refused_unless_the_limit_is_raised(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    with open(folder / "assets/big.bin", "wb") as handle:
        handle.truncate(10_000_001)  # sparse: costs no disk
    error = refused(sandbox, "./work/x")
    assert "refused " in error and "assets/big.bin is 10.0 MB, over the 10.0 MB limit for one file" in error
    assert "--max-file-mb" in error
    assert cli("skills", "add", "./work/x", "--claude", "--max-file-mb", "10.5").exit_code == 0
    # `list` compares, it does not install: no limits there.
    assert '"current"' in cli("skills", "list", "--json").stdout
    (folder / "references/new.md").write_text("# new\n")
    held = cli("skills", "update")
    assert "over the 10.0 MB limit" in held.stdout  # update installs: the limits apply again
    assert cli("skills", "update", "--max-file-mb", "10.5").exit_code == 0
    assert (sandbox.project / ".claude/skills/x/references/new.md").is_file()


def test_a_tree_over_50_mb_is_refused_unless_the_limit_is_raised(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    for i in range(6):
        with open(folder / f"assets/part{i}.bin", "wb") as handle:
            handle.truncate(9_000_000)
    error = refused(sandbox, "./work/x")
    assert "assets/part5.bin takes the skill past the 50.0 MB limit for a whole skill" in error
    assert "--max-total-mb" in error
    assert cli("skills", "add", "./work/x", "--dest", str(sandbox.root / "d"), "--max-total-mb", "60").exit_code == 0


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf"])
def test_limits_must_be_positive_numbers(sandbox, value):
    result = cli("skills", "add", "demo", "--claude", "--max-file-mb", value)
    assert result.exit_code == 2 and "--max-file-mb must be a positive number of megabytes" in result.stderr


def test_a_limit_below_one_byte_is_a_usage_error(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--max-file-mb", "1e-9")
    assert result.exit_code == 2 and "--max-file-mb 1e-9 is less than one byte" in result.stderr


def test_an_astronomical_limit_means_no_practical_limit(sandbox):
    # 1e308 MB overflows an integer byte count; it must install, not crash.
    result = cli("skills", "add", "demo", "--claude", "--max-file-mb", "1e308", "--max-total-mb", "1e308")
    assert result.exit_code == 0, result.output
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()


@pytest.mark.parametrize("name", ["House_Style", "house--style", "x" * 65])
def test_a_skill_folder_with_a_bad_name_is_refused(sandbox, name):
    make_skill(sandbox.project / "work", name)
    error = refused(sandbox, f"./work/{name}")
    assert f"{name} is not a valid skill name" in error


def test_a_skill_md_that_fails_validation_is_refused(sandbox):
    make_skill(sandbox.project / "work", "x", skill_md="---\nname: x\ndescription: ok\nmetadata: [1, 2]\n---\n")
    result = cli("skills", "add", "./work/x", "--claude")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "skill 'x' from " in result.stderr and "'metadata' must be a mapping" in result.stderr
    assert not (sandbox.project / ".claude").exists()


def test_nothing_from_a_source_is_executed_or_imported(sandbox):
    marker = sandbox.root / "executed"
    payload = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n"
    make_skill(
        sandbox.project / "work",
        "x",
        extra={"scripts/tool.py": "#!/usr/bin/env python3\n" + payload, "__init__.py": payload, "conftest.py": payload, "setup.py": payload},
    )
    assert cli("skills", "add", "./work/x", "--claude").exit_code == 0
    assert cli("skills", "validate", "./work/x").exit_code == 0
    assert cli("skills", "show", "./work/x").exit_code == 0
    evil = make_skill(
        sandbox.project / "work",
        "y",
        skill_md=f"---\nname: y\ndescription: !!python/object/apply:os.system ['touch {marker}']\n---\n",
    )
    assert cli("skills", "add", str(evil), "--claude").exit_code == 1  # safe YAML: a tag, not a call
    assert not marker.exists()


def test_validate_reports_every_unsafe_entry(sandbox):
    folder = make_skill(sandbox.project / "work", "x")
    (sandbox.project / "work/secret.txt").write_text("s\n")
    os.link(sandbox.project / "work/secret.txt", folder / "references/hard.txt")
    os.mkfifo(folder / "assets/pipe")
    with open(folder / "assets/big.bin", "wb") as handle:
        handle.truncate(10_000_001)
    result = cli("skills", "validate", "./work/x", "--json")
    assert result.exit_code == 1
    errors = {e["path"]: e["message"] for e in json.loads(result.stdout)["results"][0]["errors"]}
    assert errors["references/hard.txt"].startswith("is a hard link to a file outside the skill")
    assert errors["assets/big.bin"].startswith("is 10.0 MB")
    assert "assets/pipe" in errors
    assert cli("skills", "validate", "./work/x", "--max-file-mb", "20", "--json").stdout.count("is 10.0 MB") == 0
