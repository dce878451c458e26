"""`kernels skills publish`: check the skill, upload it with huggingface_hub, print the hf:// line.

Against tests/cli/hubfake.py's FakeHub through the real client (create_repo,
create_branch, upload_folder -> preupload + ndjson commit, pull requests).
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from .conftest import cli, make_skill, skill_files

WRITER = "hf_writer"


@pytest.fixture
def writer(hub, monkeypatch):
    """A token that may write to my-org (and nowhere else), in HF_TOKEN."""
    hub.tokens[WRITER] = {"my-org"}
    monkeypatch.setenv("HF_TOKEN", WRITER)
    return hub


def local_skill(sandbox, name: str = "house-style", **kw):
    return make_skill(sandbox.project / "work", name, **kw)


def test_publish_then_install_round_trip(sandbox, writer):
    folder = local_skill(sandbox, extra={"__pycache__/x.pyc": b"junk", ".kernel-skills.json": "{}"})
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills")
    assert result.exit_code == 0, result.output
    assert "Published house-style 1.0.0 to my-org/skills/house-style" in result.stdout
    assert "Install it with: kernels skills add hf://my-org/skills/house-style" in result.stdout
    on_hub = writer.files("my-org/skills")
    assert sorted(p for p in on_hub if p.startswith("house-style/")) == [
        "house-style/SKILL.md",
        "house-style/assets/blob.bin",
        "house-style/references/guide.md",
        "house-style/scripts/tool.py",
    ]  # no receipt, no __pycache__
    installed = cli("skills", "add", "hf://my-org/skills/house-style", "--claude")
    assert installed.exit_code == 0, installed.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert skill_files(dest) == skill_files(folder)
    assert os.stat(dest / "scripts/tool.py").st_mode & stat.S_IXUSR


def test_publish_creates_the_repo_private_and_only_the_token_reads_it(sandbox, writer, monkeypatch):
    folder = local_skill(sandbox)
    assert cli("skills", "publish", str(folder), "--repo", "my-org/private-skills", "--private").exit_code == 0
    assert writer.repo("my-org/private-skills").private
    assert cli("skills", "add", "hf://my-org/private-skills/house-style", "--claude").exit_code == 0
    monkeypatch.delenv("HF_TOKEN")
    anonymous = cli("skills", "add", "hf://my-org/private-skills/house-style", "--kiro")
    assert anonymous.exit_code == 1 and "(401)" in anonymous.stderr


def test_publish_again_replaces_the_folder_and_update_follows(sandbox, writer):
    folder = local_skill(sandbox, extra={"references/old.md": "# old\n"})
    assert cli("skills", "publish", str(folder), "--repo", "my-org/skills").exit_code == 0
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--claude").exit_code == 0
    os.remove(folder / "references/old.md")
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text().replace('version: "1.0.0"', 'version: "1.1.0"'))
    second = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--json")
    assert second.exit_code == 0, second.output
    data = json.loads(second.stdout)
    assert data["version"] == "1.1.0" and data["install"] == "kernels skills add hf://my-org/skills/house-style"
    assert "house-style/references/old.md" not in writer.files("my-org/skills")
    assert ".gitattributes" in writer.files("my-org/skills")  # the rest of the repo is left alone
    update = cli("skills", "update")
    assert update.exit_code == 0, update.output
    dest = sandbox.project / ".claude/skills/house-style"
    assert not (dest / "references/old.md").exists()
    assert json.loads((dest / ".kernel-skills.json").read_text())["skill_version"] == "1.1.0"


def test_publish_to_a_branch(sandbox, writer):
    folder = local_skill(sandbox)
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--revision", "v2")
    assert result.exit_code == 0, result.output
    assert "kernels skills add hf://my-org/skills@v2/house-style" in result.stdout
    assert "house-style/SKILL.md" in writer.files("my-org/skills", "v2")
    assert "house-style/SKILL.md" not in writer.files("my-org/skills", "main")
    assert cli("skills", "add", "hf://my-org/skills@v2/house-style", "--claude").exit_code == 0


def test_publish_as_a_pull_request(sandbox, writer):
    folder = local_skill(sandbox)
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--create-pr")
    assert result.exit_code == 0, result.output
    assert "Pull request: " in result.stdout and "/discussions/1" in result.stdout
    assert "kernels skills add hf://my-org/skills@refs/pr/1/house-style" in result.stdout
    assert "house-style/SKILL.md" not in writer.files("my-org/skills", "main")
    assert cli("skills", "add", "hf://my-org/skills@refs/pr/1/house-style", "--claude").exit_code == 0
    both = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--create-pr", "--revision", "v2")
    assert both.exit_code == 2 and "--create-pr opens a pull request against the default branch" in both.stderr


def test_publish_to_a_dataset_repo(sandbox, writer):
    folder = local_skill(sandbox)
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--repo-type", "dataset")
    assert result.exit_code == 0, result.output
    assert "kernels skills add hf://datasets/my-org/skills/house-style" in result.stdout
    assert cli("skills", "add", "hf://datasets/my-org/skills/house-style", "--claude").exit_code == 0
    space = cli("skills", "publish", str(folder), "--repo", "my-org/skills", "--repo-type", "space")
    assert space.exit_code == 2


def test_publish_without_a_token_asks_for_one_and_sends_nothing(sandbox, hub):
    folder = local_skill(sandbox)
    result = cli("skills", "publish", str(folder), "--repo", "my-org/skills")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "needs a Hugging Face token with write access, and none is set" in result.stderr
    assert "HF_TOKEN" in result.stderr and "hf auth login" in result.stderr
    assert hub.requests == []


def test_publish_with_a_bad_token_is_a_clear_401(sandbox, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_revoked")
    result = cli("skills", "publish", str(local_skill(sandbox)), "--repo", "my-org/skills")
    assert result.exit_code == 1
    assert "the Hub rejected your token (401 Unauthorized)" in result.stderr and "write access" in result.stderr


def test_publish_to_an_unreachable_hub_fails_in_one_line_about_publishing(sandbox, writer):
    writer.stop()
    result = cli("skills", "publish", str(local_skill(sandbox)), "--repo", "my-org/skills")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "Check your connection" in result.stderr
    assert "installed" not in result.stderr  # publishing installs nothing, so it cannot say so


def test_publish_where_the_token_may_not_write_is_a_clear_403(sandbox, writer):
    result = cli("skills", "publish", str(local_skill(sandbox)), "--repo", "other-org/skills")
    assert result.exit_code == 1
    assert "your token may not write to other-org/skills (403 Forbidden)" in result.stderr


def test_an_invalid_or_unsafe_skill_is_not_published(sandbox, writer):
    bad = local_skill(sandbox, "broken", skill_md="---\nname: broken\n---\nno description\n")
    result = cli("skills", "publish", str(bad), "--repo", "my-org/skills")
    assert result.exit_code == 1
    assert "is not a valid skill: SKILL.md:2: front matter needs 'description'" in result.stderr
    assert "nothing was uploaded" in result.stderr
    big = local_skill(sandbox, "big")
    with open(big / "assets/huge.bin", "wb") as handle:
        handle.truncate(10_000_001)
    too_big = cli("skills", "publish", str(big), "--repo", "my-org/skills")
    assert too_big.exit_code == 1 and "assets/huge.bin is 10.0 MB" in too_big.stderr
    assert writer.requests == []


@pytest.mark.parametrize("repo", ["my-org", "my-org/skills/sub", "hf://my-org/skills@main", "bad name/x"])
def test_bad_repo_is_a_usage_error(sandbox, writer, repo):
    result = cli("skills", "publish", str(local_skill(sandbox)), "--repo", repo)
    assert result.exit_code == 2, result.output
    assert writer.requests == []


def test_publish_needs_repo(sandbox, writer):
    assert cli("skills", "publish", str(local_skill(sandbox))).exit_code == 2


def test_publish_offline_is_refused_before_any_request(sandbox, writer, monkeypatch):
    from .hubfake import set_offline

    set_offline(monkeypatch)
    result = cli("skills", "publish", str(local_skill(sandbox)), "--repo", "my-org/skills")
    assert result.exit_code == 1 and "HF_HUB_OFFLINE=1 is set, and publishing needs the Hub" in result.stderr
    assert writer.requests == []
