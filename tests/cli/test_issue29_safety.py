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


# ---------------------------------------------- 6. deep or huge structures are refused, never a crash


def _deep(root: Path, levels: int) -> None:
    """root/d/d/.../d/leaf.md, ``levels`` folders deep (made from inside: see _undeep)."""
    here = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(levels):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf.md").write_text("deep\n")
    finally:
        os.chdir(here)


def _undeep(root: Path) -> None:
    """rmtree recurses once per level on Python 3.11; remove a deep chain bottom-up instead,
    from inside it (every call on a 1,500-component path would walk all of it)."""
    here = os.getcwd()
    try:
        os.chdir(root)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


@pytest.fixture
def deep_ok(tmp_path):
    """Remove whatever deep chain a test leaves, even when it fails: pytest's own cleanup of
    old temp folders uses shutil.rmtree, which recurses once per level on Python 3.11 and
    would fail on it in a later session."""
    yield
    from kernel_skills.fsops import _remove_deep

    if tmp_path.exists():
        _remove_deep(str(tmp_path))


NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    "receipt",
    [
        NESTED,
        '{"installer": "kernel-skills", "files": ' + NESTED + "}",
        '{"installer": "kernel-skills", "files": {"SKILL.md": 5}}',
        '{"installer": "kernel-skills", "files": {}, "source": [1, 2]}',
        '{"installer": "kernel-skills", "files": {}, "source": {"kind": {"x": 1}}}',
        '{"installer": "kernel-skills", "files": {}, "skill": ["demo"], "digest": 3}',
    ],
    ids=["nested-list", "nested-files", "number-hash", "list-source", "dict-kind", "list-skill"],
)
def test_a_receipt_of_any_shape_that_does_not_parse_is_damaged(sandbox, receipt):
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / ".kernel-skills.json").write_text(receipt)

    listed = cli("skills", "list", "--json")
    assert listed.exit_code == 0, listed.output
    [item] = json.loads(listed.stdout)["installed"]
    assert item["receipt_damaged"] is True and item["managed"] is False

    update = cli("skills", "update", "--claude", "--json")
    assert update.exit_code == 1 and "damaged" in json.loads(update.stdout)["skipped"][0]["reason"]
    refused = cli("skills", "remove", "demo")
    assert refused.exit_code == 1 and "damaged" in refused.stderr and "bug" not in refused.stderr
    repaired = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert repaired.exit_code == 0, repaired.output
    assert json.loads(repaired.stdout)["actions"][0]["backup"]
    assert cli("skills", "remove", "demo", "-q").exit_code == 0


def test_a_1500_level_tree_is_refused_by_add_and_reported_by_validate(sandbox, deep_ok):
    skill = make_skill(sandbox.root / "src", "deep")
    _deep(skill / "references", 1500)
    try:
        add = cli("skills", "add", str(skill), "--dest", "out")
        assert add.exit_code == 1, add.output
        assert "deeper than" in add.stderr and "--max-depth" in add.stderr and "bug" not in add.stderr
        assert not (sandbox.project / "out/deep").exists()

        check = cli("skills", "validate", str(skill), "--json")
        assert check.exit_code == 1
        [report] = json.loads(check.stdout)["results"]
        assert any("deeper than" in e["message"] for e in report["errors"])
    finally:
        _undeep(skill / "references")


def test_validate_of_a_folder_of_skills_keeps_every_result_when_one_is_bad(sandbox, deep_ok):
    team = sandbox.root / "team"
    for name in ("alpha", "beta", "gamma"):
        make_skill(team, name)
    _deep(team / "beta" / "references", 1500)
    try:
        result = cli("skills", "validate", str(team), "--json")
        assert result.exit_code == 1
        valid = {Path(r["path"]).name: r["valid"] for r in json.loads(result.stdout)["results"]}
        assert valid == {"alpha": True, "beta": False, "gamma": True}
    finally:
        _undeep(team / "beta" / "references")


def test_file_count_and_depth_limits_have_defaults_and_can_be_raised(sandbox, deep_ok):
    many = make_skill(sandbox.root / "src", "many", extra={f"assets/f{i}.txt": "x" for i in range(60)})
    refused = cli("skills", "add", str(many), "--dest", "out", "--max-files", "50")
    assert refused.exit_code == 1 and "more than 50 files" in refused.stderr and "--max-files" in refused.stderr
    assert cli("skills", "add", str(many), "--dest", "out", "-q").exit_code == 0  # default: 5000

    nested = make_skill(sandbox.root / "src", "nested")
    _deep(nested / "references", 40)
    assert "deeper than 32 levels" in cli("skills", "add", str(nested), "--dest", "out").stderr
    assert cli("skills", "add", str(nested), "--dest", "out", "--max-depth", "64", "-q").exit_code == 0
    bad = cli("skills", "add", str(nested), "--dest", "out", "--max-depth", "zero")
    assert bad.exit_code == 2 and "--max-depth" in bad.stderr


