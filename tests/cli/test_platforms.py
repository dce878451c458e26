"""macOS and Windows behaviour, simulated on Linux.

What differs on those systems is reproduced here with the fsops test hooks (no flock, no
atomic exchange, no symlinks, files held open by another program, no pthread_sigmask)
and, where the container allows mounts, with a bind mount (one folder, two spellings,
as ``~/.Claude`` and ``~/.claude`` are on case-insensitive APFS or NTFS).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_skills import fsops, locking
from kernel_skills.errors import KernelsError

from .conftest import cli, leftovers, make_skill, simulate_macos, skill_files


def _mount(*args: str) -> str | None:
    """Run mount(8); the reason it failed, or None."""
    try:
        done = subprocess.run(["mount", *args], check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mount cannot run here: {exc}"
    return None if done.returncode == 0 else f"mount {' '.join(args)} refused: {done.stderr.strip() or done.returncode}"


@pytest.fixture
def alias(sandbox) -> Iterator[tuple[Path, Path]]:
    """(folder, another spelling of it) that realpath cannot unify: a bind mount."""
    real = sandbox.root / "skills"
    other = sandbox.root / "Skills-alias"
    real.mkdir()
    other.mkdir()
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        pytest.skip("bind mounts need root")
    reason = _mount("--bind", str(real), str(other))
    if reason:
        pytest.skip(reason)
    try:
        yield real, other
    finally:
        subprocess.run(["umount", str(other)], check=False, capture_output=True, timeout=30)


def test_one_folder_spelled_two_ways_is_one_folder(alias):
    real, other = alias
    assert os.path.realpath(real) != os.path.realpath(other)
    assert locking.folder_key(real) == locking.folder_key(other)
    assert [k for k, _ in locking.unique_folders([other, real, real])] == [locking.folder_key(real)]


def test_add_to_one_folder_under_two_spellings_does_not_deadlock(sandbox, alias):
    """Before folders were known by (st_dev, st_ino), the second flock on the same folder
    waited for the first, held by the same process: the run hung for ever."""
    real, other = alias
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--dest", str(real), "--dest", str(other), "--json"],
            env=sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled)),
            cwd=sandbox.project,
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("add deadlocked on a folder named twice")
    assert done.returncode == 0, done.stderr
    actions = json.loads(done.stdout)["actions"]
    assert len(actions) == 1, "one folder, one install"
    assert os.listdir(real) == ["demo"]
    assert skill_files(other / "demo") == skill_files(sandbox.bundled / "demo")


@pytest.mark.parametrize("hooks", [{}, {"no-flock": ""}], ids=["flock", "lock-file"])
def test_the_lock_is_taken_once_per_folder_in_process(sandbox, alias, monkeypatch, hooks):
    monkeypatch.setattr(fsops, "HOOKS", hooks)
    real, other = alias
    lock_dir = sandbox.root / "locks"
    with fsops.locked([other, real], lock_dir) as held:
        assert held == [other]
    if hooks:
        assert os.listdir(lock_dir) == [locking.folder_key(real) + ".lock"]
    assert leftovers(real) == []


def test_lock_files_stay_out_of_the_agent_folder(sandbox, monkeypatch):
    monkeypatch.setattr(fsops, "HOOKS", {"no-flock": ""})
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert os.listdir(sandbox.project / ".claude/skills") == ["demo"]
    skills = sandbox.project / ".claude/skills"
    assert os.listdir(sandbox.state / "kernel-skills" / "locks") == [locking.folder_key(skills) + ".lock"]


# ------------------------------------------------- files held open (Windows WinError 32)


def _add_force(sandbox):
    from kernel_skills import install
    from kernel_skills.agents import select_targets

    roots = sandbox.roots
    sources = install.skill_sources(["demo"], roots.sources)
    targets = select_targets(["claude"], roots.location, global_=False)
    return install.apply(install.plan_add(sources, targets, force=True), state_dir=roots.state_dir, force=True)


def _edited_install(sandbox) -> dict[str, bytes]:
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    edited = skill_files(sandbox.project / ".claude/skills/demo")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    return edited


def test_renames_and_deletes_wait_for_a_file_held_open_for_a_moment(sandbox, monkeypatch):
    edited = _edited_install(sandbox)
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "3", "no-exchange": ""})
    plan = _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    (action,) = plan.actions
    assert skill_files(action.backup_path) == edited
    assert leftovers(sandbox.root) == []


def test_a_file_held_open_for_good_fails_with_one_line_and_loses_nothing(sandbox, monkeypatch):
    edited = _edited_install(sandbox)
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "1000", "no-exchange": ""})
    with pytest.raises(KernelsError, match="in use by another program"):
        _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == edited
    monkeypatch.setattr(fsops, "HOOKS", {})  # the other program let go: the next run finishes
    _add_force(sandbox)
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    assert leftovers(sandbox.root) == []


def test_recovery_skips_what_is_held_open_with_a_note_instead_of_failing(sandbox, monkeypatch):
    from kernel_skills import install

    one = sandbox.root / "one"
    two = sandbox.root / "two"
    assert cli("skills", "add", "demo", "--dest", str(one), "--dest", str(two)).exit_code == 0
    for skills in (one, two):
        (skills / ".kernel-skills-tmp").mkdir()
    shutil.copytree(sandbox.bundled / "demo", one / ".kernel-skills-tmp/new-demo-12345678")
    os.rename(two / "demo", two / ".kernel-skills-tmp/old-demo-0badc0de")  # died between two renames
    monkeypatch.setattr(fsops, "HOOKS", {"busy": "1000"})
    notes = install.recover_all([one, two], sandbox.roots.state_dir)
    assert any("left " in n and "new-demo-12345678" in n for n in notes), notes
    assert any(f"could not restore {two / 'demo'}" in n for n in notes), notes
    assert (one / ".kernel-skills-tmp/new-demo-12345678").is_dir()
    monkeypatch.setattr(fsops, "HOOKS", {})
    notes = install.recover_all([one, two], sandbox.roots.state_dir)
    assert any("restored" in n for n in notes)
    assert leftovers(sandbox.root) == []
    assert skill_files(two / "demo") == skill_files(sandbox.bundled / "demo")


def test_busy_is_only_windows_sharing_violations():
    assert fsops.is_busy(fsops._busy_error("x"))
    assert not fsops.is_busy(PermissionError(13, "Permission denied"))  # a real EACCES is not retried
    assert not fsops.is_busy(KeyboardInterrupt())


# ----------------------------------------------------- trees every OS can hold


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("con", "device 'CON'"),
        ("NUL.txt", "device 'NUL'"),
        ("com1.md", "device 'COM1'"),
        ("lpt9", "device 'LPT9'"),
        ("notes:stream", "':'"),
        ("what?.md", "'?'"),
        ('say"hi".md', "'\"'"),
        ("a|b", "'|'"),
        ("a<b>", "'<'"),
        ("star*", "'*'"),
        ("tab\there", "control character"),
        ("bell\x07", "control character"),
        ("trailing.", "ends with a dot or a space"),
        ("trailing ", "ends with a dot or a space"),
    ],
)
def test_names_some_os_cannot_hold_are_refused_on_every_os(sandbox, name, why):
    src = make_skill(sandbox.root / "src", "demo", extra={f"references/{name}": "x\n"})
    result = cli("skills", "add", str(src), "--claude")
    assert result.exit_code == 1
    assert "refused" in result.stderr and why in result.stderr, result.stderr
    assert not (sandbox.project / ".claude").exists()


@pytest.mark.parametrize("name", ["console.md", "nul-terminated.md", "com10", "a.b.c", "con-artist", "ÄÖÜ.md"])
def test_names_that_only_look_reserved_install(sandbox, name):
    src = make_skill(sandbox.root / "src", "demo", extra={f"references/{name}": "x\n"})
    assert cli("skills", "add", str(src), "--claude").exit_code == 0


@pytest.mark.parametrize(("first", "second"), [("Guide.md", "guide.md"), ("caf\u00e9.md", "cafe\u0301.md")], ids=["case", "nfc-nfd"])
def test_paths_equal_but_for_case_or_accents_are_refused(sandbox, first, second):
    src = make_skill(sandbox.root / "src", "demo", extra={f"references/{first}": "1\n", f"references/{second}": "2\n"})
    result = cli("skills", "add", str(src), "--claude")
    assert result.exit_code == 1
    assert "only in case or accents" in result.stderr


def test_hub_listings_follow_the_same_rules():
    from kernel_skills.safety import Limits, Refused, check_listing

    with pytest.raises(Refused, match="device 'AUX'"):
        check_listing({"SKILL.md": 10, "aux.py": 1}, "hf://x", Limits())
    with pytest.raises(Refused, match="only in case"):
        check_listing({"SKILL.md": 10, "README.md": 1, "readme.md": 1}, "hf://x", Limits())
    with pytest.raises(Refused, match="longer than 255 bytes"):  # (Linux cannot even make one to test with)
        check_listing({"SKILL.md": 10, "é" * 128: 1}, "hf://x", Limits())


def test_a_junction_or_reparse_point_is_refused(sandbox, monkeypatch):
    """Junctions are not symlinks to os.path.islink; os.lstat's attributes tell them apart."""
    from kernel_skills.safety import Limits, Refused, check_tree

    src = make_skill(sandbox.root / "src", "demo")
    (src / "elsewhere").mkdir()
    real_lstat = os.lstat

    class WindowsStat:
        def __init__(self, st, reparse):
            self._st, self.st_file_attributes = st, 0x400 if reparse else 0x10

        def __getattr__(self, name):
            return getattr(self._st, name)

    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: WindowsStat(real_lstat(p, *a, **k), str(p).endswith("elsewhere")))
    with pytest.raises(Refused, match="elsewhere is a junction"):
        check_tree(src, "src", Limits())


