"""The pitfall reproducers in the references are real: every Python block whose first line is
`# check: runs on CPU` runs (in a fresh namespace, in a subprocess per document) and its
assertions hold on the installed torch/transformers/diffusers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import skilldocs

MARKER = "# check: runs on CPU"
DOCS = sorted({b.doc for b in skilldocs.all_blocks() if b.lang == "python" and b.first_line.strip() == MARKER})

RUNNER = r"""
import json, sys, traceback
blocks = json.loads(sys.stdin.read())
failures = []
for where, code in blocks:
    try:
        exec(compile(code, where, "exec"), {"__name__": "__reproducer__"})
    except BaseException:
        failures.append(where + "\n" + traceback.format_exc())
print(json.dumps(failures))
"""


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_reproducers_run(doc) -> None:
    pytest.importorskip("torch")
    blocks = [(b.where, b.text) for b in skilldocs.parse_blocks(doc) if b.lang == "python" and b.first_line.strip() == MARKER]
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not failures, "\n\n".join(failures)


def test_integration_guides_have_reproducers() -> None:
    names = {d.name for d in DOCS}
    assert {"transformers-integration.md", "diffusers-integration.md"} <= names, names
