"""Nothing half-written, nothing of the user's lost: failures, interrupts, kills, races.

The in-process tests drive the core (plan_add + apply) with fsops operations made to fail
at the k-th call, for every k. The subprocess tests run the real CLI and kill it.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernel_skills import fsops, install
from kernel_skills.agents import select_targets
from kernel_skills.errors import KernelsError
from kernel_skills.receipts import RECEIPT_FILE

from .conftest import cli, leftovers, make_skill, simulate_macos, skill_files, snapshot

WRITE_OPS = ("write_file", "copy_file", "write_bytes")
ALL_OPS = ("write_file", "copy_file", "write_bytes", "make_dir", "make_dirs", "symlink", "chmod", "exchange", "rename_noreplace", "rename", "remove")


class FailAt:
    """Make the k-th call (counted over ``ops``) of fsops raise ``exc``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, k: int, ops: tuple[str, ...], exc: BaseException) -> None:
        self.k, self.calls, self.exc, self.hit = k, 0, exc, None
        for name in ops:
            monkeypatch.setattr(fsops, name, self._wrap(name, getattr(fsops, name)))

    def _wrap(self, name, fn):
        def wrapper(*args, **kwargs):
            self.calls += 1
            if self.calls == self.k:
                self.hit = name
                raise self.exc
            return fn(*args, **kwargs)

        return wrapper


def each_kth_failure(monkeypatch, ops: tuple[str, ...], exc: BaseException, action, stride: int = 1):
    """Run ``action`` with the k-th call of ``ops`` failing, for k = 1, 1 + stride, ... until
    a run makes fewer than k calls (that last run completes). Yields (k, failed op, raised)."""
    k = 1 - stride
    while True:
        k += stride
        with monkeypatch.context() as patch:
            fail = FailAt(patch, k, ops, exc)
            try:
                action()
                raised = False
            except type(exc):
                raised = True
            except KernelsError as error:  # the core's one-line form of it (a full disk names the folder)
                if not isinstance(error.__cause__, type(exc)):
                    raise
                raised = True
        if fail.hit is None:
            return
        yield k, fail.hit, raised


# Each mode simulates what another OS lacks, through the fsops test hooks: "two-renames"
# is macOS without renamex_np and any filesystem without an atomic exchange; "no-flock",
# "no-sigmask" and "busy" (every rename and delete first fails twice with WinError 32)
# are Windows one at a time; "windows" is all of them at once, with no symlinks either.
MODES: dict[str, str] = {  # (plus "macos", in-process only: see swap_mode)
    "exchange": "",
    "two-renames": "no-exchange",
    "no-flock": "no-flock",
    "no-sigmask": "no-sigmask",
    "busy": "busy=2",
    "windows": "no-exchange,no-flock,no-sigmask,busy=2,no-symlinks",
}
# The slow tests (every operation, every SIGKILL point) run in the modes that change
# what happens on disk; no-flock and no-sigmask alone change nothing there.
SLOW_MODES = ("exchange", "two-renames", "windows")


def _mode_hooks(mode: str) -> dict[str, str]:
    return fsops._parse_hooks(MODES.get(mode, ""))


def _enter_mode(mode: str, monkeypatch) -> str:
    if mode == "macos":
        simulate_macos(monkeypatch)
    monkeypatch.setattr(fsops, "HOOKS", _mode_hooks(mode))
    if "no-exchange" in fsops.HOOKS:
        return "two-renames"
    if not fsops.atomic_exchange_available():
        pytest.skip(f"no atomic exchange on {sys.platform}: the two-renames modes cover this OS")
    return "exchange"


@pytest.fixture(params=[*MODES, "macos"])
def swap_mode(request, monkeypatch):
    """Run a test natively (renameat2(RENAME_EXCHANGE)), and again in each simulated mode
    ("macos": renamex_np(RENAME_SWAP) through ctypes, simulated on Linux); returns
    "exchange" or "two-renames", the swap that mode makes."""
    return _enter_mode(request.param, monkeypatch)


