"""One exclusive lock per skills folder, on every OS, keyed by what the folder *is*.

Two runs that change the same folder take turns; a process that dies (even by SIGKILL)
drops its locks with it, so a killed run never leaves a stale lock. A folder is known by
its ``(st_dev, st_ino)``, never by its spelling: ``~/.Claude/skills`` and
``~/.claude/skills`` on case-insensitive APFS or NTFS, or a bind mount, are one folder and
get one lock (two descriptors on one folder would make the second ``flock`` wait for the
first, held by the same process: a deadlock on itself).

How the lock is held:

- where ``fcntl.flock`` exists (Linux, macOS, BSD): ``flock`` on the folder itself, so no
  file is ever left behind;
- elsewhere (Windows, or the ``no-flock`` test hook): a byte-range lock on a lock file
  ``<lock_dir>/<dev>-<ino>.lock`` (``msvcrt.locking`` on Windows, ``fcntl.lockf`` in the
  Linux simulation). The lock files live in the user state dir, not in the agent's
  folder, which may be committed to git; they are a few bytes each and never deleted,
  because deleting a lock file that another run is waiting on would split the lock.

Locks are taken in the sorted order of their keys, so two runs over the same folders
cannot deadlock each other.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_POLL_S = 0.05  # how often a waiting lock-file lock tries again


def folder_key(path: Path | str) -> str:
    """``dev-ino`` of an existing folder (it follows symlinks), as hex.

    Some filesystems have no stable inode numbers (``st_ino`` 0 on a few Windows ones):
    there the case-folded real path stands in, which is right for the common spellings.
    """
    st = os.stat(path)
    if st.st_ino:
        return f"{st.st_dev:x}-{st.st_ino:x}"
    real = os.path.normcase(os.path.realpath(path)).casefold()
    return "path-" + hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def unique_folders(folders: Iterable[Path]) -> list[tuple[str, Path]]:
    """``(key, folder)`` for each distinct existing folder, sorted by key (the lock order)."""
    seen: dict[str, Path] = {}
    for folder in folders:
        try:
            key = folder_key(folder)
        except OSError:
            continue  # gone or unreadable: there is nothing there to change
        seen.setdefault(key, folder)
    return sorted(seen.items())


def _flock_usable(hooks: Sequence[str]) -> bool:
    if "no-flock" in hooks:
        return False
    try:
        import fcntl
    except ImportError:
        return False
    return hasattr(fcntl, "flock")


def _flock(fd: int) -> None:
    if sys.platform == "win32":  # never called there (_flock_usable); this narrows for mypy
        raise OSError(errno.ENOSYS, "flock is not available on Windows")
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)


def _lock_fd(fd: int) -> None:
    """Block until this process holds an exclusive lock on the first byte of ``fd``'s file."""
    if sys.platform == "win32":
        import msvcrt

        while True:
            os.lseek(fd, 0, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return
            except OSError as exc:  # EACCES / EDEADLOCK: held by another process
                if exc.errno not in (errno.EACCES, errno.EDEADLOCK):
                    raise
            time.sleep(_POLL_S)
    else:
        import fcntl

        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)


@contextmanager
def locked(
    folders: Iterable[Path], lock_dir: Path | Callable[[], Path] | None = None, *, hooks: Sequence[str] = ()
) -> Iterator[list[Path]]:
    """Hold an exclusive lock on each existing folder of ``folders``; yields them, deduplicated.

    ``lock_dir`` holds the lock files where ``flock`` is missing (Windows); without one,
    the system temp folder does; a callable is asked only then (it may consult
    platformdirs). ``hooks``: the fsops test hooks in force.
    """
    unique = unique_folders(folders)
    fds: list[int] = []
    try:
        if _flock_usable(hooks):
            for _key, folder in unique:
                fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                fds.append(fd)
                _flock(fd)
        elif unique:
            if lock_dir is None:
                import tempfile

                where = Path(tempfile.gettempdir()) / "kernel-skills-locks"
            else:
                where = lock_dir() if callable(lock_dir) else lock_dir
            os.makedirs(where, exist_ok=True)
            for key, _folder in unique:
                path = os.path.join(where, key + ".lock")
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
                fds.append(fd)
                if os.fstat(fd).st_size == 0:
                    os.write(fd, b"\0")  # msvcrt locks bytes that exist
                _lock_fd(fd)
        yield [folder for _key, folder in unique]
    finally:
        for fd in fds:
            if sys.platform == "win32" and not _flock_usable(hooks):
                _unlock_fd(fd)  # Windows may release a closed handle's locks only later
            os.close(fd)  # closing drops the lock, on every OS


def _unlock_fd(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass  # not locked (interrupted while waiting): nothing to release
