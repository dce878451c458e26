"""`kernels skills add`: install skills (or, with --list, say what a source offers).

The command's work, without typer: the typer declaration (add_cmd.py) and the fast path
(fast.py) both call :func:`add` with the values they read from the command line.
"""

from pathlib import Path
from typing import TYPE_CHECKING

from .common import DEFAULT_SKILL, refuse_with, report_plan, setup, source_notes, sources, split_specs
from .lockhooks import lock_added, lock_places

if TYPE_CHECKING:
    from ..output import Output
    from ..roots import Roots


def add(
    skills: list[str] | None = None,
    *,
    skill: list[str] | None = None,
    agent_flags: list[str] | None = None,
    agent: list[str] | None = None,
    global_: bool = False,
    dest: list[str] | None = None,
    force: bool = False,
    link: bool = False,
    list_: bool = False,
    max_file_mb: str | None = None,
    max_total_mb: str | None = None,
    max_files: str | None = None,
    max_depth: str | None = None,
    dry_run: bool = False,
    no_lock: bool = False,
    json_: bool = False,
    quiet: bool = False,
) -> None:
    """Install ``skills`` (bundled names, folders, hf:// addresses) into the targets the
    agent flags, --agent, --dest and --global pick, and print what was done."""
    agent_flags = agent_flags or []
    out, roots = setup(json_, quiet)
    from .. import install
    from ..agents import resolve_targets, twice_warning

    specs, select = split_specs(skills, skill, roots.bundled)
    if list_:
        flags = {
            "agent flags": agent_flags or agent,
            "--global": global_,
            "--dest": dest,
            "--force": force,
            "--link": link,
            "--dry-run": dry_run,
        }
        refuse_with(flags, "--list installs nothing")
        _list_offers(out, roots, specs, max_file_mb, max_total_mb, quiet=quiet or json_, max_files=max_files, max_depth=max_depth)
        return
    targets, note = resolve_targets(
        "add",
        roots.location,
        agents=[*agent_flags, *(agent or [])],
        dests=dest or [],
        global_=global_,
        default_agents=lambda: _configured_agents(roots),
    )
    with sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_, max_files=max_files, max_depth=max_depth) as ctx:
        found = install.skill_sources(specs or [DEFAULT_SKILL], ctx, select)
        plan = install.plan_add(found, targets, force=force, link=link)
        places = lock_places(targets, roots, skip=dry_run or no_lock)
        if not dry_run:
            install.apply(plan, state_dir=roots.get_state_dir, force=force)
            plan.notes += lock_added(places, found, targets, roots, specs or [DEFAULT_SKILL])
    plan.notes += source_notes(found) + ([note] if note else [])
    placed: dict[str, list[Path]] = {}
    for action in plan.actions:
        placed.setdefault(action.skill, []).append(action.target.path)
    for skipped in plan.skipped:
        if not skipped.failed:
            placed.setdefault(skipped.skill, []).append(skipped.path.parent)
    twice = twice_warning(placed, roots.location)
    report_plan(out, plan, roots, command="add", dry_run=dry_run, warnings=[twice] if twice else [])


def _configured_agents(roots: "Roots") -> list[str] | None:
    """The agents `kernels skills config` set as the default targets (read only when asked)."""
    from .. import config

    return config.load(roots.config_file).default_agents


def _list_offers(
    out: "Output",
    roots: "Roots",
    specs: list[str],
    max_file_mb: str | None,
    max_total_mb: str | None,
    *,
    quiet: bool,
    max_files: str | None = None,
    max_depth: str | None = None,
) -> None:
    from ..sources import bundled_names, offers

    with sources(roots, max_file_mb, max_total_mb, quiet=quiet, max_files=max_files, max_depth=max_depth) as ctx:
        rows = [offer for spec in specs or bundled_names(roots.bundled) for offer in offers(spec, ctx)]
    if out.json_mode:
        out.json({"ok": True, "offers": [row.to_json() for row in rows]})
        return
    out.table(
        ["Skill", "Version", "Description", "Install with"],
        [
            [(r.name, "bold"), r.version or "-", r.description if not r.problem else (r.problem, "red"), f"kernels skills add {r.address}"]
            for r in rows
        ],
    )
    if not rows:
        out.line("No skills found.")
