"""`kernels skills outdated`: what is behind its source, with an exit code CI can gate on."""

from typing import Annotated

import typer

from ..errors import EXIT_FAILURE
from .app import skills_app
from .common import setup, sources
from .compat import Command
from .handler import report
from .lockhooks import lock_place
from .options import JsonOpt, QuietOpt


@skills_app.command(cls=Command, name="outdated")
def outdated_cmd(
    global_: Annotated[
        bool, typer.Option("--global", "-g", help="Check the user-level lock and the agents' user-wide folders instead.")
    ] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show locked and installed skills whose source has something newer.

    For every skill in ./skills-lock.json and every managed install in the agents'
    project folders: what is installed, the latest its source offers (the bundled
    version, the folder as it is, the commit a Hub branch or tag points to now, asked
    of the Hub) and the state. `kernels skills update` takes the updates (then commit
    the lock).

    \b
    Exit codes (for CI):
      0   everything is current
      10  updates are available
      1   something could not be checked (source gone, Hub unreachable); never "current"
      2   a command-line mistake

    \b
    Examples:
      kernels skills outdated
      kernels skills outdated --json
    """
    out, roots = setup(json_, quiet)
    from .. import outdated

    place = lock_place(roots, global_)
    with sources(roots, quiet=True) as ctx:
        rows = outdated.check(place, roots.location, ctx)
    code = outdated.exit_code(rows)
    if out.json_mode:
        out.json(
            {
                "ok": code != EXIT_FAILURE,
                "updates_available": any(r.state == outdated.OUTDATED for r in rows),
                "exit_code": code,
                "lock": str(place.path),
                "skills": [r.to_json() for r in rows],
            }
        )
    elif rows:
        styles = {outdated.CURRENT: "green", outdated.OUTDATED: "yellow", outdated.ERROR: "red"}
        table: list[list[str | tuple[str, str]]] = [
            [
                (r.skill, "bold"),
                r.installed or "-",
                r.latest or "?",
                (r.state, styles[r.state]),
                r.detail + ("" if r.locked else " (not in the lock)"),
            ]
            for r in rows
        ]
        out.table(["Skill", "Installed", "Latest", "State", "Detail"], table)
    else:
        out.line("No locked or managed skills found.")
    failed = [r.skill for r in rows if r.state == outdated.ERROR]
    if failed:
        report(
            f"could not check {', '.join(failed)}",
            "See the detail column (or the JSON's skills[].detail), fix it and re-run.",
            EXIT_FAILURE,
            json_doc=False,
        )
    if code:
        raise typer.Exit(code)