@pytest.fixture(params=SLOW_MODES)
def slow_swap_mode(request, monkeypatch):
    return _enter_mode(request.param, monkeypatch)


def scenario(sandbox, *, agents=("claude", "kiro"), dests=("dest",)):
    """Three targets: an install with user edits, an empty agent folder, a new --dest.

    Returns (sources, targets) for an `add --force` of version 2 over version 1.
    """
    roots = sandbox.roots
    old = install.plan_add(install.skill_sources(["demo"], roots.sources), select_targets(["claude"], roots.location, global_=False))
    install.apply(old, state_dir=roots.state_dir)
    (sandbox.project / ".claude/skills/demo/references/guide.md").write_text("my own notes\n")
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    make_skill(sandbox.bundled, "demo", version="2.0.0", extra={"references/new.md": "# new in 2\n"})
    targets = select_targets(list(agents), roots.location, global_=False, dests=[Path(d) for d in dests])
    return install.skill_sources(["demo"], roots.sources), targets


def run_add(sandbox, sources, targets):
    plan = install.plan_add(sources, targets, force=True)
    return install.apply(plan, state_dir=sandbox.roots.state_dir, force=True)


def test_kth_file_write_failure_leaves_everything_byte_identical(sandbox, monkeypatch, slow_swap_mode):
    sources, targets = scenario(sandbox)
    before = snapshot(sandbox.root)
    failures = 0
    error = OSError(errno.ENOSPC, "No space left on device")
    for k, op, raised in each_kth_failure(monkeypatch, WRITE_OPS, error, lambda: run_add(sandbox, sources, targets)):
        assert raised and snapshot(sandbox.root) == before, f"write {k} ({op}) failed and changed the tree"
        failures += 1
    assert failures > 15, "the scenario should write many files"
    new = skill_files(sandbox.bundled / "demo")
    for target in targets:
        assert skill_files(target.path / "demo") == new
    assert leftovers(sandbox.root) == []


def test_kth_operation_failure_never_leaves_a_half_tree(sandbox, monkeypatch, slow_swap_mode):
    """Any operation at all may fail (mkdir, rename, exchange, delete ...): each path holds a
    complete old or new tree, the user's edits survive somewhere, and the next run cleans up."""
    sources, targets = scenario(sandbox, dests=())
    pristine = snapshot(sandbox.root)
    old_edited = skill_files(sandbox.project / ".claude/skills/demo")
    new = skill_files(sandbox.bundled / "demo")
    failures = 0
    error = OSError(errno.EIO, "I/O error")
    # The windows mode (every hook at once) fails every other operation, to keep the suite fast.
    stride = 2 if "no-flock" in fsops.HOOKS else 1
    for k, op, failed in each_kth_failure(monkeypatch, ALL_OPS, error, lambda: run_add(sandbox, sources, targets), stride):
        failures += 1
        claude = skill_files(sandbox.project / ".claude/skills/demo")
        assert claude in (old_edited, new), f"op {k} ({op})"
        if claude == new:
            assert any(skill_files(b) == old_edited for b in sandbox.backups.iterdir() if b.is_dir())
        for target in targets[1:]:
            assert skill_files(target.path / "demo") in ({}, new), f"op {k} ({op})"
        if failed and claude == old_edited:
            # A failure before the swaps completed must change nothing at all, not even
            # a temp folder.
            assert snapshot(sandbox.root) == pristine, f"op {k} ({op})"
        # The next run recovers and completes.
        run_add(sandbox, sources, targets)
        assert leftovers(sandbox.root) == []
        for target in targets:
            assert skill_files(target.path / "demo") == new
        # Reset to the starting state for the next k.
        shutil.rmtree(sandbox.root / "home")
        shutil.rmtree(sandbox.project)
        _restore(sandbox.root, pristine)
    assert failures > 20 // stride


