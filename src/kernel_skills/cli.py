"""The `kernels` command line: parse the arguments, call the core, print the result.

No logic lives here. Errors from the core arrive as KernelsError and are turned into
``Error: <what>. <fix>`` and an exit code by one handler (:class:`_Root`). Modules that
cost start-up time (rich, yaml, platformdirs, the installer) are imported inside the
commands, so `kernels --help` stays fast.
"""

import functools
import inspect
from contextlib import contextmanager
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, Optional

import typer

from . import __version__
from .agents import AGENTS, SHARED_AGENT, SHARED_READERS, Location, Target, add_targets, agent_names, dedupe, known_targets, select_targets, user_hint
from .errors import EXIT_FAILURE, KernelsError

DEFAULT_SKILL = "cuda-kernels"
DEBUG_ENV = "KERNELS_DEBUG"
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a C tool whose reader went away

_state = {"json": False}


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so an install in progress rolls back and cleans up."""


def _click_class(name: str) -> tuple[type[BaseException], ...]:
    # typer re-exports (or vendors) click's exception types under its own names: find the
    # class by name among BadParameter's bases instead of importing click.
    return tuple(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == name)


def _click_exceptions() -> tuple[type[BaseException], ...]:
    # These must pass through the handler untouched so click prints usage errors and honours Exit.
    return (typer.Exit, typer.Abort, *_click_class("ClickException"))


def _report(what: str, fix: str, code: int, exc: BaseException | None = None, *, json_doc: bool = True) -> int:
    if os.environ.get(DEBUG_ENV) == "1" and exc is not None:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    message = f"{what}. {fix}" if fix else f"{what}."
    from .output import wants_colour

    prefix = typer.style("Error:", fg="red", bold=True) if wants_colour(sys.stderr) else "Error:"
    typer.echo(f"{prefix} {message}", err=True)
    if _state["json"] and json_doc:
        typer.echo(_dumps({"ok": False, "error": {"what": what, "fix": fix, "exit_code": code}}))
    return code


def _stdout_gone() -> bool:
    """Is stdout a pipe (or socket) whose reader has gone away?"""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True  # no way to tell: the usual source of EPIPE in a CLI is its stdout


def _usage_error_as_json(exc: BaseException) -> None:
    """With --json on the command line, a usage error is also a JSON document on stdout (click
    still prints the usage text on stderr and exits 2), so scripts parse every outcome."""
    argv = _state.get("argv") or []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    if "--json" not in argv or not isinstance(exc, _click_class("UsageError")):
        return
    what = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    fix = "Run the command with --help for its usage."
    typer.echo(_dumps({"ok": False, "error": {"what": what, "fix": fix, "exit_code": 2}}))


def _dumps(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, default=str)


_PLAIN: list[Any] = []


def _plain_coercer() -> Any:
    """A typer RuntimeParam for str and bool parameters, or None if this typer has no such layer."""
    if not _PLAIN:
        try:
            from typer._coercion import RuntimeParam
        except ImportError:
            _PLAIN.append(None)
        else:

            class _Plain(RuntimeParam):
                def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
                    if self.annotation is bool:
                        return bool(value)
                    return [str(v) for v in value] if isinstance(value, (list, tuple)) else str(value)

            _PLAIN.append(_Plain)
    return _PLAIN[0]


def _is_plain(annotation: Any) -> bool:
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Union and len(args) == 1:
        annotation = args[0]
    return annotation in (str, bool) or (typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,))


class _NoPydantic:
    """Skips typer's pydantic coercion for str and bool parameters (all of ours).

    Recent typer releases coerce parameters through a pydantic TypeAdapter; importing
    pydantic for that takes longer than the whole rest of `kernels skills add` (see
    benchmarks/cli_speed.py). Strings and flags need no coercion, so they get a
    pass-through coercer. On a typer without that layer this does nothing.
    """

    def parse_args(self, ctx: Any, args: Any) -> Any:
        plain = _plain_coercer()
        for param in self.get_params(ctx) if plain else ():  # type: ignore[attr-defined]
            descriptor = getattr(param, "type_descriptor", None)
            if getattr(param, "_runtime_param", False) is None and descriptor and _is_plain(descriptor.annotation):
                param._runtime_param = plain(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
        return super().parse_args(ctx, args)  # type: ignore[misc]


class _Command(_NoPydantic, typer.core.TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        # An argument's metavar already says what it takes; recent typer releases append the
        # Python annotation too ("SKILL <list[str]>"), which teaches the reader nothing.
        for param in self.params:
            if isinstance(param, typer.core.TyperArgument) and param.metavar:
                param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
        super().format_help(ctx, formatter)


class _Group(_NoPydantic, typer.core.TyperGroup):
    pass


class _Root(_Group):
    """The one error handler: every command's failure passes through here."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # Kept for usage errors: click raises them before any command has seen --json.
        _state["argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KernelsError as exc:
            code = _report(exc.what, exc.fix, exc.exit_code, exc)
        except BrokenPipeError as exc:
            if not _stdout_gone():
                raise typer.Exit(_report(f"{exc.strerror or exc} (not on stdout)", "A pipe the command wrote to was "
                                         "closed; re-run it.", EXIT_FAILURE, exc))
            # The reader of stdout went away (`... | head`). What the command was asked to do
            # is done, so there is nothing to report on stderr; exit as a SIGPIPE'd tool would,
            # and point stdout at /dev/null so the interpreter's final flush does not fail again.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            code = EXIT_BROKEN_PIPE
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, _Terminated)
            code = _report(
                "terminated" if terminated else "interrupted",
                "Anything half-done was rolled back; re-run the command to do it.",
                EXIT_TERMINATED if terminated else EXIT_INTERRUPTED,
                exc,
            )
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            code = _report(f"{exc.strerror or exc}{where}", "Check that path's permissions and free space, then re-run.", EXIT_FAILURE, exc)
        except Exception as exc:
            if isinstance(exc, _click_exceptions()):
                _usage_error_as_json(exc)
                raise
            code = _report(
                f"unexpected {type(exc).__name__}: {exc}",
                f"This is a bug in kernel-skills; re-run with {DEBUG_ENV}=1 and report the traceback.",
                EXIT_FAILURE,
                exc,
            )
        raise typer.Exit(code)


