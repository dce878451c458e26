"""`kernels skills sync`: make every target match skills-lock.json (the core is ..sync)."""

from typing import Annotated

import typer

from .app import skills_app
from .common import report_plan, setup, sources
from .compat import Command
from .lockhooks import lock_place
from .options import DryRunOpt, JsonOpt, MaxFileOpt, MaxTotalOpt, QuietOpt


@skills_app.command(cls=Command, name="sync")
def sync_cmd(
    frozen: Annotated[
        bool, typer.Option("--frozen", help="Never re-resolve: fail (exit 1) if a source no longer provides a locked tree.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Also remove managed installs the lock does not list (never folders kernels did not install).")
    ] = False,
    global_: Annotated[
        bool, typer.Option("--global", "-g", help="Sync the user-level lock (the agents' user-wide folders) instead.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", "-f", help="Also replace edited or unmanaged copies (backed up first).")] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Make every agent folder match skills-lock.json.

    Installs what is missing, replaces clean installs that differ, leaves matching ones
    untouched (nothing is written when everything matches). Hub skills are fetched at the
    locked commit, and any tree whose digest differs from the lock is refused. Edited
    installs are refused without --force, backed up with it. The lock is read from the
    current folder (the project root, where .claude/skills and the others are too).

    Without --frozen, a skill whose source no longer provides the locked tree (bundled
    version changed, folder edited, Hub commit gone) is re-resolved and the lock rewritten;
    with --frozen (for CI) that is an error, one line per skill, and nothing is written.

    \b
    Examples:
      kernels skills sync --frozen           # CI: restore exactly what the lock says
      kernels skills sync --dry-run          # what would change
      kernels skills sync --prune            # also remove managed skills not in the lock
    """
    out, roots = setup(json_, quiet)
    from .. import sync
    from ..output import show_path

    place = lock_place(roots, global_)
    with sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_) as ctx:
        try:
            result = sync.plan_sync(place, roots.location, ctx, frozen=frozen, prune=prune, force=force)
        except sync.LockMismatch as exc:
            for line in exc.lines:
                typer.echo(f"mismatch: {line}", err=True)
            raise
        if not dry_run:
            sync.apply_sync(result, state_dir=roots.get_state_dir, force=force)
    plan = result.plan
    if out.json_mode:
        out.json(
            {
                "ok": True,
                "command": "sync",
                "dry_run": dry_run,
                "frozen": frozen,
                "lock": str(place.path),
                "lock_updated": result.lock_changes and not dry_run,
                "actions": [a.to_json() for a in plan.actions],
                "unchanged": [{"skill": name, "path": str(path)} for name, path in result.unchanged],
                "relocked": [r.to_json() for r in result.relocked],
                "notes": plan.notes,
            }
        )
        return
    if not plan.actions and not result.relocked:
        count = len(result.unchanged)
        out.line(f"Everything matches {show_path(place.path, roots.location)} ({count} install{'s' if count != 1 else ''}); nothing to do.")
    for item in result.relocked:
        verb = "Would re-lock" if dry_run else "Re-locked"
        out.line((f"{verb} ", "yellow"), (item.name, "bold"), f": {item.was} → {item.now} ({item.why})")
    report_plan(out, plan, roots, command="sync", dry_run=dry_run)