def _restore(root: Path, snap: dict) -> None:
    for rel, entry in sorted(snap.items()):
        path = root / rel
        if entry[0] == "dir":
            path.mkdir(exist_ok=True)
        elif entry[0] == "link":
            if not os.path.lexists(path):
                os.symlink(entry[1], path)
        elif not path.exists():
            path.write_bytes(entry[1])
            fsops.chmod(str(path), entry[2])  # (a no-op on the FAT image of test_casefold.py)
    for rel, entry in snap.items():
        if entry[0] == "dir":
            fsops.chmod(str(root / rel), entry[1])


def test_keyboard_interrupt_mid_copy_changes_nothing(sandbox, monkeypatch, swap_mode):
    sources, targets = scenario(sandbox)
    before = snapshot(sandbox.root)
    for k in (1, 5, 12, 20):
        with monkeypatch.context() as patch:
            FailAt(patch, k, WRITE_OPS, KeyboardInterrupt())
            with pytest.raises(KeyboardInterrupt):
                run_add(sandbox, sources, targets)
        assert snapshot(sandbox.root) == before


def test_interrupt_during_the_swaps_rolls_every_target_back(sandbox, monkeypatch, swap_mode):
    sources, targets = scenario(sandbox)
    before = snapshot(sandbox.root)
    renames = ("exchange", "rename_noreplace", "rename")
    hits = []
    for k, op, raised in each_kth_failure(monkeypatch, renames, KeyboardInterrupt(), lambda: run_add(sandbox, sources, targets)):
        assert raised and snapshot(sandbox.root) == before, f"rename {k} ({op})"
        hits.append(op)
    # The backup's two renames (its ID.json, then its tree), then one swap per target
    # (two renames each in the fallback).
    assert len(hits) == (5 if swap_mode == "exchange" else 7)


def test_interrupt_through_the_cli_exits_130_and_changes_nothing(sandbox, monkeypatch):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    before = snapshot(sandbox.root)
    FailAt(monkeypatch, 3, WRITE_OPS, KeyboardInterrupt())
    result = cli("skills", "add", "demo", "--claude", "--kiro", "--force")
    assert result.exit_code == 130
    assert "interrupted" in result.stderr
    assert snapshot(sandbox.root) == before


def test_interrupt_after_the_swaps_completes_the_change_and_keeps_the_backup(sandbox, monkeypatch, swap_mode):
    # Once every target holds its new tree, only cleanup is left: an interrupt there must not
    # be reported as a rollback, and the backup of the user's edited copy must be named.
    sources, targets = scenario(sandbox, dests=())
    old_edited = skill_files(sandbox.project / ".claude/skills/demo")
    with monkeypatch.context() as patch:
        FailAt(patch, 1, ("remove",), KeyboardInterrupt())
        plan = run_add(sandbox, sources, targets)
    assert any("interrupted while removing" in note for note in plan.notes)
    new = skill_files(sandbox.bundled / "demo")
    for target in targets:
        assert skill_files(target.path / "demo") == new
    (backup,) = [a.backup_path for a in plan.actions if a.backup_path]
    assert skill_files(backup) == old_edited
    assert leftovers(sandbox.root) != []  # the cleanup really was cut short ...
    run_add(sandbox, sources, targets)
    assert leftovers(sandbox.root) == []  # ... and the next run finishes it