def test_hard_links_are_found_with_lstat_whatever_scandir_says(sandbox, monkeypatch):
    """DirEntry.stat() has st_nlink 0 on Windows: the check must not depend on it."""
    from kernel_skills.safety import Limits, Refused, check_tree

    src = make_skill(sandbox.root / "src", "demo")
    os.link(src / "assets/blob.bin", sandbox.root / "outside.bin")
    real_scandir = os.scandir

    class WindowsEntry:
        def __init__(self, entry):
            self._entry = entry

        def __getattr__(self, name):
            return getattr(self._entry, name)

        def stat(self, *, follow_symlinks=True):
            st = self._entry.stat(follow_symlinks=follow_symlinks)
            return os.stat_result((st.st_mode, 0, 0, 0, *tuple(st)[4:]))  # st_ino, st_dev, st_nlink: 0

    class WindowsScandir:
        def __init__(self, path):
            self._it = real_scandir(path)

        def __enter__(self):
            return (WindowsEntry(e) for e in self._it)

        def __exit__(self, *exc):
            self._it.close()

    monkeypatch.setattr(os, "scandir", WindowsScandir)
    with pytest.raises(Refused, match="hard link to a file outside"):
        check_tree(src, "src", Limits())


def test_a_path_too_long_for_windows_is_refused_at_plan_time(sandbox, monkeypatch):
    from kernel_skills import portable

    monkeypatch.setattr(portable, "PLATFORM", "win32")
    deep = "/".join(["a-rather-long-folder-name"] * 8) + "/file.md"  # 209 characters
    src = make_skill(sandbox.root / "src", "demo", extra={f"references/{deep}": "x\n"})
    result = cli("skills", "add", str(src), "--dest", str(sandbox.root / "d"))
    assert result.exit_code == 1
    assert "too long a path here" in result.stderr and "over the 259" in result.stderr
    assert not (sandbox.root / "d").exists()
    monkeypatch.setattr(portable, "PLATFORM", "linux")
    assert cli("skills", "add", str(src), "--dest", str(sandbox.root / "d")).exit_code == 0


