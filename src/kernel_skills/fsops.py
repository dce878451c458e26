"""The few filesystem operations an install is made of, each one atomic or undoable.

Everything install.py changes on disk goes through this module, so tests can make the
k-th operation fail, and a test hook can slow every operation down to let a signal land
anywhere. ``$KERNEL_SKILLS_TEST_HOOKS`` (comma-separated, for tests only):
``delay=SECONDS`` sleeps before each operation; ``kill-at=N`` SIGKILLs the process just
before its N-th operation; ``no-exchange`` disables renameat2(RENAME_EXCHANGE) so the
two-rename fallback runs; ``no-flock`` locks with lock files as on Windows
(:mod:`kernel_skills.locking`); ``no-sigmask`` defers signals with recording handlers
as on Windows (:mod:`kernel_skills.interrupts`); ``busy=N`` makes the first N tries of
every rename and delete fail with Windows' sharing violation (WinError 32);
``no-symlinks`` makes every symlink fail as Windows without Developer Mode does
(WinError 1314), and ``junctions`` lets :func:`junction` stand in on Linux.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HOOKS_ENV = "KERNEL_SKILLS_TEST_HOOKS"
_CHUNK = 1 << 20


def _parse_hooks(text: str) -> dict[str, str]:
    hooks: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, _, value = item.partition("=")
        hooks[key] = value
    return hooks


HOOKS = _parse_hooks(os.environ.get(HOOKS_ENV, ""))


_ticks = 0


def _tick() -> None:
    if not HOOKS:
        return
    global _ticks
    _ticks += 1
    if HOOKS.get("kill-at") and _ticks == int(HOOKS["kill-at"]):
        import signal

        # Windows has no SIGKILL; os.kill there ends the process at once whatever the number.
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
    if HOOKS.get("delay"):
        time.sleep(float(HOOKS["delay"]))


# ------------------------------------------------------------------------------ writes


def write_file(src: str, dst: str, mode: int) -> str:
    """Copy ``src`` to a new file ``dst`` byte for byte with ``mode``; return its sha256."""
    return _copy(src, dst, mode)[0]


def copy_file(src: str, dst: str, mode: int) -> tuple[str, str | None]:
    """:func:`write_file`, returning also the sha256 of the text with every CRLF read as LF
    when the file has a CRLF and no NUL byte (else None): a receipt's ``lf_files`` entry,
    without reading the copy back."""
    return _copy(src, dst, mode)


def _copy(src: str, dst: str, mode: int) -> tuple[str, str | None]:
    # Plain file descriptors, not file objects: an install copies hundreds of small files,
    # and a buffered file object costs a few more system calls and objects per file.
    _tick()
    digest = hashlib.sha256()
    binary_flag = getattr(os, "O_BINARY", 0)
    chunks = 0
    first = b""
    carriage = binary = False
    fin = os.open(src, os.O_RDONLY | binary_flag)
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | binary_flag, 0o600)
        with _naming(dst):
            try:
                while chunk := os.read(fin, _CHUNK):
                    digest.update(chunk)
                    _write_all(fd, chunk)
                    chunks += 1
                    first = chunk if chunks == 1 else b""
                    carriage = carriage or b"\r" in chunk
                    binary = binary or b"\0" in chunk
            finally:
                os.close(fd)
    finally:
        os.close(fin)
    _set_mode(dst, mode)
    if not carriage or binary:
        return digest.hexdigest(), None
    if chunks > 1:  # a CRLF may straddle two chunks: read the (rare, large) copy whole
        with open(dst, "rb") as handle:
            first = handle.read()
    lf = hashlib.sha256(first.replace(b"\r\n", b"\n")).hexdigest() if b"\r\n" in first else None
    return digest.hexdigest(), lf


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextmanager
def _naming(path: str) -> Iterator[None]:
    """A failed write or close (ENOSPC, EDQUOT, EIO) names no file; name the one written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise


def write_bytes(dst: str, data: bytes, mode: int = 0o644) -> None:
    """Write a new file ``dst`` (it must not exist yet)."""
    _tick()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(dst, flags, 0o600)
    with _naming(dst), os.fdopen(fd, "wb") as fout:
        fout.write(data)
    _set_mode(dst, mode)


def make_dir(path: str, mode: int = 0o755) -> None:
    _tick()
    os.mkdir(path)
    _set_mode(path, mode)