def test_interrupt_after_the_swaps_through_the_cli_reports_success(sandbox, monkeypatch):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/mine.txt").write_text("mine\n")
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    FailAt(monkeypatch, 1, ("remove",), KeyboardInterrupt())
    result = cli("skills", "add", "demo", "--claude", "--force", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ok"] is True
    backups = [a["backup"] for a in data["actions"] if a.get("backup")]
    assert len(backups) == 1 and (Path(backups[0]) / "mine.txt").read_text() == "mine\n"
    assert any("interrupted while removing" in note for note in data["notes"])


# ----------------------------------------------------------------------------- recovery


def test_recovery_restores_an_old_tree_whose_destination_is_missing(sandbox):
    """The two-rename fallback died between its renames: the old tree is put back."""
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    skills = sandbox.project / ".claude/skills"
    old = skill_files(skills / "demo")
    (skills / ".kernel-skills-tmp").mkdir()
    os.rename(skills / "demo", skills / ".kernel-skills-tmp/old-demo-0badc0de")
    shutil.copytree(sandbox.bundled / "demo", skills / ".kernel-skills-tmp/new-demo-12345678")
    notes = install.recover_all([skills], sandbox.roots.state_dir)
    assert skill_files(skills / "demo") == old
    assert "restored" in notes[0]
    assert os.listdir(skills) == ["demo"]


def test_recovery_deletes_leftovers_when_the_destination_is_complete(sandbox):
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    skills = sandbox.project / ".claude/skills"
    current = snapshot(skills / "demo")
    tmp = skills / ".kernel-skills-tmp"
    tmp.mkdir()
    for name in ("old-demo-00000001", "new-demo-00000002", "del-demo-00000003", "link-demo-00000004"):
        shutil.copytree(sandbox.bundled / "demo", tmp / name)
    partial = sandbox.backups / f".partial-{install._folder_key(skills)}-abcdef12"
    shutil.copytree(sandbox.bundled / "demo", partial)
    other_partial = sandbox.backups / ".partial-000000000000-abcdef12"
    shutil.copytree(sandbox.bundled / "demo", other_partial)
    make_skill(sandbox.bundled, "demo", version="2.0.0")
    result = cli("skills", "add", "demo", "--claude", "--force")
    assert result.exit_code == 0, result.output
    assert "interrupted run" in result.stderr
    assert os.listdir(skills) == ["demo"]
    assert not partial.exists()
    assert other_partial.exists(), "another folder's partial backup belongs to that folder's recovery"
    assert current != snapshot(skills / "demo")


# ------------------------------------------------------------------- real processes


def _env(sandbox, hooks: str = "") -> dict[str, str]:
    env = sandbox.env(KERNEL_SKILLS_BUNDLED_ROOT=str(sandbox.bundled))
    if hooks:
        env["KERNEL_SKILLS_TEST_HOOKS"] = hooks
    return env


def _add_process(sandbox, dest: Path, hooks: str = "") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--dest", str(dest), "--force", "-q"],
        env=_env(sandbox, hooks),
        cwd=sandbox.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _add_forked(sandbox, dest: Path, hooks: str) -> int:
    """The `add` of _add_process, in a fork of this process, whose CLI is imported already:
    ~20 ms a run instead of ~150 ms of interpreter start-up, and every kill point lies after
    start-up. Returns the exit code, or -N when signal N ended it."""
    env = _env(sandbox, hooks)
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.environ.clear()
            os.environ.update(env)
            os.chdir(sandbox.project)
            fsops.HOOKS = fsops._parse_hooks(hooks)
            fsops._ticks = 0  # counted from this run's start, as in a new process
            code = cli("skills", "add", "demo", "--dest", str(dest), "--force", "-q").exit_code
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"add with {hooks} did not end within 60 s")
        time.sleep(0.002)


def _bundle(sandbox, version: str) -> dict[str, bytes]:
    shutil.rmtree(sandbox.bundled / "demo")
    extra = {"references/new.md": f"# new in {version}\n"} if version != "1.0.0" else {}
    return skill_files(make_skill(sandbox.bundled, "demo", version=version, extra=extra))


def _prepare_old_install(sandbox, dest: Path) -> dict[str, bytes]:
    """dest/demo: version 1 with a user edit; the bundled skill is then version 2."""
    _bundle(sandbox, "1.0.0")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.rmtree(sandbox.backups, ignore_errors=True)
    assert cli("skills", "add", "demo", "--dest", str(dest), "-q").exit_code == 0
    (dest / "demo/mine.txt").write_text("user edit\n")
    _bundle(sandbox, "2.0.0")
    return skill_files(dest / "demo")


def _check_after_kill(sandbox, dest: Path, old: dict, new: dict, swap: str) -> str:
    """The path holds a complete tree (old or new); returns which."""
    skill = dest / "demo"
    if not os.path.lexists(skill):
        assert swap == "two-renames", "with RENAME_EXCHANGE the path is never missing"
        saved = [p for p in (dest / ".kernel-skills-tmp").iterdir() if p.name.startswith("old-demo-")]
        assert len(saved) == 1 and skill_files(saved[0]) == old
        return "missing"
    files = skill_files(skill)
    assert files in (old, new)
    if files == new:
        receipt = json.loads((skill / RECEIPT_FILE).read_text())
        assert receipt["skill_version"] == "2.0.0"
    return "old" if files == old else "new"


