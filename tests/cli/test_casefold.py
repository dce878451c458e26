"""The install and reliability tests again, on a case-insensitive filesystem used as TMPDIR.

macOS (APFS) and Windows (NTFS) are case-insensitive by default; Linux is not. Here a loop
image is mounted as every test's tmp_path: a vfat image (which also brings Windows' name
rules, no symlinks and no Unix modes) or else an ext4 image with ``-O casefold`` and a
``chattr +F`` folder. Where neither can be mounted (no root, no loop device, a kernel
without vfat or CONFIG_UNICODE) every test here skips and says which and why; the fsops
hooks of test_platforms.py and test_reliability.py still simulate the rest.

``KERNEL_SKILLS_TEST_ANY_LOOP_FS=1`` accepts a plain ext4 image when no case-insensitive
one mounts: for checking this module's own plumbing on such a kernel, nothing more.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_skills import fsops

from .conftest import cli, leftovers, skill_files
from .test_add import (  # noqa: F401  (collected here again)
    test_adding_what_is_already_installed_is_a_no_op_that_succeeds,
    test_force_over_user_edits_backs_them_up_outside_the_skills_folder,
    test_one_existing_target_means_no_target_is_written,
)
from .test_reliability import (
    MODES,
    _add_process,
    _check_after_kill,
    _enter_mode,
    _prepare_old_install,
    _user_edit_survives,
    test_interrupt_after_the_swaps_completes_the_change_and_keeps_the_backup,  # noqa: F401  (collected here again)
    test_interrupt_during_the_swaps_rolls_every_target_back,  # noqa: F401
    test_keyboard_interrupt_mid_copy_changes_nothing,  # noqa: F401
    test_kth_file_write_failure_leaves_everything_byte_identical,  # noqa: F401
    test_kth_operation_failure_never_leaves_a_half_tree,  # noqa: F401
    test_recovery_restores_an_old_tree_whose_destination_is_missing,  # noqa: F401
)

_SIZE = "256M"


def _run(*cmd: str) -> str | None:
    """Run a command; None when it worked, else why not (one line)."""
    if shutil.which(cmd[0]) is None:
        return f"{cmd[0]} is not installed"
    done = subprocess.run(list(cmd), check=False, capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return f"{cmd[0]} failed: {lines[0] if lines else f'exit {done.returncode}'}{_kernel_hint(cmd)}"


def _kernel_hint(cmd: tuple[str, ...]) -> str:
    """What the running kernel's config says about vfat and casefold, when it says."""
    if cmd[0] != "mount":
        return ""
    try:
        import gzip

        with gzip.open("/proc/config.gz", "rt") as handle:
            config = handle.read()
    except OSError:
        return ""
    wanted = "CONFIG_VFAT_FS" if "vfat" in " ".join(cmd) or "loop,uid" in " ".join(cmd) else "CONFIG_UNICODE"
    return f" ({wanted} is not set in this kernel)" if f"{wanted}=" not in config else ""


def _case_insensitive(folder: Path) -> bool:
    probe = folder / "CaseProbe"
    probe.write_text("x")
    try:
        return (folder / "caseprobe").exists()
    finally:
        probe.unlink()


def _mount_image(work: Path, mnt: Path) -> tuple[Path | None, list[str]]:
    """Mount a case-insensitive loop image at ``mnt``; (the folder to use, reasons for failures)."""
    reasons: list[str] = []
    image = work / "fs.img"
    attempts = [
        ("vfat", [("truncate", "-s", _SIZE, str(image)), ("mkfs.vfat", "-F", "32", str(image)),
                  ("mount", "-o", "loop,uid=0,gid=0,umask=022,shortname=mixed", str(image), str(mnt))], None),
        ("ext4 casefold", [("truncate", "-s", _SIZE, str(image)), ("mkfs.ext4", "-q", "-F", "-O", "casefold", str(image)),
                           ("mount", "-o", "loop", str(image), str(mnt))], "chattr"),
    ]
    if os.environ.get("KERNEL_SKILLS_TEST_ANY_LOOP_FS"):
        attempts.append(("plain ext4", [("truncate", "-s", _SIZE, str(image)), ("mkfs.ext4", "-q", "-F", str(image)),
                                        ("mount", "-o", "loop", str(image), str(mnt))], None))
    for name, steps, chattr in attempts:
        image.unlink(missing_ok=True)
        why = next((w for step in steps if (w := _run(*step))), None)
        if why:
            reasons.append(f"{name}: {why}")
            continue
        folder = mnt / "t"
        folder.mkdir()
        if chattr and (why := _run("chattr", "+F", str(folder))):
            reasons.append(f"{name}: {why}")
            _run("umount", str(mnt))
            continue
        if name != "plain ext4" and not _case_insensitive(folder):
            reasons.append(f"{name}: mounted but case-sensitive")
            _run("umount", str(mnt))
            continue
        return folder, reasons
    return None, reasons


