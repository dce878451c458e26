"""How fast does the `kernels` CLI start? Median wall time over cold runs.

Measures, in one session and interleaved round-robin (so a burst of background load hits
every command alike):

  python -c pass                                   the interpreter's own start-up
  python -c "import typer"                         the floor any typer CLI pays
  kernels --help
  kernels skills add cuda-kernels --dest <fresh>   a real install into a new folder
  ... the same, on a pseudo-terminal               (rich styles the output there)
  kernels skills sync                              in a project that already matches its
                                                   skills-lock.json (cuda-kernels in
                                                   .claude/skills): the CI no-op path

Every run is a new process (cold interpreter; the OS file cache is warm and .pyc files
exist, as they do for a user of an installed package typing commands). Output goes to a
pipe, as in scripts and CI, except in the terminal variant. Besides wall time, each run's
CPU time (user + system, from getrusage of the child) is recorded: on a shared machine wall
time follows the other processes' load, CPU time mostly does not, so compare two versions
of the CLI by CPU time when the load average is not near zero. Writes
benchmarks/results/cli_speed.json.

    python benchmarks/cli_speed.py [--runs 10] [--skill cuda-kernels] [--out PATH]

The CLI is started through the `kernel-skills` console script (the same entry point as
`kernels`; in a venv that also has Hugging Face's `kernels` package, `kernels` may be
theirs), falling back to `python -m kernel_skills`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL_S = 0.25
SYNC_GOAL_S = 0.15  # issue 30: a sync that has nothing to do, on an idle 2-core machine
ADD_GOAL_S = 0.10  # issue 31: `add cuda-kernels --dest <fresh>` from a wheel, on an idle 2-core machine


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("kernel-skills")
    if script.exists():
        return [str(script)]
    found = shutil.which("kernel-skills")
    return [found] if found else [sys.executable, "-m", "kernel_skills"]


def timed(argv: list[str], env: dict[str, str], cwd: str, *, terminal: bool = False) -> tuple[float, float]:
    """(wall time, CPU time) of one run; output to a pipe, or to a pseudo-terminal (rich styles it)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    if terminal:
        import pty

        master, slave = pty.openpty()
        start = time.perf_counter()
        result = subprocess.run(argv, env=env, cwd=cwd, stdout=slave, stderr=slave)
        elapsed = time.perf_counter() - start
        os.close(slave)
        os.close(master)
    else:
        start = time.perf_counter()
        result = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"benchmark command failed ({result.returncode}): {' '.join(argv)}\n{result.stderr or ''}")
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)


def imported(args: list[str], env: dict[str, str], cwd: str) -> list[str]:
    """Which of the expensive packages a command imports (python -X importtime)."""
    argv = [sys.executable, "-X", "importtime", "-m", "kernel_skills", *args]
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    watched = ("typer", "pydantic", "rich", "yaml", "platformdirs", "huggingface_hub", "torch")
    names = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if line.startswith("import time:")}
    return sorted(n for n in watched if n in names)


def summary(samples: list[tuple[float, float]]) -> dict[str, object]:
    wall = [w for w, _ in samples]
    cpu = [c for _, c in samples]
    return {
        "median_s": round(statistics.median(wall), 4),
        "min_s": round(min(wall), 4),
        "max_s": round(max(wall), 4),
        "samples_s": [round(s, 4) for s in wall],
        "cpu_median_s": round(statistics.median(cpu), 4),
        "cpu_min_s": round(min(cpu), 4),
        "cpu_samples_s": [round(s, 4) for s in cpu],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--skill", default="cuda-kernels")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "cli_speed.json")
    parser.add_argument("--bundled-root", type=Path, help="install skills from this folder instead of the package's skills/")
    args = parser.parse_args()

    cli = cli_command()
    work = Path(tempfile.mkdtemp(prefix="cli-speed-"))
    home = work / "home"
    home.mkdir()
    # A private home: the benchmark never touches the real one.
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"))
    env.pop("KERNELS_DEBUG", None)
    env.pop("KERNEL_SKILLS_TEST_HOOKS", None)
    # pip byte-compiles an installed package; let the warm-up run do the same for a
    # source checkout, or every timed run would pay for compiling kernel_skills again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.bundled_root:
        env["KERNEL_SKILLS_BUNDLED_ROOT"] = str(args.bundled_root.resolve())

    add = f"kernels skills add {args.skill} --dest <fresh>"
    sync = f"kernels skills sync (a project whose .claude/skills/{args.skill} already matches the lock)"
    project = work / "project"
    project.mkdir()
    commands = {
        "python -c pass": (lambda i: [sys.executable, "-c", "pass"], False, work),
        "python -c 'import typer'": (lambda i: [sys.executable, "-c", "import typer"], False, work),
        "kernels --help": (lambda i: [*cli, "--help"], False, work),
        add: (lambda i: [*cli, "skills", "add", args.skill, "--dest", str(work / f"dest{i}")], False, work),
    }
    if hasattr(os, "openpty"):
        commands[add + " (on a terminal)"] = (lambda i: [*cli, "skills", "add", args.skill, "--dest", str(work / f"tty{i}")], True, work)
    commands[sync] = (lambda i: [*cli, "skills", "sync"], False, project)
    timed([*cli, "skills", "add", args.skill, "--claude"], env, str(project))  # writes project/skills-lock.json
    for argv_of, terminal, cwd in commands.values():  # one warm-up each: write .pyc files, fill the file cache
        timed(argv_of(-1), env, str(cwd), terminal=terminal)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    for i in range(args.runs):
        for name, (argv_of, terminal, cwd) in commands.items():
            samples[name].append(timed(argv_of(i), env, str(cwd), terminal=terminal))
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None

    installed = work / "dest0" / args.skill
    files = [p for p in installed.rglob("*") if p.is_file()]
    results = {name: summary(values) for name, values in samples.items()}
    help_key, add_key = "kernels --help", add
    import typer

    report = {
        "what": "median wall time (and CPU time, user + system) of cold runs (new process each), interleaved round-robin",
        "runs": args.runs,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cli)),
        "goal_s": GOAL_S,
        "sync_goal_s": SYNC_GOAL_S,
        "add_goal_s": ADD_GOAL_S,
        "results": results,
        "meets_goal": {
            help_key: results[help_key]["median_s"] <= GOAL_S,
            add_key: results[add_key]["median_s"] <= ADD_GOAL_S,
            sync: results[sync]["median_s"] <= SYNC_GOAL_S,
        },
        "imports": {
            "kernels --help": imported(["--help"], env, str(work)),
            "kernels skills add": imported(["skills", "add", args.skill, "--dest", str(work / "dest-imports")], env, str(work)),
            "kernels skills sync": imported(["skills", "sync"], env, str(project)),
        },
        "bundled_root": env.get("KERNEL_SKILLS_BUNDLED_ROOT", "the package's own skills/"),
        "installed_files": len(files),
        "installed_bytes": sum(p.stat().st_size for p in files),
        "receipt_bytes": (installed / ".kernel-skills.json").stat().st_size,
        "machine": {
            "python": platform.python_version(),
            "typer": typer.__version__,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": load_after,
        },
    }
    shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for name, values in results.items():
        print(f"{values['median_s']:.3f} s  (min {values['min_s']:.3f}; CPU {values['cpu_median_s']:.3f} s, min {values['cpu_min_s']:.3f})  {name}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
