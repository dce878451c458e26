"""Rewrite the absolute paths of the machine that ran a job into repository-relative ones.

A GPU run's logs name the folders it built and wrote in (/tmp/ksb/..., /root/out/r10/...,
/work/main/.gpu/snap/skills/...). Those folders mean nothing to a reader of this
repository and leak the run machine's layout, so before a log is committed under
evidence/ every such path becomes relative:

  <checkout>/skills/...            -> skills/...        (the repository snapshot the run used)
  /root/out/..., /root/.cache/...  -> out/..., build/cache/...
  /tmp/..., /root/..., /home/U/... -> build/...          (scratch and build folders)

System paths (/usr, /opt) stay: they name the toolchain, not the machine's owner.

    python evidence/relativize_paths.py [PATH ...]      # default: every file under evidence/
    python evidence/relativize_paths.py --check         # exit 1 if any file still has one

tests/skill/test_evidence.py runs the check on the committed tree.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Checkouts the runs used: the coordinator's snapshot folder and worktrees.
_CHECKOUT = r"/work/(?:main/\.gpu/snap|main|wt/[^/\s\"']+)/"
_START = r"(?<![\w.\-/])"  # a path starts here, not in the middle of another one
RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(_START + _CHECKOUT[:-1] + r"(?=[\s\"':,)]|$)", re.MULTILINE), "."),  # the checkout itself
    (re.compile(_START + _CHECKOUT), ""),
    (re.compile(_START + r"/root/out/"), "out/"),
    (re.compile(_START + r"/root/\.cache/"), "build/cache/"),
    (re.compile(_START + r"/home/[^/\s\"']+/"), "build/"),
    (re.compile(_START + r"/(?:tmp|root)/"), "build/"),
]
# What may not remain: a home, scratch or checkout folder of the run machine.
ABSOLUTE = re.compile(_START + r"/(?:tmp|root|home|work)/")


def relativize(text: str) -> str:
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    return text


def _read(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode("utf-8", errors="surrogateescape")


def _write(path: Path, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
    return [f for f in out if f.name != Path(__file__).name]


def offending_lines(path: Path) -> list[str]:
    return [line for line in _read(path).splitlines() if ABSOLUTE.search(line)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: evidence/)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if an absolute path remains")
    args = parser.parse_args(argv)
    bad = 0
    for path in files(args.paths or [HERE]):
        if args.check:
            lines = offending_lines(path)
            for line in lines[:3]:
                print(f"{path}: {line.strip()[:200]}")
            bad += bool(lines)
            continue
        text = _read(path)
        new = relativize(text)
        if new != text:
            _write(path, new)
            print(f"rewrote {path}")
    if args.check and bad:
        print(f"{bad} file(s) still name absolute home/tmp/checkout paths", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