@pytest.fixture(scope="module")
def casefold_root() -> Iterator[Path]:
    if not sys.platform.startswith("linux"):
        pytest.skip("loop images are mounted on Linux only (macOS and Windows are case-insensitive already)")
    if os.geteuid() != 0:
        pytest.skip("mounting a loop image needs root")
    work = Path(tempfile.mkdtemp(prefix="kernel-skills-casefold-"))
    mnt = work / "mnt"
    mnt.mkdir()
    folder, reasons = _mount_image(work, mnt)
    try:
        if folder is None:
            pytest.skip("no case-insensitive filesystem could be mounted here: " + "; ".join(reasons))
        yield folder
    finally:
        if folder is not None:
            _run("umount", str(mnt))
        shutil.rmtree(work, ignore_errors=True)


_counter = itertools.count()


@pytest.fixture
def tmp_path(casefold_root: Path) -> Path:
    """Every test's tmp_path (and so the whole sandbox) on the case-insensitive image."""
    path = casefold_root / f"test{next(_counter)}"
    path.mkdir()
    return path


# These modes only: the image may have no atomic exchange (vfat has none), and the
# "exchange" assertions of test_reliability are about a filesystem that has one.
@pytest.fixture(params=["two-renames", "windows"])
def swap_mode(request, monkeypatch):
    return _enter_mode(request.param, monkeypatch)


@pytest.fixture(params=["two-renames"])
def slow_swap_mode(request, monkeypatch):
    return _enter_mode(request.param, monkeypatch)


def test_the_image_is_case_insensitive(sandbox, casefold_root):
    assert casefold_root in sandbox.root.parents, "the sandbox must live on the image"
    if os.environ.get("KERNEL_SKILLS_TEST_ANY_LOOP_FS") and not _case_insensitive(sandbox.root):
        pytest.skip("plain ext4 accepted by KERNEL_SKILLS_TEST_ANY_LOOP_FS")
    (sandbox.root / "Folder").mkdir()
    assert (sandbox.root / "FOLDER").is_dir()


def test_one_folder_spelled_in_two_cases_is_installed_once_without_deadlock(sandbox):
    """The macOS report: --dest ~/.Claude/skills and --claude -g are one folder there."""
    (sandbox.home / ".claude/skills").mkdir(parents=True)
    if not (sandbox.home / ".Claude/skills").is_dir():
        pytest.skip("plain ext4 accepted by KERNEL_SKILLS_TEST_ANY_LOOP_FS")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--claude", "-g", "--dest", str(sandbox.home / ".Claude/skills")],
            env=sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled)),
            cwd=sandbox.project,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("add deadlocked on one folder spelled two ways")
    assert done.returncode == 0, done.stderr
    assert os.listdir(sandbox.home / ".claude/skills") == ["demo"]


def test_sigkill_every_third_operation_on_the_image(sandbox):
    """The SIGKILL sweep of test_reliability, Windows-like hooks, every third operation."""
    dest = sandbox.root / "target"
    old = _prepare_old_install(sandbox, dest)
    new = skill_files(sandbox.bundled / "demo")
    n = 0
    while True:
        n += 3
        proc = _add_process(sandbox, dest, f"kill-at={n},{MODES['windows']}")
        proc.communicate(timeout=60)
        if proc.returncode == 0:
            break
        _check_after_kill(sandbox, dest, old, new, "two-renames")
        _user_edit_survives(sandbox, dest, old)
        assert cli("skills", "add", "demo", "--dest", str(dest), "--force", "-q").exit_code == 0
        assert skill_files(dest / "demo") == new and leftovers(dest, sandbox.home) == []
        old = _prepare_old_install(sandbox, dest)
    assert n > 15
    assert fsops.HOOKS == {}
