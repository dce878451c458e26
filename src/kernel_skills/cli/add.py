"""`kernels skills add`: install skills (or, with --list, say what a source offers)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .app import skills_app
from .common import (
    DEFAULT_SKILL,
    AgentOpt,
    DestOpt,
    DryRunOpt,
    ForceOpt,
    GlobalOpt,
    JsonOpt,
    MaxDepthOpt,
    MaxFileOpt,
    MaxFilesOpt,
    MaxTotalOpt,
    QuietOpt,
    SelectOpt,
    agent_flags,
    refuse_with,
    report_plan,
    setup,
    source_notes,
    sources,
    split_specs,
)
from .compat import Command
from .lockhooks import NoLockOpt, lock_added, lock_places

if TYPE_CHECKING:
    from ..output import Output
    from ..roots import Roots


@skills_app.command(cls=Command, name="add")
@agent_flags
def add_cmd(
    skills: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SKILL",
            help=f"What to install (default: {DEFAULT_SKILL}): a bundled skill's name, a folder (./my-skill, or a folder of "
            "skills with --skill), or hf://ORG/REPO[@REVISION][/PATH] (also hf://datasets/..., hf://spaces/...).",
            show_default=False,
        ),
    ] = None,
    skill: SelectOpt = None,
    agent_flags: Any = None,
    agent: AgentOpt = None,
    global_: GlobalOpt = False,
    dest: DestOpt = None,
    force: ForceOpt = False,
    link: Annotated[bool, typer.Option("--link", help="Copy into the first target only; symlink the others to it.")] = False,
    list_: Annotated[
        bool, typer.Option("--list", help="List the skills each SKILL source offers (default: the bundled ones); install nothing.")
    ] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    max_files: MaxFilesOpt = None,
    max_depth: MaxDepthOpt = None,
    dry_run: DryRunOpt = False,
    no_lock: NoLockOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Install skills into agents' skills folders (default: ./.agents/skills).

    Skills from a folder or the Hub are checked before anything is written: no links or
    paths leading out of the skill, no special files, size limits, a valid SKILL.md.
    Adding what is already installed, unedited and identical, succeeds and writes nothing;
    any other existing install needs --force (edited copies are backed up first).
    Project installs are recorded in ./skills-lock.json (--global ones in a user-level
    lock) so `kernels skills sync` can restore them; --no-lock leaves the lock alone.

    \b
    Examples:
      kernels skills add cuda-kernels --claude          # ./.claude/skills/cuda-kernels
      kernels skills add cuda-kernels --global          # ~/.agents/skills, for every project
      kernels skills add --claude --codex --link        # one copy, one symlink
      kernels skills add ./my-skill --claude            # a skill folder of your own
      kernels skills add ./team-skills --skill '*'      # every skill in a folder of skills
      kernels skills add hf://my-org/skills/house-style --claude
      kernels skills add hf://my-org/skills@v1.2 --skill house-style
      kernels skills add --list hf://my-org/skills      # what a repo offers
      kernels skills add --dest ./my-skills --dry-run
    """
    out, roots = setup(json_, quiet)
    from .. import config, install
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
        default_agents=lambda: config.load(roots.config_file).default_agents,
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