def test_a_hub_listing_over_the_file_limit_is_refused_before_download(sandbox, hub):
    from .hubfake import skill_files as hub_skill

    hub.commit("my-org/skills", hub_skill("wide", extra={f"assets/f{i}.txt": "x" for i in range(30)}))
    result = cli("skills", "add", "hf://my-org/skills/wide", "--dest", "out", "--max-files", "20")
    assert result.exit_code == 1 and "more than 20 files" in result.stderr
    assert hub.hits("/resolve/") == 0


def test_clutter_in_the_source_does_not_make_a_clean_install_outdated(sandbox):
    # pip compiles a wheel's scripts/*.py into __pycache__ beside the bundled skill.
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    (sandbox.bundled / "demo/scripts/__pycache__").mkdir()
    (sandbox.bundled / "demo/scripts/__pycache__/tool.cpython-311.pyc").write_bytes(b"\0")
    [item] = json.loads(cli("skills", "list", "--json").stdout)["installed"]
    assert (item["status"], item["modified"]) == ("current", False)
    assert "already installed" in cli("skills", "add", "demo", "--claude").stdout


# ------------------------------------------ 4. strings from a skill never drive the terminal

EVIL_DESCRIPTION = r'"Clears the screen \e[2J, retitles \e]0;pwned\a, and [bold red]marks up[/] text. Use it never."'
RAW_CONTROLS = ("\x1b", "\x07", "\x9b")


def _assert_inert(text: str, *, styled: bool = False) -> None:
    """No control sequence from the skill reached the output (rich's own styling may, when styled)."""
    bad = ("\x1b[2J", "\x1b]", "\x07", "\x9b") if styled else RAW_CONTROLS
    assert not any(c in text for c in bad), repr(text)


@pytest.mark.parametrize("force_color", ["", "1"])
def test_show_list_and_add_list_escape_control_characters(sandbox, monkeypatch, force_color):
    if force_color:
        monkeypatch.setenv("FORCE_COLOR", "1")  # the rich (terminal) path
    skill_md = (
        f"---\nname: demo\ndescription: {EVIL_DESCRIPTION}\nmetadata:\n  version: \"1.0\\e[31m\"\n---\n# demo\n"
    )
    make_skill(sandbox.bundled, "demo", skill_md=skill_md)
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    make_skill(sandbox.project / ".claude/skills", "evil\x1b[2J\x07", skill_md=skill_md)

    shown = cli("skills", "show", "demo")
    assert shown.exit_code == 0, shown.output
    _assert_inert(shown.stdout, styled=bool(force_color))
    assert "\\x1b[2J" in shown.stdout and "[bold red]marks up[/]" in shown.stdout

    listed = cli("skills", "list")
    assert listed.exit_code == 0, listed.output
    _assert_inert(listed.stdout, styled=bool(force_color))
    assert "evil\\x1b[2J\\x07" in listed.stdout and "1.0\\x1b[31m" in listed.stdout

    offers = cli("skills", "add", "--list")
    assert offers.exit_code == 0, offers.output
    _assert_inert(offers.stdout, styled=bool(force_color))
    # JSON carries the exact strings (escaped by JSON itself).
    data = json.loads(cli("skills", "show", "demo", "--json").stdout)
    assert "\x1b[2J" in data["description"]


def test_error_lines_escape_control_characters_and_newlines(sandbox):
    result = cli("skills", "remove", "no\x1b]0;pwned\x07such")
    _assert_inert(result.stderr)
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("name", ["a\nb.md", "x\x1b[2J.md", "tab\there.md", "del\x7f.md"])
def test_hub_file_names_with_control_characters_are_refused(sandbox, hub, name):
    from .hubfake import skill_files as hub_skill

    hub.commit("my-org/skills", hub_skill("house-style", extra={f"references/{name}": "x"}))
    result = cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "out")
    assert result.exit_code == 1, result.output
    assert "control character" in result.stderr
    _assert_inert(result.stderr)
    assert result.stderr.count("\n") == 1
    assert not (sandbox.project / "out").exists() and hub.hits("/resolve/") == 0


def test_local_file_names_with_control_characters_are_refused(sandbox):
    skill = make_skill(sandbox.root / "src", "odd", extra={"references/x\x1b[2J.md": "x"})
    result = cli("skills", "add", str(skill), "--dest", "out")
    assert result.exit_code == 1 and "control character" in result.stderr
    _assert_inert(result.stderr)


def test_an_install_a_user_nested_1500_levels_deep_is_backed_up_and_removed(sandbox, deep_ok):
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    _deep(dest / "references", 1500)
    listed = cli("skills", "list", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout)["installed"][0]["modified"] is True
    removed = cli("skills", "remove", "demo", "--claude", "--force", "--json")
    assert removed.exit_code == 0, removed.output
    backup = Path(json.loads(removed.stdout)["actions"][0]["backup"])
    assert not os.path.lexists(dest)
    _undeep(backup / "references")
