"""`kernels skills show`: describe one skill and its files."""

from typing import Annotated

import typer

from ..errors import KernelsError
from .app import skills_app
from .common import setup, sources, split_specs
from .compat import Command
from .options import JsonOpt, MaxDepthOpt, MaxFileOpt, MaxFilesOpt, MaxTotalOpt, SelectOpt


@skills_app.command(cls=Command, name="show")
def show_cmd(
    skill_spec: Annotated[
        str, typer.Argument(metavar="SKILL", help="A bundled skill's name, a folder or an hf:// address.", show_default=False)
    ],
    skill: SelectOpt = None,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    max_files: MaxFilesOpt = None,
    max_depth: MaxDepthOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Describe a skill: description, version and its files with sizes.

    \b
    Examples:
      kernels skills show cuda-kernels
      kernels skills show hf://my-org/skills --skill house-style
    """
    out, roots = setup(json_, False)
    from .. import install
    from ..output import human_size

    specs, select = split_specs([skill_spec], skill, roots.bundled)
    with sources(roots, max_file_mb, max_total_mb, quiet=json_, max_files=max_files, max_depth=max_depth) as ctx:
        found = install.skill_sources(specs, ctx, select)
        if len(found) != 1:
            names = ", ".join(s.name for s in found)
            raise KernelsError(
                f"show describes one skill, and {skill_spec} gives {len(found)} ({names})", "Pick one with --skill NAME.", usage=True
            )
        source = found[0]
        info = source.info
        tree = install.describe_tree(source.path)
    total = sum(row["size"] or 0 for row in tree)
    local = source.origin.get("kind") != "hf"
    if out.json_mode:
        out.json(
            {
                "ok": True,
                "name": info.name,
                "description": info.description,
                "version": info.version,
                "license": info.license,
                "source": dict(source.origin),
                "path": str(source.path) if local else None,
                "files": tree,
                "total_bytes": total,
            }
        )
        return
    where = str(source.path) if local else source.display + (f", {source.note}" if source.note else "")
    out.line((info.name, "bold"), f"  {info.version or 'unversioned'}", (f"  ({source.origin.get('kind')}: {where})", "dim"))
    out.line(info.description)
    if info.license:
        out.line(("License: ", "dim"), info.license)
    files = [row for row in tree if row["kind"] != "dir"]
    out.line(("Files: ", "dim"), f"{len(files)}, {human_size(total)}")
    for row in tree:
        depth = row["path"].count("/")
        name = row["path"].rsplit("/", 1)[-1]
        if row["kind"] == "dir":
            out.line("  " * (depth + 1), (name + "/", "bold blue"))
        else:
            size = human_size(row["size"]) if row["size"] is not None else "link"
            out.line("  " * (depth + 1), name, (f"  {size}", "dim"))
