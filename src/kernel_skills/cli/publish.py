"""`kernels skills publish`: upload a skill to a Hugging Face Hub repo."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import KernelsError
from .app import skills_app
from .common import bars_wanted, setup
from .compat import Command
from .options import DryRunOpt, JsonOpt, MaxDepthOpt, MaxFileOpt, MaxFilesOpt, MaxTotalOpt, QuietOpt

if TYPE_CHECKING:
    from ..output import Output
    from ..publish import Selection


@skills_app.command(cls=Command, name="publish")
def publish_cmd(
    path: Annotated[str, typer.Argument(metavar="PATH", help="The skill folder to publish (one with SKILL.md).", show_default=False)],
    repo: Annotated[
        str, typer.Option("--repo", metavar="ORG/REPO", help="The Hub repo to upload to (created if missing).", show_default=False)
    ],
    repo_type: Annotated[str, typer.Option("--repo-type", metavar="TYPE", help="model (default) or dataset.")] = "model",
    private: Annotated[bool, typer.Option("--private", help="Create the repo private (an existing repo keeps its visibility).")] = False,
    revision: Annotated[
        str | None,
        typer.Option("--revision", metavar="BRANCH", help="Upload to this branch (created from main if missing).", show_default=False),
    ] = None,
    create_pr: Annotated[
        bool, typer.Option("--create-pr", help="Open a pull request against the default branch instead of pushing.")
    ] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    max_files: MaxFilesOpt = None,
    max_depth: MaxDepthOpt = None,
    dry_run: DryRunOpt = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude", metavar="GLOB", help="Do not send files matching GLOB (gitignore syntax; repeatable).", show_default=False
        ),
    ] = None,
    allow_secret: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-secret", metavar="PATH", help="Send this file although it looks like a secret (repeatable).", show_default=False
        ),
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Upload a skill to a Hugging Face Hub repo, into a folder named after the skill.

    The skill is checked like `add` checks it first. The folder on the Hub is replaced
    as a whole. Needs a token with write access (HF_TOKEN, or `hf auth login`). Prints
    the hf:// address that installs it.

    Sends every file of the folder except .git/, clutter (__pycache__) and what a
    .skillignore at its root (gitignore syntax) or --exclude leaves out. Likely secrets
    (.env*, *.pem, *.key, id_rsa*, credential files, files holding tokens such as hf_...,
    ghp_..., sk-..., AKIA...) are refused unless named with --allow-secret. --dry-run
    lists exactly the files and bytes that would be sent.

    \b
    Examples:
      kernels skills publish ./house-style --repo my-org/skills
      kernels skills publish ./house-style --repo my-org/skills --create-pr
      kernels skills publish ./house-style --repo my-org/skills --revision v2 --private
    """
    out, roots = setup(json_, quiet)
    from .. import hub
    from ..safety import Limits

    if repo_type == "space":
        raise KernelsError("skills cannot be published to a Space (a Space runs an app)", "Use --repo-type model or dataset.", usage=True)
    ref = hub.parse_repo(repo, repo_type)
    limits = Limits.from_options(max_file_mb, max_total_mb, max_files, max_depth)
    folder = Path(os.path.expanduser(path))
    result, selection = hub.publish(
        folder if folder.is_absolute() else roots.location.cwd / folder,
        ref,
        limits=limits,
        private=private,
        revision=revision,
        create_pr=create_pr,
        quiet=not bars_wanted(quiet or json_),
        env=roots.location.env,
        excludes=list(exclude or []),
        allow_secrets=list(allow_secret or []),
        dry_run=dry_run,
    )
    if result is None:  # --dry-run
        _report_dry_run(out, selection, ref.repo_id)
        return
    if out.json_mode:
        listing = selection.to_json()
        out.json(
            {
                "ok": True,
                "command": "publish",
                **result.to_json(),
                "bytes": selection.bytes,
                "sent": listing["files"],
                "excluded": listing["excluded"],
            }
        )
        return
    version = f" {result.version}" if result.version else ""
    out.line(
        ("Published ", "green"),
        (result.name, "bold"),
        f"{version} to {result.ref.repo_id}/{result.name}",
        (f"  (commit {result.commit[:7]}, {result.files} files)", "dim"),
    )
    if result.pr_url:
        out.line(("Pull request: ", "bold"), result.pr_url)
    out.line("Install it with: ", (f"kernels skills add {result.address}", "bold"))


def _report_dry_run(out: "Output", selection: "Selection", repo_id: str) -> None:
    if out.json_mode:
        out.json({"ok": True, "command": "publish", "dry_run": True, **selection.to_json()})
        return
    from ..output import human_size

    for rel, size in selection.files:
        out.line(f"  {rel}", (f"  {size:,} B", "dim"))
    for rel, link in selection.links:
        out.line(f"  {rel} -> {link}")
    for rel in selection.allowed:
        out.warn(f"{rel} looks like a secret and is sent because --allow-secret names it")
    count = len(selection.files) + len(selection.links)
    name = Path(os.path.realpath(selection.folder)).name
    out.line(
        f"Would send {count} files, {selection.bytes:,} bytes ({human_size(selection.bytes)}) to {repo_id}/{name}; "
        f"{len(selection.excluded)} left out.",
        ("  Dry run: nothing was uploaded.", "dim"),
    )
