"""main(): the console script (`kernels`, `kernel-skills`, `python -m kernel_skills`).

A command other than `skills` goes to Hugging Face's `kernels` CLI when its package is
installed (forward.py); `kernels skills add` in the forms fast.py reads runs without typer;
everything else is the typer app (commands.py).
"""

import signal
import sys

from . import forward, startup
from .handler import cannot_print, on_sigterm


def main() -> None:
    argv = sys.argv[1:]
    if not forward.is_ours(argv):
        hf = forward.find()
        if hf is not None:
            sys.exit(forward.run(hf, argv))
    # SIGBREAK: Ctrl-Break on Windows, which would otherwise end the process mid-install.
    # While start-up's handlers are armed they stay (one line, exit 143); the command's take
    # over as the error handler does (startup.done()).
    for name in ("SIGTERM", "SIGBREAK"):
        if hasattr(signal, name):
            startup.hand_over(getattr(signal, name), on_sigterm)
    startup.test_wait("main-wait")
    try:
        from . import fast

        code = fast.run(argv)
        if code is not None:
            sys.exit(code)
        from .commands import app

        app()
    except OSError as exc:
        # Only what click prints before any command runs gets here (help, --version, a usage
        # error); a command's OSError is the error handler's (app.Root.invoke).
        sys.exit(cannot_print(exc))