_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    cls=_Root,
    name="kernels",
    help="Install agent skills (starting with cuda-kernels) into Claude Code, Codex, OpenCode and other coding agents.",
    epilog="Start with: kernels skills add cuda-kernels --claude. Exit codes: 0 done; 1 failed (one 'Error:' line on "
    "stderr); 2 a command-line mistake. With --json, stdout is one JSON document that has \"ok\".",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~0.1 s of start-up
    pretty_exceptions_enable=False,
    context_settings=_SETTINGS,
)
skills_app = typer.Typer(
    cls=_Group,
    help="Install, list, update, remove, check and publish agent skills.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_SETTINGS,
)
app.add_typer(skills_app, name="skills")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kernel-skills {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Show the version and exit.", is_eager=True, callback=_version)
    ] = False,
) -> None:
    """Install agent skills (starting with cuda-kernels) into coding agents.

    Start with: kernels skills add cuda-kernels --claude
    """
    _state["json"] = False


# ------------------------------------------------------------------ shared options

_AGENT_HELP = "Target an agent by name (repeatable): " + ", ".join(agent_names()) + "."
AgentOpt = Annotated[Optional[list[str]], typer.Option("--agent", metavar="NAME", help=_AGENT_HELP, show_default=False)]
GlobalOpt = Annotated[bool, typer.Option("--global", "-g", help="Use the agents' user-wide folders instead of the project's.")]
GlobalOnlyOpt = Annotated[bool, typer.Option("--global", "-g", help="Only the agents' user-wide folders.")]
DestOpt = Annotated[
    Optional[list[str]], typer.Option("--dest", metavar="DIR", help="Also use DIR as a skills folder: DIR/<skill> (repeatable).", show_default=False)
]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Replace existing installs (user-edited ones are backed up first).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", "-n", help="Print what would happen; write nothing.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable JSON result.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
SelectOpt = Annotated[
    Optional[list[str]],
    typer.Option("--skill", metavar="NAME", help="Pick skills from a folder of skills or a Hub repo (repeatable; '*' = all of them).", show_default=False),
]
# Plain strings, parsed by safety.Limits: a float option would make typer import pydantic.
MaxFileOpt = Annotated[
    Optional[str],
    typer.Option("--max-file-mb", metavar="MB", help="Refuse a skill from a folder or the Hub holding a file over MB megabytes (default 10).", show_default=False),
]
MaxTotalOpt = Annotated[
    Optional[str],
    typer.Option("--max-total-mb", metavar="MB", help="Refuse a skill from a folder or the Hub over MB megabytes in all (default 50).", show_default=False),
]


