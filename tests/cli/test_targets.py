"""agents.resolve_targets: which skills folders each command acts on (pure: roots in, targets out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_skills.agents import AGENTS, Location, resolve_targets
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
