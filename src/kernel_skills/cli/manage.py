"""`kernels skills list`, `remove` and `update`: the commands over what is installed."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import EXIT_FAILURE, KernelsError
from .app import skills_app
from .common import DEFAULT_SKILL, refuse_with, report_plan, setup, sources
from .compat import Command
from .handler import report
from .lockhooks import lock_changed, lock_places
from .options import (
    AgentOpt,
    DestOpt,
    DryRunOpt,
    GlobalOnlyOpt,
    GlobalOpt,
    JsonOpt,
    MaxDepthOpt,
    MaxFileOpt,
    MaxFilesOpt,
    MaxTotalOpt,
    NoLockOpt,
    QuietOpt,
    agent_flags,
)

if TYPE_CHECKING:
    from ..install import Installed


@skills_app.command(cls=Command, name="list")
@agent_flags
def list_cmd(
    agent_flags: Any = None,
    agent: AgentOpt = None,
    global_: GlobalOnlyOpt = False,
    dest: DestOpt = None,
    available: Annotated[bool, typer.Option("--available", "-a", help="List the skills this package can install instead.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """List installed skills in every agent's project and user folders.

    Shows each install's version and state: managed (installed by kernels) or not,
    edited since install or clean, current or outdated against the bundled version.

    \b
    Examples:
      kernels skills list
      kernels skills list --available
    """
    out, roots = setup(json_, quiet)
    from .. import install
    from ..agents import resolve_targets
    from ..output import show_path
    from ..skill import read_info
    from ..sources import bundled_names

    if available:
        refuse_with({"agent flags": agent_flags or agent, "--global": global_, "--dest": dest}, "--available lists what this package ships")
        rows: list[dict[str, Any]] = []
        for name in bundled_names(roots.bundled):
            try:
                info = read_info(roots.bundled / name)
                rows.append({"name": name, "version": info.version, "description": info.description, "path": str(roots.bundled / name)})
            except KernelsError as exc:
                rows.append({"name": name, "version": None, "description": f"(unreadable: {exc.what})", "path": str(roots.bundled / name)})
        if out.json_mode:
            out.json({"ok": True, "available": rows})
        else:
            out.table(["Skill", "Version", "Description"], [[(r["name"], "bold"), r["version"] or "-", r["description"]] for r in rows])
            if not rows:
                out.line(f"No bundled skills found in {roots.bundled}.")
        return

    loc = roots.location
    targets, _ = resolve_targets("list", loc, agents=[*agent_flags, *(agent or [])], dests=dest or [], global_=global_)
    installs = install.find_installs(targets)
    install.source_digests(installs, roots.sources)
    unreadable = [i for i in installs if i.problem]
    if out.json_mode:
        out.json({"ok": not unreadable, "installed": [i.to_json() for i in installs]})
    elif not installs:
        out.line(f"No skills installed in the agents' folders. Install one with `kernels skills add {DEFAULT_SKILL}`.")
    else:
        table: list[list[str | tuple[str, str]]] = [
            [
                (item.name, "bold"),
                item.version or "-",
                _state_cell(item),
                ", ".join(item.target.agents) or "--dest",
                show_path(item.path, loc),
            ]
            for item in installs
        ]
        out.table(["Skill", "Version", "State", "Agents", "Path"], table)
    if unreadable:
        # Every install was listed; the exit code still tells a script that some could not be read.
        first = unreadable[0].problem or ""
        raise typer.Exit(
            report(
                f"{len(unreadable)} of the listed installs could not be read ({first})",
                "Check their permissions.",
                EXIT_FAILURE,
                json_doc=False,
            )
        )


def _state_cell(item: "Installed") -> tuple[str, str]:
    if item.problem:
        return ("unreadable", "red")
    if item.kind == "broken-link":
        return (f"broken link to {item.link_target}", "red")
    if item.kind == "link":
        return (f"link to {item.link_target}", "cyan")
    if not item.managed:
        return ("unmanaged (damaged receipt)", "red") if item.damaged_receipt else ("unmanaged", "dim")
    edited = "edited" if item.changes else "clean"
    status = item.status or "unknown"
    style = "yellow" if item.changes or status != "current" else "green"
    return (f"{edited}, {status}", style)


@skills_app.command(cls=Command, name="remove")
@agent_flags
def remove_cmd(
    skills: Annotated[list[str], typer.Argument(metavar="SKILL", help="Skills to remove.", show_default=False)],
    agent_flags: Any = None,
    agent: AgentOpt = None,
    global_: GlobalOpt = False,
    dest: DestOpt = None,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Also remove edited or unmanaged copies (backed up first) and foreign symlinks.")
    ] = False,
    dry_run: DryRunOpt = False,
    no_lock: NoLockOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Remove installed skills (from every agent's project folder, unless narrowed).

    Only installs that kernels made and that are unedited are removed without --force.
    A symlink is removed as a link; the folder it points to is never touched.

    \b
    Examples:
      kernels skills remove cuda-kernels
      kernels skills remove cuda-kernels --global --claude
    """
    out, roots = setup(json_, quiet)
    from .. import install
    from ..agents import known_targets, resolve_targets

    picked = [*agent_flags, *(agent or [])]
    targets, _ = resolve_targets("remove", roots.location, agents=picked, dests=dest or [], global_=global_)
    # The other scope, only to say where a skill is when it is not where the command looked.
    elsewhere = [] if dest else resolve_targets("remove", roots.location, agents=picked, global_=not global_)[0]
    plan = install.plan_remove(skills, targets, force=force, elsewhere=elsewhere)
    places = lock_places([a.target for a in plan.actions], roots, skip=dry_run or no_lock)
    if not dry_run:
        install.apply(plan, state_dir=roots.get_state_dir, force=force)
        plan.notes += lock_changed(places, plan, roots)
        removed = [a.dest for a in plan.actions if a.existing.kind == "dir"]
        for link in install.links_into(removed, known_targets(roots.location)) if removed else ():
            plan.notes.append(f"{link} linked to a removed copy and is now broken; remove it with --dest {link.parent} --force")
    report_plan(out, plan, roots, command="remove", dry_run=dry_run)