def _user_edit_survives(sandbox, dest: Path, old: dict) -> None:
    copies = [dest / "demo"] + ([p for p in sandbox.backups.iterdir() if p.is_dir()] if sandbox.backups.exists() else [])
    assert any(skill_files(c) == old for c in copies)


@pytest.mark.parametrize(("mode", "stride"), [("exchange", 1), ("two-renames", 1), ("windows", 3)])
def test_sigkill_before_every_operation_of_add_force(sandbox, mode, stride):
    """Kill the CLI (SIGKILL: no cleanup code runs) just before its n-th filesystem
    operation, for every n (every third n in the windows mode, to keep the suite fast; each
    run a fork of this process, see _add_forked; test_sigkill_at_random_moments kills new
    processes):
    the path always holds a complete tree, and the next run recovers and leaves nothing
    behind."""
    dest = sandbox.root / "target"
    old = _prepare_old_install(sandbox, dest)
    new = skill_files(sandbox.bundled / "demo")
    swap = "two-renames" if "no-exchange" in MODES[mode] else "exchange"
    extra = "," + MODES[mode] if MODES[mode] else ""
    seen = set()
    n = 0
    while True:
        n += 1 if n < 3 else stride  # the first operations are where a run starts: all of them
        code = _add_forked(sandbox, dest, f"kill-at={n}{extra}")
        if code == 0:
            break
        assert code == -signal.SIGKILL
        seen.add(_check_after_kill(sandbox, dest, old, new, swap))
        _user_edit_survives(sandbox, dest, old)
        # The next run cleans up and completes; the user's edit is still backed up.
        assert cli("skills", "add", "demo", "--dest", str(dest), "--force", "-q").exit_code == 0
        assert skill_files(dest / "demo") == new
        assert leftovers(dest, sandbox.home) == []
        _user_edit_survives(sandbox, dest, old)
        old = _prepare_old_install(sandbox, dest)
    assert n > 15
    assert {"old", "new"} <= seen or stride > 1
    assert skill_files(dest / "demo") == new and leftovers(dest, sandbox.home) == []


def test_sigkill_at_random_moments(sandbox):
    """Kill from outside at random times while a slowed-down add --force runs."""
    rng = random.Random(1234)
    dest = sandbox.root / "target"
    for attempt in range(6):
        old = _prepare_old_install(sandbox, dest)
        new = skill_files(sandbox.bundled / "demo")
        mode = SLOW_MODES[attempt % len(SLOW_MODES)]
        swap = "two-renames" if "no-exchange" in MODES[mode] else "exchange"
        proc = _add_process(sandbox, dest, ",".join(filter(None, ("delay=0.01", MODES[mode]))))
        deadline = time.monotonic() + 30
        while not (dest / ".kernel-skills-tmp").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.3))
        proc.kill()
        proc.communicate(timeout=60)
        _check_after_kill(sandbox, dest, old, new, swap)
        _user_edit_survives(sandbox, dest, old)
        assert cli("skills", "add", "demo", "--dest", str(dest), "--force", "-q").exit_code == 0
        assert skill_files(dest / "demo") == new and leftovers(dest, sandbox.home) == []
        _user_edit_survives(sandbox, dest, old)


@pytest.mark.parametrize("deferral", ["sigmask", "handlers"])
def test_sigterm_rolls_back_and_cleans_up(sandbox, deferral):
    dest = sandbox.root / "target"
    _prepare_old_install(sandbox, dest)
    before = snapshot(sandbox.root)
    proc = _add_process(sandbox, dest, "delay=0.05" + (",no-sigmask" if deferral == "handlers" else ""))
    deadline = time.monotonic() + 30
    while not (dest / ".kernel-skills-tmp").exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(0.12)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Error: terminated." in err
    assert snapshot(sandbox.root) == before


