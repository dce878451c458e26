"""Hold Ctrl-C and termination signals across a critical section, on every OS.

A commit step (a rename and the record that it happened) must not be cut in two: a
KeyboardInterrupt between them would leave a tree nobody knows about, and the rollback
would then delete the backup of a user's edited copy. Signals that arrive inside
:func:`deferred` are delivered right after it, so Ctrl-C still works; it just waits for
the step to finish.

On every OS the Python handlers of SIGINT, SIGTERM and SIGBREAK are swapped for ones
that only record the signal, and each recorded signal is raised again, once, after the
old handlers are back. Where ``pthread_sigmask`` exists (Linux, macOS) the main thread
also blocks them, so the kernel holds those sent to it. The handlers are what make it
hold on Windows (no signal masks there, or the ``no-sigmask`` test hook) and in a
process with other threads, where a signal the main thread blocks is delivered to
another thread and its Python handler still runs in the main thread.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any


def signals() -> list[signal.Signals]:
    """The signals a user or a service manager stops a command with, as this OS has them."""
    names = ("SIGINT", "SIGTERM", "SIGBREAK")  # SIGBREAK: Ctrl-Break, Windows only
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


@contextmanager
def deferred(hooks: Sequence[str] = ()) -> Iterator[None]:
    """Run the body with SIGINT/SIGTERM/SIGBREAK held; deliver what arrived afterwards.

    Only the main thread can own signal handling in Python; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    try:
        with _recorded(pending):
            if sys.platform != "win32" and hasattr(signal, "pthread_sigmask") and "no-sigmask" not in hooks:
                old = signal.pthread_sigmask(signal.SIG_BLOCK, signals())
                try:
                    yield
                finally:
                    # Unblocked, a held signal runs ``record`` (still installed) or, if
                    # Python gets to it only after the handlers are back, the real handler.
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
            else:
                yield
    finally:
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


@contextmanager
def _recorded(pending: list[int]) -> Iterator[None]:
    def record(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous: dict[signal.Signals, Any] = {}
    try:
        for signum in signals():
            previous[signum] = signal.signal(signum, record)
        yield
    finally:
        for signum, handler in previous.items():
            # None: a handler installed outside Python; the default is the closest we can restore.
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
