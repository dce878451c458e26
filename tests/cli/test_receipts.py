"""The install receipt (.kernel-skills.json): small, and every receipt ever written still reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_skills import receipts
from kernel_skills.receipts import RECEIPT_FILE

from .conftest import REPO, cli, make_skill


def _render(files: dict[str, str], lf_files: dict[str, str] | None = None) -> bytes:
    return receipts.render(skill="demo", version="1.0.0", source={"kind": "bundled", "name": "demo"}, files=files, lf_files=lf_files)


def _write(folder: Path, data: bytes) -> receipts.Receipt | None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECEIPT_FILE).write_bytes(data)
    return receipts.read(folder)


def _schema_1(receipt: receipts.Receipt) -> bytes:
    """The receipt as kernel-skills wrote it before schema 2 (indented, flat maps of hex)."""
    data = {**receipt.data, "schema": 1, "files": dict(sorted(receipt.files.items()))}
    if receipt.data.get("lf_files"):
        data["lf_files"] = dict(sorted(receipt.data["lf_files"].items()))
    return (json.dumps(data, indent=2) + "\n").encode()


SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_receipt_costs_under_100_bytes_a_file_for_the_bundled_skill():
    """Issue 31: at most 20 KB for ~200 files. The cuda-kernels tree as it is now, hashed."""
    skill = REPO / "skills" / "cuda-kernels"
    files = receipts.manifest(skill, source=True)
    assert files
    data = _render(files)
    assert len(data) <= 100 * len(files), f"{len(data)} bytes for {len(files)} files"
    assert b"\n" not in data[:-1] and b": " not in data  # one line, no padding


def test_a_receipt_of_long_paths_stays_within_the_bound():
    """200 files, each path 60 characters under folders 3 deep: still <= 20 KB."""
    files = {f"assets/template/common/{d:02d}/{'x' * 40}{i:03d}.py": SHA for d in range(20) for i in range(10)}
    assert all(len(rel) >= 60 for rel in files)
    assert len(_render(files)) <= 20_000


def test_what_is_written_reads_back_as_it_was_given(tmp_path):
    files = {"SKILL.md": SHA, "scripts/a.py": "0" * 64, "scripts/deep/b/c.txt": "f" * 64, "link": "symlink:scripts/a.py"}
    lf_files = {"scripts/a.py": "1" * 64}
    receipt = _write(tmp_path / "demo", _render(files, lf_files))
    assert receipt is not None
    assert receipt.files == files and receipt.data["lf_files"] == lf_files
    assert receipt.digest == receipts.digest(files) and receipt.skill == "demo" and receipt.version == "1.0.0"


def test_a_receipt_written_before_schema_2_still_reads_and_means_the_same(sandbox):
    make_skill(sandbox.bundled, "demo", extra={"references/windows.md": "line\r\n"})
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    dest = sandbox.project / ".claude/skills/demo"
    now = receipts.read(dest)
    assert now is not None and json.loads((dest / RECEIPT_FILE).read_bytes())["schema"] == 2

    old = _write(dest, _schema_1(now))
    assert old is not None and old.files == now.files and old.data["lf_files"] == now.data["lf_files"]
    assert old.digest == now.digest and old.changes(dest) == []
    listed = json.loads(cli("skills", "list", "--json").stdout)["installed"]
    assert [(i["managed"], i["modified"], i["status"]) for i in listed] == [(True, False, "current")]
    assert "already installed" in cli("skills", "add", "demo", "--claude").stdout  # identical: nothing to do

    (dest / "references/guide.md").write_text("mine\n")
    assert old.changes(dest) == ["references/guide.md"]


@pytest.mark.parametrize(
    "files",
    [
        {"a": "not base64"},
        {"a": SHA},  # hex where schema 2 has base64
        {"a": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuF"},  # 42 characters
        {"a": 5},
        {"": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"},
        {"a/b": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"},
        {"..": {"x": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"}},
        ["a"],
    ],
    ids=["text", "hex", "short", "number", "empty-name", "slash", "dot-dot", "list"],
)
def test_a_schema_2_receipt_with_damaged_files_is_damaged(tmp_path, files):
    good = json.loads(_render({"a": SHA}))
    assert good["files"] == {"a": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"}
    assert _write(tmp_path / "demo", json.dumps({**good, "files": files}).encode()) is None
    assert receipts.damaged(tmp_path / "demo", None)