@skills_app.command(cls=Command, name="update")
@agent_flags
def update_cmd(
    skills: Annotated[
        list[str] | None, typer.Argument(metavar="SKILL", help="Skills to update (default: all managed ones).", show_default=False)
    ] = None,
    agent_flags: Any = None,
    agent: AgentOpt = None,
    global_: GlobalOnlyOpt = False,
    dest: DestOpt = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Also update edited installs (backed up first).")] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    max_files: MaxFilesOpt = None,
    max_depth: MaxDepthOpt = None,
    dry_run: DryRunOpt = False,
    no_lock: NoLockOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Re-install managed skills whose source changed.

    A bundled skill updates when this package ships a new version, a folder's skill when
    its files changed, a Hub skill when its branch or tag moved to a new commit (one
    pinned to a commit sha never moves). Looks in every agent's project and user folders
    unless narrowed. Installs with local edits are skipped (and listed) unless --force,
    which backs the edits up first.

    \b
    Examples:
      kernels skills update
      kernels skills update --dry-run                   # what would change
      kernels skills update cuda-kernels --claude --force
    """
    out, roots = setup(json_, quiet)
    from .. import install
    from ..agents import resolve_targets

    targets, _ = resolve_targets("update", roots.location, agents=[*agent_flags, *(agent or [])], dests=dest or [], global_=global_)
    with sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_, max_files=max_files, max_depth=max_depth) as ctx:
        plan = install.plan_update(targets, ctx, names=skills, force=force)
        places = lock_places([a.target for a in plan.actions], roots, skip=dry_run or no_lock)
        if not dry_run:
            install.apply(plan, state_dir=roots.get_state_dir, force=True)
            plan.notes += lock_changed(places, plan, roots)
    report_plan(out, plan, roots, command="update", dry_run=dry_run)
    if not plan.actions and not plan.skipped and not out.json_mode:
        out.line("No managed skills found to update.")
    failed = [s for s in plan.skipped if s.failed]
    if failed:
        # The others were updated; CI must still see that these were not even checked.
        # With --json the document above already says ok: false and which failed; stderr
        # still gets the one-line error, as for every other failure.
        names = ", ".join(dict.fromkeys(s.skill for s in failed))
        where = "in the JSON's skipped[].reason" if out.json_mode else "above"
        report(
            f"could not update {names}", f"Fix the source named {where} and re-run `kernels skills update`.", EXIT_FAILURE, json_doc=False
        )
        raise typer.Exit(EXIT_FAILURE)
