"""Skills from Hugging Face Hub repos (`hf://`), through the real huggingface_hub client.

Every test talks to tests/cli/hubfake.py's FakeHub on 127.0.0.1 (the `hub` fixture),
with huggingface_hub's cache inside the sandbox.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli, leftovers, run_module, skill_files as installed_files, snapshot
from .hubfake import set_offline, skill_files, skill_md, wait_for

REPO = "my-org/skills"


def as_bytes(files: dict[str, bytes | str], prefix: str) -> dict[str, bytes]:
    """The files of one skill in a repo, relative to its folder, as bytes."""
    start = f"{prefix}/" if prefix else ""
    return {p[len(start) :]: (c.encode() if isinstance(c, str) else c) for p, c in files.items() if p.startswith(start)}


def receipt(folder: Path) -> dict:
    return json.loads((folder / ".kernel-skills.json").read_text())


def test_install_from_the_default_branch(sandbox, hub):
    files = skill_files("house-style")
    sha = hub.commit(REPO, files)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert installed_files(dest) == as_bytes(files, "house-style")
    # The Hub keeps no modes: a file starting with #! is made executable again.
    assert os.stat(dest / "scripts/tool.py").st_mode & stat.S_IXUSR
    assert not os.stat(dest / "references/notes.md").st_mode & stat.S_IXUSR
    source = receipt(dest)["source"]
    assert source == {
        "kind": "hf",
        "uri": f"hf://{REPO}/house-style",
        "repo_type": "model",
        "repo_id": REPO,
        "revision": None,
        "path": "house-style",
        "sha": sha,
    }
    assert f"commit {sha[:7]}" in result.stderr
    # Only the skill's folder was downloaded, into huggingface_hub's cache.
    assert hub.hits("/resolve/") == 2 * 4  # HEAD + GET per file
    assert (sandbox.root / "hf/hub/models--my-org--skills/refs/main").read_text() == sha
    assert leftovers(sandbox.project, sandbox.home) == []


def test_a_second_install_comes_from_the_cache(sandbox, hub):
    hub.commit(REPO, skill_files("house-style"))
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    before = len(hub.requests)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--cursor")
    assert result.exit_code == 0, result.output
    # One request: is main still at the same commit? Files and listing come from the cache.
    assert hub.requests[before:] == [("GET", f"/api/models/{REPO}")]
    assert installed_files(sandbox.project / ".cursor/skills/house-style") == installed_files(sandbox.project / ".claude/skills/house-style")


def test_install_at_a_branch_and_at_a_tag(sandbox, hub):
    hub.commit(REPO, skill_files("house-style", version="1.0.0"))
    dev = hub.commit(REPO, skill_files("house-style", version="2.0.0-dev"), branch="dev")
    hub.tag(REPO, "v1", hub.repo(REPO).refs["main"])
    assert cli("skills", "add", f"hf://{REPO}@dev/house-style", "--claude").exit_code == 0
    assert cli("skills", "add", f"hf://{REPO}@v1/house-style", "--kiro").exit_code == 0
    claude, kiro = sandbox.project / ".claude/skills/house-style", sandbox.project / ".kiro/skills/house-style"
    assert b"2.0.0-dev" in (claude / "SKILL.md").read_bytes()
    assert receipt(claude)["source"]["revision"] == "dev" and receipt(claude)["source"]["sha"] == dev
    assert receipt(claude)["source"]["uri"] == f"hf://{REPO}@dev/house-style"
    assert b"1.0.0" in (kiro / "SKILL.md").read_bytes()


def test_install_at_a_commit_sha_is_pinned(sandbox, hub):
    first = hub.commit(REPO, skill_files("house-style", version="1.0.0"))
    hub.commit(REPO, skill_files("house-style", version="2.0.0"))
    result = cli("skills", "add", f"hf://{REPO}@{first}/house-style", "--claude")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert b'version: "1.0.0"' in (dest / "SKILL.md").read_bytes()
    assert receipt(dest)["source"]["sha"] == first
    # A sha needs no resolving: no repo-info request at all.
    assert hub.hits(f"/api/models/{REPO}/revision") == 0 and hub.hits(f"/api/models/{REPO}", "GET") == hub.hits("/tree/")

    before = len(hub.requests)
    update = cli("skills", "update", "--json")
    assert update.exit_code == 0, update.output
    skipped = json.loads(update.stdout)["skipped"]
    assert [s["reason"] for s in skipped] == [f"up to date (1.0.0; pinned to {first[:7]})"]
    assert len(hub.requests) == before  # pinned installs never even ask
    assert b'version: "1.0.0"' in (dest / "SKILL.md").read_bytes()


def test_update_follows_the_branch_when_it_moves(sandbox, hub):
    hub.commit(REPO, skill_files("house-style", version="1.0.0"))
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/house-style"

    same = cli("skills", "update", "--json")
    assert same.exit_code == 0
    assert "main is still at" in json.loads(same.stdout)["skipped"][0]["reason"]

    files = skill_files("house-style", version="2.0.0", extra={"references/new.md": "# new\n"})
    new = hub.commit(REPO, files)
    dry = cli("skills", "update", "--dry-run")
    assert dry.exit_code == 0 and "Would replace house-style" in dry.stdout
    assert b"1.0.0" in (dest / "SKILL.md").read_bytes()

    result = cli("skills", "update")
    assert result.exit_code == 0, result.output
    assert "Replaced house-style" in result.stdout
    assert installed_files(dest) == as_bytes(files, "house-style")
    assert receipt(dest)["source"]["sha"] == new and receipt(dest)["skill_version"] == "2.0.0"
    assert leftovers(sandbox.project) == []


def test_a_commit_that_leaves_the_skill_alone_only_moves_the_receipt(sandbox, hub):
    hub.commit(REPO, skill_files("house-style"))
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/house-style"
    before = installed_files(dest)
    new = hub.commit(REPO, {"README.md": "# other things\n"})
    assert cli("skills", "update").exit_code == 0
    assert installed_files(dest) == before
    assert receipt(dest)["source"]["sha"] == new


def test_update_skips_edited_hub_installs_unless_forced(sandbox, hub):
    hub.commit(REPO, skill_files("house-style", version="1.0.0"))
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/house-style"
    (dest / "SKILL.md").write_text((dest / "SKILL.md").read_text() + "\nmine\n")
    hub.commit(REPO, skill_files("house-style", version="2.0.0"))
    skipped = cli("skills", "update")
    assert skipped.exit_code == 0 and "has local edits" in skipped.stdout
    forced = cli("skills", "update", "--force")
    assert forced.exit_code == 0, forced.output
    assert b"2.0.0" in (dest / "SKILL.md").read_bytes()
    assert list(sandbox.backups.iterdir())


def test_progress_bars_on_a_terminal_only_and_never_with_quiet(sandbox, hub, monkeypatch):
    from kernel_skills.cli import common

    hub.commit(REPO, {**skill_files("alpha"), **skill_files("beta"), **skill_files("gamma")})
    piped = cli("skills", "add", f"hf://{REPO}/alpha", "--claude")
    assert piped.exit_code == 0 and "Fetching" not in piped.stderr
    monkeypatch.setattr(common, "bars_wanted", lambda quiet: not quiet)  # as on a terminal
    terminal = cli("skills", "add", f"hf://{REPO}/beta", "--claude")
    assert terminal.exit_code == 0 and "Fetching 4 files" in terminal.stderr  # huggingface_hub's own bar
    quiet = cli("skills", "add", f"hf://{REPO}/gamma", "--claude", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_list_does_not_ask_the_hub(sandbox, hub):
    hub.commit(REPO, skill_files("house-style"))
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    before = len(hub.requests)
    listed = cli("skills", "list", "--json")
    item = json.loads(listed.stdout)["installed"][0]
    assert (item["status"], item["source"]["kind"]) == ("unchecked", "hf")
    assert "clean, unchecked" in cli("skills", "list").stdout
    assert len(hub.requests) == before


# ------------------------------------------------------------------ offline and cache


def test_offline_install_from_the_cache(sandbox, hub, monkeypatch):
    files = skill_files("house-style")
    hub.commit(REPO, files)
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    before = len(hub.requests)
    set_offline(monkeypatch)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--dest", "vendored")
    assert result.exit_code == 0, result.output
    assert installed_files(sandbox.project / "vendored/house-style") == as_bytes(files, "house-style")
    assert len(hub.requests) == before  # not a single request
    update = cli("skills", "update", "--json")
    assert update.exit_code == 0
    assert all("in the local cache" in s["reason"] for s in json.loads(update.stdout)["skipped"])
    assert len(hub.requests) == before


def test_an_unreachable_hub_falls_back_to_the_cache(sandbox, hub):
    hub.commit(REPO, {**skill_files("house-style"), **skill_files("other")})
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    hub.stop()
    cached = cli("skills", "add", f"hf://{REPO}/house-style", "--kiro")
    assert cached.exit_code == 0, cached.output
    assert (sandbox.project / ".kiro/skills/house-style/SKILL.md").is_file()
    gone = cli("skills", "add", "hf://my-org/never-fetched/x", "--kiro")
    assert gone.exit_code == 1
    assert "cannot reach the Hub at http://127.0.0.1:" in gone.stderr and "not in the local cache" in gone.stderr
    assert "Check your connection" in gone.stderr


def test_the_console_command_reads_hf_settings_from_the_environment(sandbox, hub):
    # A fresh process: huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE and HF_HUB_OFFLINE at import.
    files = skill_files("house-style")
    hub.commit(REPO, files)
    online = run_module("skills", "add", f"hf://{REPO}/house-style", "--dest", "online", env=sandbox.env(), cwd=sandbox.project)
    assert online.returncode == 0, online.stderr
    hub.stop()
    offline = run_module(
        "skills", "add", f"hf://{REPO}/house-style", "--dest", "offline", env=sandbox.env(HF_HUB_OFFLINE="1"), cwd=sandbox.project
    )
    assert offline.returncode == 0, offline.stderr
    assert installed_files(sandbox.project / "offline/house-style") == as_bytes(files, "house-style")
    missing = run_module("skills", "add", "hf://my-org/other/x", "--dest", "offline", env=sandbox.env(HF_HUB_OFFLINE="1"), cwd=sandbox.project)
    assert missing.returncode == 1 and "HF_HUB_OFFLINE=1 forbids downloading it" in missing.stderr


def test_offline_without_the_cache_says_so(sandbox, hub, monkeypatch):
    hub.commit(REPO, skill_files("house-style"))
    set_offline(monkeypatch)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids downloading it" in result.stderr
    assert "Unset HF_HUB_OFFLINE" in result.stderr
    assert hub.requests == []
    assert not (sandbox.project / ".claude").exists()


def test_offline_misses_a_skill_of_the_repo_that_was_never_downloaded(sandbox, hub, monkeypatch):
    hub.commit(REPO, {**skill_files("house-style"), **skill_files("other")})
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0
    set_offline(monkeypatch)
    result = cli("skills", "add", f"hf://{REPO}/other", "--claude")
    assert result.exit_code == 1
    assert "HF_HUB_OFFLINE=1" in result.stderr
    assert not (sandbox.project / ".claude/skills/other").exists()


# ------------------------------------------------------------------ errors


def test_private_repo_without_a_token_is_a_clear_401(sandbox, hub):
    hub.commit(REPO, skill_files("house-style"), private=True)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"repo {REPO} not found on the Hub (401) (it may be private: no token was sent)" in result.stderr
    assert "HF_TOKEN" in result.stderr and "hf auth login" in result.stderr


def test_private_repo_with_hf_token(sandbox, hub, monkeypatch):
    hub.commit(REPO, skill_files("house-style"), private=True)
    hub.tokens["hf_member"] = {"my-org"}
    monkeypatch.setenv("HF_TOKEN", "hf_member")
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 0, result.output


def test_a_bad_token_is_a_clear_401(sandbox, hub, monkeypatch):
    hub.commit(REPO, skill_files("house-style"))
    monkeypatch.setenv("HF_TOKEN", "hf_revoked")
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert "the Hub rejected your token (401 Unauthorized)" in result.stderr
    assert "https://huggingface.co/settings/tokens" in result.stderr


def test_a_gated_repo_says_where_to_ask_for_access(sandbox, hub, monkeypatch):
    hub.commit(REPO, skill_files("house-style"))
    hub.repo(REPO).gated = True
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert f"{REPO} is a gated repo and your token has not been granted access" in result.stderr
    assert f"Request access at {hub.url}/{REPO}" in result.stderr
    assert not (sandbox.project / ".claude").exists()
    hub.tokens["hf_granted"] = set()
    hub.granted.add("hf_granted")
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    assert cli("skills", "add", f"hf://{REPO}/house-style", "--claude").exit_code == 0


def test_missing_repo_is_a_clear_404(sandbox, hub, monkeypatch):
    hub.tokens["hf_member"] = {"my-org"}
    monkeypatch.setenv("HF_TOKEN", "hf_member")
    result = cli("skills", "add", "hf://my-org/nothing-here/x", "--claude")
    assert result.exit_code == 1
    assert "repo my-org/nothing-here not found on the Hub (404)" in result.stderr
    assert "hf://datasets/ORG/REPO" in result.stderr
    data = cli("skills", "add", "hf://datasets/my-org/nothing-here", "--claude")
    assert "dataset repo my-org/nothing-here not found" in data.stderr


def test_missing_revision_and_missing_folder(sandbox, hub):
    hub.commit(REPO, skill_files("house-style"))
    revision = cli("skills", "add", f"hf://{REPO}@nope/house-style", "--claude")
    assert revision.exit_code == 1 and "revision 'nope' not found in my-org/skills" in revision.stderr
    folder = cli("skills", "add", f"hf://{REPO}/elsewhere", "--claude")
    assert folder.exit_code == 1 and f"hf://{REPO}/elsewhere has no folder 'elsewhere'" in folder.stderr
    assert "--list" in folder.stderr


@pytest.mark.parametrize("address", ["hf://my-org", "hf://my-org/re po", "hf://my-org/skills@", "hf://my-org/skills/a/../b", "hf://x--y/skills"])
def test_malformed_addresses_are_usage_errors(sandbox, hub, address):
    result = cli("skills", "add", address, "--claude")
    assert result.exit_code == 2, result.output
    assert "is not a Hub skill address" in result.stderr and "hf://ORG/REPO[@REVISION][/PATH]" in result.stderr
    assert hub.requests == []


# ------------------------------------------------------------------ repo kinds and layouts


@pytest.mark.parametrize("repo_type, prefix", [("dataset", "datasets/"), ("space", "spaces/")])
def test_dataset_and_space_repos(sandbox, hub, repo_type, prefix):
    files = skill_files("house-style")
    hub.commit(REPO, files, repo_type=repo_type)
    result = cli("skills", "add", f"hf://{prefix}{REPO}/house-style", "--claude")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert installed_files(dest) == as_bytes(files, "house-style")
    assert receipt(dest)["source"]["repo_type"] == repo_type
    assert hub.hits(f"/api/{repo_type}s/{REPO}") >= 1 and hub.hits(f"/{prefix}{REPO}/resolve/") == 8


def test_a_repo_of_skills_needs_skill_to_pick(sandbox, hub):
    files = {**skill_files("alpha"), **skill_files("beta"), **skill_files("gamma"), "README.md": "# our skills\n"}
    hub.commit(REPO, files)
    bare = cli("skills", "add", f"hf://{REPO}", "--claude")
    assert bare.exit_code == 2
    assert "is a folder of 3 skills (alpha, beta, gamma)" in bare.stderr and "--skill '*'" in bare.stderr
    picked = cli("skills", "add", f"hf://{REPO}", "--skill", "beta", "--claude")
    assert picked.exit_code == 0, picked.output
    assert sorted(os.listdir(sandbox.project / ".claude/skills")) == ["beta"]
    assert receipt(sandbox.project / ".claude/skills/beta")["source"]["uri"] == f"hf://{REPO}/beta"
    # Only beta's files were fetched.
    assert hub.hits("/resolve/") == 8 and hub.hits("alpha/") == 0
    every = cli("skills", "add", f"hf://{REPO}", "--skill", "*", "--kiro")
    assert every.exit_code == 0, every.output
    assert sorted(os.listdir(sandbox.project / ".kiro/skills")) == ["alpha", "beta", "gamma"]
    missing = cli("skills", "add", f"hf://{REPO}", "--skill", "delta", "--cursor")
    assert missing.exit_code == 2 and "holds no skill named 'delta'" in missing.stderr and "alpha, beta, gamma" in missing.stderr


def test_skills_deeper_in_the_repo_are_pointed_at(sandbox, hub):
    hub.commit(REPO, skill_files("alpha", prefix="skills/alpha"))
    result = cli("skills", "add", f"hf://{REPO}", "--claude")
    assert result.exit_code == 1
    assert f"Skills are deeper, e.g. hf://{REPO}/skills" in result.stderr
    assert cli("skills", "add", f"hf://{REPO}/skills", "--skill", "alpha", "--claude").exit_code == 0


def test_a_skill_at_the_repo_root_is_named_by_its_skill_md(sandbox, hub):
    files = skill_files("solo", prefix="")
    hub.commit("my-org/solo-skill", files)
    result = cli("skills", "add", "hf://my-org/solo-skill", "--claude")
    assert result.exit_code == 0, result.output
    dest = sandbox.project / ".claude/skills/solo"
    assert installed_files(dest) == as_bytes(files, "")  # the repo's .gitattributes is not part of it
    assert receipt(dest)["source"]["path"] == ""


def test_list_describes_what_a_repo_offers_without_installing(sandbox, hub):
    hub.commit(REPO, {**skill_files("alpha"), **skill_files("beta", version="3.1")})
    result = cli("skills", "add", "--list", f"hf://{REPO}")
    assert result.exit_code == 0, result.output
    assert "alpha" in result.stdout and "3.1" in result.stdout and "A skill from the Hub" in result.stdout
    assert f"kernels skills add hf://{REPO}/beta" in result.stdout
    offers = json.loads(cli("skills", "add", "--list", f"hf://{REPO}", "--json").stdout)["offers"]
    assert [(o["name"], o["address"], o["version"]) for o in offers] == [("alpha", f"hf://{REPO}/alpha", "1.0.0"), ("beta", f"hf://{REPO}/beta", "3.1")]
    # Only the SKILL.md files were downloaded; nothing was installed.
    assert {p.rsplit("/", 1)[-1] for m, p in hub.requests if "/resolve/" in p} == {"SKILL.md"}
    assert not (sandbox.project / ".agents").exists()


def test_show_and_validate_hub_skills(sandbox, hub):
    hub.commit(REPO, {**skill_files("alpha"), **skill_files("beta")})
    shown = cli("skills", "show", f"hf://{REPO}/alpha")
    assert shown.exit_code == 0, shown.output
    assert "alpha" in shown.stdout and f"hf://{REPO}/alpha" in shown.stdout and "tool.py" in shown.stdout
    data = json.loads(cli("skills", "show", f"hf://{REPO}", "--skill", "beta", "--json").stdout)
    assert data["name"] == "beta" and data["path"] is None and data["source"]["kind"] == "hf"
    checked = cli("skills", "validate", f"hf://{REPO}")
    assert checked.exit_code == 0, checked.output
    assert f"valid  hf://{REPO}/alpha" in checked.stdout and f"valid  hf://{REPO}/beta" in checked.stdout


# ------------------------------------------------------------------ refused trees


def test_a_file_over_10_mb_is_refused_before_it_is_downloaded(sandbox, hub):
    big = b"\0" * 10_000_001
    hub.commit(REPO, skill_files("house-style", extra={"assets/big.bin": big}))
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert f"refused hf://{REPO}/house-style: assets/big.bin is 10.0 MB, over the 10.0 MB limit for one file" in result.stderr
    assert "--max-file-mb" in result.stderr
    assert hub.hits("/resolve/") == 0  # nothing was downloaded
    assert not (sandbox.project / ".claude").exists()
    checked = cli("skills", "validate", f"hf://{REPO}/house-style")
    assert checked.exit_code == 1 and "assets/big.bin: is 10.0 MB" in checked.stderr
    # Trusting it: a higher limit installs it (served the way the Hub serves LFS files).
    allowed = cli("skills", "add", f"hf://{REPO}/house-style", "--claude", "--max-file-mb", "11")
    assert allowed.exit_code == 0, allowed.output
    assert (sandbox.project / ".claude/skills/house-style/assets/big.bin").read_bytes() == big


def test_a_tree_over_the_total_limit_is_refused_before_download(sandbox, hub):
    parts = {f"assets/part{i}.txt": "x" * 400_000 for i in range(3)}
    hub.commit(REPO, skill_files("house-style", extra=parts))
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude", "--max-total-mb", "1")
    assert result.exit_code == 1
    assert "assets/part2.txt takes the skill past the 1.0 MB limit for a whole skill" in result.stderr
    assert "--max-total-mb" in result.stderr
    assert hub.hits("/resolve/") == 0


@pytest.mark.parametrize("folder", ["House_Style", "house--style", "-house"])
def test_a_skill_folder_with_a_bad_name_is_refused(sandbox, hub, folder):
    hub.commit(REPO, skill_files(folder))
    result = cli("skills", "add", f"hf://{REPO}", "--skill", "*", "--claude")
    assert result.exit_code == 1
    assert f"refused hf://{REPO}/{folder}: {folder} is not a valid skill name" in result.stderr
    assert hub.hits("/resolve/") == 0
    assert not (sandbox.project / ".claude").exists()


@pytest.mark.parametrize("path, problem", [("house-style/../../outside.txt", "'..' path component"), ("/etc/cron.d/x", "is an absolute path")])
def test_crafted_listings_with_paths_leaving_the_skill_are_refused(sandbox, hub, path, problem):
    prefix = "house-style" if path.startswith("house-style") else ""
    files = skill_files("house-style", prefix=prefix)
    hub.commit(REPO, {**files, path: "gotcha\n"})
    address = f"hf://{REPO}/house-style" if prefix else f"hf://{REPO}"
    result = cli("skills", "add", address, "--claude")
    assert result.exit_code == 1
    assert problem in result.stderr
    assert hub.hits("/resolve/") == 0
    assert not (sandbox.project / ".claude").exists() and not (sandbox.root / "outside.txt").exists()


def test_a_skill_md_that_fails_validation_is_refused(sandbox, hub):
    hub.commit(REPO, {**skill_files("house-style"), "house-style/SKILL.md": "---\nname: house-style\n---\nno description\n"})
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert f"skill 'house-style' from hf://{REPO}/house-style is not valid: SKILL.md:2: front matter needs 'description'" in result.stderr
    assert f"kernels skills validate hf://{REPO}/house-style" in result.stderr
    assert not (sandbox.project / ".claude").exists()


def test_a_skill_md_naming_another_skill_is_refused(sandbox, hub):
    hub.commit(REPO, {**skill_files("house-style"), "house-style/SKILL.md": skill_md("other-name")})
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1 and "must equal the folder name 'house-style'" in result.stderr


# ------------------------------------------------------------------ interrupted downloads


def test_a_dropped_connection_is_resumed(sandbox, hub):
    files = skill_files("house-style", extra={"references/long.md": "y" * 200_000})
    hub.commit(REPO, files)
    hub.cut("house-style/references/long.md", after=50_000)
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 0, result.output
    assert installed_files(sandbox.project / ".claude/skills/house-style") == as_bytes(files, "house-style")


def test_a_download_that_fails_half_way_installs_nothing(sandbox, hub):
    files = skill_files("house-style", extra={"references/long.md": "y" * 200_000})
    hub.commit(REPO, files)
    target = sandbox.project / ".claude/skills"
    target.mkdir(parents=True)
    before = snapshot(target)
    hub.cut("house-style/references/long.md", after=50_000)
    hub.fail("house-style/references/long.md", 500)  # and the resumed request fails
    result = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "the Hub answered 500" in result.stderr and "nothing was installed" in result.stderr
    assert snapshot(target) == before
    assert leftovers(sandbox.project, sandbox.home) == []
    assert not list((sandbox.root / "hf").rglob("*.incomplete"))
    hub.fail("house-style/references/long.md", None)
    again = cli("skills", "add", f"hf://{REPO}/house-style", "--claude")
    assert again.exit_code == 0, again.output
    assert installed_files(target / "house-style") == as_bytes(files, "house-style")


def test_sigkill_mid_download_leaves_no_partial_install(sandbox, hub):
    files = skill_files("house-style", extra={"references/long.md": "z" * 300_000})
    hub.commit(REPO, files)
    hub.stall("house-style/references/long.md", after=100_000)
    dest = sandbox.project / "vendored"
    tmp = sandbox.root / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernel_skills", "skills", "add", f"hf://{REPO}/house-style", "--dest", str(dest), "-q"],
        env=sandbox.env(TMPDIR=str(tmp)),
        cwd=sandbox.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(lambda: hub.hits("house-style/references/long.md", "GET") > 0, timeout=60), "the download never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert not (dest / "house-style").exists()
    assert leftovers(sandbox.project) == []
    hub._stalls.clear()
    again = cli("skills", "add", f"hf://{REPO}/house-style", "--dest", str(dest))
    assert again.exit_code == 0, again.output
    assert installed_files(dest / "house-style") == as_bytes(files, "house-style")