def agent_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command one --<agent> flag per row of the agent table.

    The command declares a parameter ``agent_flags``; it receives the names of the flags
    that were given. Adding a row to agents.AGENTS adds the flag everywhere.
    """
    signature = inspect.signature(func)
    flags = [
        inspect.Parameter(
            f"agent_{agent.name}",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=False,
            annotation=Annotated[
                bool, typer.Option(f"--{agent.name}", help=f"{agent.label}: {agent.project} (global: {user_hint(agent)}).")
            ],
        )
        for agent in AGENTS
    ]
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        params += flags if param.name == "agent_flags" else [param]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        picked = [agent.name for agent in AGENTS if kwargs.pop(f"agent_{agent.name}", False)]
        return func(agent_flags=picked, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


def _setup(json_: bool, quiet: bool) -> tuple[Any, Any]:
    from .output import Output
    from .roots import Roots

    _state["json"] = json_
    return Output(json_mode=json_, quiet=quiet), Roots.from_environment()


@contextmanager
def _sources(roots: Any, max_file_mb: Optional[str] = None, max_total_mb: Optional[str] = None, *, quiet: bool = False) -> Iterator[Any]:
    """The context sources resolve in; trees fetched into its scratch folder are deleted after."""
    from .safety import Limits
    from .sources import SourceContext

    ctx = SourceContext(
        roots.bundled,
        roots.location.env,
        cwd=roots.location.cwd,
        limits=Limits.from_options(max_file_mb, max_total_mb),
        quiet=not _bars_wanted(quiet),
    )
    try:
        yield ctx
    finally:
        ctx.scratch.close()


def _bars_wanted(quiet: bool) -> bool:
    """huggingface_hub's progress bars: on a terminal (like pip's), never with -q or --json."""
    from .output import isatty

    return not quiet and isatty(sys.stderr)


def _dest_paths(dest: Optional[list[str]]) -> list[Path]:
    """--dest values as paths; an empty one is a mistake (it would mean the current folder)."""
    if any(not d.strip() for d in dest or []):
        raise KernelsError("--dest was given an empty path", "Name a folder, e.g. --dest ./skills (--dest . for this one).", usage=True)
    return [Path(d).expanduser() for d in dest or []]


def _global_needs_agents(global_: bool, picked: list[str], dests: list[Path]) -> None:
    if global_ and dests and not picked:
        raise KernelsError("--global picks the agents' user-wide folders, and only --dest folders were given",
                           "Drop --global, or add the agents whose user folders you mean (--claude, ...).", usage=True)


def _refuse_with(flags: dict[str, Any], because: str) -> None:
    """A usage error naming the options that make no sense in this form of the command."""
    given = [name for name, value in flags.items() if value]
    if given:
        raise KernelsError(f"{because}, so it takes no {', '.join(given)}", f"Drop {' and '.join(given)}.", usage=True)


def _split_specs(skills: Optional[list[str]], skill: Optional[list[str]], bundled: Path) -> tuple[list[str], list[str]]:
    """(SKILL arguments, --skill selectors). With only bundled names given, --skill NAME is
    one more name (the `kernel-builder skills add --skill NAME` form) and --skill '*' means
    every bundled skill; with a folder or an hf:// address, --skill picks skills out of them."""
    from .skill import check_name
    from .sources import ALL, bundled_names, kind_of

    specs, select = list(skills or []), list(skill or [])
    if any(kind_of(spec).kind != "bundled" for spec in specs):
        return specs, select
    names = [name for name in select if name != ALL]
    every = bundled_names(bundled) if ALL in select else []
    return list(dict.fromkeys(specs + [check_name(name) for name in names] + every)), []


def _source_notes(found: Any) -> list[str]:
    return [
        f"{source.name}: from {source.display}" + (f" ({source.note})" if source.note else "")
        for source in found
        if source.origin.get("kind") != "bundled"
    ]