# ------------------------------------------------------- macOS: renamex_np, simulated


def test_macos_replaces_with_rename_swap_and_installs_with_rename_excl(sandbox, monkeypatch):
    """Over an install, renamex_np(RENAME_SWAP) swaps old and new in one step (the path is
    never missing); a new install uses RENAME_EXCL so a folder that appeared is not replaced."""
    fake = simulate_macos(monkeypatch)
    edited = _edited_install(sandbox)
    fake.flags.clear()
    plan = _add_force(sandbox)
    assert fake.flags == [0x2]  # one swap: no two-rename window
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    assert skill_files(plan.actions[0].backup_path) == edited
    fake.flags.clear()
    assert cli("skills", "add", "demo", "--dest", str(sandbox.root / "new")).exit_code == 0
    assert fake.flags == [0x4]
    assert leftovers(sandbox.root) == []


def test_macos_filesystems_without_rename_swap_fall_back_to_two_renames(sandbox, monkeypatch):
    """ENOTSUP (a FAT stick, an SMB share): the two-rename fallback, same result."""
    fake = simulate_macos(monkeypatch, refuse=errno.ENOTSUP)
    _edited_install(sandbox)
    _add_force(sandbox)
    assert 0x2 in fake.flags
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")
    assert leftovers(sandbox.root) == []


def test_macos_rename_excl_reports_a_folder_that_appeared(sandbox, monkeypatch):
    simulate_macos(monkeypatch)
    (sandbox.root / "a").mkdir()
    (sandbox.root / "b").mkdir()
    with pytest.raises(FileExistsError):
        fsops.rename_noreplace(str(sandbox.root / "a"), str(sandbox.root / "b"))