def make_dirs(path: Path, created: list[Path]) -> None:
    """``mkdir -p``, appending each folder it creates to ``created`` (outermost first) as it
    goes, so that an interrupt half-way still leaves an exact record for undo."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        _tick()
        try:
            os.mkdir(folder)
        except FileExistsError:  # a concurrent run made it first; it is not ours to undo
            if not os.path.isdir(folder):
                raise
            continue
        created.append(folder)


def symlink(target: str, path: str, *, is_dir: bool = True) -> None:
    _tick()
    if "no-symlinks" in HOOKS:
        raise _NoSymlinks(errno.EPERM, "A required privilege is not held by the client", path)
    os.symlink(target, path, target_is_directory=is_dir)  # the flag matters on Windows only


class _NoSymlinks(OSError):
    """What Windows raises for os.symlink without Developer Mode or admin rights."""

    winerror = 1314  # ERROR_PRIVILEGE_NOT_HELD


# Where symlinks cannot be made at all: Windows without the privilege (1314), a
# filesystem without them (FAT, exFAT, some network shares: EPERM, ENOSYS, EOPNOTSUPP).
_NO_SYMLINK_ERRNOS = {errno.EPERM, errno.ENOSYS, getattr(errno, "ENOTSUP", -1), getattr(errno, "EOPNOTSUPP", -1)}


def symlinks_refused(exc: BaseException) -> bool:
    """Did a symlink fail because this system or filesystem does not allow one here?"""
    if isinstance(exc, NotImplementedError):
        return True
    return isinstance(exc, OSError) and (getattr(exc, "winerror", None) == 1314 or exc.errno in _NO_SYMLINK_ERRNOS)


def junction(target: str, path: str) -> None:
    """A Windows directory junction at ``path`` to the absolute folder ``target``.

    Junctions need no privilege, so ``--link`` still links where symlinks are refused.
    The ``junctions`` test hook stands one in on Linux: an absolute symlink, which is what
    a junction amounts to.
    """
    _tick()
    if sys.platform == "win32":
        import _winapi

        _winapi.CreateJunction(target, path)
    elif "junctions" in HOOKS:
        os.symlink(target, path, target_is_directory=True)
    else:
        raise NotImplementedError("junctions exist on Windows only")


IO_REPARSE_TAG_MOUNT_POINT = 0xA0000003


def is_link(path: str | os.PathLike[str]) -> bool:
    """A symlink, or a Windows junction, which ``os.path.islink`` does not count."""
    if os.path.islink(path):
        return True
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return getattr(st, "st_reparse_tag", 0) == IO_REPARSE_TAG_MOUNT_POINT


def chmod(path: str, mode: int) -> None:
    _set_mode(path, mode)


# FAT and exFAT have no Unix modes: Linux's vfat refuses chmod with EPERM, FUSE drivers
# with ENOSYS. A file this run just created is its own, so these mean "no modes here".
_NO_MODES = {errno.EPERM, errno.ENOSYS, getattr(errno, "ENOTSUP", -1), getattr(errno, "EOPNOTSUPP", -1)}


def _set_mode(path: str, mode: int) -> None:
    try:
        os.chmod(path, mode)
    except OSError as exc:
        if exc.errno not in _NO_MODES:
            raise


# ----------------------------------------------------------------------------- renames

# One atomic rename primitive per OS, called through ctypes (the stdlib has neither):
# Linux renameat2(2) (glibc 2.28+) with RENAME_EXCHANGE / RENAME_NOREPLACE, and macOS
# renamex_np(2) (10.12+, sys/stdio.h) with RENAME_SWAP / RENAME_EXCL. Windows has no
# atomic exchange of two folders: it takes the two-rename path, which install.py records
# so that recover() can finish it. A filesystem that refuses the flags (ENOTSUP, EINVAL:
# FAT, some network shares, FUSE) takes the same path.
_AT_FDCWD = -100
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, getattr(errno, "ENOTSUP", -1), getattr(errno, "EOPNOTSUPP", -1)}


class _Rename2:
    """A loaded atomic-rename call: ``call(src, dst, flags)`` returns 0 or -1 (errno set)."""

    def __init__(
        self, name: str, call: Callable[[bytes, bytes, int], int], get_errno: Callable[[], int], exchange: int, noreplace: int
    ) -> None:
        self.name, self.call, self.get_errno = name, call, get_errno
        self.exchange, self.noreplace = exchange, noreplace


_rename2_impl: _Rename2 | None = None
_rename2_loaded = False


def _load_linux() -> _Rename2 | None:
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc < 2.28, musl without it
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def call(src: bytes, dst: bytes, flags: int) -> int:
        return int(fn(_AT_FDCWD, src, _AT_FDCWD, dst, flags))

    return _Rename2("renameat2", call, ctypes.get_errno, exchange=2, noreplace=1)


def _load_darwin() -> _Rename2 | None:
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renamex_np
    except (OSError, AttributeError):  # macOS < 10.12
        return None
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def call(src: bytes, dst: bytes, flags: int) -> int:
        return int(fn(src, dst, flags))

    return _Rename2("renamex_np", call, ctypes.get_errno, exchange=0x2, noreplace=0x4)  # RENAME_SWAP, RENAME_EXCL


_LOADERS: dict[str, Callable[[], _Rename2 | None]] = {"linux": _load_linux, "darwin": _load_darwin}


def _load_rename2() -> _Rename2 | None:
    global _rename2_impl, _rename2_loaded
    if not _rename2_loaded:
        _rename2_loaded = True
        loader = _LOADERS.get("linux" if sys.platform.startswith("linux") else sys.platform)
        _rename2_impl = loader() if loader is not None else None
    return _rename2_impl


def atomic_exchange_available() -> bool:
    """Does this OS have an atomic exchange call at all (filesystems may still refuse it)?"""
    return _load_rename2() is not None


def _rename2(src: str, dst: str, which: str) -> bool:
    """Exchange (``which="exchange"``) or no-replace rename; False when this system or
    filesystem cannot do it."""
    impl = _load_rename2()
    if impl is None:
        return False
    flags = impl.exchange if which == "exchange" else impl.noreplace
    if impl.call(os.fsencode(src), os.fsencode(dst), flags) == 0:
        return True
    err = impl.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), src, None, dst)


def exchange(a: str, b: str) -> bool:
    """Swap two paths in one atomic step; False if unsupported here (use the fallback)."""
    _tick()
    if "no-exchange" in HOOKS:
        return False
    return _rename2(a, b, "exchange")


def rename_noreplace(src: str, dst: str) -> None:
    """Rename ``src`` to ``dst``, failing with FileExistsError if ``dst`` exists."""
    _tick()
    if "no-exchange" not in HOOKS and _rename2(src, dst, "noreplace"):
        return
    # Callers hold the directory lock, so nothing appears between the check and the rename.
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    _when_free(os.rename, src, dst)


def rename(src: str, dst: str) -> None:
    _tick()
    _when_free(os.rename, src, dst)


# -------------------------------------------------------------- files held open (Windows)

# Windows refuses to rename or delete a file another program holds open without
# FILE_SHARE_DELETE (an editor, the agent itself, a virus scanner or the indexer, which
# usually let go within a second): ERROR_SHARING_VIOLATION (32) or ERROR_ACCESS_DENIED (5).
BUSY_WINERRORS = (32, 5)
BUSY_BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # 3.15 s in all, then the error stands


def is_busy(exc: BaseException) -> bool:
    """Is ``exc`` Windows saying that another program holds the file open?"""
    return isinstance(exc, OSError) and getattr(exc, "winerror", None) in BUSY_WINERRORS


class _SimulatedBusy(PermissionError):
    """What Windows raises for a file held open (Python sets ``winerror`` there itself)."""

    winerror = 32


def _busy_error(path: str) -> PermissionError:
    return _SimulatedBusy(errno.EACCES, "The process cannot access the file because it is being used by another process", path)


def _when_free(fn: Callable[..., Any], path: str, *args: Any) -> None:
    """``fn(path, *args)``, tried again with backoff while the file is busy (see above).

    The ``busy=N`` test hook makes the first N tries of every such call fail as Windows
    does, with a 1000-times shorter backoff.
    """
    fake = int(HOOKS.get("busy") or 0)
    scale = 0.001 if "busy" in HOOKS else 1.0
    for attempt in range(len(BUSY_BACKOFF_S) + 1):
        try:
            if attempt < fake:
                raise _busy_error(path)
            fn(path, *args)
            return
        except OSError as exc:
            if not is_busy(exc) or attempt == len(BUSY_BACKOFF_S):
                raise
        time.sleep(BUSY_BACKOFF_S[attempt] * scale)


# ----------------------------------------------------------------------------- removal


def _retry_writable(func: Callable[..., Any], path: str, *_: Any) -> None:
    # A read-only file or folder (chmod -w by the user or a build) must not stop a removal.
    _set_mode(os.path.dirname(path), stat.S_IRWXU)
    if not os.path.islink(path) and os.path.exists(path):
        _set_mode(path, stat.S_IRWXU)
    func(path)


def remove(path: str) -> None:
    """Remove a tree, a file or a link. A symlink or junction is unlinked, never followed."""
    _tick()
    _when_free(_remove, path)


def _remove(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    if is_link(path):
        os.rmdir(path)  # a junction: rmdir removes the link, never what it points to
        return
    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=_retry_writable)
        else:
            shutil.rmtree(path, onerror=_retry_writable)
    except RecursionError:
        # shutil.rmtree recurses once per level before Python 3.12(-ish); a tree a user
        # nested 1,500 folders deep must still go.
        _remove_deep(path)


def _remove_deep(root: str) -> None:
    """rmtree without recursion: empty the folders deepest first."""
    stack = [root]
    while stack:
        folder = stack[-1]
        with os.scandir(folder) as it:
            entries = list(it)
        subfolders = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        if subfolders:
            stack.extend(subfolders)
            continue
        for entry in entries:
            try:
                os.unlink(entry.path)
            except PermissionError:
                _retry_writable(os.unlink, entry.path)
        try:
            os.rmdir(folder)
        except PermissionError:
            _retry_writable(os.rmdir, folder)
        stack.pop()


# ----------------------------------------------------------------------------- locking


@contextmanager
def locked(folders: Iterable[Path], lock_dir: Path | Callable[[], Path] | None = None) -> Iterator[list[Path]]:
    """Hold an exclusive lock on each existing folder; yields them, one per real folder.

    See :mod:`kernel_skills.locking`: ``flock`` on the folder where it exists, a lock file
    in ``lock_dir`` elsewhere (Windows), folders told apart by ``(st_dev, st_ino)``.
    """
    from . import locking

    with locking.locked(folders, lock_dir, hooks=tuple(HOOKS)) as held:
        yield held