def _scan_targets(picked: list[str], loc: Location, *, scopes: tuple[str, ...], dests: list[str]) -> list[Target]:
    """The folders `list` looks in: the named agents' (or every agent's) in ``scopes``, plus every --dest."""
    if picked:
        targets = [t for scope in scopes for t in select_targets(picked, loc, global_=scope == "global")]
    else:
        targets = known_targets(loc, scopes=scopes)
    return dedupe([*targets, *select_targets([], loc, global_=False, dests=_dest_paths(dests))])


def _named_or_every(
    agent_flags: list[str], agent: Optional[list[str]], dest: Optional[list[str]], loc: Location, *, global_: bool, every: tuple[str, ...]
) -> list[Target]:
    """The folders of the agents named (project, or user with -g) and every --dest; with
    none named, every agent's folders in the ``every`` scopes (only user ones with -g)."""
    picked = [*agent_flags, *(agent or [])]
    dests = _dest_paths(dest)
    _global_needs_agents(global_, picked, dests)
    if picked or dests:
        return select_targets(picked, loc, global_=global_, dests=dests)
    return known_targets(loc, scopes=("global",) if global_ else every)


def _report_plan(out: Any, plan: Any, roots: Any, *, command: str, dry_run: bool) -> None:
    from .output import show_path

    if out.json_mode:
        actions = [a.to_json() for a in plan.actions]
        if dry_run:  # nothing was staged, so nothing is "linked" yet: say what would be
            for action, data in zip(plan.actions, actions):
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
    if dry_run:
        out.line(("Dry run: nothing was written.", "dim"))


# ------------------------------------------------------------------------ commands


