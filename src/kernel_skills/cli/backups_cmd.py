"""`kernels skills backups`: list, restore and prune the backups of replaced or removed installs."""

import os
from pathlib import Path
from typing import Annotated

import typer

from ..errors import KernelsError
from .app import SETTINGS, skills_app
from .common import setup
from .compat import Command, Group
from .options import DryRunOpt, JsonOpt, QuietOpt

backups_app = typer.Typer(
    cls=Group,
    help="List, restore and prune the backups kernels made of edited installs before replacing or removing them.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=SETTINGS,
)
skills_app.add_typer(backups_app, name="backups")


@backups_app.command(cls=Command, name="list")
def backups_list_cmd(json_: JsonOpt = False, quiet: QuietOpt = False) -> None:
    """List backups, oldest first: ID, skill, where it was, when, size and why.

    A backup is made before --force replaces or removes an install that is not exactly
    what kernels installed. After each command that makes one, the 5 newest of each skill
    at each path are kept (KERNEL_SKILLS_KEEP_BACKUPS=N changes that; 0 keeps all).
    """
    out, roots = setup(json_, quiet)
    from .. import backups
    from ..output import human_size, show_path

    found = backups.find(roots.state_dir)
    folder = backups.root(roots.state_dir)
    if out.json_mode:
        out.json({"ok": True, "folder": str(folder), "backups": [b.to_json() for b in found]})
        return
    if not found:
        out.line(f"No backups in {folder}.")
        return
    out.table(
        ["ID", "Skill", "Was at", "When", "Size", "Why"],
        [
            [
                b.id,
                (b.skill, "bold"),
                show_path(b.target, roots.location) if b.target else "-",
                b.created.astimezone().strftime("%Y-%m-%d %H:%M"),
                human_size(b.size),
                b.why,
            ]
            for b in found
        ],
    )
    out.note(f"{len(found)} backup(s), {human_size(sum(b.size for b in found))}, in {folder}")


@backups_app.command(cls=Command, name="restore")
def backups_restore_cmd(
    backup_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The backup to restore (an ID from `backups list`, or a unique start of one).", show_default=False
        ),
    ],
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="PATH", help="Restore into this skill folder instead of where it was.", show_default=False),
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Put a backup back where it was, in one atomic step; the copy there now is backed up first.

    \b
    Examples:
      kernels skills backups restore cuda-kernels-20260101-120000-1a2b3c4d
      kernels skills backups restore cuda-kernels-2026 --to ./restored/cuda-kernels
    """
    out, roots = setup(json_, quiet)
    from .. import backups
    from ..output import show_path

    dest = None if to is None else Path(os.path.expanduser(to))
    if dest is not None and not dest.is_absolute():
        dest = roots.location.cwd / dest
    done = backups.restore(roots.get_state_dir, backup_id, dest=dest)
    if out.json_mode:
        out.json({"ok": True, "command": "restore", **done.to_json()})
        return
    out.line(("Restored ", "green"), (done.backup.id, "bold"), " → ", show_path(done.dest, roots.location))
    if done.previous_backup:
        out.note(f"the copy that was there is backed up as {done.previous_backup.name}")


@backups_app.command(cls=Command, name="prune")
def backups_prune_cmd(
    keep: Annotated[
        str | None, typer.Option("--keep", metavar="N", help="Keep the N newest backups of each skill at each path.", show_default=False)
    ] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", metavar="DAYS", help="Delete only backups older than DAYS days.", show_default=False)
    ] = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Delete old backups: those beyond the N newest (--keep) and older than DAYS (--older-than).

    With both options a backup must fail both to be deleted.

    \b
    Examples:
      kernels skills backups prune --keep 1
      kernels skills backups prune --older-than 30
    """
    out, roots = setup(json_, quiet)
    from .. import backups
    from ..output import human_size

    gone = backups.prune(roots.state_dir, keep=_whole("--keep", keep), older_than_days=_days("--older-than", older_than), dry_run=dry_run)
    if out.json_mode:
        out.json({"ok": True, "command": "prune", "dry_run": dry_run, "deleted": [b.to_json() for b in gone]})
        return
    verb = "Would delete" if dry_run else "Deleted"
    for backup in gone:
        out.line((f"{verb} ", "yellow"), backup.id, (f"  ({human_size(backup.size)})", "dim"))
    out.line(f"{verb} {len(gone)} backup(s), {human_size(sum(b.size for b in gone))}.")


def _whole(flag: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise KernelsError(f"{flag} must be a whole number of 0 or more, not '{value}'", f"For example {flag} 3.", usage=True)
    return number


def _days(flag: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise KernelsError(f"{flag} must be a number of days of 0 or more, not '{value}'", f"For example {flag} 30.", usage=True)
    return number
