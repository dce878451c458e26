"""`kernels` shared with Hugging Face's `kernels` package: `skills` is ours, every other command is theirs.

A stand-in for Hugging Face's package is installed into a folder of its own (a
``kernels-9.9.1.dist-info`` whose ``console_scripts`` entry point names a module that records
its own import), so these tests decide what is installed regardless of this environment.
tests/cli/test_names.py does the same with the real package in real venvs (slow).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills import __version__
from kernel_skills.cli import forward, main

from .test_console import _imported_by

FAKE = "fake_hf_kernels_cli"


@pytest.fixture
def hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install the stand-in for Hugging Face's package; yields the file its import writes."""
    site = tmp_path / "hf-site"
    dist = site / "kernels-9.9.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kernels\nVersion: 9.9.1\n")
    # Shaped like kernels 0.17.2's own file: another section first, another script beside ours.
    (dist / "entry_points.txt").write_text(
        f"[egg_info.writers]\nkernels = {FAKE}.locking:write\n\n[console_scripts]\nkernels-extra = x:y\nkernels = {FAKE}.cli:main\n"
    )
    package = site / FAKE
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "cli.py").write_text(
        "import json, os, sys\n"
        "def main():\n"
        "    print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd()}))\n"
        "    if os.environ.get('FAKE_HF_EXIT'):\n"
        "        sys.exit(int(os.environ['FAKE_HF_EXIT']))\n"
        "    return int(os.environ.get('FAKE_HF_RETURN', '0'))\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(forward, "SEARCH_PATH", [str(site)])
    yield marker
    for name in [m for m in sys.modules if m == FAKE or m.startswith(FAKE + ".")]:
        del sys.modules[name]


@pytest.fixture
def no_hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-site"
    empty.mkdir()
    monkeypatch.setattr(forward, "SEARCH_PATH", [str(empty)])


def kernels(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the console-script entry point in-process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["kernels", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_but_skills_goes_to_hugging_face_with_the_same_arguments(hf, monkeypatch, capsys, sandbox):
    code, out, _ = kernels(monkeypatch, capsys, "lock", ".", "--flag", "a b", "--", "-x")
    assert code == 0
    assert json.loads(out) == {"argv": ["lock", ".", "--flag", "a b", "--", "-x"], "cwd": str(sandbox.project)}
    # An option Hugging Face's CLI defines goes there too, and so does help for its commands.
    code, out, _ = kernels(monkeypatch, capsys, "download", "--help")
    assert json.loads(out)["argv"] == ["download", "--help"]


@pytest.mark.parametrize("how", ["FAKE_HF_RETURN", "FAKE_HF_EXIT"])
def test_hugging_faces_exit_code_is_the_exit_code(hf, monkeypatch, capsys, how):
    monkeypatch.setenv(how, "3")
    code, _, _ = kernels(monkeypatch, capsys, "versions", "org/kernel")
    assert code == 3


def test_skills_help_and_version_stay_ours_and_import_nothing_of_hugging_faces(hf, monkeypatch, capsys, sandbox):
    code, out, _ = kernels(monkeypatch, capsys, "skills", "add", "demo", "--dest", "out", "--json")
    assert code == 0 and json.loads(out)["actions"][0]["skill"] == "demo"
    code, out, _ = kernels(monkeypatch, capsys, "--help")
    assert code == 0
    assert "skills" in out and "Hugging Face's kernels 9.9.1" in out and "other than `skills`" in out
    code, out, _ = kernels(monkeypatch, capsys, "--version")
    assert code == 0 and out.splitlines() == [
        f"kernel-skills {__version__}",
        "kernels 9.9.1 (Hugging Face; runs every command but `skills`)",
    ]
    code, _, err = kernels(monkeypatch, capsys)  # no arguments: our help (on stderr, as click does)
    assert "Hugging Face's kernels 9.9.1" in err
    assert not hf.exists() and FAKE not in sys.modules


def test_skills_commands_do_not_even_read_the_package_metadata(hf, monkeypatch, capsys):
    def never():
        raise AssertionError("metadata read for a `skills` command")

    monkeypatch.setattr(forward, "find", never)
    code, out, _ = kernels(monkeypatch, capsys, "skills", "agents", "--json")
    assert code == 0 and json.loads(out)["ok"]


def test_a_broken_hugging_face_install_is_one_error_line(hf, monkeypatch, capsys):
    (hf.parent / "hf-site" / FAKE / "cli.py").write_text("raise ImportError('no module named sigstore')\n")
    code, out, err = kernels(monkeypatch, capsys, "lock", ".")
    assert code == 1 and out == ""
    assert err.startswith("Error: `kernels lock` is a command of Hugging Face's kernels 9.9.1")
    assert "no module named sigstore" in err and "pip install --force-reinstall kernels" in err
    assert "Traceback" not in err


def test_metadata_without_the_package_is_not_hugging_faces_cli(hf, monkeypatch, capsys):
    # `pip uninstall` interrupted, or files deleted by hand: the dist-info is all that is left.
    for path in sorted((hf.parent / "hf-site" / FAKE).rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (hf.parent / "hf-site" / FAKE).rmdir()
    assert forward.find() is None
    code, _, err = kernels(monkeypatch, capsys, "lock", ".")
    assert code == 2 and "pip install kernels" in err


def test_without_hugging_faces_package_its_commands_say_where_they_come_from(no_hf, monkeypatch, capsys):
    code, out, err = kernels(monkeypatch, capsys, "lock", ".")
    assert code == 2 and out == ""
    assert "No such command 'lock'" in err and "Hugging Face's kernels package" in err and "pip install kernels" in err
    code, out, _ = kernels(monkeypatch, capsys, "--help")
    assert code == 0 and "Hugging Face's kernels package is not installed" in out
    code, out, _ = kernels(monkeypatch, capsys, "--version")
    assert out.splitlines() == [f"kernel-skills {__version__}"]


def test_an_entry_point_that_names_kernel_skills_is_never_forwarded_to(tmp_path, monkeypatch):
    dist = tmp_path / "kernels-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kernels\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[console_scripts]\nkernels = kernel_skills.cli:main\n")
    monkeypatch.setattr(forward, "SEARCH_PATH", [str(tmp_path)])
    assert forward.find() is None


def test_the_metadata_reader_agrees_with_importlib_metadata_on_this_environment(monkeypatch):
    import importlib.metadata

    monkeypatch.setattr(forward, "SEARCH_PATH", None)
    try:
        dist = importlib.metadata.distribution("kernels")
    except importlib.metadata.PackageNotFoundError:
        assert forward.find() is None
        return
    (script,) = [ep for ep in dist.entry_points if ep.group == "console_scripts" and ep.name == "kernels"]
    assert forward.find() == forward.HuggingFaceCli(version=dist.version, target=script.value)


def test_help_with_the_real_environment_imports_neither_torch_nor_hugging_faces_kernels():
    # The dev environment has Hugging Face's kernels installed: finding it must not import it.
    modules = _imported_by(["--help"])
    assert "kernels" not in modules and "torch" not in modules and "sigstore" not in modules
    code = "import sys\nsys.argv = ['kernels', '--help']\nfrom kernel_skills.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint('importlib.metadata' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.splitlines()[-1] == "False"  # ~25 ms of CPU: the dist-info files are read directly
