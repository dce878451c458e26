"""agents.resolve_targets: which skills folders each command acts on (pure: roots in, targets out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_skills.agents import AGENTS, OTHER_READERS, Location, agent_names, resolve_targets, seen_twice, shared_readers, twice_warning
from kernel_skills.errors import KernelsError


@pytest.fixture
def loc(tmp_path: Path) -> Location:
    return Location(cwd=tmp_path / "project", home=tmp_path / "home", env={})


def paths(targets) -> set[Path]:
    return {t.path for t in targets}


def test_add_with_nothing_named_uses_the_shared_root_and_says_who_does_not_read_it(loc):
    targets, note = resolve_targets("add", loc)
    assert paths(targets) == {loc.cwd / ".agents/skills"}
    assert note and "--claude" in note and "--kiro" in note


def test_add_with_nothing_named_asks_for_the_configured_defaults_and_only_then(loc):
    targets, note = resolve_targets("add", loc, default_agents=lambda: ["claude", "kiro"])
    assert paths(targets) == {loc.cwd / ".claude/skills", loc.cwd / ".kiro/skills"} and note is None

    def never() -> list[str]:
        raise AssertionError("defaults read although an agent was named")

    targets, _ = resolve_targets("add", loc, agents=["codex"], dests=["out"], default_agents=never)
    assert paths(targets) == {loc.cwd / ".agents/skills", loc.cwd / "out"}


def test_remove_with_nothing_named_looks_in_every_project_folder_or_every_user_folder(loc):
    project, _ = resolve_targets("remove", loc)
    assert {t.scope for t in project} == {"project"}
    assert paths(project) == {loc.cwd / a.project for a in AGENTS}
    user, _ = resolve_targets("remove", loc, global_=True)
    assert {t.scope for t in user} == {"global"} and loc.home / ".claude/skills" in paths(user)


def test_update_with_nothing_named_looks_in_project_and_user_folders(loc):
    targets, _ = resolve_targets("update", loc)
    assert {t.scope for t in targets} == {"project", "global"}


def test_list_narrows_to_the_named_agents_in_both_scopes_plus_every_dest(loc):
    targets, _ = resolve_targets("list", loc, agents=["claude"], dests=["~/mine"])
    assert paths(targets) == {loc.cwd / ".claude/skills", loc.home / ".claude/skills", Path("~/mine").expanduser()}
    only_user, _ = resolve_targets("list", loc, agents=["claude"], global_=True, dests=["x"])
    assert paths(only_user) == {loc.home / ".claude/skills", loc.cwd / "x"}


@pytest.mark.parametrize("purpose", ["add", "remove", "update"])
def test_global_with_only_dest_folders_is_a_usage_error(loc, purpose):
    with pytest.raises(KernelsError) as exc:
        resolve_targets(purpose, loc, dests=["out"], global_=True)
    assert exc.value.usage and "--global" in exc.value.what


@pytest.mark.parametrize("purpose", ["add", "list", "remove", "update"])
def test_an_empty_dest_or_an_unknown_agent_is_a_usage_error(loc, purpose):
    for kwargs in ({"dests": [" "]}, {"agents": ["vim"]}):
        with pytest.raises(KernelsError) as exc:
            resolve_targets(purpose, loc, **kwargs)
        assert exc.value.usage


# ------------------------------------------------------------------ the agent table, as documented


def test_cline_has_its_own_folders_and_does_not_read_the_shared_root(loc):
    targets, _ = resolve_targets("add", loc, agents=["cline"])
    assert paths(targets) == {loc.cwd / ".cline/skills"}
    user, _ = resolve_targets("add", loc, agents=["cline"], global_=True)
    assert paths(user) == {loc.home / ".cline/skills"}
    _, note = resolve_targets("add", loc)
    assert note and "Cline do not" in note and "--cline" in note and "Cline read" not in note


def test_amp_shares_the_project_root_but_not_the_user_one(loc):
    project, _ = resolve_targets("add", loc, agents=["amp", "codex"])
    assert paths(project) == {loc.cwd / ".agents/skills"}  # one folder, written once
    user, _ = resolve_targets("add", loc, agents=["amp"], global_=True)
    assert paths(user) == {loc.home / ".config/agents/skills"}
    _, project_note = resolve_targets("add", loc)
    _, user_note = resolve_targets("add", loc, global_=True)
    assert "Amp" in project_note.split(" do not")[0] and "--amp" not in project_note
    assert "--amp" in user_note and user_note.startswith("This goes into the shared ~/.agents/skills root")


def test_goose_reads_the_shared_root_so_it_has_no_flag_of_its_own(loc):
    assert "goose" not in agent_names()
    assert "Goose" in [a.label for a in shared_readers()] and "Goose" in [a.label for a in shared_readers(global_=True)]


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        ([".claude/skills", ".agents/skills"], {"opencode", "cursor", "copilot", "amp", "goose"}),
        ([".claude/skills", ".cline/skills"], {"cline"}),
        ([".claude/skills", ".cursor/skills", ".codex/skills"], {"cursor"}),
        ([".claude/skills", ".kiro/skills", ".gemini/skills"], set()),
        (["~/.claude/skills", "~/.agents/skills"], {"opencode", "cursor", "goose"}),  # Copilot and Amp: not both
        ([".claude/skills", "~/.claude/skills"], set()),  # project beside user: one takes precedence
    ],
)
def test_which_agents_see_a_skill_twice(loc, folders, expected):
    assert {a.name for a in seen_twice([loc.expand(f) for f in folders], loc)} == expected


def test_one_warning_names_every_agent_and_folder_pair_once(loc):
    placed = {
        "demo": [loc.cwd / ".claude/skills", loc.cwd / ".agents/skills", loc.cwd / ".cline/skills"],
        "other": [loc.cwd / ".claude/skills", loc.cwd / ".agents/skills"],
    }
    warning = twice_warning(placed, loc)
    assert warning is not None
    assert warning.startswith(
        "OpenCode, Cursor, GitHub Copilot, Amp and Goose load both .claude/skills and .agents/skills; Cline loads both"
    )
    assert "see demo and other twice" in warning
    assert twice_warning({"demo": [loc.cwd / ".claude/skills", loc.cwd / ".kiro/skills"]}, loc) is None


def test_copies_already_there_count_but_only_when_this_command_adds_to_them(loc):
    (loc.cwd / ".agents/skills/demo").mkdir(parents=True)
    assert "OpenCode" in (twice_warning({"demo": [loc.cwd / ".claude/skills"]}, loc) or "")
    (loc.cwd / ".claude/skills/demo").mkdir(parents=True)
    assert twice_warning({"demo": [loc.cwd / ".kiro/skills"]}, loc) is None


def test_every_agent_row_cites_the_documentation_it_was_checked_against():
    import inspect

    from kernel_skills import agents

    source = inspect.getsource(agents)
    table = source[source.index("AGENTS: tuple") : source.index("# fmt: on")]
    lines = table.splitlines()
    for agent in (*AGENTS, *OTHER_READERS):
        if agent.name == "agents":
            continue
        row = next(i for i, line in enumerate(lines) if f'Agent("{agent.name}"' in line)
        assert any(line.strip().startswith("# https://") for line in lines[max(row - 3, 0) : row]), agent.name
