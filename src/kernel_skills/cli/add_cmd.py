"""`kernels skills add` declared to typer: its options and help. The work is add.add, which the
fast path (fast.py) calls too, so both read the same arguments the same way."""

from typing import Annotated, Any

import typer

from .add import add
from .app import skills_app
from .common import DEFAULT_SKILL
from .compat import Command
from .options import (
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
    NoLockOpt,
    QuietOpt,
    SelectOpt,
    agent_flags,
)


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
    add(
        skills,
        skill=skill,
        agent_flags=agent_flags,
        agent=agent,
        global_=global_,
        dest=dest,
        force=force,
        link=link,
        list_=list_,
        max_file_mb=max_file_mb,
        max_total_mb=max_total_mb,
        max_files=max_files,
        max_depth=max_depth,
        dry_run=dry_run,
        no_lock=no_lock,
        json_=json_,
        quiet=quiet,
    )
