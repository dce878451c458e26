"""Ctrl-C or SIGTERM while the CLI is still starting: one line, JSON with --json, no traceback.

Importing typer and the command modules takes a few tens of milliseconds, before the one
error handler (handler.Root.invoke) is in place. A signal in that window would print a
KeyboardInterrupt traceback (SIGINT) or end the process silently (SIGTERM), and a script
that asked for --json would get no JSON. Importing this module first, when the process
is the `kernels` command itself, installs handlers for that window; :func:`done` (called
as the handler takes over) puts back the usual ones.

Only the command arms this: a program that imports kernel_skills.cli (the tests) keeps its
own signal handling. ``KERNEL_SKILLS_TEST_HOOKS=startup-wait=PATH`` (tests only) creates
PATH once armed and then waits up to 10 s, so that a test can signal inside the window;
``main-wait`` and ``command-wait`` do the same once main() has set its handlers and once the
error handler has taken over (:func:`test_wait`); ``no-fast-path`` makes `kernels skills add`
go through typer every time (cli/fast.py).
"""

import gc
import os
import signal
import sys
import time
from typing import Any

_CODES: dict[int, tuple[int, str]] = {signal.SIGINT: (130, "interrupted")}
for _name in ("SIGTERM", "SIGBREAK"):  # SIGBREAK: Ctrl-Break on Windows, handled as SIGTERM
    if hasattr(signal, _name):
        _CODES[getattr(signal, _name)] = (143, "terminated")
_previous: dict[int, Any] = {}


def _is_the_command() -> bool:
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    if name.endswith(".exe"):
        name = name[:-4]
    return name in ("kernels", "kernel-skills") or (name == "__main__.py" and os.path.basename(os.path.dirname(argv0)) == "kernel_skills")


def _on_signal(signum: int, frame: Any) -> None:
    code, what = _CODES[signum]
    argv = sys.argv[1:]
    argv = argv[: argv.index("--")] if "--" in argv else argv
    try:
        os.write(2, f"Error: {what} while starting. Nothing was changed.\n".encode())
        if "--json" in argv:
            import json  # only here: start-up time is what this module protects

            doc = {"ok": False, "error": {"what": f"{what} while starting", "fix": "Nothing was changed.", "exit_code": code}}
            os.write(1, (json.dumps(doc, indent=2) + "\n").encode())
    finally:
        os._exit(code)  # nothing is half-done yet, and nothing must run after this


def arm() -> None:
    for signum in _CODES:
        _previous[signum] = signal.signal(signum, _on_signal)


def hand_over(signum: int, handler: Any) -> None:
    """Make ``handler`` the command's handler for ``signum``: at once if start-up's is not in
    place, else from :func:`done` on. A handler that raises (handler.on_sigterm) must not run
    before the error handler is there to catch what it raises: click would print "Aborted!"."""
    if signum in _previous and signal.getsignal(signum) is _on_signal:
        _previous[signum] = handler
    else:
        signal.signal(signum, handler)


def done() -> None:
    """The command's own handling starts: Ctrl-C raises KeyboardInterrupt again."""
    while _previous:
        signum, handler = _previous.popitem()
        if signal.getsignal(signum) is _on_signal:  # main() may have set its own (SIGTERM) since
            signal.signal(signum, handler)


def test_hook(hook: str) -> str | None:
    """Tests only: the value of ``hook`` in $KERNEL_SKILLS_TEST_HOOKS ("" for a bare name), or None."""
    hooks = os.environ.get("KERNEL_SKILLS_TEST_HOOKS", "")
    for item in hooks.split(",") if hooks else ():
        key, _, value = item.strip().partition("=")
        if key == hook:
            return value
    return None


def test_wait(hook: str) -> None:
    """Tests only: with ``hook=PATH`` in $KERNEL_SKILLS_TEST_HOOKS, create PATH and wait 10 s."""
    value = test_hook(hook)
    if value:
        with open(value, "w"):
            pass
        time.sleep(10)


if _is_the_command():
    arm()
    if sys.argv[1:3] == ["skills", "add"]:
        # One install, in a process that ends when it is done: the cyclic garbage collector
        # would only pass over what the imports create, ~30 times (a few ms of the ~100 ms
        # an add takes), and find nothing to free. The other commands keep it.
        gc.disable()
    test_wait("startup-wait")
