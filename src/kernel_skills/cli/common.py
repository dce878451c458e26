"""What the commands share: the helpers that set up a command, open a source context and
print an install plan (the options they declare alike are in options.py).

No typer here: the fast path of `kernels skills add` (fast.py) runs these without loading
it. Modules that cost start-up time (rich, yaml, platformdirs, the installer) are imported
inside the functions, so `kernels --help` stays fast.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import KernelsError
from .handler import state

if TYPE_CHECKING:
    from ..install import Plan
    from ..output import Output
    from ..roots import Roots
    from ..sourcetypes import SkillSource, SourceContext

DEFAULT_SKILL = "cuda-kernels"


def setup(json_: bool, quiet: bool) -> "tuple[Output, Roots]":
    """Every command's first line: how to print (and whether errors print JSON), and the roots."""
    from ..output import Output

    state["json"] = json_
    return Output(json_mode=json_, quiet=quiet), roots()


def roots() -> "Roots":
    from ..roots import Roots

    return Roots.from_environment()


@contextmanager
def sources(
    roots: "Roots",
    max_file_mb: str | None = None,
    max_total_mb: str | None = None,
    *,
    quiet: bool = False,
    max_files: str | None = None,
    max_depth: str | None = None,
) -> "Iterator[SourceContext]":
    """The context sources resolve in; trees fetched into its scratch folder are deleted after."""
    from ..safety import Limits
    from ..sources import SourceContext

    ctx = SourceContext(
        roots.bundled,
        roots.location.env,
        cwd=roots.location.cwd,
        limits=Limits.from_options(max_file_mb, max_total_mb, max_files, max_depth),
        quiet=not bars_wanted(quiet),
    )
    try:
        yield ctx
    finally:
        ctx.scratch.close()


def bars_wanted(quiet: bool) -> bool:
    """huggingface_hub's progress bars: on a terminal (like pip's), never with -q or --json."""
    from ..output import isatty

    return not quiet and isatty(sys.stderr)


def refuse_with(flags: dict[str, Any], because: str) -> None:
    """A usage error naming the options that make no sense in this form of the command."""
    given = [name for name, value in flags.items() if value]
    if given:
        raise KernelsError(f"{because}, so it takes no {', '.join(given)}", f"Drop {' and '.join(given)}.", usage=True)


def split_specs(skills: list[str] | None, skill: list[str] | None, bundled: Path) -> tuple[list[str], list[str]]:
    """(SKILL arguments, --skill selectors). With only bundled names given, --skill NAME is
    one more name (the `kernel-builder skills add --skill NAME` form) and --skill '*' means
    every bundled skill; with a folder or an hf:// address, --skill picks skills out of them."""
    from ..skill import check_name
    from ..sources import ALL, bundled_names, kind_of

    specs, select = list(skills or []), list(skill or [])
    if any(kind_of(spec).kind != "bundled" for spec in specs):
        return specs, select
    names = [name for name in select if name != ALL]
    every = bundled_names(bundled) if ALL in select else []
    return list(dict.fromkeys(specs + [check_name(name) for name in names] + every)), []


def source_notes(found: "list[SkillSource]") -> list[str]:
    return [
        f"{source.name}: from {source.display}" + (f" ({source.note})" if source.note else "")
        for source in found
        if source.origin.get("kind") != "bundled"
    ]


def report_plan(out: "Output", plan: "Plan", roots: "Roots", *, command: str, dry_run: bool, warnings: list[str] | None = None) -> None:
    """Print what a plan did (or, with ``dry_run``, would do): lines, or one JSON document
    (``warnings`` print once, after the actions; in JSON they are a ``warnings`` list)."""
    from ..output import show_path

    if out.json_mode:
        actions = [a.to_json() for a in plan.actions]
        if dry_run:  # nothing was staged, so nothing is "linked" yet: say what would be
            for action, data in zip(plan.actions, actions, strict=True):
                if action.link_to is not None:
                    data["link_to"] = str(action.link_to)
        out.json(
            {
                "ok": not any(s.failed for s in plan.skipped),
                "command": command,
                "dry_run": dry_run,
                "actions": actions,
                "skipped": [s.to_json() for s in plan.skipped],
                "notes": plan.notes,
                "warnings": warnings or [],
            }
        )
        return
    loc = roots.location
    verbs = {"install": "Installed", "replace": "Replaced", "remove": "Removed"}
    would = {"install": "Would install", "replace": "Would replace", "remove": "Would remove"}
    for action in plan.actions:
        linking = action.linked or (dry_run and action.link_to is not None)
        verb = ("Would link" if dry_run else "Linked") if linking else (would if dry_run else verbs)[action.op]
        where = ", ".join(action.target.agents) or "--dest"
        line: list[Any] = [(f"{verb} ", "green" if not dry_run else "cyan"), (action.skill, "bold"), " → ", show_path(action.dest, loc)]
        if linking and action.link_to is not None:
            line += [" → ", show_path(action.link_to, loc)]
        out.line(*line, (f"  ({where})", "dim"))
        if action.backup_path:
            out.warn(f"{show_path(action.dest, loc)} had local changes; your copy was backed up to {action.backup_path}")
        elif dry_run and action.needs_backup:
            out.note(f"  {show_path(action.dest, loc)} is {action.existing.describe()}; it would be backed up first")
        if action.note:
            out.note(f"  {action.note}")
    for skipped in plan.skipped:
        out.line(("Skipped ", "yellow"), (skipped.skill, "bold"), f" at {show_path(skipped.path, loc)}: {skipped.reason}")
    for note in plan.notes:
        out.note(note)
    for warning in warnings or []:
        out.warn(warning)
    if dry_run:
        out.line(("Dry run: nothing was written.", "dim"))
