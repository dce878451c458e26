"""The evidence of the GPU runs lives in the repository, outside the shipped skill, and names
no folder of the machine that produced it."""

from __future__ import annotations

import importlib.util

import skilldocs

EVIDENCE = skilldocs.REPO / "evidence"


def _relativizer():
    spec = importlib.util.spec_from_file_location("relativize_paths", EVIDENCE / "relativize_paths.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_the_skill_ships_no_run_logs() -> None:
    logs = sorted(p.relative_to(skilldocs.SKILL).as_posix() for p in skilldocs.SKILL.rglob("logs") if p.is_dir())
    assert not logs, f"run logs belong in evidence/, not in the shipped skill: {logs}"
    stray = sorted(p.relative_to(skilldocs.SKILL).as_posix() for p in skilldocs.SKILL.rglob("*")
                   if p.suffix == ".log" and "__pycache__" not in p.parts)
    assert not stray, f"log files in the shipped skill: {stray}"


def test_each_example_has_its_evidence_folder() -> None:
    # Published numbers need the runs behind them; an example not yet run on a GPU (no
    # benchmark JSON, as long_rows today) has nothing to keep there yet.
    for example in sorted((skilldocs.SKILL / "examples").iterdir()):
        if (example / "build.toml").is_file() and any((example / "benchmarks").glob("*.json")):
            assert (EVIDENCE / example.name / "benchmarks").is_dir(), example.name


def test_evidence_names_no_absolute_home_tmp_or_checkout_path() -> None:
    relativize = _relativizer()
    offenders = {}
    for path in relativize.files([EVIDENCE]):
        lines = relativize.offending_lines(path)
        if lines:
            offenders[path.relative_to(skilldocs.REPO).as_posix()] = lines[0].strip()[:160]
    assert not offenders, f"{len(offenders)} evidence files name the run machine's folders " \
                          f"(run evidence/relativize_paths.py): {dict(list(offenders.items())[:5])}"


def test_the_relativizer_rewrites_the_folders_runs_used() -> None:
    relativize = _relativizer().relativize
    assert relativize("build dir /tmp/ksb/ltx_video") == "build dir build/ksb/ltx_video"
    assert relativize("wrote /root/out/r10/adaln_sweep.json") == "wrote out/r10/adaln_sweep.json"
    assert relativize("python3 /work/main/.gpu/snap/skills/x.py") == "python3 skills/x.py"
    assert relativize("rootdir: /work/main/.gpu/snap") == "rootdir: ."
    assert relativize("/home/alice/.cache/x") == "build/.cache/x"
    # system folders name the toolchain and stay; so does a path inside another path
    assert relativize("/usr/include/python3.12 /opt/torch/lib/x/tmp/y") == "/usr/include/python3.12 /opt/torch/lib/x/tmp/y"
