"""`kernels skills add`: targets, flags, receipts, backups, links, preflight."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from kernel_skills import fsops
from kernel_skills.agents import AGENTS

from .conftest import cli, leftovers, make_skill, skill_files, snapshot


def bundled_files(sandbox, name: str = "demo") -> dict[str, bytes]:
    return skill_files(sandbox.bundled / name)


# ------------------------------------------------------------------------------ targets


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.name)
def test_each_agent_flag_installs_into_its_project_folder(sandbox, agent):
    result = cli("skills", "add", "demo", f"--{agent.name}")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / agent.project / "demo"
    assert skill_files(dest) == bundled_files(sandbox)
    assert str(Path(agent.project) / "demo") in result.stdout


@pytest.mark.parametrize(
    "flag, expected",
    [
        ("--claude", "claude-config/skills"),
        ("--codex", ".agents/skills"),
        ("--opencode", "xdg/opencode/skills"),
        ("--cursor", ".cursor/skills"),
        ("--gemini", ".gemini/skills"),
        ("--copilot", ".copilot/skills"),
        ("--windsurf", ".codeium/windsurf/skills"),
        ("--kiro", ".kiro/skills"),
        ("--agents", ".agents/skills"),
    ],
)
def test_each_agent_flag_with_global_installs_into_its_user_folder(sandbox, monkeypatch, flag, expected):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(sandbox.home / "claude-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(sandbox.home / "xdg"))
    result = cli("skills", "add", "demo", flag, "--global")
    assert result.exit_code == 0, result.output
    assert (sandbox.home / expected / "demo" / "SKILL.md").is_file()
    assert not (sandbox.project / ".agents").exists()


def test_global_claude_defaults_to_home_dot_claude_without_claude_config_dir(sandbox, monkeypatch):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert cli("skills", "add", "demo", "--claude", "-g").exit_code == 0
    assert (sandbox.home / ".claude/skills/demo/SKILL.md").is_file()


def test_global_opencode_defaults_to_dot_config_without_xdg(sandbox, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert cli("skills", "add", "demo", "--opencode", "-g").exit_code == 0
    assert (sandbox.home / ".config/opencode/skills/demo/SKILL.md").is_file()


def test_a_relative_xdg_config_home_is_ignored_as_the_spec_says(sandbox, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative-config")
    assert cli("skills", "add", "demo", "--opencode", "-g").exit_code == 0
    assert (sandbox.home / ".config/opencode/skills/demo/SKILL.md").is_file()
    assert not (sandbox.project / "relative-config/opencode").exists()


def test_agent_option_selects_by_name_and_is_repeatable(sandbox):
    result = cli("skills", "add", "demo", "--agent", "claude", "--agent", "kiro")
    assert result.exit_code == 0, result.output
    assert (sandbox.project / ".claude/skills/demo").is_dir()
    assert (sandbox.project / ".kiro/skills/demo").is_dir()


def test_unknown_agent_is_a_usage_error_listing_the_valid_ones(sandbox):
    result = cli("skills", "add", "demo", "--agent", "vim")
    assert result.exit_code == 2
    assert "unknown agent 'vim'" in result.stderr
    for agent in AGENTS:
        assert agent.name in result.stderr
    assert not (sandbox.project / ".agents").exists()


def test_dest_is_repeatable_and_combines_with_agent_flags(sandbox, tmp_path):
    result = cli("skills", "add", "demo", "--dest", "mine", "--dest", str(tmp_path / "abs"), "--claude")
    assert result.exit_code == 0, result.output
    for dest in (sandbox.project / "mine/demo", tmp_path / "abs/demo", sandbox.project / ".claude/skills/demo"):
        assert skill_files(dest) == bundled_files(sandbox)


def test_a_tilde_in_dest_is_the_home_folder_even_where_the_shell_leaves_it(sandbox):
    # `--dest=~/x` reaches the program unexpanded (the shell expands only a word-initial ~).
    result = cli("skills", "add", "demo", "--dest=~/my-skills", "--json")
    assert result.exit_code == 0, result.output
    assert skill_files(sandbox.home / "my-skills/demo") == bundled_files(sandbox)
    assert not (sandbox.project / "~").exists()
    listed = cli("skills", "list", "--dest=~/my-skills", "--json")
    assert '"demo"' in listed.stdout
    assert cli("skills", "remove", "demo", "--dest=~/my-skills").exit_code == 0
    assert not (sandbox.home / "my-skills/demo").exists()


def test_no_target_installs_into_the_shared_root_and_says_who_does_not_read_it(sandbox):
    result = cli("skills", "add", "demo")
    assert result.exit_code == 0, result.output
    assert (sandbox.project / ".agents/skills/demo/SKILL.md").is_file()
    assert "Claude Code, Kiro and Cline do not" in result.stderr
    assert "--claude --kiro --cline" in result.stderr


def test_seed_example_add_cuda_kernels_global(sandbox):
    result = cli("skills", "add", "cuda-kernels", "--global")
    assert result.exit_code == 0, result.output
    assert skill_files(sandbox.home / ".agents/skills/cuda-kernels") == bundled_files(sandbox, "cuda-kernels")


def test_skill_defaults_to_cuda_kernels(sandbox):
    assert cli("skills", "add", "--claude").exit_code == 0
    assert (sandbox.project / ".claude/skills/cuda-kernels/SKILL.md").is_file()


def test_several_skills_and_the_skill_option(sandbox):
    make_skill(sandbox.bundled, "third")
    result = cli("skills", "add", "demo", "--skill", "third", "--skill", "cuda-kernels", "--claude")
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(sandbox.project / ".claude/skills")) == ["cuda-kernels", "demo", "third"]


def test_configured_default_agents_are_used_when_no_target_is_given(sandbox):
    assert cli("skills", "config", "default_agents", "claude", "kiro").exit_code == 0
    result = cli("skills", "add", "demo")
    assert result.exit_code == 0, result.output
    assert (sandbox.project / ".claude/skills/demo").is_dir()
    assert (sandbox.project / ".kiro/skills/demo").is_dir()
    assert not (sandbox.project / ".agents").exists()
    assert "do not" not in result.stderr


def test_targets_that_resolve_to_one_folder_are_written_once(sandbox):
    # --codex and --agents are the same folder; a symlinked .claude/skills is too.
    (sandbox.project / ".agents/skills").mkdir(parents=True)
    (sandbox.project / ".claude").mkdir()
    (sandbox.project / ".claude/skills").symlink_to("../.agents/skills")
    result = cli("skills", "add", "demo", "--codex", "--agents", "--claude", "--json")
    assert result.exit_code == 0, result.output
    actions = json.loads(result.stdout)["actions"]
    assert len(actions) == 1
    assert set(actions[0]["agents"]) == {"codex", "agents", "claude"}


# ----------------------------------------------------------------------------- content


def test_installed_modes_follow_the_umask_like_cp(sandbox, tmp_path):
    # A skill folder (or a download) with world-writable files must not put world-writable
    # files into the agent's folder; execute bits survive.
    folder = make_skill(tmp_path, "loose")
    os.chmod(folder / "scripts/tool.py", 0o777)
    os.chmod(folder / "SKILL.md", 0o666)
    os.chmod(folder / "references", 0o777)
    old = os.umask(0o022)
    try:
        assert cli("skills", "add", str(folder), "--claude").exit_code == 0
    finally:
        os.umask(old)
    dest = sandbox.project / ".claude/skills/loose"
    assert stat.S_IMODE(os.stat(dest / "scripts/tool.py").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(dest / "SKILL.md").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(dest / "references").st_mode) == 0o755
    (entry,) = json.loads(cli("skills", "list", "--json").stdout)["installed"]
    assert entry["modified"] is False and entry["status"] == "current"  # the modes are not local edits


def test_bytes_modes_and_receipt(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    assert skill_files(dest) == bundled_files(sandbox)
    assert os.stat(dest / "scripts/tool.py").st_mode & stat.S_IXUSR
    assert not os.stat(dest / "SKILL.md").st_mode & stat.S_IXUSR
    receipt = json.loads((dest / ".kernel-skills.json").read_text())
    assert receipt["installer"] == "kernel-skills"
    assert receipt["skill"] == "demo" and receipt["skill_version"] == "1.0.0"
    assert receipt["source"] == {"kind": "bundled", "name": "demo"}
    import hashlib

    from kernel_skills import receipts

    files = receipts.read(dest).files
    assert set(files) == set(bundled_files(sandbox))
    assert files["assets/blob.bin"] == hashlib.sha256((dest / "assets/blob.bin").read_bytes()).hexdigest()


def test_pycache_in_the_source_is_not_copied(sandbox):
    (sandbox.bundled / "demo/scripts/__pycache__").mkdir()
    (sandbox.bundled / "demo/scripts/__pycache__/tool.cpython-311.pyc").write_bytes(b"\0")
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert not (sandbox.project / ".claude/skills/demo/scripts/__pycache__").exists()


def test_symlinks_inside_the_skill_are_kept_as_symlinks(sandbox):
    (sandbox.bundled / "demo/references/alias.md").symlink_to("guide.md")
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert os.readlink(sandbox.project / ".claude/skills/demo/references/alias.md") == "guide.md"


# ---------------------------------------------------------------------- existing installs


def test_an_older_install_without_force_fails_naming_the_path_and_both_ways_out(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    before = snapshot(sandbox.project)
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert str(sandbox.project / ".claude/skills/demo") in result.stderr
    assert "`kernels skills update demo --claude`" in result.stderr and "re-run with --force" in result.stderr.lower()
    assert result.stderr.startswith("Error: ") and len(result.stderr.strip().splitlines()) == 1
    assert snapshot(sandbox.project) == before


def test_an_edited_install_without_force_fails_and_says_force_backs_it_up(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/SKILL.md").write_text("mine")
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert "an install with local edits to SKILL.md)" in result.stderr
    assert "backed up first" in result.stderr and "update" not in result.stderr
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").read_text() == "mine"


def test_adding_what_is_already_installed_is_a_no_op_that_succeeds(sandbox):
    # Provisioning scripts run the same `add` on every start: like `pip install` of an
    # installed package, it succeeds, says so, and writes nothing (the receipt included).
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    before = snapshot(sandbox.project)
    again = cli("skills", "add", "demo", "--claude")
    assert again.exit_code == 0, again.output
    assert "Skipped demo" in again.stdout and "already installed" in again.stdout
    assert snapshot(sandbox.project) == before
    data = json.loads(cli("skills", "add", "demo", "--claude", "--json").stdout)
    assert data["ok"] is True and data["actions"] == []
    assert [(s["skill"], s["failed"]) for s in data["skipped"]] == [("demo", False)]
    assert "already installed" in data["skipped"][0]["reason"]
    assert snapshot(sandbox.project) == before


def test_targets_that_already_hold_the_skill_are_skipped_and_the_others_installed(sandbox):
    assert cli("skills", "add", "demo", "--kiro").exit_code == 0
    before = snapshot(sandbox.project / ".kiro")
    result = cli("skills", "add", "demo", "--claude", "--kiro", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [a["path"] for a in data["actions"]] == [str(sandbox.project / ".claude/skills/demo")]
    assert [s["path"] for s in data["skipped"]] == [str(sandbox.project / ".kiro/skills/demo")]
    assert snapshot(sandbox.project / ".kiro") == before


def test_the_same_bytes_from_another_source_are_not_the_same_install(sandbox, tmp_path):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    copy = tmp_path / "copies" / "demo"
    shutil.copytree(sandbox.bundled / "demo", copy)
    result = cli("skills", "add", str(copy), "--claude")
    assert result.exit_code == 1 and "already exists" in result.stderr


def test_the_update_hint_names_the_same_folders_so_it_works_as_printed(sandbox):
    assert cli("skills", "add", "demo", "--dest", "my skills").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    refused = cli("skills", "add", "demo", "--dest", "my skills")
    assert "`kernels skills update demo --dest '" + str(sandbox.project / "my skills") + "'`" in refused.stderr
    updated = cli("skills", "update", "demo", "--dest", str(sandbox.project / "my skills"))
    assert updated.exit_code == 0 and "Replaced demo" in updated.stdout
    assert cli("skills", "add", "demo", "-g", "--claude").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="3.0.0")
    assert "`kernels skills update demo --claude -g`" in cli("skills", "add", "demo", "-g", "--claude").stderr


def test_link_asked_over_a_copy_is_not_already_installed(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor").exit_code == 0
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--link")
    assert result.exit_code == 1 and str(sandbox.project / ".cursor/skills/demo") in result.stderr
    assert not (sandbox.project / ".cursor/skills/demo").is_symlink()


def test_linked_targets_added_again_are_a_no_op(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor", "--link").exit_code == 0
    before = snapshot(sandbox.project)
    again = cli("skills", "add", "demo", "--claude", "--cursor", "--link")
    assert again.exit_code == 0, again.output
    assert again.stdout.count("already installed") == 2
    assert snapshot(sandbox.project) == before


def test_force_reinstalls_even_an_identical_install(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    receipt = sandbox.project / ".claude/skills/demo/.kernel-skills.json"
    receipt.write_text(receipt.read_text().replace('"installed_at": "', '"installed_at": "x'))
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0 and "Replaced demo" in result.stdout
    assert '"installed_at": "x' not in receipt.read_text()


def test_one_existing_target_means_no_target_is_written(sandbox):
    assert cli("skills", "add", "demo", "--kiro").exit_code == 0
    (sandbox.project / ".kiro/skills/demo/SKILL.md").write_text("mine")
    before = snapshot(sandbox.project)
    result = cli("skills", "add", "demo", "--claude", "--kiro", "--cursor")
    assert result.exit_code == 1
    assert snapshot(sandbox.project) == before


def test_force_replaces_a_clean_install_without_a_backup(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0, result.output
    assert skill_files(sandbox.project / ".claude/skills/demo") == bundled_files(sandbox)
    assert not sandbox.backups.exists() or not os.listdir(sandbox.backups)
    assert leftovers(sandbox.project) == []


def test_force_over_user_edits_backs_them_up_outside_the_skills_folder(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / "references/guide.md").write_text("my notes\n")
    (dest / "mine.md").write_text("added by me\n")
    edited = skill_files(dest)
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0, result.output
    assert skill_files(dest) == bundled_files(sandbox)
    backups = [p for p in sandbox.backups.iterdir() if p.is_dir()]
    assert len(backups) == 1
    assert skill_files(backups[0]) == edited
    assert str(backups[0]) in result.stderr
    assert os.listdir(sandbox.project / ".claude/skills") == ["demo"]


def test_force_over_an_unmanaged_folder_backs_it_up(sandbox):
    mine = sandbox.project / ".claude/skills/demo"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: demo\ndescription: mine\n---\n")
    result = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert result.exit_code == 0, result.output
    action = json.loads(result.stdout)["actions"][0]
    assert action["op"] == "replace" and action["backup"]
    assert (Path(action["backup"]) / "SKILL.md").read_text().endswith("description: mine\n---\n")


def test_existing_symlink_to_the_users_folder_is_replaced_as_a_link_never_followed(sandbox, tmp_path):
    users = tmp_path / "my-own-skill"
    make_skill(tmp_path, "my-own-skill")
    before = snapshot(users)
    skills = sandbox.project / ".claude/skills"
    skills.mkdir(parents=True)
    (skills / "demo").symlink_to(users)

    refused = cli("skills", "add", "demo", "--claude")
    assert refused.exit_code == 1 and "symlink" in refused.stderr

    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0, result.output
    assert not (skills / "demo").is_symlink()
    assert skill_files(skills / "demo") == bundled_files(sandbox)
    assert snapshot(users) == before


def test_broken_symlink_at_the_destination(sandbox):
    skills = sandbox.project / ".claude/skills"
    skills.mkdir(parents=True)
    (skills / "demo").symlink_to(sandbox.root / "gone")
    refused = cli("skills", "add", "demo", "--claude")
    assert refused.exit_code == 1
    assert "already exists" in refused.stderr
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0, result.output
    assert skill_files(skills / "demo") == bundled_files(sandbox)


def test_destination_that_is_a_file_is_refused_even_with_force(sandbox):
    skills = sandbox.project / ".claude/skills"
    skills.mkdir(parents=True)
    (skills / "demo").write_text("not a skill")
    for extra in ([], ["--force"]):
        result = cli("skills", "add", "demo", "--claude", "--cursor", *extra)
        assert result.exit_code == 1
        assert "is a file" in result.stderr
    assert (skills / "demo").read_text() == "not a skill"
    assert not (sandbox.project / ".cursor").exists()


def test_dest_that_is_a_file_or_under_a_file_is_refused_before_any_write(sandbox):
    (sandbox.project / "afile").write_text("x")
    for dest in ("afile", "afile/deeper"):
        result = cli("skills", "add", "demo", "--claude", "--dest", dest)
        assert result.exit_code == 1, result.output
        assert "is a file, not a folder" in result.stderr
        assert not (sandbox.project / ".claude").exists()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_folder_is_refused_before_any_write(sandbox):
    locked = sandbox.project / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = cli("skills", "add", "demo", "--claude", "--dest", "locked/skills")
        assert result.exit_code == 1
        assert "permission denied" in result.stderr
        assert not (sandbox.project / ".claude").exists()
    finally:
        locked.chmod(0o755)


def test_unwritable_folder_check_runs_in_preflight(sandbox, monkeypatch):
    # Runs as root too: os.access is what the preflight asks, so make it say no for one folder.
    locked = sandbox.project / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == locked else real_access(p, mode, **kw))
    result = cli("skills", "add", "demo", "--claude", "--dest", "locked/skills")
    assert result.exit_code == 1
    assert f"cannot write to {locked}" in result.stderr
    assert not (sandbox.project / ".claude").exists()


def test_not_enough_space_is_refused_before_any_write(sandbox, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10, 10, 0))
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert "not enough free space" in result.stderr
    assert not (sandbox.project / ".claude").exists()


# ------------------------------------------------------------------------------ skills


@pytest.mark.parametrize("name", ["a/b", "../demo", "..", "Demo", "CUDA-kernels", "demo--x", "-demo", "x" * 65])
def test_bad_skill_names_are_usage_errors(sandbox, name):
    result = cli("skills", "add", "--claude", f"--skill={name}")
    assert result.exit_code == 2, result.output
    assert "not a valid skill name" in result.stderr
    assert not (sandbox.project / ".claude").exists()
    assert not (sandbox.root / "demo").exists()


def test_unknown_skill_suggests_the_closest_bundled_name(sandbox):
    result = cli("skills", "add", "cuda-kernel", "--claude")
    assert result.exit_code == 1
    assert "Did you mean 'cuda-kernels'?" in result.stderr


def test_a_skill_that_fails_validation_is_refused(sandbox):
    make_skill(sandbox.bundled, "broken", skill_md="---\nname: broken\n---\nno description\n")
    result = cli("skills", "add", "broken", "--claude")
    assert result.exit_code == 1
    assert "is not valid" in result.stderr and "description" in result.stderr
    assert not (sandbox.project / ".claude").exists()


def test_a_skill_folder_without_skill_md_is_refused(sandbox):
    (sandbox.bundled / "half").mkdir()
    result = cli("skills", "add", "half", "--claude")
    assert result.exit_code == 1
    assert "SKILL.md" in result.stderr


# -------------------------------------------------------------------------------- link


def test_link_copies_once_and_links_the_rest_relatively(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--kiro", "--link")
    assert result.exit_code == 0, result.output
    first = sandbox.project / ".claude/skills/demo"
    assert first.is_dir() and not first.is_symlink()
    for other in (".cursor/skills/demo", ".kiro/skills/demo"):
        link = sandbox.project / other
        assert link.is_symlink()
        assert os.readlink(link) == "../../.claude/skills/demo"
        assert skill_files(link) == bundled_files(sandbox)


def test_link_dry_run_json_says_which_installs_would_be_links(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--link", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    first, second = json.loads(result.stdout)["actions"]
    assert first["link_to"] is None
    assert second["link_to"] == str(sandbox.project / ".claude/skills/demo")
    assert not (sandbox.project / ".cursor").exists()


def test_link_falls_back_to_a_copy_where_symlinks_fail(sandbox, monkeypatch):
    def no_symlinks(target, path, is_dir=True):
        raise OSError(1, "symlinks not permitted")

    monkeypatch.setattr(fsops, "symlink", no_symlinks)
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--link", "--json")
    assert result.exit_code == 0, result.output
    assert not (sandbox.project / ".cursor/skills/demo").is_symlink()
    assert skill_files(sandbox.project / ".cursor/skills/demo") == bundled_files(sandbox)
    assert "copy" in json.loads(result.stdout)["actions"][1]["note"]


# ------------------------------------------------------------------------ output modes


def test_dry_run_prints_the_plan_and_writes_nothing(sandbox):
    assert cli("skills", "add", "demo", "--kiro").exit_code == 0
    (sandbox.project / ".kiro/skills/demo/mine.md").write_text("edit")
    before = snapshot(sandbox.root)
    result = cli("skills", "add", "demo", "--claude", "--kiro", "--force", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Would install demo" in result.stdout
    assert "Would replace demo" in result.stdout
    assert "backed up first" in result.stderr
    assert "nothing was written" in result.stdout
    assert snapshot(sandbox.root) == before


def test_json_result(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--dest", "d", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["command"] == "add" and data["dry_run"] is False
    assert [a["path"] for a in data["actions"]] == [
        str(sandbox.project / ".claude/skills/demo"),
        str(sandbox.project / "d/demo"),
    ]
    assert data["actions"][0]["agents"] == ["claude"] and data["actions"][1]["scope"] == "dest"


def test_json_error_goes_to_stdout_as_json_and_stderr_as_text(sandbox):
    cli("skills", "add", "demo", "--claude")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "add", "demo", "--claude", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["ok"] is False and "already exists" in error["error"]["what"]
    assert result.stderr.startswith("Error: ")


def test_quiet_prints_nothing_on_success_and_the_error_on_failure(sandbox):
    ok = cli("skills", "add", "demo", "-q")
    assert ok.exit_code == 0 and ok.stdout == "" and ok.stderr == ""
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    failed = cli("skills", "add", "demo", "-q")
    assert failed.exit_code == 1 and failed.stdout == "" and failed.stderr.startswith("Error: ")


def test_terminal_output_is_styled_by_rich(sandbox, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 0
    assert "\x1b[" in result.stdout  # rich's styling
    assert "demo" in result.stdout and ".claude/skills/demo" in result.stdout


def test_one_line_per_target_with_the_path(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--kiro")
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2
    assert ".claude/skills/demo" in lines[0] and ".kiro/skills/demo" in lines[1]


def test_nothing_left_behind_after_a_run(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--force").exit_code == 0
    assert cli("skills", "add", "demo", "--claude", "--force").exit_code == 0
    assert leftovers(sandbox.root) == []
    assert os.listdir(sandbox.project / ".claude/skills") == ["demo"]


# ------------------------------------------------------------ one skill, seen twice by one agent


def test_adding_for_claude_and_codex_warns_once_that_other_agents_see_the_skill_twice(sandbox):
    result = cli("skills", "add", "demo", "cuda-kernels", "--claude", "--codex")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1
    assert "OpenCode, Cursor, GitHub Copilot, Amp and Goose load both .claude/skills and .agents/skills" in warnings[0]
    assert "demo and cuda-kernels twice" in warnings[0]


def test_the_warning_is_a_list_in_json_and_empty_when_nobody_sees_a_skill_twice(sandbox):
    doubled = json.loads(cli("skills", "add", "demo", "--claude", "--cline", "--json").stdout)
    assert doubled["ok"] and len(doubled["warnings"]) == 1 and doubled["warnings"][0].startswith("Cline loads both")
    single = json.loads(cli("skills", "add", "demo", "--kiro", "--gemini", "--json").stdout)
    assert single["ok"] and single["warnings"] == []


def test_a_copy_installed_earlier_counts_and_a_dry_run_warns_too(sandbox):
    assert cli("skills", "add", "demo", "-q").exit_code == 0  # the shared .agents/skills root
    dry = cli("skills", "add", "demo", "--claude", "--dry-run")
    assert "Warning: " in dry.stderr and "OpenCode" in dry.stderr and not (sandbox.project / ".claude/skills/demo").exists()
    assert "OpenCode" in cli("skills", "add", "demo", "--claude").stderr
    # Already doubled, and this command adds a folder nobody else loads: nothing to say.
    assert "Warning" not in cli("skills", "add", "demo", "--kiro").stderr
    # Re-adding what is there (identical, skipped) still says so.
    assert "OpenCode" in cli("skills", "add", "demo", "--claude").stderr


def test_user_wide_folders_are_checked_against_what_agents_load_there(sandbox):
    result = cli("skills", "add", "demo", "--claude", "--codex", "--global", "--json")
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith("OpenCode, Cursor and Goose load both ~/.claude/skills and ~/.agents/skills")
