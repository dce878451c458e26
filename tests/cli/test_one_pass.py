"""`kernels skills add` reads and hashes a skill's files once, as it copies them.

The receipt (per-file hashes, the CRLF digests) and skills-lock.json (the tree's digest)
both come from the copy's own pass over the files; a second pass over the source or the
copy would only repeat it. The digests must still be the ones a fresh hash of the tree gives.
"""

from __future__ import annotations

import json

from kernel_skills import receipts

from .conftest import cli, make_skill


def test_add_hashes_the_source_once_and_records_the_same_digest_everywhere(sandbox, monkeypatch):
    make_skill(sandbox.bundled, "demo", extra={"references/windows.md": "a\r\nb\r\n", "scripts/run.sh": "echo hi\n"})
    reads: list[str] = []
    for name in ("file_sha256", "lf_sha256", "manifest", "lf_digests"):
        real = getattr(receipts, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            reads.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(receipts, name, spy)
    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    assert reads == [], f"the tree was read again: {reads}"
    monkeypatch.undo()

    installed = sandbox.project / ".claude/skills/demo"
    receipt = receipts.read(installed)
    fresh = receipts.manifest(sandbox.bundled / "demo", source=True)
    assert receipt.files == fresh and receipt.digest == receipts.digest(fresh)
    assert receipt.data["lf_files"] == {"references/windows.md": receipts.lf_sha256(installed / "references/windows.md")}
    lock = json.loads((sandbox.project / "skills-lock.json").read_text())
    assert lock["skills"]["demo"]["digest"] == receipt.digest
