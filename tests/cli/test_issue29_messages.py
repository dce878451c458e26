"""Issue 29, break 8: messages and exit codes a careful user would expect."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import cli


def test_hub_down_and_a_skill_of_a_cached_repo_never_downloaded_fails_fast(sandbox, hub):
    from .hubfake import skill_files

    hub.commit("my-org/skills", {**skill_files("house-style"), **skill_files("other")})
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "a", "-q").exit_code == 0
    hub.stop()
    start = time.monotonic()
    result = cli("skills", "add", "hf://my-org/skills/other", "--dest", "b")
    took = time.monotonic() - start
    assert result.exit_code == 1
    assert "cannot reach the Hub" in result.stderr and "not in the local cache" in result.stderr
    assert result.stderr.count("\n") == 1 and "Retry" not in result.stderr
    assert took < 5, f"{took:.1f} s: retried instead of failing"
    # What the cache holds still installs with the Hub down.
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "c", "-q").exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ("skills", "list", "--dest", "d"),
        ("skills", "list", "--dest", "d", "--json"),
        ("skills", "agents"),
        # help and --version are printed by click before the error handler runs
        ("--help",),
        ("skills", "add", "--help"),
        ("--version",),
    ],
)
def test_stdout_on_a_full_device_is_one_line_not_a_traceback(sandbox, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    assert cli("skills", "add", "demo", "--dest", "d", "-q").exit_code == 0
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "kernel_skills", *args],
            env=sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled)),
            cwd=sandbox.project,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot write the output to stdout (No space left on device)")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("flag", ["--json=1", "--json=true", "--json="])
def test_json_with_a_value_is_a_usage_error(sandbox, flag):
    result = cli("skills", "list", flag)
    assert result.exit_code == 2 and "does not take a value" in result.stderr


class _FullFile:
    """A file object whose writes fail as on a full disk (and, like the real one, name no file)."""

    def __init__(self, real):
        self._real = real

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._real.close()


def _no_space(fd, data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as os.write on a full disk: no file named


def _full_under(monkeypatch, folder_part: str) -> None:
    from kernel_skills import fsops

    real_fdopen = os.fdopen

    def full(real):
        def write(src, dst, mode):
            if folder_part not in dst:
                return real(src, dst, mode)
            with pytest.MonkeyPatch.context() as patch:  # (file objects, and plain descriptors)
                patch.setattr(fsops.os, "fdopen", lambda fd, *a: _FullFile(real_fdopen(fd, *a)))
                patch.setattr(fsops.os, "write", _no_space)
                return real(src, dst, mode)

        return write

    # write_file copies into backups; copy_file (which also returns the CRLF digest) into stages.
    for name in ("write_file", "copy_file"):
        monkeypatch.setattr(fsops, name, full(getattr(fsops, name)))


def test_a_full_backup_folder_is_named_as_the_one_that_is_full(sandbox, monkeypatch):
    from .conftest import snapshot

    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    before = snapshot(sandbox.project)
    _full_under(monkeypatch, "/backups/")
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 1
    assert f"the backup folder {sandbox.backups} (backing up {sandbox.project / '.claude/skills/demo'}) is out of space" in result.stderr
    assert "No space left on device writing " + str(sandbox.backups) in result.stderr and "prune" in result.stderr
    assert snapshot(sandbox.project) == before


def test_a_full_skills_folder_is_named_with_the_file(sandbox, monkeypatch):
    _full_under(monkeypatch, ".kernel-skills-tmp")
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert f"the skills folder {sandbox.project / '.claude/skills'} is out of space (No space left on device writing " in result.stderr
    assert not (sandbox.project / ".claude/skills/demo").exists()


def _unreadable(monkeypatch, *paths) -> None:
    """os.scandir of these paths fails as for a folder without read permission (the tests
    run as root too, where chmod would not stop it)."""
    real = os.scandir
    blocked = {str(p) for p in paths}

    def scandir(path="."):
        if str(path) in blocked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_list_reports_every_install_and_marks_the_unreadable_ones(sandbox, monkeypatch):
    assert cli("skills", "add", "demo", "--claude", "--kiro", "--cursor", "-q").exit_code == 0
    assert cli("skills", "add", "cuda-kernels", "--claude", "-q").exit_code == 0
    _unreadable(monkeypatch, sandbox.project / ".kiro/skills", sandbox.project / ".claude/skills/demo/scripts")

    result = cli("skills", "list", "--json")
    assert result.exit_code == 1
    rows = {item["path"]: item for item in json.loads(result.stdout)["installed"]}
    assert json.loads(result.stdout)["ok"] is False
    assert rows[str(sandbox.project / ".claude/skills/cuda-kernels")]["problem"] is None
    assert rows[str(sandbox.project / ".cursor/skills/demo")]["problem"] is None
    assert "cannot read" in rows[str(sandbox.project / ".claude/skills/demo")]["problem"]
    assert rows[str(sandbox.project / ".kiro/skills")]["kind"] == "unreadable"

    table = cli("skills", "list")
    assert table.exit_code == 1 and table.stdout.count("unreadable") == 2 and "cuda-kernels" in table.stdout
    assert table.stderr.startswith("Error: 2 of the listed installs could not be read")
    update = cli("skills", "update", "--json")
    assert update.exit_code == 1 and "unexpected" not in update.output


def test_remove_of_a_link_whose_copy_was_removed(sandbox):
    assert cli("skills", "add", "demo", "--claude", "--cursor", "--link", "-q").exit_code == 0
    gone = cli("skills", "remove", "demo", "--claude")
    assert gone.exit_code == 0 and "now broken" in gone.stderr
    link = sandbox.project / ".cursor/skills/demo"
    result = cli("skills", "remove", "demo", "--cursor", "--json")
    assert result.exit_code == 0, result.output
    assert not os.path.lexists(link)
    assert "already gone" in json.loads(result.stdout)["actions"][0]["note"]
    assert "did not create" not in result.output


def test_a_foreign_broken_link_is_described_as_broken(sandbox):
    skills = sandbox.project / ".cursor/skills"
    skills.mkdir(parents=True)
    (skills / "demo").symlink_to("../../somewhere/else")
    result = cli("skills", "remove", "demo", "--cursor")
    assert result.exit_code == 1
    assert "is a broken symlink to ../../somewhere/else, which does not exist" in result.stderr and "--force" in result.stderr


def _read_only(tree) -> None:
    for path in sorted(tree.rglob("*"), reverse=True):
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~0o222)
    tree.chmod(tree.stat().st_mode & ~0o222)


@pytest.fixture
def kernel_rename_rules(monkeypatch):
    """Root may move a read-only folder anywhere; a user may not (rename(2): EACCES when a
    folder moving to another parent lacks write permission for its '..'). The tests run as
    root too, so the renames apply that rule here."""
    import stat

    from kernel_skills import fsops

    def check(*paths: str) -> None:
        for path in paths:
            if os.path.isdir(path) and not os.path.islink(path) and not os.lstat(path).st_mode & stat.S_IWUSR:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    for name in ("rename", "exchange"):
        real = getattr(fsops, name)

        def wrapped(a: str, b: str, _real=real) -> object:
            if os.path.dirname(a) != os.path.dirname(b):
                check(a, b)
            return _real(a, b)

        monkeypatch.setattr(fsops, name, wrapped)


@pytest.mark.parametrize("swap", ["exchange", "two-renames"])
def test_force_replaces_and_removes_a_read_only_install(sandbox, monkeypatch, kernel_rename_rules, swap):
    from kernel_skills import fsops

    if swap == "two-renames":
        monkeypatch.setattr(fsops, "HOOKS", {"no-exchange": ""})
    assert cli("skills", "add", "demo", "--claude", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    (dest / "mine.txt").write_text("mine\n")
    _read_only(dest)
    replaced = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert replaced.exit_code == 0, replaced.output
    assert (Path(json.loads(replaced.stdout)["actions"][0]["backup"]) / "mine.txt").read_text() == "mine\n"
    assert not (dest / "mine.txt").exists() and dest.stat().st_mode & 0o200

    _read_only(dest)
    removed = cli("skills", "remove", "demo", "--claude", "--force")
    assert removed.exit_code == 0, removed.output
    assert not os.path.lexists(dest)


def test_an_undone_run_leaves_a_read_only_install_read_only(sandbox, monkeypatch, kernel_rename_rules):
    from kernel_skills import fsops

    assert cli("skills", "add", "demo", "--claude", "--kiro", "-q").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    _read_only(dest)
    before = dest.stat().st_mode
    real = fsops.write_bytes
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the second receipt: the second target's staging
            raise OSError(errno.EIO, "I/O error", args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(fsops, "write_bytes", failing)
    from .conftest import make_skill

    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "update", "--claude", "--kiro")
    assert result.exit_code == 1
    assert dest.stat().st_mode == before


@pytest.mark.parametrize(("sig", "code", "what"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
@pytest.mark.parametrize("json_flag", [False, True])
def test_a_signal_during_start_up_is_one_line_and_json_with_json(sandbox, tmp_path, sig, code, what, json_flag):
    armed = tmp_path / "armed"
    args = ["skills", "list", *(["--json"] if json_flag else [])]
    env = sandbox.env(KERNEL_SKILLS_TEST_HOOKS=f"startup-wait={armed}")
    proc = subprocess.Popen([sys.executable, "-m", "kernel_skills", *args], env=env, cwd=sandbox.project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not armed.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err == f"Error: {what} while starting. Nothing was changed.\n"
    if json_flag:
        assert json.loads(out)["ok"] is False and json.loads(out)["error"]["exit_code"] == code
    else:
        assert out == ""


def test_importing_the_cli_leaves_the_programs_signal_handling_alone():
    import kernel_skills.cli  # noqa: F401  (already imported by other tests; the point is it changed nothing)

    assert signal.getsignal(signal.SIGINT) is not None
    assert getattr(signal.getsignal(signal.SIGINT), "__module__", "") != "kernel_skills.cli.startup"


@pytest.mark.parametrize("hook", ["main-wait", "command-wait"])
@pytest.mark.parametrize("json_flag", [False, True])
def test_sigterm_after_main_set_its_handler_is_one_line_143_and_json(sandbox, tmp_path, hook, json_flag):
    """main() installs the SIGTERM handler before click parses anything; a SIGTERM then (or
    once the error handler runs, before the command has said it prints JSON) is exit 143,
    one `Error:` line and, with --json, the JSON error document: never click's "Aborted!"."""
    armed = tmp_path / "armed"
    args = ["skills", "list", *(["--json"] if json_flag else [])]
    env = sandbox.env(KERNEL_SKILLS_TEST_HOOKS=f"{hook}={armed}")
    proc = subprocess.Popen([sys.executable, "-m", "kernel_skills", *args], env=env, cwd=sandbox.project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not armed.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert armed.exists(), proc.communicate(timeout=60)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.count("\n") == 1 and err.startswith("Error: terminated"), err
    if json_flag:
        doc = json.loads(out)
        assert doc["ok"] is False and doc["error"]["exit_code"] == 143
    else:
        assert out == ""