# ------------------------------------------------------ links where symlinks are refused


def _skill_with_links(sandbox) -> Path:
    src = make_skill(sandbox.root / "src", "demo", extra={"references/deep/note.md": "deep\n"})
    (src / "references/alias.md").symlink_to("guide.md")
    (src / "scripts/refs").symlink_to("../references/deep", target_is_directory=True)
    return src


def test_links_inside_a_skill_are_copied_as_their_targets_where_symlinks_are_refused(sandbox, monkeypatch):
    src = _skill_with_links(sandbox)
    monkeypatch.setattr(fsops, "HOOKS", {"no-symlinks": ""})
    result = cli("skills", "add", str(src), "--claude", "--json")
    assert result.exit_code == 0, result.stderr
    note = json.loads(result.stdout)["actions"][0]["note"]
    assert "references/alias.md" in note and "scripts/refs" in note and "copies" in note
    installed = sandbox.project / ".claude/skills/demo"
    assert not (installed / "references/alias.md").is_symlink()
    assert (installed / "references/alias.md").read_bytes() == (src / "references/guide.md").read_bytes()
    assert (installed / "scripts/refs/note.md").read_text() == "deep\n"
    # Still an unedited install of that source: list says current, add again is a no-op.
    listed = cli("skills", "list", "--json").stdout
    (item,) = [i for i in json.loads(listed)["installed"] if i["path"] == str(installed)]
    assert item["modified"] is False and item["status"] == "current"
    again = cli("skills", "add", str(src), "--claude")
    assert again.exit_code == 0 and "already installed" in again.stderr + again.stdout


def test_link_falls_back_to_a_junction_then_to_a_copy(sandbox, monkeypatch):
    monkeypatch.setattr(fsops, "HOOKS", {"no-symlinks": "", "junctions": ""})
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--link", "--json")
    assert result.exit_code == 0, result.stderr
    second = json.loads(result.stdout)["actions"][1]
    assert "junction" in second["note"] and second["link_to"] == str(sandbox.project / ".claude/skills/demo")
    monkeypatch.setattr(fsops, "HOOKS", {"no-symlinks": ""})
    result = cli("skills", "add", "demo", "--kiro", "--cursor", "--link", "--force", "--json")
    assert result.exit_code == 0, result.stderr
    second = json.loads(result.stdout)["actions"][1]
    assert "copy" in second["note"] and second["link_to"] is None
    assert not (sandbox.project / ".cursor/skills/demo").is_symlink()


def test_link_across_drives_is_a_copy_with_a_note(sandbox, monkeypatch):
    def other_drive(path, start=None):
        raise ValueError("path is on mount 'D:', start on mount 'C:'")

    monkeypatch.setattr(os.path, "relpath", other_drive)
    result = cli("skills", "add", "demo", "--claude", "--cursor", "--link", "--json")
    assert result.exit_code == 0, result.stderr
    assert "another drive" in json.loads(result.stdout)["actions"][1]["note"]
    assert skill_files(sandbox.project / ".cursor/skills/demo") == skill_files(sandbox.bundled / "demo")


def test_a_junction_counts_as_a_link_not_a_folder(sandbox, monkeypatch):
    folder = sandbox.root / "junction"
    folder.mkdir()
    real_lstat = os.lstat

    class JunctionStat:
        def __init__(self, st):
            self._st, self.st_reparse_tag = st, fsops.IO_REPARSE_TAG_MOUNT_POINT

        def __getattr__(self, name):
            return getattr(self._st, name)

    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: JunctionStat(real_lstat(p)) if str(p) == str(folder) else real_lstat(p, *a, **k))
    assert fsops.is_link(folder) and not fsops.is_link(sandbox.root)


# --------------------------------------------------- receipts and git's autocrlf


def _convert(folder: Path, old: bytes, new: bytes) -> int:
    """Rewrite every text file's line endings, as a git checkout with autocrlf does."""
    count = 0
    for path in folder.rglob("*"):
        if path.is_file() and path.name != ".kernel-skills.json":
            data = path.read_bytes()
            if b"\0" not in data and old in data:
                path.write_bytes(data.replace(b"\r\n", b"\n").replace(b"\n", new) if new == b"\r\n" else data.replace(old, new))
                count += 1
    return count


def _state_of(sandbox) -> dict:
    listed = json.loads(cli("skills", "list", "--json").stdout)["installed"]
    (item,) = [i for i in listed if i["path"] == str(sandbox.project / ".claude/skills/demo")]
    return item