@skills_app.command(cls=_Command, name="add")
@agent_flags
def add_cmd(
    skills: Annotated[
        Optional[list[str]],
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
    list_: Annotated[bool, typer.Option("--list", help="List the skills each SKILL source offers (default: the bundled ones); install nothing.")] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Install skills into agents' skills folders (default: ./.agents/skills).

    Skills from a folder or the Hub are checked before anything is written: no links or
    paths leading out of the skill, no special files, size limits, a valid SKILL.md.
    Adding what is already installed, unedited and identical, succeeds and writes nothing;
    any other existing install needs --force (edited copies are backed up first).

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
    out, roots = _setup(json_, quiet)
    from . import config, install

    specs, select = _split_specs(skills, skill, roots.bundled)
    if list_:
        flags = {"agent flags": agent_flags or agent, "--global": global_, "--dest": dest, "--force": force, "--link": link,
                 "--dry-run": dry_run}
        _refuse_with(flags, "--list installs nothing")
        _list_offers(out, roots, specs, max_file_mb, max_total_mb, quiet=quiet or json_)
        return
    picked = [*agent_flags, *(agent or [])]
    dests = _dest_paths(dest)
    _global_needs_agents(global_, picked, dests)
    defaults = None if picked or dests else config.load(roots.config_file).default_agents
    targets, note = add_targets(picked, roots.location, global_=global_, dests=dests, default_agents=defaults)
    with _sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_) as ctx:
        found = install.skill_sources(specs or [DEFAULT_SKILL], ctx, select)
        plan = install.plan_add(found, targets, force=force, link=link)
        if not dry_run:
            install.apply(plan, state_dir=roots.get_state_dir, force=force)
    plan.notes += _source_notes(found) + ([note] if note else [])
    _report_plan(out, plan, roots, command="add", dry_run=dry_run)


def _list_offers(out: Any, roots: Any, specs: list[str], max_file_mb: Optional[str], max_total_mb: Optional[str], *, quiet: bool) -> None:
    from .sources import bundled_names, offers

    with _sources(roots, max_file_mb, max_total_mb, quiet=quiet) as ctx:
        rows = [offer for spec in specs or bundled_names(roots.bundled) for offer in offers(spec, ctx)]
    if out.json_mode:
        out.json({"ok": True, "offers": [row.to_json() for row in rows]})
        return
    out.table(
        ["Skill", "Version", "Description", "Install with"],
        [[(r.name, "bold"), r.version or "-", r.description if not r.problem else (r.problem, "red"), f"kernels skills add {r.address}"] for r in rows],
    )
    if not rows:
        out.line("No skills found.")


@skills_app.command(cls=_Command, name="list")
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
    out, roots = _setup(json_, quiet)
    from . import install
    from .output import show_path
    from .skill import read_info
    from .sources import bundled_names

    if available:
        _refuse_with({"agent flags": agent_flags or agent, "--global": global_, "--dest": dest},
                     "--available lists what this package ships")
        rows = []
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
    scopes = ("global",) if global_ else ("project", "global")
    targets = _scan_targets([*agent_flags, *(agent or [])], loc, scopes=scopes, dests=list(dest or []))
    installs = install.find_installs(targets)
    install.source_digests(installs, roots.sources)
    if out.json_mode:
        out.json({"ok": True, "installed": [i.to_json() for i in installs]})
        return
    if not installs:
        out.line(f"No skills installed in the agents' folders. Install one with `kernels skills add {DEFAULT_SKILL}`.")
        return
    rows = []
    for item in installs:
        rows.append([(item.name, "bold"), item.version or "-", _state_cell(item), ", ".join(item.target.agents) or "--dest", show_path(item.path, loc)])
    out.table(["Skill", "Version", "State", "Agents", "Path"], rows)


def _state_cell(item: Any) -> tuple[str, str]:
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


@skills_app.command(cls=_Command, name="remove")
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
    out, roots = _setup(json_, quiet)
    from . import install

    targets = _named_or_every(agent_flags, agent, dest, roots.location, global_=global_, every=("project",))
    # The other scope, only to say where a skill is when it is not where the command looked.
    elsewhere = [] if dest else _named_or_every(agent_flags, agent, None, roots.location, global_=not global_,
                                                every=("project",))
    plan = install.plan_remove(skills, targets, force=force, elsewhere=elsewhere)
    if not dry_run:
        install.apply(plan, state_dir=roots.get_state_dir, force=force)
        removed = [a.dest for a in plan.actions if a.existing.kind == "dir"]
        for link in install.links_into(removed, known_targets(roots.location)) if removed else ():
            plan.notes.append(f"{link} linked to a removed copy and is now broken; remove it with --dest {link.parent} --force")
    _report_plan(out, plan, roots, command="remove", dry_run=dry_run)


@skills_app.command(cls=_Command, name="update")
@agent_flags
def update_cmd(
    skills: Annotated[
        Optional[list[str]], typer.Argument(metavar="SKILL", help="Skills to update (default: all managed ones).", show_default=False)
    ] = None,
    agent_flags: Any = None,
    agent: AgentOpt = None,
    global_: GlobalOnlyOpt = False,
    dest: DestOpt = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Also update edited installs (backed up first).")] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    dry_run: DryRunOpt = False,
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
    out, roots = _setup(json_, quiet)
    from . import install

    targets = _named_or_every(agent_flags, agent, dest, roots.location, global_=global_, every=("project", "global"))
    with _sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_) as ctx:
        plan = install.plan_update(targets, ctx, names=skills, force=force)
        if not dry_run:
            install.apply(plan, state_dir=roots.get_state_dir, force=True)
    _report_plan(out, plan, roots, command="update", dry_run=dry_run)
    if not plan.actions and not plan.skipped and not out.json_mode:
        out.line("No managed skills found to update.")
    failed = [s for s in plan.skipped if s.failed]
    if failed:
        # The others were updated; CI must still see that these were not even checked.
        # With --json the document above already says ok: false and which failed; stderr
        # still gets the one-line error, as for every other failure.
        names = ", ".join(dict.fromkeys(s.skill for s in failed))
        where = "in the JSON's skipped[].reason" if out.json_mode else "above"
        _report(f"could not update {names}", f"Fix the source named {where} and re-run `kernels skills update`.",
                EXIT_FAILURE, json_doc=False)
        raise typer.Exit(EXIT_FAILURE)


@skills_app.command(cls=_Command, name="show")
def show_cmd(
    skill_spec: Annotated[
        str, typer.Argument(metavar="SKILL", help="A bundled skill's name, a folder or an hf:// address.", show_default=False)
    ],
    skill: SelectOpt = None,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Describe a skill: description, version and its files with sizes.

    \b
    Examples:
      kernels skills show cuda-kernels
      kernels skills show hf://my-org/skills --skill house-style
    """
    out, roots = _setup(json_, False)
    from . import install
    from .output import human_size

    specs, select = _split_specs([skill_spec], skill, roots.bundled)
    with _sources(roots, max_file_mb, max_total_mb, quiet=json_) as ctx:
        found = install.skill_sources(specs, ctx, select)
        if len(found) != 1:
            names = ", ".join(s.name for s in found)
            raise KernelsError(f"show describes one skill, and {skill_spec} gives {len(found)} ({names})", "Pick one with --skill NAME.", usage=True)
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


@skills_app.command(cls=_Command, name="validate")
def validate_cmd(
    paths: Annotated[
        list[str], typer.Argument(metavar="PATH", help="Skill folders, folders of skills, or hf:// addresses to check.", show_default=False)
    ],
    skill: SelectOpt = None,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
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
    from .output import Output

    _state["json"] = json_
    out = Output(json_mode=json_, quiet=quiet)
    roots = _roots()
    with _sources(roots, max_file_mb, max_total_mb, quiet=quiet or json_) as ctx:
        reports = [report for path in paths for report in _validate_one(path, ctx, list(skill or []))]
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


def _roots() -> Any:
    from .roots import Roots

    return Roots.from_environment()


def _validate_one(spec: str, ctx: Any, select: list[str]) -> list[Any]:
    """Reports for one PATH argument: a skill, each skill of a folder of skills, or a Hub address."""
    from . import sources
    from .safety import Refused, problems
    from .skill import SKILL_FILE, Report, validate

    if sources.HubRepo().matches(spec):
        try:
            found = sources.resolve(spec, ctx, select or [sources.ALL])
        except Refused as exc:
            report = Report(Path(spec), label=spec)
            report.error(exc.path, exc.problem)
            return [report]
        reports = []
        for source in found:
            report = validate(source.path)
            report.label = source.display
            reports.append(report)
        return reports
    path = ctx.local_path(spec)
    names = sources.bundled_names(path) if path.is_dir() and not (path / SKILL_FILE).exists() else []
    if names:
        picked = sources.choose(names, select or [sources.ALL], label=spec, single=False)
        folders = [(path / name, os.path.join(spec, name)) for name in picked]
    else:
        folders = [(path, spec)]
    reports = []
    for folder, label in folders:
        report = validate(folder)
        report.label = label
        if folder.is_dir():
            seen = {p.path for p in report.errors}
            for problem in problems(folder, label, ctx.limits):
                if problem.path not in seen:
                    report.error(problem.path, problem.problem)
        reports.append(report)
    return reports


@skills_app.command(cls=_Command, name="publish")
def publish_cmd(
    path: Annotated[str, typer.Argument(metavar="PATH", help="The skill folder to publish (one with SKILL.md).", show_default=False)],
    repo: Annotated[str, typer.Option("--repo", metavar="ORG/REPO", help="The Hub repo to upload to (created if missing).", show_default=False)],
    repo_type: Annotated[str, typer.Option("--repo-type", metavar="TYPE", help="model (default) or dataset.")] = "model",
    private: Annotated[bool, typer.Option("--private", help="Create the repo private (an existing repo keeps its visibility).")] = False,
    revision: Annotated[
        Optional[str], typer.Option("--revision", metavar="BRANCH", help="Upload to this branch (created from main if missing).", show_default=False)
    ] = None,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="Open a pull request against the default branch instead of pushing.")] = False,
    max_file_mb: MaxFileOpt = None,
    max_total_mb: MaxTotalOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Upload a skill to a Hugging Face Hub repo, into a folder named after the skill.

    The skill is checked like `add` checks it first. The folder on the Hub is replaced
    as a whole. Needs a token with write access (HF_TOKEN, or `hf auth login`). Prints
    the hf:// address that installs it.

    \b
    Examples:
      kernels skills publish ./house-style --repo my-org/skills
      kernels skills publish ./house-style --repo my-org/skills --create-pr
      kernels skills publish ./house-style --repo my-org/skills --revision v2 --private
    """
    out, roots = _setup(json_, quiet)
    from . import hub
    from .safety import Limits

    if repo_type == "space":
        raise KernelsError("skills cannot be published to a Space (a Space runs an app)", "Use --repo-type model or dataset.", usage=True)
    ref = hub.parse_repo(repo, repo_type)
    limits = Limits.from_options(max_file_mb, max_total_mb)
    folder = Path(os.path.expanduser(path))
    result = hub.publish(
        folder if folder.is_absolute() else roots.location.cwd / folder,
        ref,
        limits=limits,
        private=private,
        revision=revision,
        create_pr=create_pr,
        quiet=not _bars_wanted(quiet or json_),
        env=roots.location.env,
    )
    if out.json_mode:
        out.json({"ok": True, "command": "publish", **result.to_json()})
        return
    version = f" {result.version}" if result.version else ""
    out.line(("Published ", "green"), (result.name, "bold"), f"{version} to {result.ref.repo_id}/{result.name}", (f"  (commit {result.commit[:7]}, {result.files} files)", "dim"))
    if result.pr_url:
        out.line(("Pull request: ", "bold"), result.pr_url)
    out.line("Install it with: ", (f"kernels skills add {result.address}", "bold"))


@skills_app.command(cls=_Command, name="agents")
def agents_cmd(json_: JsonOpt = False) -> None:
    """Show every supported agent with its project and global skills folders.

    \b
    Example:
      kernels skills agents
    """
    out, roots = _setup(json_, False)
    from . import config
    from .agents import skills_dir
    from .output import show_path

    loc = roots.location
    try:
        defaults = config.load(roots.config_file).default_agents
    except KernelsError:
        defaults = None
    rows = [
        {
            "name": agent.name,
            "agent": agent.label,
            "project": str(skills_dir(agent, loc, global_=False)),
            "global": str(skills_dir(agent, loc, global_=True)),
            "reads_agents_root": agent.reads_shared,
            "default": agent.name in (defaults or [SHARED_AGENT]),
        }
        for agent in AGENTS
    ]
    if out.json_mode:
        out.json({"ok": True, "agents": rows})
        return
    out.table(
        ["Flag", "Agent", "Project folder", "Global folder (-g)", "Reads .agents/skills"],
        [
            [
                (f"--{r['name']}" + (" *" if r["default"] else ""), "bold"),
                r["agent"],
                show_path(Path(r["project"]), loc),
                show_path(Path(r["global"]), loc),
                "yes" if r["reads_agents_root"] else ("no", "yellow"),
            ]
            for r in rows
        ],
    )
    out.line(("* = where `kernels skills add` installs when given no agent flag (`kernels skills config` changes it).", "dim"))


@skills_app.command(cls=_Command, name="config")
def config_cmd(
    key: Annotated[Optional[str], typer.Argument(metavar="KEY", help="Setting to show or change: default_agents.", show_default=False)] = None,
    values: Annotated[Optional[list[str]], typer.Argument(metavar="VALUE", help="New value(s).", show_default=False)] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Remove KEY from the config file.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show or change settings (stored in config.yaml in your user config folder).

    A change rewrites the file: unknown keys are kept, YAML comments are not. A config.yaml
    that is a symlink (dotfiles) is written through the link.

    \b
    Examples:
      kernels skills config                                  # show everything
      kernels skills config default_agents claude agents     # `add` with no flags targets these
      kernels skills config default_agents --unset
    """
    out, roots = _setup(json_, quiet)
    from . import config

    if key is None:
        if values or unset:
            raise KernelsError("--unset and values need a KEY", f"Known keys: {', '.join(config.KEYS)}.", usage=True)
        current = config.load(roots.config_file)
    else:
        config.check_key(key)
        if unset and values:
            raise KernelsError("give either values or --unset, not both",
                               f"`kernels skills config {key} --unset` removes it; `kernels skills config {key} VALUE...` sets it.",
                               usage=True)
        if unset or values:
            current = config.set_value(roots.config_file, key, None if unset else values)
        else:
            current = config.load(roots.config_file)
    if out.json_mode:
        out.json({"ok": True, **current.to_json()})
        return
    agents = current.default_agents
    shown = " ".join(agents) if agents else f"(not set: `add` uses the shared {SHARED_AGENT} root, .agents/skills)"
    out.line(("default_agents: ", "bold"), shown)
    out.line(("config file: ", "dim"), str(current.path))


# ---------------------------------------------------------------------------- entry


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def main() -> None:
    """Console-script entry point (`kernels`, `kernel-skills`, `python -m kernel_skills`)."""
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _on_sigterm)
    app()
