"""list, update, remove, show, agents and config."""

from __future__ import annotations

import json
import re
import os
from pathlib import Path

import pytest
import yaml

from .conftest import cli, leftovers, make_skill, skill_files, snapshot


def installed(result) -> dict[str, dict]:
    return {item["path"]: item for item in json.loads(result.stdout)["installed"]}


# -------------------------------------------------------------------------------- list


def test_list_reports_version_management_edits_and_freshness(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--kiro").exit_code == 0
    assert cli("skills", "add", "cuda-kernels", "-g").exit_code == 0
    (sandbox.project / ".kiro/skills/demo/SKILL.md").write_text((sandbox.project / ".kiro/skills/demo/SKILL.md").read_text() + "\nmine\n")
    make_skill(sandbox.bundled, "cuda-kernels", version="9.9.9")
    make_skill(sandbox.project / ".cursor/skills", "handmade")

    result = cli("skills", "list", "--json")
    assert result.exit_code == 0, result.output
    items = installed(result)
    claude = items[str(sandbox.project / ".claude/skills/demo")]
    assert (claude["managed"], claude["modified"], claude["status"], claude["version"]) == (True, False, "current", "1.0.0")
    kiro = items[str(sandbox.project / ".kiro/skills/demo")]
    assert kiro["modified"] is True and kiro["edited_files"] == ["SKILL.md"]
    cuda = items[str(sandbox.home / ".agents/skills/cuda-kernels")]
    assert cuda["scope"] == "global" and cuda["status"] == "outdated"
    hand = items[str(sandbox.project / ".cursor/skills/handmade")]
    assert hand["managed"] is False and hand["status"] is None and hand["version"] == "1.0.0"

    table = cli("skills", "list")
    assert table.exit_code == 0
    for text in ("clean, current", "edited, current", "clean, outdated", "unmanaged", ".kiro/skills/demo", "~/.agents/skills/cuda-kernels"):
        assert text in table.stdout, text


def test_list_shows_links_and_broken_links(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor", "--link").exit_code == 0
    (sandbox.project / ".kiro/skills").mkdir(parents=True)
    (sandbox.project / ".kiro/skills/gone").symlink_to("../../nowhere")
    items = installed(cli("skills", "list", "--json"))
    assert items[str(sandbox.project / ".cursor/skills/demo")]["kind"] == "link"
    assert items[str(sandbox.project / ".kiro/skills/gone")]["kind"] == "broken-link"
    assert "broken link" in cli("skills", "list").stdout


def test_list_narrowed_by_agent_global_and_dest(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--kiro").exit_code == 0
    assert cli("skills", "add", "demo", "--claude", "-g").exit_code == 0
    assert cli("skills", "add", "demo", "--dest", "custom").exit_code == 0
    only_claude = installed(cli("skills", "list", "--claude", "--json"))
    assert set(only_claude) == {str(sandbox.project / ".claude/skills/demo"), str(sandbox.home / ".claude/skills/demo")}
    only_global = installed(cli("skills", "list", "-g", "--json"))
    assert set(only_global) == {str(sandbox.home / ".claude/skills/demo")}
    with_dest = installed(cli("skills", "list", "--dest", "custom", "--json"))
    assert str(sandbox.project / "custom/demo") in with_dest


def test_list_with_nothing_installed(sandbox):
    result = cli("skills", "list")
    assert result.exit_code == 0 and "No skills installed" in result.stdout
    assert json.loads(cli("skills", "list", "--json").stdout) == {"ok": True, "installed": []}


def test_list_available_shows_bundled_skills_with_descriptions(sandbox):
    (sandbox.bundled / "not-a-skill").mkdir()
    result = cli("skills", "list", "--available", "--json")
    names = [s["name"] for s in json.loads(result.stdout)["available"]]
    assert names == ["cuda-kernels", "demo"]
    table = cli("skills", "list", "--available")
    assert "Stand-in for the real skill" in table.stdout and "1.0.0" in table.stdout


# ------------------------------------------------------------------------------ update


def test_update_reinstalls_outdated_managed_skills_everywhere(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert cli("skills", "add", "demo", "--codex", "-g").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "update", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert sorted(a["path"] for a in data["actions"]) == sorted(
        [str(sandbox.project / ".claude/skills/demo"), str(sandbox.home / ".agents/skills/demo")]
    )
    for dest in (sandbox.project / ".claude/skills/demo", sandbox.home / ".agents/skills/demo"):
        assert skill_files(dest) == skill_files(sandbox.bundled / "demo")
        assert json.loads((dest / ".kernel-skills.json").read_text())["skill_version"] == "2.0.0"
    again = cli("skills", "update")
    assert again.exit_code == 0 and "up to date (2.0.0)" in again.stdout


def test_update_skips_edited_installs_unless_forced_and_then_backs_them_up(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / "notes.md").write_text("mine")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    before = snapshot(dest)

    skipped = cli("skills", "update", "demo")
    assert skipped.exit_code == 0
    assert "has local edits to notes.md" in skipped.stdout and "--force" in skipped.stdout
    assert snapshot(dest) == before

    forced = cli("skills", "update", "demo", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    action = json.loads(forced.stdout)["actions"][0]
    assert (Path(action["backup"]) / "notes.md").read_text() == "mine"
    assert skill_files(dest) == skill_files(sandbox.bundled / "demo")


def test_update_leaves_unmanaged_and_linked_installs_alone(sandbox):
    make_skill(sandbox.project / ".claude/skills", "demo")
    # Agent flags are taken in table order: the copy goes to .cursor, .kiro gets the link.
    assert cli("skills", "add", "cuda-kernels", "--kiro", "--cursor", "--link").exit_code == 0
    make_skill(sandbox.bundled, "cuda-kernels", version="3.0.0")
    before = snapshot(sandbox.project / ".claude")
    result = cli("skills", "update", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [a["path"] for a in data["actions"]] == [str(sandbox.project / ".cursor/skills/cuda-kernels")]
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert "not installed by kernels" in reasons[str(sandbox.project / ".claude/skills/demo")]
    assert "a link to" in reasons[str(sandbox.project / ".kiro/skills/cuda-kernels")]
    assert snapshot(sandbox.project / ".claude") == before
    # The link follows its updated target.
    assert "3.0.0" in (sandbox.project / ".kiro/skills/cuda-kernels/scripts/tool.py").read_text()


def test_a_damaged_receipt_is_named_as_such_everywhere_and_force_repairs_it(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    folder = sandbox.project / ".claude/skills/demo"
    (folder / ".kernel-skills.json").write_text('{"installer": "kernel-skills", "files": ')  # truncated
    listed = json.loads(cli("skills", "list", "--json").stdout)["installed"][0]
    assert listed["managed"] is False and listed["receipt_damaged"] is True
    assert "unmanaged (damaged receipt)" in cli("skills", "list").stdout
    updated = cli("skills", "update", "--json")
    assert updated.exit_code == 1  # stuck at its old version: a provisioning script must notice
    update = json.loads(updated.stdout)
    assert update["skipped"][0]["failed"] is True
    assert "receipt (.kernel-skills.json) is damaged" in update["skipped"][0]["reason"]
    assert "kernels skills add demo --claude --force" in update["skipped"][0]["reason"]
    again = cli("skills", "add", "demo", "--claude")
    assert again.exit_code == 1 and "receipt (.kernel-skills.json) is damaged" in again.stderr
    assert cli("skills", "add", "demo", "--claude", "--force").exit_code == 0
    repaired = json.loads(cli("skills", "list", "--json").stdout)["installed"][0]
    assert repaired["managed"] is True and repaired["receipt_damaged"] is False
    # A folder with no receipt at all is plainly unmanaged, not damaged.
    (sandbox.project / ".claude/skills/mine").mkdir()
    (sandbox.project / ".claude/skills/mine/SKILL.md").write_text("---\nname: mine\ndescription: d\n---\n")
    mine = [i for i in json.loads(cli("skills", "list", "--json").stdout)["installed"] if i["skill"] == "mine"][0]
    assert mine["managed"] is False and mine["receipt_damaged"] is False


def test_update_dry_run_writes_nothing(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    before = snapshot(sandbox.root)
    result = cli("skills", "update", "--dry-run")
    assert result.exit_code == 0 and "Would replace demo" in result.stdout
    assert snapshot(sandbox.root) == before


def test_update_of_a_skill_that_is_not_installed_fails(sandbox):
    result = cli("skills", "update", "demo")
    assert result.exit_code == 1 and "is not installed" in result.stderr
    assert cli("skills", "update").stdout.startswith("No managed skills")


def test_update_when_the_source_disappeared_updates_the_rest_and_exits_1(sandbox):
    # CI runs `update` to provision agents: a skill that could not even be checked must
    # fail the command, after every other skill was updated.
    make_skill(sandbox.bundled, "temporary")
    assert cli("skills", "add", "temporary", "demo", "--claude").exit_code == 0
    import shutil

    shutil.rmtree(sandbox.bundled / "temporary")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "update", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    (skipped,) = data["skipped"]
    assert skipped["failed"] is True and "no bundled skill named 'temporary'" in skipped["reason"]
    assert [a["skill"] for a in data["actions"]] == ["demo"]
    assert 'version: "2.0.0"' in (sandbox.project / ".claude/skills/demo/SKILL.md").read_text()
    assert (sandbox.project / ".claude/skills/temporary").is_dir()

    human = cli("skills", "update")
    assert human.exit_code == 1
    assert human.stderr.strip().splitlines()[-1].startswith("Error: could not update temporary.")


def test_update_with_one_invalid_source_still_updates_the_others_and_exits_1(sandbox, tmp_path):
    team = tmp_path / "team"
    make_skill(team, "aaa")
    make_skill(team, "bbb")
    assert cli("skills", "add", str(team), "--skill", "*", "--claude").exit_code == 0
    (team / "aaa/SKILL.md").write_text("---\nname: aaa\n---\nno description\n")
    make_skill(team, "bbb", version="2.0.0")
    result = cli("skills", "update", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and [a["skill"] for a in data["actions"]] == ["bbb"]
    (skipped,) = data["skipped"]
    assert skipped["skill"] == "aaa" and skipped["failed"] is True and "is not valid" in skipped["reason"]
    assert result.stderr.startswith("Error: could not update aaa.")
    assert 'version: "2.0.0"' in (sandbox.project / ".claude/skills/bbb/SKILL.md").read_text()
    assert "description" in (sandbox.project / ".claude/skills/aaa/SKILL.md").read_text()


def test_update_skips_without_failing_what_it_chose_to_leave(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/SKILL.md").write_text("---\nname: demo\ndescription: edited\n---\n")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "update", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True and [s["failed"] for s in data["skipped"]] == [False]


# ------------------------------------------------------------------------------ remove


def test_remove_deletes_managed_installs_from_every_project_folder(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--kiro").exit_code == 0
    assert cli("skills", "add", "demo", "-g", "--claude").exit_code == 0
    result = cli("skills", "remove", "demo")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Removed demo") == 2
    assert not (sandbox.project / ".claude/skills/demo").exists()
    assert not (sandbox.project / ".kiro/skills/demo").exists()
    assert (sandbox.home / ".claude/skills/demo").is_dir()  # global needs -g
    assert cli("skills", "remove", "demo", "-g").exit_code == 0
    assert not (sandbox.home / ".claude/skills/demo").exists()
    assert leftovers(sandbox.root) == []


def test_remove_refuses_unmanaged_and_edited_installs_without_force(sandbox):
    make_skill(sandbox.project / ".claude/skills", "demo")
    assert cli("skills", "add", "demo", "--kiro").exit_code == 0
    (sandbox.project / ".kiro/skills/demo/SKILL.md").write_text("---\nname: demo\ndescription: edited\n---\n")
    before = snapshot(sandbox.project)
    result = cli("skills", "remove", "demo")
    assert result.exit_code == 1
    assert "kernels did not install" in result.stderr and "local edits" in result.stderr
    assert snapshot(sandbox.project) == before

    forced = cli("skills", "remove", "demo", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    backups = [a["backup"] for a in json.loads(forced.stdout)["actions"]]
    assert all(backups) and len(backups) == 2
    assert "edited" in (Path(backups[1]) / "SKILL.md").read_text()
    assert not (sandbox.project / ".claude/skills/demo").exists()


def test_remove_never_follows_a_symlink(sandbox, tmp_path):
    make_skill(tmp_path, "mine")
    before = snapshot(tmp_path / "mine")
    skills = sandbox.project / ".claude/skills"
    skills.mkdir(parents=True)
    (skills / "demo").symlink_to(tmp_path / "mine")
    refused = cli("skills", "remove", "demo", "--claude")
    assert refused.exit_code == 1 and "symlink" in refused.stderr
    assert cli("skills", "remove", "demo", "--claude", "--force").exit_code == 0
    assert not os.path.lexists(skills / "demo")
    assert snapshot(tmp_path / "mine") == before


def test_remove_a_link_install_removes_only_the_link(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor", "--link").exit_code == 0
    assert cli("skills", "remove", "demo", "--cursor").exit_code == 0
    assert not os.path.lexists(sandbox.project / ".cursor/skills/demo")
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")


def test_remove_the_copy_others_link_to_says_which_links_broke(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor", "--link").exit_code == 0
    result = cli("skills", "remove", "demo", "--claude")
    assert result.exit_code == 0, result.output
    assert f"{sandbox.project / '.cursor/skills/demo'} linked to a removed copy" in result.stderr


def test_remove_from_a_folder_it_cannot_write_is_refused_before_anything_moves(sandbox, monkeypatch):
    assert cli("skills", "add", "demo", "--claude", "--kiro").exit_code == 0
    locked = sandbox.project / ".kiro/skills"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == locked else real_access(p, mode, **kw))
    before = snapshot(sandbox.project)
    result = cli("skills", "remove", "demo")
    assert result.exit_code == 1
    assert f"cannot write to {locked} (permission denied)" in result.stderr and ".kernel-skills-tmp" not in result.stderr
    assert snapshot(sandbox.project) == before


def test_a_file_where_the_staging_folder_goes_is_named_before_anything_is_written(sandbox):
    skills = sandbox.project / ".claude/skills"
    skills.mkdir(parents=True)
    (skills / ".kernel-skills-tmp").write_text("not ours")
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {skills / '.kernel-skills-tmp'} is in the way")
    assert not (skills / "demo").exists()


def test_update_names_a_file_in_the_staging_folders_place_before_changing_anything(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    skills = sandbox.project / ".claude/skills"
    (skills / ".kernel-skills-tmp").write_text("not ours")
    result = cli("skills", "update")
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: {skills / '.kernel-skills-tmp'} is in the way")
    assert 'version: "1.0.0"' in (skills / "demo/SKILL.md").read_text()


def test_remove_something_not_installed_fails(sandbox):
    result = cli("skills", "remove", "demo")
    assert result.exit_code == 1 and "'demo' is not installed" in result.stderr
    assert cli("skills", "remove", "Bad/Name").exit_code == 2


def test_remove_says_where_a_skill_is_when_it_is_only_in_the_other_scope(sandbox):
    assert cli("skills", "add", "demo", "--claude", "-g").exit_code == 0
    project = cli("skills", "remove", "demo", "--claude")
    assert project.exit_code == 1
    assert f"it is installed in {sandbox.home / '.claude/skills/demo'}" in project.stderr
    assert "add -g / --global" in project.stderr
    assert cli("skills", "add", "demo", "--kiro").exit_code == 0
    user = cli("skills", "remove", "demo", "--kiro", "-g")
    assert user.exit_code == 1 and "drop -g / --global" in user.stderr


def test_remove_of_a_misspelt_skill_suggests_the_installed_name(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    result = cli("skills", "remove", "dmeo")
    assert result.exit_code == 1 and "Did you mean 'demo'?" in result.stderr
    assert (sandbox.project / ".claude/skills/demo").is_dir()


def test_remove_dry_run(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    before = snapshot(sandbox.root)
    result = cli("skills", "remove", "demo", "--dry-run")
    assert result.exit_code == 0 and "Would remove demo" in result.stdout
    assert snapshot(sandbox.root) == before


# ------------------------------------------------------------------- show, agents, config


def test_show_describes_a_skill_and_its_files(sandbox):
    result = cli("skills", "show", "demo")
    assert result.exit_code == 0, result.output
    assert "demo  1.0.0" in result.stdout and "A test skill" in result.stdout and "Apache-2.0" in result.stdout
    assert "blob.bin  773 B" in result.stdout and "scripts/" in result.stdout
    data = json.loads(cli("skills", "show", "demo", "--json").stdout)
    assert data["version"] == "1.0.0"
    sizes = {f["path"]: f["size"] for f in data["files"]}
    assert sizes["assets/blob.bin"] == 773 and sizes["scripts"] is None
    assert data["total_bytes"] == sum(s for s in sizes.values() if s)


def test_show_of_an_install_lists_the_skill_not_the_receipt(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    installed = json.loads(cli("skills", "show", "./.claude/skills/demo", "--json").stdout)
    bundled = json.loads(cli("skills", "show", "demo", "--json").stdout)
    assert [f["path"] for f in installed["files"]] == [f["path"] for f in bundled["files"]]
    assert installed["total_bytes"] == bundled["total_bytes"]


def test_show_unknown_skill(sandbox):
    result = cli("skills", "show", "dem")
    assert result.exit_code == 1 and "Did you mean 'demo'?" in result.stderr


def test_agents_prints_every_agent_with_resolved_paths(sandbox, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(sandbox.root / "cc"))
    data = json.loads(cli("skills", "agents", "--json").stdout)["agents"]
    by_name = {row["name"]: row for row in data}
    assert by_name["claude"]["global"] == str(sandbox.root / "cc/skills")
    assert by_name["claude"]["project"] == str(sandbox.project / ".claude/skills")
    assert by_name["claude"]["reads_agents_root"] is False and by_name["kiro"]["reads_agents_root"] is False
    assert by_name["agents"]["default"] is True
    table = cli("skills", "agents").stdout
    assert "--windsurf" in table and "~/.codeium/windsurf/skills" in table


def test_config_show_set_and_unset(sandbox):
    shown = cli("skills", "config")
    assert shown.exit_code == 0 and "not set" in shown.stdout
    set_ = cli("skills", "config", "default_agents", "claude,kiro", "claude", "--json")
    assert set_.exit_code == 0, set_.output
    assert json.loads(set_.stdout)["default_agents"] == ["claude", "kiro"]
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    assert yaml.safe_load(config_file.read_text()) == {"default_agents": ["claude", "kiro"]}
    assert "default_agents: claude kiro" in cli("skills", "config", "default_agents").stdout
    assert cli("skills", "config", "default_agents", "--unset").exit_code == 0
    assert yaml.safe_load(config_file.read_text() or "{}") == {}
    assert json.loads(cli("skills", "agents", "--json").stdout)["agents"][-1]["default"] is True


def test_config_rejects_bad_keys_agents_and_files(sandbox):
    assert cli("skills", "config", "colour", "red").exit_code == 2
    bad_agent = cli("skills", "config", "default_agents", "emacs")
    assert bad_agent.exit_code == 2 and "unknown agent 'emacs'" in bad_agent.stderr
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("default_agents: [claude\n")
    broken = cli("skills", "add", "demo")
    assert broken.exit_code == 1
    assert f"{config_file} is not a valid config file" in broken.stderr and "delete it" in broken.stderr
    config_file.write_text("default_agents: [nano]\n")
    assert "unknown agent 'nano'" in cli("skills", "add", "demo").stderr


def test_config_keeps_unknown_keys(sandbox):
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("future_setting: 3\n")
    assert cli("skills", "config", "default_agents", "claude").exit_code == 0
    assert yaml.safe_load(config_file.read_text()) == {"future_setting": 3, "default_agents": ["claude"]}


def test_config_changes_only_its_own_lines_and_keeps_the_users_comments(sandbox):
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("# team defaults, see the wiki\ndefault_agents:\n- claude\n- kiro\n\n# later\nfuture_setting: 3\n")
    assert cli("skills", "config", "default_agents", "codex").exit_code == 0
    assert config_file.read_text() == "# team defaults, see the wiki\ndefault_agents: [codex]\n\n# later\nfuture_setting: 3\n"
    assert cli("skills", "config", "default_agents", "--unset").exit_code == 0
    assert config_file.read_text() == "# team defaults, see the wiki\n\n# later\nfuture_setting: 3\n"
    assert cli("skills", "config", "default_agents", "claude", "agents").exit_code == 0
    assert config_file.read_text().endswith("future_setting: 3\ndefault_agents: [claude, agents]\n")


@pytest.mark.parametrize("text", ['"default_agents": [claude]\n', "default_agents : [claude]\n", "{default_agents: [claude], x: 1}\n"])
def test_config_rewrites_a_layout_it_cannot_edit_line_by_line(sandbox, text):
    # A key spelled another way must not end up twice in the file: the whole file is rewritten.
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text(text)
    assert cli("skills", "config", "default_agents", "codex").exit_code == 0
    written = config_file.read_text()
    assert written.count("default_agents") == 1
    assert yaml.safe_load(written)["default_agents"] == ["codex"]


def test_config_writes_through_a_linked_config_file(sandbox):
    # Dotfiles managers link config.yaml from a repository: the link must survive a `config`.
    kept = sandbox.root / "dotfiles" / "kernel-skills.yaml"
    kept.parent.mkdir()
    kept.write_text("future_setting: 3\n")
    config_file = sandbox.config_dir / "kernel-skills" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.symlink_to(kept)
    assert cli("skills", "config", "default_agents", "claude").exit_code == 0
    assert config_file.is_symlink()
    assert yaml.safe_load(kept.read_text()) == {"future_setting": 3, "default_agents": ["claude"]}
    assert [p.name for p in kept.parent.iterdir()] == ["kernel-skills.yaml"]  # no temp file left


LONG = "/".join(f"folder-number-{i:02d}" for i in range(12))  # 203 characters


def test_list_piped_keeps_each_row_on_one_line_with_the_whole_path(sandbox):
    assert cli("skills", "add", "demo", "--dest", LONG).exit_code == 0
    result = cli("skills", "list", "--dest", LONG)
    assert result.exit_code == 0
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("demo")]
    assert f"{LONG}/demo" in row


def test_list_on_a_narrow_terminal_wraps_the_path_and_keeps_every_column(sandbox, monkeypatch):
    # A terminal of 60 columns: rich must fold the path, not drop columns or cut it off.
    assert cli("skills", "add", "demo", "--dest", LONG).exit_code == 0
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("NO_COLOR", "1")
    result = cli("skills", "list", "--dest", LONG)
    assert result.exit_code == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= 60 for line in lines), lines
    for header in ("Skill", "Version", "State", "Agents", "Path"):
        assert header in lines[0]
    path_start = lines[0].index("Path")
    folded = "".join(line[path_start:].strip() for line in lines[1:])
    assert f"{LONG}/demo" in folded


# ------------------------------------------------------------------ state and config dirs


def test_state_and_config_dirs_follow_the_kernel_skills_variables_on_every_os(sandbox, monkeypatch):
    """KERNEL_SKILLS_STATE_DIR / _CONFIG_DIR win over platformdirs, whose per-OS rules
    (XDG_* on Linux only) would put a test's backups in the real %LOCALAPPDATA%."""
    import platformdirs

    from kernel_skills.roots import Roots

    monkeypatch.setattr(platformdirs, "user_state_dir", lambda *a, **k: pytest.fail("platformdirs asked for the state dir"))
    monkeypatch.setattr(platformdirs, "user_config_dir", lambda *a, **k: pytest.fail("platformdirs asked for the config dir"))
    monkeypatch.setenv("KERNEL_SKILLS_STATE_DIR", "relative/state")
    monkeypatch.setenv("KERNEL_SKILLS_CONFIG_DIR", str(sandbox.root / "cfg"))
    roots = Roots.from_environment()
    assert roots.state_dir == sandbox.project / "relative/state"
    assert roots.config_file == sandbox.root / "cfg" / "config.yaml"


def test_backups_land_in_the_state_dir_override(sandbox, monkeypatch):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    elsewhere = sandbox.root / "elsewhere"
    monkeypatch.setenv("KERNEL_SKILLS_STATE_DIR", str(elsewhere))
    result = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert result.exit_code == 0, result.stderr
    (backup,) = [a["backup"] for a in json.loads(result.stdout)["actions"] if a["backup"]]
    assert Path(backup).parent == elsewhere / "backups"
    assert (Path(backup) / "mine.txt").read_text() == "mine\n"