def test_an_install_checked_out_with_crlf_is_not_edited(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    installed = sandbox.project / ".claude/skills/demo"
    assert _convert(installed, b"\n", b"\r\n") >= 3
    item = _state_of(sandbox)
    assert item["modified"] is False and item["edited_files"] == []
    again = cli("skills", "add", "demo", "--claude")
    assert again.exit_code == 0 and "already installed" in again.stdout + again.stderr
    assert cli("skills", "remove", "demo", "--claude").exit_code == 0  # no --force needed: nothing of the user's


def test_a_skill_with_crlf_checked_out_with_lf_is_not_edited(sandbox):
    make_skill(sandbox.bundled, "demo", extra={"references/windows.md": "line one\r\nline two\r\n"})
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    from kernel_skills import receipts

    assert list(receipts.read(sandbox.project / ".claude/skills/demo").data["lf_files"]) == ["references/windows.md"]
    assert _convert(sandbox.project / ".claude/skills/demo", b"\r\n", b"\n") == 1
    assert _state_of(sandbox)["modified"] is False


@pytest.mark.parametrize("size", [10, (1 << 20) - 1, (1 << 20) + 5])
def test_the_copy_reports_the_lf_digest_the_receipt_would_compute(tmp_path, size):
    # The receipt's lf_files come from the copy itself, not from reading it back; a CRLF may
    # straddle two of the copy's 1 MiB chunks (size - 1 puts the CR last in the first chunk).
    from kernel_skills import receipts

    body = b"x" * (size - 1) + b"\r\n" + b"tail\r\nend\r"
    cases = {"crlf": body, "lf": body.replace(b"\r\n", b"\n"), "cr": b"a\rb\r", "binary": b"\0" + body}
    for name, data in cases.items():
        src, dst = tmp_path / f"{name}-src", tmp_path / f"{name}-dst"
        src.write_bytes(data)
        sha, lf = fsops.copy_file(str(src), str(dst), 0o644)
        assert dst.read_bytes() == data and sha == receipts.file_sha256(str(dst))
        expected = receipts.lf_sha256(dst) if b"\r\n" in data else None
        assert lf == expected, name


def test_a_real_edit_still_shows_through_converted_line_endings(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    installed = sandbox.project / ".claude/skills/demo"
    _convert(installed, b"\n", b"\r\n")
    (installed / "references/guide.md").write_bytes(b"# my notes\r\n")
    assert _state_of(sandbox)["edited_files"] == ["references/guide.md"]


def test_a_receipt_from_before_lf_files_still_reads(sandbox):
    make_skill(sandbox.bundled, "demo", extra={"references/windows.md": "a\r\n"})
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    path = sandbox.project / ".claude/skills/demo/.kernel-skills.json"
    data = json.loads(path.read_text())
    del data["lf_files"]
    path.write_text(json.dumps(data))
    assert _state_of(sandbox)["modified"] is False
    _convert(sandbox.project / ".claude/skills/demo", b"\n", b"\r\n")  # LF -> CRLF is still recognised
    item = _state_of(sandbox)
    assert item["managed"] is True and item["edited_files"] == []


# ------------------------------------------------- filesystems without modes or sizes


def test_a_filesystem_without_unix_modes_still_installs(sandbox, monkeypatch):
    """FAT and exFAT refuse chmod (vfat: EPERM, FUSE drivers: ENOSYS): not an error."""
    real_chmod = os.chmod

    def no_modes(path, mode, *a, **k):
        if str(sandbox.project) in str(path):
            raise OSError(errno.ENOSYS, "Function not implemented", str(path))
        return real_chmod(path, mode, *a, **k)

    monkeypatch.setattr(os, "chmod", no_modes)
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert skill_files(sandbox.project / ".claude/skills/demo") == skill_files(sandbox.bundled / "demo")


def test_a_filesystem_that_reports_no_size_is_not_full(sandbox, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(0, 0, 0))
    assert cli("skills", "add", "demo", "--claude").exit_code == 0


def test_ctrl_break_rolls_back_like_sigterm(monkeypatch):
    """Windows' Ctrl-Break (SIGBREAK) gets the SIGTERM handler: rollback, exit 143."""
    import signal

    from kernel_skills.cli import commands, entry
    from kernel_skills.cli.handler import on_sigterm

    monkeypatch.setattr(sys, "argv", ["kernels", "skills"])  # (ours: never forwarded to HF's kernels CLI)
    monkeypatch.setattr(signal, "SIGBREAK", signal.SIGUSR1, raising=False)
    monkeypatch.setattr(commands, "app", lambda: None)
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        entry.main()
        assert signal.getsignal(signal.SIGUSR1) is on_sigterm
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