@pytest.mark.parametrize("lock", ["flock", "lock-file"])
def test_eight_concurrent_add_force_processes_leave_one_complete_tree(sandbox, lock):
    """Also with the lock files Windows uses (no flock there): a second run's recover()
    must never see the first run's staging."""
    dest = sandbox.root / "target"
    _bundle(sandbox, "2.0.0")
    hooks = "delay=0.003" + (",no-flock" if lock == "lock-file" else "")
    procs = [_add_process(sandbox, dest, hooks) for _ in range(8)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, results
    assert skill_files(dest / "demo") == skill_files(sandbox.bundled / "demo")
    receipt = json.loads((dest / "demo" / RECEIPT_FILE).read_text())
    assert receipt["skill_version"] == "2.0.0"
    assert os.listdir(dest) == ["demo"]
    assert leftovers(sandbox.root) == []
    from kernel_skills.skill import validate

    assert validate(dest / "demo").ok


# ------------------------------------------------------------ real signals mid-commit


class SignalAfter:
    """Send this process ``signum`` right after the k-th call of ``ops`` has done its work:
    the moment a Ctrl-C would split a rename from the record that it happened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, k: int, ops: tuple[str, ...], signum: int) -> None:
        self.k, self.calls, self.signum, self.hit = k, 0, signum, None
        for name in ops:
            monkeypatch.setattr(fsops, name, self._wrap(name, getattr(fsops, name)))

    def _wrap(self, name, fn):
        def wrapper(*args, **kwargs):
            result = fn(*args, **kwargs)
            self.calls += 1
            if self.calls == self.k:
                self.hit = name
                os.kill(os.getpid(), self.signum)
            return result

        return wrapper


class _Terminated(KeyboardInterrupt):
    pass


def _raise_terminated(signum, frame):
    raise _Terminated()


@pytest.mark.parametrize(
    ("signum", "deferral"),
    [(signal.SIGINT, "sigmask"), (signal.SIGINT, "sigmask-with-a-thread"), (signal.SIGINT, "handlers"), (signal.SIGTERM, "handlers")],
    ids=["SIGINT-sigmask", "SIGINT-sigmask-with-a-thread", "SIGINT-handlers", "SIGTERM-handlers"],
)
def test_a_real_signal_right_after_any_rename_rolls_everything_back(sandbox, monkeypatch, signum, deferral):
    """pthread_sigmask and recording handlers where masks exist, the handlers alone where
    they do not (Windows): either way the signal waits for the step's bookkeeping, and the
    run rolls back whole. With another thread alive, the kernel hands a signal the main
    thread blocks to that thread; the mask alone then let it through (this test failed)."""
    hooks = {"no-exchange": ""} | ({"no-sigmask": ""} if deferral == "handlers" else {})
    monkeypatch.setattr(fsops, "HOOKS", hooks)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    # A runner started in the background (nohup, `cmd &` without job control) inherits SIGINT
    # ignored, and Python then keeps it ignored: install the handler a terminal's Ctrl-C meets.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = threading.Event()
    if deferral == "sigmask-with-a-thread":
        threading.Thread(target=stop.wait, daemon=True).start()
    try:
        sources, targets = scenario(sandbox)
        before = snapshot(sandbox.root)
        renames = ("exchange", "rename_noreplace", "rename")
        hits = []
        k = 0
        while True:
            k += 1
            with monkeypatch.context() as patch:
                fire = SignalAfter(patch, k, renames, signum)
                try:
                    run_add(sandbox, sources, targets)
                    raised = False
                except KeyboardInterrupt:
                    raised = True
            if fire.hit is None:
                assert not raised
                break
            assert raised and snapshot(sandbox.root) == before, f"signal after rename {k} ({fire.hit})"
            hits.append(fire.hit)
        # The backup's rename, the replace (exchange, refused here, then two renames), two
        # installs: at least these six renames each got a signal right after them.
        assert len(hits) >= 6 and {"exchange", "rename", "rename_noreplace"} <= set(hits)
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
