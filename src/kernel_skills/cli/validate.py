"""`kernels skills validate`: check skills against the Agent Skills format."""

from typing import Annotated

import typer

from ..errors import EXIT_FAILURE
from .app import skills_app
from .common import roots, sources
from .compat import Command
from .handler import state
from .options import JsonOpt, MaxDepthOpt, MaxFileOpt, MaxFilesOpt, MaxTotalOpt, QuietOpt, SelectOpt


@skills_app.command(cls=Command, name="validate")
def validate_cmd(
    paths: Annotated[
        list[str], typer.Argument(metavar="PATH", help="Skill folders, folders of skills, or hf:// addresses to check.", show_default=False)
    ],
    skill: SelectOpt = None,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    max_files: MaxFilesOpt = None,
    max_depth: MaxDepthOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Check skills against the Agent Skills format; exit 1 if any has errors.

    Checks SKILL.md's front matter (name, description, optional keys), its length, that
    every relative path the markdown names exists with exact case, that no symlink or
    hard link leads outside the skill, no special files, and the size limits `add`
    applies to skills from folders and the Hub. A folder of skills is checked skill by
    skill (narrow it with --skill).

    \b
    Examples:
      kernels skills validate ./my-skill
      kernels skills validate ./team-skills
      kernels skills validate hf://my-org/skills --skill '*'
    """
    from ..output import Output
    from ..skill import validate_spec

    state["json"] = json_
    out = Output(json_mode=json_, quiet=quiet)
    with sources(roots(), max_file_mb, max_total_mb, quiet=quiet or json_, max_files=max_files, max_depth=max_depth) as ctx:
        reports = [report for path in paths for report in validate_spec(path, ctx, list(skill or []))]
    if out.json_mode:
        out.json({"ok": all(r.ok for r in reports), "results": [r.to_json() for r in reports]})
    for report in reports:
        counts = f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
        if report.ok:
            out.line(("valid", "green bold"), f"  {report.display}", (f"  ({counts})" if report.warnings else "", "dim"))
        else:
            out.error_line(("invalid", "red bold"), f"  {report.display}  ({counts})")
        for problem in report.errors:
            out.error_line(("  error    ", "red"), str(problem))
        for problem in report.warnings:
            out.line(("  warning  ", "yellow"), str(problem))
    if not all(r.ok for r in reports):
        raise typer.Exit(EXIT_FAILURE)
